"""Recompute a task's results from its ``--log_samples`` file.

Each logged sample holds the per-document metric values our ``process_results``
returned; aggregating them again with the task's own aggregations (declared in
its YAML, else chosen by metric name as ``SubgroupMetricsTask`` does) gives the
same numbers as the run, with the same seeds, without the model.

The samples must be the task's: its declared metrics (or its headline metric)
must be among the samples' metric names, and ``--task`` may not contradict the
file's name; a value an aggregation cannot take is an error naming the metric.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path

from lm_eval_bias import harness, task_metadata, tasks_dir
from lm_eval_bias.report.results import ResultsError, read_text

_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_\d{4}-\d{2}-\d{2}T[\d.:-]+\.jsonl$")
logger = logging.getLogger("lm_eval_bias")
# How many metric names a message lists before "...".
_LISTED = 8


def task_name_of(path: Path) -> str | None:
    """The task in an lm-eval samples file name (``samples_<task>_<date>.jsonl``), or None."""
    match = _SAMPLES_NAME.match(path.name)
    return match["task"] if match else None


def read_sample_lines(path: str | Path) -> list[tuple[int, dict]]:
    """(line number, record) of every sample of an lm-eval ``samples_*.jsonl`` file (blank lines skipped)."""
    path = Path(path)
    text = read_text(path, "samples file")
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            _raise_if_results_file(path, text)
            raise ResultsError(
                f"{path}, line {number}: not a JSON sample: {error}; pass the "
                "samples_<task>_<date>.jsonl file that --log_samples wrote"
            ) from None
        if not isinstance(record, dict):
            raise ResultsError(
                f"{path}, line {number}: a sample is a JSON object, not {type(record).__name__}; "
                "pass the samples_<task>_<date>.jsonl file that --log_samples wrote"
            )
        if "results" in record and "doc" not in record:
            _raise_if_results_file(path, line)
        records.append((number, record))
    if not records:
        raise ResultsError(f"{path}: no samples; pass the samples_<task>_<date>.jsonl file that --log_samples wrote")
    return records


def _raise_if_results_file(path: Path, text: str) -> None:
    """A results file given where a samples file belongs: say so, and where the samples are."""
    try:
        document = json.loads(text)
    except ValueError:
        return
    if isinstance(document, dict) and "results" in document:
        raise ResultsError(
            f"{path}: a results file, not a samples file; pass the samples_<task>_<date>.jsonl "
            "that --log_samples wrote beside it"
        )


def task_config(task: str, resolve_functions: bool = False) -> dict:
    """The task's YAML in this package, as lm-eval loads it (``include`` resolved)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    if task in task_metadata.shipped_configs():
        path, config = task_metadata.shipped_configs()[task]
        return load_yaml(path, resolve_func=True) if resolve_functions else copy.deepcopy(config)
    raise ResultsError(
        f"{task!r} is not a task of lm-eval-bias (looked in {tasks_dir()}); pass --task with one of its tasks"
    )


def declared_aggregations(task: str) -> dict:
    """metric -> aggregation function, from the task's YAML in this package."""
    from lm_eval.api.registry import get_aggregation

    declared = {}
    for entry in task_config(task, resolve_functions=True).get("metric_list", []):
        aggregation = entry.get("aggregation", "mean")
        declared[entry["metric"]] = get_aggregation(aggregation) if isinstance(aggregation, str) else aggregation
    return declared


def _is_number(value) -> bool:
    # lm-eval logs a log-likelihood as a number or as its text ("-6.49")
    if isinstance(value, bool):
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _answers_are_logliks(sample: dict) -> bool | None:
    """Whether a sample's answers are [log-likelihood, is-greedy] pairs (None: cannot tell)."""
    responses = sample.get("resps")
    if not isinstance(responses, list) or not responses:
        return None
    return all(
        isinstance(answer, list)
        and answer
        and isinstance(answer[0], list)
        and len(answer[0]) == 2
        and _is_number(answer[0][0])
        for answer in responses
    )


def check_output_type(path: Path, task: str, sample: dict) -> None:
    """Samples of a log-likelihood task given for a generation task, or the other way round,
    share metric names (consistency, ...) but not their meaning."""
    logliks = _answers_are_logliks(sample)
    scores = task_config(task).get("output_type", "generate_until") != "generate_until"
    if logliks is None or logliks == scores:
        return
    held = "log-likelihoods" if logliks else "generated text"
    wanted = "scores log-likelihoods" if scores else "generates text"
    raise ResultsError(
        f"{path}: these samples hold {held}, but {task} {wanted}, so they are another task's; "
        "pass the task they are of with --task"
    )


