"""What ``lm-eval-bias compare`` writes: a terminal table, Markdown, strict JSON and an HTML page.

Every output shows, per task, the documents each run had and how many were matched, the
generation settings that differ between the runs, then per metric (the headline first, then its
subgroups): the baseline's and the candidate's value, the paired difference (candidate minus
baseline) with its 95% interval, the worsening (how much further from the metric's ideal value the
candidate is) with its interval, a verdict in words (:func:`verdict_text`), the p-value of the
paired test and its Benjamini-Hochberg adjustment across all of the task's non-headline metrics,
the matched documents it rests on (n), the unit the test treats as independent with its design
effect, and the test's name. Nothing is said by colour alone: every coloured point of a figure
has its verdict written beside it, and a row without an interval has no colour and says why.

The HTML page is in the report's style and as safe: one file, inline CSS and SVG, no script, a
Content-Security-Policy that forbids every fetch, every text escaped
(:mod:`lm_eval_bias.report.outputs`). Each task gets a forest plot: one row per metric, the
difference as a point with its interval, a dashed line at zero, and the side on which the
candidate is further from the metric's ideal value and the verdict named on each row.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence

from lm_eval_bias.report import svg
from lm_eval_bias.report.compare import Comparison, MetricComparison, TaskComparison
from lm_eval_bias.report.outputs import (
    CONTENT_SECURITY_POLICY,
    STYLE,
    html_text,
    markdown_cell,
    strict_json,
    text_line,
)

HEADER = (
    "metric",
    "baseline",
    "candidate",
    "difference [95% CI]",
    "worsening [95% CI]",
    "verdict",
    "p",
    "p BH",
    "n",
    "independent unit",
    "test",
)
# The columns of words, left-aligned (the others hold numbers).
TEXT_COLUMNS = frozenset({0, 5, 9, 10})
BH_FAMILY = (
    "Benjamini-Hochberg adjusted across all of the task's non-headline metrics (per-subgroup values, gaps, "
    "ranges, cells)"
)
READING_NOTE = (
    "Differences are candidate minus baseline, in the metric's units, with paired 95% intervals. "
    "worsening: how much further from the metric's ideal value the candidate is than the baseline, in the "
    "metric's units, with its paired 95% interval. verdict: worse or better where that interval lies wholly "
    'above or below 0, "no clear change" where it holds 0, "crossed the ideal" where the candidate lies on '
    "the other side of the ideal value after a change whose interval excludes 0, and why where there is no "
    f"interval. p: the paired test's two-sided p-value; p BH: {BH_FAMILY}; the headline metric keeps its p. "
    "n: the matched documents a metric rests on; independent unit: what the paired test treats as "
    "independent, with its design effect where documents of one unit are correlated. "
    '"N/A" marks a number that could not be computed.'
)
# Colours of a forest plot's points, by what the paired interval of the worsening says (Okabe-Ito).
WORSE_COLOUR = "#D55E00"
BETTER_COLOUR = "#009E73"
UNCLEAR_COLOUR = "#0072B2"
CROSSED_COLOUR = "#CC79A7"
# The note a comparison's statistics give where the documents or clusters cannot support an interval.
_TOO_FEW = re.compile(r"too few (?:documents \(n = [\d,]+\)|clusters \(G = [\d,]+\))")


# --------------------------------------------------------------------------
# Numbers as text


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number_text(value) -> str:
    """A value as the outputs show it: 4 significant digits, ``N/A`` for what is not a finite number."""
    return svg.format_number(value + 0.0) if _finite(value) else "N/A"  # -0.0 reads as 0


def signed_text(value) -> str:
    """A difference with its sign (``+6``, ``-0.5``, ``0``), ``N/A`` for what is not a finite number."""
    if not _finite(value):
        return "N/A"
    value = value + 0.0  # -0.0 (a swapped zero difference) reads as 0
    return "0" if value == 0 else f"{value:+.4g}"


def interval_text(lower, upper) -> str:
    """``[lower, upper]``, or ``N/A`` when either end is not a finite number."""
    if not (_finite(lower) and _finite(upper)):
        return "N/A"
    return f"[{number_text(lower)}, {number_text(upper)}]"


def pvalue_text(value) -> str:
    """A p-value to 3 significant digits, ``N/A`` for what is not a finite number."""
    return f"{value:.3g}" if _finite(value) else "N/A"


def difference_text(metric: MetricComparison) -> str:
    """``+6 [4.125, 7.875]``: the difference with its interval; ``N/A`` without a difference."""
    if not _finite(metric.difference):
        return "N/A"
    return f"{signed_text(metric.difference)} {interval_text(metric.ci_lower, metric.ci_upper)}"


def has_interval(metric: MetricComparison) -> bool:
    """Whether the paired difference has both ends of its 95% interval."""
    return _finite(metric.ci_lower) and _finite(metric.ci_upper)


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
    return f"{signed_text(value)}, {reason}" if _finite(value) else reason


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
    return f"{unit} (design effect {number_text(design_effect)})" if _finite(design_effect) else unit


def metric_row(metric: MetricComparison) -> list[str]:
    """One metric's cells, in the order of :data:`HEADER`.

    Parameters
    ----------
    metric : MetricComparison
        The metric.

    Returns
    -------
    list of str
        metric, baseline, candidate, difference with its interval, worsening with its interval, verdict,
        p, p BH, n, independent unit (with its design effect), test.
    """
    return [
        metric.metric,
        number_text(metric.baseline),
        number_text(metric.candidate),
        difference_cell(metric),
        worsening_cell(metric),
        verdict_text(metric),
        pvalue_text(metric.pvalue),
        pvalue_text(metric.pvalue_bh),
        str(metric.n),
        unit_text(metric),
        metric.test,
    ]


def documents_text(task: TaskComparison) -> str:
    """``documents: baseline 100, candidate 90, matched 90``."""
    return f"documents: baseline {task.n_baseline}, candidate {task.n_candidate}, matched {task.n_matched}"


def task_heading(task: TaskComparison) -> str:
    """``winoqueer (version 1.0)``."""
    return f"{task.task} (version {task.version})"


def _notes(task: TaskComparison) -> list[str]:
    """``metric: note`` for each metric that has one."""
    return [f"{metric.metric}: {metric.note}" for metric in task.metrics if metric.note]


# --------------------------------------------------------------------------
# Terminal table and Markdown


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as fixed-width lines: names (the first and last column) left-aligned, numbers right-aligned."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(width) if column in TEXT_COLUMNS else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]


def to_text(comparison: Comparison) -> str:
    """The comparison as ``lm-eval-bias compare`` prints it.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.

    Returns
    -------
    str
        The runs, then per task its documents, the settings that differ and a table of its metrics,
        then the tasks skipped; every text from the runs on its own line (:func:`text_line`).
    """
    lines = [
        "lm-eval-bias compare",
        text_line(f"baseline:  {comparison.baseline} ({comparison.baseline_path})"),
        text_line(f"candidate: {comparison.candidate} ({comparison.candidate_path})"),
        *textwrap.wrap(READING_NOTE, 100),
    ]
    for task in comparison.tasks:
        lines += ["", text_line(f"{task_heading(task)}: {documents_text(task)}")]
        lines += [text_line(f"  setting differs: {difference}") for difference in task.setting_differences]
        rows = [list(HEADER)] + [[text_line(cell) for cell in metric_row(m)] for m in task.metrics]
        lines += ["  " + line for line in _aligned(rows)]
        lines += [text_line(f"  note: {note}") for note in _notes(task)]
    if comparison.skipped:
        lines += ["", "skipped (in one run only):"]
        lines += [text_line(f"  {skipped}") for skipped in comparison.skipped]
    return "\n".join(lines) + "\n"


def _markdown_table(rows: Sequence[Sequence[str]]) -> list[str]:
    rule = "|" + "".join("---|" if column in TEXT_COLUMNS else "---:|" for column in range(len(HEADER)))
    lines = ["| " + " | ".join(map(markdown_cell, HEADER)) + " |", rule]
    return lines + ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]


def to_markdown(comparison: Comparison, title: str = "lm-eval-bias comparison") -> str:
    """The comparison as Markdown: the same tables as :func:`to_text`, every text escaped.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.
    title : str
        The heading.

    Returns
    -------
    str
        The Markdown.
    """
    return f"# {markdown_cell(title)}\n\n" + markdown_body(comparison)


def markdown_body(comparison: Comparison, level: int = 2) -> str:
    """The runs compared, the reading note, a part per task and the tasks skipped, as Markdown.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.
    level : int
        The heading level of each task's part (2: ``##``).

    Returns
    -------
    str
        Markdown to follow a heading (this document's, or the report's paired section).
    """
    heading = "#" * level
    lines = [
        f"- baseline: {markdown_cell(comparison.baseline)} ({markdown_cell(comparison.baseline_path)})",
        f"- candidate: {markdown_cell(comparison.candidate)} ({markdown_cell(comparison.candidate_path)})",
        "",
        READING_NOTE,
    ]
    for task in comparison.tasks:
        lines += ["", f"{heading} {markdown_cell(task_heading(task))}", "", f"{documents_text(task).capitalize()}.", ""]
        if task.setting_differences:
            lines += ["Settings that differ:", ""]
            lines += [f"- {markdown_cell(difference)}" for difference in task.setting_differences]
            lines.append("")
        lines += _markdown_table([metric_row(metric) for metric in task.metrics])
        if _notes(task):
            lines += ["", "Notes:", ""] + [f"- {markdown_cell(note)}" for note in _notes(task)]
    if comparison.skipped:
        lines += ["", f"{heading} Skipped (in one run only)", ""]
        lines += [f"- {markdown_cell(skipped)}" for skipped in comparison.skipped]
    return "\n".join(lines) + "\n"


def to_json(comparison: Comparison) -> str:
    """The comparison as strict JSON (:func:`lm_eval_bias.report.compare.comparison_json`), indented.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.

    Returns
    -------
    str
        The JSON text, ending with a line break; never a bare NaN.
    """
    from lm_eval_bias.report.compare import comparison_json

    return strict_json(comparison_json(comparison), indent=2) + "\n"


# --------------------------------------------------------------------------
# Forest plot


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
    if metric.ideal is None or not _finite(metric.baseline):
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
    if metric.ideal is None or not (_finite(metric.baseline) and _finite(metric.candidate) and has_interval(metric)):
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
    if _finite(lower) and lower > 0:
        return "worse"
    if _finite(upper) and upper < 0:
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


def _plot_verdict(metric: MetricComparison) -> str:
    """The verdict as a forest plot's row says it: the table's, with a change across the ideal shortened
    (``crossed the ideal, closer (p = 0.0001)``: closer or further where the worsening's interval says so)."""
    if not crossed_ideal(metric):
        return verdict_text(metric)
    side = {"worse": ", further", "better": ", closer"}.get(verdict(metric), "")
    return f"crossed the ideal{side} (p = {pvalue_text(metric.pvalue)})"


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
    ends = [v for m in metrics for v in (m.difference, m.ci_lower, m.ci_upper) if _finite(v)]
    low, high = svg.auto_range(ends, include=(0.0,))
    labels = [row_label(m) for m in metrics]
    left = min(max((svg.text_width(label) for label in labels), default=0.0) + 20, width * 0.35)
    right = width - 340  # room for the worse side and the verdict of each row
    row_height = 26
    pieces = [svg.text(12, 22, f"{task.task}: candidate − baseline", weight="bold", size=13)]
    shown = {verdict(m) for m in metrics if _finite(m.difference)}
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
        right + 100, centre + 4, _plot_verdict(metric), size=svg.SMALL_FONT_SIZE
    )
    if not _finite(metric.difference):
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


