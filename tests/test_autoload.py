"""The stock ``lm_eval`` finds our tasks with no flag: ``lm_eval_bias_autoload.pth`` and its import
hook (``_lm_eval_bias_autoload``), installed from a built wheel and from an editable install, each
into a fresh virtual environment layered on this one's packages (the hook lives only in an
environment the package is installed in, as a user's does)."""

import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import _lm_eval_bias_autoload as autoload

pytestmark = pytest.mark.e2e  # builds and installs the package, runs the stock CLI

REPO = Path(__file__).resolve().parents[1]
HOOK_FAILED = "lm-eval-bias: the import hook failed"


def run(args, cwd, env=None, check=True, timeout=600):
    completed = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check:
        assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    return completed


def project_copy(destination: Path) -> Path:
    """The project's files as a clone has them (tracked and not ignored), without build outputs."""
    listed = run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    return destination


# What an install of lm-eval-bias puts in site-packages (package, hook, metadata, editable finder).
OUR_INSTALLED_NAMES = ("lm_eval_bias", "_lm_eval_bias", "__editable__.lm_eval_bias", "__editable___lm_eval_bias")


def fresh_venv(path: Path) -> Path:
    """A new virtual environment whose own site-packages is empty, with this environment's
    site-packages after it, less lm-eval-bias itself (lm-eval, torch and pip come from there; what
    is installed into the new one is the only lm-eval-bias it sees, since an editable install's
    finder comes after any copy on ``sys.path``). Returns its python."""
    run([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent)
    python = path / "bin" / "python"
    site_dirs = [entry for entry in sys.path if entry.endswith("site-packages")]
    layers = []
    for number, site in enumerate(dict.fromkeys([sysconfig.get_path("purelib"), *site_dirs])):
        layer = path.parent / f"{path.name}-layer{number}"
        layer.mkdir()
        for entry in Path(site).iterdir():
            if not entry.name.startswith(OUR_INSTALLED_NAMES):
                (layer / entry.name).symlink_to(entry)
        layers.append(str(layer))
    (purelib_of(python) / "zz_layered_on_the_test_environment.pth").write_text("\n".join(layers) + "\n")
    return python


def purelib_of(python: Path) -> Path:
    script = "import sysconfig; print(sysconfig.get_path('purelib'))"
    return Path(run([python, "-c", script], cwd=python.parent).stdout.strip())


def pip_install(python: Path, *args) -> None:
    # --ignore-installed: the test environment may hold lm-eval-bias itself; the new one gets its own
    run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed", *args], cwd=REPO)


def where_things_come_from(python: Path, cwd: Path, env=None) -> dict:
    script = (
        "import json, sys, _lm_eval_bias_autoload as hook; "
        "finders = [type(f).__name__ for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)]; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('lm_eval', 'lm_eval_bias', 'torch', 'transformers', 'datasets')); "
        "import lm_eval.tasks, lm_eval.evaluator, lm_eval_bias; "
        "from lm_eval.tasks import TaskManager; "
        "print(json.dumps({'hook': hook.__file__, 'package': lm_eval_bias.__file__, 'finders': finders, "
        "'loaded_at_start': loaded, 'shimmed': getattr(TaskManager, '_lm_eval_bias_shim', False), "
        "'evaluator_shimmed': getattr(lm_eval.evaluator.TaskManager, '_lm_eval_bias_shim', False), "
        "'finders_after': [f for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)] != []}))"
    )
    return json.loads(run([python, "-c", script], cwd=cwd, env=env).stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory) -> Path:
    """A fresh environment with the wheel built from this project installed: its python."""
    root = tmp_path_factory.mktemp("wheel-env")
    source = project_copy(root / "project")
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", root / "dist", source],
        cwd=root,
    )
    (wheel,) = (root / "dist").glob("lm_eval_bias-*.whl")
    python = fresh_venv(root / "venv")
    pip_install(python, wheel)
    return python


