"""A local stand-in for an OpenAI-style ``/v1/completions`` server that records every payload it
is sent, for the upstream reports' tests of lm-eval's API backends (no network)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GENERATED = " once"
LOGPROB = -1.0  # every echoed and generated token's log-probability


def answer(payload: dict) -> dict:
    """A generation answers ``GENERATED``; an echo answers every prompt token and one generated
    token, each with ``LOGPROB`` (the first prompt token with none), as vLLM and OpenAI do."""
    prompts = payload["prompt"]
    if not isinstance(prompts, list) or (prompts and isinstance(prompts[0], int)):
        prompts = [prompts]
    choices = []
    for index, prompt in enumerate(prompts):
        choice = {"index": index, "text": GENERATED, "finish_reason": "length", "logprobs": None}
        if payload.get("echo"):
            count = len(prompt) if isinstance(prompt, list) else len(prompt.split())
            values = [None] + [LOGPROB] * count
            choice["logprobs"] = {
                "token_logprobs": values,
                "top_logprobs": [None if value is None else {"x": value} for value in values],
            }
        choices.append(choice)
    return {"choices": choices}


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, list[dict]]]:
    """``(completions URL, payloads received so far)`` of a server on 127.0.0.1."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append(payload)
            body = json.dumps(answer(payload)).encode()
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
        thread.join()
