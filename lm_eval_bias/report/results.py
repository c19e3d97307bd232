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

What is read lands in the classes of :mod:`.run` (:class:`Run`, :class:`Metric`, :class:`TaskBase`);
one number is read by :mod:`.values`, one task's entry by :mod:`.task_metrics`, and the data's
provenance is checked, and the reasons a run is partial found, by :mod:`.provenance`.
:class:`ResultsError`, :class:`Run`, :class:`Metric`, :class:`TaskBase` and :func:`filter_text` are
importable from here too.
"""

from __future__ import annotations

import math
from pathlib import Path

from lm_eval_bias import metric_keys, task_metadata, task_origin
from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.readers import DuplicateKeyError, loads_json
from lm_eval_bias.report.provenance import checked_provenance, partial_reasons
from lm_eval_bias.report.run import Metric, Run, TaskBase
from lm_eval_bias.report.task_metrics import parse_task_metrics
from lm_eval_bias.report.values import ResultsError, filter_text, is_number, shown
from lm_eval_bias.task_metadata import TaskIdentity

__all__ = [
    "Metric",
    "ResultsError",
    "Run",
    "TaskBase",
    "filter_text",
    "load_runs",
    "parse_run",
    "read_text",
    "require_task_results",
    "results_files",
]


def load_runs(paths) -> list[Run]:
    """Every results file named, or found in the folders named, read and checked.

    Parameters
    ----------
    paths : iterable of str or Path
        Results files, or folders searched for ``results_*.json``.

    Returns
    -------
    list of Run
        One per file, in the order :func:`results_files` gives.

    Raises
    ------
    ResultsError
        A file that is missing, not UTF-8, not JSON, has a key twice, or holds anything that would
        make a number wrong (see :func:`parse_run`).
    """
    return [parse_run(path, results_document(path)) for path in results_files(paths)]


def results_document(path: Path, parse_constant=None):
    """A results file's JSON, read strictly.

    Parameters
    ----------
    path : Path
        The results file.
    parse_constant : callable, optional
        How ``NaN`` and ``Infinity`` are read; by default as lm-eval writes them, anything else refused.

    Returns
    -------
    object
        The parsed JSON, not yet checked to be a results file.

    Raises
    ------
    ResultsError
        A file that is missing, not UTF-8, not JSON, or has a key twice.
    """
    text = read_text(path, "results file")
    try:
        return loads_json(text, str(path), parse_constant=parse_constant or _non_finite)
    except ValueError as error:
        raise ResultsError(f"{path}: not valid JSON: {error}") from None
    except DuplicateKeyError as error:
        raise ResultsError(str(error)) from None


def _non_finite(token: str) -> float:
    # lm-eval writes a bare NaN/Infinity for a number it could not compute; read it as one,
    # which the reader then shows as "N/A".
    return float(token)


def results_files(paths) -> list[Path]:
    """The results files named, or found under the folders named.

    Parameters
    ----------
    paths : iterable of str or Path
        Files, or folders searched (recursively) for ``results_*.json``.

    Returns
    -------
    list of Path
        The files, each once (a file named and also found in a folder is one run).

    Raises
    ------
    ResultsError
        A path that does not exist, or a folder without a results file.
    """
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


def read_text(path: str | Path, what: str) -> str:
    """A file's text, read as UTF-8 (a byte-order mark is allowed).

    Parameters
    ----------
    path : str or Path
        The file.
    what : str
        What the file is ("results file", "samples file"), for messages.

    Returns
    -------
    str
        Its text.

    Raises
    ------
    ResultsError
        A file that is missing, cannot be read, or is not UTF-8 (the message names the line).
    """
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


def require_task_results(runs: list[Run]) -> list[Run]:
    """The runs, when at least one holds a task's results.

    Parameters
    ----------
    runs : list of Run
        Runs as :func:`load_runs` returns them.

    Returns
    -------
    list of Run
        ``runs`` itself.

    Raises
    ------
    ResultsError
        When no run holds a task's results, so there is nothing to show.
    """
    if not any(run.tasks for run in runs):
        raise ResultsError(
            f"{', '.join(str(run.path) for run in runs)}: no task results in "
            f"{'this file' if len(runs) == 1 else 'these files'}, so nothing to show"
        )
    return runs


def parse_run(path: Path, document: dict) -> Run:
    """A results document as a :class:`Run`.

    Parameters
    ----------
    path : Path
        Where the document was read, named in every error.
    document : dict
        The parsed JSON of an lm-eval results file.

    Returns
    -------
    Run
        Its model, date, each task's metrics, what they rest on, identity and version.

    Raises
    ------
    ResultsError
        Anything that would make a number wrong: a malformed value, count, date, limit or
        provenance record, a number of one of our tasks outside its range, an estimate outside
        its interval, an entry renamed away from the task its config ran.
    """
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
        repeats, provenance, identity = _parse_task_config(path, document, task, entries)
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
        tasks[task] = parse_task_metrics(path, task, entries, higher.get(task) or {}, base, identity is not None)
    name, pretrained, distinct = _model_identity(document)
    return Run(path, name, date, tasks, bases, dict(document["results"]), identities, versions, pretrained, distinct)


def _parse_date(path: Path, document: dict) -> float | None:
    raw = document.get("date")
    if raw is None:
        return None
    if not is_number(raw) or not math.isfinite(raw):
        raise ResultsError(
            f"{path}: 'date' is {shown(raw)}, not a number (lm-eval writes the run's start "
            "time in seconds since 1970); correct it or remove it"
        )
    return float(raw)


def _parse_limit(path: Path, document: dict) -> float | None:
    config = document.get("config")
    raw = config.get("limit") if isinstance(config, dict) else None
    if raw is None:
        return None
    if not is_number(raw) or not math.isfinite(raw) or raw <= 0:
        raise ResultsError(
            f"{path}: config.limit is {shown(raw)}, not a positive number or null; correct it or re-run the evaluation"
        )
    return float(raw)


def _parse_document_counts(path: Path, document: dict, task: str) -> tuple[int | None, int | None]:
    """(evaluated, available) documents of a task, from lm-eval's ``n-samples``."""
    counts = (document.get("n-samples") or {}).get(task) if isinstance(document.get("n-samples"), dict) else None
    if counts is None:
        return None, None
    original = counts.get("original") if isinstance(counts, dict) else None
    effective = counts.get("effective") if isinstance(counts, dict) else None
    if not all(is_number(v) and v >= 0 and v == int(v) for v in (original, effective)) or effective > original:
        raise ResultsError(
            f'{path}: n-samples of task {task} is {shown(counts)}; expected {{"original": N, '
            '"effective": M} with whole numbers, M <= N; correct it or re-run the evaluation'
        )
    return int(effective), int(original)


