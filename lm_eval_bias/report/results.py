"""Reading lm-eval results files: one place that knows their layout.

lm-eval writes ``results_<date>.json`` with, per task, ``"<metric>,<filter>"``
values, ``"<metric>_stderr,<filter>"`` standard errors, and (for our tasks)
companions of each metric: ``_ci_lower``/``_ci_upper`` (a 95% interval),
``_pvalue``/``_pvalue_bh``, ``_n`` (the documents the metric rests on) and
``_n_samples`` (the generations behind it, for tasks with several per
document). Beside the results: ``n-samples`` (per task, the documents there
were and the documents evaluated), ``config.limit``, and per task ``configs``
(``repeats``; ``metadata.lm_eval_bias_data``: the data's provenance; the task's identity:
``metadata.benchmark``, ``headline_metric``, ``figure``, ``document_unit``, ``paper_values``, see
:mod:`lm_eval_bias.task_metadata`) and ``versions`` (each task definition's version).

The reader is strict about what would make a number wrong (a value that is
neither a number nor ``"N/A"``, a number of one of our tasks outside its metric's range
(:func:`lm_eval_bias.metric_keys.metric_range`), an interval whose lower end is above its upper
end, a date that is not a number, a key given twice, an entry renamed away from the task its
config ran) and tolerant of what lm-eval really writes
(a bare ``NaN``, a numpy number written as text): every problem is a
:class:`ResultsError` naming the file, the task, the key and the fix.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_bias import task_metadata
from lm_eval_bias.errors import ConfigurationError, DataError
from lm_eval_bias.metric_keys import COMPANION_RANGES, is_comparison, metric_range, range_text
from lm_eval_bias.readers import DuplicateKeyError, loads_json
from lm_eval_bias.task_metadata import PaperRow, TaskIdentity

NOT_AVAILABLE = "N/A"  # lm-eval's own marker for a number it could not compute

# Suffixes of companion numbers; a metric is any key without one of them.
_COMPANIONS = ("_stderr", "_ci_lower", "_ci_upper", "_pvalue", "_pvalue_bh")
# Counts are companions only beside the metric they count, so that a metric that merely
# ends in "_n" (a subgroup slug, say) is not taken for one.
_COUNTS = ("_n_samples", "_n")


class ResultsError(DataError):
    """A results, samples or policy file is missing, malformed, or lacks what was asked for."""


@dataclass(frozen=True)
class Metric:
    task: str
    name: str
    filter: str
    value: float | str  # a finite number, or "N/A"
    stderr: float | None
    ci_lower: float | None
    ci_upper: float | None
    pvalue: float | None = None
    higher_is_better: bool | None = None
    n: int | None = None  # documents the value rests on
    n_samples: int | None = None  # generations behind it, where a document has several
    n_is_task_total: bool = False  # an older file without ``_n``: n is the task's document count
    shows_filter: bool = False  # the metric is under several filters: its key names this one

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
    """``"1,234"`` documents, ``"300 (1,500 samples)"``, ``"242 (task total)"`` or ``"unknown"``.

    "task total" marks an older results file without per-metric counts: the
    number is the task's evaluated documents, of which a subgroup's metric uses
    only its own.
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
        return bool(self.partial)

    @property
    def status(self) -> str:
        """``"complete, 45,540 pairs"`` or ``"partial: --limit 20 (20 of 45,540 pairs)"``."""
        if self.partial:
            return "partial: " + "; ".join(self.partial)
        if self.evaluated is None:
            return f"complete, number of {self.unit} unknown"
        return f"complete, {self.evaluated:,} {self.unit}"


