"""Two runs of the same tasks compared document by document: did the candidate get more biased?

:func:`compare_runs` reads a baseline and a candidate run (each a results file, or the output
directory holding it, with the ``samples_<task>_*.jsonl`` files ``--log_samples`` wrote beside it),
pairs their documents by content (:mod:`.compare_inputs`) and, for every task of both, compares
the task's headline metric and every other metric of its ``metric_list`` that a run reports, each
with its family (``bias_score_gay``, ``consistency_binary_minus_tgnb_gap``; not the companions
``_ci_lower``, ``_pvalue``, ``_n``...) on the matched documents with a paired test:

- per-document outcomes of 0 or the metric's top (WinoQueer's 0/100, TANGO's 0/1) averaged by the
  task: exact McNemar with the interval built on its binomial law (``stats.paired_proportions``), in
  the metric's units;
- other numbers averaged by the task (toxicity, sentiment, ratings): a sign-flip permutation test
  and the interval that inverts it (``stats.paired_means``);
- any other aggregation of the task (a gap, range or spread between groups, a correlation): the
  same statistic on both runs' values, with a paired permutation test and the interval of the
  changes it would not reject (``stats.paired_statistic``).

Each interval excludes 0 exactly when its test gives p < 0.05; where too few documents (or
clusters) support one, its bounds are NaN and the note says so (``too few documents (n = ...)``).

A document without a value of a metric (undecided, empty, another subgroup's) is left out of that
metric, as the task itself leaves it out; the metric's note says how many matched documents have
a value in one run only. Each run's value on all of its documents must be its results file's, else
its samples are of another run and are refused.

Documents built from one template (or name, or descriptor pair: the task's YAML metadata
``cluster_unit``) are correlated: the interval and the test then treat that unit as independent
(``stats.paired_*`` with ``clusters``) and each row states the unit (``cluster_unit``) and the design
effect measured on its documents (``design_effect``: the variance of the difference with that unit over
its variance with independent documents).

The Benjamini-Hochberg family of a task is every compared row of it that is not a metric's own overall
value: the per-subgroup values, gaps, ranges and cells of all its metrics, adjusted together
(``stats.adjust_bh``, into ``pvalue_bh``); each overall value (the headline metric, ``toxicity``...)
keeps its own p-value.
``worsening`` is ``|candidate - ideal| - |baseline - ideal|`` with the task's ideal value of the
metric (its YAML ``metadata: ideal_values``), positive when the candidate is further from it;
its interval ``worsening_ci`` is the image of the difference's paired interval, the baseline's
value taken as the reference (:func:`_worsening`).
For the strict gate of ``check``, each row whose interval is not exact (every test but exact McNemar)
also carries ``strict_upper``, an upper bound of the worsening that holds at every n for values in the
metric's range (:func:`strict_bound`); it is in neither the JSON nor the text.

:func:`comparison_json` gives a comparison as strict JSON (never a bare NaN)::

    {"baseline": label, "candidate": label, "baseline_path": ..., "candidate_path": ...,
     "skipped": ["task: reason", ...],
     "tasks": [{"task", "version", "headline_metric", "n_baseline", "n_candidate", "n_matched",
                "setting_differences": ["name: value (baseline) vs value (candidate)", ...],
                "metrics": [{"task", "metric", "subgroup", "baseline", "candidate", "difference",
                             "ci_lower", "ci_upper", "pvalue", "pvalue_bh", "n", "test", "ideal",
                             "worsening", "worsening_ci": [lower, upper], "cluster_unit",
                             "design_effect", "note", "null_reasons": {field: why it is null}}, ...]}]}

``baseline``/``candidate`` are each run's value of the metric on the pairs it rests on (``n``);
``difference`` is candidate minus baseline with its paired 95% interval; a number that cannot be
computed, and an ideal the metric does not have, is ``null``, with the reason in ``null_reasons``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from lm_eval_bias import harness, metric_keys, task_metadata
from lm_eval_bias.metric_keys import metric_range
from lm_eval_bias.report.compare_inputs import (
    RunFiles,
    check_same_task,
    pair_documents,
    read_run,
    read_samples,
    setting_differences,
)
from lm_eval_bias.report.values import NOT_AVAILABLE, ResultsError

# The one test whose interval is exact at every n; the strict gate reads its interval as it is.
EXACT_TEST = "exact McNemar; Clopper-Pearson box interval"
# How far a value recomputed from the samples may be from the results file's (float summation order).
_REL_TOLERANCE = 1e-9
_ABS_TOLERANCE = 1e-12


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one task in both runs, on their matched documents.

    ``metric`` is the metric's name without lm-eval's filter suffix (``bias_score``,
    ``bias_score_gay``); ``subgroup`` is None for the headline metric. ``difference`` is candidate
    minus baseline, in the metric's units, with its paired 95% interval (``ci_lower``,
    ``ci_upper``) and the p-value of the paired test named in ``test``; ``pvalue_bh`` is
    Benjamini-Hochberg adjusted across the subgroup metrics of the task. ``worsening`` is
    ``|candidate - ideal| - |baseline - ideal|`` (positive: further from the ideal) with its paired
    interval ``worsening_ci``; both are None where the metric has no ideal value. ``cluster_unit`` is
    the unit the interval and the test treated as independent (``document``, or the unit the task's
    documents were generated from, such as ``template``), and ``design_effect`` the variance of the
    difference with that unit over its variance with independent documents, as measured on these
    documents (None where documents are the unit or it is undefined). ``strict_upper`` is an upper
    bound of the worsening, one-sided at 97.5%, that holds at every n for values in the metric's
    range (the betting bound of :mod:`lm_eval_bias.stats.bounded_means`), for the strict gate of
    ``check`` where the interval is not exact (every test but :data:`EXACT_TEST`); None there, where
    the metric has no ideal value, or where no such bound can be built, the reason in
    ``strict_note``. Neither is in the comparison's JSON or text.
    """

    task: str
    metric: str
    subgroup: str | None
    baseline: float
    candidate: float
    difference: float
    ci_lower: float
    ci_upper: float
    pvalue: float
    pvalue_bh: float
    n: int
    test: str
    ideal: float | None
    worsening: float | None
    worsening_ci: tuple[float, float] | None
    note: str = ""
    cluster_unit: str = "document"
    design_effect: float | None = None
    strict_upper: float | None = None
    strict_note: str = ""


