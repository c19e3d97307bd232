"""``lm-eval-bias report``: one self-contained HTML page (and a Markdown twin) per set of runs.

For each task in the results files: a short description, the figure its paper
uses (drawn as inline SVG by :mod:`lm_eval_bias.report.figures`) with a caption
saying what the reference line and the ideal value mean, a table of the
plotted numbers, and every other metric in a second table. The benchmark and
figure of a task are the ones its YAML metadata declares (copied by lm-eval into
the results file); the per-benchmark sections are drawn by
:mod:`lm_eval_bias.report.sections`. A task that declares none gets the table
only. Where the paper published a value for the run's model (e.g. WinoQueer's
Table 5 for gpt2), the tables have a "paper" column beside ours.

How several runs share a figure: where a figure has one dimension (subgroups
of WinoQueer, GenderPair, TANGO disclosure, community probes) each run is one
colour of a grouped bar chart, with a legend, so that models are compared
subgroup by subgroup. Where a figure already uses colour or both axes for the
benchmark's own dimensions (TANGO's pronoun family x antecedent type, the SCM
warmth-competence plane), each run gets its own figure.

Every number shows its base: the tables have an N column (the documents a
number rests on, and the generations where a document has several), and each
section says, per run, how many documents were evaluated and whether the run is
partial (``--limit``, a non-official data file, a subgroup selection) and why;
figure captions repeat the partial runs.

The page has no script and loads nothing: a Content-Security-Policy forbids
every fetch, so a mistake would show as a browser console error (which the
tests check for) rather than a silent network request. Every text taken from
the results files is escaped, in HTML and in Markdown, and characters that
cannot be seen are shown as escapes (:func:`lm_eval_bias.report.outputs.html_text`,
:func:`~lm_eval_bias.report.outputs.markdown_cell`).

Given the paired comparison of two of its runs (``lm-eval-bias report BASELINE CANDIDATE
--compare``), the report ends with a paired section: per task, the differences document by document
as a forest plot and a table (:mod:`lm_eval_bias.report.compare_outputs`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from lm_eval_bias.benchmarks import records
from lm_eval_bias.report import figures, tables
from lm_eval_bias.report.outputs import CONTENT_SECURITY_POLICY, STYLE, html_text, markdown_cell
from lm_eval_bias.report.results import require_task_results
from lm_eval_bias.report.run import Run, date_text
from lm_eval_bias.report.sections import Entry, Section, draw
from lm_eval_bias.task_metadata import TaskIdentity

READING_NOTE = (
    'Intervals are 95%. "N/A" marks a metric the run could not compute. "no interval" marks a number '
    "whose documents are too few for an interval that holds its 95% level, or do not vary (the run's "
    "log says which); no interval is drawn for it. p-value: the task's test of the number, which the "
    "interval beside it agrees with (it excludes the ideal exactly when p < 0.05); p BH: that p-value "
    "Benjamini-Hochberg adjusted across the task's subgroups. "
    "N: the documents a number rests on (with the generations behind it where a document has several); "
    '"task total" marks an older results file without per-metric counts, where N is the task\'s '
    "evaluated documents, of which a subgroup's number uses only its own. A partial run (--limit, a "
    "non-official data file, a subgroup selection) is marked in its task's section with the reason."
)
PAIRED_TITLE = "Paired comparison: candidate against baseline, document by document"


# --------------------------------------------------------------------------
# Runs, labels, colours


def _run_labels(runs: Sequence[Run]) -> list[str]:
    """The model name of each run, made unique where two runs of one model share a task.

    Runs of one model on different tasks keep the plain name (and so one
    colour): they are one model's results split over files.
    """
    labels = [run.model for run in runs]
    for i, j in itertools.combinations(range(len(runs)), 2):
        if runs[i].model == runs[j].model and set(runs[i].tasks) & set(runs[j].tasks):
            for k in (i, j):
                labels[k] = f"{runs[k].model} ({runs[k].path.name})"
    # Same model and same file name in two folders: number them rather than print long paths.
    counts: dict[str, int] = {}
    for index, label in enumerate(labels):
        if labels.count(label) > 1:
            counts[label] = counts.get(label, 0) + 1
            labels[index] = f"{label} #{counts[label]}"
    return labels


def _label_colours(labels: Sequence[str]) -> dict[str, str]:
    """One colour per label, in order of first appearance (the palette repeats after 8)."""
    colours: dict[str, str] = {}
    for label in labels:
        if label not in colours:
            colours[label] = figures.PALETTE[len(colours) % len(figures.PALETTE)]
    return colours


# --------------------------------------------------------------------------
# Building the report


def _task_identity(runs: Sequence[Run], task: str) -> TaskIdentity | None:
    """What a task is, from the first run whose results file says (its YAML metadata)."""
    return next((run.identity(task) for run in runs if run.identity(task) is not None), None)


def build_sections(runs: Sequence[Run]) -> list[Section]:
    """One section per task found in any run, known benchmarks first (in the order of tasks/README.md).

    A task's section and figure follow the ``benchmark`` and ``figure`` of its metadata, so a
    renamed copy of one of our tasks is drawn as the original is.

    Parameters
    ----------
    runs : sequence of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.

    Returns
    -------
    list of Section
        The sections, each with its runs' entries and its figures drawn.

    Raises
    ------
    ResultsError
        When no run holds a task's results.
    """
    require_task_results(list(runs))
    labels = _run_labels(runs)
    colours = _label_colours(labels)
    identities = {task: _task_identity(runs, task) for run in runs for task in run.tasks}
    order = list(records())

    def position(task: str) -> tuple[int, str]:
        found = identities[task]
        return (order.index(found.benchmark) if found is not None else len(order)), task

    sections = []
    for task in sorted(identities, key=position):
        found = identities[task]
        entries = [
            Entry(label, colours[label], run.tasks[task], run.base(task), run.paper_row(task))
            for run, label in zip(runs, labels)
            if task in run.tasks
        ]
        if found is None:
            sections.append(Section(task, task, "No figure for this task: every metric with its interval.", entries))
            continue
        record = records()[found.benchmark]
        section = Section(
            task,
            f"{record.title}: {task}",
            record.about,
            entries,
            figure=found.figure,
            headline=found.headline_metric,
            paper_source=found.paper_source,
            unit_note=_unit_note(found),
        )
        draw(section)
        sections.append(section)
    return sections


def _unit_note(identity: TaskIdentity) -> str:
    """What a task's documents were built from, for a section; ``""`` where each is its own unit."""
    if not identity.cluster_fields:
        return ""
    unit = identity.cluster_unit
    return (
        f"Documents of one {unit} are built alike, so their outcomes move together: every interval and p-value "
        f"here treats each {unit} as one unit, and the design effect is the variance of a mean over what it "
        "would be with independent documents (1: no more; 2: as if half the documents)."
    )


