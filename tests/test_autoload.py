"""The stock ``lm_eval`` finds our tasks with no flag where the companion distribution
lm-eval-bias-autoload (``lm_eval_bias/autoload/``) is installed beside lm-eval-bias: its start-up
files and its import hook (``_lm_eval_bias_autoload``), installed from built wheels and beside an
editable install, each into a fresh virtual environment layered on this one's packages (the hook
lives only in an environment it is installed in, as a user's does). lm-eval-bias alone starts
nothing with the interpreter, and no failure of the hook is more than one line on standard error."""

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

# builds and installs the package, runs the stock CLI; on every supported lm-eval
pytestmark = [pytest.mark.e2e, pytest.mark.lm_eval_versions]

REPO = Path(__file__).resolve().parents[1]
COMPANION = REPO / "lm_eval_bias" / "autoload"
HOOK_MODULE = "_lm_eval_bias_autoload"
STARTUP_FILES = ("lm_eval_bias_autoload.pth", "lm_eval_bias_autoload.start")
ENVIRONMENT_VARIABLE = "LM_EVAL_BIAS_NO_AUTOLOAD"
HOOK_FAILED = "lm-eval-bias: the import hook failed"


def run(args, cwd, env=None, check=True, timeout=600):
    # A fresh environment sees what is installed there alone: not this process's PYTHONPATH
    # (a test passes its own).
    inherited = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    completed = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**inherited, **(env or {})},
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


# What an install of lm-eval-bias or its companion puts in site-packages (package, hook, start-up
# files, metadata, editable finder).
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
        "import json, sys; "
        "finders = [type(f).__name__ for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)]; "
        "started = sorted(sys.modules); "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('lm_eval', 'lm_eval_bias', 'torch', 'transformers', 'datasets')); "
        "import lm_eval.tasks, lm_eval.evaluator, lm_eval_bias, _lm_eval_bias_autoload as hook; "
        "from lm_eval.tasks import TaskManager; "
        "print(json.dumps({'hook': hook.__file__, 'package': lm_eval_bias.__file__, 'finders': finders, "
        "'started': started, 'loaded_at_start': loaded, "
        "'shimmed': getattr(TaskManager, '_lm_eval_bias_shim', False), "
        "'evaluator_shimmed': getattr(lm_eval.evaluator.TaskManager, '_lm_eval_bias_shim', False), "
        "'finders_after': [f for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)] != []}))"
    )
    done = run([python, "-c", script], cwd=cwd, env=env)
    assert done.stderr == ""
    return json.loads(done.stdout.strip().splitlines()[-1])


def stock_or_ours(python: Path, cwd: Path, env=None) -> subprocess.CompletedProcess:
    """``python -c pass``, which must print nothing, then whose ``TaskManager`` ``lm_eval.tasks``
    gives: lm-eval's own (``lm_eval.tasks.manager``) or our shim (``lm_eval_bias.adapters``)."""
    started = run([python, "-c", "pass"], cwd=cwd, env=env)
    assert (started.stdout, started.stderr) == ("", "")
    return run([python, "-c", "import lm_eval.tasks; print(lm_eval.tasks.TaskManager.__module__)"], cwd=cwd, env=env)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict:
    """The wheels built from this project: ``main`` (lm-eval-bias) and ``companion``."""
    root = tmp_path_factory.mktemp("wheels")
    source = project_copy(root / "project")
    built = {}
    for name, folder, pattern in [
        ("main", source, "lm_eval_bias-*.whl"),
        ("companion", source / "lm_eval_bias" / "autoload", "lm_eval_bias_autoload-*.whl"),
    ]:
        dist = root / f"dist-{name}"
        run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, folder],
            cwd=root,
        )
        (built[name],) = dist.glob(pattern)
    return built


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory, wheels) -> Path:
    """A fresh environment with both wheels installed, as the README's first command installs
    them: its python."""
    python = fresh_venv(tmp_path_factory.mktemp("wheel-env") / "venv")
    pip_install(python, wheels["main"], wheels["companion"])
    return python


def wheel_names(wheel: Path) -> set:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