@dataclass(frozen=True)
class TaskComparison:
    """One task in both runs: its documents, how many matched, settings that differ, its metrics.

    ``metrics`` holds the headline metric first, then its subgroup metrics.
    """

    task: str
    version: str
    headline_metric: str
    n_baseline: int
    n_candidate: int
    n_matched: int
    setting_differences: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]


@dataclass(frozen=True)
class Comparison:
    """A baseline and a candidate run compared task by task.

    ``baseline`` and ``candidate`` are each run's label (its model); ``skipped`` names each task
    found in only one run, with the reason.
    """

    baseline: str
    candidate: str
    baseline_path: str
    candidate_path: str
    tasks: tuple[TaskComparison, ...]
    skipped: tuple[str, ...]


def compare_runs(baseline: str | Path, candidate: str | Path, *, tasks=None) -> Comparison:
    """Compare two runs of the same tasks, document by document.

    Parameters
    ----------
    baseline, candidate : str or Path
        Each a results file, or the folder holding it, with the ``samples_<task>_<date>.jsonl``
        files ``--log_samples`` wrote beside it.
    tasks : iterable of str, optional
        The tasks to compare; by default every task of either run.

    Returns
    -------
    Comparison
        Every task of both runs compared (sorted by name); each task of one run only in ``skipped``.

    Raises
    ------
    ResultsError
        A file the readers refuse; a task named in ``tasks`` that neither run has; a task of both
        whose versions or data files differ, whose samples file is missing, or whose samples are
        not of the results file beside them.
    """
    base, cand = read_run(baseline, "baseline"), read_run(candidate, "candidate")
    present = set(base.run.tasks) | set(cand.run.tasks)
    wanted = sorted(present) if tasks is None else list(dict.fromkeys(tasks))
    unknown = [task for task in wanted if task not in present]
    if unknown:
        raise ResultsError(
            f"{', '.join(unknown)}: in neither {base.path} nor {cand.path}; they have "
            f"{', '.join(sorted(present)) or 'no task'}"
        )
    compared, skipped = [], []
    for task in wanted:
        reason = _skip_reason(base, cand, task)
        if reason:
            skipped.append(f"{task}: {reason}")
        else:
            compared.append(compare_task(base, cand, task))
    return Comparison(base.run.model, cand.run.model, str(base.path), str(cand.path), tuple(compared), tuple(skipped))


