"""Each per-document value stored once: a metric's companions are derived from its value.

One document's ``<metric>_ci_lower``, ``_ci_upper``, ``_design_effect`` and (of a comparison)
``_pvalue`` are its value of ``<metric>`` itself, clustered where the task declares a cluster unit
(``[value, cluster]``): the statistics differ, the values they read do not; its ``<metric>_n`` is
1. lm-eval keeps every value ``process_results`` returns, per document, in memory and in the
samples file, so ``SubgroupMetricsTask.process_results`` returns each value once
(:meth:`Slimmer.slimmed`), none of those companions, and the metric's value as a carrier
``(value, cluster, companions)`` (:func:`carrier`): a tuple of numbers and names, which Python's
garbage collector stops tracking, where an object carrying them would be tracked to the end of the
run. lm-eval's per-metric lists are rebuilt from the carriers before lm-eval aggregates
(:func:`with_companions`) and its samples get the plain values back (:func:`plain_samples`), both
installed by ``adapters.companions_derived``: the results file reports every companion as before,
and the samples file holds each value once.

The readers of samples files derive what a document leaves out (:func:`completed_samples`): the
results file written beside the samples names every companion, and a document's cluster is that of
its ``doc``. Files that hold every companion, as earlier task versions wrote them, are read as they
are.

A benchmark may leave out more: entries that are no companion of one value but follow from what its
documents hold (a sign test's sign from a pair's outcome, a Benjamini-Hochberg family from every
subgroup's signs). Its task fills two hooks: ``SubgroupMetricsTask.derived_lists`` gives those
metrics' lists for lm-eval's aggregation (built as they are read, like the companions'), and
``SubgroupMetricsTask.derived_entries`` gives what one logged sample leaves out, for the readers;
here they are only called. Entries that are a stored value again, in a view of the documents (a
mean per identity, a gap's ``(side, value)``, a spread's ``(group, value)``), need what the document
says of itself: its value's carrier carries the document's labels (the task's ``document_labels``
hook, one shared tuple per labelling), and :func:`view_lists` and :func:`view_entries` build such
views for the two hooks. Other companions whose value is not the metric's (``_n_samples``, a gap's
``_pvalue_bh``) are kept in every document, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping
from typing import NamedTuple

from lm_eval_bias.errors import ConfigurationError

#: The companions whose per-document value can be derived from the metric's, in lm-eval's order.
DERIVED = ("_ci_lower", "_ci_upper", "_n", "_pvalue", "_design_effect")


def carrier(value, companions: tuple, cluster, labels: tuple | None = None):
    """One document's value of a metric with what its derived companions need: ``(value, cluster,
    companions)``, ``companions`` the suffixes (:data:`DERIVED`) derived from it, one shared tuple,
    ``cluster`` None where the document has none; ``(value, cluster, companions, labels)`` where the
    task's ``derived_lists`` reads the document's ``labels`` (``SubgroupMetricsTask.document_labels``:
    one shared tuple per distinct labelling, 8 bytes a document where a stored entry of its own would
    cost a dict slot, a list slot and a samples-file field)."""
    return (value, cluster, companions) if labels is None else (value, cluster, companions, labels)


def carried(value) -> tuple | None:
    """The :func:`carrier` ``value`` is (3 or 4 long), else None."""
    if type(value) is tuple and len(value) in (3, 4) and type(value[2]) is tuple:
        return value
    return None


def labels_of(item) -> tuple | None:
    """The document's labels a :func:`carrier` carries; None where it carries none."""
    found = carried(item)
    return found[3] if found is not None and len(found) == 4 else None


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


