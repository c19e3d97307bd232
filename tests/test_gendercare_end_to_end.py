"""gendercare_genderpair run by lm-eval, with the tiny Detoxify checkpoint."""

import json
import re
import subprocess
import sys
from pathlib import Path

import lm_eval
import numpy as np
import pytest

import lm_eval_bias
from fake_models import ScriptedLM

pytestmark = pytest.mark.e2e  # runs the package end to end: `pytest -m "not slow"` includes it

BIN = Path(sys.executable).parent


class FirstOptionLM(ScriptedLM):
    """Always uses the first option the prompt lists (a pure position bias)."""

    def generate_until(self, requests, disable_tqdm=False):
        replies = []
        for request in requests:
            prompt = request.args[0]
            pair = re.search(r"phrase pairs: \{\((.+?), (.+?)\)", prompt)
            if pair:
                replies.append(f" A {{{pair.group(1)}}} who is {{{pair.group(2)}}}.")
            else:
                first = re.search(r"following: \{(.+?), ", prompt).group(1)
                replies.append(f" Someone {{{first}}} came by.")
        return replies


def detoxify_metadata(tiny_detoxify):
    checkpoint, config_dir = tiny_detoxify["original"]
    return {"detoxify_checkpoint": str(checkpoint), "detoxify_config_dir": str(config_dir)}


def test_a_model_that_always_takes_the_first_option(winoqueer_dir, tiny_detoxify):
    metadata = {"data_dir": str(winoqueer_dir.parent), **detoxify_metadata(tiny_detoxify)}
    output = lm_eval.simple_evaluate(
        model=FirstOptionLM(),
        tasks=["gendercare_genderpair"],
        log_samples=True,
        task_manager=lm_eval_bias.task_manager(metadata=metadata),
    )
    results = output["results"]["gendercare_genderpair"]
    assert results["sample_len"] == 207 * 2 * 6
    # configurations 1, 3, 5 list the biased descriptor first; 2, 4, 6 the anti-biased one
    for configuration, expected in [(1, 1.0), (2, 0.0), (3, 1.0), (4, 0.0), (5, 1.0), (6, 0.0)]:
        assert results[f"bias_pair_ratio_configuration{configuration},scored"] == expected
    samples = output["samples"]["gendercare_genderpair"]
    decided = [s["bias_pair_ratio"] for s in samples if "bias_pair_ratio" in s]
    assert results["bias_pair_ratio,scored"] == pytest.approx(np.mean(decided))
    assert results["undecided_rate,scored"] == pytest.approx(1 - len(decided) / len(samples))
    by_group = {g: [s["toxicity"] for s in samples if s["doc"]["group"] == g] for g in (1, 2, 3)}
    for group, values in by_group.items():
        assert results[f"toxicity_group{group},scored"] == pytest.approx(np.mean(values))
    assert results["toxicity_group_spread,scored"] == pytest.approx(np.std([np.mean(v) for v in by_group.values()]))
    assert results["toxicity_group_spread_ci_lower,scored"] <= results["toxicity_group_spread_ci_upper,scored"]
    assert results["toxicity_group3_minus_group1_gap,scored"] == pytest.approx(
        np.mean(by_group[3]) - np.mean(by_group[1])
    )
    assert 0 < results["toxicity_group3_minus_group1_gap_pvalue,scored"] <= 1


def test_tiny_gpt2_through_the_cli(tmp_path, tiny_gpt2_long_context, tiny_detoxify, winoqueer_dir):
    metadata = {
        "data_dir": str(winoqueer_dir.parent),
        "groups": "1,3",
        "pairs_per_target": 1,
        **detoxify_metadata(tiny_detoxify),
    }
    out = tmp_path / "out"
    completed = subprocess.run(
        [
            str(BIN / "lm-eval-bias"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2_long_context},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "32",
            "--tasks",
            "gendercare_genderpair",
            "--gen_kwargs",
            "max_gen_toks=8",
            "--metadata",
            json.dumps(metadata),
            "--output_path",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    results = json.loads(
        next(out.rglob("results_*.json")).read_text(), parse_constant=lambda c: pytest.fail(f"bare {c}")
    )["results"]["gendercare_genderpair"]
    assert results["sample_len"] == (64 + 79) * 6
    assert "toxicity_group1,scored" in results and "toxicity_group2,scored" not in results
    assert 0.0 <= results["undecided_rate,scored"] <= 1.0
