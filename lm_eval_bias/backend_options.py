"""Which generation settings each lm-eval backend takes, read from the source.

A task's ``generation_kwargs`` (after ``--gen_kwargs``) reach the engine through lm-eval's
backend wrapper, which reads some keys itself and hands the rest on unchanged. What the engine
does with a key it does not know differs: vLLM and SGLang raise ``TypeError`` when they build
their ``SamplingParams`` (at the first generation request, after the model has loaded); the
OpenAI-compatible servers behind ``local-completions`` and ``local-chat-completions`` answer
HTTP 200 and ignore it, so the setting silently does not apply. Both count as rejected here.

Where each set was read (``lm-eval`` 0.4.13 as installed; the engines at the commits named):

* ``VLLM_*``: lm-eval ``lm_eval/models/vllm_causallms.py`` (``VLLM.modify_gen_kwargs``,
  ``VLLM.generate_until``: ``SamplingParams(max_tokens=..., stop=..., **kwargs)``) and
  ``lm_eval/models/utils.py`` (``normalize_gen_kwargs``); vllm-project/vllm
  ``vllm/sampling_params.py`` at commit 00388f6573ccfcffad607b8c9ecdf341a4669ceb
  (``SamplingParams`` is a ``msgspec.Struct``: an unknown keyword is a ``TypeError``).
* ``SGLANG_*``: lm-eval ``lm_eval/models/sglang_causallms.py`` (``SGLangLM.generate_until``,
  ``SGLangLM.modify_gen_kwargs``: ``kwargs | {"max_new_tokens": ..., "stop": ...}``);
  sgl-project/sglang ``python/sglang/srt/sampling/sampling_params.py`` at commit
  00c17cafcb9e289d5ca97c50e44ada54e4fd5b03 (a ``msgspec.Struct`` built as
  ``SamplingParams(**obj.sampling_params)`` in the tokenizer manager).
* ``COMPLETIONS_*`` and ``CHAT_*``: lm-eval ``lm_eval/models/openai_completions.py``
  (``LocalCompletionsAPI._create_payload``, ``LocalChatCompletion._create_payload``: the keys
  left after the wrapper's own are spread into the JSON body). The servers' request fields are
  the ones that vLLM (``vllm/entrypoints/openai/completion/protocol.py`` at commit
  002032ee2b18e1f7bd924ec47b62504ba3866063; unknown fields are kept and ignored,
  ``OpenAIBaseModel`` has ``extra="allow"``), SGLang
  (``python/sglang/srt/entrypoints/openai/protocol.py`` at commit
  004c82e07d876f6e4a0ad6e15325706b0f478f1a; plain pydantic models, unknown fields ignored) and
  llama.cpp's Python server (llama-cpp-python 0.3.36 ``llama_cpp/server/types.py``; unknown
  fields ignored) all honour. ``top_k``, ``min_p`` and ``min_tokens`` are not fields of OpenAI's
  own API, but all three servers take them.

The sampling fields that matter to tasks (temperature, top_p, top_k, min_p, the penalties,
seed) have been in vLLM's and SGLang's ``SamplingParams`` for many releases; newer fields may be
missing from an older engine, which then rejects them the same way.
"""

from __future__ import annotations

# --------------------------------------------------------------------------
# vLLM (--model vllm)

# Keys lm-eval's VLLM wrapper reads itself: until -> stop; the max-token aliases -> max_tokens;
# do_sample is dropped after it has set temperature (do_sample=False -> temperature 0).
VLLM_WRAPPER_KEYS = frozenset(
    {
        "until",
        "max_gen_toks",
        "max_new_tokens",
        "max_tokens",
        "max_completion_tokens",
        "do_sample",
        "temperature",
    }
)
# vllm.SamplingParams' constructor fields (vllm/sampling_params.py at 00388f65).
VLLM_SAMPLING_PARAMS = frozenset(
    {
        "n",
        "presence_penalty",
        "frequency_penalty",
        "repetition_penalty",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "seed",
        "stop",
        "stop_token_ids",
        "ignore_eos",
        "max_tokens",
        "min_tokens",
        "logprobs",
        "prompt_logprobs",
        "prompt_logprob_token_ids",
        "prompt_logprob_start",
        "logprob_token_ids",
        "flat_logprobs",
        "detokenize",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "include_stop_str_in_output",
        "output_kind",
        "stream_interval",
        "skip_clone",
        "structured_outputs",
        "logit_bias",
        "allowed_token_ids",
        "extra_args",
        "bad_words",
        "skip_reading_prefix_cache",
        "thinking_token_budget",
        "repetition_detection",
        "routed_experts_prompt_start",
        "trace_decode_token_ids",
    }
)
# The wrapper passes stop= itself: a "stop" key as well is a TypeError (a keyword given twice).
VLLM_ACCEPTED = VLLM_WRAPPER_KEYS | (VLLM_SAMPLING_PARAMS - {"stop"})

# --------------------------------------------------------------------------
# SGLang (--model sglang)

