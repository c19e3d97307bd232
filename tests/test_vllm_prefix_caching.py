"""vLLM's prefix caching and our log-likelihood tasks (vLLM issue #42019: ``prompt_logprobs`` can
depend on the order of the requests when prefix caching is on, which vLLM V1 turns on by default).

vLLM cannot be installed here: the loaded backend is a stand-in whose class is named as lm-eval's
(``VLLM``) and whose engine has the attributes vLLM's ``LLM`` has (``llm_engine.vllm_config.
cache_config.enable_prefix_caching``); a run by name stops just before lm-eval would build the
engine, where the model arguments it would get are read.
"""

import logging
import re
from types import SimpleNamespace

import lm_eval
import lm_eval.evaluator
import pytest

import lm_eval_bias
from fake_models import CountingLM
from helpers import winoqueer_results, write
from lm_eval_bias import backends, checks
from lm_eval_bias.errors import PreflightError
from lm_eval_bias.report import results

LOGLIKELIHOOD_TASK = "scm_prob_ratio"  # SCM builds its prompts in code: no data file needed
GENERATION_TASK = "scm_mc"

REFUSED_BY_NAME = (
    "scm_prob_ratio: --model vllm with enable_prefix_caching={asked}, and vLLM's prompt log-probabilities, which "
    "this task scores, can depend on the order of the requests when prefix caching is on (vLLM issue #42019, "
    "https://github.com/vllm-project/vllm/issues/42019; fix pending). Fix: --model_args "
    "...,enable_prefix_caching=False (or leave it out: lm-eval-bias then turns it off), or run the generation "
    "tasks alone with prefix caching"
)
REFUSED_LOADED = (
    "scm_prob_ratio: the vLLM engine runs with prefix caching on (vLLM's default unless "
    "enable_prefix_caching=False is given), and vLLM's prompt log-probabilities, which this task scores, can "
    "depend on the order of the requests when prefix caching is on (vLLM issue #42019, "
    "https://github.com/vllm-project/vllm/issues/42019; fix pending). Fix: --model_args "
    "...,enable_prefix_caching=False"
)


class VLLM(CountingLM):
    """Stands in for lm-eval's vllm wrapper: ``model`` is the engine it built (``vllm.LLM``), or
    absent with ``data_parallel_size`` > 1, where Ray workers build engines from ``model_args``."""

    def __init__(self, engine=None, model_args=None):
        super().__init__()
        if engine is not None:
            self.model = engine
        self.model_args = dict(model_args or {})


def v1_engine(prefix_caching: bool):
    """A ``vllm.LLM`` as vLLM's V1 keeps the resolved setting."""
    cache_config = SimpleNamespace(enable_prefix_caching=prefix_caching)
    return SimpleNamespace(llm_engine=SimpleNamespace(vllm_config=SimpleNamespace(cache_config=cache_config)))


def early_v1_engine(prefix_caching: bool):
    """Earlier V1 releases: the cache config on the engine itself."""
    cache_config = SimpleNamespace(enable_prefix_caching=prefix_caching)
    return SimpleNamespace(llm_engine=SimpleNamespace(cache_config=cache_config))


@pytest.fixture
def handed_to_lm_eval(monkeypatch):
    """What our simple_evaluate hands lm-eval's (which would build the engine next)."""
    calls = []

    def record(model, model_args, tasks, *args, **kwargs):
        calls.append({"model": model, "model_args": model_args})
        return {}

    monkeypatch.setattr(lm_eval.evaluator, "simple_evaluate", record)
    return calls


def run_by_name(model_args, tasks=(LOGLIKELIHOOD_TASK,), model="vllm"):
    return lm_eval_bias.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=list(tasks),
        limit=2,
        task_manager=lm_eval_bias.task_manager(include_defaults=False),
    )


# ---------------------------------------------------------------- by name, before the engine is built


def test_a_log_likelihood_run_on_vllm_gets_prefix_caching_off_and_says_so(handed_to_lm_eval, caplog):
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        run_by_name("pretrained=org/model,dtype=bfloat16", tasks=[LOGLIKELIHOOD_TASK, GENERATION_TASK])
    assert handed_to_lm_eval == [
        {"model": "vllm", "model_args": "pretrained=org/model,dtype=bfloat16,enable_prefix_caching=False"}
    ]
    assert (
        "--model vllm: enable_prefix_caching=False added to the model arguments for scm_prob_ratio (vLLM issue "
        "#42019, https://github.com/vllm-project/vllm/issues/42019; fix pending: prompt log-probabilities can "
        "depend on the order of the requests when prefix caching is on); the run's generations are the same, "
        "without prefix caching's speed-up"
    ) in caplog.messages


@pytest.mark.parametrize(
    ("model_args", "expected"),
    [
        ({"pretrained": "org/model"}, {"pretrained": "org/model", "enable_prefix_caching": False}),
        (None, "enable_prefix_caching=False"),
        ("pretrained=org/model,", "pretrained=org/model,enable_prefix_caching=False"),
        # given false, in any of the spellings lm-eval reads as false: left as written
        ("pretrained=org/model,enable_prefix_caching=False", "pretrained=org/model,enable_prefix_caching=False"),
        ("pretrained=org/model,enable_prefix_caching=false", "pretrained=org/model,enable_prefix_caching=false"),
        ({"pretrained": "org/model", "enable_prefix_caching": False}, None),
        # None is vLLM's own default, on: overridden (the later key wins in lm-eval's text)
        ("enable_prefix_caching=None", "enable_prefix_caching=None,enable_prefix_caching=False"),
        ({"enable_prefix_caching": None}, {"enable_prefix_caching": False}),
    ],
)
def test_the_model_arguments_lm_eval_gets(handed_to_lm_eval, model_args, expected):
    run_by_name(model_args)
    assert handed_to_lm_eval[0]["model_args"] == (model_args if expected is None else expected)