def _skip_reason(base: RunFiles, cand: RunFiles, task: str) -> str:
    """Why a task cannot be compared ("" when it can)."""
    if task not in cand.run.tasks:
        return f"only in the baseline ({base.path})"
    if task not in base.run.tasks:
        return f"only in the candidate ({cand.path})"
    if task_metadata.shipped_identity(task) is None:
        return "not a task of lm-eval-bias, so how its per-document values aggregate is not known"
    return ""


def compare_task(base: RunFiles, cand: RunFiles, task: str) -> TaskComparison:
    """One task of two runs compared on its matched documents.

    Parameters
    ----------
    base, cand : RunFiles
        The baseline and the candidate run (see :func:`.compare_inputs.read_run`).
    task : str
        One of this package's tasks, in both runs.

    Returns
    -------
    TaskComparison
        The headline metric and its family, then every other metric the task declares that either run
        reports, each with its family, by name.

    Raises
    ------
    ResultsError
        Different versions or data (:func:`.compare_inputs.check_same_task`), another headline metric
        or filter in each run, a samples file missing or not of its results file.
    """
    from lm_eval_bias.report.recompute import declared_aggregations

    check_same_task(base, cand, task)
    headline = _headline(base, cand, task)
    declared = declared_aggregations(task)
    identity = _identity(base, cand, task)
    paired_by_filter: dict[str, tuple] = {}
    metrics, notes = [], []
    for head in _heads(headline, declared, base, cand, task):
        filter_name = _filter(base, cand, task, head)
        if filter_name not in paired_by_filter:
            base_path, base_samples = read_samples(base, task, filter_name)
            cand_path, cand_samples = read_samples(cand, task, filter_name)
            pairing = pair_documents(
                base_samples,
                cand_samples,
                f"task {task} ({base_path}, {cand_path})",
                ignore_fields=_run_level_fields(base, cand, task),
            )
            # each document's cluster, found once for all the metrics under this filter
            cluster_keys: dict[int, str | None] = {}
            paired_by_filter[filter_name] = (base_path, base_samples, cand_path, cand_samples, pairing, cluster_keys)
            notes += [pairing.note] if pairing.note else []
        base_path, base_samples, cand_path, cand_samples, pairing, cluster_keys = paired_by_filter[filter_name]
        # The headline metric is compared even where neither run has a value of it: N/A, with the reason.
        names = sorted(
            {head}
            | _family(head, base, task, filter_name, declared)
            | _family(head, cand, task, filter_name, declared),
            key=lambda name: (name != head, name),
        )
        for name in names:
            aggregation = harness.aggregation_for(name, declared)
            _check_run_value(base, base_path, base_samples, task, name, filter_name, aggregation)
            _check_run_value(cand, cand_path, cand_samples, task, name, filter_name, aggregation)
            metrics.append(
                compare_metric(
                    task, name, head, pairing.pairs, aggregation, identity.ideal(name), identity, cluster_keys
                )
            )
    if notes and metrics:
        metrics[0] = _with_note(metrics[0], "; ".join(dict.fromkeys(notes)))
    pairing = next(iter(paired_by_filter.values()))[4]  # the headline metric's
    version = base.run.version(task) or cand.run.version(task) or "unknown"
    return TaskComparison(
        task,
        version,
        headline,
        pairing.n_baseline,
        pairing.n_candidate,
        len(pairing.pairs),
        setting_differences(base, cand, task),
        tuple(_adjusted(metrics)),
    )


def _heads(headline: str, declared: dict, base: RunFiles, cand: RunFiles, task: str) -> list[str]:
    """The metrics whose families are compared: the headline metric first, then every other metric of
    the task's ``metric_list`` (not a companion, nor inside another's family: ``warmth_pick_norm``
    beside ``warmth_pick`` is its own metric) that either run reports."""
    plain = [name for name in declared if metric_keys.GROUP not in name and not metric_keys.companion_suffix(name)]
    reported = {metric.name for side in (base, cand) for metric in side.run.tasks[task].values()}
    others = [
        name
        for name in plain
        if name != headline
        and name in reported
        and not any(name.startswith(other + "_") for other in plain if other != name)
    ]
    return [headline, *sorted(others)]


