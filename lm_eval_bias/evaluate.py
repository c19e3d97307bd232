"""Our ``simple_evaluate``: lm-eval's, with every task built and every check done before the
model loads.

It builds each task first (options, data, classifiers), then checks the ``--metadata`` keys, the
backend (by its name), the generation settings and ``--limit``, and reports every problem at
once (:class:`~lm_eval_bias.errors.PreflightError`). Then it installs the request gate
(:func:`lm_eval_bias.adapters.install_request_gate`) and hands the built tasks to lm-eval.
"""

from __future__ import annotations

import inspect
import logging

from lm_eval_bias import adapters, backend_options, backends, checks, lm_eval_features, options, task_metadata
from lm_eval_bias.errors import ConfigurationError, LmEvalBiasError, PreflightError
from lm_eval_bias.task_kinds import is_ours, task_name

logger = logging.getLogger("lm_eval_bias")

# Options of ours that are also model arguments of some lm-eval backend (vLLM's seed).
MODEL_ARG_OPTIONS = frozenset({"seed"})


def _metadata_not_in(task_manager, metadata) -> list[str]:
    """lm-eval gives tasks the task manager's metadata only: options passed beside it are lost."""
    given = getattr(task_manager, "metadata", None) or {}
    lost = sorted(key for key, value in (metadata or {}).items() if given.get(key) != value)
    if not lost:
        return []
    return [
        f"metadata: {', '.join(map(repr, lost))} would not reach the tasks: lm-eval gives them only the "
        "metadata of the task_manager passed with them. Fix: pass the options to "
        "lm_eval_bias.task_manager(metadata=...) instead"
    ]


def _prefix_caching_off(model, model_args, tasks):
    """``model_args`` with ``enable_prefix_caching=False`` added for ``--model vllm`` when the run has
    log-likelihood tasks of ours and the model arguments leave the setting out (vLLM turns it on by
    default; :func:`lm_eval_bias.checks.check_prefix_caching` says why and refuses it set on). A
    later key wins in lm-eval's ``key=value,...`` text, so an ``enable_prefix_caching=None`` there
    is overridden too."""
    names = checks.loglikelihood_tasks(tasks)
    given = backend_options.model_args_dict(model_args)
    # None is vLLM's own default (on), as if left out
    if (
        backend_options.backend_name(model) != "vllm"
        or not names
        or not checks.left_to_the_backend(given.get("enable_prefix_caching"))
    ):
        return model_args
    logger.info(
        "--model vllm: enable_prefix_caching=False added to the model arguments for %s (%s: prompt "
        "log-probabilities can depend on the order of the requests when prefix caching is on); the run's "
        "generations are the same, without prefix caching's speed-up",
        ", ".join(names),
        checks.VLLM_PREFIX_CACHING_ISSUE,
    )
    if isinstance(model_args, dict):
        return {**model_args, "enable_prefix_caching": False}
    text = (model_args or "").strip().rstrip(",")
    return f"{text},enable_prefix_caching=False" if text else "enable_prefix_caching=False"


def _build(task_manager, spec):
    """One task spec built (data read, classifiers loaded), as lm-eval would build it."""
    if hasattr(task_manager, "_load_spec"):
        # What TaskManager.load does for each spec of its list (lm-eval 0.4.13), keeping a
        # group a group.
        return task_manager._load_spec(spec)
    return list(task_manager.load([spec])["tasks"].values())


def _leaves(built) -> list:
    from lm_eval.api.group import Group

    items = built if isinstance(built, list) else [built]
    leaves = []
    for item in items:
        leaves += list(item.get_all_tasks()) if isinstance(item, Group) else [item]
    return leaves


def _tags_expanded(task_manager, specs) -> list:
    """Specs with each tag (``lm_eval_bias``) replaced by its tasks, so that one task's problem
    does not hide the others'."""
    expanded = []
    for spec in specs:
        entry = lm_eval_features.index_entry(task_manager, spec) if isinstance(spec, str) else None
        if entry is not None and getattr(entry.kind, "name", None) == "TAG":
            expanded += sorted(entry.tags)
        else:
            expanded.append(spec)
    return expanded


