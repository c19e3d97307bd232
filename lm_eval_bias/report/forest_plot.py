"""A task's paired differences as a forest plot (inline SVG): a row per metric, the difference as a point
with its 95% interval, a dashed line at 0, the side on which the candidate is further from the metric's
ideal value and the verdict (:mod:`lm_eval_bias.report.verdicts`) written on each row, the point coloured
by it.
"""

from __future__ import annotations

from lm_eval_bias.report import svg
from lm_eval_bias.report.compare import TaskComparison
from lm_eval_bias.report.compare_text import (
    BH_FAMILY,
    describe_metric,
    has_interval,
    is_finite_number,
    number_text,
    unit_text,
    worsening_text,
)
from lm_eval_bias.report.outputs import html_text
from lm_eval_bias.report.paired_metrics import MetricComparison
from lm_eval_bias.report.verdicts import short_verdict_text, verdict, verdict_text, worse_side

# Colours of a forest plot's points, by what the paired interval of the worsening says (Okabe-Ito).
WORSE_COLOUR = "#D55E00"
BETTER_COLOUR = "#009E73"
UNCLEAR_COLOUR = "#0072B2"
CROSSED_COLOUR = "#CC79A7"

_VERDICT_COLOURS = {
    "worse": WORSE_COLOUR,
    "better": BETTER_COLOUR,
    "no clear change": UNCLEAR_COLOUR,
    "crossed": CROSSED_COLOUR,
    "too few": svg.MISSING_COLOUR,
    "not computable": svg.MISSING_COLOUR,
    "no ideal": svg.MISSING_COLOUR,
}
_VERDICT_LABELS = {
    "worse": "worse: further from the ideal (interval of the worsening above 0)",
    "better": "better: closer to the ideal (interval below 0)",
    "no clear change": "no clear change (interval holds 0)",
    "crossed": "crossed the ideal: a clear change to its other side",
    "too few": "too few documents or clusters for an interval",
    "not computable": "no interval (see the notes)",
    "no ideal": "no ideal value declared",
}


def row_label(metric: MetricComparison) -> str:
    """A forest plot row's label with the documents it rests on: ``gay (n = 40)``, or
    ``overall (bias_score) (n = 90)`` for the headline metric."""
    name = metric.subgroup if metric.subgroup is not None else f"overall ({metric.metric})"
    return f"{name} (n = {metric.n:,})"


def forest_plot(task: TaskComparison, width: float = 860) -> str:
    """One task's differences as a forest plot: a row per metric (the headline first), the difference
    as a point with its 95% interval, a dashed line at 0 (no change), and on each row the side on
    which the candidate is further from the metric's ideal value.

    Parameters
    ----------
    task : TaskComparison
        The task.
    width : float
        The figure's width in pixels.

    Returns
    -------
    str
        One ``<svg>`` element; a point's colour says what the interval of its worsening shows.
    """
    metrics = task.metrics
    ends = [v for m in metrics for v in (m.difference, m.ci_lower, m.ci_upper) if is_finite_number(v)]
    low, high = svg.auto_range(ends, include=(0.0,))
    labels = [row_label(m) for m in metrics]
    left = min(max((svg.text_width(label) for label in labels), default=0.0) + 20, width * 0.35)
    right = width - 340  # room for the worse side and the verdict of each row
    row_height = 26
    pieces = [svg.text(12, 22, f"{task.task}: candidate − baseline", weight="bold", size=13)]
    shown = {verdict(m) for m in metrics if is_finite_number(m.difference)}
    items = [(_VERDICT_LABELS[kind], _VERDICT_COLOURS[kind]) for kind in _VERDICT_LABELS if kind in shown]
    legend_pieces, legend_height = svg.legend(items, 12, 32, width - 24)
    pieces += legend_pieces
    top = 32 + legend_height + 26
    bottom = top + row_height * len(metrics)

    def at(value: float) -> float:
        return left + (min(max(value, low), high) - low) / (high - low) * (right - left)

    for tick in svg.ticks(low, high):
        pieces.append(svg.line(at(tick), top, at(tick), bottom, svg.GRID_COLOUR))
        pieces.append(
            svg.text(at(tick), bottom + 16, svg.format_number(tick), anchor="middle", size=svg.SMALL_FONT_SIZE)
        )
    pieces.append(svg.line(left, bottom, right, bottom))
    pieces.append(svg.reference_line(at(0.0), top - 12, at(0.0), bottom, svg.AXIS_COLOUR))
    pieces.append(svg.text(at(0.0), top - 15, "0: no change", anchor="middle", size=svg.SMALL_FONT_SIZE))
    axis_title = "difference in the metric's units, candidate − baseline"
    pieces.append(svg.text((left + right) / 2, bottom + 36, axis_title, anchor="middle"))
    for index, (metric, label) in enumerate(zip(metrics, labels)):
        centre = top + row_height * index + row_height / 2
        pieces.append(svg.text(left - 8, centre + 4, label, anchor="end"))
        pieces.append(_forest_row(metric, centre, at, right))
    return svg.document(width, bottom + 48, pieces, f"{task.task}: differences, candidate minus baseline")


