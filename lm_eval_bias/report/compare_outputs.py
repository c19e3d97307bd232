"""What ``lm-eval-bias compare`` writes: a terminal table, Markdown, strict JSON and an HTML page.

Every output shows, per task, the documents each run had and how many were matched, the
generation settings that differ between the runs, then per metric (the headline first, then its
subgroups): the baseline's and the candidate's value, the paired difference (candidate minus
baseline) with its 95% interval, the worsening (how much further from the metric's ideal value the
candidate is) with its interval, a verdict in words (:mod:`lm_eval_bias.report.verdicts`), the
p-value of the paired test and its Benjamini-Hochberg adjustment across all of the task's
non-headline metrics, the matched documents it rests on (n), the unit the test treats as
independent with its design effect, and the test's name. Nothing is said by colour alone: every
coloured point of a figure has its verdict written beside it, and a row without an interval has no
colour and says why.

The HTML page is in the report's style and as safe: one file, inline CSS and SVG, no script, a
Content-Security-Policy that forbids every fetch, every text escaped
(:mod:`lm_eval_bias.report.outputs`). Each task gets a forest plot
(:mod:`lm_eval_bias.report.forest_plot`): one row per metric, the difference as a point with its
interval, a dashed line at zero, and the side on which the candidate is further from the metric's
ideal value and the verdict named on each row. The numbers' text is
:mod:`lm_eval_bias.report.compare_text`'s, the tables :mod:`lm_eval_bias.report.tables`'.
"""

from __future__ import annotations

import textwrap

from lm_eval_bias.report import tables
from lm_eval_bias.report.compare import Comparison, TaskComparison
from lm_eval_bias.report.compare_text import (
    BH_FAMILY,
    difference_cell,
    documents_text,
    number_text,
    pvalue_text,
    task_heading,
    unit_text,
    worsening_cell,
)
from lm_eval_bias.report.forest_plot import forest_caption, forest_plot
from lm_eval_bias.report.outputs import (
    CONTENT_SECURITY_POLICY,
    STYLE,
    html_text,
    markdown_cell,
    strict_json,
    text_line,
)
from lm_eval_bias.report.paired_metrics import MetricComparison
from lm_eval_bias.report.verdicts import verdict_text

# Each column of a task's table, with its alignment: words left, numbers right.
COLUMNS = (
    ("metric", tables.LEFT),
    ("baseline", tables.RIGHT),
    ("candidate", tables.RIGHT),
    ("difference [95% CI]", tables.RIGHT),
    ("worsening [95% CI]", tables.RIGHT),
    ("verdict", tables.LEFT),
    ("p", tables.RIGHT),
    ("p BH", tables.RIGHT),
    ("n", tables.RIGHT),
    ("independent unit", tables.LEFT),
    ("test", tables.LEFT),
)
HEADER = tuple(name for name, _ in COLUMNS)
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


def _metrics_table(task: TaskComparison) -> tables.Table:
    """A task's metrics as the table every output shows (:data:`HEADER`, a row per metric).

    Parameters
    ----------
    task : TaskComparison
        The task.

    Returns
    -------
    Table
        The table, its columns of words left-aligned and those of numbers right-aligned.
    """
    return tables.Table(HEADER, [metric_row(metric) for metric in task.metrics], [align for _, align in COLUMNS])


def _notes(task: TaskComparison) -> list[str]:
    """``metric: note`` for each metric that has one."""
    return [f"{metric.metric}: {metric.note}" for metric in task.metrics if metric.note]


# --------------------------------------------------------------------------
# Terminal table and Markdown


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
        lines.append(tables.to_text(_metrics_table(task), indent="  "))
        lines += [text_line(f"  note: {note}") for note in _notes(task)]
    if comparison.skipped:
        lines += ["", "skipped (in one run only):"]
        lines += [text_line(f"  {skipped}") for skipped in comparison.skipped]
    return "\n".join(lines) + "\n"


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
        lines.append(tables.to_markdown(_metrics_table(task)))
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
# HTML


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
        parts.append(tables.to_html(_metrics_table(task)))
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