def build_tasks(task_manager, tasks) -> tuple[list, list, list[str]]:
    """Build every spec, collecting our errors instead of stopping at the first.

    Returns (built specs for lm-eval, leaf tasks, problems). The same problem met by several
    tasks (one missing classifier checkpoint, say) is reported once, naming them all.
    """
    built, leaves = [], []
    failed: dict[str, list[str]] = {}  # message -> the specs that met it
    for spec in _tags_expanded(task_manager, tasks):
        try:
            item = spec if not isinstance(spec, (str, dict)) else _build(task_manager, spec)
        except LmEvalBiasError as error:
            name = spec if isinstance(spec, str) else str(spec.get("task"))
            for message in error.problems if isinstance(error, PreflightError) else [str(error)]:
                failed.setdefault(message, []).append(name)
            continue
        built += item if isinstance(item, list) else [item]
        leaves += _leaves(item)
    problems = []
    for message, specs in failed.items():
        named = ", ".join(specs)
        problems.append(message if len(specs) == 1 and message.startswith(f"{named}:") else f"{named}: {message}")
    return built, leaves, problems


class BuiltTasks:
    """The task manager lm-eval's ``simple_evaluate`` is given with tasks built already, where lm-eval's
    own loads task names and configs only (0.5.0.dev1's ``TaskManager.load`` refuses a built task; 0.4.13's
    gives it back as it is): its ``load`` gives ``loaded``, what lm-eval's would have built of the specs;
    everything else is the wrapped task manager's."""

    def __init__(self, task_manager, loaded: dict):
        self._task_manager, self._loaded = task_manager, loaded

    def load(self, specs, overrides=None) -> dict:
        return self._loaded

    def __getattr__(self, name):
        return getattr(self._task_manager, name)


def handed_over(task_manager, built: list):
    """The task manager to give lm-eval with the ``built`` tasks (and groups): itself where its ``load``
    takes built tasks, else a :class:`BuiltTasks` that gives them as lm-eval 0.5.0.dev1's ``load``
    collects what it builds (each task under its qualified name, each group and its children).

    Parameters
    ----------
    task_manager : lm-eval TaskManager
        The task manager that built them.
    built : list
        Built tasks and groups (:func:`build_tasks`).

    Returns
    -------
    lm-eval TaskManager or BuiltTasks
    """
    from lm_eval.api.group import Group

    if lm_eval_features.loads_built_tasks(task_manager, built):
        return task_manager
    tasks, groups = {}, {}
    for item in built:
        if isinstance(item, Group):
            groups[item.name] = item
            groups.update((group.name, group) for group in item.get_all_groups())
            tasks.update((task._qualified_name, task) for task in item.get_all_tasks())
        else:
            tasks[item._qualified_name] = item
    group_map = {group.name: group.child_names for group in groups.values()}
    return BuiltTasks(task_manager, {"tasks": tasks, "groups": groups, "group_map": group_map})


def _is_task_spec(task) -> bool:
    """A task name, or a complete task config (lm-eval crashes deep inside on an incomplete one)."""
    if isinstance(task, dict):
        return isinstance(task.get("task"), str) and bool(task.get("dataset_path") or task.get("custom_dataset"))
    return isinstance(task, str)