def _listing(names) -> str:
    names = sorted(names)
    return ", ".join(names[:_LISTED]) + (f" ... ({len(names)} in all)" if len(names) > _LISTED else "")


def task_of(path: Path, task: str | None) -> str:
    """The task whose samples ``path`` holds: ``--task``, which must agree with the file's name."""
    named = task_name_of(path)
    if task is None:
        if named is None:
            raise ResultsError(f"{path}: not named like lm-eval's samples_<task>_<date>.jsonl; pass --task")
        return named
    if named is not None and named != task:
        raise ResultsError(
            f"{path}: the file name says these are samples of {named}, but --task says {task}; "
            f"drop --task, or pass --task {named}"
        )
    return task


def check_samples_are_of(path: Path, task: str, names: set[str], declared: dict) -> None:
    """The samples must hold the task's declared metrics or its headline metric."""
    # A samples file has no metadata: the headline metric of the package's task of that name.
    shipped = task_metadata.shipped_identity(task)
    expected = set(declared) | ({shipped.headline_metric} if shipped is not None else set())
    if expected and not expected & names:
        raise ResultsError(
            f"{path}: these are not samples of {task}: they hold the metrics {_listing(names) or 'none'}, and "
            f"{task} reports {_listing(expected)}; pass the task the samples are of with --task"
        )


def recompute(samples_path: str | Path, task: str | None = None) -> dict:
    """``{"<metric>,<filter>": value, "<metric>_stderr,<filter>": stderr}`` from a samples file."""
    path = Path(samples_path)
    samples = read_sample_lines(path)
    task = task_of(path, task)
    declared = declared_aggregations(task)
    values: dict[tuple[str, str], list] = {}
    for line_number, sample in samples:
        names, filter_name = sample.get("metrics"), sample.get("filter")
        if not isinstance(names, list) or not isinstance(filter_name, str):
            raise ResultsError(
                f"{path}, line {line_number}: not an lm-eval sample (no 'metrics' list and "
                "'filter'); pass the samples_<task>_<date>.jsonl file that --log_samples wrote"
            )
        for name in names:
            if not isinstance(name, str) or name not in sample:
                raise ResultsError(
                    f"{path}, line {line_number}: the sample lists the metric {name!r} but holds "
                    "no value for it; the file was edited or cut short: use the file --log_samples "
                    "wrote"
                )
            values.setdefault((name, filter_name), []).append(sample[name])
    check_samples_are_of(path, task, {name for name, _ in values}, declared)
    check_output_type(path, task, samples[0][1])
    results = {}
    for (name, filter_name), items in values.items():
        aggregation = declared.get(name) or harness.aggregation_for(name)
        value, stderr = _aggregate(path, task, name, filter_name, aggregation, items)
        results[f"{name},{filter_name}"] = value
        results[f"{name}_stderr,{filter_name}"] = stderr
    return results


def _aggregate(path: Path, task: str, name: str, filter_name: str, aggregation, items: list):
    """(value, stderr) of one metric, "N/A" where the statistic cannot be computed on these documents.

    The task's own aggregations reject values of another shape (a number where a
    (group, value) pair belongs, text where a number belongs) with a TypeError
    or a lookup error: that means the samples are not what the task wrote.
    """
    from lm_eval.api.metrics import mean, mean_stderr

    try:
        try:
            value = aggregation(items)
        except (ValueError, ArithmeticError) as error:  # e.g. a gap with one side missing, as the run says
            logger.warning("%s: %s is not reported: %s", task, name, error)
            value = "N/A"
        stderr = mean_stderr(items) if aggregation is mean and len(items) > 1 else "N/A"
    except (TypeError, KeyError, IndexError, AttributeError) as error:
        example = json.dumps(items[0])[:60]
        raise ResultsError(
            f"{path}: cannot aggregate {name} ({filter_name}) as {task} does: {type(error).__name__}: {error} "
            f"(first value: {example}); the samples do not hold what {task} writes: pass the task they are of "
            "with --task"
        ) from None
    return value, stderr
