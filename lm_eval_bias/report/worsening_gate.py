"""Worsening rules (``TASK[:METRIC]=MARGIN``) checked on the paired comparison of a candidate run with
its baseline.

A worsening rule bounds how much further from the metric's ideal value (its task's YAML metadata) the
candidate may be than the baseline, in the metric's units, on the documents both runs scored
(:func:`lm_eval_bias.report.compare.compare_runs`): the rule fails when the paired 95% interval of
the worsening lies wholly above the margin and the paired test finds the change (p < 0.05): worse by
more than the margin, demonstrably; with
``gate="strict"`` it passes only when the worsening lies demonstrably within the margin: for yes/no
outcomes compared by exact McNemar, when that interval lies wholly below it (its upper end falls below
the true worsening at most 2.5% of the time at every n); for every other number (scores such as
toxicity, gaps, ranges and spreads between groups, outcomes compared template by template), when the
betting bound of the worsening (``strict_upper`` of the comparison:
:mod:`lm_eval_bias.stats.bounded_means`), which holds at every n, lies below it; the verdict quotes that
bound. A number without such a bound (a correlation, a metric without a bounded range) fails ``strict``,
saying why. A margin the worsening can never exceed (``w = max(|low - ideal|, |high - ideal|)`` or more,
for a metric with values ``[low, high]``) is refused, as a limit outside a metric's range is; a margin of
0 is not (under ``strict`` it asks for a demonstrated improvement). A comparison too small to show
anything (no interval of the worsening: too few documents or clusters, or not computable; or fewer than
:data:`FEWEST_DOCUMENTS` documents, on which no paired test can find a change at p <
:data:`SIGNIFICANCE`) fails ``strict``, quoting why; under the other gates it does not fail and its note
says that nothing could be shown. A comparison with no worsening at all (no document has a value in
both runs) fails closed under every gate. Baseline and candidate that are one run (the same results
file, or copies with the same results and samples) are named in every worsening outcome's note
("nothing was compared") and fail ``strict``.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.metric_keys import metric_range, range_text
from lm_eval_bias.report.gate_rules import GATES, Outcome, WorseningRule, refuse_unreachable
from lm_eval_bias.report.no_verdict import no_verdict
from lm_eval_bias.report.paired_metrics import EXACT_TEST
from lm_eval_bias.report.run import Run
from lm_eval_bias.report.values import ResultsError
from lm_eval_bias.stats.paired_resampling import minimum_units

# How a strict verdict names the bound it read where the interval is not exact.
STRICT_BOUND = "betting bound, valid at every n"
# A rule fails only where the paired test also finds the change at this level.
SIGNIFICANCE = 0.05
# The fewest paired documents on which a paired test can find a change at SIGNIFICANCE (6: with n
# documents the smallest two-sided p-value of an exact swap or McNemar test is 2 ** (1 - n)).
FEWEST_DOCUMENTS = minimum_units(1 - SIGNIFICANCE)


def _check_margin(rule: WorseningRule, metric) -> None:
    """A margin the worsening can reach: the worsening ``|candidate - ideal| - |baseline - ideal|`` of a
    metric with values ``[low, high]`` and ideal value ``v`` lies within ``[-w, w]``, ``w = max(|low - v|,
    |high - v|)``, so a margin of ``w`` or more makes a rule that can never fail."""
    bounds = metric_range(metric.metric)
    if bounds is None or metric.ideal is None:
        return
    widest = max(abs(bounds[0] - metric.ideal), abs(bounds[1] - metric.ideal))
    what = (
        f"the worsening of {metric.metric} ({metric.metric} takes values {range_text(bounds)}, its ideal value is "
        f"{metric.ideal:g})"
    )
    refuse_unreachable(rule, "<=", rule.margin, what, (-widest, widest))


def _compared(comparison, rule: WorseningRule):
    """The task and metric of the comparison a worsening rule names; an error names what is missing,
    with close matches."""
    where = f"{rule.where}: " if rule.where else ""
    tasks = {task.task: task for task in comparison.tasks}
    if rule.task not in tasks:
        skipped = [reason for reason in comparison.skipped if re.match(rf"{re.escape(rule.task)}\b(?![.-])", reason)]
        close = difflib.get_close_matches(rule.task, sorted(tasks), n=3, cutoff=0.6)
        raise ResultsError(
            f"{where}rule '{rule}': the comparison has no task {rule.task!r}"
            + (f" ({'; '.join(skipped)})" if skipped else "")
            + (f"; similar: {', '.join(close)}" if close else "")
            + f"; tasks compared: {', '.join(sorted(tasks)) or 'none'}"
        )
    task = tasks[rule.task]
    name = rule.metric or task.headline_metric
    name = name[: -len(",none")] if name.endswith(",none") else name
    metrics = {metric.metric: metric for metric in task.metrics}
    if name not in metrics:
        close = difflib.get_close_matches(name, sorted(metrics), n=3, cutoff=0.6)
        raise ResultsError(
            f"{where}rule '{rule}': task {rule.task} has no compared metric {name!r}"
            + (f"; similar: {', '.join(close)}" if close else "")
            + f"; compared: {', '.join(metrics) or 'none'}"
        )
    metric = metrics[name]
    if metric.ideal is None:
        raise ResultsError(
            f"{where}rule '{rule}': {rule.task}'s metadata declares no ideal value for {name}, so 'worse' is not "
            "defined for it; gate it with an absolute rule (--max, --min) instead"
        )
    return task, metric


@dataclass(frozen=True)
class Sides:
    """What the files of a comparison's two runs say beyond the comparison itself."""

    same: str  # "baseline and candidate are the same run (...): nothing was compared", or ""
    runs: tuple[tuple[str, Run], ...]  # ("baseline", run), ("candidate", run): each whose results file exists