def test_generation_tasks_and_other_backends_keep_their_model_arguments(handed_to_lm_eval, caplog):
    with caplog.at_level(logging.INFO, logger="lm_eval_bias"):
        run_by_name("pretrained=org/model", tasks=[GENERATION_TASK])
        run_by_name("pretrained=org/model", model="sglang")
        # prefix caching asked for, on generation tasks alone: their generations are not affected
        run_by_name("pretrained=org/model,enable_prefix_caching=True", tasks=[GENERATION_TASK])
    assert [call["model_args"] for call in handed_to_lm_eval] == [
        "pretrained=org/model",
        "pretrained=org/model",
        "pretrained=org/model,enable_prefix_caching=True",
    ]
    assert not [message for message in caplog.messages if "enable_prefix_caching" in message]


@pytest.mark.parametrize(
    ("model_args", "asked"),
    [
        ("pretrained=org/model,enable_prefix_caching=True", "True"),
        ({"pretrained": "org/model", "enable_prefix_caching": "true"}, "true"),
        # vLLM would take 1 as on
        ("pretrained=org/model,enable_prefix_caching=1", "1"),
    ],
)
def test_prefix_caching_asked_for_is_refused_before_the_engine_is_built(handed_to_lm_eval, model_args, asked):
    with pytest.raises(PreflightError) as error:
        run_by_name(model_args, tasks=[LOGLIKELIHOOD_TASK, GENERATION_TASK])
    assert error.value.problems == [REFUSED_BY_NAME.format(asked=asked)]
    assert handed_to_lm_eval == []


# ---------------------------------------------------------------- the loaded engine (stock lm_eval, a model object)


def run_loaded(model, tasks=(LOGLIKELIHOOD_TASK,)):
    """lm-eval's own simple_evaluate, as the stock CLI runs it: our request gate sees the model."""
    return lm_eval.simple_evaluate(
        model=model, tasks=list(tasks), limit=2, task_manager=lm_eval_bias.task_manager(include_defaults=False)
    )


@pytest.mark.parametrize(
    "model",
    [
        VLLM(v1_engine(True)),
        VLLM(early_v1_engine(True)),
        # data_parallel_size > 1: no engine in this process; the setting left out is vLLM's default, on
        VLLM(model_args={"model": "org/model", "data_parallel_size": 2}),
        VLLM(model_args={"model": "org/model", "enable_prefix_caching": True}),
    ],
    ids=["v1-engine", "earlier-v1-engine", "data-parallel-default", "data-parallel-set"],
)
def test_an_engine_with_prefix_caching_on_is_refused_before_the_first_request(model):
    with pytest.raises(PreflightError, match=re.escape(REFUSED_LOADED)) as error:
        run_loaded(model, tasks=[LOGLIKELIHOOD_TASK, GENERATION_TASK])
    assert error.value.problems == [REFUSED_LOADED]
    assert model.requests == 0


@pytest.mark.parametrize(
    "model",
    [
        VLLM(v1_engine(False)),
        VLLM(early_v1_engine(False)),
        VLLM(model_args={"model": "org/model", "data_parallel_size": 2, "enable_prefix_caching": False}),
    ],
    ids=["v1-engine", "earlier-v1-engine", "data-parallel"],
)
def test_an_engine_without_prefix_caching_runs(model):
    run_loaded(model)
    assert model.requests > 0


def test_generation_tasks_run_with_prefix_caching_on():
    model = VLLM(v1_engine(True))
    run_loaded(model, tasks=[GENERATION_TASK])
    assert model.requests > 0


def test_the_setting_is_read_through_lm_evals_request_cache(tmp_path):
    """``--use_cache`` wraps the backend in lm-eval's CachingLM; the engine inside is what is read."""
    from lm_eval.api.model import CachingLM

    assert backends.vllm_prefix_caching(CachingLM(VLLM(v1_engine(True)), str(tmp_path / "cache.db"))) is True
    assert backends.vllm_prefix_caching(CachingLM(VLLM(v1_engine(False)), str(tmp_path / "other.db"))) is False


def test_the_rule_is_vllms_alone():
    tasks = list(lm_eval_bias.task_manager().load([LOGLIKELIHOOD_TASK])["tasks"].values())
    assert checks.check_prefix_caching("vllm", tasks, {"enable_prefix_caching": True}) == [
        REFUSED_BY_NAME.format(asked=True)
    ]
    assert checks.check_prefix_caching("sglang", tasks, {"enable_prefix_caching": True}) == []
    assert checks.check_prefix_caching(CountingLM(), tasks) == []


def test_a_run_without_prefix_caching_is_the_same_model_in_reports(tmp_path):
    """The argument added above names no other model: reports and leaderboards keep one row."""
    hf = winoqueer_results()
    vllm = winoqueer_results(score=55.0, ci=(53.0, 57.0))
    vllm["config"]["model_args"] = "pretrained=org/model-a,tensor_parallel_size=2,enable_prefix_caching=False"
    files = [write(tmp_path / "a" / "results_1.json", hf), write(tmp_path / "b" / "results_2.json", vllm)]
    runs = results.load_runs(files)
    assert [run.model for run in runs] == ["org/model-a", "org/model-a"]
