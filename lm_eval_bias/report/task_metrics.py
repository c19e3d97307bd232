"""One task's entry of a results file read into its metrics, each with its companions.

An entry holds ``"<metric>,<filter>"`` values beside their companions (``_stderr``,
``_ci_lower``/``_ci_upper``, ``_pvalue``/``_pvalue_bh``, ``_n``, ``_n_samples``). For one of our
tasks every number must lie within its metric's range
(:func:`lm_eval_bias.metric_keys.metric_range`), an estimate within its own interval, and a count
no larger than the documents the task evaluated; a metric written under several filters is keyed
by its filter, so that no reader takes one filter's number for another's.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_bias.metric_keys import COMPANION_RANGES, is_comparison, metric_range, range_text
from lm_eval_bias.report.run import Metric, TaskBase
from lm_eval_bias.report.values import (
    COMPANIONS,
    COUNTS,
    NOT_AVAILABLE,
    ResultsError,
    filter_text,
    is_infinite,
    read_count,
    read_value,
    shown,
)

# rounding allowed between an estimate and its interval's bounds (relative)
_SLACK = 1e-9


def _metric_keys(entries: dict) -> list[tuple[str, str]]:
    """(metric name, filter) of every key that is a metric rather than a companion."""
    metrics = []
    for key in entries:
        name, comma, filter_name = key.partition(",")
        if not comma or name.endswith(COMPANIONS):
            continue
        if any(name.endswith(s) and f"{name[: -len(s)]},{filter_name}" in entries for s in COUNTS):
            continue
        metrics.append((name, filter_name))
    return metrics


def _filters_by_metric(keys: list[tuple[str, str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, filter_name in keys:
        found.setdefault(name, []).append(filter_name)
    return found


def parse_task_metrics(
    path: Path, task: str, entries: dict, higher: dict, base: TaskBase, ours: bool
) -> dict[str, Metric]:
    """A task's metrics by name, each with its companions.

    A metric lm-eval wrote under several filters (a task with several ``filter_list`` pipelines) is
    keyed ``"<metric>,<filter>"`` once per filter, never by its bare name, so no reader can take one
    filter's number for another's.

    Parameters
    ----------
    path : Path
        The results file, named in every error.
    task : str
        The task's name in the file.
    entries : dict
        Its entry, ``results[task]``: ``"<key>,<filter>"`` -> value.
    higher : dict
        Its ``higher_is_better``: metric name -> bool.
    base : TaskBase
        What its numbers rest on; its evaluated documents are a metric's N when the file has no
        ``_n`` companion (an older file).
    ours : bool
        Whether it is one of our tasks, whose numbers must lie within their metrics' ranges and
        whose metrics each have one filter.

    Returns
    -------
    dict of str to Metric
        The metrics by name (by ``"<metric>,<filter>"`` for one under several filters).

    Raises
    ------
    ResultsError
        A value that is neither a number nor ``"N/A"``, an interval whose lower end is above its
        upper end, an estimate outside its own interval, a count above the documents evaluated, or
        (for our tasks) a number outside its range or a metric under several filters.
    """
    for key, raw in entries.items():  # every number, companions included, must be readable
        if "," in key:
            read_value(path, task, key, raw)
    keys = _metric_keys(entries)
    several = {name: filters for name, filters in _filters_by_metric(keys).items() if len(filters) > 1}
    if ours and several:
        # Each of our tasks writes every metric under its one filter: a second one was added by hand
        # or two files were merged, and which number the run scored cannot be known.
        name, filters = next(iter(several.items()))
        raise ResultsError(
            f"{path}: task {task}, metric {name} is given under {len(filters)} filters "
            f"({', '.join(map(filter_text, filters))}), while the task writes each metric under one filter, "
            "so which number the run scored cannot be known; keep only the entries of the filter the run "
            f"wrote (configs.{task}.filter_list) or re-run the evaluation"
        )
    if ours:
        _check_ranges(path, task, entries)
    return {
        (f"{name},{filter_name}" if name in several else name): _parse_metric(
            path, task, entries, name, filter_name, higher, base, shows_filter=name in several
        )
        for name, filter_name in keys
    }


def _key_range(name: str, filter_name: str, metrics: set) -> tuple[float, float] | None:
    """The range of the values a results key may hold (see :func:`metric_keys.metric_range`);
    None for a metric that is not ours."""
    if name.endswith("_stderr"):  # of a metric or of one of its companions
        return COMPANION_RANGES["_stderr"]
    if (name, filter_name) in metrics:
        return metric_range(name)
    suffix = next(s for s in sorted(COMPANIONS + COUNTS, key=len, reverse=True) if name.endswith(s))
    return COMPANION_RANGES.get(suffix) or metric_range(name[: -len(suffix)])


def _check_ranges(path: Path, task: str, entries: dict) -> None:
    """Every number of one of our tasks within its metric's range (a percentage of 250, a p-value
    of 7.5 or a negative count is a hand edit or a bug, never a result)."""
    metrics = set(_metric_keys(entries))
    for key, raw in entries.items():
        name, comma, filter_name = key.partition(",")
        if comma and is_infinite(raw):
            # Our tasks write N/A for a number they cannot compute, never an infinity: read as N/A,
            # an infinite interval bound would quietly leave the estimate gate without its interval.
            raise ResultsError(
                f"{path}: task {task}, {key}: {shown(raw)} is infinite, which our tasks never write (a number "
                'they cannot compute is "N/A"), so the file is inconsistent; correct the value or re-run the evaluation'
            )
        value = read_value(path, task, key, raw) if comma else NOT_AVAILABLE
        bounds = _key_range(name, filter_name, metrics) if value != NOT_AVAILABLE else None
        if bounds is None:
            continue
        low, high = bounds
        if value < low - _SLACK * max(1.0, abs(low)) or value > high + _SLACK * max(1.0, abs(high)):
            raise ResultsError(
                f"{path}: task {task}, metric {name} ({filter_name}): {value:g} is outside its range, "
                f"{range_text(bounds)}, so the file is inconsistent; correct the value or re-run the evaluation"
            )


def _parse_metric(
    path: Path,
    task: str,
    entries: dict,
    name: str,
    filter_name: str,
    higher: dict,
    base: TaskBase,
    shows_filter: bool = False,
) -> Metric:
    """One metric with its companions; without an ``_n`` companion (an older file), N is the task's count."""

    def key(suffix: str) -> str:
        return f"{name}{suffix},{filter_name}"

    def companion(suffix: str) -> float | None:
        value = read_value(path, task, key(suffix), entries[key(suffix)]) if key(suffix) in entries else None
        return None if value == NOT_AVAILABLE else value

    def count(suffix: str) -> int | None:
        return read_count(path, task, key(suffix), entries[key(suffix)]) if key(suffix) in entries else None

    lower, upper = companion("_ci_lower"), companion("_ci_upper")
    if lower is not None and upper is not None and lower > upper:
        raise ResultsError(
            f"{path}: task {task}, metric {name} ({filter_name}): ci_lower {lower:g} is above ci_upper "
            f"{upper:g}, so the file is inconsistent; re-run the evaluation, or recompute the task from its "
            "samples file (lm-eval-bias recompute)"
        )
    value = read_value(path, task, key(""), entries[key("")])
    # A Wilson, Fisher-z or bootstrap interval of a mean holds its estimate; one of a range or
    # spread of group means need not (resampling inflates them), so those are not checked.
    if (
        value != NOT_AVAILABLE
        and not is_comparison(name)
        and (
            (lower is not None and value < lower - _SLACK * max(1.0, abs(lower)))
            or (upper is not None and value > upper + _SLACK * max(1.0, abs(upper)))
        )
    ):
        shown = f"[{'N/A' if lower is None else f'{lower:g}'}, {'N/A' if upper is None else f'{upper:g}'}]"
        raise ResultsError(
            f"{path}: task {task}, metric {name} ({filter_name}): the estimate {value:g} lies outside its own "
            f"interval {shown}, so the file is inconsistent; re-run the evaluation, or recompute "
            "the task from its samples file (lm-eval-bias recompute)"
        )
    has_count = key("_n") in entries
    n = count("_n") if has_count else base.evaluated
    if (
        has_count
        and value != NOT_AVAILABLE
        and (n is None or n == 0)
        or (has_count and n is not None and base.evaluated is not None and n > base.evaluated)
    ):
        rests_on = (
            f"{n:,} documents, more than the {base.evaluated:,} the task evaluated"
            if n
            else "0 documents, yet it has a value"
            if n == 0
            else "N/A documents, yet it has a value"
        )
        raise ResultsError(
            f"{path}: task {task}, metric {name} ({filter_name}): {name}_n says the number rests on {rests_on}, "
            "so the file is inconsistent; re-run the evaluation, or recompute the task from its samples file "
            "(lm-eval-bias recompute)"
        )
    return Metric(
        task,
        name,
        filter_name,
        value,
        companion("_stderr"),
        lower,
        upper,
        companion("_pvalue"),
        higher.get(name) if isinstance(higher, dict) else None,
        n,
        count("_n_samples"),
        n_is_task_total=not has_count and n is not None,
        shows_filter=shows_filter,
        pvalue_bh=companion("_pvalue_bh"),
        design_effect=companion("_design_effect"),
        interval_not_available=any(entries.get(key(suffix)) == NOT_AVAILABLE for suffix in ("_ci_lower", "_ci_upper")),
    )