def _forest_row(metric: MetricComparison, centre: float, at, right: float) -> str:
    """One row's point and interval, with a tooltip of its numbers, the side on which the candidate would
    be worse and the verdict in words; ``N/A`` where there is no difference. A row without an interval
    is grey, with why in place of its verdict."""
    worsening = worsening_text(metric)
    parts = (describe_metric(metric), worsening, f"unit: {unit_text(metric)}", f"verdict: {verdict_text(metric)}")
    described = "; ".join(part for part in parts if part)
    tooltip = f"<title>{html_text(described)}</title>"
    words = svg.text(right + 10, centre + 4, worse_side(metric), size=svg.SMALL_FONT_SIZE) + svg.text(
        right + 100, centre + 4, short_verdict_text(metric), size=svg.SMALL_FONT_SIZE
    )
    if not is_finite_number(metric.difference):
        mark = svg.text(at(0.0) + 6, centre + 4, "N/A", size=svg.SMALL_FONT_SIZE, colour=svg.MISSING_COLOUR)
        return f'<g class="na">{tooltip}{mark}{words}</g>'
    colour = _VERDICT_COLOURS[verdict(metric)]
    whisker = ""
    if has_interval(metric):
        lo, hi = at(metric.ci_lower), at(metric.ci_upper)
        whisker = (
            svg.line(lo, centre, hi, centre, colour, 2)
            + svg.line(lo, centre - 5, lo, centre + 5, colour, 2)
            + svg.line(hi, centre - 5, hi, centre + 5, colour, 2)
        )
    point = f'<circle cx="{at(metric.difference):.1f}" cy="{centre:.1f}" r="4.5" fill="{colour}"/>'
    return f'<g class="difference">{tooltip}{whisker}{point}{words}</g>'


def forest_caption(task: TaskComparison) -> str:
    """What a task's forest plot shows, and the ideal values its worse sides are measured from."""
    ideals = sorted({number_text(m.ideal) for m in task.metrics if m.ideal is not None})
    ideal = (
        f"the metric's ideal value ({', '.join(ideals)}, from the task's metadata)"
        if ideals
        else "the metric's ideal value (this task declares none)"
    )
    return (
        f"Each row is one metric of {task.task} on the {task.n_matched} matched documents: the paired difference "
        "(candidate minus baseline) as a point, its 95% interval as a whisker; the dashed line is 0, no change. "
        f'"worse" names the side on which the candidate would be further than the baseline from {ideal}; '
        "the verdict beside it, and the point's colour, say what the paired 95% interval of that worsening "
        "shows (not adjusted for multiplicity: p BH in the table is "
        f"{BH_FAMILY}). n is the matched documents each row rests on; a row without an interval is grey and "
        "says why."
    )
