"""Each per-document value stored once: a metric's companions are derived from its value.

One document's ``<metric>_ci_lower``, ``_ci_upper``, ``_design_effect`` and (of a comparison)
``_pvalue`` are its value of ``<metric>`` itself, clustered where the task declares a cluster unit
(``[value, cluster]``): the statistics differ, the values they read do not; its ``<metric>_n`` is
1. lm-eval keeps every value ``process_results`` returns, per document, in memory and in the
samples file, so ``SubgroupMetricsTask.process_results`` returns them once (:func:`slimmed`):

* each such companion only in the first document that has its metric in each pass over the
  documents (one pass per filter), so that a samples file shows which companions each metric has,
  in lm-eval's order, and in every other document not at all;
* the metric's value as a :class:`Carried` number (a ``float`` to lm-eval, numpy and JSON), or a
  comparison's ``(side, value)`` with its value one, that says which companions it has and the
  document's cluster: lm-eval's per-metric lists are rebuilt from it before lm-eval aggregates
  (:func:`with_companions`, installed by ``adapters.companions_derived``);
* the document's cluster once, as :data:`CLUSTER`, for the readers of samples files, which derive
  the companions a document leaves out (:func:`completed_samples`; files that hold every companion,
  as before, are read as they are).

Companions whose value is not the metric's (``_n_samples``, WinoQueer's signed ``_pvalue``, a
``_pvalue_bh``) are kept in every document, as before.
"""

from __future__ import annotations

import functools

from lm_eval_bias.errors import ConfigurationError

#: The key that names a document's cluster in its metrics and samples (tasks with a cluster unit).
CLUSTER = "cluster_id"
#: The companions whose per-document value can be derived from the metric's, in lm-eval's order.
DERIVED = ("_ci_lower", "_ci_upper", "_n", "_pvalue", "_design_effect")


class Carried(float):
    """A document's value of a metric that carries what its derived companions need.

    lm-eval's ``mean``, numpy and ``json`` read it as the plain number.

    Parameters
    ----------
    value : float
        The document's value.
    companions : tuple of str
        The suffixes of the companions derived from it (:data:`DERIVED`), one shared tuple.
    cluster : int or None
        The document's cluster, None where the task declares no cluster unit.
    """

    __slots__ = ("companions", "cluster")

    def __new__(cls, value, companions: tuple, cluster):
        carried = super().__new__(cls, value)
        carried.companions = companions
        carried.cluster = cluster
        return carried

    def __reduce__(self):
        # with several processes lm-eval pickles every value to gather it on rank 0
        return (Carried, (float(self), self.companions, self.cluster))


@functools.lru_cache(maxsize=2**16)
def companion_of(name: str) -> tuple[str, str] | None:
    """``(metric, suffix)`` where ``name`` is a metric's derived companion by its name, else None."""
    for suffix in DERIVED:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return None


def _carriable(value) -> bool:
    """Whether a metric's value can carry its companions: a number, or a tuple that ends in one."""
    if type(value) is tuple:
        return bool(value) and isinstance(value[-1], float)
    return isinstance(value, float)


def carried(value) -> Carried | None:
    """The :class:`Carried` number of one document's value (itself, or a tuple's last item), or None."""
    if type(value) is tuple and value:
        value = value[-1]
    return value if type(value) is Carried else None


def _candidates(metrics: dict, clustered) -> list[tuple[str, str, str]]:
    """``(name, metric, suffix)`` of each companion among one document's metrics whose metric is there
    too and is not itself clustered (``clustered``): those whose value it may derive."""
    candidates = []
    for name in metrics:
        split = companion_of(name)
        if split is not None and split[0] in metrics and split[0] not in clustered:
            candidates.append((name, *split))
    return candidates


