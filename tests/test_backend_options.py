"""Generation settings against what each documented backend takes (lm_eval_bias.backend_options).

vLLM and SGLang cannot run here (no GPU, no engine installed): what they take is read from
their source (see the module's docstring), and these tests check every shipped task against it,
plus the preflight that refuses an option a backend would reject, before any request is sent.
"""

import re
from pathlib import Path

import lm_eval
import pytest
from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI, OpenAICompletionsAPI
from lm_eval.tasks import TaskManager
from lm_eval.tasks._index import Kind

import lm_eval_bias
from fake_models import CountingLM
from lm_eval_bias import adapters, backend_options, checks, lm_eval_features
from lm_eval_bias.errors import ConfigurationError, PreflightError

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MISGENDERING = str(SHARED / "tango" / "misgendering_prompts.csv")
BACKENDS = ("vllm", "sglang", "local-completions", "local-chat-completions")
GENERATION_TASKS = [
    "community_probes",
    "community_probes_custom",
    "community_probes_full",
    "gendercare_genderpair",
    "gendercare_genderpair_full",
    "scm_mc",
    "scm_score",
    "scm_story",
    "tango_disclosure",
    "tango_disclosure_full",
    "tango_misgender",
    "tango_misgender_sampled",
]


def generation_settings(task_manager) -> dict[str, dict]:
    """The ``generation_kwargs`` of every generation task a ``TaskManager`` indexes, by task
    name, read as lm-eval reads a task's config when it builds the task (``include`` resolved,
    the including file's keys over the included one's), without building the task (no data,
    no classifiers)."""
    settings = {}
    for name, entry in sorted(lm_eval_features.task_index(task_manager).items()):
        if entry.kind not in (Kind.TASK, Kind.PY_TASK):
            continue
        # lm-eval 0.4.13: TaskFactory._build_task starts from exactly this config.
        config = task_manager._factory._load_full_config(entry, None)
        if config.get("output_type") == "generate_until":
            settings[name] = dict(config.get("generation_kwargs") or {})
    return settings


def portability_problems(settings_by_task: dict[str, dict], backends=tuple(backend_options.ACCEPTED)) -> list[str]:
    """For each task and backend, what the preflight would refuse in these generation settings
    (an option the backend rejects or ignores, a value out of range, sampling without a
    temperature): one line each, ``task on --model backend: problem``."""
    problems = []
    for task, settings in settings_by_task.items():
        for backend in backends:
            problem = checks.generation_settings_problem(backend, settings)
            if problem:
                problems.append(f"{task} on --model {backend}: {problem}")
    return problems


def shipped_settings(*extra_paths):
    """Every task YAML of ours (and of extra_paths), read by lm-eval's own TaskManager."""
    manager = TaskManager(include_path=[lm_eval_bias.tasks_dir(), *map(str, extra_paths)], include_defaults=False)
    return generation_settings(manager)


# ---------------------------------------------------------------- every shipped task, statically


def test_every_generation_task_is_read_with_its_included_settings():
    settings = shipped_settings()
    assert sorted(settings) == GENERATION_TASKS
    # the _full variants take their settings from the YAML they include
    assert (
        settings["community_probes_full"]
        == settings["community_probes"]
        == {"until": [], "max_gen_toks": 64, "do_sample": True, "temperature": 1.0, "top_k": 50, "top_p": 1.0}
    )
    assert settings["tango_disclosure_full"] == settings["tango_disclosure"]
    assert settings["gendercare_genderpair_full"] == settings["gendercare_genderpair"]
    # an including file's generation_kwargs replace the included one's as a whole
    assert settings["tango_misgender_sampled"] == {
        "until": ["\n\n"],
        "max_gen_toks": 50,
        "do_sample": True,
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 0.95,
    }
    for task in ("scm_mc", "scm_score", "scm_story"):
        assert (settings[task]["temperature"], settings[task]["top_p"], settings[task]["top_k"]) == (0.6, 0.9, 50)


def test_no_shipped_task_sends_an_option_a_documented_backend_rejects():
    assert portability_problems(shipped_settings()) == []


def test_a_task_that_adds_an_unsupported_option_fails_the_check(tmp_path):
    community = Path(lm_eval_bias.tasks_dir()) / "community" / "community_probes.yaml"
    (tmp_path / "probes_paper.yaml").write_text(
        f"include: {community}\ntask: probes_paper\n"
        "generation_kwargs: {until: [], max_gen_toks: 64, do_sample: true, temperature: 1.0, top_k: 50,\n"
        "                    no_repeat_ngram_size: 3}\n"
    )
    problems = portability_problems(shipped_settings(tmp_path))
    servers = (
        "lm-eval sends it as a request field, which vLLM's, SGLang's and llama.cpp's OpenAI-compatible "
        "servers ignore (HTTP 200): the setting would silently not apply"
    )
    consequences = {
        "vllm": "vLLM's SamplingParams has no such field and raises TypeError at the first generation request",
        "sglang": "SGLang's SamplingParams has no such field and raises TypeError at the first generation request",
        "local-completions": servers,
        "local-chat-completions": servers,
    }
    assert problems == [
        f"probes_paper on --model {backend}: generation setting no_repeat_ngram_size not taken by --model {backend}: "
        f"{consequences[backend]}. Fix: leave no_repeat_ngram_size out of --gen_kwargs (or out of your task YAML's "
        "generation_kwargs), or run with --model hf, which passes every transformers generate() option on"
        for backend in BACKENDS
    ]


