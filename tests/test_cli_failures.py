"""Small things users hit on their first runs, each one line and exit code 2 instead of a traceback:
a backend whose package is not installed (``--model vllm``), a model that is not in the local
Hugging Face cache while the hub is offline or unreachable (the README's first run); and a user's
own task named like one of ours, which is theirs: it scores as the stock lm-eval scores it and is
never read as ours. All of it on every supported lm-eval (``lm_eval_versions``)."""

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

import lm_eval_bias
from benchmark_data import write_users_multiple_choice_task
from helpers import run_cli
from lm_eval_bias import adapters, backends, evaluate
from lm_eval_bias.cache_key import hub_cache_dir
from lm_eval_bias.errors import MissingBackendPackageError, ModelFilesUnavailableError
from lm_eval_bias.task_origin import ours_requested

pytestmark = pytest.mark.lm_eval_versions

BIN = Path(sys.executable).parent


def package_message(model: str) -> str:
    """What both command lines say for ``--model MODEL`` without its package."""
    install = {
        "vllm": "pip install vllm",
        "sglang": "pip install sglang (see https://docs.sglang.ai/start/install.html)",
    }[model]
    return (
        f"lm-eval-bias: error: --model {model} needs the Python package {model}, which is not installed in this "
        f"environment ({sys.prefix}). Fix: {install}, or run with another backend such as --model hf"
    )


def files_message(cache: Path, why: str) -> str:
    """What both command lines say for ``pretrained=gpt2`` when it is not in ``cache``."""
    return (
        f"lm-eval-bias: error: --model hf: cannot load gpt2: it is not in the local Hugging Face cache ({cache}), "
        f"and {why}. Fix: download it on a machine with network (hf download gpt2), copy that machine's Hugging "
        "Face cache here and set HF_HOME to it, or pass a local copy: --model_args pretrained=/path/to/gpt2"
    )


def run(command, cwd, env=None, timeout=300) -> subprocess.CompletedProcess:
    """A command line as a user runs it (offline, as every test: tests/conftest.py); ``env``: the
    variables to set, None for those to unset."""
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={name: value for name, value in {**os.environ, **(env or {})}.items() if value is not None},
    )


