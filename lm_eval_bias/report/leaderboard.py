"""Several models' results side by side: one row per model, one column per metric."""

from __future__ import annotations

import csv
import html
import io

from lm_eval_bias.metric_keys import is_comparison
from lm_eval_bias.report.results import HEADLINE_METRICS, Metric, Run


def _is_comparison(name: str) -> bool:
    """Disparities and breakdowns that are not a subgroup of the headline metric."""
    return is_comparison(name) or "_configuration" in name


def default_columns(runs: list[Run]) -> list[tuple[str, str]]:
    """Per task, its headline metric and that metric's per-subgroup versions."""
    columns = []
    for task in sorted({task for run in runs for task in run.tasks}):
        headline = HEADLINE_METRICS.get(task)
        names = sorted({name for run in runs for name in run.tasks.get(task, {})})
        if headline is None:
            chosen = names
        else:
            chosen = [headline] + [n for n in names if n.startswith(headline + "_") and not _is_comparison(n)]
        columns += [(task, name) for name in chosen if name in names]
    return columns


def latest_per_model(runs: list[Run]) -> dict[str, dict[str, dict[str, Metric]]]:
    """model -> task -> metrics, the newest run winning where a model has the same task twice."""
    table: dict[str, dict[str, dict[str, Metric]]] = {}
    for run in sorted(runs, key=lambda r: r.date):
        for task, metrics in run.tasks.items():
            table.setdefault(run.model, {})[task] = metrics
    return table


def cell(metric: Metric | None) -> str:
    if metric is None:
        return ""
    if not isinstance(metric.value, float):
        return str(metric.value)
    if metric.ci_lower is not None and metric.ci_upper is not None:
        return f"{metric.value:.4g} [{metric.ci_lower:.4g}, {metric.ci_upper:.4g}]"
    if metric.stderr is not None:
        return f"{metric.value:.4g} ± {metric.stderr:.2g}"
    return f"{metric.value:.4g}"


def _grid(runs: list[Run], columns):
    table = latest_per_model(runs)
    return [(model, [tasks.get(task, {}).get(name) for task, name in columns]) for model, tasks in table.items()]


def to_markdown(runs: list[Run], columns=None) -> str:
    columns = columns or default_columns(runs)
    header = ["model"] + [f"{task}:{name}" for task, name in columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model, metrics in _grid(runs, columns):
        lines.append("| " + " | ".join([model] + [cell(m) for m in metrics]) + " |")
    return "\n".join(lines) + "\n"


def to_csv(runs: list[Run], columns=None) -> str:
    """One row per model; each metric as value, ci_lower, ci_upper, stderr columns."""
    columns = columns or default_columns(runs)
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["model"]
    for task, name in columns:
        header += [f"{task}:{name}", f"{task}:{name}:ci_lower", f"{task}:{name}:ci_upper", f"{task}:{name}:stderr"]
    writer.writerow(header)
    for model, metrics in _grid(runs, columns):
        row = [model]
        for metric in metrics:
            row += ["", "", "", ""] if metric is None else [
                metric.value, metric.ci_lower if metric.ci_lower is not None else "",
                metric.ci_upper if metric.ci_upper is not None else "",
                metric.stderr if metric.stderr is not None else ""]
        writer.writerow(row)
    return out.getvalue()


def to_html(runs: list[Run], columns=None) -> str:
    columns = columns or default_columns(runs)
    head = "".join(f"<th>{html.escape(f'{t}:{n}')}</th>" for t, n in columns)
    body = "".join(
        "<tr><th>" + html.escape(model) + "</th>"
        + "".join(f"<td>{html.escape(cell(m))}</td>" for m in metrics) + "</tr>"
        for model, metrics in _grid(runs, columns)
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>lm-eval-bias leaderboard</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style></head><body>"
        "<h1>lm-eval-bias leaderboard</h1><p>Values with 95% intervals in brackets.</p>"
        f"<table><tr><th>model</th>{head}</tr>{body}</table></body></html>\n"
    )
