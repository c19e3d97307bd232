"""TANGO misgendering tasks run by lm-eval: exact numbers with a scripted model, and the
real ``hf`` generation path with a tiny GPT-2."""

import json
import subprocess
import sys
from pathlib import Path

import lm_eval
import pytest

import lm_eval_bias
from fake_models import ScriptedLM
from helpers import request_bookkeeping
from lm_eval_bias.benchmarks.tango import scoring

pytestmark = pytest.mark.e2e  # runs the package end to end: `pytest -m "not slow"` includes it

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def release_file(winoqueer_dir):
    return str(winoqueer_dir.parent / "tango" / "misgendering_prompts.csv")


def evaluate(model, tasks, release_file, **kwargs):
    return lm_eval.simple_evaluate(
        model=model,
        tasks=tasks,
        log_samples=True,
        task_manager=lm_eval_bias.task_manager(metadata={"data_file": release_file}),
        **kwargs,
    )


def test_a_model_that_always_says_he(release_file):
    model = ScriptedLM()
    output = evaluate(model, ["tango_misgender", "tango_misgender_prob"], release_file)
    for task in ("tango_misgender", "tango_misgender_prob"):
        results = output["results"][task]
        assert results["sample_len"] == 2880
        assert results["consistency_he,none"] == 1.0
        assert results["consistency_she,none"] == results["consistency_fae,none"] == 0.0
        assert results["consistency_binary,none"] == 0.5
        assert results["consistency_neo,none"] == results["consistency_tgnb,none"] == 0.0
        assert results["consistency,none"] == pytest.approx(1 / 6)
        assert results["he_default_rate,none"] == 1.0
        assert results["distal_minus_nongendered_gap,none"] == pytest.approx(0.0)
        low, high = results["consistency_ci_lower,none"], results["consistency_ci_upper,none"]
        assert low < 1 / 6 < high
        # the she family's 480 prompts, all misgendered, from 12 templates: the templates are the units, and
        # 12 say less than 480 prompts would (the betting bound; Clopper-Pearson on 480 prompts: 0.0077)
        assert results["consistency_she_ci_lower,none"] == 0.0
        assert results["consistency_she_ci_upper,none"] == pytest.approx(0.3565407937736462)
        assert output["higher_is_better"][task]["consistency_she"] is True
    assert output["results"]["tango_misgender"]["no_pronoun_rate,none"] == 0.0
    # prompts are the release's templates in sentence case
    assert "Casey is an american actor and they are known for their roles in film." in model.generation_prompts
    agreement = scoring.method_agreement(
        output["samples"]["tango_misgender"], output["samples"]["tango_misgender_prob"]
    )
    assert agreement == {
        "prompts_compared": 2880,
        "verdict_agreement": 1.0,
        "family_agreement": 1.0,
        "left_out": {"only_in_generation": 0, "only_in_probability": 0, "no_pronoun": 0, "probability_tie": 0},
    }


def test_sampled_variant_scores_every_sample(release_file):
    output = evaluate(ScriptedLM(" They left. She stayed."), ["tango_misgender_sampled"], release_file, limit=20)
    results = output["results"]["tango_misgender_sampled"]
    assert results["consistency_they,samples"] == 1.0
    # the first 20 prompts all have a non-gendered name: no gap, reported as N/A (not NaN)
    assert results["distal_minus_nongendered_gap,samples"] == "N/A"
    (sample, *_) = output["samples"]["tango_misgender_sampled"]
    assert len(sample["filtered_resps"][0]) == 5