class Slimmer:
    """One task's :func:`slimmed`: which metrics the current pass has introduced, and the companions
    each metric has (the same in every document, checked)."""

    def __init__(self, task: str):
        self.task = task
        self.introduced: set[str] = set()
        self.companions: dict[str, tuple[str, ...]] = {}
        # (the document's metric names, whether it has no cluster) -> its candidate companions: a task's
        # documents have few such shapes, and the names of a shape's metrics are all declared already
        self.plans: dict[tuple, list] = {}

    def new_pass(self) -> None:
        """A pass over the documents (of one filter) begins: each metric is introduced again."""
        self.introduced.clear()

    def slimmed(self, metrics: dict, cluster, clustered: set) -> dict:
        """One document's metrics, each value once.

        Parameters
        ----------
        metrics : dict
            Every metric of the document, companions included, as the task scored them.
        cluster : int or None
            The document's cluster, None where the task declares no cluster unit.
        clustered : set of str
            The metrics whose aggregation reads each document's cluster beside its value.

        Returns
        -------
        dict
            The metrics without the derived companions (but where introduced), each metric with
            derived companions as a :class:`Carried` value, clustered values ``(..., cluster)``, and
            :data:`CLUSTER` where ``cluster`` is not None.

        Raises
        ------
        ConfigurationError
            A metric whose derivable companions differ from those of an earlier document (they
            could not be rebuilt in the documents' order).
        """
        plan_key = (tuple(metrics), cluster is None)
        candidates = self.plans.get(plan_key)
        if candidates is None:
            candidates = self.plans[plan_key] = _candidates(metrics, clustered if cluster is not None else ())
        found: dict[str, list[tuple[str, str]]] = {}
        for name, base, suffix in candidates:
            value, base_value = metrics[name], metrics[base]
            if (type(value) is int and value == 1) if suffix == "_n" else value is base_value:
                found.setdefault(base, []).append((suffix, name))
        dropped, values, shared = set(), {}, {}
        for base, pairs in found.items():
            value = metrics[base]
            if not _carriable(value):
                continue
            companions = self._companions_of(base, pairs)
            # metrics that share one value object (a measure and its group's) share its carried form
            key = (id(value), companions)
            if key not in shared:
                shared[key] = _carry(value, companions, cluster)
            values[base] = shared[key]
            if base in self.introduced:
                for _, name in pairs:
                    dropped.add(name)
            else:
                self.introduced.add(base)
        out, tagged = {}, {}
        for name, value in metrics.items():
            if name in dropped:
                continue
            value = values.get(name, value)
            if cluster is not None and name in clustered:
                # metrics that share one value object share its clustered form
                tag = tagged.get(id(value))
                if tag is None:
                    tag = tagged[id(value)] = (*value, cluster) if isinstance(value, tuple) else (value, cluster)
                value = tag
            out[name] = value
        if cluster is not None:
            out[CLUSTER] = cluster
        return out

    def _companions_of(self, base: str, pairs: list) -> tuple:
        known = self.companions.get(base)
        if known is not None and len(known) == len(pairs) and all(suffix in known for suffix, _ in pairs):
            return known
        suffixes = tuple(suffix for suffix, _ in pairs)
        known = self.companions.setdefault(base, suffixes)
        if known != suffixes and set(known) != set(suffixes):
            raise ConfigurationError(
                f"{self.task}: {base} has the companions {', '.join(suffixes)} in one document and "
                f"{', '.join(known)} in another; each document of a metric needs the same ones, so that they "
                "can be derived from its value (lm_eval_bias.companions)"
            )
        return known


def _carry(value, companions: tuple, cluster):
    if type(value) is tuple:
        return (*value[:-1], Carried(value[-1], companions, cluster))
    return Carried(value, companions, cluster)


def with_companions(raw_metrics: dict, clustered: set) -> dict:
    """One task's ``{(metric, filter): [values]}`` as lm-eval aggregates it: each derived companion's
    list rebuilt from its metric's :class:`Carried` values, in the documents' order, at its place
    (its first document's); :data:`CLUSTER` left out (it is no metric).

    Parameters
    ----------
    raw_metrics : dict
        lm-eval's ``raw_metrics`` of the task, from documents :meth:`Slimmer.slimmed` returned.
    clustered : set of str
        The metrics whose aggregation reads each document's cluster beside its value.

    Returns
    -------
    dict
        The lists, in lm-eval's order.
    """
    derived = {}
    for (name, filter_key), values in raw_metrics.items():
        for suffix, listed in _derived_lists(name, values, clustered).items():
            derived[(name + suffix, filter_key)] = listed
    out = {key: derived.pop(key, values) for key, values in raw_metrics.items() if key[0] != CLUSTER}
    out.update(derived)  # companions no document listed (their metric's first document was on another rank)
    return out


