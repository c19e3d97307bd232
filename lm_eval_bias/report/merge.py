"""Shards of one run (``lm-eval-bias shards``, each run with ``--samples FILE --log_samples``) merged
into the run one machine would have written.

Each shard is an ordinary lm-eval output: a ``results_<date>.json`` with the
``samples_<task>_<date>.jsonl`` files beside it. The shards must be parts of one run: the same model
(``config.model``, ``config.model_args`` but for how it was run: device, batch size...), lm-eval
version, generation settings and seeds, and per task the same version, config (options included)
and data (the sha256 of every data file in ``metadata.lm_eval_bias_data``; where the file lay may
differ), and no document in two shards; anything else is refused naming the shard file and the
field. The samples are then put in the order one process logs them (per filter, by ``doc_id``) and
aggregated again with the task's own aggregations (:func:`lm_eval_bias.report.recompute.recompute`),
so every value, interval and p-value is the one a single run gives, and ``n-samples`` counts the
merged documents. Documents in no shard leave the merged run partial as any run is
(n-samples effective < original), and :class:`TaskMerge` says which.

The merge is exact given each document's logged values; a backend whose answers depend on the
requests batched together (``hf`` pads a batch, and a shard's batches hold other requests than the
whole run's) can move a log-likelihood's last float32 bits, as another ``--batch_size`` would.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from lm_eval_bias import task_metadata
from lm_eval_bias.report import recompute, results
from lm_eval_bias.report.values import ResultsError, shown

# Settings of the whole run every shard must share: what decides the model's answers and the numbers.
RUN_FIELDS = (
    "config.model",
    "config.model_args",
    "lm_eval_version",
    "config.gen_kwargs",
    "config.bootstrap_iters",
    "config.random_seed",
    "config.numpy_seed",
    "config.torch_seed",
    "config.fewshot_seed",
    "system_instruction_sha",
    "chat_template_sha",
    "fewshot_as_multiturn",
)
# Where a task's files lay on the machine that ran a shard: the data's sha256 says what they held.
_LOCATION_KEYS = ("data_file", "data_dir", "config_source")
_FUNCTION_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
_NOT_ONE_RUN = (
    "these shards are not parts of one run; merge only shards run with the same model, lm-eval version, "
    "settings, task version and config and data"
)


@dataclass(frozen=True)
class Shard:
    """One shard's results file and its parsed document."""

    path: Path
    document: dict


@dataclass(frozen=True)
class TaskMerge:
    """One task merged: its results entry and counts, its samples file's text, what no shard held."""

    task: str
    entry: dict
    n_samples: dict
    higher_is_better: dict
    config: dict
    samples_text: str
    task_hash: str | None
    missing: list[tuple[int, int]]


def read_shards(paths) -> list[Shard]:
    """Every results file named, or found under the folders named, as a :class:`Shard`.

    Parameters
    ----------
    paths : iterable of str or Path
        Results files or the shards' output folders.

    Returns
    -------
    list of Shard
        In the order :func:`lm_eval_bias.report.results.results_files` gives.

    Raises
    ------
    ResultsError
        A file that is missing, not JSON, has a key twice, or has no ``results`` and ``configs``; fewer
        than two files.
    """
    shards = []
    for path in results.results_files(paths):
        document = results.results_document(path, parse_constant=float)
        # Its numbers are not read (the merge computes them again from the samples): a shard's results
        # need only be lm-eval's, with the tasks' configs.
        if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
            raise ResultsError(f"{path}: not an lm-eval results file (no 'results' object)")
        if not isinstance(document.get("configs"), dict):
            raise ResultsError(f"{path}: no 'configs' object, which lm-eval writes; use the results file it wrote")
        shards.append(Shard(path, document))
    if len(shards) < 2:
        raise ResultsError(
            f"{', '.join(map(str, paths))}: {len(shards)} results file found; give the output folders (or "
            "results files) of at least two shards"
        )
    return shards


