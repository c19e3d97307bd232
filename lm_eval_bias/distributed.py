"""Data-parallel runs (``accelerate launch -m lm_eval ...``): rank 0 reports what one process would.

lm-eval 0.4.13 gives each of W processes every W-th document of a task (``doc_iterator``:
``islice(enumerate(docs), rank, limit, W)``); each process runs its shard's requests,
filters (our classifiers included) and ``process_results``; then ``evaluate`` gathers each
rank's per-document metric values to rank 0 (``lm.gather_object``) and concatenates them rank
after rank, for the metric keys that rank 0 itself produced. For our tasks that is wrong in
three ways, which :func:`lm_eval_bias.adapters.shards_merged` undoes with the functions here:

* a metric only some documents have (``bias_score_lesbian``, a TANGO family's consistency)
  may be missing on rank 0, and is then dropped, or missing on another rank, and then
  lm-eval crashes with a ``KeyError`` after every request has been run;
* the values arrive rank after rank, not in document order: seeded bootstrap intervals and
  permutation p-values depend on that order, and lm-eval's float ``mean`` on it in its last
  bits;
* the logged samples come in the same rank-after-rank order.

It records, on each rank, which metrics each ``process_results`` call of our tasks returned;
those records travel with the rank's values in lm-eval's own gather, and rank 0 puts every
value back at its document's place (the ``n``-th document of rank ``r``'s shard is document
``n * W + r`` of the run) before lm-eval aggregates. Everything is computed where lm-eval
computes it; only the order and the set of keys change.
"""

from __future__ import annotations

from collections import defaultdict

from lm_eval_bias.errors import ConfigurationError

_END = object()


class CallRecord:
    """The metric names each ``process_results`` call of one task returned, in call order
    (each distinct tuple of names stored once: a task has a few shapes of result)."""

    def __init__(self):
        self.shapes: list[tuple[str, ...]] = []
        self.calls: list[int] = []
        self._index: dict[tuple[str, ...], int] = {}

    def add(self, names: tuple[str, ...]) -> None:
        index = self._index.setdefault(names, len(self.shapes))
        if index == len(self.shapes):
            self.shapes.append(names)
        self.calls.append(index)

    def export(self) -> tuple[list[tuple[str, ...]], list[int]]:
        return self.shapes, self.calls


def filter_names(task) -> list[str]:
    """The task's filter pipelines in the order lm-eval scores them (the keys of each
    instance's ``filtered_resps``)."""
    return [pipeline.name for pipeline in task._filters]


def merge_shards(filters: list[str], shards: list[dict], records: list[tuple], samples: list | None = None):
    """Rank 0's ``raw_metrics`` (and logged samples) for one task as one process would have them.

    ``shards[r]``: rank ``r``'s ``{(metric, filter): [values]}``; ``records[r]``: its
    ``CallRecord.export()``; ``samples[r]``: its logged samples (one per call) or None.
    Returns ``(raw_metrics, samples)`` with every value at its document's place, keys in the
    order a single process meets them. Raises ``ValueError`` when the shards do not fit the
    records (an lm-eval whose evaluation loop differs from 0.4.13's).
    """
    world_size = len(shards)
    placed = []  # (filter pass, document position, metric names, values, sample)
    for rank, (shard, (shapes, calls)) in enumerate(zip(shards, records)):
        if len(calls) % len(filters):
            raise ValueError(f"rank {rank}: {len(calls)} scored documents for {len(filters)} filters")
        per_pass = len(calls) // len(filters)
        if samples is not None and len(samples[rank]) != len(calls):
            raise ValueError(f"rank {rank}: {len(samples[rank])} logged samples for {len(calls)} scored documents")
        remaining = {key: iter(values) for key, values in shard.items()}
        for call, shape in enumerate(calls):
            filter_pass, n = divmod(call, per_pass)
            names = shapes[shape]
            try:
                values = [next(remaining[(name, filters[filter_pass])]) for name in names]
            except (KeyError, StopIteration):
                raise ValueError(f"rank {rank}: its values do not match its scored documents") from None
            placed.append(
                (
                    filter_pass,
                    n * world_size + rank,
                    names,
                    values,
                    samples[rank][call] if samples is not None else None,
                )
            )
        if any(next(values, _END) is not _END for values in remaining.values()):
            raise ValueError(f"rank {rank}: more values than its scored documents returned")
    placed.sort(key=lambda entry: entry[:2])
    raw_metrics = defaultdict(list)
    for filter_pass, _, names, values, _ in placed:
        for name, value in zip(names, values):
            raw_metrics[(name, filters[filter_pass])].append(value)
    return raw_metrics, ([entry[4] for entry in placed] if samples is not None else None)