class Slimmer:
    """One task's :meth:`slimmed`, which remembers the companions each metric has (the same in every
    document, checked)."""

    def __init__(self, task: str):
        self.task = task
        self.companions: dict[str, tuple[str, ...]] = {}
        # (the document's metric names, whether it has no cluster) -> its plan (:meth:`_plan`): a task's
        # documents have few such shapes, found on the first document of each and checked on the others
        self.plans: dict[tuple, tuple] = {}

    def slimmed(self, metrics: dict, cluster, clustered: set, labels: tuple | None = None) -> dict:
        """One document's metrics, each value once.

        Parameters
        ----------
        metrics : dict
            Every metric of the document, companions included, as the task scored them.
        cluster : int or None
            The document's cluster, None where the task declares no cluster unit.
        clustered : set of str
            The metrics whose aggregation reads each document's cluster beside its value.
        labels : tuple, optional
            What the task's ``derived_lists`` reads of the document beside its values, carried by each
            :func:`carrier`.

        Returns
        -------
        dict
            The metrics without the companions derived from a value, each metric they are derived from
            as a :func:`carrier`, and the values of other clustered metrics as ``(..., cluster)``.

        Raises
        ------
        ConfigurationError
            A metric whose derivable companions differ from those of an earlier document (they
            could not be rebuilt in the documents' order).
        """
        plan_key = (tuple(metrics), cluster is None)
        plan = self.plans.get(plan_key)
        if plan is None:
            plan = self.plans[plan_key] = self._plan(metrics, clustered if cluster is not None else ())
        derived, dropped, tagged_names = plan
        values, shared = {}, {}
        for base, pairs, companions in derived:
            value = metrics[base]
            for suffix, name in pairs:
                if not _derivable(metrics[name], suffix, value):
                    raise ConfigurationError(
                        f"{self.task}: {name} is not {base}'s value in every document, so it cannot be derived "
                        "from it (lm_eval_bias.companions)"
                    )
            # metrics that share one value object (a measure and its group's) share its carried form
            key = (id(value), companions)
            if key not in shared:
                shared[key] = carrier(value, companions, cluster, labels)
            values[base] = shared[key]
        out, tagged = {}, {}
        for name, value in metrics.items():
            if name in dropped:
                continue
            value = values.get(name, value)
            if cluster is not None and name in tagged_names:
                # metrics that share one value object share its clustered form
                tag = tagged.get(id(value))
                if tag is None:
                    tag = tagged[id(value)] = _with_cluster(value, cluster)
                value = tag
            out[name] = value
        return out

    def _plan(self, metrics: dict, clustered) -> tuple:
        """For one shape of documents, from its first: ``(metric, ((suffix, companion), ...), suffixes)``
        of each metric with derivable companions, the names left out, and the clustered names kept."""
        found: dict[str, list[tuple[str, str]]] = {}
        for name in metrics:
            split = companion_of(name)
            if split is None or split[0] not in metrics or split[0] in clustered:
                continue
            base, suffix = split
            if _carriable(metrics[base]) and _derivable(metrics[name], suffix, metrics[base]):
                found.setdefault(base, []).append((suffix, name))
        derived = tuple((base, tuple(pairs), self._companions_of(base, pairs)) for base, pairs in found.items())
        dropped = frozenset(name for _, pairs, _ in derived for _, name in pairs)
        return derived, dropped, frozenset(name for name in metrics if name in clustered and name not in dropped)

    def _companions_of(self, base: str, pairs: list) -> tuple:
        suffixes = tuple(suffix for suffix, _ in pairs)
        known = self.companions.setdefault(base, suffixes)
        if known != suffixes and set(known) != set(suffixes):
            raise ConfigurationError(
                f"{self.task}: {base} has the companions {', '.join(suffixes)} in one document and "
                f"{', '.join(known)} in another; each document of a metric needs the same ones, so that they "
                "can be derived from its value (lm_eval_bias.companions)"
            )
        return known


def _derivable(value, suffix: str, base_value) -> bool:
    """Whether a document's companion holds nothing but what its metric's value gives: 1 for ``_n``,
    else the value itself (the same object, as ``metric_keys.with_interval`` stores it)."""
    return (type(value) is int and value == 1) if suffix == "_n" else value is base_value