def _parse_task_config(
    path: Path, document: dict, task: str, entries: dict
) -> tuple[int | None, dict | None, TaskIdentity | None]:
    """(repeats, provenance, identity) of a task, from ``configs`` (``entries``: its results entry)."""
    configs = document.get("configs")
    config = configs.get(task) if isinstance(configs, dict) else None
    if not isinstance(config, dict):
        _check_unconfigured_entry(path, document, task)
        return None, None, _identity(path, task, None, {}, entries)
    repeats = config.get("repeats")
    if repeats is not None and not (is_number(repeats) and repeats >= 1 and repeats == int(repeats)):
        raise ResultsError(
            f"{path}: configs.{task}.repeats is {shown(repeats)}, not a whole number >= 1; "
            "correct it or re-run the evaluation"
        )
    metadata = config.get("metadata")
    provenance = metadata.get("lm_eval_bias_data") if isinstance(metadata, dict) else None
    _check_entry_name(path, task, config.get("task"), f"configs.{task}.task")
    return (
        (int(repeats) if repeats is not None else None),
        checked_provenance(path, task, provenance),
        _identity(path, task, metadata, config, entries),
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


def _identity(path: Path, task: str, metadata, config: dict, entries: dict) -> TaskIdentity | None:
    """What the task is, from the metadata its YAML gave it (copied by lm-eval into ``configs``).

    Results files written before our tasks declared ``benchmark`` in their metadata have none:
    for them, by exact name and only where every metric the entry reports and its config lists is
    one of that task's (:func:`_check_shipped_metrics`), the identity of the package's own task of
    that name. An entry with one of our tasks' names whose metadata declares another benchmark is
    refused.
    """
    try:
        found = task_metadata.identity(metadata if isinstance(metadata, dict) else None, f"{path}: configs.{task}")
    except ConfigurationError as error:
        raise ResultsError(f"{error}; correct it or re-run the evaluation") from None
    # a user's own task of one of our names (from their --include_path) is theirs, not ours
    shipped = None if task_origin.run_from_users_yaml(task, metadata) else task_metadata.shipped_identity(task)
    if found is not None and shipped is not None and found.benchmark != shipped.benchmark:
        raise ResultsError(
            f"{path}: results entry {task!r} is named as our {shipped.benchmark} task, but its config "
            f"(configs.{task}.metadata.benchmark) says {found.benchmark!r}, so its numbers are not {task}'s; "
            "give the entry the name of the task that was run, or re-run the evaluation"
        )
    if found is None and shipped is not None:
        _check_shipped_metrics(path, task, config, entries)
    return found if found is not None else shipped


def _check_shipped_metrics(path: Path, task: str, config: dict, entries: dict) -> None:
    """An entry without an identity of its own is read as our task of its name only where its metrics
    are that task's: another task's entry renamed to one of our names and stripped of its metadata
    must not pass for ours, and be gated and reported as ours, by its name alone.

    Parameters
    ----------
    path : Path
        The results file, for the message.
    task : str
        The entry's name, one of our tasks'.
    config : dict
        Its config (``configs.<task>``; empty where there is none).
    entries : dict
        Its results entry (``"<metric>,<filter>"`` keys).

    Raises
    ------
    ResultsError
        A metric its config's ``metric_list`` names that is in none of the families of the metrics our
        task declares, or an entry none of whose metrics is in one.
    """
    declared = task_metadata.shipped_configs()[task][1].get("metric_list") or []
    heads = {_family_head(item["metric"]) for item in declared if isinstance(item, dict) and "metric" in item}

    def ours(name) -> bool:
        return isinstance(name, str) and any(name == head or name.startswith(head + "_") for head in heads)

    listed = config.get("metric_list")
    listed = [item.get("metric") for item in listed if isinstance(item, dict)] if isinstance(listed, list) else []
    reported = {key.partition(",")[0].removesuffix("_stderr") for key in entries if "," in key}
    foreign = sorted({str(name) for name in listed if not ours(name)})
    if foreign:
        found = (
            f"its config lists {_names_text(foreign)} (configs.{task}.metric_list), which our task {task} does "
            "not declare"
        )
    elif reported and not any(ours(name) for name in reported):
        found = f"it reports {_names_text(sorted(reported))} and none of our task {task}'s metrics"
    else:
        return
    raise ResultsError(
        f"{path}: results entry {task!r} has no identity of its own (configs.{task}.metadata has no 'benchmark') "
        f"and {found}, so it is another task's entry renamed to {task!r} and its numbers are not {task}'s; give "
        "the entry the name of the task that was run, or re-run the evaluation with lm-eval-bias, which records "
        "each task's identity"
    )


def _names_text(names: list[str]) -> str:
    """At most five names, then how many more."""
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _family_head(declared: str) -> str:
    """The metric whose family a ``metric_list`` name is in: ``bias_score`` for ``bias_score``,
    ``bias_score_<group>`` and ``bias_score_<group>_ci_lower``."""
    head = declared.partition(metric_keys.GROUP)[0].rstrip("_")
    return head.removesuffix(metric_keys.companion_suffix(head))


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
        # vLLM's prefix cache: lm-eval-bias turns it off for its log-likelihood tasks, which it can
        # change (vLLM issue #42019); generations are the same either way
        "enable_prefix_caching",
    }
)


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
