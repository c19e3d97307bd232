"""Several models' results side by side: one row per model, one column per metric.

Where a model has the same task in several results files, one run is used:
a complete run before a partial one (``--limit``, a non-official data file, a
subgroup selection), then the one with more documents, then the newest, then
the first by file path (so that equal runs give the same table every time).
Every run used and every run skipped, with the reason, is listed under the
table ("Runs"), and in the CSV each task names the results file it came from.
Each number shows the documents it rests on (N), and cells of a partial run
say "partial".

A task whose used runs have different versions (its definition changed between them, so its
numbers may have moved for that reason alone) is not ranked as if comparable: each of its cells
says its version, and a warning under the table names the task, the versions and the files.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from lm_eval_bias.metric_keys import is_comparison
from lm_eval_bias.report import tables
from lm_eval_bias.report.outputs import CONTENT_SECURITY_POLICY, csv_cell, html_text, markdown_cell
from lm_eval_bias.report.run import Metric, Run, TaskBase, date_text, version_text, versions_by_task
from lm_eval_bias.report.values import ResultsError


def _is_comparison(name: str) -> bool:
    """Disparities and breakdowns that are not a subgroup of the headline metric."""
    return is_comparison(name) or "_configuration" in name


# --------------------------------------------------------------------------
# Which run of a model and task is used


@dataclass(frozen=True)
class RunChoice:
    """One run of one (model, task): used, or skipped and why."""

    model: str
    task: str
    run: Run
    used: bool
    reason: str = ""  # why it was skipped

    @property
    def base(self) -> TaskBase:
        """What the run's numbers of the task rest on."""
        return self.run.base(self.task)


def documents(run: Run, task: str) -> int | None:
    """The documents a run of a task evaluated.

    Parameters
    ----------
    run : Run
        The run.
    task : str
        One of its tasks.

    Returns
    -------
    int or None
        lm-eval's n-samples, else the headline metric's N; None when neither is known.
    """
    base = run.base(task)
    if base.evaluated is not None:
        return base.evaluated
    headline = run.tasks.get(task, {}).get(run.headline(task) or "")
    return headline.n if headline is not None and not headline.n_is_task_total else None


def _rank(run: Run, task: str) -> tuple:
    """Sort key, best first: complete, then more documents (unknown last)."""
    count = documents(run, task)
    return (run.base(task).is_partial, count is None, -(count or 0))


def _skipped_because(run: Run, chosen: Run, task: str) -> str:
    """Why ``run`` lost to ``chosen`` for ``task``: the first criterion that tells them apart."""
    base, best = run.base(task), chosen.base(task)
    if base.is_partial and not best.is_partial:
        return "partial; a complete run is used"
    count, best_count = documents(run, task), documents(chosen, task)
    unit = run.base(task).unit
    if count != best_count:
        if count is None:
            return f"number of {unit} unknown; a run with {best_count:,} is used"
        return f"fewer {unit} ({count:,} vs {best_count:,})"
    if run.date != chosen.date:
        return f"older ({date_text(run.date)} vs {date_text(chosen.date)})"
    return "the same status, size and date as the run used, which comes first by file path"


def _order_by_date(model: str, task: str, tied: list[Run]) -> list[Run]:
    """Equally complete runs of the same size: the newest first, a path breaking a tie."""
    if len(tied) > 1:
        undated = next((run for run in tied if run.date is None), None)
        if undated is not None:
            other = next(run for run in tied if run is not undated)
            raise ResultsError(
                f"{model}, task {task}: cannot tell which of {undated.path} and {other.path} to use: both are "
                f"{'partial' if undated.base(task).is_partial else 'complete'} with the same number of "
                f"{undated.base(task).unit}, and {undated.path} has no 'date' to tell the newer; add the run's "
                "'date' (seconds since 1970) or pass only one of the files"
            )
    return sorted(tied, key=lambda run: (-run.date if run.date is not None else 0.0, str(run.path)))


def choose_runs(runs: Sequence[Run]) -> list[RunChoice]:
    """Which run the leaderboard uses per (model, task): the complete run with the most documents,
    then the newest.

    Parameters
    ----------
    runs : sequence of Run
        The runs.

    Returns
    -------
    list of RunChoice
        Per (model, task), the run used and every run skipped with why, sorted by model, task, used
        first.

    Raises
    ------
    ResultsError
        Two equally complete runs of the same size, one without a date to tell the newer.
    """
    candidates: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        for task in run.tasks:
            candidates.setdefault((run.model, task), []).append(run)
    choices = []
    for (model, task), found in sorted(candidates.items()):
        ranked = sorted(found, key=lambda run: _rank(run, task))
        tied = [run for run in ranked if _rank(run, task) == _rank(ranked[0], task)]
        ordered = _order_by_date(model, task, tied) + ranked[len(tied) :]
        chosen = ordered[0]
        choices.append(RunChoice(model, task, chosen, True))
        skipped = sorted(ordered[1:], key=lambda run: str(run.path))
        choices += [RunChoice(model, task, run, False, _skipped_because(run, chosen, task)) for run in skipped]
    return choices