def with_companions(raw_metrics: dict, clustered: set, built: dict | None = None) -> Mapping:
    """One task's ``{(metric, filter): [values]}`` as lm-eval aggregates it: each derived companion's
    list rebuilt from its metric's carriers, in the documents' order, after every metric's own,
    which reads their plain values; then the lists its benchmark derives itself (``built``).

    Parameters
    ----------
    raw_metrics : dict
        lm-eval's ``raw_metrics`` of the task, from documents :meth:`Slimmer.slimmed` returned.
    clustered : set of str
        The metrics whose aggregation reads each document's cluster beside its value.
    built : dict, optional
        ``(metric, filter)`` -> a function of whether that metric's aggregation reads clusters, giving
        its list: the metrics the task's documents leave out beyond their companions (the task's
        ``derived_lists`` hook).

    Returns
    -------
    Mapping
        The lists, each built when it is read: lm-eval aggregates one metric after another, so the
        derived lists are not all held at once.

    Raises
    ------
    ConfigurationError
        A metric whose documents carry different companions, or a companion (or a metric of
        ``built``) both derived and held by some documents.
    """
    return _DerivedLists(raw_metrics, clustered, built or {})


class _DerivedLists(Mapping):
    def __init__(self, raw_metrics: dict, clustered: set, built: dict):
        self.raw, self.clustered, self.built = raw_metrics, clustered, built
        self.derived: dict[tuple[str, str], tuple[tuple[str, str], str]] = {}  # key -> (its metric's key, suffix)
        for key, values in raw_metrics.items():
            for suffix in _companions_of_values(key[0], values):
                derived = (key[0] + suffix, key[1])
                if derived in raw_metrics:
                    raise ConfigurationError(
                        f"{derived[0]}: some documents hold it and others leave it to be derived from {key[0]}"
                    )
                self.derived[derived] = (key, suffix)
        for key in built:
            if key in raw_metrics or key in self.derived:
                held = "some documents hold it" if key in raw_metrics else "it is a companion of another metric"
                raise ConfigurationError(
                    f"{key[0]}: the task's derived_lists derives it, yet {held} (lm_eval_bias.companions)"
                )
        self.sources = {source for source, _ in self.derived.values()}
        self._last: tuple | None = None  # (metric's key, clustered list): an interval's bounds share it

    def __iter__(self):
        yield from self.raw
        yield from self.derived
        yield from self.built

    def __len__(self) -> int:
        return len(self.raw) + len(self.derived) + len(self.built)

    def __getitem__(self, key):
        if key in self.built:
            return self.built[key](key[0] in self.clustered)
        if key in self.derived:
            source, suffix = self.derived[key]
            carriers = self.raw[source]
            if suffix == "_n":
                return [1] * len(carriers)
            if key[0] not in self.clustered:
                return [item[0] for item in carriers]
            if self._last is None or self._last[0] != source:
                self._last = (source, _clustered(carriers))
            return self._last[1]
        values = self.raw[key]
        if key in self.sources:
            return [item[0] for item in values]
        return values


def _companions_of_values(name: str, values: list) -> tuple[str, ...]:
    """The suffixes derived from a metric's carriers; () where its values are no carriers."""
    found = {value[2] if carried(value) is not None else () for value in values}
    if len(found) > 1:
        raise ConfigurationError(f"{name}: its documents have different companions ({sorted(found)})")
    return found.pop() if found else ()


def value_and_cluster(item) -> tuple:
    """``(value, cluster)`` of one document's value of a metric as lm-eval gathered it: a :func:`carrier`,
    or the plain value (cluster None)."""
    found = carried(item)
    return (item, None) if found is None else found[:2]


def in_cluster(value, cluster):
    """``value`` with ``cluster`` appended, as the clustered aggregations read it; itself where ``cluster``
    is None (a document without one)."""
    return value if cluster is None else _with_cluster(value, cluster)


def _clustered(carriers: list) -> list:
    """Each value with its document's cluster appended (itself where it has none)."""
    return [in_cluster(item[0], item[1]) for item in carriers]


