"""Two runs of the same tasks compared document by document: did the candidate get more biased?

:func:`compare_runs` reads a baseline and a candidate run (each a results file, or the output
directory holding it, with the ``samples_<task>_*.jsonl`` files ``--log_samples`` wrote beside it)
and pairs their documents by content; :func:`comparison_json` gives the comparison as strict JSON.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one task in both runs, on their matched documents.

    ``metric`` is the metric's name without lm-eval's filter suffix (``bias_score``,
    ``bias_score_gay``); ``subgroup`` is None for the headline metric. ``difference`` is candidate
    minus baseline, in the metric's units, with its paired 95% interval (``ci_lower``,
    ``ci_upper``) and the p-value of the paired test named in ``test``; ``pvalue_bh`` is
    Benjamini-Hochberg adjusted across the subgroup metrics of the task. ``worsening`` is
    ``|candidate - ideal| - |baseline - ideal|`` (positive: further from the ideal) with its paired
    interval ``worsening_ci``; both are None where the metric has no ideal value.
    """

    task: str
    metric: str
    subgroup: str | None
    baseline: float
    candidate: float
    difference: float
    ci_lower: float
    ci_upper: float
    pvalue: float
    pvalue_bh: float
    n: int
    test: str
    ideal: float | None
    worsening: float | None
    worsening_ci: tuple[float, float] | None
    note: str = ""


@dataclass(frozen=True)
class TaskComparison:
    """One task in both runs: its documents, how many matched, settings that differ, its metrics.

    ``metrics`` holds the headline metric first, then its subgroup metrics.
    """

    task: str
    version: str
    headline_metric: str
    n_baseline: int
    n_candidate: int
    n_matched: int
    setting_differences: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]


@dataclass(frozen=True)
class Comparison:
    """A baseline and a candidate run compared task by task.

    ``baseline`` and ``candidate`` are each run's label (its model); ``skipped`` names each task
    found in only one run, with the reason.
    """

    baseline: str
    candidate: str
    baseline_path: str
    candidate_path: str
    tasks: tuple[TaskComparison, ...]
    skipped: tuple[str, ...]