class ShardMerge:
    """The replacements :func:`lm_eval_bias.adapters.shards_merged` installs for one ``evaluate``
    call with several processes, and what they collect.

    Each rank records which metrics each ``process_results`` call of ``ours`` (task name -> task)
    returned (:meth:`recording`); the records travel with the rank's values in lm-eval's gather
    (:meth:`gathering`); rank 0 puts every value back at its document's place before lm-eval
    aggregates (:meth:`merging`).
    """

    def __init__(self, ours: dict):
        self.ours = ours
        self.records = {name: CallRecord() for name in ours}
        self.gathered: dict = {}

    def recording(self, name: str, score):
        """Task ``name``'s ``process_results`` (``score``), recording the metric names of each call."""
        record = self.records[name]

        def process_results(doc, results):
            metrics = score(doc, results)
            record.add(tuple(metrics))
            return metrics

        return process_results

    def gathering(self, gather_object):
        """``lm.gather_object`` (``gather_object``), sending the records along with the metrics."""

        def gather(obj, dst=0):
            is_metrics = isinstance(obj, dict) and all(isinstance(value, dict) for value in obj.values())
            if not is_metrics:  # the logged samples, gathered first when --log_samples
                result = gather_object(obj, dst)
                self.gathered["samples"] = result
                return result
            records = {name: record.export() for name, record in self.records.items()}
            result = gather_object((obj, records), dst)
            if result is None:
                return None
            shards = [metrics for metrics, _ in result]
            self.gathered["metrics"], self.gathered["records"] = shards, [calls for _, calls in result]
            return with_every_ranks_keys(shards, self.ours)

        return gather

    def merging(self, process_results):
        """``lm_eval.evaluator._process_results`` (``process_results``), after merging our tasks'
        values on rank 0 (:func:`merge_into`)."""

        def merged(eval_results_acc, *args, **kwargs):
            if "metrics" in self.gathered:
                for name, task in self.ours.items():
                    if name in eval_results_acc:
                        merge_into(eval_results_acc[name], name, task, self.gathered)
            return process_results(eval_results_acc, *args, **kwargs)

        return merged


def with_every_ranks_keys(shards: list[dict], ours) -> list[dict]:
    """The gathered ``shards`` (one ``{task: {(metric, filter): values}}`` per rank) with, for each of
    ``ours`` (task names), every key some rank has, empty where a rank lacks it.

    lm-eval reads, from every rank, each key that rank 0 has: for our tasks a key another rank lacks
    is then empty there, not a ``KeyError`` (:func:`merge_into` merges their keys in full). Other
    tasks' shards are left as lm-eval gathered them.
    """
    for task in {task for shard in shards for task in shard if task in ours}:
        keys = {key for shard in shards for key in shard.get(task, {})}
        for shard in shards:
            per_task = shard.setdefault(task, {})
            for key in keys - per_task.keys():
                per_task[key] = []
    return shards


def merge_into(accumulator: dict, name: str, task, gathered: dict) -> None:
    """Put rank 0's accumulator of task ``name`` (lm-eval's ``eval_results_acc[name]``) in document
    order with every rank's metrics (:func:`merge_shards`), from what the gather collected:
    ``gathered["metrics"]`` and ``["records"]`` (one per rank) and ``["samples"]`` when logged."""
    samples = gathered.get("samples")
    try:
        raw_metrics, logged = merge_shards(
            filter_names(task),
            [shard.get(name, {}) for shard in gathered["metrics"]],
            [calls[name] for calls in gathered["records"]],
            [shard.get(name, []) for shard in samples] if samples else None,
        )
    except ValueError as error:
        raise ConfigurationError(
            f"{name}: the {len(gathered['metrics'])} processes' results cannot be put back in "
            f"document order ({error}); this lm-eval's data-parallel evaluation differs from the "
            "0.4.13 that lm-eval-bias supports. Fix: run with one process, or lm-eval 0.4.13"
        ) from error
    accumulator["raw_metrics"] = raw_metrics
    task.declare_metrics(dict.fromkeys(metric for metric, _ in raw_metrics))
    if logged is not None:
        accumulator["logged_samples"] = logged