def _with_cluster(value, cluster):
    """``v`` as ``(v, cluster)``, a tuple ``(side, v)`` as ``(side, v, cluster)``: what the clustered
    aggregations (``stats.CLUSTER_AWARE``) read."""
    return (*value, cluster) if isinstance(value, tuple) else (value, cluster)


# --------------------------------------------------------------------------
# Views: metrics whose document values are another metric's, selected or tagged by the document's labels


class View(NamedTuple):
    """A metric whose value in each document is a view of a stored metric's: ``source``'s value in the
    documents whose labels ``part`` maps to ``which`` (every document where ``part`` is None), as
    ``(tag(labels), value)`` where ``tag`` is given, else as it is. ``companions``: the suffixes its
    documents held beside it (``_n_samples`` among them where the source has its own)."""

    name: str
    source: tuple[str, str]
    companions: tuple[str, ...]
    part: Callable | None = None
    which: Hashable = None
    tag: Callable | None = None


def labels_in(carriers: list, name: str) -> set:
    """The distinct labels the :func:`carrier` s of one metric carry.

    Raises
    ------
    ConfigurationError
        A value that carries no labels (its task's ``document_labels`` gave none).
    """
    found = set()
    for item in carriers:
        labels = labels_of(item)
        if labels is None:
            raise ConfigurationError(
                f"{name}: a document's value carries no labels, and the task derives other metrics from them; "
                "its document_labels must label every document (lm_eval_bias.companions)"
            )
        found.add(labels)
    return found


def stored_sources(raw_metrics: dict, stored):
    """For a task's ``derived_lists``: each stored metric whose views it derives, as ``(metric, its key in
    ``raw_metrics``, the labels its documents carry, its count companion, the companions a view that is
    its mean again had)``; ``_n_samples`` is the count companion where the documents held one.

    Raises
    ------
    ConfigurationError
        A value that carries no labels (:func:`labels_in`).
    """
    for source, carriers in raw_metrics.items():
        name, filter_name = source
        if name not in stored:
            continue
        counted = ("_n_samples",) if (name + "_n_samples", filter_name) in raw_metrics else ()
        yield name, source, labels_in(carriers, name), counted, carriers[0][2] + counted


def view_lists(raw_metrics: dict, views) -> dict:
    """A task's ``derived_lists`` of views: each view's list and its companions', built when read.

    Parameters
    ----------
    raw_metrics : dict
        lm-eval's ``raw_metrics`` of the task; each view's source holds :func:`carrier` s with labels.
    views : iterable of View
        The views, those of one source and ``part`` together (each such split is made once, when the
        first of them is read, and kept until a list of another is).

    Returns
    -------
    dict
        ``(metric, filter)`` -> a function of whether its aggregation reads clusters, giving its list:
        the entries of the documents in the view, in the documents' order, as they held them.
    """
    reader = _ViewReader(raw_metrics)
    built = {}
    for view in views:
        for suffix in ("", *view.companions):
            built[(view.name + suffix, view.source[1])] = functools.partial(reader.entries, view, suffix)
    return built


class _ViewReader:
    def __init__(self, raw_metrics: dict):
        self.raw = raw_metrics
        self._split: tuple | None = None  # ((source, part), {which: [carriers]})
        self._last: tuple | None = None  # ((view, clustered), entries): an interval's bounds share them

    def entries(self, view: View, suffix: str, clustered: bool) -> list:
        carriers = self._documents(view)
        if suffix == "_n":
            return [1] * len(carriers)
        if suffix == "_n_samples":
            counts = self.raw[(view.source[0] + suffix, view.source[1])]
            if view.part is None:
                return counts
            return [count for count, item in zip(counts, self.raw[view.source]) if view.part(item[3]) == view.which]
        key = (view, clustered)
        if self._last is None or self._last[0] != key:
            self._last = (key, _view_entries(carriers, view.tag, clustered))
        return self._last[1]

    def _documents(self, view: View) -> list:
        carriers = self.raw[view.source]
        if view.part is None:
            return carriers
        key = (view.source, view.part)
        if self._split is None or self._split[0] != key:
            self._split = None  # the previous split is let go before the next is made
            parts: dict = {}
            for item in carriers:
                parts.setdefault(view.part(item[3]), []).append(item)
            self._split = (key, parts)
        return self._split[1].get(view.which, [])