def test_each_backend_takes_its_own_names_and_not_the_others():
    settings = {"until": ["\n"], "max_gen_toks": 8, "do_sample": True, "temperature": 0.7}
    for backend in BACKENDS:
        assert backend_options.rejected(backend, settings) == []
    assert backend_options.rejected("vllm", {**settings, "max_new_tokens": 4, "repetition_penalty": 1.1}) == []
    # the wrapper passes stop= itself: a second one is a TypeError
    assert backend_options.rejected("vllm", {"stop": ["x"], "typical_p": 0.9}) == ["stop", "typical_p"]
    # lm-eval's sglang wrapper maps only max_gen_toks; max_tokens would reach SamplingParams
    assert backend_options.rejected("sglang", {"max_tokens": 4, "min_new_tokens": 2, "sampling_seed": 1}) == [
        "max_tokens"
    ]
    # llama.cpp calls it repeat_penalty: no name for it that every server honours
    assert backend_options.rejected("local-completions", {"repetition_penalty": 1.1, "min_p": 0.05}) == [
        "repetition_penalty"
    ]
    assert backend_options.rejected("local-chat-completions", {"suffix": "x", "top_k": 5}) == ["suffix"]
    # llama-cpp-python's server penalises repeats by default; its neutral value, which the others
    # may ignore, is the one setting of that name that passes
    assert backend_options.rejected("local-completions", {"repeat_penalty": "1.0"}) == []
    assert backend_options.rejected("local-completions", {"repeat_penalty": 1.1}) == ["repeat_penalty"]
    assert backend_options.rejected("vllm", {"repeat_penalty": 1.0}) == ["repeat_penalty"]
    assert backend_options.rejected("hf", {"no_repeat_ngram_size": 3}) == []


class VLLM(CountingLM):
    """Stands in for lm-eval's vllm backend (vLLM is not installed here): the backend is told
    by its class name, as lm-eval names it."""

    def loglikelihood(self, requests, disable_tqdm=False):
        raise AssertionError("not asked")

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise AssertionError("not asked")


def test_backends_are_named_as_on_the_command_line():
    assert backend_options.backend_name("vllm") == "vllm"
    assert backend_options.backend_name("hf") is None
    assert backend_options.backend_name(VLLM()) == "vllm"
    # lm-eval's own classes (built without their __init__, which needs lm-eval[api] and a server)
    assert backend_options.backend_name(object.__new__(LocalCompletionsAPI)) == "local-completions"
    assert backend_options.backend_name(object.__new__(LocalChatCompletion)) == "local-chat-completions"
    assert backend_options.backend_name(object.__new__(OpenAICompletionsAPI)) == "local-completions"


# ---------------------------------------------------------------- the preflight


def our_tasks(**metadata):
    return lm_eval_bias.task_manager(include_defaults=False, metadata=metadata)


def test_an_option_vllm_rejects_is_refused_before_the_model_loads():
    """By name: vLLM is not installed here, so a run that got as far as loading it would fail
    otherwise; the PreflightError comes first."""
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model="vllm",
            model_args="pretrained=x",
            tasks=["scm_mc", "scm_mc_prob"],
            gen_kwargs="no_repeat_ngram_size=3",
            task_manager=our_tasks(),
        )
    assert error.value.problems == [
        "scm_mc: generation setting no_repeat_ngram_size not taken by --model vllm: vLLM's SamplingParams has no "
        "such field and raises TypeError at the first generation request. Fix: leave no_repeat_ngram_size out of "
        "--gen_kwargs (or out of your task YAML's generation_kwargs), or run with --model hf, which passes every "
        "transformers generate() option on"
    ]


@pytest.mark.shared_data
def test_sampling_without_a_temperature_is_refused_on_a_server_before_it_starts():
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model="local-completions",
            model_args="base_url=http://127.0.0.1:9/v1/completions",
            tasks=["tango_misgender"],
            gen_kwargs={"do_sample": True},
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert error.value.problems == [
        "tango_misgender: generation setting do_sample=True with temperature 0 (lm-eval's default when none is "
        "given): --model local-completions decodes greedily at temperature 0, so nothing would be sampled. Fix: "
        "--gen_kwargs do_sample=True,temperature=T with T > 0 (e.g. 1.0), or leave do_sample out for greedy "
        "decoding"
    ]


