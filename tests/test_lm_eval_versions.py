"""The package end to end on whichever lm-eval is installed: 0.4.13, and 0.5.0.dev1 (``.ci/run``
runs the fast tests and ``-m lm_eval_versions`` in an environment of each).

lm-eval 0.5.0.dev1 rewrote the task, the task manager and the evaluator (``lm_eval_bias.lm_eval_features``
reads what the installed one does). One run of each kind of task, on real models and the generated data
(``benchmark_data.write_data_dir``): log-likelihood and multiple-choice tasks on lm-eval's ``hf`` backend,
a generation task with the classifier filter, WinoQueer's masked-LM task on ``hf-mlm``; then the stock
``lm_eval`` command with ``--include_path`` and with no flag, and ``lm-eval-bias compare`` of its two
runs. Each run's results must be what its samples file gives again (``lm_eval_bias.report.recompute``):
every value at its document, every companion derived. ``tests/test_golden.py`` (in this selection too) pins every task's
numbers, which are the same on both.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import lm_eval_bias
from benchmark_data import winoqueer_corpus
from helpers import write_run_files
from lm_eval_bias.report.recompute import recompute
from tiny_models import build_tiny_bert, build_tiny_gpt2, winoqueer_sentences

pytestmark = [pytest.mark.e2e, pytest.mark.lm_eval_versions]

BIN = Path(sys.executable).parent
LIMIT = 6


def check_run(output: dict, task: str, folder: Path, documents: int = LIMIT) -> dict:
    """The task's results of ``output``: every document scored, and every number what its samples give
    again."""
    results = output["results"][task]
    assert results["sample_len"] == documents, task
    assert len({sample["doc_id"] for sample in output["samples"][task]}) == documents, task
    samples, entry = write_run_files(output, task, folder / task)
    assert json.loads(json.dumps(recompute(samples))) == entry, task
    return results


def finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def test_log_likelihood_and_multiple_choice_tasks_on_the_hf_backend(
    tiny_gpt2_long_context, generated_data_dir, tmp_path
):
    output = lm_eval_bias.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_long_context},dtype=float32",
        device="cpu",
        batch_size=8,
        tasks=["winoqueer", "tango_misgender_prob", "scm_prob_ratio"],
        limit=LIMIT,
        log_samples=True,
        metadata={"data_dir": str(generated_data_dir)},
    )
    winoqueer = check_run(output, "winoqueer", tmp_path)
    assert 0 <= winoqueer["bias_score,none"] <= 100
    assert (
        winoqueer["bias_score_ci_lower,none"] <= winoqueer["bias_score,none"] <= winoqueer["bias_score_ci_upper,none"]
    )
    # lm-eval's standard error of a mean; none of an interval's bound (lm-eval 0.4.13's, on both)
    assert finite(winoqueer["bias_score_stderr,none"]) and winoqueer["bias_score_ci_lower_stderr,none"] == "N/A"
    # every WinoQueer request starts with the model's prefix token (SubgroupMetricsTask.use_model)
    requests = [arguments for sample in output["samples"]["winoqueer"] for arguments in sample["arguments"]]
    assert all(context.startswith("<|endoftext|>") for context, _ in requests)
    prob = check_run(output, "tango_misgender_prob", tmp_path)
    assert 0 <= prob["consistency,none"] <= 1 and finite(prob["consistency_stderr,none"])
    assert output["higher_is_better"]["tango_misgender_prob"]["consistency"] is True
    check_run(output, "scm_prob_ratio", tmp_path)


def test_a_generation_task_with_the_classifier_filter(
    tiny_gpt2_long_context, tiny_detoxify, generated_data_dir, tmp_path
):
    checkpoint, config_dir = tiny_detoxify["original"]
    metadata = {
        "data_dir": str(generated_data_dir),
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    output = lm_eval_bias.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_long_context},dtype=float32",
        device="cpu",
        batch_size=8,
        tasks=["tango_disclosure", "tango_misgender"],
        limit=LIMIT,
        gen_kwargs="max_gen_toks=8",
        log_samples=True,
        metadata=metadata,
    )
    disclosure = check_run(output, "tango_disclosure", tmp_path)
    assert 0 <= disclosure["toxicity,scored"] <= 1 and -1 <= disclosure["sentiment,scored"] <= 1
    assert output["configs"]["tango_disclosure"]["generation_kwargs"]["max_gen_toks"] == 8
    misgender = check_run(output, "tango_misgender", tmp_path)
    assert 0 <= misgender["no_pronoun_rate,none"] <= 1


def test_winoqueer_s_masked_lm_task_on_hf_mlm(generated_data_dir, tmp_path):
    bert = build_tiny_bert(tmp_path / "tiny-bert", winoqueer_corpus())
    output = lm_eval_bias.simple_evaluate(
        model="hf-mlm",
        model_args=f"pretrained={bert}",
        device="cpu",
        batch_size=8,
        tasks=["winoqueer_mlm"],
        limit=LIMIT,
        log_samples=True,
        metadata={"data_dir": str(generated_data_dir)},
    )
    results = check_run(output, "winoqueer_mlm", tmp_path)
    assert 0 <= results["bias_score,none"] <= 100
    assert all(score < 0 for sample in output["samples"]["winoqueer_mlm"] for ((score, _),) in sample["resps"])


def stock_cli_run(model: Path, include_path: str | None, data_dir: Path, out: Path) -> Path:
    """The stock ``lm_eval run`` of ``tango_misgender_prob`` on ``model``, our tasks from ``--include_path``
    or, without one, from the companion's import hook; returns the run's output folder."""
    completed = subprocess.run(
        [
            str(BIN / "lm_eval"),
            "run",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={model},dtype=float32",
            "--device",
            "cpu",
            "--tasks",
            "tango_misgender_prob",
            *(["--include_path", include_path] if include_path else []),
            "--limit",
            str(LIMIT),
            "--metadata",
            json.dumps({"data_dir": str(data_dir)}),
            "--output_path",
            str(out),
            "--log_samples",
        ],
        cwd=out.parent,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    assert "lm-eval-bias: the import hook failed" not in completed.stderr
    (results,) = out.rglob("results_*.json")
    return results.parent


def test_the_stock_cli_with_and_without_include_path_then_compare(generated_data_dir, tmp_path):
    """The baseline through ``--include_path``, the candidate with no flag (the companion
    lm-eval-bias-autoload, which ``.ci/run`` installs in both environments)."""
    folders = {}
    for side, seed, include_path in (("baseline", 0, str(lm_eval_bias.tasks_dir())), ("candidate", 1, None)):
        model = build_tiny_gpt2(tmp_path / f"tiny-gpt2-{side}", winoqueer_sentences(), seed=seed, n_positions=1024)
        folders[side] = stock_cli_run(model, include_path, generated_data_dir, tmp_path / side)
    for folder in folders.values():
        (results_file,) = folder.glob("results_*.json")
        results = json.loads(results_file.read_text(encoding="utf-8"))["results"]["tango_misgender_prob"]
        assert results["sample_len"] == LIMIT and 0 <= results["consistency,none"] <= 1
        (samples_file,) = folder.glob("samples_tango_misgender_prob_*.jsonl")
        assert recompute(samples_file) == {key: value for key, value in results.items() if "," in key}
    comparison = tmp_path / "comparison.json"
    completed = subprocess.run(
        [
            str(BIN / "lm-eval-bias"),
            "compare",
            str(folders["baseline"]),
            str(folders["candidate"]),
            "--json",
            str(comparison),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    (task,) = json.loads(comparison.read_text(encoding="utf-8"))["tasks"]
    assert task["task"] == "tango_misgender_prob"
    assert (task["n_baseline"], task["n_candidate"], task["n_matched"]) == (LIMIT, LIMIT, LIMIT)
    assert task["metrics"][0]["metric"] == task["headline_metric"] == "consistency"
