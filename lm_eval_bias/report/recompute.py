"""Recompute a task's results from its ``--log_samples`` file.

Each logged sample holds the per-document metric values our ``process_results``
returned, each once: the companions derived from a value are left out, and
derived again here, the results file beside the samples naming them
(``companions.completed_samples``). Aggregating them again with the task's own
aggregations (declared in its YAML, else chosen by metric name as
``SubgroupMetricsTask`` does) gives the same numbers as the run, with the same
seeds, without the model.

The samples must be the task's: its declared metrics (or its headline metric)
must be among the samples' metric names, and ``--task`` may not contradict the
file's name; a value an aggregation cannot take, or no document can have (true
or false, NaN, "N/A", a number outside the metric's range), is an error naming
the file, the line and the metric. Each document is counted once per filter: a
document on two lines of one filter (files joined with ``cat``; known by its
doc_id, its doc_hash or its doc), a key given twice in one line, or a metric
listed twice, is an error naming the lines.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias import aggregations, companions, harness, task_metadata, tasks_dir
from lm_eval_bias.metric_keys import COMPANION_RANGES, is_comparison, metric_range, range_text
from lm_eval_bias.readers import loads_json
from lm_eval_bias.report.results import read_text
from lm_eval_bias.report.values import ResultsError
from lm_eval_bias.text import nfc

_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d.:-]+)\.jsonl$")
logger = logging.getLogger("lm_eval_bias")
# How many metric names a message lists before "...".
_LISTED = 8


def task_name_of(path: Path) -> str | None:
    """The task in an lm-eval samples file name (``samples_<task>_<date>.jsonl``), or None."""
    match = _SAMPLES_NAME.match(path.name)
    return match["task"] if match else None


def read_sample_lines(
    path: str | Path, reported: dict[str, set] | None = None, task: str | None = None
) -> list[tuple[int, dict]]:
    """Every sample of an lm-eval ``samples_*.jsonl`` file (blank lines skipped).

    Parameters
    ----------
    path : str or Path
        The samples file.
    reported : dict, optional
        Filter -> the metrics the run's results file reports for the task under it
        (:func:`reported_metrics`), which name the companions a sample leaves out; without it, the
        samples are given as the file holds them.
    task : str, optional
        The task, where the file's name does not say it.

    Returns
    -------
    list of (int, dict)
        (line number, record) of each sample, with the companions it leaves out derived and listed
        in its ``metrics`` (``companions.completed_samples``) where ``reported`` is given.

    Raises
    ------
    ResultsError
        A file that cannot be read or holds no sample, a line that is not one JSON object, a key
        given twice, a document given twice (:func:`refuse_repeated_documents`), or a results file
        given where a samples file was asked for.
    """
    path = Path(path)
    text = read_text(path, "samples file")
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            # A key given twice in one sample (a metric's second value) is refused naming both.
            record = loads_json(line, str(path), first_line=number)
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
    refuse_repeated_documents(path, records)
    if reported is not None:
        _complete(path, records, reported, task or task_name_of(path))
    return records


def reported_metrics(document: dict, task: str) -> dict[str, set]:
    """Filter -> the names of the metrics a results file's JSON reports for ``task`` under it."""
    reported: dict[str, set] = {}
    for key in (document.get("results") or {}).get(task) or {}:
        name, _, filter_name = key.rpartition(",")
        if name and not name.endswith("_stderr"):
            reported.setdefault(filter_name, set()).add(name)
    return reported


def results_beside(path: Path) -> Path | None:
    """The ``results_<date>.json`` lm-eval wrote with the samples file ``path``, if it is beside it."""
    match = _SAMPLES_NAME.match(path.name)
    beside = path.parent / f"results_{match['date']}.json" if match else None
    return beside if beside is not None and beside.is_file() else None


def _complete(path: Path, records: list[tuple[int, dict]], reported: dict[str, set], task: str | None) -> None:
    """What each sample of one of our tasks leaves out, derived (``companions.completed_samples``): its
    companions, and the entries its task derives (the task class's ``derived_entries``).

    Raises
    ------
    ResultsError
        A sample that lacks what an entry it leaves out is derived from, naming its line.
    """
    from lm_eval_bias import stats

    identity = task_metadata.shipped_identity(task) if task else None
    if identity is None:
        return
    config = _task_config(task, resolve_functions=True)
    declared = _aggregations_of(config)
    clusters = bool(identity.cluster_fields)

    def clustered(name: str) -> bool:
        aggregation = aggregations.aggregation_for(name, declared)
        return clusters and getattr(aggregation, "func", aggregation) in stats.CLUSTER_AWARE

    derived_entries = getattr(config.get("class"), "derived_entries", None)
    if derived_entries is harness.SubgroupMetricsTask.derived_entries:
        derived_entries = None  # derives nothing: the documents need not be read for it
    try:
        companions.completed_samples(
            [record for _, record in records], reported, identity.cluster_id, clustered, derived_entries
        )
    except companions.NotDerivable as error:
        raise ResultsError(
            f"{path}, line {records[error.position][0]}: {error.reason}; the line was edited or damaged: correct "
            "it, or use the file --log_samples wrote"
        ) from None