def _used_runs(choices: Sequence[RunChoice]) -> dict[str, dict[str, RunChoice]]:
    """model -> task -> the choice used."""
    table: dict[str, dict[str, RunChoice]] = {}
    for choice in choices:
        if choice.used:
            table.setdefault(choice.model, {})[choice.task] = choice
    return table


def skipped_runs(choices: Sequence[RunChoice]) -> list[RunChoice]:
    """The choices of runs not used, in their order in ``choices``."""
    return [choice for choice in choices if not choice.used]


# --------------------------------------------------------------------------
# Columns and cells


def default_columns(runs: list[Run]) -> list[tuple[str, str]]:
    """The leaderboard's columns when none is asked for.

    Parameters
    ----------
    runs : list of Run
        The runs.

    Returns
    -------
    list of (str, str)
        (task, metric): per task, its headline metric and that metric's per-subgroup versions (every
        metric of a task that names no headline metric).
    """
    columns = []
    for task in sorted({task for run in runs for task in run.tasks}):
        headline = next((run.headline(task) for run in runs if run.headline(task) is not None), None)
        names = sorted({name for run in runs for name in run.tasks.get(task, {})})
        if headline is None:
            chosen = names
        else:
            chosen = [headline] + [n for n in names if n.startswith(headline + "_") and not _is_comparison(n)]
        columns += [(task, name) for name in chosen if name in names]
    return columns


def checked_columns(runs: Sequence[Run], columns) -> list[tuple[str, str]]:
    """The columns asked for, each of which some run must have (else a misspelling goes unnoticed).

    Parameters
    ----------
    runs : list of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    columns : list of (str, str) or None
        (task, metric) pairs; None: per task, its headline metric and its per-subgroup versions.

    Returns
    -------
    list of (str, str)
        ``columns``, or the default columns when none is asked for.

    Raises
    ------
    ResultsError
        A column no run has, naming similar metrics.
    """
    if not columns:
        return default_columns(list(runs))
    for task, name in columns:
        if not any(name in run.tasks.get(task, {}) for run in runs):
            have = sorted({n for run in runs for n in run.tasks.get(task, {})})
            close = [n for n in have if name in n or n in name][:8]
            raise ResultsError(
                f"--metric {task}:{name}: no results file has it; "
                + (
                    f"similar: {', '.join(close)}"
                    if close
                    else f"{task} has {len(have)} metrics"
                    if have
                    else f"no file has task {task!r}; tasks: {', '.join(sorted({t for r in runs for t in r.tasks}))}"
                )
            )
    return list(columns)


def cell(metric: Metric | None, base: TaskBase | None = None) -> str:
    """One cell of the leaderboard.

    Parameters
    ----------
    metric : Metric or None
        The number; None when the run lacks it.
    base : TaskBase or None
        What the run's numbers of the task rest on, to say whether the run is partial.

    Returns
    -------
    str
        ``62 [60, 64], N=1,234`` (``62 ± 1.2`` without an interval), with ``, partial`` when the run
        is partial; ``""`` when absent.
    """
    if metric is None:
        return ""
    if not isinstance(metric.value, float):
        text = str(metric.value)
    elif metric.ci_lower is not None and metric.ci_upper is not None:
        text = f"{metric.value:.4g} [{metric.ci_lower:.4g}, {metric.ci_upper:.4g}]"
    elif metric.stderr is not None:
        text = f"{metric.value:.4g} ± {metric.stderr:.2g}"
    else:
        text = f"{metric.value:.4g}"
    text += f", N={metric.base}"
    return text + (", partial" if base is not None and base.is_partial else "")


def _mixed_versions(choices: Sequence[RunChoice]) -> dict[str, dict[str, list]]:
    """task -> version -> results files, for tasks whose used runs have different versions."""
    return versions_by_task((c.run, c.task) for c in choices if c.used)


def _version_warnings(choices: Sequence[RunChoice]) -> list[str]:
    """One line per task whose used runs have different versions."""
    return [
        f"Not comparable: task {task} has results of different task versions side by side: "
        f"{version_text(versions)}; re-run the older ones with this version of lm-eval-bias"
        for task, versions in _mixed_versions(choices).items()
    ]


def _grid(choices: Sequence[RunChoice], columns) -> list[tuple[str, list[str]]]:
    """(model, cell per column) per model, models by name; a task in several versions says each cell's."""
    table = _used_runs(choices)
    mixed = _mixed_versions(choices)
    rows = []
    for model in sorted(table):
        cells = []
        for task, name in columns:
            choice = table[model].get(task)
            metric = choice.run.tasks[task].get(name) if choice is not None else None
            text = cell(metric, choice.base if choice is not None else None)
            if text and task in mixed:
                text += f", version {choice.run.version(task) or 'unknown'}"
            cells.append(text)
        rows.append((model, cells))
    return rows


RUN_HEADER = ["model", "task", "version", "run", "results file", "date", "status", "why skipped"]


