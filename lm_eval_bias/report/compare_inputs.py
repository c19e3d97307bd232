"""What a comparison of two runs reads: each run's results file and samples files, the documents of
both paired by content, and what differs between the runs besides the model's answers.

A run is a results file, or the output folder holding one, with the ``samples_<task>_<date>.jsonl``
files ``--log_samples`` wrote beside it. Documents are paired by what defines them, never by
position: lm-eval's ``doc_hash`` (a hash of the document), and the two documents of a pair must be
the same after NFC; where a sample has no ``doc_hash``, by the document's content. No task writes a
fact of the run (the subgroups it selected) into its documents, so a run of a few subgroups, or a
``--limit``ed one, pairs with a full run on every document they share. A document logged twice in
one run is paired by its order among the identical ones. Runs of different task versions or
different data files are refused, and so is a metric value the comparison would read that is not
one a task writes (:func:`check_sample_values`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias import aggregations
from lm_eval_bias.readers import DuplicateKeyError, loads_json
from lm_eval_bias.report.recompute import (
    canonical_value,
    check_document_value,
    declared_aggregations,
    read_sample_lines,
    reported_metrics,
    task_name_of,
)
from lm_eval_bias.report.results import load_runs, read_text, results_files
from lm_eval_bias.report.run import Run
from lm_eval_bias.report.values import ResultsError, shown

# Settings of a run (its ``config`` and top-level keys) that can change a model's answers.
RUN_SETTINGS = (
    "chat_template",
    "chat_template_sha",
    "system_instruction",
    "system_instruction_sha",
    "fewshot_as_multiturn",
    "model_source",
    "max_length",
)
# Settings of a task's config that can change its requests or how its answers are read.
TASK_SETTINGS = ("generation_kwargs", "repeats", "num_fewshot", "fewshot_delimiter", "target_delimiter")


@dataclass(frozen=True)
class RunFiles:
    """One side of a comparison: its results file read, and the raw document for its settings."""

    side: str  # "baseline" or "candidate"
    run: Run
    document: dict

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def where(self) -> str:
        """The side and its results file, as messages name them: ``the baseline (a/results.json)``."""
        return f"the {self.side} ({self.run.path})"


def read_run(path: str | Path, side: str) -> RunFiles:
    """A run's results file, read and checked.

    Parameters
    ----------
    path : str or Path
        A results file, or a folder holding exactly one (searched recursively).
    side : str
        ``"baseline"`` or ``"candidate"``, for messages.

    Returns
    -------
    RunFiles
        The run and its raw results document.

    Raises
    ------
    ResultsError
        No results file, several under the folder, or a results file the reader refuses.
    """
    files = results_files([path])
    if len(files) > 1:
        raise ResultsError(
            f"{path}: {len(files)} results files under this folder ({', '.join(str(f) for f in files[:4])}"
            f"{', ...' if len(files) > 4 else ''}); the {side} is one run: pass its results_<date>.json"
        )
    (run,) = load_runs(files)
    try:
        document = loads_json(read_text(run.path, "results file"), str(run.path), parse_constant=float)
    except (ValueError, DuplicateKeyError) as error:  # load_runs read the same text: never reached
        raise ResultsError(f"{run.path}: {error}") from None
    return RunFiles(side, run, document)


def _date_of(results_path: Path) -> str | None:
    """The run's date as lm-eval names its files (``results_<date>.json``), or None."""
    name = results_path.name
    return name[len("results_") : -len(".json")] if name.startswith("results_") and name.endswith(".json") else None


def samples_path(side: RunFiles, task: str) -> Path:
    """The samples file of a task beside a run's results file.

    Parameters
    ----------
    side : RunFiles
        The run.
    task : str
        The task.

    Returns
    -------
    Path
        ``samples_<task>_<date>.jsonl`` of the results file's date, or the only samples file of the task
        in that folder.

    Raises
    ------
    ResultsError
        None, or several and none of the results file's date.
    """
    folder = side.path.parent
    found = sorted(p for p in folder.glob(f"samples_{task}_*.jsonl") if task_name_of(p) == task)
    date = _date_of(side.path)
    same_date = [p for p in found if date is not None and p.name == f"samples_{task}_{date}.jsonl"]
    if same_date:
        return same_date[0]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ResultsError(
            f"{side.where}: no samples file of {task} beside it (samples_{task}_<date>.jsonl), so its documents "
            "cannot be paired; re-run the evaluation with --log_samples, or leave the task out of the comparison"
        )
    raise ResultsError(
        f"{side.where}: {len(found)} samples files of {task} beside it ({', '.join(p.name for p in found)}) and "
        "none of the results file's date; keep each run in its own folder, with the samples it wrote"
    )