def partial_reasons(
    unit: str, limit: float | None, evaluated: int | None, available: int | None, provenance: dict | None
) -> tuple[str, ...]:
    """Why a run of a task whose documents are ``unit`` is partial; empty when it is complete. The one rule for it.

    A run is partial when ``--limit`` was set, when fewer documents were
    evaluated than the task has (n-samples effective < original), when a data
    file it read is not the official one (or is recorded as official with another row count
    than the official file's), when an option narrowed the documents
    (``provenance["selection"]``), or when an option was not at its default
    (``provenance["settings"]``: another sample, another classifier...).
    """
    counted = f"{evaluated:,} of {available:,} {unit}" if evaluated is not None and available is not None else None
    reasons = []
    if limit is not None:
        reasons.append(f"--limit {limit:g}" + (f" ({counted})" if counted else ""))
    elif counted and evaluated < available:
        reasons.append(f"{counted} evaluated")
    provenance = provenance or {}
    unofficial = [f for f in provenance.get("files", []) if f.get("official") is False]
    for record in unofficial:
        where = record.get("path") or record.get("name") or "?"
        rows, official_rows = record.get("rows"), record.get("official_rows")
        sizes = (
            f" ({rows:,} rows; the official file has {official_rows:,})"
            if rows is not None and official_rows is not None and rows != official_rows
            else ""
        )
        reasons.append(f"non-official data file {where}{sizes}")
    if provenance.get("official") is False and not unofficial:
        reasons.append("non-official data")
    if provenance.get("official") is True and not provenance.get("files"):
        # Our tasks record every file they read; an official claim without one cannot be checked.
        reasons.append("data recorded as official without its files, so the claim cannot be checked")
    claimed = [record for record in provenance.get("files", []) if record.get("official") is True]
    reasons += [reason for record in claimed if (reason := _claim_reason(record))]
    if limit is None and not provenance.get("selection"):
        reasons += [reason for record in claimed if (reason := _documents_reason(record, available, unit))]
    selection = provenance.get("selection") or {}
    if selection:
        reasons.append(", ".join(f"{option}={_option_text(value)}" for option, value in selection.items()))
    settings = provenance.get("settings") or {}
    if settings:
        reasons.append(
            "non-default " + ", ".join(f"{option}={_option_text(value)}" for option, value in settings.items())
        )
    return tuple(reasons)


# Data sources each of whose rows is one document of its tasks (a WinoQueer pair, a TANGO
# misgendering prompt), so that a complete run of the official file evaluates all of its rows.
_DOCUMENTS_ARE_ROWS = frozenset({"winoqueer", "tango_misgendering"})


def _official_facts(record: dict) -> tuple[str | None, int | None]:
    """(sha256, rows) of the official file a provenance record names: the benchmark's own as this
    package knows them (:data:`lm_eval_bias.data.SOURCES`), which no edit of a results file can
    change; the record's own ``official_sha256``/``official_rows`` for a source it does not know."""
    from lm_eval_bias.data import SOURCES

    source = SOURCES.get(record.get("name")) if isinstance(record.get("name"), str) else None
    sha256 = source.sha256 if source is not None and source.sha256 else record.get("official_sha256")
    rows = source.n_rows if source is not None and source.n_rows is not None else record.get("official_rows")
    return sha256, rows


def _claim_reason(record: dict) -> str | None:
    """Why a file recorded as official is not the whole official file, or None when what the record
    says bears the claim out: its sha256 must be the official file's and its rows the official count
    (a sha256 edited by hand, or a file read in part, would pass a subset off as the benchmark)."""
    where = record.get("path") or record.get("name") or "?"
    official_sha256, official_rows = _official_facts(record)
    if official_sha256 is not None and record.get("sha256") != official_sha256:
        found = "records no sha256" if record.get("sha256") is None else "has another sha256"
        return f"data file {where} is recorded as official but {found} than the official file's"
    rows = record.get("rows")
    if rows is not None and official_rows is not None and rows != official_rows:
        return f"data file {where} has {rows:,} rows; the official file has {official_rows:,}"
    return None


def _documents_reason(record: dict, available: int | None, unit: str) -> str | None:
    """Why a run of an official file whose rows are its documents is partial although no option
    narrowed them: the task had fewer documents than the file has rows."""
    _, official_rows = _official_facts(record)
    if record.get("name") not in _DOCUMENTS_ARE_ROWS or available is None or official_rows is None:
        return None
    if available == official_rows:
        return None
    where = record.get("path") or record.get("name") or "?"
    return (
        f"the task had {available:,} {unit}; the official file {where} has {official_rows:,}, "
        "and no option narrowed them"
    )