# Keys lm-eval's SGLang wrapper reads itself: until -> stop, max_gen_toks -> max_new_tokens,
# do_sample dropped (temperature 0 unless given).
SGLANG_WRAPPER_KEYS = frozenset({"until", "max_gen_toks", "do_sample", "temperature"})
# sglang SamplingParams' API fields (python/sglang/srt/sampling/sampling_params.py at 00c17caf).
SGLANG_SAMPLING_PARAMS = frozenset(
    {
        "max_new_tokens",
        "stop",
        "stop_token_ids",
        "stop_regex",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "frequency_penalty",
        "presence_penalty",
        "repetition_penalty",
        "min_new_tokens",
        "n",
        "json_schema",
        "regex",
        "ebnf",
        "structural_tag",
        "ignore_eos",
        "skip_special_tokens",
        "spaces_between_special_tokens",
        "no_stop_trim",
        "custom_params",
        "stream_interval",
        "logit_bias",
        "sampling_seed",
    }
)
# The wrapper sets max_new_tokens and stop after the task's keys: given ones are replaced silently.
SGLANG_ACCEPTED = SGLANG_WRAPPER_KEYS | (SGLANG_SAMPLING_PARAMS - {"max_new_tokens", "stop"})

# --------------------------------------------------------------------------
# OpenAI-compatible servers (--model local-completions / local-chat-completions)

# Keys lm-eval's wrapper reads itself: do_sample is dropped (temperature 0 unless given),
# max_tokens or max_gen_toks -> max_tokens, until -> stop. It also sends model, prompt (or
# messages) and seed.
COMPLETIONS_WRAPPER_KEYS = frozenset({"do_sample", "max_tokens", "max_gen_toks", "temperature", "until"})
# Request fields that vLLM's, SGLang's and llama.cpp's /v1/completions all honour, less those
# the wrapper sets itself or that would break how lm-eval reads the answer (echo, logprobs,
# n, stream, stop). A "seed" key replaces lm-eval's own seed (it comes later in the payload).
COMPLETIONS_REQUEST_FIELDS = frozenset(
    {
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "seed",
        "suffix",
        "top_p",
        "top_k",
        "min_p",
        "min_tokens",
        "user",
    }
)
COMPLETIONS_ACCEPTED = COMPLETIONS_WRAPPER_KEYS | COMPLETIONS_REQUEST_FIELDS
# /v1/chat/completions: the same, without suffix (a completions-only field).
CHAT_REQUEST_FIELDS = COMPLETIONS_REQUEST_FIELDS - {"suffix"}
CHAT_ACCEPTED = COMPLETIONS_WRAPPER_KEYS | CHAT_REQUEST_FIELDS

# --------------------------------------------------------------------------

ACCEPTED = {
    "vllm": VLLM_ACCEPTED,
    "sglang": SGLANG_ACCEPTED,
    "local-completions": COMPLETIONS_ACCEPTED,
    "local-chat-completions": CHAT_ACCEPTED,
}
# What happens to an option a backend does not take, for the message.
CONSEQUENCE = {
    "vllm": "vLLM's SamplingParams has no such field and raises TypeError at the first generation request",
    "sglang": "SGLang's SamplingParams has no such field and raises TypeError at the first generation request",
    "local-completions": (
        "lm-eval sends it as a request field, which vLLM's, SGLang's and llama.cpp's "
        "OpenAI-compatible servers ignore (HTTP 200): the setting would silently not apply"
    ),
    "local-chat-completions": (
        "lm-eval sends it as a request field, which vLLM's, SGLang's and llama.cpp's "
        "OpenAI-compatible servers ignore (HTTP 200): the setting would silently not apply"
    ),
}
# lm-eval's classes for these backends, so that a loaded model is named as on the command line.
# OpenAI's own API classes subclass the local ones (and take fewer fields, not more).
BACKEND_CLASSES = {
    "VLLM": "vllm",
    "SGLangLM": "sglang",
    "LocalChatCompletion": "local-chat-completions",
    "LocalCompletionsAPI": "local-completions",
}


def model_args_dict(model_args) -> dict:
    """``model_args`` as lm-eval reads them: a dict as it is, ``key=value,...`` text parsed by
    lm-eval's own parser, anything empty as ``{}``."""
    if isinstance(model_args, dict):
        return model_args
    if not model_args or not str(model_args).strip():
        return {}
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(str(model_args))


def backend_name(lm_or_name) -> str | None:
    """The lm-eval name (``vllm``, ``sglang``, ``local-completions``, ``local-chat-completions``)
    of a backend whose generation settings are checked here, given by name or as the loaded
    model (a subclass counts as its base); None for any other backend."""
    if isinstance(lm_or_name, str):
        return lm_or_name if lm_or_name in ACCEPTED else None
    for cls in type(lm_or_name).__mro__:
        if cls.__name__ in BACKEND_CLASSES:
            return BACKEND_CLASSES[cls.__name__]
    return None


# Request fields a server may ignore only at their neutral value, which then changes nothing:
# llama-cpp-python's server applies repeat_penalty 1.1 unless a request says 1.0 (vLLM's and
# SGLang's servers know no such field and sample without a penalty anyway).
NEUTRAL_SERVER_FIELDS = {"repeat_penalty": 1.0}


def rejected(backend: str, generation_kwargs) -> list[str]:
    """The keys of ``generation_kwargs`` that ``backend`` rejects or ignores, sorted; none for a
    backend not named in :data:`ACCEPTED`."""
    accepted = ACCEPTED.get(backend)
    if accepted is None:
        return []
    return sorted(
        str(key)
        for key, value in (generation_kwargs or {}).items()
        if key not in accepted and not _neutral_on_servers(backend, key, value)
    )


def _neutral_on_servers(backend: str, key, value) -> bool:
    if backend not in ("local-completions", "local-chat-completions") or key not in NEUTRAL_SERVER_FIELDS:
        return False
    try:
        return float(value) == NEUTRAL_SERVER_FIELDS[key]
    except (TypeError, ValueError):
        return False
