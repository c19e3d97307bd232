"""What a model backend is: read once here, for the checks, the adapters and the tasks.

A backend is given by its lm-eval name before the model loads (``"hf-mlm"``) or as the loaded
model (possibly inside lm-eval's ``CachingLM``); each fact about it (masked or causal, whether it
scores log-likelihoods, how many processes run it, whether it is an API model) has one reading.

Also whether a backend can start here at all (:func:`missing_package`, :func:`uncached_model`,
before anything loads) and what lm-eval's error means when it could not (:func:`load_failure`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lm_eval_bias import cache_key
from lm_eval_bias.backend_options import model_args_dict
from lm_eval_bias.errors import BackendUnavailableError, MissingBackendPackageError, ModelFilesUnavailableError
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


# --------------------------------------------------------------------------
# Whether the backend can start here

# Backends whose Python package lm-eval imports only when it loads the model (a traceback then,
# when the package is missing), and the command that installs it.
BACKEND_PACKAGES = {
    "vllm": ("vllm", "pip install vllm"),
    "vllm-vlm": ("vllm", "pip install vllm"),
    "sglang": ("sglang", "pip install sglang (see https://docs.sglang.ai/start/install.html)"),
}

# Backends that read the model's files through transformers from the Hugging Face cache.
HUB_BACKENDS = frozenset({"hf", "hf-auto", "huggingface", MASKED_LM_BACKEND})


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported here (found, not imported)."""
    from importlib.util import find_spec

    try:
        return find_spec(package) is not None
    except (ImportError, ValueError):  # a parent that fails, or a module without a spec
        return False


def _package_error(model: str) -> MissingBackendPackageError:
    """The error for ``--model MODEL`` when its package (:data:`BACKEND_PACKAGES`) is missing."""
    package, install = BACKEND_PACKAGES[model]
    error = MissingBackendPackageError(
        f"--model {model} needs the Python package {package}, which is not installed in this environment "
        f"({sys.prefix}). Fix: {install}, or run with another backend such as --model hf"
    )
    error.name = package
    return error


def missing_package(model) -> MissingBackendPackageError | None:
    """Before anything loads: the error for a backend whose Python package is not installed.

    Parameters
    ----------
    model : object
        The backend's lm-eval name (``"vllm"``), or anything else (a loaded model, None).

    Returns
    -------
    MissingBackendPackageError or None
        None when the backend needs no package of :data:`BACKEND_PACKAGES` or it is installed.
    """
    if not isinstance(model, str) or model not in BACKEND_PACKAGES or _installed(BACKEND_PACKAGES[model][0]):
        return None
    return _package_error(model)


def _repo_id(pretrained) -> str | None:
    """``pretrained`` as a hub repository id (``gpt2``, ``org/name``); None for a local path or
    anything else."""
    if not isinstance(pretrained, str) or os.path.exists(pretrained) or not cache_key.is_hub_id(pretrained):
        return None
    return pretrained


def _files_message(model: str, repo: str | None, why: str) -> str:
    """The one line for a model whose files are not here and cannot be downloaded now (``repo``:
    its hub id, None where the model arguments do not name one)."""
    cache = cache_key.hub_cache_dir()
    if repo is None:
        return (
            f"--model {model}: cannot load the model: a file it needs is not in the local Hugging Face cache "
            f"({cache}), and {why}. Fix: download its files on a machine with network, copy that "
            "machine's Hugging Face cache here and set HF_HOME to it, or pass local folders in --model_args"
        )
    return (
        f"--model {model}: cannot load {repo}: it is not in the local Hugging Face cache ({cache}), "
        f"and {why}. Fix: download it on a machine with network (hf download {repo}), copy that machine's "
        f"Hugging Face cache here and set HF_HOME to it, or pass a local copy: --model_args "
        f"pretrained=/path/to/{repo.rsplit('/', 1)[-1]}"
    )


