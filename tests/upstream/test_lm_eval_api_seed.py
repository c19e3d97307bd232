"""Upstream report ``api_fixed_seed.md``: lm-eval's API backends send the one seed of
``--model_args seed`` (1234 unless given) with every request, so a server that seeds each
request's sampler with it draws every repeat of a prompt alike. Stock lm-eval against a local
stand-in server that records what it is sent.

The test asserts that the bug is still there: when it fails, lm-eval no longer sends one seed with
every sampled request, and the ``TemplateAPI._create_payload`` entry of ``lm_eval_bias/adapters.py``
can go.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture
def recording_server():
    """``(base URL, payloads received)`` of an OpenAI-style ``/v1/completions`` stand-in."""
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            prompts = received[-1]["prompt"]
            choices = [
                {"index": i, "text": " once", "finish_reason": "length", "logprobs": None}
                for i in range(len(prompts) if isinstance(prompts, list) else 1)
            ]
            body = json.dumps({"choices": choices}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/completions", received
    finally:
        server.shutdown()
        server.server_close()


def test_every_repeat_of_a_sampled_prompt_carries_the_same_seed(recording_server):
    from lm_eval.api.instance import Instance
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    url, received = recording_server
    lm = LocalCompletionsAPI(model="m", base_url=url, tokenizer_backend=None, tokenized_requests=False, max_retries=1)
    sampled = {"do_sample": True, "temperature": 1.0, "max_gen_toks": 8, "until": ["\n\n"]}
    # What lm-eval's evaluator makes of a task with ``repeats: 3``: the same request three times.
    request = Instance("generate_until", {}, ("Once upon a time", sampled), 0, repeats=3)
    assert lm.generate_until([request] * 3, disable_tqdm=True) == [" once"] * 3
    assert len(received) == 3
    assert all(payload["temperature"] == 1.0 for payload in received)
    # The bug: one seed in every request. If this fails, lm-eval varies or drops it now.
    assert [payload.get("seed") for payload in received] == [1234, 1234, 1234]