def _view_entries(carriers: list, tag, clustered: bool) -> list:
    if tag is None and not clustered:
        return [item[0] for item in carriers]
    entries = []
    for item in carriers:
        value = item[0] if tag is None else (tag(item[3]), item[0])
        entries.append(in_cluster(value, item[1]) if clustered else value)
    return entries


@functools.lru_cache(maxsize=16)
def _stored_names(stored: tuple) -> frozenset:
    return frozenset(name + suffix for name in stored for suffix in ("", "_n_samples"))


def lists_stored_only(sample: dict, stored) -> bool:
    """For a task's ``derived_entries``: whether a logged sample lists the ``stored`` metrics (and their
    ``_n_samples``) alone, so that its views are to be derived; a sample that lists more held them itself
    (an earlier task version's), and gets none.

    Parameters
    ----------
    sample : dict
        The sample, as JSON gives it.
    stored : tuple of str
        The metrics whose views the task derives.

    Returns
    -------
    bool
    """
    return _stored_names(tuple(stored)).issuperset(sample.get("metrics") or ())


def stored_view_entries(sample: dict, stored, views_of, what: str, names, cluster, clustered) -> dict:
    """For a task's ``derived_entries``: the views of each value one logged sample stores, and their
    companions, among ``names``.

    Parameters
    ----------
    sample : dict
        The sample, as JSON gives it.
    stored : iterable of str
        The metrics whose views the task derives, where the sample lists them.
    views_of : callable
        ``(metric, value)`` -> each view of that stored value in the sample's document -> its entry.
    what : str
        What is derived, for the message: e.g. "the per-identity and gap entries are derived from it".
    names, cluster, clustered
        As :func:`view_entries`.

    Returns
    -------
    dict
        Metric name -> value, as the document held it.

    Raises
    ------
    NotDerivable
        A stored value that is not a number.
    """
    listed = sample.get("metrics") or ()
    views = {}
    for name in stored:
        if name not in listed:
            continue
        value = sample.get(name)
        if type(value) not in (int, float):
            raise NotDerivable(f"its {name} is {value!r}, not a number, and {what}")
        count = sample.get(name + "_n_samples")
        for view, entry in views_of(name, value).items():
            views[view] = list(entry) if isinstance(entry, tuple) else entry
            if count is not None:
                views[view + "_n_samples"] = count
    return view_entries(views, tuple(names), cluster, clustered)


def view_entries(views: dict, names, cluster, clustered) -> dict:
    """For the readers of samples files: those of ``names`` that are one sample's views or their
    companions (a task's ``derived_entries``).

    Parameters
    ----------
    views : dict
        Each view of the sample's document -> its value as JSON gives it (``[tag, value]`` for a tagged
        one); ``<view>_n_samples`` -> its count, where the document held one.
    names : tuple of str
        The metrics the results file reports under the sample's filter that the sample does not list.
    cluster : int or None
        The document's cluster.
    clustered : callable
        A metric's name -> whether its aggregation reads each document's cluster beside its value.

    Returns
    -------
    dict
        Metric name -> value, as the document held it.
    """
    wanted = _name_set(names)
    entries = {}
    for base, value in views.items():
        for suffix in ("", *DERIVED):
            name = base + suffix
            if name not in wanted:
                continue
            if suffix == "":
                entries[name] = value
            else:
                entries[name] = _json_companion(value, suffix, cluster if _is_clustered(clustered, name) else None)
    return entries


@functools.lru_cache(maxsize=16)
def _name_set(names: tuple) -> frozenset:
    """``names`` as a set: a samples file's left-out names are the same for most of its lines."""
    return frozenset(names)


@functools.lru_cache(maxsize=2**14)
def _is_clustered(clustered, name: str) -> bool:
    """``clustered(name)``, asked once per name: a reader's ``clustered`` looks up the metric's aggregation,
    and a samples file asks it of the same few names on each of up to a million and a half lines."""
    return clustered(name)