def wheel_metadata(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (path,) = [n for n in archive.namelist() if n.endswith(f".dist-info/{name}")]
        return archive.read(path).decode()


def test_the_main_wheel_starts_nothing_and_the_companion_holds_the_hook_alone(wheels):
    main = wheel_names(wheels["main"])
    assert {name.split("/")[0] for name in main} == {"lm_eval_bias"}  # no .pth, .start or top-level module
    assert not any(name.startswith("lm_eval_bias/autoload/") for name in main)
    # the entry point a future lm-eval reads, and the shim that the lm-eval-bias command installs
    assert "[lm_eval.tasks]\nlm_eval_bias = lm_eval_bias.tasks\n" in wheel_metadata(wheels["main"], "entry_points.txt")
    assert "lm_eval_bias/adapters.py" in main
    assert wheel_names(wheels["companion"]) == {f"{HOOK_MODULE}.py", *STARTUP_FILES}
    # the companion is lm-eval-bias's version and needs lm-eval-bias of that version
    version = re.search(r"^Version: (.+)$", wheel_metadata(wheels["main"], "METADATA"), re.MULTILINE).group(1)
    companion = wheel_metadata(wheels["companion"], "METADATA")
    assert f"\nVersion: {version}\n" in companion
    assert re.findall(r"^Requires-Dist: (.+)$", companion, re.MULTILINE) == [f"lm-eval-bias=={version}"]


def test_the_companion_ships_the_hook_at_the_top_of_site_packages(wheel_env, tmp_path):
    purelib = purelib_of(wheel_env)
    found = where_things_come_from(wheel_env, tmp_path)
    assert Path(found["hook"]).parent == purelib and Path(found["package"]).parent.parent == purelib
    # at start-up: the finder alone, nothing of lm-eval, of ours or of the libraries they need
    assert found["finders"] == ["Finder"] and found["loaded_at_start"] == []
    # once lm_eval.tasks is imported: every TaskManager indexes ours, the finder is gone
    assert found["shimmed"] and found["evaluator_shimmed"] and not found["finders_after"]
    # pip uninstall removes what each wheel's RECORD lists: the hook goes with the companion alone
    listed = set(run([wheel_env, "-m", "pip", "show", "-f", "lm-eval-bias-autoload"], cwd=tmp_path).stdout.split())
    assert {f"{HOOK_MODULE}.py", *STARTUP_FILES} <= listed
    listed = set(run([wheel_env, "-m", "pip", "show", "-f", "lm-eval-bias"], cwd=tmp_path).stdout.split())
    assert not {f"{HOOK_MODULE}.py", *STARTUP_FILES} & listed


def test_lm_eval_bias_alone_leaves_the_stock_lm_eval_as_it_is(wheels, wheel_env, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, wheels["main"])
    assert stock_or_ours(python, tmp_path).stdout.split() == ["lm_eval.tasks.manager"]
    # the companion adds one module to what every interpreter imports at start-up
    started = json.loads(
        run([python, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"], tmp_path).stdout
    )
    assert set(where_things_come_from(wheel_env, tmp_path)["started"]) - set(started) == {HOOK_MODULE}


def test_python_3_15_runs_the_start_file_s_entry_point_in_place_of_the_pth_line(wheel_env, tmp_path):
    """PEP 829: Python 3.15 and later skip the ``import`` lines of a ``.pth`` that has a ``.start``
    file of the same name beside it, and call each ``pkg.mod:callable`` line of that file (read as
    utf-8-sig; blank lines and ``#`` comments skipped) through ``pkgutil.resolve_name``, with no
    argument. This interpreter is older, so the ``.pth`` line is turned off and the entry point
    called as 3.15's ``site`` calls it (``tests/test_autoload_python315.py`` runs a real 3.15)."""
    purelib = purelib_of(wheel_env)
    pth, start = (purelib / name for name in STARTUP_FILES)
    assert pth.stem == start.stem
    entries = [
        line.strip()
        for line in start.read_text(encoding="utf-8-sig").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert entries == [f"{HOOK_MODULE}:install"]
    assert all(re.fullmatch(r"\w+(\.\w+)*:\w+(\.\w+)*", entry) for entry in entries)
    script = (
        "import os, sys, pkgutil; "
        "assert not [f for f in sys.meta_path if getattr(f, '_lm_eval_bias_autoload', False)]; "
        f"del os.environ[{ENVIRONMENT_VARIABLE!r}]; "
        f"[pkgutil.resolve_name(entry)() for entry in {entries!r}]; "
        "import lm_eval.tasks; print(lm_eval.tasks.TaskManager.__module__)"
    )
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={ENVIRONMENT_VARIABLE: "1"})
    assert (done.stdout.split(), done.stderr) == (["lm_eval_bias.adapters"], "")


def test_the_companion_beside_an_editable_install_and_a_moved_clone(wheels, tmp_path):
    source = project_copy(tmp_path / "project")
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "--no-build-isolation", "-e", source, wheels["companion"])
    found = where_things_come_from(python, tmp_path)
    assert Path(found["hook"]).parent == purelib_of(python)
    assert Path(found["package"]) == source / "lm_eval_bias" / "__init__.py"
    assert found["finders"] == ["Finder"] and found["loaded_at_start"] == []
    assert found["shimmed"] and found["evaluator_shimmed"]
    # the clone moved: lm_eval_bias is gone, and the hook steps aside without a word
    source.rename(tmp_path / "moved")
    assert stock_or_ours(python, tmp_path).stdout.split() == ["lm_eval.tasks.manager"]


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
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={ENVIRONMENT_VARIABLE: value})
    assert (done.stdout.split(), done.stderr) == (["True", "lm_eval.tasks.manager"], "")


def broken_lm_eval_bias(root: Path) -> Path:
    """A folder holding an ``lm_eval_bias`` that fails on import, for ``PYTHONPATH``."""
    (root / "lm_eval_bias").mkdir(parents=True)
    (root / "lm_eval_bias" / "__init__.py").write_text("raise ImportError('a broken install')\n")
    return root


def test_a_broken_lm_eval_bias_is_one_line_and_lm_eval_runs_as_stock(wheel_env, tmp_path):
    broken = {"PYTHONPATH": str(broken_lm_eval_bias(tmp_path / "broken"))}
    script = (
        "import lm_eval.tasks, _lm_eval_bias_autoload as hook; "
        "hook.add_our_tasks(lm_eval.tasks); "  # a second failure: no second line
        "print(lm_eval.tasks.TaskManager.__module__)"
    )
    stock_or_ours(wheel_env, tmp_path, broken)  # nothing at start-up
    done = run([wheel_env, "-c", script], cwd=tmp_path, env=broken)
    assert done.stdout.split() == ["lm_eval.tasks.manager"]
    assert done.stderr == (
        f"{HOOK_FAILED} (ImportError: a broken install); our tasks are not added to lm-eval's task list "
        '(pass --include_path "$(python -m lm_eval_bias tasks-dir)" or use lm-eval-bias; '
        f"{ENVIRONMENT_VARIABLE}=1 turns this hook off)\n"
    )
    done = stock_or_ours(wheel_env, tmp_path, {**broken, ENVIRONMENT_VARIABLE: "1"})
    assert (done.stdout.split(), done.stderr) == (["lm_eval.tasks.manager"], "")


def test_a_pth_left_without_its_hook_module_starts_nothing_and_prints_nothing(wheels, tmp_path):
    # Python < 3.15 would print a traceback at every start for an unguarded import line.
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, wheels["main"], wheels["companion"])
    (purelib_of(python) / f"{HOOK_MODULE}.py").unlink()  # its bytecode in __pycache__ is no module alone
    for env in ({}, {ENVIRONMENT_VARIABLE: "1"}):
        done = stock_or_ours(python, tmp_path, env)
        assert (done.stdout.split(), done.stderr) == (["lm_eval.tasks.manager"], "")


