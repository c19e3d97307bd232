"""Upstream report ``local_completions_echo_offsets.md``: lm-eval's ``local-completions`` reads a
continuation's log-probabilities at fixed positions of the server's echo, ``token_logprobs[ctxlen:-1]``,
which are the wrong ones for llama.cpp's server. Stock lm-eval only; the server's answers were
recorded from a real llama-cpp-python 0.3.36 server (``llama_cpp_echo_answers.json``).

The test asserts that the bug is still there: when it fails, lm-eval reads the echo right, and the
``LocalCompletionsAPI.parse_logprobs`` entry of ``lm_eval_bias/adapters.py`` can go.
"""

import json
from pathlib import Path

import pytest
from lm_eval.models.openai_completions import LocalCompletionsAPI

# the bug is on every supported lm-eval, so the workaround is needed on each
pytestmark = pytest.mark.lm_eval_versions

RECORDED = json.loads((Path(__file__).with_name("llama_cpp_echo_answers.json")).read_text(encoding="utf-8"))


def recorded(index):
    case = RECORDED["answers"][index]
    return case["answer"], case["sent_tokens"], case["ctxlen"]


def stock_reading(answer, sent_tokens, ctxlen):
    tokens = [0] * sent_tokens  # parse_logprobs reads only the context length
    ((loglikelihood, _),) = LocalCompletionsAPI.parse_logprobs(answer, [tokens], [ctxlen])
    return loglikelihood


def test_a_prompt_that_starts_with_bos_loses_the_first_continuation_token():
    answer, sent, ctxlen = recorded(0)  # "<|im_start|>The cat sat" + " on the mat."
    values = answer["choices"][0]["logprobs"]["token_logprobs"]
    assert answer["usage"] == {"prompt_tokens": sent, "completion_tokens": 1, "total_tokens": sent + 1}
    assert len(values) == sent  # the echo leaves the BOS out: one entry fewer than lm-eval expects
    continuation = values[ctxlen - 1 : -1]  # " on", " the", " mat", "."
    assert sum(continuation) == pytest.approx(-10.3955, abs=1e-4)  # transformers on the same weights
    # The bug: lm-eval reads from " the" on and drops " on". If this fails, lm-eval reads it right now.
    assert stock_reading(answer, sent, ctxlen) == pytest.approx(sum(values[ctxlen:-1]))
    assert stock_reading(answer, sent, ctxlen) == pytest.approx(-8.5455, abs=1e-4)


def test_nothing_generated_loses_the_last_continuation_token_as_well():
    answer, sent, ctxlen = recorded(1)  # "<|im_start|>Hello! How can I help you" + " today?"
    values = answer["choices"][0]["logprobs"]["token_logprobs"]
    assert answer["choices"][0]["finish_reason"] == "stop" and answer["usage"]["completion_tokens"] == 0
    assert len(values) == sent - 1  # no BOS in the echo and no generated token
    assert sum(values[ctxlen - 1 :]) == pytest.approx(-2.5095, abs=1e-4)  # " today", "?"
    # The bug: both continuation tokens are dropped, and the request scores 0 (probability 1).
    assert stock_reading(answer, sent, ctxlen) == 0