def unlogged_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` but lm-eval's log lines (``2026-01-01:12:00:00 INFO ...``)."""
    return [line for line in stderr.splitlines() if not (line[:4].isdigit() and line[4:5] == "-")]


@pytest.fixture
def users_task_dir(tmp_path) -> Path:
    """A user's own multiple-choice task named ``winoqueer``, as a YAML on their --include_path.
    Its documents meet lm-eval's logits-cache grouping, which our adapters change for our tasks."""
    return write_users_task(tmp_path / "mine")


def write_users_task(folder: Path) -> Path:
    return write_users_multiple_choice_task(folder, "winoqueer", "winoqueer.yaml")


# --------------------------------------------------------------------------
# A backend whose package is not installed


@pytest.mark.skipif(
    find_spec("vllm") is not None or find_spec("sglang") is not None, reason="vllm or sglang is installed"
)
@pytest.mark.parametrize(
    "argv, model",
    [
        (["--model", "vllm", "--model_args", "pretrained=gpt2", "--tasks", "winoqueer"], "vllm"),
        (["run", "--tasks", "winoqueer", "--model=vllm"], "vllm"),
        (["-M", "sglang", "--tasks", "winoqueer", "--limit", "2"], "sglang"),
    ],
)
def test_a_backend_without_its_package_is_one_line_before_anything_loads(argv, model, tmp_path):
    # no data file anywhere: a task built first would fail on its data instead
    completed = run([sys.executable, "-m", "lm_eval_bias", *argv], cwd=tmp_path)
    assert (completed.returncode, completed.stdout, completed.stderr) == (2, "", package_message(model) + "\n")


@pytest.mark.skipif(find_spec("vllm") is not None, reason="vllm is installed")
def test_simple_evaluate_names_a_missing_package_in_place_of_lm_evals_error():
    # by name, as the checks before the model loads run for backends that are not installed
    with pytest.raises(MissingBackendPackageError) as refused:
        lm_eval_bias.simple_evaluate(
            model="vllm",
            model_args="pretrained=gpt2",
            tasks=["scm_mc"],
            limit=2,
            task_manager=lm_eval_bias.task_manager(include_defaults=False),
        )
    assert f"lm-eval-bias: error: {refused.value}" == package_message("vllm")
    assert isinstance(refused.value, ModuleNotFoundError) and refused.value.name == "vllm"
    assert isinstance(refused.value.__cause__, ModuleNotFoundError)  # lm-eval's own, kept for a debugger


def stock_load_error(task_manager) -> BaseException:
    """The error lm-eval 0.4.13's own simple_evaluate raises for ``--model vllm`` without vllm
    (its module imports vllm when the model loads), with its traceback."""
    import lm_eval.evaluator

    with pytest.raises(ModuleNotFoundError) as failed:
        lm_eval.evaluator.simple_evaluate(
            model="vllm", model_args="pretrained=gpt2", tasks=["winoqueer"], task_manager=task_manager
        )
    return failed.value


@pytest.mark.skipif(find_spec("vllm") is not None, reason="vllm is installed")
def test_the_stock_cli_explains_a_load_failure_for_our_tasks_only(users_task_dir, monkeypatch, capsys):
    ours = stock_load_error(lm_eval_bias.task_manager(include_defaults=False))
    theirs = stock_load_error(lm_eval_bias.task_manager([users_task_dir], include_defaults=False))
    assert f"lm-eval-bias: error: {backends.load_failure(ours, ours_only=True)}" == package_message("vllm")
    assert backends.load_failure(theirs, ours_only=True) is None
    # the stock CLI's excepthook: ours ends as lm-eval-bias ends, theirs gets lm-eval's traceback
    monkeypatch.setattr(sys, "excepthook", lambda kind, error, trace: print(f"traceback of {kind.__name__}"))
    adapters._install_excepthook()
    with pytest.raises(SystemExit) as ended:
        sys.excepthook(type(ours), ours, ours.__traceback__)
    sys.excepthook(type(theirs), theirs, theirs.__traceback__)
    captured = capsys.readouterr()
    assert (ended.value.code, captured.err, captured.out) == (
        2,
        package_message("vllm") + "\n",
        "traceback of ModuleNotFoundError\n",
    )


@pytest.mark.e2e
@pytest.mark.skipif(find_spec("vllm") is not None, reason="vllm is installed")
def test_the_stock_cli_names_the_missing_package_for_our_tasks(tmp_path):
    completed = run(
        [BIN / "lm_eval", "--model", "vllm", "--model_args", "pretrained=gpt2", "--tasks", "winoqueer"], tmp_path
    )
    assert (completed.returncode, unlogged_lines(completed.stderr)) == (2, [package_message("vllm")])


# --------------------------------------------------------------------------
# The README's first run on a machine that cannot download gpt2


def test_an_offline_model_not_in_the_cache_is_refused_before_tasks_build(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(evaluate, "build_tasks", lambda *args: pytest.fail("a task was built"))
    with pytest.raises(ModelFilesUnavailableError) as refused:
        lm_eval_bias.simple_evaluate(model="hf", model_args="pretrained=gpt2", tasks=["winoqueer"])
    assert f"lm-eval-bias: error: {refused.value}" == files_message(
        tmp_path / "hub", "HF_HUB_OFFLINE=1 forbids downloading it"
    )
    assert isinstance(refused.value, OSError)


def test_a_model_in_the_cache_or_a_local_folder_is_not_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "hub" / "models--openai-community--gpt2").mkdir(parents=True)
    assert backends.uncached_model("hf", {"pretrained": "openai-community/gpt2"}) is None
    assert backends.uncached_model("hf", {"pretrained": str(tmp_path)}) is None
    assert backends.uncached_model("hf", {"pretrained": "gpt2", "cache_dir": str(tmp_path)}) is None
    assert backends.uncached_model("local-completions", {"pretrained": "gpt2"}) is None
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE")
    assert backends.uncached_model("hf", {"pretrained": "gpt2"}) is None  # transformers may download it


def test_an_unreachable_hub_is_named_with_its_reason(monkeypatch):
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    # transformers' error on a machine without network: OSError from the hub's, from the connection's
    try:
        try:
            try:
                raise ConnectionError("[Errno -2] Name or service not known")
            except ConnectionError as connection:
                raise LocalEntryNotFoundError("cannot find the requested files in the local cache") from connection
        except LocalEntryNotFoundError as missing:
            raise OSError("We couldn't connect to 'https://huggingface.co' to load the files") from missing
    except OSError as error:
        failed = error
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE")
    explained = backends.load_error_explained(failed, "hf", "pretrained=gpt2,dtype=float32")
    assert isinstance(explained, ModelFilesUnavailableError) and isinstance(explained, OSError)
    assert f"lm-eval-bias: error: {explained}" == files_message(
        hub_cache_dir(),
        f"the Hugging Face hub ({constants.ENDPOINT}) cannot be reached ([Errno -2] Name or service not known)",
    )
    assert backends.load_error_explained(OSError("disk full"), "hf", "pretrained=gpt2") is None


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["lm-eval-bias", "lm_eval"])
def test_the_readme_first_run_without_the_model_is_one_line(command, tmp_path):
    completed = run(
        [BIN / command, "--model", "hf", "--model_args", "pretrained=gpt2", "--tasks", "winoqueer", "--limit", "2"],
        tmp_path,
        env={"HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_CACHE": None, "HF_HUB_OFFLINE": "1"},
    )
    message = files_message(tmp_path / "hf-home" / "hub", "HF_HUB_OFFLINE=1 forbids downloading it")
    assert (completed.returncode, unlogged_lines(completed.stderr)) == (2, [message])


# --------------------------------------------------------------------------
# A user's own task named like one of ours


def test_a_users_task_named_like_ours_is_not_ours(users_task_dir):
    theirs = lm_eval_bias.task_manager([users_task_dir], include_defaults=False)
    assert ours_requested(["winoqueer", "lm_eval_bias_winoqueer", "winoqueer_mlm"], theirs) == ["winoqueer_mlm"]
    assert ours_requested(["winoqueer", "lm_eval_bias_winoqueer"]) == ["winoqueer", "lm_eval_bias_winoqueer"]


@pytest.fixture(scope="module")
def users_task_runs(tmp_path_factory, tiny_gpt2) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """The user's task run by lm-eval-bias and by the stock lm-eval without our hook (side by side)."""
    root = tmp_path_factory.mktemp("users-task")
    folder = write_users_task(root / "mine")
    arguments = ["--model", "hf", "--model_args", f"pretrained={tiny_gpt2},dtype=float32", "--device", "cpu"]
    arguments += ["--include_path", folder, "--tasks", "winoqueer", "--log_samples"]
    commands = {
        "ours": ([BIN / "lm-eval-bias"], {}),
        "stock": ([BIN / "lm_eval"], {"LM_EVAL_BIAS_NO_AUTOLOAD": "1"}),
    }
    started = {
        name: subprocess.Popen(
            [str(part) for part in [*command, *arguments, "--output_path", root / name]],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        for name, (command, env) in commands.items()
    }
    runs = {}
    for name, process in started.items():
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-4000:]
        runs[name] = (subprocess.CompletedProcess(process.args, 0, out, err), root / name)
    return runs


def run_outputs(output: Path) -> tuple[dict, list[dict]]:
    """A run's results file and its samples of ``winoqueer``."""
    (results,) = output.glob("*/results_*.json")
    (samples,) = output.glob("*/samples_winoqueer_*.jsonl")
    return json.loads(results.read_text()), [json.loads(line) for line in samples.read_text().splitlines()]


@pytest.mark.e2e
def test_a_users_task_named_like_ours_scores_as_with_the_stock_lm_eval(users_task_runs):
    (_, ours), (_, stock) = users_task_runs["ours"], users_task_runs["stock"]
    (our_results, our_samples), (stock_results, stock_samples) = run_outputs(ours), run_outputs(stock)
    assert our_results["results"] == stock_results["results"]
    assert our_results["configs"] == stock_results["configs"]
    fields = ("doc_id", "resps", "filtered_resps", "acc")
    assert [{key: sample[key] for key in fields} for sample in our_samples] == [
        {key: sample[key] for key in fields} for sample in stock_samples
    ]


@pytest.mark.e2e
def test_a_users_task_named_like_ours_is_read_as_theirs(users_task_runs, capsys):
    completed, output = users_task_runs["ours"]
    results, _ = run_outputs(output)
    metadata = results["configs"]["winoqueer"]["metadata"]
    assert "benchmark" not in metadata and Path(metadata["config_source"]).parent.name == "mine"
    assert "[lm_eval_bias]" not in completed.stderr  # none of our tasks' lines (data file, options)
    # check, leaderboard and compare read it as any task of the user's, not as our WinoQueer
    code, out, err = run_cli(["check", output, "--max", "winoqueer:acc=1"], capsys)
    assert (code, err) == (0, "") and "PASS  winoqueer:acc <= 1" in out
    code, out, err = run_cli(["check", output, "--max", "winoqueer=65"], capsys)
    assert code == 1 and "winoqueer has no default metric (its metadata names no headline_metric)" in out
    code, out, _ = run_cli(["leaderboard", output], capsys)
    assert (code, out.splitlines()[0]) == (0, "| model | winoqueer:acc |")
    code, out, err = run_cli(["compare", output, users_task_runs["stock"][1]], capsys)
    assert (code, err) == (
        2,
        "lm-eval-bias compare: no task can be compared: winoqueer: not a task of lm-eval-bias, so how its "
        "per-document values aggregate is not known; give two runs of the same tasks\n",
    )