def test_a_hook_module_that_fails_to_import_is_one_line_at_start(wheels, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, wheels["main"], wheels["companion"])
    (purelib_of(python) / f"{HOOK_MODULE}.py").write_text("raise RuntimeError('damaged')\n")
    script = "import lm_eval.tasks; print(lm_eval.tasks.TaskManager.__module__)"
    done = run([python, "-c", script], cwd=tmp_path)
    assert done.stdout.split() == ["lm_eval.tasks.manager"]
    assert done.stderr == (
        "lm-eval-bias-autoload: the import hook cannot start (RuntimeError: damaged); reinstall it "
        "(pip install --force-reinstall lm-eval-bias-autoload) or remove it (pip uninstall lm-eval-bias-autoload)\n"
    )
    done = stock_or_ours(python, tmp_path, {ENVIRONMENT_VARIABLE: "1"})
    assert (done.stdout.split(), done.stderr) == (["lm_eval.tasks.manager"], "")


def test_the_companion_without_lm_eval_bias_steps_aside_without_a_word(wheels, tmp_path):
    # what `pip uninstall lm-eval-bias` leaves: pip removes no package that needed it
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, wheels["companion"])
    done = stock_or_ours(python, tmp_path)
    assert (done.stdout.split(), done.stderr) == (["lm_eval.tasks.manager"], "")