def samples_file(path: Path, task: str) -> Path:
    """The samples file lm-eval wrote beside results file ``path`` for ``task``.

    Parameters
    ----------
    path : Path
        ``results_<date>.json`` (or ``<name>_<date>.json`` from ``--output_path FILE.json``).
    task : str
        The task.

    Returns
    -------
    Path
        ``samples_<task>_<date>.jsonl`` in the same folder.

    Raises
    ------
    ResultsError
        No such file: the shard was run without ``--log_samples``, or its files were separated.
    """
    date = path.stem.rpartition("_")[2]
    found = path.parent / f"samples_{task}_{date}.jsonl"
    if not found.is_file():
        raise ResultsError(
            f"{path}: no samples file of {task} beside it ({found.name}), and the merge aggregates the documents "
            "again from it; run every shard with --log_samples and keep its samples beside its results"
        )
    return found


def field_value(document: dict, field: str):
    """A dotted field of a results document (None where absent), ``config.model_args`` as the
    arguments that make the model what it is (without those of how it was run)."""
    value = document
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if field == "config.model_args" and value is not None:
        from lm_eval.utils import simple_parse_args_string

        arguments = simple_parse_args_string(value) if isinstance(value, str) else dict(value)
        ignored = results.RUN_ONLY_MODEL_ARGS - {"pretrained"}
        value = {key: argument for key, argument in arguments.items() if key not in ignored}
    return value


def comparable_config(config: dict) -> dict:
    """A task's config as two shards of one run have it alike: without where its files lay
    (``metadata`` ``data_file``/``data_dir``/``config_source``, each data file's ``path``), and with
    functions named without the address they had in their process."""
    config = json.loads(_FUNCTION_ADDRESS.sub(">", json.dumps(config)))
    metadata = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    for key in _LOCATION_KEYS:
        metadata.pop(key, None)
    provenance = metadata.get("lm_eval_bias_data")
    files = provenance.get("files") if isinstance(provenance, dict) else None
    for record in files if isinstance(files, list) else []:
        if isinstance(record, dict):
            record.pop("path", None)
    return config