def test_the_paper_setting_passes_the_preflight_on_hf_only():
    settings = {
        "until": [],
        "max_gen_toks": 64,
        "do_sample": True,
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 1.0,
        "no_repeat_ngram_size": 3,
    }
    assert checks.generation_settings_problem("hf", settings) is None
    assert checks.generation_settings_problem("sglang", settings) == (
        "generation setting no_repeat_ngram_size not taken by --model sglang: SGLang's SamplingParams has no such "
        "field and raises TypeError at the first generation request. Fix: leave no_repeat_ngram_size out of "
        "--gen_kwargs (or out of your task YAML's generation_kwargs), or run with --model hf, which passes every "
        "transformers generate() option on"
    )


@pytest.mark.shared_data
def test_an_option_the_loaded_backend_rejects_is_refused_before_the_first_request():
    """A model object passed to lm-eval's own simple_evaluate: the request gate checks each
    task's settings (--gen_kwargs merged) when the task builds its requests."""
    model = VLLM()
    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "tango_misgender: generation settings no_repeat_ngram_size, typical_p not taken by --model vllm: vLLM's "
            "SamplingParams has no such field and raises TypeError at the first generation request. Fix: leave "
            "no_repeat_ngram_size, typical_p out of --gen_kwargs"
        ),
    ):
        lm_eval.simple_evaluate(
            model=model,
            tasks=["tango_misgender"],
            limit=2,
            gen_kwargs="no_repeat_ngram_size=3,typical_p=0.9",
            task_manager=our_tasks(data_file=MISGENDERING),
        )
    assert model.requests == 0


@pytest.mark.shared_data
def test_portable_settings_run_on_the_loaded_backend():
    model = VLLM()
    lm_eval.simple_evaluate(
        model=model,
        tasks=["tango_misgender"],
        limit=2,
        gen_kwargs="top_k=5",
        task_manager=our_tasks(data_file=MISGENDERING),
    )
    assert model.requests == 2


# ---------------------------------------------------------------- repeats through a server


@pytest.mark.shared_data
def test_sampled_requests_reach_a_server_without_lm_evals_fixed_seed():
    """With one seed in every request, vLLM's, SGLang's and llama.cpp's servers would answer each
    repeat of a prompt with the same continuation. lm-eval's real payload builder, with and
    without our gate around it."""
    loaded = our_tasks(data_file=MISGENDERING).load(["scm_mc", "tango_misgender"])["tasks"]
    tasks = [loaded["scm_mc"], loaded["tango_misgender"]]
    server = object.__new__(LocalCompletionsAPI)  # no __init__: it needs lm-eval[api]
    server.model, server._max_gen_toks = "m", 256
    sampled = dict(loaded["scm_mc"].config.generation_kwargs)
    greedy = dict(loaded["tango_misgender"].config.generation_kwargs)

    def payload(settings, generate=True):
        return server._create_payload(["Prompt"], generate=generate, gen_kwargs=dict(settings), seed=1234, eos="<e>")

    assert payload(sampled)["seed"] == 1234  # lm-eval's own behaviour
    with adapters._fresh_draws_from_servers(server, tasks):
        assert payload(sampled) == {
            "prompt": ["Prompt"],
            "model": "m",
            "max_tokens": 128,
            "temperature": 0.6,
            "stop": ["<e>"],
            "top_p": 0.9,
            "top_k": 50,
        }
        assert payload(greedy)["seed"] == 1234  # greedy: the seed changes nothing, and stays
        assert payload({}, generate=False)["seed"] == 1234  # log-likelihoods
        assert payload({**sampled, "top_p": 0.5})["seed"] == 1234  # settings of no task of ours
    assert payload(sampled)["seed"] == 1234
    assert "_create_payload" not in vars(server)


def test_other_backends_are_left_alone_by_the_seed_gate():
    loaded = our_tasks().load(["scm_mc"])["tasks"]
    model = VLLM()
    with adapters._fresh_draws_from_servers(model, list(loaded.values())):
        assert "_create_payload" not in vars(model)


def test_chat_completions_without_chat_messages_are_refused_before_the_first_request():
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(
            model="local-chat-completions",
            model_args="base_url=http://127.0.0.1:9/v1/chat/completions",
            tasks=["scm_mc", "scm_mc_prob"],
            task_manager=our_tasks(),
        )
    assert error.value.problems == [
        "scm_mc_prob: --model local-chat-completions cannot score log-likelihoods (chat APIs return no "
        "log-probabilities of the prompt), and scm_mc_prob needs them. Fix: --model local-completions with a "
        "/v1/completions server that returns echo+logprobs, or --model hf / vllm; or run only the generation "
        "tasks on this backend",
        "scm_mc: --model local-chat-completions sends chat messages, which lm-eval builds only with "
        "--apply_chat_template. Fix: add --apply_chat_template (the server's chat template is then used), or "
        "--model local-completions for plain-text prompts",
    ]
    tasks = list(our_tasks().load(["scm_mc"])["tasks"].values())
    assert checks.check_chat_messages("local-chat-completions", tasks, True) == []
    assert checks.check_chat_messages(object.__new__(LocalChatCompletion), tasks, False)[0].startswith(
        "scm_mc: --model local-chat-completions sends chat messages"
    )
    assert checks.check_chat_messages("local-completions", tasks, False) == []
