"""Our tasks for the stock ``lm_eval`` with no flag: the import hook that ``lm_eval_bias_autoload.pth``
starts in every interpreter of the environment the package is installed in.

lm-eval 0.4.13 indexes only its own tasks and ``--include_path``; it does not read the
``lm_eval.tasks`` entry point we declare (upstream pull request #4015). This module puts a finder
at the front of ``sys.meta_path`` that answers nothing (one string comparison per import) until
``lm_eval.tasks`` is imported. Then, once that module has run, it removes itself and makes every
``TaskManager`` index our task folder before the user's ``--include_path`` (which wins on a name
clash): :func:`lm_eval_bias.adapters.install_task_manager_shim`, as the ``lm-eval-bias`` command
does. Before that moment nothing of lm-eval or of ``lm_eval_bias`` is imported.

It steps aside when ``LM_EVAL_BIAS_NO_AUTOLOAD`` is set (to anything but ``""``, ``0``,
``false`` or ``no``), and when the installed lm-eval reads the ``lm_eval.tasks`` entry point
itself (:func:`lm_eval_reads_task_entry_points`). It never fails the interpreter or the import of
lm-eval: any error is one ``RuntimeWarning`` and lm-eval runs as it would without us.

Not part of the ``lm_eval_bias`` package, so that the ``.pth`` line imports this file alone
(setuptools' ``distutils-precedence.pth`` and ``_distutils_hack`` are the model).
"""

import os
import sys

ENVIRONMENT_VARIABLE = "LM_EVAL_BIAS_NO_AUTOLOAD"
TARGET = "lm_eval.tasks"
ENTRY_POINT_GROUP = "lm_eval.tasks"

_warned = False


def disabled(environ=None) -> bool:
    """Whether the environment turns the hook off."""
    value = (os.environ if environ is None else environ).get(ENVIRONMENT_VARIABLE, "")
    return value.strip().lower() not in ("", "0", "false", "no")


def _warn_once(message: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    try:
        import warnings

        warnings.warn(
            f"lm-eval-bias: {message}; our tasks are not added to lm-eval's task list automatically "
            f'(pass --include_path "$(python -m lm_eval_bias tasks-dir)" or use lm-eval-bias; '
            f"{ENVIRONMENT_VARIABLE}=1 turns this hook off)",
            RuntimeWarning,
            stacklevel=2,
        )
    except Exception:  # noqa: BLE001 - a warning must not fail an import either
        pass


def lm_eval_reads_task_entry_points(tasks_module) -> bool:
    """Whether this lm-eval discovers a plugin's task folders through the ``lm_eval.tasks``
    entry-point group itself (upstream PR #4015): its ``lm_eval.tasks`` modules or its registry
    call ``entry_points`` and name that group. Read from the source, as no version has it yet."""
    directory = os.path.dirname(getattr(tasks_module, "__file__", None) or "")
    if not directory:
        return False
    candidates = [os.path.join(directory, name) for name in sorted(os.listdir(directory)) if name.endswith(".py")]
    candidates.append(os.path.join(os.path.dirname(directory), "api", "registry.py"))
    for path in candidates:
        try:
            with open(path, encoding="utf-8") as file:
                source = file.read()
        except OSError:
            continue
        if "entry_points" in source and (f'"{ENTRY_POINT_GROUP}"' in source or f"'{ENTRY_POINT_GROUP}'" in source):
            return True
    return False


def add_our_tasks(tasks_module) -> bool:
    """Once ``lm_eval.tasks`` has run: make its ``TaskManager`` index our tasks, unless lm-eval
    finds them through the entry point. True when the shim is installed."""
    try:
        if lm_eval_reads_task_entry_points(tasks_module):
            return False
        from lm_eval_bias import tasks_dir
        from lm_eval_bias.adapters import install_task_manager_shim

        install_task_manager_shim(tasks_dir())
        return True
    except Exception as error:  # noqa: BLE001 - never fail lm-eval's import
        _warn_once(f"the import hook failed ({type(error).__name__}: {error})")
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
            _warn_once(f"the import hook failed ({type(error).__name__}: {error})")
            return None


def uninstall() -> None:
    sys.meta_path[:] = [finder for finder in sys.meta_path if not getattr(finder, "_lm_eval_bias_autoload", False)]


def install() -> None:
    """Called by the ``.pth`` line at start-up: the finder, or at once the shim if ``lm_eval.tasks``
    is already imported. Never raises."""
    try:
        if disabled():
            return
        if TARGET in sys.modules:
            add_our_tasks(sys.modules[TARGET])
            return
        if not any(getattr(finder, "_lm_eval_bias_autoload", False) for finder in sys.meta_path):
            sys.meta_path.insert(0, Finder())
    except Exception as error:  # noqa: BLE001
        _warn_once(f"the import hook failed ({type(error).__name__}: {error})")