def first_difference(here, there, where: str) -> tuple[str, object, object] | None:
    """The first field (dotted, lists indexed) at which ``here`` and ``there`` differ, with both
    values; None where they are equal."""
    if isinstance(here, dict) and isinstance(there, dict):
        for key in sorted(set(here) | set(there), key=str):
            found = first_difference(here.get(key), there.get(key), f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(here, list) and isinstance(there, list) and len(here) == len(there):
        for index, (mine, theirs) in enumerate(zip(here, there)):
            found = first_difference(mine, theirs, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if here == there else (where, here, there)


def _refuse_difference(shard: Shard, reference: Shard, found) -> None:
    if found is not None:
        field, here, there = found
        raise ResultsError(
            f"{shard.path}: {field} is {shown(here)}, but {shown(there)} in {reference.path}: {_NOT_ONE_RUN}"
        )


def check_one_run(shards: list[Shard]) -> None:
    """Refuse shards that are not parts of one run.

    Parameters
    ----------
    shards : list of Shard
        The shards; each is compared with the first that holds what it holds.

    Raises
    ------
    ResultsError
        Naming the shard file and the first field that differs (:data:`RUN_FIELDS`; per task
        ``versions``, ``n-shot``, ``n-samples.<task>.original`` and ``configs``, data provenance first),
        or a shard run with ``--limit``.
    """
    reference = shards[0]
    for shard in shards:
        limit = field_value(shard.document, "config.limit")
        if limit is not None:
            raise ResultsError(
                f"{shard.path}: config.limit is {shown(limit)}: a shard evaluates the documents its --samples file "
                "names, and --limit would leave some out; re-run it with --samples and without --limit"
            )
        for field in RUN_FIELDS:
            here, there = field_value(shard.document, field), field_value(reference.document, field)
            _refuse_difference(shard, reference, first_difference(here, there, field))
    for task in tasks_of(shards):
        holding = [shard for shard in shards if task in shard.document["configs"]]
        for shard in holding[1:]:
            for field in (f"versions.{task}", f"n-shot.{task}", f"n-samples.{task}.original"):
                here, there = field_value(shard.document, field), field_value(holding[0].document, field)
                _refuse_difference(shard, holding[0], None if here == there else (field, here, there))
            here = comparable_config(shard.document["configs"][task])
            there = comparable_config(holding[0].document["configs"][task])
            provenance = ("metadata", "lm_eval_bias_data")
            where = f"configs.{task}.metadata.lm_eval_bias_data"
            _refuse_difference(
                shard, holding[0], first_difference(_at(here, provenance), _at(there, provenance), where)
            )
            _refuse_difference(shard, holding[0], first_difference(here, there, f"configs.{task}"))


def _at(document: dict, keys: tuple[str, ...]):
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document


def tasks_of(shards: list[Shard]) -> list[str]:
    """The tasks the shards ran (those with a config: a group's aggregate is not merged), in the
    order of their results."""
    return list(
        dict.fromkeys(
            task for shard in shards for task in shard.document["results"] if task in shard.document["configs"]
        )
    )


def missing_ranges(present: set[int], documents: int) -> list[tuple[int, int]]:
    """The documents in ``range(documents)`` not in ``present``, as inclusive (first, last) runs."""
    ranges: list[tuple[int, int]] = []
    for doc_id in range(documents):
        if doc_id in present:
            continue
        if ranges and ranges[-1][1] == doc_id - 1:
            ranges[-1] = (ranges[-1][0], doc_id)
        else:
            ranges.append((doc_id, doc_id))
    return ranges


def ranges_text(ranges: list[tuple[int, int]]) -> str:
    """``[(0, 9), (40, 40)]`` as ``0-9, 40``."""
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in ranges)


def _shard_samples(shard: Shard, task: str, documents: int) -> list[tuple[str, int, str, dict]]:
    """(filter, doc_id, line text, record) of every sample of ``task`` in one shard."""
    path = samples_file(shard.path, task)
    lines = results.read_text(path, "samples file").splitlines()
    found = []
    reported = recompute.reported_metrics(shard.document, task)
    for number, sample in recompute.read_sample_lines(path, reported, task):
        doc_id = sample.get("doc_id")
        if not isinstance(doc_id, int) or isinstance(doc_id, bool) or not 0 <= doc_id < documents:
            raise ResultsError(
                f"{path}, line {number}: doc_id is {shown(doc_id)}, but {task} has documents 0 to {documents - 1} "
                f"(n-samples original in {shard.path}); use the samples file lm-eval wrote with this results file"
            )
        found.append((sample.get("filter"), doc_id, lines[number - 1], sample))
    return found


def _refuse_overlap(task: str, per_shard: list[tuple[Shard, list[tuple[str, int, str, dict]]]]) -> None:
    first_shard: dict[int, Shard] = {}
    for shard, samples in per_shard:
        for doc_id in sorted({doc_id for _, doc_id, _, _ in samples}):
            if doc_id in first_shard:
                raise ResultsError(
                    f"{samples_file(shard.path, task)}: doc_id {doc_id} of {task} is also in "
                    f"{samples_file(first_shard[doc_id].path, task)}: the shards overlap, so the document would be "
                    "counted twice; give each shard its own documents (lm-eval-bias shards writes disjoint "
                    "--samples files)"
                )
        first_shard.update(dict.fromkeys({doc_id for _, doc_id, _, _ in samples}, shard))


def _evaluated(records: list[tuple[int, dict]]) -> int:
    """lm-eval's n-samples ``effective``: the most values any (metric, filter) has."""
    counts: dict[tuple[str, str], int] = {}
    for _, sample in records:
        for name in sample.get("metrics") or []:
            key = (name, sample.get("filter"))
            counts[key] = counts.get(key, 0) + 1
    return max(counts.values(), default=0)


def _task_hash(records: list[tuple[int, dict]]) -> str | None:
    """lm-eval's ``task_hashes`` entry of these samples, None where a sample lacks a hash."""
    from lm_eval.utils import hash_string

    keys = ("doc_hash", "prompt_hash", "target_hash")
    if not all(isinstance(sample.get(key), str) for _, sample in records for key in keys):
        return None
    return hash_string("".join(sample[key] for _, sample in records for key in keys))


def merge_task(task: str, shards: list[Shard]) -> TaskMerge:
    """One task's shards merged: samples in the order one process logs them, aggregated again.

    Parameters
    ----------
    task : str
        The task.
    shards : list of Shard
        The shards that ran it (checked by :func:`check_one_run`).

    Returns
    -------
    TaskMerge
        Its results entry (every metric recomputed), n-samples, higher_is_better, config, the merged
        samples file's text and the documents no shard held.

    Raises
    ------
    ResultsError
        A missing or unreadable samples file, a doc_id outside the task's documents, a document in two
        shards, or samples the task's aggregations refuse.
    """
    reference = shards[0].document
    documents = field_value(reference, f"n-samples.{task}.original")
    if not isinstance(documents, int) or isinstance(documents, bool) or documents < 0:
        raise ResultsError(
            f"{shards[0].path}: n-samples.{task}.original is {shown(documents)}, not the task's number of documents "
            "as lm-eval writes it, so the documents no shard holds cannot be known; use the results file lm-eval "
            "wrote"
        )
    per_shard = [(shard, _shard_samples(shard, task, documents)) for shard in shards]
    _refuse_overlap(task, per_shard)
    everything = [sample for _, samples in per_shard for sample in samples]
    # one process logs every document of its first filter, then of the next (lm-eval's evaluate)
    filters = list(dict.fromkeys(filter_name for filter_name, _, _, _ in everything))
    everything.sort(key=lambda sample: (filters.index(sample[0]), sample[1]))
    text = "".join(line + "\n" for _, _, line, _ in everything)
    # Read once per shard: the merged file's lines are those records, in this order.
    records = [(number, sample) for number, (_, _, _, sample) in enumerate(everything, start=1)]
    reported = {
        name
        for shard in shards
        for names in recompute.reported_metrics(shard.document, task).values()
        for name in names
    }
    numbers = recompute.recompute_samples(Path(f"samples_{task}_merged.jsonl"), records, task, reported=reported)
    bootstrap = field_value(reference, "config.bootstrap_iters")
    if not (isinstance(bootstrap, int) and bootstrap > 0):
        # lm-eval computes no standard error without bootstrap iterations
        numbers = {key: "N/A" if key.partition(",")[0].endswith("_stderr") else value for key, value in numbers.items()}
    evaluated = _evaluated(records)
    entry = {key: value for key, value in reference["results"][task].items() if "," not in key}
    if "sample_len" in entry:
        entry["sample_len"] = evaluated
    higher_is_better = {}
    for shard in shards:
        higher_is_better.update((shard.document.get("higher_is_better") or {}).get(task) or {})
    return TaskMerge(
        task,
        {**entry, **numbers},
        {"original": documents, "effective": evaluated},
        higher_is_better,
        reference["configs"][task],
        text,
        _task_hash(records),
        missing_ranges({doc_id for _, doc_id, _, _ in everything}, documents),
    )


def merged_document(shards: list[Shard], merges: list[TaskMerge]) -> dict:
    """The results document of the merged run: the first shard's, with every task's entry, counts
    and hashes merged, the earliest date, the shards' evaluation time summed, and
    ``lm_eval_bias_merge`` listing the shards and the documents none held."""
    document = copy.deepcopy(shards[0].document)
    document["results"] = {merge.task: merge.entry for merge in merges}
    document.pop("groups", None)
    document["group_subtasks"] = {}
    document["configs"] = dict(sorted((merge.task, merge.config) for merge in merges))
    holders = {merge.task: next(s for s in shards if merge.task in s.document["configs"]) for merge in merges}
    for key in ("versions", "n-shot"):
        document[key] = dict(
            sorted(
                (task, shard.document[key][task])
                for task, shard in holders.items()
                if task in shard.document.get(key, {})
            )
        )
    document["higher_is_better"] = dict(sorted((merge.task, merge.higher_is_better) for merge in merges))
    document["n-samples"] = {merge.task: merge.n_samples for merge in merges}
    dates = [shard.document["date"] for shard in shards if isinstance(shard.document.get("date"), (int, float))]
    if dates:
        document["date"] = min(dates)
    if "task_hashes" in document:
        document["task_hashes"] = {merge.task: merge.task_hash for merge in merges if merge.task_hash is not None}
    try:
        # the machine time the shards took together, as lm-eval writes a duration (text)
        seconds = sum(float(shard.document["total_evaluation_time_seconds"]) for shard in shards)
        document["total_evaluation_time_seconds"] = str(seconds)
    except (KeyError, TypeError, ValueError):
        document.pop("total_evaluation_time_seconds", None)
    document["lm_eval_bias_merge"] = {
        "shards": [str(shard.path) for shard in shards],
        "missing_documents": {merge.task: ranges_text(merge.missing) for merge in merges if merge.missing},
    }
    return document


def merge(paths, output_path: str | Path) -> tuple[list[tuple[Path, str]], list[TaskMerge]]:
    """Shards merged into one run's files, in lm-eval's layout.

    Parameters
    ----------
    paths : iterable of str or Path
        The shards' output folders or results files.
    output_path : str or Path
        The folder the merged run goes in (as lm-eval's ``--output_path``).

    Returns
    -------
    outputs : list of (Path, str)
        ``<output_path>/<model_name_sanitized>/results_<date>.json`` and a
        ``samples_<task>_<date>.jsonl`` per task, with their text, to be written all or none.
    merges : list of TaskMerge
        Each task merged, with the documents no shard held.

    Raises
    ------
    ResultsError
        Unreadable shards, shards of different runs (:func:`check_one_run`), overlapping documents.
    """
    from lm_eval.utils import handle_non_serializable, sanitize_model_name

    paths = list(paths)
    shards = read_shards(paths)
    check_one_run(shards)
    tasks = tasks_of(shards)
    if not tasks:
        raise ResultsError(f"{', '.join(map(str, paths))}: no task results in these shards, so nothing to merge")
    foreign = [task for task in tasks if task not in task_metadata.shipped_configs()]
    if foreign:
        holder = next(shard for shard in shards if foreign[0] in shard.document["configs"])
        raise ResultsError(
            f"{holder.path}: {foreign[0]} is not a task of lm-eval-bias, whose aggregations the merge knows only "
            "for its own tasks; shard only lm-eval-bias's tasks, and run others whole, in a run of their own"
        )
    merges = [merge_task(task, [s for s in shards if task in s.document["configs"]]) for task in tasks]
    document = merged_document(shards, merges)
    model = document.get("model_name_sanitized") or sanitize_model_name(
        str(document.get("model_name") or field_value(document, "config.model") or "model")
    )
    date = datetime.now().isoformat().replace(":", "-")
    folder = Path(output_path) / model
    outputs = [
        (
            folder / f"results_{date}.json",
            json.dumps(document, indent=2, default=handle_non_serializable, ensure_ascii=False),
        )
    ]
    outputs += [(folder / f"samples_{merge.task}_{date}.jsonl", merge.samples_text) for merge in merges]
    return outputs, merges


def missing_note(merge: TaskMerge) -> str | None:
    """What a partial merge lacks, e.g. ``winoqueer: 90 of 270 pairs are in no shard (doc_id 90-179);
    the merged run is partial``; None where every document is there."""
    if not merge.missing:
        return None
    identity = task_metadata.shipped_identity(merge.task)
    unit = identity.document_unit if identity is not None else "documents"
    count = sum(last - first + 1 for first, last in merge.missing)
    return (
        f"{merge.task}: {count:,} of {merge.n_samples['original']:,} {unit} are in no shard "
        f"(doc_id {ranges_text(merge.missing)}); the merged run is partial: run the missing documents with "
        "--samples and merge again"
    )