def _format_value(value) -> str:
    return figures.format_number(value) if isinstance(value, float) else str(value)


def _paper_value(entry: Entry, name: str) -> float | None:
    """The paper's published value of a metric for the entry's model, where the paper has one."""
    return entry.paper.values.get(name) if entry.paper is not None else None


def table_rows(section: Section, names: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: metric, (model,) value, 95% CI, stderr, N, design effect and p-value (each only when
    some metric has one),
    paper (only when the paper published a value of one of them for one of the models).

    Rows are metric-major, so models sit next to each other on each metric.

    Parameters
    ----------
    section : Section
        The task's section.
    names : sequence of str
        The metrics, in order.

    Returns
    -------
    (list of str, list of list of str)
        The header and the rows.
    """
    several = len(section.entries) > 1
    metrics = [
        (name, entry, entry.metrics[name]) for name in names for entry in section.entries if name in entry.metrics
    ]
    with_p = any(m.pvalue is not None for _, _, m in metrics)
    with_bh = any(m.pvalue_bh is not None for _, _, m in metrics)
    with_effect = any(m.design_effect is not None for _, _, m in metrics)
    with_paper = any(_paper_value(entry, name) is not None for name, entry, _ in metrics)
    header = ["metric"] + (["model"] if several else []) + ["value", "95% CI", "stderr", "N"]
    header += ["design effect"] if with_effect else []
    header += ["p-value"] if with_p else []
    header += ["p BH"] if with_bh else []
    header += ["paper"] if with_paper else []
    rows = []
    for name, entry, metric in metrics:
        if metric.ci_lower is not None and metric.ci_upper is not None:
            interval = f"[{figures.format_number(metric.ci_lower)}, {figures.format_number(metric.ci_upper)}]"
        else:
            interval = f"no interval (N = {metric.base})" if metric.interval_not_available else ""
        row = (
            [name]
            + ([entry.label] if several else [])
            + [
                _format_value(metric.value),
                interval,
                f"{metric.stderr:.2g}" if metric.stderr is not None else "",
                metric.base,
            ]
        )
        if with_effect:
            row.append(f"{metric.design_effect:.2f}" if metric.design_effect is not None else "")
        if with_p:
            row.append(f"{metric.pvalue:.3g}" if metric.pvalue is not None else "")
        if with_bh:
            row.append(f"{metric.pvalue_bh:.3g}" if metric.pvalue_bh is not None else "")
        if with_paper:
            published = _paper_value(entry, name)
            row.append(_format_value(published) if published is not None else "")
        rows.append(row)
    return header, rows


def _other_metrics(section: Section) -> list[str]:
    """Every metric not already in the plotted table: the headline first, then by name."""
    shown = set(section.plotted)
    names = {name for entry in section.entries for name in entry.metrics} - shown
    headline = section.headline
    return sorted(names, key=lambda n: (n != headline, n))


def _run_rows(runs: Sequence[Run]) -> list[tuple[str, str, str, str, str]]:
    """(label, colour, file, date, tasks) per run; a partial task is marked "(partial)"."""
    labels = _run_labels(runs)
    colours = _label_colours(labels)
    rows = []
    for run, label in zip(runs, labels):
        tasks = ", ".join(task + (" (partial)" if run.base(task).is_partial else "") for task in sorted(run.tasks))
        rows.append((label, colours[label], str(run.path), date_text(run.date), tasks))
    return rows


def _base_lines(section: Section) -> list[tuple[str, str]]:
    """Per run of the section: (label, "complete, 242 pairs") or (label, the reasons it is partial)."""
    return [
        (entry.label, "; ".join(entry.base.partial) if entry.base.is_partial else entry.base.status)
        for entry in section.entries
    ]


def _paper_lines(section: Section) -> list[tuple[str, str]]:
    """Per run whose model the paper reports: (label, "Felkner et al., ACL 2023, Table 5, row gpt2")."""
    return [
        (entry.label, f"{section.paper_source}, row {entry.paper.model}")
        for entry in section.entries
        if entry.paper is not None
    ]


def _partial_note(section: Section) -> str:
    """A sentence for figure captions naming the section's partial runs, or ``""``."""
    partial = [f"{entry.label} ({'; '.join(entry.base.partial)})" for entry in section.entries if entry.base.is_partial]
    return f" Partial run{'s' if len(partial) > 1 else ''}: {', '.join(partial)}." if partial else ""


# --------------------------------------------------------------------------
# HTML


def _report_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> tables.Table:
    """A report table: its name columns (metric, model) left-aligned, the others as each format aligns
    them (right in HTML, unmarked in Markdown)."""
    align = [tables.LEFT if name in ("metric", "model") else tables.UNSTATED for name in header]
    return tables.Table(header, rows, align)


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A report table in HTML, or a note that it has no metrics."""
    if not rows:
        return '<p class="note">No metrics.</p>'
    return tables.to_html(_report_table(header, rows))


def _html_section(section: Section) -> str:
    parts = [
        f'<section id="{section.anchor}"><h2>{html_text(section.title)}</h2>',
        f"<p>{html_text(section.about)}</p>",
    ]
    parts.append(
        '<ul class="base">'
        + "".join(
            f"<li>{html_text(label)}: <span class=partial>partial</span>: {html_text(text)}</li>"
            if entry.base.is_partial
            else f"<li>{html_text(label)}: {html_text(text)}</li>"
            for entry, (label, text) in zip(section.entries, _base_lines(section))
        )
        + "</ul>"
    )
    for label, source in _paper_lines(section):
        parts.append(
            f"<p>{html_text(label)}: the paper reports this model ({html_text(source)}); its "
            "published values are in the tables' paper column.</p>"
        )
    for note in (section.unit_note, section.note):
        if note:
            parts.append(f'<p class="note">{html_text(note)}</p>')
    for figure in section.figures:
        caption = figure.caption + _partial_note(section)
        parts.append(f"<figure>{figure.svg}<figcaption>{html_text(caption)}</figcaption></figure>")
    if section.plotted:
        parts.append("<h3>Plotted values</h3>" + _html_table(*table_rows(section, section.plotted)))
        others = _other_metrics(section)
        if others:
            parts.append(
                f"<details><summary>All other metrics ({len(others)})</summary>"
                + _html_table(*table_rows(section, others))
                + "</details>"
            )
    else:
        parts.append(_html_table(*table_rows(section, _other_metrics(section))))
    parts.append("</section>")
    return "".join(parts)


def to_html(runs: Sequence[Run], title: str = "lm-eval-bias report", comparison=None) -> str:
    """The whole report as one HTML document: inline CSS and SVG, no script, no external resource.

    Parameters
    ----------
    runs : sequence of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    title : str
        The heading.
    comparison : Comparison or None
        The paired comparison of two of the runs (:func:`lm_eval_bias.report.compare.compare_runs`),
        shown as a last section; None for none.

    Returns
    -------
    str
        The page.
    """
    sections = build_sections(runs)
    run_table = "".join(
        f'<tr><td><span class="swatch" style="background:{colour}"></span>{html_text(label)}</td>'
        f"<td>{html_text(path)}</td><td>{html_text(date)}</td><td>{html_text(tasks)}</td></tr>"
        for label, colour, path, date, tasks in _run_rows(runs)
    )
    contents = "".join(f'<li><a href="#{s.anchor}">{html_text(s.title)}</a></li>' for s in sections)
    paired = ""
    if comparison is not None:
        from lm_eval_bias.report.compare_outputs import html_body

        contents += f'<li><a href="#paired">{PAIRED_TITLE}</a></li>'
        paired = f'<section id="paired"><h2>{PAIRED_TITLE}</h2>{html_body(comparison, level=3)}</section>'
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html_text(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html_text(title)}</h1>"
        f"<p>Whiskers and crosses show the intervals; dashed lines are the reference values each caption explains. "
        f"{html_text(READING_NOTE)} Hover over a bar or point for its numbers.</p>"
        '<table class="runs"><thead><tr><th>run</th><th>results file</th><th>date</th><th>tasks</th></tr></thead>'
        f"<tbody>{run_table}</tbody></table>"
        f"<ul>{contents}</ul>" + "".join(_html_section(s) for s in sections) + paired + "</body></html>\n"
    )


# --------------------------------------------------------------------------
# Markdown


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A report table in Markdown, ending with a line break, or a note that it has no metrics."""
    if not rows:
        return "*No metrics.*\n"
    return tables.to_markdown(_report_table(header, rows)) + "\n"


def to_markdown(runs: Sequence[Run], title: str = "lm-eval-bias report", comparison=None) -> str:
    """The report's tables as Markdown; the figures are only in the HTML version.

    Parameters
    ----------
    runs : sequence of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    title : str
        The heading.
    comparison : Comparison or None
        The paired comparison of two of the runs, shown as a last section's tables; None for none.

    Returns
    -------
    str
        The Markdown.
    """
    sections = build_sections(runs)
    out = [
        f"# {markdown_cell(title)}\n\n",
        f"{READING_NOTE} Figures (with captions explaining each reference line) are in the HTML report: "
        "`lm-eval-bias report ... --html report.html`.\n\n",
        _markdown_table(
            ["run", "results file", "date", "tasks"],
            [[label, path, date, tasks] for label, _, path, date, tasks in _run_rows(runs)],
        ),
    ]
    for section in sections:
        out.append(f"\n## {markdown_cell(section.title)}\n\n{markdown_cell(section.about)}\n\n")
        out += [
            f"- {markdown_cell(label)}: {'**partial**: ' if entry.base.is_partial else ''}{markdown_cell(text)}\n"
            for entry, (label, text) in zip(section.entries, _base_lines(section))
        ]
        out += [
            f"\n{markdown_cell(label)}: the paper reports this model ({markdown_cell(source)}); its published "
            "values are in the tables' paper column.\n"
            for label, source in _paper_lines(section)
        ]
        out += [f"\n*{markdown_cell(note)}*\n" for note in (section.unit_note, section.note) if note]
        if section.plotted:
            out.append(
                f"\n### Plotted values ({len(section.figures)} figure"
                f"{'' if len(section.figures) == 1 else 's'} in the HTML report)\n\n"
                + _markdown_table(*table_rows(section, section.plotted))
            )
            others = _other_metrics(section)
            if others:
                out.append("\n### Other metrics\n\n" + _markdown_table(*table_rows(section, others)))
        else:
            out.append("\n" + _markdown_table(*table_rows(section, _other_metrics(section))))
    if comparison is not None:
        from lm_eval_bias.report.compare_outputs import markdown_body

        out.append(f"\n## {PAIRED_TITLE}\n\n" + markdown_body(comparison, level=3))
    return "".join(out)
