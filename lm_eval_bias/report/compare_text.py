"""A paired comparison's numbers as its outputs write them: values, signed differences, intervals and
p-values (``N/A`` for what is not a finite number), each metric's cells and sentences, and why a metric has
no interval (:mod:`lm_eval_bias.report.compare_outputs`).
"""

from __future__ import annotations

import math
import re

from lm_eval_bias.report import svg
from lm_eval_bias.report.compare import TaskComparison
from lm_eval_bias.report.paired_metrics import MetricComparison

BH_FAMILY = (
    "Benjamini-Hochberg adjusted across all of the task's non-headline metrics (per-subgroup values, gaps, "
    "ranges, cells)"
)
# The note a comparison's statistics give where the documents or clusters cannot support an interval.
_TOO_FEW = re.compile(r"too few (?:documents \(n = [\d,]+\)|clusters \(G = [\d,]+\))")


def is_finite_number(value) -> bool:
    """Whether a value is a finite number (a bool is not one).

    Parameters
    ----------
    value : object
        The value.

    Returns
    -------
    bool
        True for a finite int or float.
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number_text(value) -> str:
    """A value as the outputs show it: 4 significant digits, ``N/A`` for what is not a finite number."""
    return svg.format_number(value + 0.0) if is_finite_number(value) else "N/A"  # -0.0 reads as 0


def signed_text(value) -> str:
    """A difference with its sign (``+6``, ``-0.5``, ``0``), ``N/A`` for what is not a finite number."""
    if not is_finite_number(value):
        return "N/A"
    value = value + 0.0  # -0.0 (a swapped zero difference) reads as 0
    return "0" if value == 0 else f"{value:+.4g}"


def interval_text(lower, upper) -> str:
    """``[lower, upper]``, or ``N/A`` when either end is not a finite number."""
    if not (is_finite_number(lower) and is_finite_number(upper)):
        return "N/A"
    return f"[{number_text(lower)}, {number_text(upper)}]"


def pvalue_text(value) -> str:
    """A p-value to 3 significant digits, ``N/A`` for what is not a finite number."""
    return f"{value:.3g}" if is_finite_number(value) else "N/A"


def difference_text(metric: MetricComparison) -> str:
    """``+6 [4.125, 7.875]``: the difference with its interval; ``N/A`` without a difference."""
    if not is_finite_number(metric.difference):
        return "N/A"
    return f"{signed_text(metric.difference)} {interval_text(metric.ci_lower, metric.ci_upper)}"


def has_interval(metric: MetricComparison) -> bool:
    """Whether the paired difference has both ends of its 95% interval."""
    return is_finite_number(metric.ci_lower) and is_finite_number(metric.ci_upper)


def too_few_text(metric: MetricComparison) -> str:
    """Why a metric has no interval, where too few documents or clusters are why: the statistics'
    note (``too few documents (n = 3)``, ``too few clusters (G = 2)``), else ``too few documents (n = N)``
    for fewer than 2 documents; ``""`` otherwise."""
    found = _TOO_FEW.search(metric.note)
    if found:
        return found[0]
    return f"too few documents (n = {metric.n:,})" if metric.n < 2 else ""


def _with_reason(value, metric: MetricComparison) -> str:
    """A number whose interval is missing: the number (where there is one) and why there is no interval."""
    reason = too_few_text(metric) or "no interval"
    return f"{signed_text(value)}, {reason}" if is_finite_number(value) else reason


def difference_cell(metric: MetricComparison) -> str:
    """The table's difference: ``+6 [4.125, 7.875]``; without an interval, why (``+6, too few documents (n = 1)``)."""
    return difference_text(metric) if has_interval(metric) else _with_reason(metric.difference, metric)


def worsening_cell(metric: MetricComparison) -> str:
    """The table's worsening: ``+3.1 [0.4, 5.9]`` in the metric's units; ``no ideal`` where the metric has
    none; without an interval, why."""
    if metric.ideal is None:
        return "no ideal"
    worsening = metric.worsening if metric.worsening is not None else math.nan
    if not has_interval(metric) or metric.worsening_ci is None:
        return _with_reason(worsening, metric)
    return f"{signed_text(worsening)} {interval_text(*metric.worsening_ci)}"


def unit_text(metric: MetricComparison) -> str:
    """What the paired test treats as independent: ``document``, or ``template (design effect 2.3)``."""
    unit = getattr(metric, "cluster_unit", "document")
    design_effect = getattr(metric, "design_effect", None)
    return f"{unit} (design effect {number_text(design_effect)})" if is_finite_number(design_effect) else unit


def documents_text(task: TaskComparison) -> str:
    """``documents: baseline 100, candidate 90, matched 90``."""
    return f"documents: baseline {task.n_baseline}, candidate {task.n_candidate}, matched {task.n_matched}"


def task_heading(task: TaskComparison) -> str:
    """``winoqueer (version 1.0)``."""
    return f"{task.task} (version {task.version})"


def describe_metric(metric: MetricComparison) -> str:
    """One metric's numbers in a sentence, for tooltips and gate messages.

    Parameters
    ----------
    metric : MetricComparison
        The metric.

    Returns
    -------
    str
        ``bias_score_gay: baseline 60, candidate 66, difference +6 [4, 8], p = 0.001, p BH = 0.002, n = 90``.
    """
    return (
        f"{metric.metric}: baseline {number_text(metric.baseline)}, candidate {number_text(metric.candidate)}, "
        f"difference {difference_text(metric)}, "
        f"p = {pvalue_text(metric.pvalue)}, p BH = {pvalue_text(metric.pvalue_bh)}, n = {metric.n}"
    )


def worsening_text(metric: MetricComparison) -> str:
    """``worsening +6 [4.125, 7.875] (distance from the ideal 50)``; ``""`` without an ideal value.

    Parameters
    ----------
    metric : MetricComparison
        The metric.

    Returns
    -------
    str
        How much further from its ideal value the candidate is than the baseline, with the paired 95%
        interval (``N/A`` where either is not a number).
    """
    if metric.ideal is None:
        return ""
    lower, upper = metric.worsening_ci or (math.nan, math.nan)
    worsening = metric.worsening if metric.worsening is not None else math.nan
    return (
        f"worsening {signed_text(worsening)} {interval_text(lower, upper)} "
        f"(distance from the ideal {number_text(metric.ideal)})"
    )
