"""Reading prompt log-probabilities from an OpenAI-compatible ``/v1/completions`` server.

lm-eval's ``local-completions`` backend asks the server to echo the prompt with ``echo``,
``logprobs=1`` and ``max_tokens=1``, and takes the continuation's log-probabilities as
``token_logprobs[ctxlen:-1]`` of the answer: it assumes the server echoes every token lm-eval
tokenized (the prefix token included) followed by exactly one generated token. llama.cpp's
server (``llama-cpp-python``) does neither in two cases, both silent:

* it leaves a leading BOS token out of the echo (and nulls the log-probability of the first
  token it does echo), so every index is one off: the continuation's first token is dropped;
* when the one token it would generate is an end-of-generation token, it generates nothing, so
  ``[:-1]`` drops the continuation's last token instead;
* a prompt that does not start with BOS it echoes whole but pairs each token with the
  log-probabilities of the next position (and drops the generated token): every value is wrong.

:func:`continuation_logprobs` counts from the end of the echoed prompt instead, using the
answer's ``usage`` to tell echoed prompt tokens from generated ones, and refuses an answer whose
prompt the server tokenized into a different number of tokens than lm-eval did, that comes from
llama-cpp-python's misaligned echo, or that has no log-probability for a token to be scored.
"""

from __future__ import annotations

from operator import itemgetter

from lm_eval_bias.errors import ConfigurationError


def _usage_counts(output: dict, choices: int) -> tuple[int | None, int | None]:
    """(prompt tokens, generated tokens) from the answer's ``usage``, when it holds one prompt."""
    usage = output.get("usage") if isinstance(output, dict) else None
    if choices != 1 or not isinstance(usage, dict):
        return None, None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (prompt if isinstance(prompt, int) else None), (completion if isinstance(completion, int) else None)


def _generated_count(choice: dict, echoed_length: int, sent: int, usage_completion: int | None) -> int:
    """How many of the answer's log-probabilities belong to generated tokens (0 or 1)."""
    if usage_completion is not None:
        return usage_completion
    if echoed_length == sent + 1:  # every prompt token and one generated token (OpenAI, vLLM)
        return 1
    if echoed_length == sent - 1:  # the prefix token left out and nothing generated
        return 0
    # One short or exact: the finish reason says whether a token was generated.
    return 0 if choice.get("finish_reason") == "stop" else 1


def continuation_logprobs(outputs, tokens, ctxlens, prefix_token_id: int | None = None) -> list[tuple[float, bool]]:
    """``(log-likelihood, is_greedy)`` of each request's continuation, as lm-eval's
    ``parse_logprobs`` returns them, aligned on the end of the echoed prompt.

    ``tokens`` are the token lists lm-eval sent (context then continuation, the prefix token
    first for an empty context), ``ctxlens`` their context lengths and ``prefix_token_id`` the
    token a server may leave out of its echo when a prompt starts with it.
    """
    outputs = outputs if isinstance(outputs, list) else [outputs]
    results = []
    requests = iter(zip(tokens, ctxlens, strict=True))
    for output in outputs:
        choices = sorted(output["choices"], key=itemgetter("index"))
        usage_prompt, usage_completion = _usage_counts(output, len(choices))
        for choice in choices:
            sent_tokens, ctxlen = next(requests)
            sent = len(sent_tokens)
            logprobs = choice["logprobs"]
            token_logprobs, top_logprobs = logprobs["token_logprobs"], logprobs["top_logprobs"]
            if usage_prompt is not None and usage_prompt != sent:
                raise ConfigurationError(
                    f"the completions server tokenized a prompt into {usage_prompt} tokens where lm-eval's "
                    f"tokenizer made {sent}, so the scored tokens cannot be located in its answer. Fix: give "
                    "--model_args tokenizer=<the served model's Hugging Face tokenizer> (tokenizer_backend="
                    "huggingface), and serve a model whose tokenizer reads the prefix token's text as that token"
                )
            generated = _generated_count(choice, len(token_logprobs), sent, usage_completion)
            echoed = len(token_logprobs) - generated
            if echoed not in (sent, sent - 1):
                raise ConfigurationError(
                    f"the completions server echoed {echoed} prompt tokens for a prompt of {sent} tokens; the "
                    "scored tokens cannot be located in its answer. Fix: a server that echoes the prompt's "
                    "tokens with echo=true (llama.cpp, vLLM), with the model's own tokenizer in --model_args"
                )
            if echoed == sent - 1 and sent_tokens[0] != prefix_token_id:
                # llama-cpp-python (0.3.x) pairs each echoed token with the log-probabilities of the
                # position after it unless the prompt starts with BOS, and drops the generated token.
                raise ConfigurationError(
                    "the completions server echoed one prompt token fewer than lm-eval sent, and the prompt does "
                    "not start with the model's BOS token: llama-cpp-python's server then reads every echoed "
                    "log-probability one position off, so no value can be trusted. Fix: run this task with "
                    "--model hf or vllm, or behind a server that echoes every prompt token (vLLM, SGLang)"
                )
            continuation = sent - ctxlen
            start = echoed - continuation
            scored = token_logprobs[start:echoed]
            if start < 0 or any(value is None for value in scored):
                raise ConfigurationError(
                    "the completions server returned no log-probability for a token to be scored (a server "
                    "gives none for the first token it echoes, and llama.cpp leaves a leading BOS out of its "
                    "echo), and a request scores the first token after the prefix token. Fix: --model hf or "
                    "vllm for this task, or a request with a non-empty context"
                )
            is_greedy = all(value == max(top.values()) for value, top in zip(scored, top_logprobs[start:echoed]))
            results.append((float(sum(scored)), is_greedy))
    return results


def refused_token_prompts(lm, error) -> bool:
    """Whether ``error`` is a server refusing (HTTP 4xx/5xx) the token-id prompts lm-eval sends
    with ``tokenized_requests=True`` (llama.cpp's server takes text prompts only).

    Parameters
    ----------
    lm : lm-eval API model
        The backend whose request failed.
    error : Exception
        The HTTP error its request raised (``requests`` or ``aiohttp``).

    Returns
    -------
    bool
    """
    status = getattr(getattr(error, "response", None), "status_code", None) or getattr(error, "status", None)
    return getattr(lm, "tokenized_requests", False) and isinstance(status, int) and 400 <= status < 600


def token_prompts_problem(tasks: str, error) -> str:
    """The message for :func:`refused_token_prompts`: ``tasks`` (their names) and the fix."""
    return (
        f"{tasks}: the completions server refused lm-eval's prompts ({type(error).__name__}: {error}). lm-eval "
        "sends them as token ids by default, and servers such as llama.cpp take text only. Fix: --model_args "
        "...,tokenized_requests=False (lm-eval still tokenizes locally to locate the scored tokens)"
    )
