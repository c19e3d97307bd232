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
