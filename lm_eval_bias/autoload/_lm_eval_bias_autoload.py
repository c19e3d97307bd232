"""Our tasks for the stock ``lm_eval`` with no flag: the import hook of the companion distribution
``lm-eval-bias-autoload``, started in every interpreter of the environment it is installed in.

lm-eval 0.4.13 indexes only its own tasks and ``--include_path``; it does not read the
``lm_eval.tasks`` entry point that lm-eval-bias declares (upstream pull request #4015). This module
puts a finder at the front of ``sys.meta_path`` that answers nothing (one string comparison per
import) until ``lm_eval.tasks`` is imported. Then, once that module has run, it removes itself and
makes every ``TaskManager`` index our task folder before the user's ``--include_path`` (which wins
on a name clash): :func:`lm_eval_bias.adapters.install_task_manager_shim`, as the ``lm-eval-bias``
command does. Before that moment nothing of lm-eval or of ``lm_eval_bias`` is imported.

Python starts :func:`install` from ``lm_eval_bias_autoload.start`` (Python 3.15 and later, PEP 829:
a ``.start`` file beside a ``.pth`` of the same name makes Python skip that file's ``import``
lines) or from the ``import`` line of ``lm_eval_bias_autoload.pth`` (earlier Pythons). That line
imports this module only where it can be found, so a ``.pth`` left behind without it (an
interrupted uninstall, a deleted file) starts nothing and prints nothing.

It steps aside when ``LM_EVAL_BIAS_NO_AUTOLOAD`` is set (to anything but ``""``, ``0``,
``false`` or ``no``), when ``lm_eval_bias`` is not installed (the companion left behind by
``pip uninstall lm-eval-bias``), and when the installed lm-eval indexes our folder itself
(:func:`lm_eval_indexes_our_tasks`). It never fails the interpreter or the import of lm-eval: any
other error is one line on standard error, once, and lm-eval runs as it would without us. Only a
``.start`` file whose module is gone or cannot be imported is reported by Python itself, from 3.15
on, at every start (``tests/test_autoload_python315.py``, run on 3.15.2).

A top-level module, outside the ``lm_eval_bias`` package, so that interpreter start-up imports this
file alone (setuptools' ``distutils-precedence.pth`` and ``_distutils_hack`` are the model).
"""

import os
import sys

ENVIRONMENT_VARIABLE = "LM_EVAL_BIAS_NO_AUTOLOAD"
TARGET = "lm_eval.tasks"

_reported = False


def disabled(environ=None) -> bool:
    """Whether the environment turns the hook off."""
    value = (os.environ if environ is None else environ).get(ENVIRONMENT_VARIABLE, "")
    return value.strip().lower() not in ("", "0", "false", "no")


def _report_once(error: BaseException) -> None:
    # One line, not a warning: a warning prints the source line under it, and this runs inside
    # other programs (every interpreter of the environment), whose standard error must stay readable.
    global _reported
    if _reported:
        return
    _reported = True
    try:
        detail = " ".join(f"{type(error).__name__}: {error}".split())
        sys.stderr.write(
            f"lm-eval-bias: the import hook failed ({detail}); our tasks are not added to lm-eval's task list "
            f'(pass --include_path "$(python -m lm_eval_bias tasks-dir)" or use lm-eval-bias; '
            f"{ENVIRONMENT_VARIABLE}=1 turns this hook off)\n"
        )
    except Exception:  # noqa: BLE001 - a closed or missing stderr must not fail an import either
        pass


def lm_eval_indexes_our_tasks(tasks_module, ours: str) -> bool:
    """Whether this lm-eval indexes the task folder ``ours`` by itself, through the
    ``lm_eval.tasks`` entry point (upstream PR #4015), as no version does yet.

    Asked of lm-eval's behaviour, not of its source: a ``TaskManager`` built without lm-eval's own
    tasks and without an ``include_path`` indexes only what lm-eval finds elsewhere, so a task file
    of ``ours`` in its index means lm-eval found our folder. It reads no folder of lm-eval's
    (35 microseconds with lm-eval 0.4.13, against 4 s for one with lm-eval's own tasks). An lm-eval
    that indexed plugins only beside its own tasks would be missed: our folder would then be
    indexed twice, the same files, which changes no task.

    Parameters
    ----------
    tasks_module : module
        ``lm_eval.tasks``, once it has run; its ``TaskManager`` is lm-eval's own, not our shim.
    ours : str
        Our task folder, :func:`lm_eval_bias.tasks_dir`: the folder of the ``lm_eval_bias.tasks``
        package that the entry point names.

    Returns
    -------
    bool
    """
    manager = tasks_module.TaskManager(include_defaults=False)
    index = getattr(manager, "task_index", None)
    if index is None:  # lm-eval 0.5.0.dev1 keeps it private
        index = getattr(manager, "_task_index", None) or {}
    folder = os.path.join(os.path.realpath(ours), "")
    for entry in index.values():
        path = entry.get("yaml_path") if isinstance(entry, dict) else getattr(entry, "yaml_path", None)
        if path and os.path.realpath(path).startswith(folder):
            return True
    return False


def add_our_tasks(tasks_module) -> bool:
    """Once ``lm_eval.tasks`` has run: make its ``TaskManager`` index our tasks, unless lm-eval
    indexes them itself or ``lm_eval_bias`` is not installed. True when the shim is installed."""
    try:
        if getattr(tasks_module.TaskManager, "_lm_eval_bias_shim", False):
            return True  # the lm-eval-bias command, or an earlier call, installed it
        try:
            from lm_eval_bias import tasks_dir
        except ModuleNotFoundError as error:
            if error.name == "lm_eval_bias":
                return False
            raise
        from lm_eval_bias.adapters import install_task_manager_shim

        ours = tasks_dir()
        if lm_eval_indexes_our_tasks(tasks_module, ours):
            return False
        install_task_manager_shim(ours)
        return True
    except Exception as error:  # noqa: BLE001 - never fail lm-eval's import
        _report_once(error)
        return False


class _Loader:
    """``lm_eval.tasks``' own loader, then :func:`add_our_tasks`; the module keeps its own loader."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            module.__loader__ = self._loader
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self._loader
        except Exception:  # noqa: BLE001
            pass
        self._loader.exec_module(module)
        add_our_tasks(module)


class Finder:
    """On ``sys.meta_path``: answers ``lm_eval.tasks`` alone, once, with the spec the other
    finders give and its loader wrapped (:class:`_Loader`); every other import goes on as if it
    were not there."""

    _lm_eval_bias_autoload = True

    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        try:
            uninstall()
            from importlib.util import find_spec

            spec = find_spec(name)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            spec.loader = _Loader(spec.loader)
            return spec
        except Exception as error:  # noqa: BLE001
            _report_once(error)
            return None


def uninstall() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path if not getattr(finder, "_lm_eval_bias_autoload", False)]


def install() -> None:
    """The entry point of the ``.start`` and ``.pth`` files, at start-up: the finder, or at once
    the shim if ``lm_eval.tasks`` is already imported. Never raises."""
    try:
        if disabled():
            return
        if TARGET in sys.modules:
            add_our_tasks(sys.modules[TARGET])
            return
        if not any(getattr(finder, "_lm_eval_bias_autoload", False) for finder in sys.meta_path):
            sys.meta_path.insert(0, Finder())
    except Exception as error:  # noqa: BLE001
        _report_once(error)
