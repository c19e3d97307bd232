"""Where a task of a run came from: our task folder, or a user's.

A task is ours by what it was built from (our task class, a YAML of our task folder), never by its
name: a user's own YAML on ``--include_path`` with one of our names (``task: winoqueer``) replaces
ours in lm-eval's index, and is run, reported and explained as any task of theirs.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from lm_eval_bias import lm_eval_features, task_kinds
from lm_eval_bias.benchmark_records import tasks_dir
from lm_eval_bias.task_metadata import shipped_configs


def _under_our_tasks(path) -> bool:
    """Whether the YAML file ``path`` is one of the package's own (in its task folder)."""
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to(Path(tasks_dir()).resolve())
    except (OSError, ValueError):
        return False


def _members(entry) -> list[str]:
    """The names a tag (in its index entry) or a group (in its config's task list) holds."""
    if getattr(getattr(entry, "kind", None), "name", "") == "TAG":
        return sorted(getattr(entry, "tags", ()) or ())
    listed = (getattr(entry, "cfg", None) or {}).get("task")
    return [item for item in listed if isinstance(item, str)] if isinstance(listed, list) else []


def _indexed_as_ours(name: str, index: dict, seen: set[str]) -> bool:
    """Whether ``name`` in a task index is one of our tasks, or a tag or group holding one.

    Decided by the file the index took the name from, never by the name: a user's YAML with
    ``task: winoqueer`` on ``--include_path`` replaces ours in the index and is theirs. A user's
    YAML that ``include:``s ours keeps our task class, so it is ours (a renamed copy).
    """
    entry = index.get(name)
    if entry is None or name in seen:
        return False
    seen.add(name)
    task_class = str((getattr(entry, "cfg", None) or {}).get("class", ""))
    if _under_our_tasks(getattr(entry, "yaml_path", None)) or "lm_eval_bias." in task_class:
        return True
    return any(_indexed_as_ours(member, index, seen) for member in _members(entry))


def _spec_name(spec) -> str:
    """How a message names a task spec: its name, a config's ``task``, a built task's name."""
    if isinstance(spec, str):
        return spec
    return str(spec.get("task")) if isinstance(spec, dict) else task_kinds.task_name(spec)


def ours_requested(specs, task_manager=None) -> list[str]:
    """The tasks among those a run was given that are, or hold, lm-eval-bias's tasks.

    Parameters
    ----------
    specs : list or None
        What ``simple_evaluate`` was given as ``tasks``: names (of tasks, groups or tags), task
        configs (a YAML file's, as lm-eval's CLI loads it) or built tasks.
    task_manager : lm-eval TaskManager, optional
        The index the names are looked up in; without one, the package's own task folder (the
        index lm-eval builds then holds no user's folder).

    Returns
    -------
    list of str
        The names of those of ``specs`` that are ours.
    """
    index = lm_eval_features.task_index(task_manager) if task_manager is not None else None
    if not isinstance(index, dict) or not index:
        index = _our_index()
    found = []
    for spec in specs if isinstance(specs, (list, tuple)) else ():
        if isinstance(spec, str):
            ours = _indexed_as_ours(spec, index, set())
        elif isinstance(spec, dict):
            # a config loaded with its functions resolved: its class is the class itself
            ours = getattr(spec.get("class"), "LM_EVAL_BIAS_TASK", False) is True
        else:
            ours = task_kinds.is_ours(spec)
        if ours:
            found.append(_spec_name(spec))
    return found


def _our_index() -> dict:
    """The task index of the package's own task folder alone."""
    from lm_eval.tasks import TaskManager

    return lm_eval_features.task_index(TaskManager(include_path=tasks_dir(), include_defaults=False))


def run_from_users_yaml(task: str, metadata) -> bool:
    """Whether a results entry named like one of our tasks was run from a user's own YAML file:
    lm-eval records the file a task was built from as its config's ``metadata.config_source``.

    A user's task on ``--include_path`` with one of our names (``task: winoqueer``) replaces ours
    in lm-eval's index, so its numbers are the user's task's, to be read as any other task's. The
    file may have been written on another machine, so ours is recognised by its place in a task
    folder (``.../tasks/winoqueer/winoqueer.yaml``), not by its full path.

    Parameters
    ----------
    task : str
        The entry's name.
    metadata : object
        Its config's ``metadata`` (``configs.<task>.metadata``), as the results file has it.

    Returns
    -------
    bool
        False where the file is ours, or not recorded (older lm-eval, a config given inline), or
        ``task`` is none of our task names.
    """
    source = metadata.get("config_source") if isinstance(metadata, dict) else None
    shipped = shipped_configs().get(task)
    if not isinstance(source, str) or not source.endswith((".yaml", ".yml")) or shipped is None:
        return False
    ours = shipped[0]
    written = PurePosixPath(source.replace("\\", "/")).parts
    return written[-3:] != ("tasks", ours.parent.name, ours.name)