def simple_evaluate(model, model_args=None, tasks=None, *args, task_manager=None, metadata=None, limit=None, **kwargs):
    """``lm_eval.simple_evaluate`` with our tasks indexed and every check done before the model
    loads.

    Parameters
    ----------
    model, model_args, tasks, task_manager, metadata, limit, **kwargs
        As for ``lm_eval.simple_evaluate``. Without a ``task_manager`` one that indexes our tasks
        is made, with ``metadata`` (and ``model_args``) as its metadata.

    Returns
    -------
    dict
        lm-eval's results.

    Raises
    ------
    BackendUnavailableError
        Before anything is built, a hub model not in the local cache while downloads are off; in
        place of lm-eval's error, a model that fails to load for that reason, an unreachable hub or
        a backend package that is not installed (``--model vllm``).
    PreflightError
        Every problem found before the model loads: each task's options, data and
        classifiers, the ``--metadata`` keys, the backend and ``limit``.
    """
    import lm_eval.evaluator

    import lm_eval_bias
    from lm_eval_bias import cache_key

    # By name, so that a use_cache (or gen_kwargs, ...) given by position is checked like the others.
    by_position = dict(zip(list(inspect.signature(lm_eval.evaluator.simple_evaluate).parameters)[3:], args))
    if set(by_position) & set(kwargs):
        raise TypeError(f"simple_evaluate() got multiple values for {sorted(set(by_position) & set(kwargs))}")
    kwargs.update(by_position)
    args = ()
    given_model_args = backend_options.model_args_dict(model_args)
    # Before anything is built: a model that cannot be had here fails on its own, in one line.
    uncached = backends.uncached_model(model, given_model_args)
    if uncached is not None:
        raise uncached
    unwritable = cache_key.unwritable_run_paths(kwargs)
    if unwritable:
        raise PreflightError(unwritable)

    for problem in checks.check_metadata_mapping(metadata, "simple_evaluate"):
        raise ConfigurationError(problem)
    if tasks is not None and (not isinstance(tasks, (list, tuple)) or not all(map(_is_task_spec, tasks))):
        raise ConfigurationError(
            f"simple_evaluate(tasks=...): expected a list of task names, e.g. "
            f"{[task_metadata.example_task()]} (or complete task configs), got {tasks!r}"[:300]
        )
    problems = []
    if task_manager is None:
        # as lm-eval's CLI does: the model arguments merged into the metadata every task receives
        task_manager = lm_eval_bias.task_manager(metadata={**given_model_args, **(metadata or {})})
    else:
        problems += _metadata_not_in(task_manager, metadata)
    # Model arguments go to the model: one of our options there crashes the model's loader.
    misplaced = sorted(set(given_model_args) & options.known_names() - MODEL_ARG_OPTIONS)
    problems += [
        f"--model_args: {key!r} is an option of lm-eval-bias's tasks, not a model argument. Fix: pass "
        f"it with --metadata '{{\"{key}\": ...}}'"
        for key in misplaced
    ]
    # lm-eval's CLI merges --model_args into --metadata; what remains is what the user wrote there.
    user_keys = set(task_manager.metadata or {}) - set(given_model_args)
    # A key only a task's YAML may set would change every task of the run: refused before any is
    # built (each of ours would refuse it again as it is built).
    yaml_only = [f"--metadata: {problem}" for problem in options.yaml_only(sorted(user_keys))]
    if yaml_only:
        raise PreflightError(problems + yaml_only)
    specs = list(tasks or [])
    built, leaves, build_problems = build_tasks(task_manager, specs)
    problems = build_problems + problems
    # Each of our tasks has reported the keys that look misspelt; when every task is ours, any other
    # key none of them reads is a mistake too (it could be another harness task's option otherwise).
    if leaves and all(is_ours(task) for task in leaves):
        problems += [f"--metadata: {problem}" for problem in options.unknown_keys(sorted(user_keys))]
        read = {option.name for task in leaves for option in getattr(task.config.custom_dataset, "options", ())}
        unread = sorted(user_keys & options.known_names() - read)
        problems += [
            f"--metadata: no task of this run reads the option {key!r} "
            f"({', '.join(task_name(task) for task in leaves)}); remove it, or add the task it is for"
            for key in unread
        ]
    if isinstance(model, str):
        problems += checks.check_backend(model, leaves)
        problems += checks.check_generation_settings(model, leaves, kwargs.get("gen_kwargs"))
        problems += checks.check_chat_messages(model, leaves, kwargs.get("apply_chat_template"))
        problems += checks.check_prefix_caching(model, leaves, given_model_args)
        model_args = _prefix_caching_off(model, model_args, leaves)
    problems += checks.check_limit(limit, leaves)
    if kwargs.get("use_cache"):
        try:
            kwargs["use_cache"] = cache_key.cache_path_for_run(kwargs["use_cache"], model, model_args)
            checks.KEYED_CACHE_PATHS.add(kwargs["use_cache"])
        except ConfigurationError as error:
            problems.append(str(error))
    if problems:
        raise PreflightError(problems)
    adapters.install_request_gate()
    if built:
        task_manager = handed_over(task_manager, built)
    try:
        return lm_eval.evaluator.simple_evaluate(
            model,
            model_args,
            built or specs,
            *args,
            task_manager=task_manager,
            metadata=metadata,
            limit=limit,
            **kwargs,
        )
    except (ImportError, OSError) as error:
        # what lm-eval's model loading failed on (a network or package problem), in one line
        explained = backends.load_failure(error)
        if explained is None:
            raise
        raise explained from error