def canonical_value(value):
    """``value`` with every text (keys too) in NFC, so that one document written in two Unicode forms is one."""
    if isinstance(value, str):
        return nfc(value)
    if isinstance(value, list):
        return [canonical_value(item) for item in value]
    if isinstance(value, dict):
        return {nfc(str(key)): canonical_value(item) for key, item in value.items()}
    return value


def _not_an_id(path: Path, line: int, name: str, value, what: str) -> ResultsError:
    return ResultsError(
        f"{path}, line {line}: {name} is {json.dumps(value)[:60]}, not {what} as lm-eval writes it, so the "
        "document it names cannot be known; the line was edited: correct it, or use the samples_<task>_<date>.jsonl "
        "that --log_samples wrote"
    )


def _identities_of(path: Path, line: int, sample: dict) -> list[tuple[str, str]]:
    """Every way a sample names its document, each checked for repeats on its own: its ``doc_id``
    (a whole number), its ``doc_hash`` and its ``doc`` (texts compared in NFC). lm-eval writes all
    three; a line that lacks the first two is still known by its content, and a line with only one
    of them cannot pass for another document under the other."""
    identities = []
    if "doc_id" in sample:
        doc_id = sample["doc_id"]
        # "0" or 0.0 would be another key than 0 and let a repeat through.
        if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 0:
            raise _not_an_id(path, line, "doc_id", doc_id, "a whole number >= 0")
        identities.append(("doc_id", str(doc_id)))
    if "doc_hash" in sample:
        if not isinstance(sample["doc_hash"], str):
            raise _not_an_id(path, line, "doc_hash", sample["doc_hash"], "text")
        identities.append(("doc_hash", sample["doc_hash"]))
    if "doc" in sample:
        identities.append(("doc", json.dumps(canonical_value(sample["doc"]), sort_keys=True, ensure_ascii=False)))
    if not identities:
        raise ResultsError(
            f"{path}, line {line}: the sample has no doc_id, doc_hash or doc, so a document given twice could not "
            "be told apart; lm-eval writes all three: use the samples_<task>_<date>.jsonl that --log_samples wrote"
        )
    return identities


def _where(name: str, value: str, sample: dict) -> str:
    """A document's identity as a message names it."""
    named = "its doc" if name == "doc" else f"{name} {value}"
    return named + (f", filter {sample['filter']}" if isinstance(sample.get("filter"), str) else "")


def refuse_repeated_documents(path: Path, records: list[tuple[int, dict]]) -> None:
    """Refuse a document logged twice under one filter.

    lm-eval writes one line per document and filter, with all of a document's generations
    (``repeats``) in that line's ``resps``; a second line for the same document and filter comes
    from joining samples files (per process, or of two runs) and would count the document twice,
    narrowing every interval. A document is the same when its ``doc_id``, its ``doc_hash`` or its
    ``doc`` (texts in NFC) is (see :func:`_identities_of`); a ``doc_id`` that is not a whole number
    is refused, as lm-eval never writes one.

    Parameters
    ----------
    path : Path
        The samples file, as messages name it.
    records : list of (int, dict)
        Its (line number, sample) pairs.

    Returns
    -------
    None; a repeated document raises :class:`ResultsError` naming both lines.
    """
    first_line: dict[tuple, tuple[int, dict]] = {}
    for line, sample in records:
        identities = _identities_of(path, line, sample)
        for name, value in identities:
            key = (name, value, json.dumps(sample.get("filter")))
            if key not in first_line:
                continue
            first, earlier = first_line[key]
            where = _where(name, value, sample)
            if name == "doc_id" and "doc_hash" in sample and earlier.get("doc_hash") != sample["doc_hash"]:
                raise ResultsError(
                    f"{path}, line {line}: {where} is also on line {first}, with another document (its doc_hash "
                    "differs): samples of two runs joined into one file; pass one run's samples_<task>_<date>.jsonl "
                    "as --log_samples wrote it"
                )
            raise ResultsError(
                f"{path}, line {line}: {where} repeats line {first}, so the document would be counted twice; "
                "lm-eval writes each document once per filter: pass the samples_<task>_<date>.jsonl that "
                "--log_samples wrote, and join files (e.g. with cat) only where they hold different documents"
            )
        for name, value in identities:
            first_line[(name, value, json.dumps(sample.get("filter")))] = (line, sample)


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


