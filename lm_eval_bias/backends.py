"""What a model backend is: read once here, for the checks, the adapters and the tasks.

A backend is given by its lm-eval name before the model loads (``"hf-mlm"``) or as the loaded
model (possibly inside lm-eval's ``CachingLM``); each fact about it (masked or causal, whether it
scores log-likelihoods, how many processes run it, whether it is an API model) has one reading.
"""

from __future__ import annotations

import sys

from lm_eval_bias.models import MASKED_LM_BACKEND

# lm-eval backends whose loglikelihood() only raises: chat APIs return no prompt log-probabilities.
NO_LOGLIKELIHOOD_BACKENDS = frozenset(
    {
        "local-chat-completions",
        "openai-chat-completions",
        "azure-openai-chat-completions",
        "anthropic-chat",
        "anthropic-chat-completions",
        "anthropic-completions",
        "litellm",
        "litellm-chat",
        "litellm-chat-completions",
    }
)
NO_LOGLIKELIHOOD_CLASSES = frozenset({"LocalChatCompletion", "AnthropicLM", "AnthropicChat"})

# Encoder-only masked LMs that transformers will also load as "causal" (a *LMHeadModel that
# needs is_decoder=True): loaded by --model hf they see the tokens they are asked to predict.
ENCODER_ONLY_MODEL_TYPES = frozenset(
    {
        "bert",
        "big_bird",
        "camembert",
        "data2vec-text",
        "electra",
        "ernie",
        "megatron-bert",
        "rembert",
        "roberta",
        "roberta-prelayernorm",
        "roc_bert",
        "roformer",
        "xlm-roberta",
        "xlm-roberta-xl",
        "xmod",
    }
)


def unwrapped(lm):
    """The model inside lm-eval's request cache (``--use_cache``), or ``lm`` itself."""
    from lm_eval.api.model import CachingLM

    return lm.lm if isinstance(lm, CachingLM) else lm


def label(lm_or_name) -> str:
    """How a message names the backend: ``--model hf-mlm``, or ``the HFMaskedLM backend``."""
    if isinstance(lm_or_name, str):
        return f"--model {lm_or_name}"
    return f"the {type(unwrapped(lm_or_name)).__name__} backend"


def is_masked_lm(lm_or_name) -> bool:
    """Whether the backend is lm-eval-bias's masked-LM backend (``hf-mlm``), which scores only
    WinoQueer's masked-LM pairs. The rule is checked on tasks before any request is built
    (:func:`lm_eval_bias.checks.check_backend`); ``hf-mlm`` also refuses any request that is not
    such a pair itself, for a run that no check saw. A loaded model is that backend when its
    class says ``backend = "masked"``, as lm-eval's ``HFLM`` says ``"causal"``.

    Parameters
    ----------
    lm_or_name : str or lm-eval model
        The backend's lm-eval name, or the loaded model.

    Returns
    -------
    bool
    """
    if isinstance(lm_or_name, str):
        return lm_or_name == MASKED_LM_BACKEND
    return getattr(type(unwrapped(lm_or_name)), "backend", None) == "masked"


def scores_loglikelihoods(lm_or_name) -> bool:
    """Whether the backend can score log-likelihoods (chat APIs return no prompt log-probabilities)."""
    if isinstance(lm_or_name, str):
        return lm_or_name not in NO_LOGLIKELIHOOD_BACKENDS
    defining = next((cls for cls in type(unwrapped(lm_or_name)).__mro__ if "loglikelihood" in vars(cls)), None)
    return defining is None or defining.__name__ not in NO_LOGLIKELIHOOD_CLASSES


def masked_type_loaded_as_causal(lm) -> str | None:
    """The ``model_type`` of a masked LM that a causal backend (``--model hf``) loaded, where it
    sees the tokens it is asked to predict; None for any other model."""
    inner = unwrapped(lm)
    if is_masked_lm(inner):
        return None
    config = getattr(getattr(inner, "model", None), "config", None)
    model_type = getattr(config, "model_type", None)
    # XLM checkpoints are masked (MLM) or causal (CLM); their config says which.
    masked = model_type in ENCODER_ONLY_MODEL_TYPES or (model_type == "xlm" and not getattr(config, "causal", False))
    if (
        not masked
        or getattr(config, "is_decoder", False)
        or getattr(config, "is_encoder_decoder", False)
        or getattr(inner, "backend", "causal") != "causal"
    ):
        return None
    return model_type


def world_size(lm) -> int:
    """How many processes run the evaluation (``lm.world_size``; 1 when the backend says nothing
    usable): the one reading of it for every check and adapter."""
    try:
        return max(int(getattr(lm, "world_size", 1) or 1), 1)
    except (TypeError, ValueError):
        return 1


def is_api_model(lm) -> bool:
    """Whether ``lm`` is one of lm-eval's API backends (``TemplateAPI``), without importing their
    module (aiohttp and more: a third of a second) in a run that loaded none of them."""
    module = sys.modules.get("lm_eval.models.api_models")
    return module is not None and isinstance(lm, module.TemplateAPI)


def echo_aligned(lm) -> bool:
    """Whether ``lm`` is lm-eval's ``local-completions`` backend (or its OpenAI twin) with lm-eval's
    own reading of echoed log-probabilities, which :func:`lm_eval_bias.adapters._aligned_echo_logprobs`
    replaces."""
    module = sys.modules.get("lm_eval.models.openai_completions")
    return (
        module is not None
        and isinstance(lm, module.LocalCompletionsAPI)
        and type(lm).parse_logprobs is module.LocalCompletionsAPI.parse_logprobs
    )


def setting_flag(value) -> bool | None:
    """A yes/no model argument as lm-eval hands it to the backend: a bool, or text that lm-eval's
    ``--model_args`` parser reads as one (``True``, ``false``); None for anything else."""
    if isinstance(value, str):
        from lm_eval.utils import handle_arg_string

        value = handle_arg_string(value)
    return value if isinstance(value, bool) else None


def vllm_prefix_caching(lm) -> bool:
    """Whether lm-eval's ``vllm`` backend ``lm`` runs vLLM with prefix caching on.

    Read from the engine the wrapper built (``lm.model``, a ``vllm.LLM``): vLLM's V1
    ``LLMEngine`` keeps the resolved setting at ``llm_engine.vllm_config.cache_config.
    enable_prefix_caching`` (earlier V1 releases at ``llm_engine.cache_config``). With
    ``data_parallel_size`` > 1 the wrapper builds no engine of its own (Ray workers build one
    each from ``lm.model_args``), so the setting is read there; left out, it counts as on, vLLM
    V1's default (``EngineArgs._set_default_args``: on for every model but hybrid ones).

    Parameters
    ----------
    lm : lm-eval model
        lm-eval's ``VLLM`` wrapper (possibly inside its ``CachingLM``).

    Returns
    -------
    bool
    """
    inner = unwrapped(lm)
    engine = getattr(getattr(inner, "model", None), "llm_engine", None)
    for cache_config in (
        getattr(getattr(engine, "vllm_config", None), "cache_config", None),
        getattr(engine, "cache_config", None),
    ):
        setting = getattr(cache_config, "enable_prefix_caching", None)
        if isinstance(setting, bool):
            return setting
    model_args = getattr(inner, "model_args", None)
    setting = setting_flag(model_args.get("enable_prefix_caching")) if isinstance(model_args, dict) else None
    return True if setting is None else setting