# --------------------------------------------------------------------------
# HTML


def _html_table(rows: Sequence[Sequence[str]]) -> str:
    """The metrics' table: the columns of words left-aligned, numbers right-aligned."""
    names = [column in TEXT_COLUMNS for column in range(len(HEADER))]
    head = "".join(f"<th{' class=name' if n else ''}>{html_text(h)}</th>" for h, n in zip(HEADER, names))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=name' if n else ''}>{html_text(c)}</td>" for c, n in zip(row, names)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_section(task: TaskComparison, level: int = 2) -> str:
    """One task's part of the page: documents, settings that differ, forest plot, table and notes.

    Parameters
    ----------
    task : TaskComparison
        The task.
    level : int
        Its heading's level (2: ``<h2>``).

    Returns
    -------
    str
        A ``<section>`` element, every text escaped.
    """
    parts = [
        f'<section id="compare-{html_text(task.task)}"><h{level}>{html_text(task_heading(task))}</h{level}>',
        f"<p>{html_text(documents_text(task).capitalize())}.</p>",
    ]
    if task.setting_differences:
        parts.append(
            '<p class="partial">Settings that differ between the runs:</p><ul>'
            + "".join(f"<li>{html_text(difference)}</li>" for difference in task.setting_differences)
            + "</ul>"
        )
    if task.metrics:
        parts.append(f"<figure>{forest_plot(task)}<figcaption>{html_text(forest_caption(task))}</figcaption></figure>")
        parts.append(_html_table([metric_row(metric) for metric in task.metrics]))
    else:
        parts.append('<p class="note">No metric to compare.</p>')
    if _notes(task):
        parts.append('<ul class="note">' + "".join(f"<li>{html_text(note)}</li>" for note in _notes(task)) + "</ul>")
    parts.append("</section>")
    return "".join(parts)


