"""Reading echoed prompt log-probabilities of a /v1/completions server (no server needed: the
answers are in the shapes llama.cpp's and OpenAI-style servers give, see tests/test_llama_server.py
for the real one)."""

import pytest
from lm_eval.models.openai_completions import LocalCompletionsAPI

from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.models.completions_api import continuation_logprobs

BOS, THE, CAT, SAT, DOT = 1, 504, 2368, 3894, 30
# What lm-eval sends for context "<BOS>The cat", continuation " sat.": 5 tokens, context length 3
SENT = [BOS, THE, CAT, SAT, DOT]
CTXLEN = 3
# log P(token | everything before it), for each token after BOS, and of a generated token
LOGPROB = {THE: -3.0, CAT: -5.0, SAT: -2.0, DOT: -0.5}
GENERATED = -0.25


def answer(logprobs, *, prompt_tokens=None, completion_tokens=None, finish_reason="length"):
    top = [None if value is None else {"x": value} for value in logprobs]
    output = {
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "logprobs": {"token_logprobs": list(logprobs), "top_logprobs": top},
            }
        ]
    }
    if prompt_tokens is not None:
        output["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    return output


def llama_cpp_answer(generated: bool):
    """llama-cpp-python 0.3.36: a leading BOS is left out of the echo, the first echoed token's
    log-probability is null, and an end-of-generation token is not generated at all."""
    values = [None, LOGPROB[CAT], LOGPROB[SAT], LOGPROB[DOT]] + ([GENERATED] if generated else [])
    return answer(
        values,
        prompt_tokens=len(SENT),
        completion_tokens=int(generated),
        finish_reason="length" if generated else "stop",
    )


def test_lm_evals_own_reading_of_a_llama_cpp_answer_is_one_token_off():
    """What the aligned reading fixes: lm-eval takes token_logprobs[ctxlen:-1]."""
    ((with_token, _),) = LocalCompletionsAPI.parse_logprobs(llama_cpp_answer(True), [SENT], [CTXLEN])
    ((without_token, _),) = LocalCompletionsAPI.parse_logprobs(llama_cpp_answer(False), [SENT], [CTXLEN])
    assert with_token == LOGPROB[DOT]  # " sat" is lost
    assert without_token == 0  # both tokens lost


@pytest.mark.parametrize("generated", [True, False])
def test_llama_cpp_answers_give_the_continuations_tokens(generated):
    ((loglik, greedy),) = continuation_logprobs(llama_cpp_answer(generated), [SENT], [CTXLEN], BOS)
    assert loglik == LOGPROB[SAT] + LOGPROB[DOT]
    assert greedy is True  # each scored token is its position's top token here


def test_openai_style_answers_every_prompt_token_and_one_generated():
    values = [None, LOGPROB[THE], LOGPROB[CAT], LOGPROB[SAT], LOGPROB[DOT], GENERATED]
    for output in (answer(values, prompt_tokens=5, completion_tokens=1), answer(values)):
        ((loglik, _),) = continuation_logprobs(output, [SENT], [CTXLEN])
        assert loglik == LOGPROB[SAT] + LOGPROB[DOT]
    # Without usage, the length says which: one short with nothing generated is llama.cpp's EOG case.
    ((loglik, _),) = continuation_logprobs(answer(values[1:5], finish_reason="stop"), [SENT], [CTXLEN], BOS)
    assert loglik == LOGPROB[SAT] + LOGPROB[DOT]


def test_a_batch_of_choices_is_read_in_index_order():
    first = [None, LOGPROB[CAT], LOGPROB[SAT], LOGPROB[DOT], GENERATED]
    second = [None, -1.0, -7.0, GENERATED]
    output = {
        "choices": [
            {
                "index": 1,
                "finish_reason": "length",
                "logprobs": {
                    "token_logprobs": second,
                    "top_logprobs": [None, {"a": -0.5}, {"b": -7.0}, {"c": GENERATED}],
                },
            },
            {
                "index": 0,
                "finish_reason": "length",
                "logprobs": {"token_logprobs": first, "top_logprobs": [None] + [{"d": v} for v in first[1:]]},
            },
        ]
    }
    results = continuation_logprobs(output, [SENT, [BOS, 7, 8, 9]], [CTXLEN, 2], BOS)
    assert results == [(LOGPROB[SAT] + LOGPROB[DOT], True), (-1.0 + -7.0, False)]


def test_a_prompt_the_server_tokenized_otherwise_is_refused():
    output = llama_cpp_answer(True)
    output["usage"]["prompt_tokens"] = 6  # e.g. the server added a BOS of its own
    with pytest.raises(ConfigurationError, match=r"tokenized a prompt into 6 tokens where lm-eval's tokenizer made 5"):
        continuation_logprobs(output, [SENT], [CTXLEN])
    with pytest.raises(ConfigurationError, match=r"echoed 2 prompt tokens for a prompt of 5 tokens"):
        continuation_logprobs(answer([None, -1.0, GENERATED]), [SENT], [CTXLEN])


def test_the_first_token_after_bos_has_no_value_on_llama_cpp():
    """An empty-context request scores the token llama.cpp gives no log-probability for."""
    with pytest.raises(ConfigurationError, match=r"no log-probability for a token to be scored.*non-empty context"):
        continuation_logprobs(llama_cpp_answer(True), [SENT], [1], BOS)


def test_a_prompt_without_bos_is_refused_on_llama_cpp():
    """llama-cpp-python echoes a BOS-less prompt whole but one position off, dropping the generated
    token: the same length as a BOS prompt's echo, and every value wrong."""
    sent = SENT[1:]  # "The cat sat." with a non-empty context: lm-eval adds no BOS
    misaligned = answer([-9.0, -9.0, -9.0, -9.0], prompt_tokens=4, completion_tokens=1)
    with pytest.raises(ConfigurationError, match=r"does not start with the model's BOS token: llama-cpp-python"):
        continuation_logprobs(misaligned, [sent], [2], BOS)
    # An OpenAI-style echo of the same prompt is read as before.
    ((loglik, _),) = continuation_logprobs(
        answer([None, -5.0, -2.0, -0.5, GENERATED], prompt_tokens=4, completion_tokens=1), [sent], [2], BOS
    )
    assert loglik == -2.5