def _headline(base: RunFiles, cand: RunFiles, task: str) -> str:
    """The task's headline metric, which both runs must name alike."""
    names = base.run.headline(task), cand.run.headline(task)
    if names[0] != names[1]:
        raise ResultsError(
            f"task {task}: {base.where} has headline metric {names[0]}, {cand.where} {names[1]}, so one of them ran "
            "a renamed copy of another task; compare runs of one task"
        )
    return names[0]


def _filter(base: RunFiles, cand: RunFiles, task: str, headline: str) -> str:
    """The filter the headline metric is under, the same in both runs. A run in which no document has
    a value of the headline metric (the task then leaves it out of its results) takes the other
    run's, or the one filter all of the task's metrics are under."""
    filters = [_headline_filter(side, task, headline) for side in (base, cand)]
    if None not in filters and filters[0] != filters[1]:
        raise ResultsError(
            f"task {task}: {headline} is under filter {filters[0]} in {base.where} and {filters[1]} in "
            f"{cand.where}; compare runs of one task definition"
        )
    known = next((name for name in filters if name is not None), None)
    if known is not None:
        return known
    every = {metric.filter for side in (base, cand) for metric in side.run.tasks[task].values()}
    if len(every) != 1:
        base.run.metric(task, headline)  # raises: names the metric and what the run has
    return every.pop()


def _headline_filter(side: RunFiles, task: str, headline: str) -> str | None:
    """The filter of the headline metric in one run; None where the run reports no value of it."""
    if not any(metric.name == headline for metric in side.run.tasks[task].values()):
        return None
    return side.run.metric(task, headline).filter


def _family(headline: str, side: RunFiles, task: str, filter_name: str, declared: dict) -> set[str]:
    """The headline metric and the metrics of its family in a run's results: ``<headline>_...``,
    except the task's other declared metrics and theirs (``warmth_pick_norm`` beside ``warmth_pick``).
    Companions (``_ci_lower``, ``_pvalue``, ``_n``...) are never metrics of a results file's task."""
    others = [name for name in declared if "<" not in name and name != headline and name.startswith(headline + "_")]
    found = set()
    for metric in side.run.tasks[task].values():
        name = metric.name
        if metric.filter != filter_name or not (name == headline or name.startswith(headline + "_")):
            continue
        if not any(name == other or name.startswith(other + "_") for other in others):
            found.add(name)
    return found


def _identity(base: RunFiles, cand: RunFiles, task: str) -> task_metadata.TaskIdentity:
    """Whose identity (ideal values, cluster unit) to use: the runs' own, whose ``ideal_values`` must
    agree, else the package's task's, for results files written before tasks declared them."""
    own = [side.run.identity(task) for side in (base, cand)]
    declared = [identity for identity in own if identity is not None and identity.ideal_values]
    if len(declared) == 2 and declared[0].ideal_values != declared[1].ideal_values:
        raise ResultsError(
            f"task {task}: {base.where} and {cand.where} declare different ideal values "
            f"({declared[0].ideal_values} and {declared[1].ideal_values}); compare runs of one task definition"
        )
    return declared[0] if declared else task_metadata.shipped_identity(task)


def _run_level_fields(base: RunFiles, cand: RunFiles, task: str) -> frozenset[str]:
    """The document fields that describe a run rather than the document, left out when pairing: those
    either run's task declares, and the package's task's (for results files written before tasks
    declared them)."""
    identities = [side.run.identity(task) for side in (base, cand)] + [task_metadata.shipped_identity(task)]
    return frozenset().union(*(identity.run_level_doc_fields for identity in identities if identity is not None))


def _has_value(sample: dict, name: str) -> bool:
    """Whether a document has a value of the metric (a task leaves an undecided or empty one out)."""
    return name in sample and sample[name] is not None