def read_sides(comparison) -> Sides:
    """Whether a comparison's baseline and candidate are one run, and each run, from the files it names.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.

    Returns
    -------
    Sides
        One run: the same results file (the same resolved path, or a link to it), or two results files with
        the same bytes whose samples files of the compared tasks have the same bytes (a copied run folder).
        A side whose results file does not exist (a comparison made by hand) has no run.

    Raises
    ------
    ResultsError
        A results file the reader refuses.
    """
    from lm_eval_bias.report.compare_inputs import read_run, samples_path

    paths = {"baseline": Path(comparison.baseline_path), "candidate": Path(comparison.candidate_path)}
    found = {side: read_run(path, side) for side, path in paths.items() if path.is_file()}
    base, cand = paths["baseline"], paths["candidate"]
    same = ""
    if base.resolve() == cand.resolve() or (len(found) == 2 and base.samefile(cand)):
        same = f"baseline and candidate are the same run ({base.resolve()}): nothing was compared"
    elif len(found) == 2 and base.read_bytes() == cand.read_bytes():
        tasks = [task.task for task in comparison.tasks]
        samples = [(samples_path(found["baseline"], task), samples_path(found["candidate"], task)) for task in tasks]
        if all(first.read_bytes() == second.read_bytes() for first, second in samples):
            same = (
                f"baseline and candidate are the same run ({base} and {cand} hold the same results and samples): "
                "nothing was compared"
            )
    return Sides(same, tuple((side, files.run) for side, files in found.items()))


def _worsening_outcome(comparison, rule: WorseningRule, gate: str, sides: Sides) -> Outcome:
    """Whether one worsening rule holds (see :func:`evaluate_worsening`)."""
    from lm_eval_bias.report.compare_text import describe_metric, worsening_text

    task, metric = _compared(comparison, rule)
    _check_margin(rule, metric)
    model = f"{comparison.baseline} -> {comparison.candidate}"
    notes = [sides.same] if sides.same else []
    notes += [f"settings differ: {'; '.join(task.setting_differences)}"] if task.setting_differences else []
    if task.n_matched < max(task.n_baseline, task.n_candidate):
        notes.append(
            f"compared on the {task.n_matched} matched documents (baseline {task.n_baseline}, "
            f"candidate {task.n_candidate})"
        )
    notes += [metric.note] if metric.note else []
    undecided = [(side, no_verdict(run, task.task, metric.metric)) for side, run in sides.runs]
    undecided = [(side, found) for side, found in undecided if found is not None]
    notes += [f"{side}: {found.text}" for side, found in undecided]
    lower, upper = metric.worsening_ci or (math.nan, math.nan)
    worsening = metric.worsening if metric.worsening is not None else math.nan
    described = f"{describe_metric(metric)} ({metric.test}); {worsening_text(metric)}"
    margin = f"{rule.margin:g}"
    unjudged = next((side for side, found in undecided if found.every), None)
    unshown = _too_small(metric, lower, upper)
    interval = math.isfinite(lower) and math.isfinite(upper)

    def outcome(passed: bool, verdict: str) -> Outcome:
        return Outcome(rule, model, passed, f"{described}: {verdict}", "; ".join(notes))

    if not math.isfinite(worsening):
        # Nothing to compare: the rule fails closed, never passes unchecked.
        return outcome(False, "no interval of the worsening: fails closed")
    if unjudged is not None and gate != "estimate":
        return outcome(False, f"no verdict in the {unjudged}: fails closed")
    if sides.same and gate == "strict":
        return outcome(False, f"one run on both sides: not shown to be within {margin}")
    if unshown and gate == "strict":
        quoted = f" ({metric.note})" if metric.note and not interval else ""
        return outcome(False, f"{unshown}{quoted}: not shown to be within {margin}")
    if not interval:
        notes.append(f"nothing could be shown: {unshown}")
        return outcome(True, f"{unshown}: not shown to be worse by more than {margin}")
    passed, verdict = _verdict(metric, lower, upper, rule.margin, gate)
    if passed and unshown:
        notes.append(f"nothing could be shown: {unshown}")
    return outcome(passed, verdict)


def _too_small(metric, lower: float, upper: float) -> str:
    """Why a comparison can show nothing of its worsening ("" when it can): no interval (too few documents
    or clusters, or not computable: the row's note says which), or fewer documents than any paired test
    needs to find a change (an interval of identical values on two documents is [0, 0])."""
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return "no interval of the worsening"
    if metric.n < FEWEST_DOCUMENTS:
        return (
            f"too few documents (n = {metric.n}) for any paired test to find a change at p < {SIGNIFICANCE:g} "
            f"(it needs {FEWEST_DOCUMENTS})"
        )
    return ""


