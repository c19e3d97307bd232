"""The companion's start-up files on a real Python 3.15 or later (PEP 829), where one is at hand:
``python3.15`` on the PATH, or a command that runs one in ``LM_EVAL_BIAS_PYTHON315`` (for example
``chroot /srv/sid /usr/bin/python3.15``, with this machine's /tmp mounted at the same path there).

The hook module and the ``.pth`` and ``.start`` files are the companion's own, copied into the user
site-packages folder of a fresh ``PYTHONUSERBASE``; ``lm_eval`` and ``lm_eval_bias`` are stand-ins
with only what the hook reads, since neither lm-eval nor its dependencies need be installed for
that Python. ``tests/test_autoload.py`` runs the real packages, on the Python of the test
environment."""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

COMPANION = Path(__file__).resolve().parents[1] / "lm_eval_bias" / "autoload"
HOOK = "_lm_eval_bias_autoload"
START = "lm_eval_bias_autoload.start"
PTH = "lm_eval_bias_autoload.pth"
ENVIRONMENT_VARIABLE = "LM_EVAL_BIAS_NO_AUTOLOAD"


def python_315() -> list[str] | None:
    given = os.environ.get("LM_EVAL_BIAS_PYTHON315", "").strip()
    if given:
        return shlex.split(given)
    found = shutil.which("python3.15")
    return [found] if found else None


PYTHON = python_315()
if PYTHON is None:
    pytest.skip(
        "no Python 3.15 here: put python3.15 on the PATH or name one in LM_EVAL_BIAS_PYTHON315",
        allow_module_level=True,
    )

LM_EVAL_TASKS = (
    "class TaskManager:\n    def __init__(self, include_defaults=True, **kwargs):\n        self.task_index = {}\n"
)
LM_EVAL_BIAS = "import os\n\n\ndef tasks_dir():\n    return os.path.dirname(__file__)\n"
# The shim as lm_eval_bias.adapters installs it: lm_eval.tasks is imported by name while it is
# still being imported (the hook calls it from that module's loader).
ADAPTERS = (
    "def install_task_manager_shim(ours):\n"
    "    import lm_eval.tasks as lm_eval_tasks\n\n"
    "    class TaskManagerWithBiasTasks(lm_eval_tasks.TaskManager):\n"
    "        _lm_eval_bias_shim = True\n\n"
    "    TaskManagerWithBiasTasks.__module__ = __name__\n"
    "    lm_eval_tasks.TaskManager = TaskManagerWithBiasTasks\n"
)
PROBE = (
    "import sys; "
    "assert sys.version_info >= (3, 15), sys.version; "
    "finders = [f for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)]; "
    "import lm_eval.tasks; "
    "print(len(finders), lm_eval.tasks.TaskManager.__module__)"
)


@pytest.fixture
def user_base(tmp_path) -> Path:
    """A ``PYTHONUSERBASE`` whose site-packages holds the companion's three files and the
    stand-ins; returns that site-packages folder."""
    version = run(["-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"], {}).stdout.strip()
    site = tmp_path / "base" / "lib" / f"python{version}" / "site-packages"
    (site / "lm_eval" / "tasks").mkdir(parents=True)
    (site / "lm_eval_bias").mkdir()
    (site / "lm_eval" / "__init__.py").write_text("")
    (site / "lm_eval" / "tasks" / "__init__.py").write_text(LM_EVAL_TASKS)
    (site / "lm_eval_bias" / "__init__.py").write_text(LM_EVAL_BIAS)
    (site / "lm_eval_bias" / "adapters.py").write_text(ADAPTERS)
    for name in (f"{HOOK}.py", PTH, START):
        shutil.copyfile(COMPANION / name, site / name)
    return site


def run(args: list[str], env: dict, base: Path | None = None) -> subprocess.CompletedProcess:
    variables = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "LM_EVAL_BIAS"))}
    if base is not None:
        variables["PYTHONUSERBASE"] = str(base.parents[2])
    completed = subprocess.run(
        [*PYTHON, *args], capture_output=True, text=True, timeout=120, env={**variables, **env}, cwd="/"
    )
    assert completed.returncode == 0, completed.stderr
    return completed


def started(site: Path, env=None) -> tuple[list[str], str]:
    done = run(["-c", PROBE], env or {}, site)
    return done.stdout.split(), done.stderr


def test_the_start_file_starts_the_hook_and_nothing_is_printed(user_base):
    assert run(["-c", "pass"], {}, user_base).stderr == ""
    assert started(user_base) == (["1", "lm_eval_bias.adapters"], "")


def test_the_environment_variable_turns_it_off(user_base):
    assert started(user_base, {ENVIRONMENT_VARIABLE: "1"}) == (["0", "lm_eval.tasks"], "")


def test_without_lm_eval_bias_it_steps_aside_without_a_word(user_base):
    shutil.rmtree(user_base / "lm_eval_bias")
    assert started(user_base) == (["1", "lm_eval.tasks"], "")


def test_a_broken_lm_eval_bias_is_one_line(user_base):
    (user_base / "lm_eval_bias" / "adapters.py").write_text("raise RuntimeError('damaged')\n")
    outcome, stderr = started(user_base)
    assert outcome == ["1", "lm_eval.tasks"]
    assert stderr.startswith("lm-eval-bias: the import hook failed (RuntimeError: damaged); ")
    assert stderr.count("\n") == 1


def test_python_3_15_still_runs_the_pth_line_where_no_start_file_is_beside_it(user_base):
    (user_base / START).unlink()
    assert started(user_base) == (["1", "lm_eval_bias.adapters"], "")
    (user_base / f"{HOOK}.py").unlink()
    assert started(user_base) == (["0", "lm_eval.tasks"], "")  # the .pth line's guard: silent


@pytest.mark.parametrize("damage", ["deleted", "fails to import"])
def test_a_start_file_left_without_its_module_is_python_s_own_report(user_base, damage):
    """What no file of ours can change: Python itself reports a ``.start`` entry point it cannot
    import, at every start, whatever the environment variable says (``site``'s
    ``_execute_start_entrypoints``). ``pip uninstall lm-eval-bias-autoload`` removes the ``.start``
    file too (README, Ways to run)."""
    module = user_base / f"{HOOK}.py"
    if damage == "deleted":
        module.unlink()
    else:
        module.write_text("raise RuntimeError('damaged')\n")
    for env in ({}, {ENVIRONMENT_VARIABLE: "1"}):
        outcome, stderr = started(user_base, env)
        assert outcome == ["0", "lm_eval.tasks"]
        lines = stderr.splitlines()
        assert lines[0] == f"Error resolving entry point {HOOK}:install from {user_base / START}"
        assert lines[-1] == (
            f"  ModuleNotFoundError: No module named '{HOOK}'" if damage == "deleted" else "  RuntimeError: damaged"
        )