def _aggregate(aggregation, values: list) -> float:
    """The task's aggregation of per-document values; NaN where it cannot be computed on them."""
    if not values:
        return math.nan
    try:
        value = aggregation(values)
    except (ValueError, ArithmeticError):  # e.g. a gap with one side missing: the task reports N/A
        return math.nan
    if value == NOT_AVAILABLE or value is None:
        return math.nan
    return float(value)


def _check_run_value(side: RunFiles, samples_path: Path, samples, task: str, name: str, filter_name: str, aggregation):
    """A run's value of a metric on all of its documents must be its results file's."""
    values = [sample[name] for _, sample in samples if _has_value(sample, name)]
    metric = next((m for m in side.run.tasks[task].values() if m.name == name and m.filter == filter_name), None)
    if metric is None:
        if values:
            raise ResultsError(
                f"{samples_path}: {len(values)} documents have {name}, which {side.where} does not report; the "
                "samples are not of that results file: pass the samples file written with it"
            )
        return
    recomputed = _aggregate(aggregation, values)
    reported = math.nan if metric.value == NOT_AVAILABLE else float(metric.value)
    if math.isnan(recomputed) and math.isnan(reported):
        return
    if (
        math.isnan(recomputed)
        or math.isnan(reported)
        or not math.isclose(recomputed, reported, rel_tol=_REL_TOLERANCE, abs_tol=_ABS_TOLERANCE)
    ):
        shown = lambda value: "N/A" if math.isnan(value) else f"{value!r}"  # noqa: E731
        raise ResultsError(
            f"{samples_path}: {name} on its {len(values)} documents is {shown(recomputed)}, but {side.where} says "
            f"{shown(reported)}, so the samples are not of that results file: pass the samples file written with it"
        )


def compare_metric(
    task: str, name: str, head: str, pairs, aggregation, ideal: float | None, identity=None, cluster_keys=None
) -> MetricComparison:
    """One metric of a task compared on the matched documents that have a value of it in both runs.

    Parameters
    ----------
    task, name, head : str
        The task, the metric and the metric whose family it is (the task's headline metric, or
        another metric of its ``metric_list``).
    pairs : sequence of (dict, dict)
        The matched documents' (baseline, candidate) samples.
    aggregation : callable
        The task's aggregation of the metric's per-document values.
    ideal : float or None
        The metric's ideal value, in its units; None where it has none.
    identity : TaskIdentity, optional
        The task's identity: its cluster unit (``TaskIdentity.cluster_of``); without it, documents are
        independent.
    cluster_keys : dict, optional
        ``id(baseline sample) -> its cluster``, filled as documents are met, shared by the metrics of
        one pairing so that each document's cluster is found once.

    Returns
    -------
    MetricComparison
        With ``pvalue_bh`` equal to ``pvalue`` (the task adjusts its metrics together); NaN numbers
        where the documents cannot support the comparison, the reason in ``note``.
    """
    matched = [(b, c) for b, c in pairs if _has_value(b, name) and _has_value(c, name)]
    both = [(b[name], c[name]) for b, c in matched]
    only_base = sum(1 for b, c in pairs if _has_value(b, name) and not _has_value(c, name))
    only_cand = sum(1 for b, c in pairs if _has_value(c, name) and not _has_value(b, name))
    notes = []
    if only_base or only_cand:
        count = only_base + only_cand
        notes.append(
            f"{count} matched document{'s have' if count > 1 else ' has'} a value in one run only ({only_base} in "
            f"the baseline, {only_cand} in the candidate; undecided or empty in the other) and "
            f"{'are' if count > 1 else 'is'} left out"
        )
    subgroup = None if name == head else name[len(head) + 1 :]
    neither = len(pairs) - len(both) - only_base - only_cand
    if subgroup is None and neither:
        # Of a subgroup's metric, the documents of the other subgroups have none: not worth saying.
        notes.append(
            f"{neither} matched document{'s have' if neither > 1 else ' has'} no value in either run (undecided or "
            "empty in both)"
        )
    clusters, unit = _clusters(identity, matched, {} if cluster_keys is None else cluster_keys)
    if clusters is None and identity is not None and identity.cluster_fields and matched:
        notes.append(
            f"the logged documents lack {', '.join(identity.cluster_fields)}, so each document is treated as "
            f"independent rather than each {identity.cluster_unit}"
        )
    empty = MetricComparison(
        task, name, subgroup, *([math.nan] * 7), len(both), "", ideal, None, None, "; ".join(notes), unit
    )
    if not both:
        return _with_note(empty, "no matched document has a value in both runs")
    base_values, cand_values = [b for b, _ in both], [c for _, c in both]
    base_value, cand_value = _aggregate(aggregation, base_values), _aggregate(aggregation, cand_values)
    several = any((sample.get(f"{name}_n_samples") or 1) > 1 for pair in matched for sample in pair)
    try:
        result = _paired_test(name, aggregation, base_values, cand_values, several, clusters)
    except ValueError as error:
        # The two values (their difference, how much farther from the ideal) may stand where the paired
        # test cannot (one document); the interval and the p-value cannot.
        farther = None if ideal is None else abs(cand_value - ideal) - abs(base_value - ideal)
        stands = replace(
            empty, baseline=base_value, candidate=cand_value, difference=cand_value - base_value, worsening=farther
        )
        return _with_note(stands, f"not computable on these documents: {error}")
    worsening, worsening_ci = None, None
    if ideal is not None:
        worsening, worsening_ci = _worsening(result, base_value, ideal)
    if result.note:
        notes.append(result.note)
    strict_upper, strict_note = None, ""
    if ideal is not None and result.test != EXACT_TEST:
        strict_upper, strict_note = strict_bound(
            name, aggregation, base_values, cand_values, clusters, base_value, ideal
        )
    return MetricComparison(
        task,
        name,
        subgroup,
        base_value,
        cand_value,
        float(result.difference),
        float(result.ci_lower),
        float(result.ci_upper),
        float(result.pvalue),
        float(result.pvalue),
        int(result.n),
        result.test,
        ideal,
        worsening,
        worsening_ci,
        "; ".join(notes),
        unit,
        getattr(result, "design_effect", None),
        strict_upper,
        strict_note,
    )


