"""A run whose generations are cached (``--use_cache``) and that dies in the classifier stage
resumes without generating again, with the numbers of a run that never failed; and a cached
generation is never reused for a changed prompt or generation setting.

lm-eval's request cache (``CachingLM``) stores every answer once the backend call that made it
returns, before the filters (our Detoxify and VADER classifiers) run; the second run finds every
generation there. The model here is the tiny GPT-2 through lm-eval's ``hf`` backend, the classifier
the tiny Detoxify in Detoxify's own format, and the failure one a GPU can give at ``predict``.
"""

import json

import pytest
from lm_eval.models.huggingface import HFLM

import lm_eval_bias
from benchmark_data import tango_disclosure_rows
from lm_eval_bias.scorers.base import ScorerError

pytestmark = pytest.mark.e2e  # runs tiny real models end to end: `pytest -m "not slow"` includes it

TASK = "tango_disclosure"


@pytest.fixture
def model_calls(monkeypatch):
    """Every request that reaches the model itself (past lm-eval's cache), by request type."""
    calls = {"generate_until": 0, "loglikelihood": 0}
    for name in calls:
        original = getattr(HFLM, name)

        def counted(self, requests, *args, _original=original, _name=name, **kwargs):
            calls[_name] += len(requests)
            return _original(self, requests, *args, **kwargs)

        monkeypatch.setattr(HFLM, name, counted)
    return calls


@pytest.fixture
def disclosure_file(tmp_path):
    path = tmp_path / "disclosure.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in tango_disclosure_rows()), encoding="utf-8")
    return path


def run(tiny_gpt2, tiny_detoxify, data_file, cache=None, **kwargs):
    checkpoint, config_dir = tiny_detoxify["original"]
    metadata = {
        "data_file": str(data_file),
        "names_per_group": 1,
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    return lm_eval_bias.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2},dtype=float32",
        device="cpu",
        batch_size=16,
        tasks=[TASK],
        task_manager=lm_eval_bias.task_manager(metadata=metadata),
        use_cache=None if cache is None else str(cache),
        log_samples=True,
        **kwargs,
    )


def failing_predict(self, texts):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


def scored_samples(output) -> list[tuple]:
    return [(sample["doc_id"], sample["resps"], sample["filtered_resps"]) for sample in output["samples"][TASK]]


def test_a_run_that_died_in_the_classifier_resumes_from_the_cache_without_generating(
    tiny_gpt2, tiny_detoxify, disclosure_file, tmp_path, model_calls, monkeypatch
):
    import detoxify.detoxify

    cache = tmp_path / "cache" / "lm"
    with monkeypatch.context() as broken:
        broken.setattr(detoxify.detoxify.Detoxify, "predict", failing_predict)
        with pytest.raises(ScorerError, match=r"failed: RuntimeError: CUDA out of memory"):
            run(tiny_gpt2, tiny_detoxify, disclosure_file, cache)
    assert model_calls == {"generate_until": 16, "loglikelihood": 0}  # 4 identities x 2 forms x 2 names

    model_calls["generate_until"] = 0
    resumed = run(tiny_gpt2, tiny_detoxify, disclosure_file, cache)
    assert model_calls == {"generate_until": 0, "loglikelihood": 0}

    fresh = run(tiny_gpt2, tiny_detoxify, disclosure_file)
    assert model_calls == {"generate_until": 16, "loglikelihood": 0}
    assert resumed["results"][TASK] == fresh["results"][TASK]
    assert scored_samples(resumed) == scored_samples(fresh)
    assert resumed["results"][TASK]["sample_len"] == 16
    assert 0 <= resumed["results"][TASK]["toxicity,scored"] <= 1


def test_a_changed_prompt_or_generation_setting_is_generated_again(
    tiny_gpt2, tiny_detoxify, disclosure_file, tmp_path, model_calls
):
    cache = tmp_path / "cache" / "lm"
    run(tiny_gpt2, tiny_detoxify, disclosure_file, cache)
    assert model_calls["generate_until"] == 16

    # one setting changed: every prompt is asked again, none answered from the cache
    model_calls["generate_until"] = 0
    shorter = run(tiny_gpt2, tiny_detoxify, disclosure_file, cache, gen_kwargs="max_gen_toks=8")
    assert model_calls["generate_until"] == 16
    assert shorter["configs"][TASK]["generation_kwargs"]["max_gen_toks"] == 8

    # one disclosure form reworded: only its prompts are new (4 identities x 2 names: 8 of 16)
    reworded = [
        {
            **row,
            "gender_prompt": row["gender_prompt"].replace(" identified as ", " identified openly as "),
            "filled_gender_prompt": row["filled_gender_prompt"].replace(" identified as ", " identified openly as "),
        }
        for row in tango_disclosure_rows()
    ]
    disclosure_file.write_text("".join(json.dumps(row) + "\n" for row in reworded), encoding="utf-8")
    model_calls["generate_until"] = 0
    run(tiny_gpt2, tiny_detoxify, disclosure_file, cache)
    assert model_calls["generate_until"] == 8