def _task_config(task: str, resolve_functions: bool = False) -> dict:
    """The task's YAML in this package, as lm-eval loads it (``include`` resolved)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    if task in task_metadata.shipped_configs():
        path, config = task_metadata.shipped_configs()[task]
        return load_yaml(path, resolve_func=True) if resolve_functions else copy.deepcopy(config)
    raise ResultsError(
        f"{task!r} is not a task of lm-eval-bias (looked in {tasks_dir()}); pass --task with one of its tasks"
    )


def declared_aggregations(task: str) -> dict:
    """How the task's YAML in this package aggregates each metric.

    Parameters
    ----------
    task : str
        One of this package's tasks.

    Returns
    -------
    dict
        metric -> aggregation function (lm-eval's registered one where the YAML names it).

    Raises
    ------
    ResultsError
        A task that is not one of this package's.
    """
    return _aggregations_of(_task_config(task, resolve_functions=True))


def _aggregations_of(config: dict) -> dict:
    """Metric -> aggregation function of a task's YAML, loaded with its functions resolved."""
    from lm_eval.api.registry import get_aggregation

    declared = {}
    for entry in config.get("metric_list", []):
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


def _other_task_fix(task: str, named_in_file: bool) -> str:
    """The fix for samples that are not ``task``'s, by where ``task`` came from: ``--task``, or the
    file's name (where ``--task`` would only contradict the name)."""
    if named_in_file:
        return (
            f"the file's name says {task}: pass the samples file of {task}, or, if this file was renamed, "
            "give it back its own task's name (samples_<task>_<date>.jsonl)"
        )
    return "pass the task they are of with --task"


def _check_output_type(path: Path, task: str, line: int, sample: dict, named_in_file: bool = False) -> None:
    """Samples of a log-likelihood task given for a generation task, or the other way round,
    share metric names (consistency, ...) but not their meaning."""
    logliks = _answers_are_logliks(sample)
    scores = _task_config(task).get("output_type", "generate_until") != "generate_until"
    if logliks is None or logliks == scores:
        return
    held = "log-likelihoods" if logliks else "generated text"
    wanted = "scores log-likelihoods" if scores else "generates text"
    raise ResultsError(
        f"{path}, line {line}: this sample's resps hold {held}, but {task} {wanted}, so these are another "
        f"task's samples; {_other_task_fix(task, named_in_file)}"
    )


def _listing(names) -> str:
    names = sorted(names)
    return ", ".join(names[:_LISTED]) + (f" ... ({len(names)} in all)" if len(names) > _LISTED else "")


def _task_of(path: Path, task: str | None) -> str:
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


def _check_samples_are_of(
    path: Path, task: str, names: set[str], declared: dict, named_in_file: bool = False, reported: Iterable[str] = ()
) -> None:
    """The samples must hold the task's declared metrics, its headline metric or a metric its results
    file reports (a run whose every reply was empty reports only ``empty_rate``)."""
    # A samples file has no metadata: the headline metric of the package's task of that name.
    shipped = task_metadata.shipped_identity(task)
    expected = set(declared) | ({shipped.headline_metric} if shipped is not None else set()) | set(reported)
    if expected and not expected & names:
        raise ResultsError(
            f"{path}: these are not samples of {task}: they hold the metrics {_listing(names) or 'none'}, and "
            f"{task} reports {_listing(expected)}; {_other_task_fix(task, named_in_file)}"
        )


def _refuse_listed_twice(path: Path, line: int, names: list) -> None:
    """A metric named twice in a sample's ``metrics`` would have its one value counted twice."""
    seen = set()
    for name in names:
        if name in seen:
            raise ResultsError(
                f"{path}, line {line}: the sample's metrics list names {name} twice, so its value would be counted "
                "twice; lm-eval lists each metric once: the line was edited: correct it, or use the file "
                "--log_samples wrote"
            )
        seen.add(name)


def _document_range(name: str, declared: dict) -> tuple[float, float] | None:
    """The range of one document's value of a metric: its counts are at least 0, and a metric the
    task averages (and its interval's ends and design effect, whose per-document values are the
    metric's) takes values in the metric's range; None where a document's value is no number of that range (a
    comparison's (group, value) pair, a statistic the task computes otherwise)."""
    from lm_eval.api.metrics import mean

    for suffix in ("_n_samples", "_n"):
        if name.endswith(suffix):
            return COMPANION_RANGES[suffix]
    if is_comparison(name):
        return None
    base = next((name[: -len(end)] for end in ("_ci_lower", "_ci_upper", "_design_effect") if name.endswith(end)), name)
    if aggregations.aggregation_for(base, declared) is not mean:
        return None
    return metric_range(base)


def check_document_value(path: Path, task: str, line: int, name: str, filter_name: str, value, declared: dict) -> None:
    """One document's value of a metric, as our ``process_results`` write it: never true or false
    (which would count as 1 or 0), never NaN, infinite or "N/A" (a document always has a value; only
    an aggregate may be N/A), and within the metric's range (see :func:`_document_range`).

    Parameters
    ----------
    path, task, line, name, filter_name
        Where the value stands, for the message: the samples file, its task, the line, the metric and
        its filter.
    value
        The logged value.
    declared : dict
        The task's declared aggregations (:func:`declared_aggregations`).

    Raises
    ------
    ResultsError
        A value no task of ours writes, naming the file, line, metric and the fix.
    """
    where = f"{path}, line {line}: {name} ({filter_name}) is {json.dumps(value)[:60]}"
    fix = "the line was edited or damaged: correct it, or use the file --log_samples wrote"
    if isinstance(value, bool):
        raise ResultsError(f"{where}, where {task} writes a number (true or false would count as 1 or 0); {fix}")
    if value == "N/A" or (isinstance(value, float) and not math.isfinite(value)):
        raise ResultsError(
            f"{where}, where {task} writes a finite number for every document (N/A is only ever a result); {fix}"
        )
    # a mean's value with its document's cluster beside it (lm_eval_bias.companions)
    number = value[0] if isinstance(value, list) and len(value) == 2 else value
    plain = isinstance(number, (int, float)) and not isinstance(number, bool)
    bounds = _document_range(name, declared) if plain else None
    if bounds is not None and not bounds[0] <= number <= bounds[1]:
        raise ResultsError(f"{where}, outside its range, {range_text(bounds)}; {fix}")


def recompute(samples_path: str | Path, task: str | None = None) -> dict:
    """A task's results again from its ``--log_samples`` file.

    Parameters
    ----------
    samples_path : str or Path
        The ``samples_<task>_<date>.jsonl`` file.
    task : str, optional
        The task, where the file's name does not say it (it may not contradict the name).

    Returns
    -------
    dict
        ``{"<metric>,<filter>": value, "<metric>_stderr,<filter>": stderr}``.
    """
    from lm_eval_bias.report.results import results_document

    path = Path(samples_path)
    named, beside = task or task_name_of(path), results_beside(path)
    reported = reported_metrics(results_document(beside), named) if beside is not None and named else None
    samples = read_sample_lines(path, reported, named)
    names = {name for metrics in (reported or {}).values() for name in metrics}
    return recompute_samples(path, samples, task, companions_named=reported is not None, reported=names)


def recompute_samples(
    path: Path,
    samples: list[tuple[int, dict]],
    task: str | None = None,
    companions_named: bool = True,
    reported: Iterable[str] = (),
) -> dict:
    """:func:`recompute` of samples already read (as :func:`read_sample_lines` gives them).

    Parameters
    ----------
    path : Path
        The samples file they are the lines of, as messages name it.
    samples : list of (int, dict)
        (line number, record) of each sample.
    task : str, optional
        As for :func:`recompute`.
    companions_named : bool
        Whether the samples were read with the metrics their results file reports (``reported`` of
        :func:`read_sample_lines`); samples that leave out companions are refused without them.
    reported : iterable of str
        The metric names the run's results file reports for the task: samples holding only those
        are the task's too.

    Returns
    -------
    dict
        As :func:`recompute`.
    """
    named_in_file = task is None
    task = _task_of(path, task)
    declared = declared_aggregations(task)
    values: dict[tuple[str, str], list[tuple[int, object]]] = {}
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
        _refuse_listed_twice(path, line_number, names)
        for name in names:
            values.setdefault((name, filter_name), []).append((line_number, sample[name]))
    _check_samples_are_of(path, task, {name for name, _ in values}, declared, named_in_file, reported)
    _check_output_type(path, task, *samples[0], named_in_file)
    if not companions_named:
        _refuse_left_out_companions(path, task, {name for name, _ in values})
    for (name, filter_name), lines_and_items in values.items():
        for line_number, item in lines_and_items:
            check_document_value(path, task, line_number, name, filter_name, item, declared)
    results = {}
    for (name, filter_name), lines_and_items in values.items():
        aggregation = aggregations.aggregation_for(name, declared)
        metric = _Metric(path, task, name, filter_name, named_in_file)
        value, stderr = _aggregate(metric, aggregation, lines_and_items)
        results[f"{name},{filter_name}"] = value
        results[f"{name}_stderr,{filter_name}"] = stderr
    return results


def _refuse_left_out_companions(path: Path, task: str, names: set) -> None:
    """Samples that leave out the companions derived from each value (``companions``), with no results
    file beside them to name those companions: every task of ours reports some interval."""
    if any(name.endswith("_ci_lower") for name in names):
        return
    match = _SAMPLES_NAME.match(path.name)
    results_name = f"results_{match['date']}.json" if match else "results_<date>.json"
    raise ResultsError(
        f"{path}: its documents leave out the intervals, counts and p-values {task} derives from each value, "
        f"which the results file lm-eval wrote with them names ({results_name}, not beside it); keep the "
        "samples file beside that results file"
    )


@dataclass(frozen=True)
class _Metric:
    """One metric of one samples file, as messages name it."""

    path: Path
    task: str
    name: str
    filter_name: str
    named_in_file: bool


def _kind(value) -> str:
    """A value's kind, as a message names it ("N/A" is refused before: see :func:`check_document_value`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    if isinstance(value, str):
        return "text"
    return {list: "a list", dict: "an object", bool: "true or false", type(None): "null"}.get(type(value), "a value")


def _odd_one_out(lines_and_items: list[tuple[int, object]]) -> tuple[int, object, int, str] | None:
    """The first value whose kind differs from the most common kind of this metric's values, as (its
    line, it, a line of the common kind, that kind); None where all are of one kind."""
    kinds = [_kind(item) for _, item in lines_and_items]
    common = max(set(kinds), key=kinds.count)
    if kinds.count(common) == len(kinds):
        return None
    typical = next(line for (line, _), kind in zip(lines_and_items, kinds) if kind == common)
    line, item = next((entry for entry, kind in zip(lines_and_items, kinds) if kind != common))
    return line, item, typical, common


def _aggregate(metric: _Metric, aggregation, lines_and_items: list[tuple[int, object]]):
    """(value, stderr) of one metric, "N/A" where the statistic cannot be computed on these documents.

    The task's own aggregations reject values of another shape (a number where a
    (group, value) pair belongs, text where a number belongs) with a TypeError
    or a lookup error: one sample unlike the others means an edited or damaged
    line; all of them unlike what the task writes means another task's samples.
    """
    from lm_eval.api.metrics import mean, mean_stderr

    odd = _odd_one_out(lines_and_items)
    if odd is not None and odd[3] == "a number" and _kind(odd[1]) == "text":
        # Checked before aggregating: an aggregation that converts values could read "high" as an
        # error of the statistic ("N/A") rather than of the file.
        raise _cannot_aggregate(metric, lines_and_items, None)
    items = [item for _, item in lines_and_items]
    try:
        try:
            value = aggregation(items)
        except (ValueError, ArithmeticError) as error:  # e.g. a gap with one side missing, as the run says
            logger.warning("%s: %s is not reported: %s", metric.task, metric.name, error)
            value = "N/A"
        stderr = mean_stderr(items) if aggregation is mean and len(items) > 1 else "N/A"
    except (TypeError, KeyError, IndexError, AttributeError) as error:
        raise _cannot_aggregate(metric, lines_and_items, error) from None
    return value, stderr


def _cannot_aggregate(
    metric: _Metric, lines_and_items: list[tuple[int, object]], error: Exception | None
) -> ResultsError:
    """Where the values an aggregation refused are, and the fix that fits: one line, or the whole file."""
    where = f"{metric.path}, line {{line}}: {metric.name} ({metric.filter_name})"
    odd = _odd_one_out(lines_and_items)
    if odd is not None:
        line, item, typical, kind = odd
        return ResultsError(
            where.format(line=line)
            + f" is {_kind(item)}, {json.dumps(item)[:60]}, where the other samples hold {kind} (as on line "
            f"{typical}), so {metric.task} cannot aggregate it: the line was edited or damaged; correct it, or "
            "use the file --log_samples wrote"
        )
    line, item = lines_and_items[0]
    return ResultsError(
        where.format(line=line)
        + f": cannot aggregate it as {metric.task} does: {type(error).__name__}: {error} (value: "
        f"{json.dumps(item)[:60]}, and every sample holds {_kind(item)}); the samples do not hold what "
        f"{metric.task} writes: {_other_task_fix(metric.task, metric.named_in_file)}"
    )
