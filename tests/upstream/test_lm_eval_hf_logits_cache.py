"""Upstream report ``hf_logits_cache_shorter_continuation.md``: with its default ``logits_cache``,
lm-eval's ``hf`` backend scores a request from the wrong positions when another request has the
same tokens but a longer continuation. Stock lm-eval and a tiny random GPT-2 only.

The test asserts that the bug is still there: when it fails, lm-eval has fixed it and the
``HFLM._loglikelihood_tokens`` entry of ``lm_eval_bias/adapters.py`` can go.
"""

import pytest
import torch
from stock_instances import instance

# the bug is on every supported lm-eval, so the workaround is needed on each
pytestmark = pytest.mark.lm_eval_versions

# One sentence split at two places: the same tokens, continuations of 5 and 4 words.
LONGER = ("The cat", " sat on the mat.")
SHORTER = ("The cat sat", " on the mat.")


@pytest.fixture(scope="module")
def stock_hflm(tiny_gpt2):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=str(tiny_gpt2), device="cpu", dtype="float32", batch_size=4)


def loglikelihoods(lm, *pairs):
    requests = [instance("loglikelihood", pair, index) for index, pair in enumerate(pairs)]
    return [value for value, _ in lm.loglikelihood(requests, disable_tqdm=True)]


def test_a_shorter_continuation_is_read_from_the_first_positions_of_a_longer_ones_window(stock_hflm):
    lm = stock_hflm
    assert lm.logits_cache  # lm-eval's default
    longer_context, longer_continuation = lm._encode_pair(*LONGER)
    shorter_context, shorter_continuation = lm._encode_pair(*SHORTER)
    # lm-eval groups the two: their tokens agree but for the last (they are the same tokens here)
    assert longer_context + longer_continuation[:-1] == shorter_context + shorter_continuation[:-1]
    assert len(longer_continuation) > len(shorter_continuation)

    alone = loglikelihoods(lm, SHORTER)[0]
    together = loglikelihoods(lm, LONGER, SHORTER)[1]

    # What the model gives: the log-probabilities of the continuation's tokens at its own positions.
    tokens = longer_context + longer_continuation
    with torch.no_grad():
        logprobs = torch.log_softmax(lm.model(torch.tensor([tokens[:-1]])).logits[0], dim=-1)
    window = logprobs[len(longer_context) - 1 :]  # the positions that predict the longer continuation
    targets = torch.tensor(shorter_continuation)
    last_positions = window[-len(shorter_continuation) :].gather(1, targets[:, None]).sum().item()
    first_positions = window[: len(shorter_continuation)].gather(1, targets[:, None]).sum().item()

    assert alone == pytest.approx(last_positions, abs=1e-4)  # scored alone: right
    # The bug: beside the longer request, the shorter one is read from the first positions of the
    # longer one's window. If these fail, lm-eval reads it right now, and our workaround can go.
    assert together == pytest.approx(first_positions, abs=1e-4)
    assert together != pytest.approx(alone, abs=1e-2)


def test_without_the_logits_cache_both_are_read_right(tiny_gpt2, stock_hflm):
    from lm_eval.models.huggingface import HFLM

    alone = [loglikelihoods(stock_hflm, pair)[0] for pair in (LONGER, SHORTER)]
    uncached = HFLM(pretrained=str(tiny_gpt2), device="cpu", dtype="float32", batch_size=4, logits_cache=False)
    assert loglikelihoods(uncached, LONGER, SHORTER) == pytest.approx(alone, abs=1e-4)