def write_fake_lm_eval(root: Path, reads_entry_points: bool) -> Path:
    """An ``lm_eval`` package whose ``TaskManager`` indexes the folders that the ``lm_eval.tasks``
    entry points name, or not, before its ``include_path``."""
    tasks = root / "lm_eval" / "tasks"
    tasks.mkdir(parents=True)
    (root / "lm_eval" / "__init__.py").write_text("")
    (tasks / "__init__.py").write_text(
        "from importlib.metadata import entry_points\n"
        "from importlib.util import find_spec\n"
        "from pathlib import Path\n"
        "from types import SimpleNamespace\n\n\n"
        "class TaskManager:\n"
        "    def __init__(self, include_path=None, include_defaults=True):\n"
        "        plugins = [Path(find_spec(e.value).origin).parent for e in entry_points(group='lm_eval.tasks')]\n"
        "        paths = include_path if isinstance(include_path, list) else [include_path] if include_path else []\n"
        f"        folders = {'plugins' if reads_entry_points else '[]'} + [Path(p) for p in paths]\n"
        "        self.task_index = {\n"
        "            p.stem: SimpleNamespace(yaml_path=str(p)) for f in folders for p in sorted(f.rglob('*.yaml'))\n"
        "        }\n"
    )
    return root


@pytest.mark.parametrize("reads_entry_points", [True, False])
def test_the_hook_steps_aside_where_lm_eval_reads_the_entry_point(wheel_env, tmp_path, reads_entry_points):
    fake = write_fake_lm_eval(tmp_path / "fake", reads_entry_points)
    script = (
        "from lm_eval.tasks import TaskManager; "
        "print(getattr(TaskManager, '_lm_eval_bias_shim', False), 'winoqueer' in TaskManager().task_index)"
    )
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={"PYTHONPATH": str(fake)})
    assert (done.stdout.split(), done.stderr) == ([str(not reads_entry_points), "True"], "")


def test_the_installed_lm_eval_does_not_read_the_entry_point_yet(wheel_env, tmp_path):
    """When this fails, the installed lm-eval indexes the folder of our ``lm_eval.tasks`` entry
    point itself (upstream PR #4015): the hook steps aside by itself, and the companion
    lm-eval-bias-autoload can go."""
    script = (
        "import lm_eval.tasks, lm_eval_bias, _lm_eval_bias_autoload as hook; "
        "print(lm_eval.tasks.TaskManager.__module__, "
        "hook.lm_eval_indexes_our_tasks(lm_eval.tasks, lm_eval_bias.tasks_dir()))"
    )
    # the hook off, so that lm_eval.tasks' TaskManager is lm-eval's own, as the hook sees it
    done = run([wheel_env, "-c", script], cwd=tmp_path, env={ENVIRONMENT_VARIABLE: "1"})
    assert (done.stdout.split(), done.stderr) == (["lm_eval.tasks.manager", "False"], "")