def read_samples(
    side: RunFiles, task: str, filter_name: str, metrics: Iterable[str] | None = None
) -> tuple[Path, list[tuple[int, dict]]]:
    """A task's logged documents under one filter, as (line, sample), from the run's samples file.

    Parameters
    ----------
    side : RunFiles
        The run.
    task : str
        The task (one of this package's).
    filter_name : str
        The filter its metrics are under (``none``, ``scored``...).
    metrics : iterable of str, optional
        The metrics whose per-document values the comparison will read; by default every metric the
        run's results file reports for the task under that filter.

    Returns
    -------
    (Path, list of (int, dict))
        The samples file and its samples of that filter.

    Raises
    ------
    ResultsError
        A samples file the reader refuses (a repeated document, a key given twice...), one whose
        documents are not as many as the results file evaluated, or a value of ``metrics`` that is
        not one the task writes (:func:`check_sample_values`).
    """
    path = samples_path(side, task)
    every = read_sample_lines(path, reported_metrics(side.document, task), task)
    samples = [(line, sample) for line, sample in every if sample.get("filter") == filter_name]
    evaluated = side.run.base(task).evaluated
    if evaluated is not None and len(samples) != evaluated:
        raise ResultsError(
            f"{path}: {len(samples)} documents under filter {filter_name}, but {side.where} evaluated {evaluated}, "
            "so these are not the samples of that results file; pass the samples file written with it"
        )
    if metrics is None:
        metrics = [metric.name for metric in side.run.tasks[task].values() if metric.filter == filter_name]
    check_sample_values(path, task, filter_name, samples, metrics)
    return path, samples


_FIX = "the line was edited or damaged: correct it, or use the file --log_samples wrote"


def _pair_shape(aggregation):
    """What a gap's or a range's per-document value is, as (its description, the check of its first
    item); None for an aggregation of other values."""
    from lm_eval_bias import stats

    if aggregation is stats.difference_of_means:
        return "[side, value] (side 0 or 1)", lambda side: side in (0, 1)
    if aggregation in (stats.range_of_means, stats.spread_of_means):
        return "[group, value] (group a text)", lambda group: isinstance(group, str)
    return None


def _is_finite_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_sample_values(path: Path, task: str, filter_name: str, samples, metrics: Iterable[str]) -> None:
    """Refuse a per-document value the comparison would read that the task never writes.

    A value must be null or absent (a document the task leaves out of the metric), a finite number
    within the metric's range for a metric the task averages (the check of ``lm-eval-bias recompute``:
    never true or false, which would count as 1 or 0), or ``[side, value]`` / ``[group, value]``
    with a finite number for a gap / a range or spread between groups. Text, a list where a number
    belongs, an object, NaN or Infinity would crash the task's aggregation or be read as another number.
    A metric the task aggregates otherwise is left to its own aggregation.

    Parameters
    ----------
    path : Path
        The samples file, as messages name it.
    task : str
        The task (one of this package's).
    filter_name : str
        The filter of the samples.
    samples : list of (int, dict)
        (line, sample) of that filter.
    metrics : iterable of str
        The metrics to check.

    Returns
    -------
    None; a value the task never writes raises :class:`ResultsError` naming the file, the line, the
    metric, the value and the fix.
    """
    from lm_eval.api.metrics import mean

    declared = declared_aggregations(task)
    for name in dict.fromkeys(metrics):
        aggregation = aggregations.aggregation_for(name, declared)
        shape = None if aggregation is mean else _pair_shape(aggregation)
        if aggregation is not mean and shape is None:
            continue
        for line, sample in samples:
            value = sample.get(name)
            if value is None:
                continue
            if aggregation is mean:
                check_document_value(path, task, line, name, filter_name, value, declared)
                if not _is_finite_number(value):
                    raise ResultsError(
                        f"{path}, line {line}: {name} ({filter_name}) is {json.dumps(value)[:60]}, where {task} writes "
                        f"a number (or null for a document it leaves out); {_FIX}"
                    )
                continue
            described, first_ok = shape
            if not (isinstance(value, list) and len(value) == 2 and _pair_item_ok(value[0], first_ok)) or not (
                _is_finite_number(value[1])
            ):
                raise ResultsError(
                    f"{path}, line {line}: {name} ({filter_name}) is {json.dumps(value)[:60]}, where {task} writes "
                    f"{described} with a finite number as the value, or null; {_FIX}"
                )