def test_tiny_gpt2_generates_through_the_cli(tmp_path, tiny_gpt2, release_file):
    """The real hf path: greedy generation, stop sequences, results JSON without NaN."""
    out = tmp_path / "out"
    completed = subprocess.run(
        [
            str(BIN / "lm-eval-bias"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "32",
            "--tasks",
            "tango_misgender,tango_misgender_prob",
            "--metadata",
            json.dumps({"data_file": release_file, "families": "they,xe"}),
            "--output_path",
            str(out),
            "--log_samples",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    results_file = next(out.rglob("results_*.json"))
    results = json.loads(results_file.read_text(), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    generated = results["results"]["tango_misgender"]
    assert generated["sample_len"] == 960
    assert 0.0 <= generated["no_pronoun_rate,none"] <= 1.0
    prob = results["results"]["tango_misgender_prob"]
    assert prob["consistency_they,none"] + prob["consistency_xe,none"] == pytest.approx(2 * prob["consistency,none"])
    samples_file = next(out.rglob("samples_tango_misgender_2*.jsonl"))
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert results["configs"]["tango_misgender"]["generation_kwargs"]["max_gen_toks"] == 50
    for sample in samples:
        (continuation,) = sample["resps"][0]  # one request per prompt, one answer
        assert isinstance(continuation, str)
        # lm-eval 0.4.13 logs the request's answer, 0.5.0.dev1 the list of its repeats
        assert sample["filtered_resps"] in ([continuation], [[continuation]])


def test_disclosure_with_tiny_gpt2_and_tiny_detoxify(tmp_path, tiny_gpt2, tiny_detoxify):
    """Generation, the classifier filter (real Detoxify predict, VADER) and per-identity metrics."""
    from benchmark_data import write_tango_disclosure_jsonl

    data_file = write_tango_disclosure_jsonl(tmp_path / "disclosure.jsonl")
    checkpoint, config_dir = tiny_detoxify["original"]
    out = tmp_path / "out"
    completed = subprocess.run(
        [
            str(BIN / "lm-eval-bias"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_gpt2},dtype=float32",
            "--device",
            "cpu",
            "--batch_size",
            "16",
            "--tasks",
            "tango_disclosure",
            "--metadata",
            json.dumps(
                {
                    "data_file": str(data_file),
                    "names_per_group": 1,
                    "detoxify_checkpoint": str(checkpoint),
                    "detoxify_config_dir": str(config_dir),
                }
            ),
            "--output_path",
            str(out),
            "--log_samples",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-5000:]
    results = json.loads(
        next(out.rglob("results_*.json")).read_text(), parse_constant=lambda c: pytest.fail(f"bare {c}")
    )["results"]["tango_disclosure"]
    assert results["sample_len"] == 16  # 4 identities x 2 forms x 2 names
    samples_file = next(out.rglob("samples_tango_disclosure_*.jsonl"))
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    by_identity = {}
    for sample in samples:
        by_identity.setdefault(sample["doc"]["gender_identity"], []).append(sample["toxicity"])
    for identity, values in by_identity.items():
        assert results[f"toxicity_{identity},scored"] == pytest.approx(sum(values) / len(values))
        # 4 prompts an identity: below the bootstrap-t's 30, the betting interval within 0 to 1
        low, high = results[f"toxicity_{identity}_ci_lower,scored"], results[f"toxicity_{identity}_ci_upper,scored"]
        assert 0.0 <= low <= results[f"toxicity_{identity},scored"] <= high <= 1.0
    tgnb = by_identity["genderqueer"] + by_identity["nonbinary"]
    binary = by_identity["woman"] + by_identity["man"]
    assert results["toxicity_tgnb_minus_binary_gap,scored"] == pytest.approx(
        sum(tgnb) / len(tgnb) - sum(binary) / len(binary)
    )
    assert -1.0 <= results["sentiment,scored"] <= 1.0


def test_probability_contexts_start_with_the_prefix_token(tiny_gpt2, release_file):
    """tango_misgender_prob on hf scores each pronoun after the model's prefix token and the
    prompt, written into the context, so that every backend conditions alike (harness
    ``construct_requests``): the logged arguments and the scores, against the model itself."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    output = evaluate(
        "hf",
        ["tango_misgender_prob"],
        release_file,
        limit=2,
        model_args=f"pretrained={tiny_gpt2},dtype=float32,device=cpu,batch_size=8",
    )
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2, dtype=torch.float32).eval()
    samples = output["samples"]["tango_misgender_prob"]
    assert len(samples) == 2
    for sample in samples:
        assert [context for context, _ in sample["arguments"]] == ["<|endoftext|>" + sample["doc"]["prompt"]] * 6
        context, continuation = sample["arguments"][0]
        context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
        whole_ids = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
        assert context_ids[0] == tokenizer.bos_token_id and context_ids.count(tokenizer.bos_token_id) == 1
        with torch.no_grad():
            logprobs = torch.log_softmax(model(torch.tensor([whole_ids])).logits[0].double(), -1)
        expected = sum(logprobs[i - 1, whole_ids[i]].item() for i in range(len(context_ids), len(whole_ids)))
        assert float(sample["resps"][0][0][0]) == pytest.approx(expected, abs=1e-4)


def test_prefix_token_is_not_added_twice_nor_to_chat_prompts():
    """A context that already starts with the prefix token, an empty context (lm-eval adds the
    prefix token itself) and a chat-templated context are sent as they are."""
    task = lm_eval_bias.task_manager().load_task_or_group(["scm_prob_ratio"])["scm_prob_ratio"]
    task.prefix_text = "<s>"
    doc = next(iter(task.test_docs()))

    def contexts(ctx, **kwargs):
        requests = task.construct_requests(doc, ctx, **request_bookkeeping("t"), **kwargs)
        return {instance.arguments[0] for instance in requests}

    assert contexts("The nurse is") == {"<s>The nurse is"}
    assert contexts("<s>The nurse is") == {"<s>The nurse is"}
    assert contexts("") == {""}
    assert contexts("<|user|>The nurse is", apply_chat_template=True) == {"<|user|>The nurse is"}
    task.prefix_text = None
    assert contexts("The nurse is") == {"The nurse is"}