def _verdict(metric, lower: float, upper: float, margin: float, gate: str) -> tuple[bool, str]:
    """Whether a worsening with the interval ``[lower, upper]`` holds to the margin, and why."""
    shown = f"{margin:g}"
    if gate == "strict":
        return _strict_verdict(metric, upper, margin)
    if not lower > margin:
        return True, f"not wholly above {shown}"
    if not metric.pvalue < SIGNIFICANCE:
        # The paired intervals exclude 0 exactly when their test gives p < 0.05, so this cannot follow from
        # them; it keeps a comparison built another way (an older results reader) from failing unproven.
        return True, f"wholly above {shown}, but the paired test finds no change (p >= {SIGNIFICANCE:g}): not shown"
    return False, f"wholly above {shown}: worse by more than the margin"


def _strict_verdict(metric, upper: float, margin: float) -> tuple[bool, str]:
    """Whether the strict gate passes a worsening, and why: an exact interval (:data:`EXACT_TEST`) by its
    upper end, any other by the comparison's betting bound (``strict_upper``), which falls below the
    true worsening at most 2.5% of the time at every n; without that bound it fails, saying why."""
    shown = f"{margin:g}"
    if metric.test == EXACT_TEST:
        passed = upper < margin
        return passed, f"wholly below {shown}" if passed else f"not wholly below {shown}: not shown to be within it"
    bound = getattr(metric, "strict_upper", None)
    if bound is None or not math.isfinite(bound):
        why = getattr(metric, "strict_note", "") or "strict gate: no bound of the worsening that holds at every n"
        return False, f"{why}: not shown to be within {shown}"
    described = f"bound {bound:g} {{}}wholly below {shown} ({STRICT_BOUND})"
    if bound < margin:
        return True, described.format("")
    return False, described.format("not ") + ": not shown to be within it"


def compare_for(rules: list[WorseningRule], baseline: str | Path, candidate: str | Path):
    """The paired comparison of the candidate with the baseline on the tasks the rules name (and only
    those: another task's mismatch, such as a different version, does not stop the gate).

    Parameters
    ----------
    rules : list of WorseningRule
        The rules.
    baseline, candidate : str or Path
        Each a results file or output folder, with its ``--log_samples`` files.

    Returns
    -------
    Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it; a rule's task found in one run
        only is in its ``skipped``.

    Raises
    ------
    ResultsError
        A run that cannot be read or compared, or a rule naming a task neither run has (with close
        matches).
    """
    from lm_eval_bias.report import compare
    from lm_eval_bias.report.compare_inputs import read_run

    present = set(read_run(baseline, "baseline").run.tasks) | set(read_run(candidate, "candidate").run.tasks)
    for rule in rules:
        if rule.task not in present:
            close = difflib.get_close_matches(rule.task, sorted(present), n=3, cutoff=0.6)
            raise ResultsError(
                (f"{rule.where}: " if rule.where else "")
                + f"rule '{rule}': neither run has task {rule.task!r}"
                + (f"; similar: {', '.join(close)}" if close else "")
                + f"; the runs have {', '.join(sorted(present)) or 'no task'}"
            )
    return compare.compare_runs(baseline, candidate, tasks=sorted({rule.task for rule in rules}))


def evaluate_worsening(rules: list[WorseningRule], comparison, gate: str = "estimate") -> list[Outcome]:
    """Check each worsening rule on the paired comparison of a candidate run with its baseline.

    Parameters
    ----------
    rules : list of WorseningRule
        The rules.
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.
    gate : {"estimate", "interval", "strict"}
        ``strict``: a rule passes only when the paired 95% interval of the worsening lies wholly below
        its margin (of a number not compared by exact McNemar: its betting bound, ``strict_upper``), on
        at least :data:`FEWEST_DOCUMENTS` documents, and the two runs are not one;
        otherwise a rule fails only when that interval lies wholly above its margin and the paired
        test's p-value is below :data:`SIGNIFICANCE` (a worsening without an interval passes, its note
        saying that nothing could be shown). A comparison without a worsening fails either way; so
        does, except under ``estimate``, one in which every document of either run gave no verdict
        (:func:`no_verdict`).

    Returns
    -------
    list of Outcome
        One per rule, its message naming both values, the difference with its interval and p-value,
        and the worsening with its interval; its note naming one run on both sides, each run's ties
        or undecided documents, and a comparison too small to show anything.

    Raises
    ------
    ResultsError
        An unknown gate; a rule naming a task or metric the comparison lacks (with close matches), a
        metric without an ideal value, or a margin the worsening can never exceed; a results file
        named by the comparison that the reader refuses.
    """
    if gate not in GATES:
        raise ResultsError(f"gate must be one of {', '.join(GATES)}, got {gate!r}")
    sides = read_sides(comparison)
    return [_worsening_outcome(comparison, rule, gate, sides) for rule in rules]