def _pair_item_ok(item, check) -> bool:
    """The first item of a gap's or a range's pair: never true or false (which would pass for 1 or 0)."""
    return not isinstance(item, bool) and check(item)


def _content_key(sample: dict) -> str:
    """A document's content as one text: its ``doc`` in NFC, keys sorted."""
    return json.dumps(canonical_value(sample["doc"]), sort_keys=True, ensure_ascii=False)


def _keys(samples: list[tuple[int, dict]], by_hash: bool) -> list[str]:
    if by_hash:
        return [sample["doc_hash"] for _, sample in samples]
    return [hashlib.sha256(_content_key(sample).encode("utf-8")).hexdigest() for _, sample in samples]


@dataclass(frozen=True)
class Pairing:
    """The matched documents of two runs of a task, in an order that does not depend on either run's."""

    pairs: tuple[tuple[dict, dict], ...]  # (baseline sample, candidate sample)
    n_baseline: int
    n_candidate: int
    repeated: int  # documents logged more than once in a run, paired by their order among identical ones

    @property
    def unpaired_baseline(self) -> int:
        """The baseline's documents with no partner in the candidate."""
        return self.n_baseline - len(self.pairs)

    @property
    def unpaired_candidate(self) -> int:
        """The candidate's documents with no partner in the baseline."""
        return self.n_candidate - len(self.pairs)

    @property
    def note(self) -> str:
        """What a reader must know about the pairing ("" when nothing): the documents of each run left
        without a partner, and documents logged more than once."""
        parts = []
        if self.unpaired_baseline or self.unpaired_candidate:
            parts.append(
                f"{self.unpaired_baseline} of the baseline's {self.n_baseline} documents and "
                f"{self.unpaired_candidate} of the candidate's {self.n_candidate} have no partner in the other "
                "run and are left out"
            )
        if self.repeated:
            parts.append(
                f"{self.repeated} documents appear more than once in a run: paired by their order among the "
                "identical documents"
            )
        return "; ".join(parts)


def pair_documents(
    baseline: list[tuple[int, dict]],
    candidate: list[tuple[int, dict]],
    where: str,
) -> Pairing:
    """Documents of two runs paired by what defines them, never by position.

    Parameters
    ----------
    baseline, candidate : list of (int, dict)
        Each run's samples of one task and filter, as (line, sample).
    where : str
        The task and the two samples files, for messages.

    Returns
    -------
    Pairing
        The pairs, sorted by the document's key (then its occurrence), so that reordering either run,
        or swapping them, pairs the same documents in the same order.

    Raises
    ------
    ResultsError
        A sample without ``doc_hash`` or ``doc``, or two samples with one ``doc_hash`` whose documents
        differ (an edited file).
    """
    everything = [sample for _, sample in baseline + candidate]
    by_hash = all(isinstance(sample.get("doc_hash"), str) for sample in everything)
    if not by_hash and not all("doc" in sample for sample in everything):
        raise ResultsError(
            f"{where}: a sample has neither doc_hash nor doc, so its document cannot be known by content; "
            "lm-eval writes both: use the samples files --log_samples wrote"
        )
    sides = []
    repeated = 0
    for samples in (baseline, candidate):
        seen: dict[str, int] = {}
        keyed = {}
        for key, (line, sample) in zip(_keys(samples, by_hash), samples):
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            keyed[(key, occurrence)] = (line, sample)
        repeated += sum(count - 1 for count in seen.values())
        sides.append(keyed)
    pairs = []
    for key in sorted(set(sides[0]) & set(sides[1])):
        (line_b, first), (line_c, second) = sides[0][key], sides[1][key]
        if by_hash and "doc" in first and "doc" in second and _content_key(first) != _content_key(second):
            raise ResultsError(
                f"{where}: doc_hash {key[0][:16]}... names another document in the baseline (line {line_b}) than in "
                f"the candidate (line {line_c}); a file was edited: use the samples files --log_samples wrote"
            )
        pairs.append((first, second))
    return Pairing(tuple(pairs), len(baseline), len(candidate), repeated)