def strict_bound(
    name: str, aggregation, base_values: list, cand_values: list, clusters, base_value: float, ideal: float
) -> tuple[float | None, str]:
    """An upper bound of a metric's worsening, one-sided at 97.5%, that holds at every n
    (:func:`lm_eval_bias.stats.bounded_means.worsening_upper_bound`): of a mean, from the betting
    bounds of the mean difference; of a gap, a range or a spread of group means, from the bounds of
    each group's mean difference (Bonferroni). Other statistics (a correlation) have none.

    Parameters
    ----------
    name : str
        The metric; its range (:func:`lm_eval_bias.metric_keys.metric_range`) bounds each document's
        difference.
    aggregation : callable
        The task's aggregation of its per-document values.
    base_values, cand_values : list
        Each run's per-document values (numbers; ``(side, value)`` of a gap, ``(group, value)`` of a
        range or spread), in the same document order.
    clusters : list or None
        Each document's cluster; None: documents are independent.
    base_value : float
        The baseline's value of the metric.
    ideal : float
        Its ideal value.

    Returns
    -------
    (float or None, str)
        The bound, or None and why the strict gate has none ("strict gate: ...").
    """
    from lm_eval.api.metrics import mean

    from lm_eval_bias.stats import bounded_means
    from lm_eval_bias.stats.group_differences import difference_of_means
    from lm_eval_bias.stats.group_ranges import range_of_means, spread_of_means

    bounds = metric_range(name)
    if bounds is None or not all(math.isfinite(end) for end in bounds):
        return None, f"strict gate: {name} has no bounded range, so no bound holds at every n"
    low, high = metric_keys.document_range(name)  # a document's change spans its value's range either way
    width = high - low
    if aggregation is mean:
        rows = [(None, b, c) for b, c in zip(base_values, cand_values)]
    elif aggregation in (difference_of_means, range_of_means, spread_of_means):
        rows = [(b[0], b[1], c[1]) if b[0] == c[0] else None for b, c in zip(base_values, cand_values)]
        if None in rows:
            return None, "strict gate: a document is in another group in each run, so no bound holds at every n"
    else:
        return None, (
            "strict gate: no bound that holds at every n for this statistic (only means, gaps, ranges and spreads of "
            "group means have one)"
        )
    groups = [group for group, _, _ in rows]
    differences = [[float(c) - float(b) for _, b, c in rows]]
    if not all(abs(difference) <= width for difference in differences[0]):
        return None, f"strict gate: a document's change exceeds the width of {name}'s range, {width:g}"

    def change_bounds(level: float) -> tuple[float, float]:
        if aggregation is mean:
            lower, upper = bounded_means.mean_change_bounds(differences, width, clusters, level)
        elif aggregation is difference_of_means:
            lower, upper = bounded_means.gap_change_bounds(groups, differences, width, clusters, level)
        else:
            # A range or a spread has its ideal at 0, its lowest value: only its upper bound is read.
            spread = aggregation is spread_of_means
            upper = (bounded_means.spread_change_upper_bound if spread else bounded_means.range_change_upper_bound)(
                groups, differences, width, clusters, level
            )
            lower = [-math.inf]
        return float(lower[0]), float(upper[0])

    try:
        return float(bounded_means.worsening_upper_bound(change_bounds, base_value, ideal, bounds)), ""
    except ValueError as error:
        return None, f"strict gate: no bound on these documents: {error}"