def _option_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


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
        return self.bases.get(task) or TaskBase(task)

    def identity(self, task: str) -> TaskIdentity | None:
        return self.identities.get(task)

    def headline(self, task: str) -> str | None:
        """The task's headline metric, from its metadata; None when the task declares none."""
        found = self.identities.get(task)
        return found.headline_metric if found is not None else None

    def version(self, task: str) -> str | None:
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
        for suffix in sorted(_COMPANIONS + _COUNTS, key=len, reverse=True):
            owner = self.tasks[task].get(name[: -len(suffix)]) if name.endswith(suffix) else None
            key = f"{name},{owner.filter}" if owner is not None else None
            if key is not None and key in self.entries.get(task, {}):
                value = _value(self.path, task, key, self.entries[task][key])
                return Metric(
                    task,
                    name,
                    owner.filter,
                    value,
                    None,
                    None,
                    None,
                    None,
                    None,
                    owner.n,
                    owner.n_samples,
                    owner.n_is_task_total,
                )
        return None


def date_text(date: float | None) -> str:
    """``"2026-01-02 10:00 UTC"``, or ``""`` without a date."""
    if date is None:
        return ""
    return datetime.datetime.fromtimestamp(date, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# --------------------------------------------------------------------------
# Reading


def read_text(path: str | Path, what: str) -> str:
    """A file's text, UTF-8 (a byte-order mark is allowed); ``what`` names it in messages."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except OSError as error:
        raise ResultsError(f"{path}: cannot read the {what}: {error.strerror or error}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise ResultsError(
            f"{path}, line {line}: byte 0x{raw[error.start]:02x} is not UTF-8; "
            f"save the {what} as UTF-8 (lm-eval writes UTF-8)"
        ) from None


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# rounding allowed between an estimate and its interval's bounds (relative)
_SLACK = 1e-9


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _value(path: Path, task: str, key: str, raw) -> float | str:
    """A finite number, or "N/A" for lm-eval's marker and for non-finite numbers (a bare NaN)."""
    if isinstance(raw, str) and raw != NOT_AVAILABLE:
        # lm-eval writes a numpy number it cannot serialise as its text ("0.25", "nan").
        try:
            raw = float(raw)
        except ValueError:
            pass
    if _is_number(raw):
        return float(raw) if math.isfinite(raw) else NOT_AVAILABLE
    if raw == NOT_AVAILABLE:
        return NOT_AVAILABLE
    raise ResultsError(
        f'{path}: task {task}, {key}: {_shown(raw)} is neither a number nor "N/A"; '
        "correct the value or re-run the evaluation"
    )


def _is_infinite(raw) -> bool:
    """A bare ``Infinity`` or ``-Infinity``, or one written as text (``"inf"``)."""
    if isinstance(raw, str):
        try:
            raw = float(raw)
        except ValueError:
            return False
    return _is_number(raw) and math.isinf(raw)


def _count(path: Path, task: str, key: str, raw) -> int | None:
    """A document or sample count: a whole number >= 0, or None for "N/A"."""
    value = _value(path, task, key, raw)
    if value == NOT_AVAILABLE:
        return None
    if value < 0 or value != int(value):
        raise ResultsError(
            f"{path}: task {task}, {key}: {_shown(raw)} is not a count (a whole number >= 0); "
            "correct the value or re-run the evaluation"
        )
    return int(value)


def _metric_keys(entries: dict) -> list[tuple[str, str]]:
    """(metric name, filter) of every key that is a metric rather than a companion."""
    metrics = []
    for key in entries:
        name, comma, filter_name = key.partition(",")
        if not comma or name.endswith(_COMPANIONS):
            continue
        if any(name.endswith(s) and f"{name[: -len(s)]},{filter_name}" in entries for s in _COUNTS):
            continue
        metrics.append((name, filter_name))
    return metrics


def filter_text(filter_name: str) -> str:
    """A filter's name as messages show it: a character that is not printable ASCII escaped, so
    that a look-alike (``n\\u03bfne``, a Greek omicron) or an invisible character cannot pass for
    ``none``."""
    if filter_name.isascii() and filter_name.isprintable():
        return filter_name
    return filter_name.encode("ascii", "backslashreplace").decode("ascii")


def _filters_by_metric(keys: list[tuple[str, str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, filter_name in keys:
        found.setdefault(name, []).append(filter_name)
    return found


def _parse_task(path: Path, task: str, entries: dict, higher: dict, base: TaskBase, ours: bool) -> dict[str, Metric]:
    """A task's metrics by name; a metric lm-eval wrote under several filters (a task with several
    ``filter_list`` pipelines) is keyed ``"<metric>,<filter>"`` once per filter, never by its bare
    name, so no reader can take one filter's number for another's."""
    for key, raw in entries.items():  # every number, companions included, must be readable
        if "," in key:
            _value(path, task, key, raw)
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


def value_range(name: str) -> tuple[float, float] | None:
    """The range of a number of one of our tasks as :meth:`Run.metric` names it: a metric, or a
    companion of one (``bias_score_gay_pvalue_bh``, ``bias_score_ci_upper``, ``bias_score_n``);
    None for a number that is not ours."""
    for suffix in sorted(_COMPANIONS + _COUNTS, key=len, reverse=True):
        owner = name[: -len(suffix)] if name.endswith(suffix) else None
        if owner and metric_range(owner) is not None:
            return COMPANION_RANGES.get(suffix) or metric_range(owner)
    return metric_range(name)


def _key_range(name: str, filter_name: str, metrics: set) -> tuple[float, float] | None:
    """The range of the values a results key may hold (see :func:`metric_keys.metric_range`);
    None for a metric that is not ours."""
    if name.endswith("_stderr"):  # of a metric or of one of its companions
        return COMPANION_RANGES["_stderr"]
    if (name, filter_name) in metrics:
        return metric_range(name)
    suffix = next(s for s in sorted(_COMPANIONS + _COUNTS, key=len, reverse=True) if name.endswith(s))
    return COMPANION_RANGES.get(suffix) or metric_range(name[: -len(suffix)])


def _check_ranges(path: Path, task: str, entries: dict) -> None:
    """Every number of one of our tasks within its metric's range (a percentage of 250, a p-value
    of 7.5 or a negative count is a hand edit or a bug, never a result)."""
    metrics = set(_metric_keys(entries))
    for key, raw in entries.items():
        name, comma, filter_name = key.partition(",")
        if comma and _is_infinite(raw):
            # Our tasks write N/A for a number they cannot compute, never an infinity: read as N/A,
            # an infinite interval bound would quietly leave the estimate gate without its interval.
            raise ResultsError(
                f"{path}: task {task}, {key}: {_shown(raw)} is infinite, which our tasks never write (a number "
                'they cannot compute is "N/A"), so the file is inconsistent; correct the value or re-run the evaluation'
            )
        value = _value(path, task, key, raw) if comma else NOT_AVAILABLE
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
        value = _value(path, task, key(suffix), entries[key(suffix)]) if key(suffix) in entries else None
        return None if value == NOT_AVAILABLE else value

    def count(suffix: str) -> int | None:
        return _count(path, task, key(suffix), entries[key(suffix)]) if key(suffix) in entries else None

    lower, upper = companion("_ci_lower"), companion("_ci_upper")
    if lower is not None and upper is not None and lower > upper:
        raise ResultsError(
            f"{path}: task {task}, metric {name} ({filter_name}): ci_lower {lower:g} is above ci_upper "
            f"{upper:g}, so the file is inconsistent; re-run the evaluation, or recompute the task from its "
            "samples file (lm-eval-bias recompute)"
        )
    value = _value(path, task, key(""), entries[key("")])
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
    pvalue_bh = companion("_pvalue_bh")
    return Metric(
        task,
        name,
        filter_name,
        value,
        companion("_stderr"),
        lower,
        upper,
        pvalue_bh if pvalue_bh is not None else companion("_pvalue"),
        higher.get(name) if isinstance(higher, dict) else None,
        n,
        count("_n_samples"),
        n_is_task_total=not has_count and n is not None,
        shows_filter=shows_filter,
    )


def _parse_date(path: Path, document: dict) -> float | None:
    raw = document.get("date")
    if raw is None:
        return None
    if not _is_number(raw) or not math.isfinite(raw):
        raise ResultsError(
            f"{path}: 'date' is {_shown(raw)}, not a number (lm-eval writes the run's start "
            "time in seconds since 1970); correct it or remove it"
        )
    return float(raw)


def _parse_limit(path: Path, document: dict) -> float | None:
    config = document.get("config")
    raw = config.get("limit") if isinstance(config, dict) else None
    if raw is None:
        return None
    if not _is_number(raw) or not math.isfinite(raw) or raw <= 0:
        raise ResultsError(
            f"{path}: config.limit is {_shown(raw)}, not a positive number or null; correct it or re-run the evaluation"
        )
    return float(raw)


def _parse_document_counts(path: Path, document: dict, task: str) -> tuple[int | None, int | None]:
    """(evaluated, available) documents of a task, from lm-eval's ``n-samples``."""
    counts = (document.get("n-samples") or {}).get(task) if isinstance(document.get("n-samples"), dict) else None
    if counts is None:
        return None, None
    original = counts.get("original") if isinstance(counts, dict) else None
    effective = counts.get("effective") if isinstance(counts, dict) else None
    if not all(_is_number(v) and v >= 0 and v == int(v) for v in (original, effective)) or effective > original:
        raise ResultsError(
            f'{path}: n-samples of task {task} is {_shown(counts)}; expected {{"original": N, '
            '"effective": M} with whole numbers, M <= N; correct it or re-run the evaluation'
        )
    return int(effective), int(original)


def _parse_task_config(path: Path, document: dict, task: str) -> tuple[int | None, dict | None, TaskIdentity | None]:
    """(repeats, provenance, identity) of a task, from ``configs``."""
    configs = document.get("configs")
    config = configs.get(task) if isinstance(configs, dict) else None
    if not isinstance(config, dict):
        _check_unconfigured_entry(path, document, task)
        return None, None, _identity(path, task, None)
    repeats = config.get("repeats")
    if repeats is not None and not (_is_number(repeats) and repeats >= 1 and repeats == int(repeats)):
        raise ResultsError(
            f"{path}: configs.{task}.repeats is {_shown(repeats)}, not a whole number >= 1; "
            "correct it or re-run the evaluation"
        )
    metadata = config.get("metadata")
    provenance = metadata.get("lm_eval_bias_data") if isinstance(metadata, dict) else None
    _check_entry_name(path, task, config.get("task"), f"configs.{task}.task")
    return (
        (int(repeats) if repeats is not None else None),
        _checked_provenance(path, task, provenance),
        _identity(path, task, metadata),
    )


def _check_entry_name(path: Path, task: str, recorded, where: str) -> None:
    """A results entry under the name of the task that was run (``recorded`` at ``where``): an entry
    renamed by hand would show one task's numbers as another's, and pass the other's gates."""
    if isinstance(recorded, str) and recorded != task:
        raise ResultsError(
            f"{path}: results entry {task!r} was run as task {recorded!r} ({where} says {recorded!r}), "
            f"so its numbers are not {task}'s; give the entry its task's name {recorded!r} again, "
            "or re-run the evaluation"
        )


def _check_unconfigured_entry(path: Path, document: dict, task: str) -> None:
    """lm-eval writes a config for every task it ran (a group, in ``group_subtasks``, has none):
    a task entry without one, beside configs of tasks without entries, was renamed by hand."""
    configs, groups = document.get("configs"), document.get("group_subtasks")
    if not isinstance(configs, dict) or not configs or (isinstance(groups, dict) and task in groups):
        return
    unmatched = sorted(set(configs) - set(document["results"]))
    if unmatched:
        raise ResultsError(
            f"{path}: results entry {task!r} has no config (configs.{task}), while the config of "
            f"{', '.join(map(repr, unmatched))} has no results entry, so an entry was renamed and its numbers "
            f"are not {task}'s; give the entry its task's name again, or re-run the evaluation"
        )


def _identity(path: Path, task: str, metadata) -> TaskIdentity | None:
    """What the task is, from the metadata its YAML gave it (copied by lm-eval into ``configs``).

    Results files written before our tasks declared ``benchmark`` in their metadata have none:
    for them, and only by exact name, the identity of the package's own task of that name. An
    entry with one of our tasks' names whose metadata declares another benchmark is refused.
    """
    try:
        found = task_metadata.identity(metadata if isinstance(metadata, dict) else None, f"{path}: configs.{task}")
    except ConfigurationError as error:
        raise ResultsError(f"{error}; correct it or re-run the evaluation") from None
    shipped = task_metadata.shipped_identity(task)
    if found is not None and shipped is not None and found.benchmark != shipped.benchmark:
        raise ResultsError(
            f"{path}: results entry {task!r} is named as our {shipped.benchmark} task, but its config "
            f"(configs.{task}.metadata.benchmark) says {found.benchmark!r}, so its numbers are not {task}'s; "
            "give the entry the name of the task that was run, or re-run the evaluation"
        )
    return found if found is not None else shipped


def _parse_version(document: dict, task: str) -> str | None:
    """The task definition's version: lm-eval's ``versions[task]`` (its YAML ``metadata.version``)."""
    versions = document.get("versions")
    version = versions.get(task) if isinstance(versions, dict) else None
    if version is None:
        configs = document.get("configs")
        metadata = (
            configs.get(task, {}).get("metadata")
            if isinstance(configs, dict) and isinstance(configs.get(task), dict)
            else None
        )
        version = metadata.get("version") if isinstance(metadata, dict) else None
    return None if version is None else str(version)


def _checked_provenance(path: Path, task: str, provenance) -> dict | None:
    """The data's provenance as lm-eval-bias writes it, or an error saying what is off."""
    if provenance is None:
        return None
    where = f"{path}: configs.{task}.metadata.lm_eval_bias_data"

    def wrong(part: str, value, expected: str):
        return ResultsError(
            f"{where}{part} is {_shown(value)}; expected {expected}; correct it or re-run the evaluation"
        )

    if not isinstance(provenance, dict):
        raise wrong("", provenance, 'an object {"official": ..., "files": [...], "selection": {...}}')
    if provenance.get("official") not in (True, False, None):
        raise wrong(".official", provenance.get("official"), "true, false or null")
    files = provenance.get("files") or []
    if not isinstance(files, list):
        raise wrong(".files", files, "a list of files")
    for index, record in enumerate(files):
        if not isinstance(record, dict) or record.get("official") not in (True, False, None):
            raise wrong(f".files[{index}]", record, 'an object with "path" and "official": true, false or null')
        for count in ("rows", "official_rows"):
            value = record.get(count)
            if value is not None and not (_is_number(value) and value >= 0 and value == int(value)):
                raise wrong(f".files[{index}].{count}", value, "a whole number or null")
    selection = provenance.get("selection") or {}
    if not isinstance(selection, dict):
        raise wrong(".selection", selection, "an object {option: value}")
    settings = provenance.get("settings") or {}
    if not isinstance(settings, dict):
        raise wrong(".settings", settings, "an object {option: value}")
    return {**provenance, "files": files, "selection": selection, "settings": settings}


# Model arguments that say how a model was run, not which model it is.
RUN_ONLY_MODEL_ARGS = frozenset(
    {
        "pretrained",
        "batch_size",
        "max_batch_size",
        "device",
        "device_map",
        "parallelize",
        "trust_remote_code",
        "use_fast_tokenizer",
        "cache_dir",
        "token",
        "max_memory_per_gpu",
        "max_cpu_memory",
        "offload_folder",
        "num_concurrent",
        "max_retries",
        "timeout",
        "base_url",
        "tokenized_requests",
        "tensor_parallel_size",
        "data_parallel_size",
        "gpu_memory_utilization",
    }
)


# Model arguments that leave a model the one a paper evaluated (for its published values).
PAPER_COMPATIBLE_ARGS = frozenset({"dtype", "torch_dtype"})


def _model_identity(document: dict) -> tuple[str, str | None, tuple[str, ...]]:
    """(name, pretrained, distinct argument names): the model's name with every model argument that
    makes it another model than its base (an adapter, a revision, a dtype...), so that a LoRA run
    does not pass for its base model."""
    config = document.get("config") if isinstance(document.get("config"), dict) else {}
    model_args = config.get("model_args")
    if isinstance(model_args, str):
        from lm_eval.utils import simple_parse_args_string

        model_args = simple_parse_args_string(model_args)
    pretrained = model_args.get("pretrained") if isinstance(model_args, dict) else None
    pretrained = str(pretrained) if pretrained not in (None, "") else None
    name = str(document.get("model_name") or pretrained or config.get("model") or "unknown model")
    if not isinstance(model_args, dict):
        return name, pretrained, ()
    distinct = [
        key for key in sorted(model_args) if key not in RUN_ONLY_MODEL_ARGS and model_args[key] not in (None, "")
    ]
    shown = [f"{key}={model_args[key]}" for key in distinct]
    return (f"{name} [{', '.join(shown)}]" if shown else name), pretrained, tuple(distinct)


def parse_run(path: Path, document: dict) -> Run:
    """A results document as a :class:`Run`; a :class:`ResultsError` for anything inconsistent."""
    if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
        raise ResultsError(f"{path}: not an lm-eval results file (no 'results' object)")
    higher = document.get("higher_is_better") if isinstance(document.get("higher_is_better"), dict) else {}
    date = _parse_date(path, document)
    limit = _parse_limit(path, document)
    tasks: dict[str, dict[str, Metric]] = {}
    bases: dict[str, TaskBase] = {}
    identities: dict[str, TaskIdentity] = {}
    versions: dict[str, str] = {}
    for task, entries in document["results"].items():
        if not isinstance(entries, dict):
            raise ResultsError(f"{path}: results[{task!r}] is not an object")
        _check_entry_name(path, task, entries.get("name"), f"results.{task}.name")
        evaluated, available = _parse_document_counts(path, document, task)
        repeats, provenance, identity = _parse_task_config(path, document, task)
        unit = identity.document_unit if identity is not None else "documents"
        base = TaskBase(
            task,
            evaluated,
            available,
            limit,
            repeats,
            provenance,
            partial_reasons(unit, limit, evaluated, available, provenance),
            unit,
        )
        bases[task] = base
        if identity is not None:
            identities[task] = identity
        version = _parse_version(document, task)
        if version is not None:
            versions[task] = version
        tasks[task] = _parse_task(path, task, entries, higher.get(task) or {}, base, identity is not None)
    name, pretrained, distinct = _model_identity(document)
    return Run(path, name, date, tasks, bases, dict(document["results"]), identities, versions, pretrained, distinct)


def versions_by_task(pairs) -> dict[str, dict[str, list[Path]]]:
    """task -> version -> the results files with that version of it, among ``(run, task)`` pairs,
    for tasks found in more than one version (a task's version moves with any change to its
    definition that can move its numbers)."""
    found: dict[str, dict[str, list[Path]]] = {}
    for run, task in pairs:
        version = run.version(task)
        if version is not None:
            found.setdefault(task, {}).setdefault(version, []).append(run.path)
    return {task: versions for task, versions in sorted(found.items()) if len(versions) > 1}


def version_text(versions: dict[str, list[Path]]) -> str:
    """``version 1.2 (a.json), version 1.3 (b.json, c.json)``."""
    return ", ".join(f"version {version} ({', '.join(map(str, paths))})" for version, paths in sorted(versions.items()))


def require_task_results(runs: list[Run]) -> list[Run]:
    """``runs``, or an error when none holds a task's results (nothing to show)."""
    if not any(run.tasks for run in runs):
        raise ResultsError(
            f"{', '.join(str(run.path) for run in runs)}: no task results in "
            f"{'this file' if len(runs) == 1 else 'these files'}, so nothing to show"
        )
    return runs


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
    # A file named and also found in a folder named is one run, not two.
    unique = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _non_finite(token: str) -> float:
    # lm-eval writes a bare NaN/Infinity for a number it could not compute; read it as one,
    # which the reader then shows as "N/A".
    return float(token)


def load_runs(paths) -> list[Run]:
    """Every results file named (or found in the folders named), parsed."""
    runs = []
    for path in results_files(paths):
        text = read_text(path, "results file")
        try:
            document = loads_json(text, str(path), parse_constant=_non_finite)
        except ValueError as error:
            raise ResultsError(f"{path}: not valid JSON: {error}") from None
        except DuplicateKeyError as error:
            raise ResultsError(str(error)) from None
        runs.append(parse_run(path, document))
    return runs
