"""A results file as read: its runs, each task's metrics and what each number rests on.

:func:`lm_eval_bias.report.results.load_runs` reads lm-eval's results files into the classes
here: a :class:`Run` per file, a :class:`Metric` per number with its companions (standard error,
95% interval, p-value, N) and a :class:`TaskBase` per task (the documents evaluated, the data's
provenance, whether the run is partial and why). Nothing here reads a file.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_bias.report.values import COMPANIONS, COUNTS, ResultsError, filter_text, read_value
from lm_eval_bias.task_metadata import PaperRow, TaskIdentity

# Model arguments that leave a model the one a paper evaluated (for its published values).
PAPER_COMPATIBLE_ARGS = frozenset({"dtype", "torch_dtype"})


@dataclass(frozen=True)
class Metric:
    """One number of a task, with its companions: standard error, 95% interval, p-value and N."""

    task: str
    name: str
    filter: str
    value: float | str  # a finite number, or "N/A"
    stderr: float | None
    ci_lower: float | None
    ci_upper: float | None
    pvalue: float | None = None  # the test beside the interval
    higher_is_better: bool | None = None
    n: int | None = None  # documents the value rests on
    n_samples: int | None = None  # generations behind it, where a document has several
    n_is_task_total: bool = False  # an older file without ``_n``: n is the task's document count
    shows_filter: bool = False  # the metric is under several filters: its key names this one
    interval_not_available: bool = False  # the run wrote its interval as N/A (too few documents, or no spread)
    pvalue_bh: float | None = None  # the p-value, Benjamini-Hochberg adjusted across the task's subgroups
    design_effect: float | None = None  # the variance of the mean with the task's clusters over that with none

    @property
    def key(self) -> str:
        """``task:metric``; ``task:metric,filter`` where the filter must be named (the metric is under
        several, or the filter's name is not plain ASCII and is shown escaped)."""
        shown = filter_text(self.filter)
        named = self.shows_filter or shown != self.filter
        return f"{self.task}:{self.name}" + (f",{shown}" if named else "")

    @property
    def base(self) -> str:
        """What the number rests on, for display: see :func:`base_text`."""
        return base_text(self)


def base_text(metric: Metric) -> str:
    """What a metric rests on, as text.

    "task total" marks an older results file without per-metric counts: the
    number is the task's evaluated documents, of which a subgroup's metric uses
    only its own.

    Parameters
    ----------
    metric : Metric
        The metric.

    Returns
    -------
    str
        ``"1,234"`` documents, ``"300 (1,500 samples)"``, ``"242 (task total)"`` or ``"unknown"``.
    """
    if metric.n is None:
        return "unknown"
    text = f"{metric.n:,}"
    if metric.n_is_task_total:
        return f"{text} (task total)"
    if metric.n_samples is not None and metric.n_samples != metric.n:
        text += f" ({metric.n_samples:,} samples)"
    return text


@dataclass(frozen=True)
class TaskBase:
    """What one run's numbers of one task rest on, and whether the run is partial (and why)."""

    task: str
    evaluated: int | None = None  # documents evaluated (lm-eval's n-samples "effective")
    available: int | None = None  # documents the task has (n-samples "original")
    limit: float | None = None  # config.limit
    repeats: int | None = None  # samples per document
    provenance: dict | None = None  # configs[task].metadata.lm_eval_bias_data
    partial: tuple[str, ...] = ()  # the reasons the run is partial; empty: complete
    unit: str = "documents"  # what one document is ("pairs", "prompts"): the task's metadata document_unit

    @property
    def is_partial(self) -> bool:
        """Whether the run of the task is partial (see :func:`.provenance.partial_reasons`)."""
        return bool(self.partial)

    @property
    def status(self) -> str:
        """``"complete, 45,540 pairs"`` or ``"partial: --limit 20 (20 of 45,540 pairs)"``."""
        if self.partial:
            return "partial: " + "; ".join(self.partial)
        if self.evaluated is None:
            return f"complete, number of {self.unit} unknown"
        return f"complete, {self.evaluated:,} {self.unit}"


@dataclass
class Run:
    """One results file."""

    path: Path
    model: str
    date: float | None  # seconds since 1970; None when the file has none
    tasks: dict[str, dict[str, Metric]]  # task -> metric name -> Metric
    bases: dict[str, TaskBase] = field(default_factory=dict)  # task -> what its numbers rest on
    entries: dict[str, dict] = field(default_factory=dict)  # task -> its raw "<key>,<filter>" values
    identities: dict[str, TaskIdentity] = field(default_factory=dict)  # task -> what it is (when known)
    versions: dict[str, str] = field(default_factory=dict)  # task -> its definition's version (when recorded)
    pretrained: str | None = None  # the model's Hugging Face id or path (model_args pretrained)
    # model arguments beside pretrained that make it another model (an adapter, a revision...)
    distinct_args: tuple[str, ...] = ()

    def base(self, task: str) -> TaskBase:
        """What the task's numbers rest on (an empty :class:`TaskBase` for a task the file lacks)."""
        return self.bases.get(task) or TaskBase(task)

    def identity(self, task: str) -> TaskIdentity | None:
        """What the task is (benchmark, headline metric, figure...); None when not known."""
        return self.identities.get(task)

    def headline(self, task: str) -> str | None:
        """The task's headline metric, from its metadata; None when the task declares none."""
        found = self.identities.get(task)
        return found.headline_metric if found is not None else None

    def version(self, task: str) -> str | None:
        """The version of the task's definition; None when the file records none."""
        return self.versions.get(task)

    def paper_row(self, task: str) -> PaperRow | None:
        """The paper's published row for this run's model, when the task's metadata has one for
        exactly this model: its Hugging Face id, with no argument that makes it another model
        (a dtype aside)."""
        found = self.identities.get(task)
        if found is None or set(self.distinct_args) - PAPER_COMPATIBLE_ARGS:
            return None
        return found.paper_row(self.pretrained)

    def metric(self, task: str, name: str | None = None) -> Metric:
        """A metric by task and name (the task's headline metric when no name is given); a
        companion (``bias_score_gay_pvalue_bh``, ``..._ci_upper``) is a metric of its own here."""
        if task not in self.tasks:
            raise ResultsError(f"{self.path}: no task {task!r}; it has {', '.join(sorted(self.tasks)) or 'none'}")
        name = name or self.headline(task)
        if name is None:
            raise ResultsError(
                f"{task} has no default metric (its metadata names no headline_metric): name one, e.g. {task}:<metric>"
            )
        metrics = self.tasks[task]
        name = self._filtered_name(task, name)
        companion = self._companion(task, name) if name not in metrics else None
        if companion is not None:
            return companion
        if name not in metrics:
            close = [m for m in sorted(metrics) if name in m or m in name][:8]
            raise ResultsError(
                f"{self.path}: task {task} has no metric {name!r}"
                + (f"; similar: {', '.join(close)}" if close else f"; it has {len(metrics)} metrics")
            )
        return metrics[name]

    def _filtered_name(self, task: str, name: str) -> str:
        """The key of ``name`` among the task's metrics: ``"metric,filter"`` names a metric under that
        filter (the bare name where it has only that one); a bare name of a metric under several
        filters is an error listing them, never one picked silently."""
        metrics = self.tasks[task]
        bare, comma, filter_name = name.partition(",")
        if comma and name not in metrics and bare in metrics and metrics[bare].filter == filter_name:
            return bare
        filters = [m.filter for key, m in metrics.items() if key.startswith(name + ",") and m.name == name]
        if not comma and name not in metrics and filters:
            raise ResultsError(
                f"{self.path}: task {task} has metric {name!r} under {len(filters)} filters "
                f"({', '.join(map(filter_text, filters))}); name the filter, e.g. "
                + " or ".join(f"{task}:{name},{filter_text(f)}" for f in filters)
            )
        return name

    def _companion(self, task: str, name: str) -> Metric | None:
        """A companion number of a metric (its p-value, a bound, its N) as a metric, with the
        metric's N; None when ``name`` is no companion of a metric of the task."""
        for suffix in sorted(COMPANIONS + COUNTS, key=len, reverse=True):
            owner = self.tasks[task].get(name[: -len(suffix)]) if name.endswith(suffix) else None
            key = f"{name},{owner.filter}" if owner is not None else None
            if key is not None and key in self.entries.get(task, {}):
                value = read_value(self.path, task, key, self.entries[task][key])
                # A companion has no companions of its own; it rests on its metric's documents.
                return Metric(
                    task,
                    name,
                    owner.filter,
                    value,
                    stderr=None,
                    ci_lower=None,
                    ci_upper=None,
                    n=owner.n,
                    n_samples=owner.n_samples,
                    n_is_task_total=owner.n_is_task_total,
                )
        return None


def date_text(date: float | None) -> str:
    """A run's date as text.

    Parameters
    ----------
    date : float or None
        Seconds since 1970, as lm-eval writes it.

    Returns
    -------
    str
        ``"2026-01-02 10:00 UTC"``, or ``""`` without a date.
    """
    if date is None:
        return ""
    return datetime.datetime.fromtimestamp(date, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def versions_by_task(pairs) -> dict[str, dict[str, list[Path]]]:
    """The tasks found in more than one version, with the files of each version.

    A task's version moves with any change to its definition that can move its numbers, so numbers
    of two versions are not comparable.

    Parameters
    ----------
    pairs : iterable of (Run, str)
        Runs, each with one of its tasks.

    Returns
    -------
    dict
        task -> version -> the results files with that version of it; only tasks with several.
    """
    found: dict[str, dict[str, list[Path]]] = {}
    for run, task in pairs:
        version = run.version(task)
        if version is not None:
            found.setdefault(task, {}).setdefault(version, []).append(run.path)
    return {task: versions for task, versions in sorted(found.items()) if len(versions) > 1}


def version_text(versions: dict[str, list[Path]]) -> str:
    """One task's versions as text.

    Parameters
    ----------
    versions : dict of str to list of Path
        version -> the results files with it, one task's entry of :func:`versions_by_task`.

    Returns
    -------
    str
        ``version 1.2 (a.json), version 1.3 (b.json, c.json)``.
    """
    return ", ".join(f"version {version} ({', '.join(map(str, paths))})" for version, paths in sorted(versions.items()))
