"""Recompute a task's results from its ``--log_samples`` file.

Each logged sample holds the per-document metric values our ``process_results``
returned; aggregating them again with the task's own aggregations (declared in
its YAML, else chosen by metric name as ``SubgroupMetricsTask`` does) gives the
same numbers as the run, with the same seeds, without the model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from lm_eval_bias import harness, tasks_dir
from lm_eval_bias.report.results import ResultsError

_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_\d{4}-\d{2}-\d{2}T[\d.:-]+\.jsonl$")


def task_name_of(path: Path) -> str:
    match = _SAMPLES_NAME.match(path.name)
    if not match:
        raise ResultsError(f"{path}: not named like lm-eval's samples_<task>_<date>.jsonl; pass --task")
    return match["task"]


def read_samples(path: str | Path) -> list[dict]:
    """The records of an lm-eval ``samples_*.jsonl`` file (blank lines skipped)."""
    path = Path(path)
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as error:
        raise ResultsError(f"{path}: cannot read the samples: {error}") from None


def declared_aggregations(task: str) -> dict:
    """metric -> aggregation function, from the task's YAML in this package."""
    from lm_eval.api.registry import get_aggregation
    from lm_eval.tasks._yaml_loader import load_yaml

    for path in sorted(Path(tasks_dir()).rglob("*.yaml")):
        if load_yaml(path, resolve_func=False).get("task") != task:
            continue
        declared = {}
        for entry in load_yaml(path).get("metric_list", []):
            aggregation = entry.get("aggregation", "mean")
            declared[entry["metric"]] = get_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
        return declared
    raise ResultsError(f"{task!r} is not a task of lm-eval-bias (looked in {tasks_dir()})")


def recompute(samples_path: str | Path, task: str | None = None) -> dict:
    """``{"<metric>,<filter>": value, "<metric>_stderr,<filter>": stderr}`` from a samples file."""
    from lm_eval.api.metrics import mean, mean_stderr

    path = Path(samples_path)
    samples = read_samples(path)
    if not samples:
        raise ResultsError(f"{path}: no samples")
    declared = declared_aggregations(task or task_name_of(path))
    values: dict[tuple[str, str], list] = {}
    for line_number, sample in enumerate(samples, start=1):
        if "metrics" not in sample or "filter" not in sample:
            raise ResultsError(f"{path}, line {line_number}: not an lm-eval sample (no 'metrics'/'filter')")
        for name in sample["metrics"]:
            values.setdefault((name, sample["filter"]), []).append(sample[name])
    results = {}
    for (name, filter_name), items in values.items():
        aggregation = declared.get(name) or harness.aggregation_for(name)
        try:
            results[f"{name},{filter_name}"] = aggregation(items)
        except (ValueError, ArithmeticError):
            results[f"{name},{filter_name}"] = "N/A"
        results[f"{name}_stderr,{filter_name}"] = (
            mean_stderr(items) if aggregation is mean and len(items) > 1 else "N/A")
    return results