def test_the_wheel_ships_the_pth_at_the_top_of_site_packages(wheel_env, tmp_path):
    purelib = purelib_of(wheel_env)
    assert (purelib / "lm_eval_bias_autoload.pth").read_text().startswith("import _lm_eval_bias_autoload;")
    found = where_things_come_from(wheel_env, tmp_path)
    assert Path(found["hook"]).parent == purelib and Path(found["package"]).parent.parent == purelib
    # at start-up: the finder alone, nothing of lm-eval, of ours or of the libraries they need
    assert found["finders"] == ["Finder"] and found["loaded_at_start"] == []
    # once lm_eval.tasks is imported: every TaskManager indexes ours, the finder is gone
    assert found["shimmed"] and found["evaluator_shimmed"] and not found["finders_after"]
    # pip uninstall removes what the wheel's RECORD lists: the hook goes with the package
    listed = run([wheel_env, "-m", "pip", "show", "-f", "lm-eval-bias"], cwd=tmp_path).stdout.split()
    assert {"lm_eval_bias_autoload.pth", "_lm_eval_bias_autoload.py"} <= set(listed)


def test_an_editable_install_runs_the_hook_too(tmp_path):
    source = project_copy(tmp_path / "project")
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "--no-build-isolation", "-e", source)
    found = where_things_come_from(python, tmp_path)
    assert Path(found["hook"]) == source / "_lm_eval_bias_autoload.py"
    assert Path(found["package"]) == source / "lm_eval_bias" / "__init__.py"
    assert found["finders"] == ["Finder"] and found["loaded_at_start"] == []
    assert found["shimmed"] and found["evaluator_shimmed"]


def console_script(python: Path, name: str) -> Path:
    """``name``'s console script in ``python``'s environment, written as pip writes one from the
    entry point of the package that declares it (lm-eval is layered in, not installed there)."""
    (entry,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == name]
    module, _, function = entry.value.partition(":")
    script = python.parent / name
    script.write_text(f"#!{python}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n")
    script.chmod(0o755)
    return script


def test_the_stock_cli_runs_our_tasks_with_no_flag(wheel_env, tmp_path, tiny_gpt2_long_context, generated_data_dir):
    # the console script users type, as they type it: no subcommand, no --include_path
    run(
        [
            console_script(wheel_env, "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2_long_context},dtype=float32",
            "--device",
            "cpu",
            "--tasks",
            "winoqueer,tango_misgender",
            "--limit",
            "2",
            "--output_path",
            tmp_path / "out.json",
        ],
        cwd=tmp_path,
        env={"LM_EVAL_BIAS_DATA_DIR": str(generated_data_dir)},
    )
    results = json.loads(next(tmp_path.glob("out_*.json")).read_text())["results"]
    assert results["winoqueer"]["sample_len"] == 2 and "bias_score,none" in results["winoqueer"]
    assert results["tango_misgender"]["sample_len"] == 2 and "no_pronoun_rate,none" in results["tango_misgender"]


def test_stock_simple_evaluate_runs_our_task_with_no_task_manager(
    wheel_env, tmp_path, tiny_gpt2_long_context, generated_data_dir
):
    script = (
        "import json, lm_eval; "
        f"out = lm_eval.simple_evaluate(model='hf', model_args='pretrained={tiny_gpt2_long_context},dtype=float32', "
        "tasks=['winoqueer'], limit=3, device='cpu'); "
        "print(json.dumps(out['results']['winoqueer']['sample_len']))"
    )
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={"LM_EVAL_BIAS_DATA_DIR": str(generated_data_dir)})
    assert done.stdout.strip().splitlines()[-1] == "3"


