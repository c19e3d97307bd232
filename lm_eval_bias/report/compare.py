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
value taken as the reference (:func:`lm_eval_bias.report.paired_metrics.compare_metric`).
For the strict gate of ``check``, each row whose interval is not exact (every test but exact McNemar)
also carries ``strict_upper``, an upper bound of the worsening that holds at every n for values in the
metric's range (:func:`lm_eval_bias.report.strict_bounds.strict_bound`); it is in neither the JSON nor the text.

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

from lm_eval_bias import aggregations, metric_keys, task_metadata
from lm_eval_bias.report.compare_inputs import (
    RunFiles,
    check_same_task,
    pair_documents,
    read_run,
    read_samples,
    setting_differences,
)
from lm_eval_bias.report.paired_metrics import (
    MetricComparison,
    aggregate,
    compare_metric,
    has_value,
    with_note,
)
from lm_eval_bias.report.values import NOT_AVAILABLE, ResultsError

# How far a value recomputed from the samples may be from the results file's (float summation order).
_REL_TOLERANCE = 1e-9
_ABS_TOLERANCE = 1e-12


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
    # by name, or read with no identity: a user's own task of one of our names (results.py)
    if task_metadata.shipped_identity(task) is None or None in (base.run.identity(task), cand.run.identity(task)):
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
            pairing = pair_documents(base_samples, cand_samples, f"task {task} ({base_path}, {cand_path})")
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
            aggregation = aggregations.aggregation_for(name, declared)
            _check_run_value(base, base_path, base_samples, task, name, filter_name, aggregation)
            _check_run_value(cand, cand_path, cand_samples, task, name, filter_name, aggregation)
            metrics.append(
                compare_metric(
                    task, name, head, pairing.pairs, aggregation, identity.ideal(name), identity, cluster_keys
                )
            )
    if notes and metrics:
        metrics[0] = with_note(metrics[0], "; ".join(dict.fromkeys(notes)))
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


def _check_run_value(side: RunFiles, samples_path: Path, samples, task: str, name: str, filter_name: str, aggregation):
    """A run's value of a metric on all of its documents must be its results file's."""
    values = [sample[name] for _, sample in samples if has_value(sample, name)]
    metric = next((m for m in side.run.tasks[task].values() if m.name == name and m.filter == filter_name), None)
    if metric is None:
        if values:
            raise ResultsError(
                f"{samples_path}: {len(values)} documents have {name}, which {side.where} does not report; the "
                "samples are not of that results file: pass the samples file written with it"
            )
        return
    recomputed = aggregate(aggregation, values)
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