def uncached_model(model, model_args: dict) -> ModelFilesUnavailableError | None:
    """Before anything loads: the error for a hub model that is not in the local cache while
    downloads are off (``HF_HUB_OFFLINE``), where transformers would fail after the tasks are built.

    Only where that failure is certain: a backend of :data:`HUB_BACKENDS`, ``pretrained`` a
    repository id and no local path, no ``cache_dir`` or ``gguf_file`` argument, and no folder of
    that repository in the cache at all (a partial or other revision's copy is left to transformers).

    Parameters
    ----------
    model : object
        The backend's lm-eval name, or anything else.
    model_args : dict
        The model arguments as lm-eval reads them.

    Returns
    -------
    ModelFilesUnavailableError or None
    """
    offline = cache_key.offline_variable()
    if model not in HUB_BACKENDS or offline is None or {"cache_dir", "gguf_file"} & set(model_args):
        return None
    repo = _repo_id(model_args.get("pretrained"))
    if repo is None or cache_key.repo_folder(repo).exists():
        return None
    return ModelFilesUnavailableError(_files_message(model, repo, f"{offline} forbids downloading it"))


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what it was raised from (``__cause__``, else ``__context__``), outermost first."""
    chain = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def _unreachable_hub(chain: list[BaseException]) -> str:
    """Why the hub could not be asked, from the innermost error (a DNS or connection failure)."""
    from huggingface_hub import constants

    innermost = chain[-1]
    reason = f" ({str(innermost)[:160]})" if type(innermost).__name__ != "LocalEntryNotFoundError" else ""
    return f"the Hugging Face hub ({constants.ENDPOINT}) cannot be reached{reason}"


def load_error_explained(error: BaseException, model, model_args) -> BackendUnavailableError | None:
    """``error``, raised while lm-eval loaded ``model``, as one of our errors (see :func:`load_failure`).

    Parameters
    ----------
    error : BaseException
        What lm-eval raised, with what it was raised from.
    model : object
        The backend's lm-eval name.
    model_args : dict or str
        The model arguments, as given to lm-eval.

    Returns
    -------
    BackendUnavailableError or None
        None for an error of another kind.
    """
    if isinstance(error, ModuleNotFoundError) and isinstance(model, str) and model in BACKEND_PACKAGES:
        package = BACKEND_PACKAGES[model][0]
        # lm-eval's vllm module fails on its import; its sglang class raises without a name
        if (error.name or "").split(".")[0] == package or not _installed(package):
            return _package_error(model)
        return None
    chain = _causes(error)
    # huggingface_hub's error for a file neither in the cache nor downloadable (offline, or no
    # connection), under transformers' OSError; by name, as the hub's error classes have moved before
    if not any(type(cause).__name__ == "LocalEntryNotFoundError" for cause in chain):
        return None
    arguments = model_args_dict(model_args) if isinstance(model_args, (dict, str)) else {}
    repo = _repo_id(arguments.get("pretrained"))
    offline = cache_key.offline_variable()
    why = f"{offline} forbids downloading it" if offline else _unreachable_hub(chain)
    return ModelFilesUnavailableError(_files_message(str(model), repo, why))


def _in_lm_eval(filename: str, *parts: str) -> bool:
    """Whether ``filename`` is lm-eval's module ``lm_eval/<parts>``."""
    return Path(filename).parts[-len(parts) - 1 :] == ("lm_eval", *parts)


def _loading_call(trace) -> dict | None:
    """The arguments of lm-eval's ``simple_evaluate`` when ``trace`` shows the error raised where it
    loads the model (its registry's ``get_model``, the backend's ``create_from_arg_*``); None else."""
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_code.co_name == "simple_evaluate" and _in_lm_eval(frame.f_code.co_filename, "evaluator.py"):
            following = trace.tb_next
            if following is not None and any(
                _in_lm_eval(following.tb_frame.f_code.co_filename, "api", name) for name in ("registry.py", "model.py")
            ):
                return dict(frame.f_locals)
            return None
        trace = trace.tb_next
    return None


def load_failure(error: BaseException, ours_only: bool = False) -> BackendUnavailableError | None:
    """What an error lm-eval raised while loading the model means, as one line: the backend's
    package is not installed (lm-eval imports it only then), or the model is not in the local
    Hugging Face cache while the hub is offline or unreachable (transformers' long traceback).

    Parameters
    ----------
    error : BaseException
        The error, with its traceback.
    ours_only : bool
        Explain it only in a run of lm-eval-bias's tasks (the stock ``lm_eval`` CLI, whose runs of a
        user's own tasks keep lm-eval's output).

    Returns
    -------
    BackendUnavailableError or None
        None for any other error, one not raised while lm-eval's ``simple_evaluate`` loaded the
        model, or (``ours_only``) a run without our tasks.
    """
    try:
        call = _loading_call(error.__traceback__)
        if call is None:
            return None
        if ours_only:
            from lm_eval_bias.task_origin import ours_requested

            if not ours_requested(call.get("tasks"), call.get("task_manager")):
                return None
        return load_error_explained(error, call.get("model"), call.get("model_args"))
    except Exception:  # noqa: BLE001 - explaining must never hide the error itself (sys.excepthook)
        return None
