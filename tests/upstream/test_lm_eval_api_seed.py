"""Upstream report ``api_fixed_seed.md``: lm-eval's API backends send the one seed of
``--model_args seed`` (1234 unless given) with every request, so a server that seeds each
request's sampler with it draws every repeat of a prompt alike. Stock lm-eval against a local
stand-in server that records what it is sent.

The test asserts that the bug is still there: when it fails, lm-eval no longer sends one seed with
every sampled request, and the ``TemplateAPI._create_payload`` entry of ``lm_eval_bias/adapters.py``
can go.
"""

import pytest
from stand_in_server import GENERATED, recording_server
from stock_instances import instance

# the bug is on every supported lm-eval, so the workaround is needed on each
pytestmark = pytest.mark.lm_eval_versions


@pytest.fixture
def server():
    with recording_server() as found:
        yield found


def test_every_repeat_of_a_sampled_prompt_carries_the_same_seed(server):
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    url, received = server
    lm = LocalCompletionsAPI(model="m", base_url=url, tokenizer_backend=None, tokenized_requests=False, max_retries=1)
    sampled = {"do_sample": True, "temperature": 1.0, "max_gen_toks": 8, "until": ["\n\n"]}
    # What lm-eval's evaluator makes of a task with ``repeats: 3``: the same request three times.
    request = instance("generate_until", ("Once upon a time", sampled), 0, repeats=3)
    assert lm.generate_until([request] * 3, disable_tqdm=True) == [GENERATED] * 3
    assert len(received) == 3
    assert all(payload["temperature"] == 1.0 for payload in received)
    # The bug: one seed in every request. If this fails, lm-eval varies or drops it now.
    assert [payload.get("seed") for payload in received] == [1234, 1234, 1234]
