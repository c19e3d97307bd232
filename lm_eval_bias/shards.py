"""One run of a task split across machines: which documents each shard evaluates, and how.

``lm-eval-bias shards TASK --shards N --to DIR`` writes one ``{"<task>": [doc indices]}`` file per
shard, for lm-eval's own ``--samples FILE``: contiguous blocks of the task's documents, together
each document once. Each shard runs as an ordinary lm-eval run with ``--log_samples``;
``lm-eval-bias merge`` (:mod:`lm_eval_bias.report.merge`) joins their samples in document order and
aggregates them again, giving the numbers one run of the whole task gives.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from lm_eval_bias.errors import ConfigurationError


def task_documents(task: str, metadata: dict | None = None) -> dict[str, int]:
    """How many documents each task that ``task`` names has, built as a run builds it, but
    without loading its classifiers (:func:`lm_eval_bias.harness.counting_documents`).

    Parameters
    ----------
    task : str
        A task (or a group of tasks) lm-eval-bias's task manager knows.
    metadata : dict, optional
        The run's ``--metadata`` (``data_file``, ``data_dir``, options): they decide the documents.

    Returns
    -------
    dict
        Leaf task name -> its number of documents (``len(task.eval_docs)``, lm-eval's n-samples
        ``original``).

    Raises
    ------
    ConfigurationError
        A task the task manager does not know.
    """
    import lm_eval_bias
    from lm_eval_bias import harness

    manager = lm_eval_bias.task_manager(metadata=metadata)
    if task not in manager.all_tasks:
        raise ConfigurationError(f"{task!r} is not a task lm-eval or lm-eval-bias knows; see `lm-eval-bias ls tasks`")
    with harness.counting_documents():
        return {name: len(built.eval_docs) for name, built in manager.load([task])["tasks"].items()}


def contiguous_blocks(documents: int, shards: int) -> list[range]:
    """``documents`` indices cut into ``shards`` contiguous blocks whose sizes differ by at most one.

    Parameters
    ----------
    documents : int
        The task's number of documents.
    shards : int
        How many blocks.

    Returns
    -------
    list of range
        The blocks in order; the first ``documents % shards`` hold one document more.

    Raises
    ------
    ConfigurationError
        Fewer than one shard, or more shards than documents (a shard would evaluate nothing).
    """
    if shards < 1:
        raise ConfigurationError(f"--shards {shards}: give a whole number of shards, at least 1")
    if shards > documents:
        raise ConfigurationError(
            f"--shards {shards}: the task has {documents} documents, so a shard would have none; "
            f"give at most {documents} shards"
        )
    size, larger = divmod(documents, shards)
    starts = [index * size + min(index, larger) for index in range(shards + 1)]
    return [range(start, end) for start, end in zip(starts, starts[1:])]


def shard_file_name(task: str, shard: int, shards: int) -> str:
    """``<task>-shard-<k>-of-<N>.json``, shards counted from 1."""
    return f"{task}-shard-{shard}-of-{shards}.json"


def shard_files(task: str, documents: dict[str, int], shards: int, folder: str | Path) -> list[tuple[Path, str]]:
    """The ``--samples`` files of each shard: (path, text) with ``{"<leaf task>": [doc indices]}``.

    Parameters
    ----------
    task : str
        The task named on the command line (names the files).
    documents : dict
        Leaf task -> its documents (:func:`task_documents`).
    shards : int
        How many shards.
    folder : str or Path
        Where the files go.

    Returns
    -------
    list of (Path, str)
        One per shard, in order; each leaf task's documents are cut by :func:`contiguous_blocks`.
    """
    blocks = {name: contiguous_blocks(count, shards) for name, count in documents.items()}
    return [
        (
            Path(folder) / shard_file_name(task, shard + 1, shards),
            json.dumps({name: list(cut[shard]) for name, cut in blocks.items()}) + "\n",
        )
        for shard in range(shards)
    ]


def shard_command(task: str, samples_file: Path, output_path: str, metadata: str | None) -> str:
    """The command line that runs one shard, with the model left for the user to fill in.

    Parameters
    ----------
    task : str
        The task.
    samples_file : Path
        The shard's ``--samples`` file.
    output_path : str
        The shard's ``--output_path`` (its own folder: the merge reads one results file per shard).
    metadata : str or None
        The ``--metadata`` JSON the documents were counted with, passed on unchanged.

    Returns
    -------
    str
        ``lm-eval-bias --model MODEL --model_args MODEL_ARGS --tasks ... --log_samples``, shell-quoted.
    """
    words = ["lm-eval-bias", "--model", "MODEL", "--model_args", "MODEL_ARGS", "--tasks", task]
    words += ["--samples", str(samples_file), "--output_path", output_path, "--log_samples"]
    if metadata is not None:
        words += ["--metadata", metadata]
    return shlex.join(words)