def check_same_task(baseline: RunFiles, candidate: RunFiles, task: str) -> None:
    """Refuse two runs of a task whose versions or data differ.

    Parameters
    ----------
    baseline, candidate : RunFiles
        The runs.
    task : str
        A task of both.

    Returns
    -------
    None; a difference raises :class:`ResultsError` naming both runs and the fix.
    """
    versions = baseline.run.version(task), candidate.run.version(task)
    if None not in versions and versions[0] != versions[1]:
        raise ResultsError(
            f"task {task}: {baseline.where} ran version {versions[0]}, {candidate.where} version {versions[1]}; "
            "numbers of two versions of a task are not comparable: re-run the older one with the lm-eval-bias "
            "of the newer"
        )
    data = _data_text(baseline.run, task), _data_text(candidate.run, task)
    if None not in data and data[0] != data[1]:
        raise ResultsError(
            f"task {task}: {baseline.where} read {data[0]}, {candidate.where} read {data[1]}; the runs scored "
            "different data, so their documents are not one benchmark's: re-run one of them on the other's data "
            "file (--metadata data_file=... or data_dir=...)"
        )


def _data_text(run: Run, task: str) -> str | None:
    """The data a run of a task read, as messages show it; None where the run records none."""
    provenance = run.base(task).provenance
    if provenance is None:
        return None
    files = sorted(
        f"{record.get('name') or Path(str(record.get('path') or '?')).name} (sha256 "
        f"{str(record.get('sha256'))[:12]}, {_official_text(record.get('official'))})"
        for record in provenance["files"]
    )
    if not files:
        return f"data recorded as {_official_text(provenance.get('official'))}, without its files"
    return ", ".join(files)


def _official_text(official) -> str:
    return {True: "official", False: "not official"}.get(official, "official or not unknown")


def setting_differences(baseline: RunFiles, candidate: RunFiles, task: str) -> tuple[str, ...]:
    """The settings of two runs of a task that differ, each named with both values.

    Parameters
    ----------
    baseline, candidate : RunFiles
        The runs.
    task : str
        A task of both.

    Returns
    -------
    tuple of str
        ``"config.model_args.pretrained: 'a' (baseline) vs 'b' (candidate)"``, ...: the run's ``config``
        (model arguments, ``gen_kwargs``, seeds, ``limit``...), its chat template and system instruction,
        the task's generation settings and repeats, and the options that narrowed its documents or changed
        how they are scored; the task's version and data where one run records them and the other does
        not (two recorded differently are refused by :func:`check_same_task`).
    """
    sides = (_settings(baseline, task), _settings(candidate, task))
    differences = []
    for name in sorted(set(sides[0]) | set(sides[1])):
        values = [side.get(name, _ABSENT) for side in sides]
        if values[0] != values[1]:
            differences.append(
                f"{name}: {_setting_text(values[0])} (baseline) vs {_setting_text(values[1])} (candidate)"
            )
    return tuple(differences)


_ABSENT = object()


def _setting_text(value) -> str:
    return "absent" if value is _ABSENT else shown(value)


def _settings(side: RunFiles, task: str) -> dict[str, object]:
    """The settings of a run of a task, flattened to ``dotted.name -> value``: with the task's version
    and data where the run records them (both runs recording them differently is refused before)."""
    document = side.document
    found: dict[str, object] = {}
    for name, value in (("version", side.run.version(task)), ("data", _data_text(side.run, task))):
        if value is not None:
            found[f"{task} {name}"] = value
    config = document.get("config") if isinstance(document.get("config"), dict) else {}
    for key, value in config.items():
        if key == "model_args" and isinstance(value, str):
            from lm_eval.utils import simple_parse_args_string

            value = simple_parse_args_string(value)
        _flatten(found, f"config.{key}", value)
    for key in RUN_SETTINGS:
        if key in document:
            found[key] = document[key]
    configs = document.get("configs") if isinstance(document.get("configs"), dict) else {}
    task_config = configs.get(task) if isinstance(configs.get(task), dict) else {}
    for key in TASK_SETTINGS:
        if key in task_config:
            _flatten(found, f"configs.{task}.{key}", task_config[key])
    metadata = task_config.get("metadata") if isinstance(task_config.get("metadata"), dict) else {}
    provenance = metadata.get("lm_eval_bias_data") if isinstance(metadata.get("lm_eval_bias_data"), dict) else {}
    for key in ("selection", "settings"):
        _flatten(found, f"configs.{task}.metadata.lm_eval_bias_data.{key}", provenance.get(key) or {})
    return found


def _flatten(found: dict, name: str, value) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(found, f"{name}.{key}", item)
    else:
        found[name] = value