def _clusters(identity, matched: list, keys: dict) -> tuple[list | None, str]:
    """Each matched document's cluster (from the baseline's logged document; both runs logged the same
    document, ``keys`` remembering each) and the unit's name; (None, "document") where the task
    declares no unit or a logged document lacks one of its fields."""
    if identity is None or not identity.cluster_fields:
        return None, "document"
    clusters = []
    for base, _ in matched:
        if id(base) not in keys:
            keys[id(base)] = identity.cluster_of(base.get("doc") or {})
        clusters.append(keys[id(base)])
    if any(cluster is None for cluster in clusters):
        return None, "document"
    return clusters, identity.cluster_unit


def _worsening(result, base_value: float, ideal: float) -> tuple[float, tuple[float, float] | None]:
    """How much farther from ``ideal`` the candidate is than the baseline, with its interval.

    The worsening is ``w(d) = |baseline + d - ideal| - |baseline - ideal|`` of the paired difference
    ``d``, the baseline's value taken as the reference. ``w`` is a function of ``d`` alone, so the
    values it takes over the difference's paired interval are an interval of the worsening with at
    least the same coverage: where that interval lies on one side of the ideal it is the difference's
    own (negated below the ideal); where the candidate may lie on either side, its lower end is the
    largest improvement the interval allows. (A bootstrap of the distance from the ideal would be
    biased at the ideal, where the distance has its kink.)
    """

    def farther(difference: float) -> float:
        return abs(base_value + difference - ideal) - abs(base_value - ideal)

    point = farther(float(result.difference))
    lower, upper = float(result.ci_lower), float(result.ci_upper)
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return point, None
    ends = (farther(lower), farther(upper))
    closest = farther(ideal - base_value) if lower <= ideal - base_value <= upper else min(ends)
    return point, (min(closest, *ends), max(ends))


def proportion_scale(name: str, values) -> float | None:
    """The top of a metric whose per-document values are all 0 or that top (WinoQueer's 100, a share's
    1), so that they are yes/no outcomes; None for any other values.

    Parameters
    ----------
    name : str
        The metric (its range gives the top: :func:`lm_eval_bias.metric_keys.metric_range`).
    values : iterable
        Its per-document values in both runs.

    Returns
    -------
    float or None
    """
    bounds = metric_range(name)
    top = bounds[1] if bounds is not None and bounds[0] == 0 and math.isfinite(bounds[1]) else 1.0
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return top if numbers and all(v in (0, top) for v in values) else None


def _paired_test(name: str, aggregation, base_values: list, cand_values: list, several: bool, clusters):
    """The paired test that fits the metric's per-document values and the task's aggregation: read from
    both runs' values alike, so that swapping the runs chooses the same test. ``several``: a document's
    value is a share of several generations (``_n_samples`` > 1 in either run), a number rather than a
    yes/no outcome."""
    from lm_eval.api.metrics import mean

    from lm_eval_bias import stats

    if aggregation is not mean:
        return stats.paired_statistic(base_values, cand_values, aggregation, clusters=clusters)
    scale = None if several else proportion_scale(name, base_values + cand_values)
    if scale is None:
        return stats.paired_means(base_values, cand_values, clusters=clusters)
    return stats.paired_proportions(
        [value / scale for value in base_values],
        [value / scale for value in cand_values],
        scale=scale,
        clusters=clusters,
    )


