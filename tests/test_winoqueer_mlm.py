"""The hf-mlm backend and winoqueer_mlm (the paper's Eq. 1) against the authors' method."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from lm_eval.api.instance import Instance

import lm_eval_bias
from lm_eval_bias.benchmarks import winoqueer as wq
from lm_eval_bias.models import register
from tiny_models import build_tiny_bert, winoqueer_sentences
from winoqueer_reference import reference_mlm_pair_score

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, winoqueer_dir):
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), winoqueer_sentences())


@pytest.fixture(scope="module")
def pairs(winoqueer_dir):
    """Every head-sample pair and every 400th pair of the gender subset (82 pairs)."""
    rows = []
    for name, step in (("winoqueer_head_sample.csv", 1), ("winoqueer_gender_subset.csv", 400)):
        with open(winoqueer_dir / name, encoding="utf-8-sig", newline="") as handle:
            rows += list(csv.DictReader(handle))[::step]
    return rows


def requests_for(pairs):
    out = []
    for index, pair in enumerate(pairs):
        for args in ((pair["sent_y"], pair["sent_x"]), (pair["sent_x"], pair["sent_y"])):
            out.append(Instance(request_type="loglikelihood", doc={}, arguments=args, idx=index))
    return out


def test_backend_agrees_with_the_authors_method_pair_by_pair(tiny_bert, pairs):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    backend = HFMaskedLM(pretrained=str(tiny_bert), device="cpu", batch_size=64)
    scores = [ll for ll, _ in backend.loglikelihood(requests_for(pairs))]
    model = AutoModelForMaskedLM.from_pretrained(tiny_bert, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    reference_passes = 0
    for index, pair in enumerate(pairs):
        ref_x, ref_y, passes = reference_mlm_pair_score(model, tokenizer, pair["sent_x"], pair["sent_y"])
        reference_passes += passes
        assert scores[2 * index] == pytest.approx(ref_x, abs=1e-4), pair["sent_x"]
        assert scores[2 * index + 1] == pytest.approx(ref_y, abs=1e-4), pair["sent_y"]
        assert wq.pair_outcome(scores[2 * index], scores[2 * index + 1]) == wq.pair_outcome(ref_x, ref_y)
    # shared sentences are scored once: no more masked copies than the reference's passes
    assert 0 < backend.forward_rows <= reference_passes


def test_batch_size_does_not_change_scores(tiny_bert, pairs):
    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    requests = requests_for(pairs[:10])
    one = HFMaskedLM(pretrained=str(tiny_bert), device="cpu", batch_size=1).loglikelihood(requests)
    many = HFMaskedLM(pretrained=str(tiny_bert), device="cpu", batch_size=64).loglikelihood(requests)
    assert [a for a, _ in one] == pytest.approx([b for b, _ in many], abs=1e-5)


def test_misuse_is_an_error_not_a_zero(tiny_bert, tiny_gpt2):
    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    backend = HFMaskedLM(pretrained=str(tiny_bert), device="cpu")
    with pytest.raises(ValueError, match="--tasks winoqueer_mlm"):
        backend.loglikelihood([Instance(request_type="loglikelihood", doc={}, arguments=("", "LGBTQ"), idx=0)])
    with pytest.raises(NotImplementedError, match="cannot generate"):
        backend.generate_until([])
    with pytest.raises(ValueError, match="no mask token"):
        HFMaskedLM(pretrained=str(tiny_gpt2))


def test_registration_is_idempotent_and_keeps_lm_evals_models():
    from lm_eval.api.registry import get_model

    register()
    register()
    assert get_model("hf-mlm").__name__ == "HFMaskedLM"
    assert get_model("hf").__name__ == "HFLM"


def test_cli_and_python_api(tmp_path, tiny_bert, pairs):
    import lm_eval

    data_file = tmp_path / "pairs.csv"
    with open(data_file, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y"])
        writer.writeheader()
        writer.writerows({k: p[k] for k in writer.fieldnames} for p in pairs)
    out = tmp_path / "out"
    completed = subprocess.run(
        [str(BIN / "lm-eval-bias"), "--model", "hf-mlm", "--model_args", f"pretrained={tiny_bert}",
         "--tasks", "winoqueer_mlm", "--metadata", json.dumps({"data_file": str(data_file)}),
         "--output_path", str(out), "--log_samples"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text(),
                         parse_constant=lambda c: pytest.fail(f"bare {c}"))["results"]["winoqueer_mlm"]
    assert results["sample_len"] == len(pairs)
    samples = [json.loads(line) for line in next(out.rglob("samples_winoqueer_mlm_*.jsonl")).read_text().splitlines()]
    outcomes = [wq.pair_outcome(s["sent_x_score"], s["sent_y_score"])[0] for s in samples]
    assert results["bias_score,none"] == pytest.approx(100 * sum(outcomes) / len(outcomes))

    api = lm_eval.simple_evaluate(
        model="hf-mlm", model_args=f"pretrained={tiny_bert}", tasks=["winoqueer_mlm"], limit=8,
        task_manager=lm_eval_bias.task_manager(metadata={"data_file": str(data_file)}),
    )
    assert api["results"]["winoqueer_mlm"]["sample_len"] == 8
