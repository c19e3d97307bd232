"""Upstream report ``duplicate_loglikelihood_requests.md``: lm-eval sends a log-likelihood request
that several documents ask once per document, and an API backend sends each copy to the server.
Stock lm-eval (``local-completions`` with the tiny GPT-2's tokenizer) against a local stand-in
server that records what it is sent.

The test asserts that the copies still reach the server: when it fails, lm-eval sends each
distinct request once, and the ``loglikelihood`` entry of ``lm_eval_bias/adapters.py`` can go.
"""

import pytest
from stand_in_server import LOGPROB, recording_server
from stock_instances import instance

# the bug is on every supported lm-eval, so the workaround is needed on each
pytestmark = pytest.mark.lm_eval_versions


@pytest.fixture
def server():
    with recording_server() as found:
        yield found


def test_a_request_two_documents_ask_reaches_the_server_twice(server, tiny_gpt2):
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    url, received = server
    lm = LocalCompletionsAPI(
        model="m", base_url=url, tokenizer=str(tiny_gpt2), tokenizer_backend="huggingface", max_retries=1
    )
    shared = ("Straight people", " are sinful.")  # asked by two documents (two pairs share a sentence)
    requests = [
        instance("loglikelihood", shared, 0, doc_id=0, task="pairs"),
        instance("loglikelihood", ("Lesbians", " are sinful."), 0, doc_id=0, task="pairs"),
        instance("loglikelihood", shared, 0, doc_id=1, task="pairs"),
    ]
    answers = lm.loglikelihood(requests, disable_tqdm=True)
    continuation = len(lm.tok_encode(" are sinful."))
    assert [value for value, _ in answers] == [pytest.approx(continuation * LOGPROB)] * 3
    prompts = [tuple(prompt) for payload in received for prompt in payload["prompt"]]
    assert len(set(prompts)) == 2
    # The bug: the shared request is sent once per document. If this fails, lm-eval sends it once.
    assert len(prompts) == 3