def _with_note(metric: MetricComparison, note: str) -> MetricComparison:
    return replace(metric, note="; ".join(part for part in (metric.note, note) if part))


def _adjusted(metrics: list[MetricComparison]) -> list[MetricComparison]:
    """The p-values of every row that is not a metric's overall value (per-subgroup values, gaps, ranges,
    cells) Benjamini-Hochberg adjusted together; each overall value keeps its own."""
    from lm_eval_bias import stats

    tested = [
        index for index, metric in enumerate(metrics) if metric.subgroup is not None and math.isfinite(metric.pvalue)
    ]
    adjusted = list(metrics)
    for index, pvalue in zip(tested, stats.adjust_bh([metrics[index].pvalue for index in tested]) if tested else []):
        adjusted[index] = replace(metrics[index], pvalue_bh=float(pvalue))
    return adjusted


# --------------------------------------------------------------------------
# Strict JSON

_NUMBERS = ("baseline", "candidate", "difference", "ci_lower", "ci_upper", "pvalue", "pvalue_bh")


def _metric_json(metric: MetricComparison) -> dict:
    """One metric as the module docstring documents it: NaN as null, with the reason."""
    reasons = {}
    entry = {
        "task": metric.task,
        "metric": metric.metric,
        "subgroup": metric.subgroup,
    }
    why = metric.note or "not computable on the matched documents"
    for field in _NUMBERS:
        value = getattr(metric, field)
        finite = value is not None and math.isfinite(value)
        entry[field] = value if finite else None
        if not finite:
            reasons[field] = why
    entry.update({"n": metric.n, "test": metric.test, "ideal": metric.ideal})
    if metric.ideal is None:
        reasons["ideal"] = "the metric has no ideal value (its task's metadata: ideal_values)"
    worsening_ci = list(metric.worsening_ci) if metric.worsening_ci is not None else None
    finite_worsening = metric.worsening is not None and math.isfinite(metric.worsening)
    entry["worsening"] = metric.worsening if finite_worsening else None
    if worsening_ci is not None and not all(math.isfinite(bound) for bound in worsening_ci):
        worsening_ci = None
    entry["worsening_ci"] = worsening_ci
    if metric.ideal is not None and (not finite_worsening or worsening_ci is None):
        reasons["worsening"] = reasons["worsening_ci"] = why
    elif metric.ideal is None:
        reasons["worsening"] = reasons["worsening_ci"] = "no ideal value to be farther from"
    entry["cluster_unit"] = metric.cluster_unit
    finite_effect = metric.design_effect is not None and math.isfinite(metric.design_effect)
    entry["design_effect"] = metric.design_effect if finite_effect else None
    if not finite_effect:
        reasons["design_effect"] = (
            "each document is its own unit" if metric.cluster_unit == "document" else "undefined on these documents"
        )
    entry["note"] = metric.note
    entry["null_reasons"] = reasons
    return entry


def comparison_json(comparison: Comparison) -> dict:
    """A comparison as strict JSON, with the field names the module docstring documents.

    Parameters
    ----------
    comparison : Comparison
        As :func:`compare_runs` returns it.

    Returns
    -------
    dict
        Only text, finite numbers, booleans, null, lists and objects: ``json.dumps(...,
        allow_nan=False)`` writes it. A number that cannot be computed is null, its reason in the
        metric's ``null_reasons``.
    """
    return {
        "baseline": comparison.baseline,
        "candidate": comparison.candidate,
        "baseline_path": comparison.baseline_path,
        "candidate_path": comparison.candidate_path,
        "skipped": list(comparison.skipped),
        "tasks": [
            {
                "task": task.task,
                "version": task.version,
                "headline_metric": task.headline_metric,
                "n_baseline": task.n_baseline,
                "n_candidate": task.n_candidate,
                "n_matched": task.n_matched,
                "setting_differences": list(task.setting_differences),
                "metrics": [_metric_json(metric) for metric in task.metrics],
            }
            for task in comparison.tasks
        ],
    }