def plain_samples(samples: list[dict]) -> None:
    """lm-eval's logged samples of one task, in place, with each :func:`carrier` replaced by its value."""
    for sample in samples:
        for name in sample.get("metrics", ()):
            if carried(sample[name]) is not None:
                sample[name] = sample[name][0]


# --------------------------------------------------------------------------
# Readers of samples files


class NotDerivable(ValueError):
    """A sample that lacks what an entry it leaves out is derived from: raised with ``reason`` by a
    task's ``derived_entries`` hook, and again by :func:`completed_samples` with the sample's
    ``position`` among those it was given."""

    def __init__(self, reason: str, position: int | None = None):
        super().__init__(reason)
        self.reason, self.position = reason, position


def completed_samples(
    samples: list[dict], reported: dict[str, set], cluster_of, clustered, derived_entries=None
) -> None:
    """Give each sample of one samples file, in place, the entries it leaves out (its derived companions,
    and those its task derives), and list them in its ``metrics``.

    Parameters
    ----------
    samples : list of dict
        The samples, as JSON gives them.
    reported : dict
        Filter -> the names of the metrics the results file beside the samples reports under it.
    cluster_of : callable
        A document (``sample["doc"]``) -> its cluster, or None where the task declares no cluster unit.
    clustered : callable
        A metric's name -> whether its aggregation reads each document's cluster beside its value.
    derived_entries : callable, optional
        The task's ``derived_entries`` hook: ``(sample, names, cluster, clustered)`` -> the entries
        among ``names`` (reported, not listed in the sample) that the task derives from what the sample
        holds, as the sample held them before they were left out.

    Raises
    ------
    NotDerivable
        A sample that lacks what the hook derives an entry from (its ``position`` says which).
    """
    plans: dict[tuple, tuple] = {}  # (filter, metric names) -> (companions to derive, names for the hook)
    for position, sample in enumerate(samples):
        names, filter_name = sample.get("metrics"), sample.get("filter")
        if not isinstance(names, list) or filter_name not in reported:
            continue
        key = (filter_name, tuple(names))
        plan = plans.get(key)
        if plan is None:
            unlisted = tuple(sorted(reported[filter_name].difference(names))) if derived_entries is not None else ()
            plan = plans[key] = (_plan(names, reported[filter_name], clustered), unlisted)
        companions, unlisted = plan
        if not companions and not unlisted:
            continue
        cluster = None
        if unlisted or any(is_clustered for *_, is_clustered in companions):
            # as the task scored it: a document without its cluster fields is a cluster of its own
            doc = sample.get("doc")
            cluster = cluster_of(doc) if isinstance(doc, dict) else None
        added = []
        if unlisted:
            try:
                entries = derived_entries(sample, unlisted, cluster, clustered)
            except NotDerivable as error:
                raise NotDerivable(error.reason, position) from None
            sample.update(entries)
            added += entries
        for name, base, suffix, is_clustered in companions:
            if name in sample or not _json_carriable(sample.get(base)):
                continue
            sample[name] = _json_companion(sample[base], suffix, cluster if is_clustered else None)
            added.append(name)
        if added:
            sample["metrics"] = names + added


def _plan(names: list, reported: set, clustered) -> list[tuple[str, str, str, bool]]:
    listed = set(names)
    plan = []
    for base in names:
        if not isinstance(base, str):
            continue
        for suffix in DERIVED:
            name = base + suffix
            if name in reported and name not in listed:
                plan.append((name, base, suffix, suffix != "_n" and clustered(name)))
    return plan


def _json_carriable(value) -> bool:
    if isinstance(value, list):
        return bool(value) and isinstance(value[-1], float)
    return isinstance(value, float)


def _json_companion(value, suffix: str, cluster):
    if suffix == "_n":
        return 1
    if cluster is None:
        return value
    return [*(value if isinstance(value, list) else [value]), cluster]
