"""What a paired comparison says of one metric, in words: worse, better, no clear change, a change
across the metric's ideal value, or why it cannot say (too few documents, no interval, no ideal).

The verdict reads the paired 95% interval of the worsening (how much further from the ideal value the
candidate is than the baseline); every output writes it beside its numbers, so that none is said by
colour alone.
"""

from __future__ import annotations

from lm_eval_bias.report.compare_text import has_interval, is_finite_number, number_text, pvalue_text, too_few_text
from lm_eval_bias.report.paired_metrics import MetricComparison


def worse_side(metric: MetricComparison) -> str:
    """Which way of the difference axis the candidate moves further from the metric's ideal value.

    Parameters
    ----------
    metric : MetricComparison
        The metric.

    Returns
    -------
    str
        ``"worse →"`` (the baseline lies above the ideal, so a larger value is worse), ``"← worse"``
        (below it), ``"worse either way"`` (at it), or ``""`` without an ideal value or a baseline.
    """
    if metric.ideal is None or not is_finite_number(metric.baseline):
        return ""
    if metric.baseline > metric.ideal:
        return "worse →"
    if metric.baseline < metric.ideal:
        return "← worse"
    return "worse either way"


def crossed_ideal(metric: MetricComparison) -> bool:
    """Whether the candidate lies on the other side of the ideal value from the baseline after a change
    whose paired 95% interval excludes 0 (a real change, which the worsening alone can hide: 73.5 -> 35.3
    about 50 is a smaller distance, yet no longer the same bias)."""
    if metric.ideal is None or not (
        is_finite_number(metric.baseline) and is_finite_number(metric.candidate) and has_interval(metric)
    ):
        return False
    opposite = (metric.baseline - metric.ideal) * (metric.candidate - metric.ideal) < 0
    return opposite and (metric.ci_lower > 0 or metric.ci_upper < 0)


def verdict(metric: MetricComparison) -> str:
    """What the paired 95% intervals say, as the key of a colour: ``"worse"`` (the worsening's interval
    wholly above 0), ``"better"`` (wholly below 0), ``"no clear change"`` (it holds 0), ``"crossed"``
    (:func:`crossed_ideal`, its distance to the ideal not clearly changed), ``"too few"`` or ``"not
    computable"`` (no interval), ``"no ideal"`` (none declared)."""
    if not has_interval(metric) or (metric.ideal is not None and metric.worsening_ci is None):
        return "too few" if too_few_text(metric) else "not computable"
    if metric.ideal is None or metric.worsening_ci is None:
        return "no ideal"
    lower, upper = metric.worsening_ci
    if is_finite_number(lower) and lower > 0:
        return "worse"
    if is_finite_number(upper) and upper < 0:
        return "better"
    return "crossed" if crossed_ideal(metric) else "no clear change"


def verdict_text(metric: MetricComparison) -> str:
    """The verdict in words, which no colour is needed to read.

    Parameters
    ----------
    metric : MetricComparison
        The metric.

    Returns
    -------
    str
        ``worse``, ``better``, ``no clear change``, ``no ideal declared``, why there is no interval
        (``too few documents (n = 1)``, ``not computable (see note)``), or, for a change across the ideal,
        ``crossed the ideal (50): 73.5 -> 35.3, p = 0.0002; distance to the ideal 23.5 -> 14.7, no clear
        change in it`` (``grew`` or ``shrank`` where the worsening's interval says so).
    """
    kind = verdict(metric)
    if kind == "too few":
        return too_few_text(metric)
    if kind == "not computable":
        return "not computable (see note)"
    if kind == "no ideal":
        return "no ideal declared"
    if not crossed_ideal(metric):
        return kind
    distances = (
        f"{number_text(abs(metric.baseline - metric.ideal))} -> {number_text(abs(metric.candidate - metric.ideal))}"
    )
    change = {
        "worse": f"distance to the ideal grew, {distances}",
        "better": f"distance to the ideal shrank, {distances}",
    }.get(kind, f"distance to the ideal {distances}, no clear change in it")
    return (
        f"crossed the ideal ({number_text(metric.ideal)}): {number_text(metric.baseline)} -> "
        f"{number_text(metric.candidate)}, p = {pvalue_text(metric.pvalue)}; {change}"
    )


def short_verdict_text(metric: MetricComparison) -> str:
    """The verdict as a forest plot's row says it: :func:`verdict_text`, with a change across the ideal
    shortened.

    Parameters
    ----------
    metric : MetricComparison
        The metric.

    Returns
    -------
    str
        :func:`verdict_text`'s words, or for a change across the ideal ``crossed the ideal, closer
        (p = 0.0001)`` (closer or further where the worsening's interval says so).
    """
    if not crossed_ideal(metric):
        return verdict_text(metric)
    side = {"worse": ", further", "better": ", closer"}.get(verdict(metric), "")
    return f"crossed the ideal{side} (p = {pvalue_text(metric.pvalue)})"