def test_the_request_gate_runs_for_the_stock_cli_with_no_flag(wheel_env, tmp_path, tiny_gpt2, generated_data_dir):
    refused = run(
        [
            wheel_env,
            "-m",
            "lm_eval",
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2},dtype=float32",
            "--device",
            "cpu",
            "--tasks",
            "winoqueer",
            "--limit",
            "0",
        ],
        cwd=tmp_path,
        env={"LM_EVAL_BIAS_DATA_DIR": str(generated_data_dir)},
        check=False,
    )
    assert refused.returncode != 0
    assert "lm-eval-bias: error: " in refused.stderr and "winoqueer: --limit 0 leaves no documents" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_users_include_path_wins_a_name_clash(wheel_env, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "winoqueer.yaml").write_text(
        "task: winoqueer\ndataset_path: json\ndataset_kwargs: {data_files: {test: x.jsonl}}\n"
        "test_split: test\noutput_type: loglikelihood\ndoc_to_text: a\ndoc_to_target: b\n"
    )
    script = (
        "from lm_eval.tasks import TaskManager; from lm_eval_bias.lm_eval_features import task_index; "
        f"index = task_index(TaskManager(include_path={str(mine)!r}, include_defaults=False)); "
        "print(index['winoqueer'].yaml_path, 'tango_misgender' in index)"
    )
    printed = run([wheel_env, "-c", script], cwd=tmp_path).stdout.strip().splitlines()[-1]
    assert printed == f"{mine / 'winoqueer.yaml'} True"


@pytest.mark.parametrize("value", ["1", "true"])
def test_an_environment_variable_turns_the_hook_off(wheel_env, tmp_path, value):
    script = (
        "import sys; print([f for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)] == []); "
        "from lm_eval.tasks import TaskManager; print(TaskManager.__module__)"
    )
    printed = run([wheel_env, "-c", script], cwd=tmp_path, env={autoload.ENVIRONMENT_VARIABLE: value}).stdout
    assert printed.split() == ["True", "lm_eval.tasks.manager"]


def test_a_failing_hook_is_one_warning_and_lm_eval_runs_as_stock(wheel_env, tmp_path):
    broken = tmp_path / "broken" / "lm_eval_bias"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('a broken install')\n")
    script = (
        "import lm_eval.tasks, _lm_eval_bias_autoload as hook; "
        "hook.add_our_tasks(lm_eval.tasks); "  # a second failure: no second warning
        "print(lm_eval.tasks.TaskManager.__module__)"
    )
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={"PYTHONPATH": str(broken.parent)})
    assert done.stdout.split() == ["lm_eval.tasks.manager"]
    assert done.stderr.count(HOOK_FAILED) == 1 and "ImportError: a broken install" in done.stderr


def write_fake_lm_eval(root: Path, reads_entry_points: bool) -> Path:
    """An ``lm_eval`` package whose ``lm_eval.tasks`` does (or does not) read the entry point."""
    tasks = root / "lm_eval" / "tasks"
    tasks.mkdir(parents=True)
    (root / "lm_eval" / "__init__.py").write_text("")
    discovery = (
        "from importlib.metadata import entry_points\nPLUGINS = [e.name for e in entry_points(group='lm_eval.tasks')]\n"
        if reads_entry_points
        else ""
    )
    (tasks / "__init__.py").write_text(discovery + "class TaskManager:\n    pass\n")
    return root


@pytest.mark.parametrize("reads_entry_points", [True, False])
def test_the_hook_steps_aside_where_lm_eval_reads_the_entry_point(wheel_env, tmp_path, reads_entry_points):
    fake = write_fake_lm_eval(tmp_path / "fake", reads_entry_points)
    script = "from lm_eval.tasks import TaskManager; print(getattr(TaskManager, '_lm_eval_bias_shim', False))"
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={"PYTHONPATH": str(fake)})
    assert done.stdout.split() == [str(not reads_entry_points)]
    assert HOOK_FAILED not in done.stderr


def test_the_installed_lm_eval_does_not_read_the_entry_point_yet():
    """When this fails, lm-eval discovers the ``lm_eval.tasks`` entry point (upstream PR #4015):
    the hook steps aside by itself, and it, setup.py's build_py and the .pth can go."""
    import lm_eval.tasks

    assert not autoload.lm_eval_reads_task_entry_points(lm_eval.tasks)
