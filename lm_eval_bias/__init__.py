"""lm-eval-bias: LGBTQ+ and gender bias benchmarks for lm-evaluation-harness."""

from __future__ import annotations

from pathlib import Path

from lm_eval_bias.benchmark_records import tasks_dir

__version__ = "0.1.0"
__all__ = ["simple_evaluate", "task_manager", "tasks_dir"]


def task_manager(extra_include_paths=None, **kwargs):
    """An lm-eval ``TaskManager`` that indexes our tasks (plus any extra paths).

    Use with ``lm_eval.simple_evaluate(..., task_manager=lm_eval_bias.task_manager())``,
    or better :func:`simple_evaluate`, which also checks everything before the model
    loads. Extra paths are indexed after ours, so their tasks win on a name clash.
    A ``metadata`` key that looks like a misspelt option of ours (``data_fil``) is a
    :class:`~lm_eval_bias.errors.ConfigurationError`.
    """
    from lm_eval.tasks import TaskManager

    from lm_eval_bias import checks, models, options
    from lm_eval_bias.errors import ConfigurationError

    metadata = kwargs.get("metadata")
    for problem in checks.check_metadata_mapping(metadata, "task_manager"):
        raise ConfigurationError(problem)
    problems = options.run_metadata_problems(sorted(metadata or {}))
    if problems:
        raise ConfigurationError("task_manager(metadata=...): " + "; ".join(problems))
    models.register()  # so that model="hf-mlm" works in simple_evaluate too
    if extra_include_paths is None:
        extra = []
    elif isinstance(extra_include_paths, (str, Path)):
        extra = [str(extra_include_paths)]
    else:
        extra = [str(path) for path in extra_include_paths]
    return TaskManager(include_path=[tasks_dir(), *extra], **kwargs)


def simple_evaluate(*args, **kwargs):
    """``lm_eval.simple_evaluate`` with our tasks indexed (unless you pass a ``task_manager``)
    and every check done before the model loads: each task's options, data and classifiers,
    the ``metadata`` keys, the backend and ``limit``. All problems are raised together as one
    :class:`~lm_eval_bias.errors.PreflightError`. ``use_cache`` is keyed on the model, its
    arguments and its weights, as with the ``lm-eval-bias`` command
    (:func:`lm_eval_bias.cache_key.cache_path_for_run`), and it and the tracker's output path are checked
    to be writable first. Arguments and result are lm-eval's."""
    from lm_eval_bias import evaluate, models

    models.register()
    return evaluate.simple_evaluate(*args, **kwargs)
