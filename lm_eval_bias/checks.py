"""Checks of a run that need no request answered: each returns the problems it finds, as
messages that say what, where and the fix (or raises one :class:`ConfigurationError`).

:func:`lm_eval_bias.evaluate.simple_evaluate` runs them by backend name before the model loads;
the request gate (:func:`lm_eval_bias.adapters.install_request_gate`) runs them on the loaded
model before any request is built (:func:`check_loaded_model`), for the stock ``lm_eval`` CLI and
Python API; and each of our tasks runs :func:`check_requests_fit` right after building its requests.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable

from lm_eval_bias import backend_options, backends, lm_eval_features
from lm_eval_bias.backends import echo_aligned, is_api_model, is_masked_lm, unwrapped, world_size
from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.models import MASKED_LM_BACKEND
from lm_eval_bias.task_kinds import doc_label, is_ours, needs, task_name

# How many offending documents a message lists before "and N more".
EXAMPLES_SHOWN = 3


def masked_lm_backend(lm_or_name) -> type:
    """The class of the package's masked-LM backend (``--model hf-mlm``): the loaded model's, else
    the one the benchmark record that declares the backend names. Its ``SCORES`` and ``TASKS`` say
    what it scores and which tasks send it that."""
    if not isinstance(lm_or_name, str) and is_masked_lm(lm_or_name):
        return type(unwrapped(lm_or_name))
    from lm_eval_bias.benchmarks import records

    (target,) = {target for record in records().values() for name, target in record.models if name == MASKED_LM_BACKEND}
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def check_backend(lm_or_name, tasks: Iterable) -> list[str]:
    """Problems of running these tasks on this backend (a name such as ``"hf-mlm"`` before
    the model loads, or the loaded lm-eval model). A task that needs masked pairs says what
    another backend would make of them (``OTHER_BACKENDS_SCORE``) and which of its tasks suit
    causal LMs (``CAUSAL_TASKS``); the masked-LM backend what it scores (:func:`masked_lm_backend`)."""
    if lm_or_name is None:
        return []
    backend, masked = backends.label(lm_or_name), is_masked_lm(lm_or_name)
    scores_logliks = backends.scores_loglikelihoods(lm_or_name)
    problems = []
    for task in tasks:
        name, need = task_name(task), needs(task)
        if masked and need != "masked pairs":
            masked_backend = masked_lm_backend(lm_or_name)
            masked_tasks = ", ".join(masked_backend.TASKS)
            problems.append(
                f"{name}: {backend} scores only {masked_backend.SCORES} ({masked_tasks}), and "
                f"{name} needs {need}. Fix: run {name} with --model hf and a causal LM; run masked LMs "
                f"with --tasks {','.join(masked_backend.TASKS)}"
            )
        elif not masked and need == "masked pairs":
            problems.append(
                f"{name}: needs the masked-LM backend (--model {MASKED_LM_BACKEND} with a masked LM such as "
                f"bert-base-uncased); {backend} would score {task.OTHER_BACKENDS_SCORE}. Fix: --model "
                f"{MASKED_LM_BACKEND}, or --tasks {','.join(task.CAUSAL_TASKS)} for causal LMs"
            )
        elif not scores_logliks and need == "log-likelihoods" and is_ours(task):
            problems.append(
                f"{name}: {backend} cannot score log-likelihoods (chat APIs return no log-probabilities "
                f"of the prompt), and {name} needs them. Fix: --model local-completions with a "
                "/v1/completions server that returns echo+logprobs, or --model hf / vllm; or run only "
                "the generation tasks on this backend"
            )
    ours = [task_name(task) for task in tasks if is_ours(task)]
    model_type = None if isinstance(lm_or_name, str) else backends.masked_type_loaded_as_causal(lm_or_name)
    if ours and model_type:
        masked_tasks = ",".join(masked_lm_backend(lm_or_name).TASKS)
        problems.append(
            f"{', '.join(ours)}: the model is a masked LM ({model_type}) loaded as a causal LM: it sees the tokens "
            "it is asked to predict, so its log-likelihoods and generations mean nothing. Fix: "
            f"--model {MASKED_LM_BACKEND} --tasks {masked_tasks} for masked LMs, or a causal LM"
        )
    return problems


# vLLM's open report on prompt log-probabilities under prefix caching, named in every message of the rule.
VLLM_PREFIX_CACHING_ISSUE = "vLLM issue #42019, https://github.com/vllm-project/vllm/issues/42019; fix pending"


def loglikelihood_tasks(tasks: Iterable) -> list[str]:
    """The names of our tasks among ``tasks`` that score log-likelihoods (not generations)."""
    return [task_name(task) for task in tasks if is_ours(task) and needs(task) == "log-likelihoods"]


def left_to_the_backend(value) -> bool:
    """Whether a model argument, as lm-eval's ``--model_args`` parser read it, leaves the setting to the
    backend's default: left out (None), or written ``None``, which lm-eval 0.4.13 reads as None and
    0.5.0.dev1 keeps as the text ``"None"`` (no backend setting means that text).

    Parameters
    ----------
    value : object
        The parsed value, None where the argument is not given.

    Returns
    -------
    bool
    """
    return value is None or (isinstance(value, str) and value.strip() == "None")


def check_prefix_caching(lm_or_name, tasks: Iterable, model_args=None) -> list[str]:
    """vLLM with prefix caching on for our log-likelihood tasks: lm-eval's ``vllm`` backend reads
    their scores from vLLM's ``prompt_logprobs``, which can then depend on the order of the
    requests (:data:`VLLM_PREFIX_CACHING_ISSUE`). Generation tasks are not affected.

    Parameters
    ----------
    lm_or_name : str or lm-eval model
        The backend's name before the model loads (then only an ``enable_prefix_caching`` given
        in ``model_args`` as anything but false is a problem: :func:`lm_eval_bias.evaluate.simple_evaluate`
        turns a missing one off), or the loaded model (the engine's own setting is read).
    tasks : iterable
        The run's tasks.
    model_args : dict, optional
        The model arguments as lm-eval reads them, for a backend given by name.

    Returns
    -------
    list of str
        One problem, or none.
    """
    if backend_options.backend_name(lm_or_name) != "vllm":
        return []
    names = loglikelihood_tasks(tasks)
    if not names:
        return []
    reason = (
        f"vLLM's prompt log-probabilities, which {'this task scores' if len(names) == 1 else 'these tasks score'}, "
        f"can depend on the order of the requests when prefix caching is on ({VLLM_PREFIX_CACHING_ISSUE})"
    )
    if isinstance(lm_or_name, str):
        # left out (or None: vLLM's default) it is turned off; anything but false would keep it on
        asked = (model_args or {}).get("enable_prefix_caching")
        if left_to_the_backend(asked) or backends.setting_flag(asked) is False:
            return []
        return [
            f"{', '.join(names)}: --model vllm with enable_prefix_caching={asked}, and {reason}. Fix: "
            "--model_args ...,enable_prefix_caching=False (or leave it out: lm-eval-bias then turns it off), or "
            "run the generation tasks alone with prefix caching"
        ]
    if not backends.vllm_prefix_caching(lm_or_name):
        return []
    return [
        f"{', '.join(names)}: the vLLM engine runs with prefix caching on (vLLM's default unless "
        f"enable_prefix_caching=False is given), and {reason}. Fix: --model_args ...,enable_prefix_caching=False"
    ]


def check_limit(limit, tasks: Iterable) -> list[str]:
    """``--limit`` that leaves a task nothing to evaluate (lm-eval would crash on it)."""
    if limit is None:
        return []
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit):
        return [
            f"--limit {limit!r} is not a number of documents. Fix: --limit N with N >= 1 (or a fraction "
            "between 0 and 1), or no --limit"
        ]
    problems = []
    for task in tasks:
        size = lm_eval_features.sample_size(task, limit)
        if size is not None and size < 1:
            problems.append(
                f"{task_name(task)}: --limit {limit:g} leaves no documents to evaluate. Fix: "
                "--limit N with N >= 1 (or a fraction above 0), or no --limit"
            )
    return problems


def check_metadata_mapping(metadata, where: str) -> list[str]:
    """Metadata that is not a dict of option names (text) to values, as given to ``where``
    (``"task_manager"``, ``"simple_evaluate"``).

    Parameters
    ----------
    metadata : object
        What the caller passed as ``metadata`` (None: nothing passed).
    where : str
        The function it was passed to, for the message.

    Returns
    -------
    list of str
        One problem, or none.
    """
    if metadata is None or (isinstance(metadata, dict) and all(isinstance(key, str) for key in metadata)):
        return []
    return [f"{where}(metadata=...): expected a dict of option names (text) to values, got {metadata!r}"[:300]]


def check_shards(lm, limit, tasks: Iterable) -> list[str]:
    """With several processes (``accelerate launch``) each gets every ``world_size``-th document,
    and lm-eval fails on a process left with none, after the model has loaded everywhere."""
    processes = world_size(lm)
    if processes <= 1:
        return []
    problems = []
    for task in tasks:
        documents = len(task.eval_docs)
        size = lm_eval_features.sample_size(task, limit) if limit is not None else None
        evaluated = documents if size is None else min(size, documents)
        if 1 <= evaluated < processes:
            problems.append(
                f"{task_name(task)}: {evaluated} document(s) for {processes} processes; lm-eval gives "
                f"each process every {processes}th document and fails on a process with none. Fix: "
                f"--limit {processes} or more, or at most {evaluated} processes"
            )
    return problems


def check_loaded_model(lm, tasks: list, limit, apply_chat_template) -> list[str]:
    """Every check of a run on the loaded model, before any request is built (the request gate's).

    Parameters
    ----------
    lm : lm-eval model
        The loaded model (possibly inside lm-eval's ``CachingLM``).
    tasks : list
        The run's tasks, ours and others.
    limit : int, float or None
        lm-eval's ``limit``.
    apply_chat_template : bool, str or None
        lm-eval's ``apply_chat_template``.

    Returns
    -------
    list of str
        The problems, each naming its fix.
    """
    problems = check_backend(lm, tasks) + check_limit(limit, tasks)
    problems += check_chat_messages(lm, tasks, apply_chat_template)
    problems += check_cache_keyed(lm, tasks)
    problems += check_prefix_caching(lm, tasks)
    problems += check_shards(lm, limit, tasks) if not problems else []
    if apply_chat_template:
        problems += check_chat_template(lm, tasks)
    return problems


def _tokens(lm, text: str) -> int:
    return len(lm.tok_encode(text)) if text else 0


def _context_checked(lm) -> bool:
    """Whether lm-eval truncates this backend's inputs to ``lm.max_length`` itself (the local
    backends); API servers report no real context size, and hf-mlm checks its own."""
    return (
        isinstance(getattr(lm, "max_length", None), int)
        and callable(getattr(lm, "tok_encode", None))
        and not is_api_model(lm)
        and not is_masked_lm(lm)
    )


def _overflow(lm, request) -> str | None:
    """Why a request would be cut (lm-eval drops the start of a too long input), or None."""
    limit = lm.max_length
    if request.request_type == "generate_until":
        context, generation_kwargs = request.args[0], (request.args[1] if len(request.args) > 1 else {})
        new_tokens = int((generation_kwargs or {}).get("max_gen_toks", getattr(lm, "max_gen_toks", 256)))
        if new_tokens >= limit:
            return f"it asks for {new_tokens} new tokens and the model takes {limit} in all"
        budget = limit - new_tokens
        # A token is at least one byte, plus a word-start marker: most prompts need no tokenizing.
        if len(context.encode("utf-8")) + 2 <= budget:
            return None
        used = _tokens(lm, context)
        return None if used <= budget else f"{used} prompt tokens + {new_tokens} new tokens > {limit}"
    if request.request_type == "loglikelihood":
        context, continuation = request.args[:2]
        if len(context.encode("utf-8")) + len(continuation.encode("utf-8")) + 3 <= limit + 1:
            return None
        used = (_tokens(lm, context) if context else 1) + _tokens(lm, continuation)
        return None if used <= limit + 1 else f"{used} tokens > {limit} (+1)"
    return None


def check_requests_fit(task, lm) -> None:
    """Refuse a task whose requests the current model would truncate: lm-eval would drop the
    start of the prompt (or fail an assertion) and score something else than the benchmark's
    text. Runs right after the task built its requests, before any is sent. Also refuses
    generation settings that the backend would fail on at the first request."""
    lm = unwrapped(lm)
    settings = {
        repr(r.args[1]): r.args[1] or {}
        for r in task.instances
        if r.request_type == "generate_until" and len(r.args) > 1
    }
    for generation_kwargs in settings.values():
        problem = generation_settings_problem(lm, generation_kwargs)
        if problem:
            raise ConfigurationError(f"{task_name(task)}: {problem}")
    if lm is None:
        return
    if not _context_checked(lm):
        return
    too_long = []
    for request in task.instances:
        reason = _overflow(lm, request)
        if reason:
            too_long.append((request, reason))
    if not too_long:
        return
    examples = "; ".join(
        f"document {doc_label(request.doc)} ({reason})" for request, reason in too_long[:EXAMPLES_SHOWN]
    )
    more = f", and {len(too_long) - EXAMPLES_SHOWN} more" if len(too_long) > EXAMPLES_SHOWN else ""
    # With several processes each checks its own share of the documents (and stops the run).
    processes = world_size(lm)
    share = f" (process {lm.rank} of {processes}: its share of the documents)" if processes > 1 else ""
    raise ConfigurationError(
        f"{task_name(task)}: {len(too_long)} of its {len(task.instances)} requests{share} do not fit the model's "
        f"context of {lm.max_length} tokens, so lm-eval would cut the start of the prompt: {examples}{more}. "
        "Fix: a model with a longer context (or --model_args max_length=N where the model supports it), a "
        "smaller --gen_kwargs max_gen_toks=N for generation tasks, or a data file without those documents"
    )


def _generation_problem(generation_kwargs: dict) -> str | None:
    """What is wrong with a task's generation settings (``--gen_kwargs`` included), or None."""

    def number(key):
        value = generation_kwargs.get(key)
        if isinstance(value, bool):  # max_gen_toks=True is no number of tokens
            return math.nan
        try:
            return None if value is None else float(value)
        except (TypeError, ValueError):
            return math.nan

    checks = (
        ("max_gen_toks", lambda v: v >= 1 and v == int(v), "a whole number of new tokens, at least 1"),
        ("temperature", lambda v: v >= 0, "a number >= 0 (0: greedy)"),
        ("top_p", lambda v: 0 < v <= 1, "a number in (0, 1]"),
        ("top_k", lambda v: v >= 0 and v == int(v), "a whole number >= 0"),
    )
    for key, valid, expected in checks:
        value = number(key)
        if value is not None and not (math.isfinite(value) and valid(value)):
            return (
                f"generation setting {key}={generation_kwargs[key]!r} is not {expected}. Fix: --gen_kwargs "
                f"{key} with {expected}, or leave it out"
            )
    return None


def _do_sample(generation_kwargs: dict) -> bool | None:
    """The settings' ``do_sample`` (text such as "True" from ``--gen_kwargs`` read as lm-eval's
    backends read it), None when not given."""
    value = generation_kwargs.get("do_sample")
    return None if value is None else str(value).strip().lower() in ("true", "1", "yes")


def is_sampling(generation_kwargs: dict) -> bool:
    """Whether these settings sample (lm-eval's rule: do_sample, else a temperature above 0)."""
    do_sample = _do_sample(generation_kwargs)
    try:
        temperature = float(generation_kwargs.get("temperature", 0.0))
    except (TypeError, ValueError):
        return False
    if do_sample is None:
        return temperature > 0
    return do_sample and temperature > 0


def _sampling_problem(lm, generation_kwargs: dict) -> str | None:
    """``do_sample`` without a temperature: lm-eval then uses temperature 0, which transformers
    refuses at the first request (hf), and which vLLM, SGLang and the servers take as greedy
    decoding, so that nothing is sampled. ``lm`` is the loaded model or a backend's name."""
    do_sample = bool(_do_sample(generation_kwargs))
    temperature = generation_kwargs.get("temperature", 0.0)
    try:
        temperature = float(temperature)
    except (TypeError, ValueError):
        return None  # _generation_problem names it
    if not do_sample or temperature != 0:
        return None
    fix = (
        "Fix: --gen_kwargs do_sample=True,temperature=T with T > 0 (e.g. 1.0), or leave do_sample out for "
        "greedy decoding"
    )
    if not isinstance(lm, str):
        from lm_eval.models.huggingface import HFLM

        if isinstance(lm, HFLM):
            return (
                "generation setting do_sample=True with temperature 0 (lm-eval's default when none is given): "
                f"the hf backend cannot sample at temperature 0. {fix}"
            )
    backend = backend_options.backend_name(lm)
    if backend is None:
        return None
    return (
        "generation setting do_sample=True with temperature 0 (lm-eval's default when none is given): "
        f"--model {backend} decodes greedily at temperature 0, so nothing would be sampled. {fix}"
    )


def _backend_option_problem(lm, generation_kwargs: dict) -> str | None:
    """Generation settings that the backend (loaded, or by its name) rejects or ignores
    (:mod:`lm_eval_bias.backend_options`)."""
    backend = backend_options.backend_name(lm)
    keys = backend_options.rejected(backend, generation_kwargs) if backend else []
    if not keys:
        return None
    named = ", ".join(keys)
    setting = "setting" if len(keys) == 1 else "settings"
    return (
        f"generation {setting} {named} not taken by --model {backend}: {backend_options.CONSEQUENCE[backend]}. "
        f"Fix: leave {named} out of --gen_kwargs (or out of your task YAML's generation_kwargs), or run with "
        "--model hf, which passes every transformers generate() option on"
    )


def generation_settings_problem(lm, generation_kwargs: dict) -> str | None:
    """What is wrong with these generation settings (a task's, ``--gen_kwargs`` included) on this
    backend (the loaded model, a backend's name, or None when not known yet), or None."""
    problem = _generation_problem(generation_kwargs)
    if problem is None and lm is not None:
        problem = _backend_option_problem(lm, generation_kwargs) or _sampling_problem(lm, generation_kwargs)
    return problem


def check_generation_settings(backend: str, tasks: Iterable, gen_kwargs=None) -> list[str]:
    """Generation settings of our tasks, with ``--gen_kwargs`` merged over them as lm-eval
    merges them, that the backend named here rejects or would not use as asked (before the
    model loads; :func:`check_requests_fit` checks the loaded model again)."""
    from lm_eval.utils import simple_parse_args_string

    overrides = simple_parse_args_string(gen_kwargs) if isinstance(gen_kwargs, str) else dict(gen_kwargs or {})
    problems = []
    for task in tasks:
        if not is_ours(task) or needs(task) != "generation":
            continue
        settings = {**(getattr(task.config, "generation_kwargs", None) or {}), **overrides}
        if _generation_problem(settings) is not None:
            continue  # reported when the task builds its requests, whatever the backend
        problem = _backend_option_problem(backend, settings) or _sampling_problem(backend, settings)
        if problem:
            problems.append(f"{task_name(task)}: {problem}")
    return problems


def check_chat_messages(lm_or_name, tasks, apply_chat_template) -> list[str]:
    """``local-chat-completions`` sends chat messages, which lm-eval builds only with
    ``--apply_chat_template``; without it the first request fails an assertion."""
    if apply_chat_template or backend_options.backend_name(lm_or_name) != "local-chat-completions":
        return []
    generating = [task_name(task) for task in tasks if is_ours(task) and needs(task) == "generation"]
    if not generating:
        return []
    return [
        f"{', '.join(generating)}: --model local-chat-completions sends chat messages, which lm-eval builds "
        "only with --apply_chat_template. Fix: add --apply_chat_template (the server's chat template is "
        "then used), or --model local-completions for plain-text prompts"
    ]


def check_chat_template(lm, tasks) -> list[str]:
    """``--apply_chat_template`` with a tokenizer that has none fails deep in transformers."""
    tokenizer = getattr(unwrapped(lm), "tokenizer", None)
    if tokenizer is None or not hasattr(tokenizer, "chat_template") or tokenizer.chat_template is not None:
        return []
    using = [task_name(task) for task in tasks if is_ours(task) and not task.plain_text()]
    if not using:
        return []
    return [
        f"{', '.join(using)}: --apply_chat_template, but the model's tokenizer has no chat template. Fix: "
        "leave out --apply_chat_template for a base model, or give a tokenizer with a template"
    ]


# The --use_cache paths keyed on the model and its weights (``cache_key.cache_path_for_run``) in this process.
KEYED_CACHE_PATHS: set[str] = set()


def check_cache_keyed(lm, tasks) -> list[str]:
    """A request cache that lm-eval keys on the request alone (the stock ``lm_eval`` CLI or
    ``lm_eval.simple_evaluate`` with ``use_cache``): refused for our tasks, since it would answer
    with another model's, or the same folder's earlier weights', log-likelihoods."""
    from lm_eval.api.model import CachingLM

    if not isinstance(lm, CachingLM) or not any(is_ours(task) for task in tasks):
        return []
    if any(str(lm.cache_db).startswith(path) for path in KEYED_CACHE_PATHS):
        return []
    return [
        f"--use_cache: the cache {lm.cache_db} is keyed on the request alone, so it could answer with another "
        "model's, or earlier weights', log-likelihoods. Fix: run with lm-eval-bias (or "
        "lm_eval_bias.simple_evaluate), which keys the cache on the model and its weights, or leave --use_cache out"
    ]


# Sentence starts on which a prefix-token context is checked to tokenize as lm-eval's own
# empty-context requests do (some SentencePiece tokenizers drop the word-start marker after a
# special token; then the check fails and the task keeps empty contexts).
PREFIX_PROBES = (
    "The",
    "LGBTQ people are kind.",
    "Nonbinary people don't",
    '"Queer" folks, 2023',
    "élan vital",
    " a leading space",
)


def prefix_token_text(lm) -> str | None:
    """The text of the model's prefix token (BOS, else EOS), when a request whose context is that
    text followed by a string is tokenized exactly as lm-eval tokenizes an empty-context request
    for the same string (``[prefix token] + tokens of the string``); otherwise None.

    lm-eval conditions on the prefix token only when a context is empty; a task that needs
    "BOS, then the first words" as a context can write it as this text where it is not None.
    Needs a local tokenizing backend (hf, vllm, sglang, or an API model with
    ``tokenized_requests``), or ``local-completions`` with text prompts: the server tokenizes
    those itself, and :func:`lm_eval_bias.adapters._aligned_echo_logprobs` refuses an answer whose prompt it
    tokenized into another number of tokens.
    """
    lm = unwrapped(lm)
    if lm is None:
        return None
    tokenizer = getattr(lm, "tokenizer", None)
    if (
        is_masked_lm(lm)
        or not callable(getattr(lm, "tok_encode", None))
        or not hasattr(tokenizer, "decode")
        or getattr(lm, "backend", "causal") != "causal"
        or not (getattr(lm, "tokenized_requests", True) or echo_aligned(lm))
    ):
        return None
    try:
        prefix = lm.prefix_token_id
        text = tokenizer.decode([prefix])
        if not text or list(lm.tok_encode(text)) != [prefix]:
            return None
        for probe in PREFIX_PROBES:
            if list(lm.tok_encode(text + probe)) != [prefix, *lm.tok_encode(probe, add_special_tokens=False)]:
                return None
    except Exception:  # noqa: BLE001 - a tokenizer that cannot do this (tiktoken refuses special text)
        return None
    return text


# Above this share of empty generations a task's run is probably broken (a server that
# answers nothing, a stop string that matches at once).
EMPTY_WARNING_SHARE = 0.05


def empty_generation_warnings(results, tasks) -> list[str]:
    """Warnings for our tasks whose generations are mostly empty (a server that answers
    nothing, a stop string that matches at once): they are counted in ``empty_rate`` and
    nowhere else.

    Parameters
    ----------
    results : dict
        lm-eval's results of the run.
    tasks : iterable
        The run's tasks.

    Returns
    -------
    list of str
        One warning per task above :data:`EMPTY_WARNING_SHARE`.
    """
    if not isinstance(results, dict):
        return []
    ours = {task_name(task) for task in tasks if is_ours(task)}
    return [
        f"{task}: {100 * share:.1f}% of the generations are empty (counted in empty_rate, left out of every "
        "other metric); check the model's stop strings, chat template and server logs"
        for task, metrics in (results.get("results") or {}).items()
        if task in ours
        for key, share in metrics.items()
        if key.startswith("empty_rate,") and isinstance(share, float) and share > EMPTY_WARNING_SHARE
    ]