def html_body(comparison: Comparison, level: int = 2) -> str:
    """The runs compared, the reading note, one section per task and the tasks skipped, as HTML.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.
    level : int
        The level of each task's heading (2: ``<h2>``).

    Returns
    -------
    str
        HTML to place inside a page's ``<body>`` (this page's, or the report's paired section).
    """
    parts = [
        '<table class="runs"><thead><tr><th class=name>run</th><th class=name>model</th><th class=name>results</th>'
        "</tr></thead><tbody>"
        + "".join(
            f"<tr><td>{side}</td><td>{html_text(model)}</td><td>{html_text(path)}</td></tr>"
            for side, model, path in (
                ("baseline", comparison.baseline, comparison.baseline_path),
                ("candidate", comparison.candidate, comparison.candidate_path),
            )
        )
        + "</tbody></table>",
        f"<p>{html_text(READING_NOTE)} Hover over a point for its numbers.</p>",
    ]
    parts += [html_section(task, level) for task in comparison.tasks]
    if comparison.skipped:
        parts.append(
            f"<h{level}>Skipped (in one run only)</h{level}><ul>"
            + "".join(f"<li>{html_text(skipped)}</li>" for skipped in comparison.skipped)
            + "</ul>"
        )
    return "".join(parts)


def to_html(comparison: Comparison, title: str = "lm-eval-bias comparison") -> str:
    """The comparison as one self-contained HTML page in the report's style.

    Parameters
    ----------
    comparison : Comparison
        As :func:`lm_eval_bias.report.compare.compare_runs` returns it.
    title : str
        The heading.

    Returns
    -------
    str
        The page: inline CSS and SVG, no script, nothing fetched (:data:`CONTENT_SECURITY_POLICY`).
    """

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html_text(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html_text(title)}</h1>{html_body(comparison)}</body></html>\n"
    )
