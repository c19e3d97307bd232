"""lm-eval-bias: LGBTQ+ and gender bias benchmarks for lm-evaluation-harness."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__version__ = "0.1.0"


def tasks_dir() -> str:
    """Directory holding this package's task YAMLs (what ``--include_path`` needs)."""
    try:
        return str(Path(str(files("lm_eval_bias.tasks"))))
    except ModuleNotFoundError:
        # Imported from a source checkout (e.g. `python -m lm_eval_bias` in the clone),
        # where tasks/ sits beside the package instead of inside it.
        checkout_tasks = Path(__file__).resolve().parent.parent / "tasks"
        if (checkout_tasks / "__init__.py").is_file():
            return str(checkout_tasks)
        raise


def task_manager(extra_include_paths=None, **kwargs):
    """An lm-eval ``TaskManager`` that indexes our tasks (plus any extra paths).

    Use with ``lm_eval.simple_evaluate(..., task_manager=lm_eval_bias.task_manager())``.
    Extra paths are indexed after ours, so their tasks win on a name clash.
    """
    from lm_eval.tasks import TaskManager

    from lm_eval_bias import models

    models.register()  # so that model="hf-mlm" works in simple_evaluate too
    if extra_include_paths is None:
        extra = []
    elif isinstance(extra_include_paths, (str, Path)):
        extra = [str(extra_include_paths)]
    else:
        extra = [str(path) for path in extra_include_paths]
    return TaskManager(include_path=[tasks_dir(), *extra], **kwargs)