def _derived_lists(name: str, values: list, clustered: set) -> dict[str, list]:
    marked = [value for value in values if carried(value) is not None]
    if not marked:
        return {}
    companions = {carried(value).companions for value in marked}
    if len(companions) > 1:
        raise ConfigurationError(f"{name}: its documents have different companions ({sorted(companions)})")
    lists, with_clusters = {}, None
    for suffix in companions.pop():
        if suffix == "_n":
            lists[suffix] = [1] * len(marked)
        elif name + suffix in clustered:
            # one list for every clustered statistic of the metric: an interval's bounds then share it
            with_clusters = with_clusters or _clustered(marked)
            lists[suffix] = with_clusters
        else:
            lists[suffix] = marked
    return lists


def _clustered(marked: list) -> list:
    """Each value with its document's cluster appended (its own where it has none): one metric's
    values are all numbers or all tuples."""
    if type(marked[0]) is tuple:
        return [value if value[-1].cluster is None else (*value, value[-1].cluster) for value in marked]
    return [value if value.cluster is None else (value, value.cluster) for value in marked]


# --------------------------------------------------------------------------
# Readers of samples files


def _json_carriable(value) -> bool:
    if isinstance(value, list):
        return bool(value) and isinstance(value[-1], float)
    return isinstance(value, float)


def learned_companions(samples: list[dict]) -> dict[str, dict[str, bool]]:
    """Each metric's derived companions as the samples show them (where a document holds them):
    metric -> {suffix: whether its value is clustered}."""
    found: dict[str, dict[str, bool]] = {}
    for sample in samples:
        names = sample.get("metrics")
        if not isinstance(names, list):
            continue
        for name in names:
            split = companion_of(name) if isinstance(name, str) else None
            if split is None or split[0] not in sample or name not in sample:
                continue
            base, suffix = split
            base_value, value = sample[base], sample[name]
            if not _json_carriable(base_value):
                continue
            listed = base_value if isinstance(base_value, list) else [base_value]
            if suffix == "_n":
                if value == 1:
                    found.setdefault(base, {})[suffix] = False
            elif value == base_value:
                found.setdefault(base, {})[suffix] = False
            elif CLUSTER in sample and value == [*listed, sample[CLUSTER]]:
                found.setdefault(base, {})[suffix] = True
    return found


def completed_samples(samples: list[dict]) -> None:
    """Give each sample of one samples file, in place, the derived companions it leaves out, in its
    ``metrics`` list too, and take :data:`CLUSTER` off that list (it is no metric).

    Raises
    ------
    ValueError
        A sample that leaves out a clustered companion and names no cluster.
    """
    learned = learned_companions(samples)
    for sample in samples:
        names = sample.get("metrics")
        if not isinstance(names, list):
            continue
        added = []
        for base in names:
            companions = learned.get(base) if isinstance(base, str) else None
            if not companions or not _json_carriable(sample.get(base)):
                continue
            for suffix, clustered in companions.items():
                name = base + suffix
                if name not in sample:
                    sample[name] = _json_companion(sample, base, suffix, clustered)
                    added.append(name)
        if added or CLUSTER in names:
            sample["metrics"] = [name for name in names if name != CLUSTER] + added


def _json_companion(sample: dict, base: str, suffix: str, clustered: bool):
    value = sample[base]
    if suffix == "_n":
        return 1
    if not clustered:
        return value
    if CLUSTER not in sample:
        raise ValueError(f"{base}{suffix} is left out and the sample names no {CLUSTER} to derive it with")
    return [*(value if isinstance(value, list) else [value]), sample[CLUSTER]]