def _run_rows(choices: Sequence[RunChoice]) -> list[list[str]]:
    """The "Runs" table: every run of every (model, task), its task version, used or skipped, and why."""
    return [
        [
            c.model,
            c.task,
            c.run.version(c.task) or "",
            "used" if c.used else "skipped",
            str(c.run.path),
            date_text(c.run.date),
            c.base.status,
            c.reason,
        ]
        for c in choices
    ]


def _tasks_in_order(columns) -> list[str]:
    return list(dict.fromkeys(task for task, _ in columns))


# --------------------------------------------------------------------------
# Formats


def _leaderboard_table(columns, choices: Sequence[RunChoice]) -> tables.Table:
    """The leaderboard: a row per model, named by its first cell, and a column per (task, metric)."""
    return tables.Table(
        ["model"] + [f"{task}:{name}" for task, name in columns],
        [[model] + cells for model, cells in _grid(choices, columns)],
        first_column_is_heading=True,
    )


def _runs_table(choices: Sequence[RunChoice]) -> tables.Table:
    """The "Runs" table (:func:`_run_rows`)."""
    return tables.Table(RUN_HEADER, _run_rows(choices))


def to_markdown(runs: list[Run], columns=None) -> str:
    """The leaderboard in Markdown: the table, then the "Runs" table saying which results file each
    row's numbers come from.

    Parameters
    ----------
    runs : list of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    columns : list of (str, str) or None
        (task, metric) pairs; None: per task, its headline metric and its per-subgroup versions.

    Returns
    -------
    str
        The Markdown.
    """
    columns = checked_columns(runs, columns)
    choices = choose_runs(runs)
    lines = [tables.to_markdown(_leaderboard_table(columns, choices))]
    lines += ["", "Values with 95% intervals in brackets; N: the documents each number rests on.", ""]
    lines += [f"**{markdown_cell(warning)}**\n" for warning in _version_warnings(choices)]
    lines += ["### Runs", "", tables.to_markdown(_runs_table(choices))]
    return "\n".join(lines) + "\n"


CSV_METRIC_FIELDS = ("ci_lower", "ci_upper", "stderr", "n", "n_samples")
CSV_TASK_FIELDS = ("results_file", "version", "documents", "partial")


def to_csv(runs: list[Run], columns=None) -> str:
    """The leaderboard as CSV, one row per model.

    Per task: the results file used, its version, its documents, why it is partial (empty when
    complete); per metric: value, ci_lower, ci_upper, stderr, n (documents; empty in an older file
    without per-metric counts) and n_samples.

    Parameters
    ----------
    runs : list of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    columns : list of (str, str) or None
        (task, metric) pairs; None: per task, its headline metric and its per-subgroup versions.

    Returns
    -------
    str
        The CSV, every cell safe to open in a spreadsheet (:func:`.outputs.csv_cell`).
    """
    columns = checked_columns(runs, columns)
    choices = choose_runs(runs)
    table = _used_runs(choices)
    tasks = _tasks_in_order(columns)
    header = ["model"]
    for task in tasks:
        header += [f"{task}:{field}" for field in CSV_TASK_FIELDS]
        header += [
            f"{task}:{name}{suffix}"
            for t, name in columns
            if t == task
            for suffix in ("", *(f":{field}" for field in CSV_METRIC_FIELDS))
        ]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([csv_cell(h) for h in header])
    for model in sorted(table):
        row = [model]
        for task in tasks:
            choice = table[model].get(task)
            row += (
                [str(choice.run.path), choice.run.version(task), choice.base.evaluated, "; ".join(choice.base.partial)]
                if choice is not None
                else ["", "", "", ""]
            )
            for t, name in columns:
                if t != task:
                    continue
                metric = choice.run.tasks[task].get(name) if choice is not None else None
                row += (
                    [""] * (1 + len(CSV_METRIC_FIELDS))
                    if metric is None
                    else [
                        metric.value,
                        metric.ci_lower,
                        metric.ci_upper,
                        metric.stderr,
                        None if metric.n_is_task_total else metric.n,
                        metric.n_samples,
                    ]
                )
        writer.writerow([csv_cell(value) for value in row])
    return out.getvalue()


def to_html(runs: list[Run], columns=None) -> str:
    """The leaderboard as one self-contained HTML page (nothing fetched), with the "Runs" table.

    Parameters
    ----------
    runs : list of Run
        The runs, as :func:`lm_eval_bias.report.results.load_runs` returns them.
    columns : list of (str, str) or None
        (task, metric) pairs; None: per task, its headline metric and its per-subgroup versions.

    Returns
    -------
    str
        The page.
    """
    columns = checked_columns(runs, columns)
    choices = choose_runs(runs)
    main = tables.to_html(_leaderboard_table(columns, choices), row_groups=False)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">"
        "<title>lm-eval-bias leaderboard</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin-bottom:16px}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style></head><body>"
        "<h1>lm-eval-bias leaderboard</h1><p>Values with 95% intervals in brackets; N: the documents each "
        "number rests on.</p>"
        + "".join(f"<p><strong>{html_text(warning)}</strong></p>" for warning in _version_warnings(choices))
        + f"{main}<h2>Runs</h2>{tables.to_html(_runs_table(choices), row_groups=False)}</body></html>\n"
    )
