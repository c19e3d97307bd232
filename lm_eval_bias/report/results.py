"""Reading lm-eval results files: one place that knows their layout.

lm-eval writes ``results_<date>.json`` with, per task, ``"<metric>,<filter>"``
values, ``"<metric>_stderr,<filter>"`` standard errors, and (for our tasks)
``"<metric>_ci_lower,<filter>"`` / ``"<metric>_ci_upper,<filter>"`` intervals.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.data import DataError

# Suffixes of companion numbers; a metric is any key without one of them.
_COMPANIONS = ("_stderr", "_ci_lower", "_ci_upper", "_pvalue", "_pvalue_bh")

# The number a task is gated and ranked on when no metric is named.
HEADLINE_METRICS = {
    "winoqueer": "bias_score",
    "tango_misgender": "consistency",
    "tango_misgender_sampled": "consistency",
    "tango_misgender_prob": "consistency",
    "tango_disclosure": "toxicity",
    "tango_disclosure_full": "toxicity",
    "gendercare_genderpair": "bias_pair_ratio",
    "gendercare_genderpair_full": "bias_pair_ratio",
    "winoqueer_mlm": "bias_score",
    "scm_score": "warmth",
    "scm_score_prob": "warmth",
    "scm_mc": "warmth_pick",
    "scm_mc_prob": "warmth_pick",
    "scm_prob_ratio": "warmth_ratio",
    "scm_story": "refusal_rate",
    "community_probes": "sentiment",
    "community_probes_full": "sentiment",
    "community_probes_custom": "sentiment",
}


class ResultsError(DataError):
    """A results file is missing, malformed, or lacks what was asked for."""


@dataclass(frozen=True)
class Metric:
    task: str
    name: str
    filter: str
    value: float | str
    stderr: float | None
    ci_lower: float | None
    ci_upper: float | None
    pvalue: float | None = None
    higher_is_better: bool | None = None

    @property
    def key(self) -> str:
        return f"{self.task}:{self.name}"


@dataclass
class Run:
    """One results file."""

    path: Path
    model: str
    date: float
    tasks: dict[str, dict[str, Metric]]  # task -> metric name -> Metric

    def metric(self, task: str, name: str | None = None) -> Metric:
        """A metric by task and name (the task's headline metric when no name is given)."""
        if task not in self.tasks:
            raise ResultsError(f"{self.path}: no task {task!r}; it has {', '.join(sorted(self.tasks)) or 'none'}")
        name = name or HEADLINE_METRICS.get(task)
        if name is None:
            raise ResultsError(f"{task} has no default metric: name one, e.g. {task}:<metric>")
        metrics = self.tasks[task]
        if name not in metrics:
            close = [m for m in sorted(metrics) if name in m or m in name][:8]
            raise ResultsError(
                f"{self.path}: task {task} has no metric {name!r}"
                + (f"; similar: {', '.join(close)}" if close else f"; it has {len(metrics)} metrics")
            )
        return metrics[name]


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _keep_as_text(token):
    # lm-eval can write a bare NaN/Infinity; keep it as a non-number instead of refusing the file
    return token


def parse_run(path: Path, document: dict) -> Run:
    if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
        raise ResultsError(f"{path}: not an lm-eval results file (no 'results' object)")
    higher = document.get("higher_is_better") or {}
    tasks: dict[str, dict[str, Metric]] = {}
    for task, entries in document["results"].items():
        if not isinstance(entries, dict):
            raise ResultsError(f"{path}: results[{task!r}] is not an object")
        metrics = {}
        for key, value in entries.items():
            name, comma, filter_name = key.partition(",")
            if not comma or name.endswith(_COMPANIONS):
                continue

            def companion(suffix):
                return _number(entries.get(f"{name}{suffix},{filter_name}"))

            metrics[name] = Metric(
                task, name, filter_name,
                _number(value) if _number(value) is not None else str(value),
                companion("_stderr"), companion("_ci_lower"), companion("_ci_upper"),
                companion("_pvalue_bh") if companion("_pvalue_bh") is not None else companion("_pvalue"),
                (higher.get(task) or {}).get(name),
            )
        tasks[task] = metrics
    config = document.get("config") or {}
    model_args = config.get("model_args")
    pretrained = model_args.get("pretrained") if isinstance(model_args, dict) else None
    model = document.get("model_name") or pretrained or str(config.get("model", "unknown model"))
    return Run(path, str(model), float(document.get("date") or 0.0), tasks)


def results_files(paths) -> list[Path]:
    """The results files named, or found under the folders named."""
    found = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            matches = sorted(path.rglob("results_*.json"))
            if not matches:
                raise ResultsError(f"{path}: no results_*.json file under this folder")
            found += matches
        elif path.is_file():
            found.append(path)
        else:
            raise ResultsError(f"{path}: no such file or folder")
    return found


def load_runs(paths) -> list[Run]:
    """Every results file named (or found in the folders named), parsed."""
    runs = []
    for path in results_files(paths):
        try:
            document = json.loads(path.read_text(encoding="utf-8"), parse_constant=_keep_as_text)
        except (ValueError, UnicodeDecodeError) as error:
            raise ResultsError(f"{path}: not valid JSON: {error}") from None
        runs.append(parse_run(path, document))
    return runs
