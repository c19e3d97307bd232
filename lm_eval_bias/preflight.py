"""Everything that can be checked before the model is asked anything.

Three places run the checks, so that every way of running our tasks gets them as
early as it can:

* building a task (``harness.SubgroupMetricsTask``): its options, its data, its
  text classifiers;
* :func:`simple_evaluate`, which ``lm-eval-bias`` runs in place of lm-eval's:
  it builds every task *before* the model loads, also checks the ``--metadata``
  keys, the backend (by its name) and ``--limit``, and reports every problem at
  once (:class:`~lm_eval_bias.errors.PreflightError`);
* the request gate (:func:`install_request_gate`): lm-eval builds tasks after it
  loads the model, so with the stock ``lm_eval`` CLI or the Python API the
  backend and ``--limit`` checks run when lm-eval starts evaluating, and each of
  our tasks checks that its requests fit the model's context right after
  building them (:func:`check_requests_fit`), before the first request is sent.
  The gate wraps ``lm_eval.evaluator.evaluate`` (lm-eval has no hook that shows a
  task its model); it is installed by the first of our tasks to be built, so it
  never touches a run without them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from lm_eval_bias import backend_options, distributed, options
from lm_eval_bias.errors import ConfigurationError, LmEvalBiasError, PreflightError

logger = logging.getLogger("lm_eval_bias")

MASKED_LM_BACKENDS = frozenset({"hf-mlm"})
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
# How many offending documents a message lists before "and N more".
EXAMPLES_SHOWN = 3

_current_lm: contextvars.ContextVar = contextvars.ContextVar("lm_eval_bias_current_lm", default=None)
# True while the backend answers requests of our tasks only (:func:`_requests_routed_by_task`).
_answering_ours: contextvars.ContextVar = contextvars.ContextVar("lm_eval_bias_answering_ours", default=False)


# --------------------------------------------------------------------------
# What a task needs and what a backend can do


def is_ours(task) -> bool:
    from lm_eval_bias.harness import SubgroupMetricsTask

    return isinstance(task, SubgroupMetricsTask)


def task_name(task) -> str:
    return getattr(task, "task_name", None) or getattr(getattr(task, "config", None), "task", "?")


def needs(task) -> str:
    """``masked pairs`` (winoqueer_mlm), ``generation`` or ``log-likelihoods``."""
    if getattr(task, "MASKED_LM_PAIRS", False):
        return "masked pairs"
    return "generation" if getattr(task, "OUTPUT_TYPE", None) == "generate_until" else "log-likelihoods"


def _unwrapped(lm):
    from lm_eval.api.model import CachingLM

    return lm.lm if isinstance(lm, CachingLM) else lm


def _backend_kind(lm_or_name) -> tuple[str, bool, bool]:
    """(how to name it, masked LM?, can score log-likelihoods?) for a backend given by its
    lm-eval name (before loading) or as the loaded object."""
    if isinstance(lm_or_name, str):
        name = lm_or_name
        return f"--model {name}", name in MASKED_LM_BACKENDS, name not in NO_LOGLIKELIHOOD_BACKENDS
    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    lm = _unwrapped(lm_or_name)
    defining = next((cls for cls in type(lm).__mro__ if "loglikelihood" in vars(cls)), None)
    scores = defining is None or defining.__name__ not in NO_LOGLIKELIHOOD_CLASSES
    return f"the {type(lm).__name__} backend", isinstance(lm, HFMaskedLM), scores


def check_backend(lm_or_name, tasks: Iterable) -> list[str]:
    """Problems of running these tasks on this backend (a name such as ``"hf-mlm"`` before
    the model loads, or the loaded lm-eval model)."""
    if lm_or_name is None:
        return []
    backend, masked, scores_logliks = _backend_kind(lm_or_name)
    problems = []
    for task in tasks:
        name, need = task_name(task), needs(task)
        if masked and need != "masked pairs":
            problems.append(
                f"{name}: {backend} scores only WinoQueer pairs with a masked LM (winoqueer_mlm), and "
                f"{name} needs {need}. Fix: run {name} with --model hf and a causal LM; run masked LMs "
                "with --tasks winoqueer_mlm"
            )
        elif not masked and need == "masked pairs":
            problems.append(
                f"{name}: needs the masked-LM backend (--model hf-mlm with a masked LM such as "
                f"bert-base-uncased); {backend} would score each sentence as a continuation of its "
                "counterfactual, which is not WinoQueer's Eq. 1. Fix: --model hf-mlm, or --tasks "
                "winoqueer for causal LMs"
            )
        elif not scores_logliks and need == "log-likelihoods" and is_ours(task):
            problems.append(
                f"{name}: {backend} cannot score log-likelihoods (chat APIs return no log-probabilities "
                f"of the prompt), and {name} needs them. Fix: --model local-completions with a "
                "/v1/completions server that returns echo+logprobs, or --model hf / vllm; or run only "
                "the generation tasks on this backend"
            )
    if not isinstance(lm_or_name, str):
        problems += _masked_model_loaded_as_causal(lm_or_name, [t for t in tasks if is_ours(t)])
    return problems


def _masked_model_loaded_as_causal(lm, tasks: list) -> list[str]:
    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    if isinstance(_unwrapped(lm), HFMaskedLM):
        return []
    config = getattr(getattr(_unwrapped(lm), "model", None), "config", None)
    model_type = getattr(config, "model_type", None)
    # XLM checkpoints are masked (MLM) or causal (CLM); their config says which.
    masked = model_type in ENCODER_ONLY_MODEL_TYPES or (model_type == "xlm" and not getattr(config, "causal", False))
    if (
        not tasks
        or not masked
        or getattr(config, "is_decoder", False)
        or getattr(config, "is_encoder_decoder", False)
        or getattr(_unwrapped(lm), "backend", "causal") != "causal"
    ):
        return []
    names = ", ".join(task_name(task) for task in tasks)
    return [
        f"{names}: the model is a masked LM ({model_type}) loaded as a causal LM: it sees the tokens "
        "it is asked to predict, so its log-likelihoods and generations mean nothing. Fix: "
        "--model hf-mlm --tasks winoqueer_mlm for masked LMs, or a causal LM"
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
    from lm_eval.evaluator_utils import get_sample_size

    problems = []
    for task in tasks:
        size = get_sample_size(task, limit)
        if size is not None and size < 1:
            problems.append(
                f"{task_name(task)}: --limit {limit:g} leaves no documents to evaluate. Fix: "
                "--limit N with N >= 1 (or a fraction above 0), or no --limit"
            )
    return problems


def check_shards(lm, limit, tasks: Iterable) -> list[str]:
    """With several processes (``accelerate launch``) each gets every ``world_size``-th document,
    and lm-eval fails on a process left with none, after the model has loaded everywhere."""
    world_size = getattr(lm, "world_size", 1)
    if not isinstance(world_size, int) or world_size <= 1:
        return []
    from lm_eval.evaluator_utils import get_sample_size

    problems = []
    for task in tasks:
        documents = len(task.eval_docs)
        size = get_sample_size(task, limit) if limit is not None else None
        evaluated = documents if size is None else min(size, documents)
        if 1 <= evaluated < world_size:
            problems.append(
                f"{task_name(task)}: {evaluated} document(s) for {world_size} processes; lm-eval gives "
                f"each process every {world_size}th document and fails on a process with none. Fix: "
                f"--limit {world_size} or more, or at most {evaluated} processes"
            )
    return problems


# --------------------------------------------------------------------------
# Requests against the model's context (after the model has loaded)


def _tokens(lm, text: str) -> int:
    return len(lm.tok_encode(text)) if text else 0


def _context_checked(lm) -> bool:
    """Whether lm-eval truncates this backend's inputs to ``lm.max_length`` itself (the local
    backends); API servers report no real context size, and hf-mlm checks its own."""
    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    return (
        isinstance(getattr(lm, "max_length", None), int)
        and callable(getattr(lm, "tok_encode", None))
        and not _is_api_model(lm)
        and not isinstance(lm, HFMaskedLM)
    )


def _is_api_model(lm) -> bool:
    """Whether ``lm`` is one of lm-eval's API backends (``TemplateAPI``), without importing their
    module (aiohttp and more: a third of a second) in a run that loaded none of them."""
    module = sys.modules.get("lm_eval.models.api_models")
    return module is not None and isinstance(lm, module.TemplateAPI)


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
    those itself, and :func:`_aligned_echo_logprobs` refuses an answer whose prompt it
    tokenized into another number of tokens.
    """
    lm = _unwrapped(lm)
    if lm is None:
        return None
    from lm_eval_bias.models.hf_mlm import HFMaskedLM

    tokenizer = getattr(lm, "tokenizer", None)
    if (
        isinstance(lm, HFMaskedLM)
        or not callable(getattr(lm, "tok_encode", None))
        or not hasattr(tokenizer, "decode")
        or getattr(lm, "backend", "causal") != "causal"
        or not (getattr(lm, "tokenized_requests", True) or _echo_aligned(lm))
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


def logits_cache_rounds(requests: Sequence[tuple[Any, Sequence[int], Sequence[int]]]) -> list[list[int]]:
    """Positions of tokenized log-likelihood requests ``(strings, context ids, continuation
    ids)``, in rounds that lm-eval's ``hf`` backend scores correctly (lm-eval 0.4.13).

    With ``logits_cache`` (its default) ``HFLM`` runs one forward pass for all requests whose
    tokens agree but for the last, then reads each request's log-probabilities from the first
    positions of the longest one's continuation: a request of the group whose continuation is
    shorter gets the log-probabilities of other tokens (WinoQueer meets this when one sentence
    is split after ``Straight`` in one pair and after ``Straight people`` in another). In a round,
    the requests of a group all have one continuation length: the cache is still used within
    it, and a group with two lengths costs one more forward pass. One round when nothing
    conflicts.
    """
    lengths: dict[tuple, list[int]] = {}
    keys = []
    for _, context, continuation in requests:
        key = (*context, *continuation[:-1])
        keys.append(key)
        lengths.setdefault(key, []).append(len(continuation))
    round_of_length = {
        key: {length: index for index, length in enumerate(sorted(set(found)))}
        for key, found in lengths.items()
        if len(set(found)) > 1
    }
    if not round_of_length:
        return [list(range(len(requests)))]
    rounds: list[list[int]] = [[] for _ in range(max(len(by_length) for by_length in round_of_length.values()))]
    for position, (key, (_, _, continuation)) in enumerate(zip(keys, requests)):
        rounds[round_of_length[key][len(continuation)] if key in round_of_length else 0].append(position)
    return rounds


_ABSENT = object()


@contextlib.contextmanager
def replaced(model, name: str, replacement):
    """``model.<name>`` (an object's or a module's) is ``replacement`` inside the block;
    afterwards what it was (several of the gate's wrappers may stack on one model)."""
    before = vars(model).get(name, _ABSENT)
    setattr(model, name, replacement)
    try:
        yield
    finally:
        if before is _ABSENT:
            delattr(model, name)
        else:
            setattr(model, name, before)


@contextlib.contextmanager
def adapted_for_ours(model, name: str, adapted):
    """``model.<name>`` is ``adapted`` while the backend answers our tasks' requests and what it
    was otherwise, inside the block: a user's own tasks in the run get lm-eval's behaviour."""
    original = getattr(model, name)

    def switch(*args, **kwargs):
        return (adapted if _answering_ours.get() else original)(*args, **kwargs)

    with replaced(model, name, switch):
        yield


# The request methods of lm-eval's LM API that evaluate calls with the requests of every task.
REQUEST_METHODS = ("loglikelihood", "loglikelihood_rolling", "generate_until")


@contextlib.contextmanager
def _requests_routed_by_task(lm, our_tasks: set[str]):
    """While lm-eval runs, each request method of ``lm`` answers the requests of ``our_tasks`` and
    the others in separate calls, in the order asked: ours with the adapters of
    :func:`adapted_for_ours` on, the others with lm-eval's own behaviour (what the stock
    ``lm_eval`` gives them: their log-likelihoods are never read through our fixes)."""

    def routed(method):
        def answer(requests, *args, **kwargs):
            requests = list(requests)
            mine = [getattr(request, "task_name", None) in our_tasks for request in requests]
            if all(mine) or not any(mine):
                token = _answering_ours.set(bool(requests) and all(mine))
                try:
                    return method(requests, *args, **kwargs)
                finally:
                    _answering_ours.reset(token)
            answers = [None] * len(requests)
            for ours in (False, True):
                positions = [position for position, is_mine in enumerate(mine) if is_mine == ours]
                token = _answering_ours.set(ours)
                try:
                    part = method([requests[position] for position in positions], *args, **kwargs)
                finally:
                    _answering_ours.reset(token)
                for position, value in zip(positions, part):
                    answers[position] = value
            return answers

        return answer

    with contextlib.ExitStack() as patches:
        for name in REQUEST_METHODS:
            if callable(getattr(lm, name, None)):
                patches.enter_context(replaced(lm, name, routed(getattr(lm, name))))
        yield


def _world_size(lm) -> int:
    try:
        return int(getattr(lm, "world_size", 1) or 1)
    except (TypeError, ValueError):
        return 1


@contextlib.contextmanager
def _distinct_loglikelihood_requests(lm):
    """While lm-eval runs, each distinct log-likelihood request is sent to the backend once and
    its answer given to every document that asked it.

    A task cannot share a request between documents (WinoQueer's gender subset asks for each
    LGBTQ+ sentence in two pairs), and lm-eval 0.4.13 sends repeats as they are: ``hf`` groups
    them into one forward row, but ``vllm`` without prefix caching and every API server compute
    them again, and an API server bills them again. Not with several processes: lm-eval pads
    every rank to the same number of requests, which sharded models need.
    """
    if _world_size(lm) > 1:
        yield
        return
    score = lm.loglikelihood

    def loglikelihood(requests, *args, **kwargs):
        position_of: dict = {}
        distinct = []
        try:
            for request in requests:
                if position_of.setdefault(request.args, len(distinct)) == len(distinct):
                    distinct.append(request)
        except TypeError:  # arguments that cannot be compared (a multimodal task's images)
            return score(requests, *args, **kwargs)
        if len(distinct) == len(requests):
            return score(requests, *args, **kwargs)
        logger.info("%d log-likelihood requests, %d distinct: each sent once", len(requests), len(distinct))
        answers = score(distinct, *args, **kwargs)
        return [answers[position_of[request.args]] for request in requests]

    with adapted_for_ours(lm, "loglikelihood", loglikelihood):
        yield


@contextlib.contextmanager
def _logits_cache_split(lm):
    """While lm-eval runs, ``hf`` with ``logits_cache`` scores its log-likelihood requests in
    :func:`logits_cache_rounds`, so that no request is read from another's positions."""
    from lm_eval.models.huggingface import HFLM

    model = _unwrapped(lm)
    if not (isinstance(model, HFLM) and getattr(model, "logits_cache", False) and model.backend == "causal"):
        yield
        return
    score = model._loglikelihood_tokens

    def loglikelihood_tokens(requests, *args, **kwargs):
        rounds = logits_cache_rounds(requests)
        if len(rounds) == 1:
            return score(requests, *args, **kwargs)
        logger.debug(
            "scoring %d log-likelihood requests in %d rounds (lm-eval's logits cache)", len(requests), len(rounds)
        )
        answers = [None] * len(requests)
        for positions in rounds:
            for position, answer in zip(positions, score([requests[p] for p in positions], *args, **kwargs)):
                answers[position] = answer
        return answers

    with adapted_for_ours(model, "_loglikelihood_tokens", loglikelihood_tokens):
        yield


def current_prefix_token_text() -> str | None:
    """:func:`prefix_token_text` of the model lm-eval is evaluating now (None outside a run)."""
    return prefix_token_text(_current_lm.get())


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


def check_requests_fit(task) -> None:
    """Refuse a task whose requests the current model would truncate: lm-eval would drop the
    start of the prompt (or fail an assertion) and score something else than the benchmark's
    text. Runs right after the task built its requests, before any is sent. Also refuses
    generation settings that the backend would fail on at the first request."""
    lm = _unwrapped(_current_lm.get())
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
    from lm_eval_bias.harness import doc_label

    examples = "; ".join(
        f"document {doc_label(request.doc)} ({reason})" for request, reason in too_long[:EXAMPLES_SHOWN]
    )
    more = f", and {len(too_long) - EXAMPLES_SHOWN} more" if len(too_long) > EXAMPLES_SHOWN else ""
    # With several processes each checks its own share of the documents (and stops the run).
    world_size = getattr(lm, "world_size", 1)
    share = (
        f" (process {lm.rank} of {world_size}: its share of the documents)"
        if isinstance(world_size, int) and world_size > 1
        else ""
    )
    raise ConfigurationError(
        f"{task_name(task)}: {len(too_long)} of its {len(task.instances)} requests{share} do not fit the model's "
        f"context of {lm.max_length} tokens, so lm-eval would cut the start of the prompt: {examples}{more}. "
        "Fix: a model with a longer context (or --model_args max_length=N where the model supports it), a "
        "smaller --gen_kwargs max_gen_toks=N for generation tasks, or a data file without those documents"
    )


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


def _no_chat_template(lm, tasks) -> list[str]:
    """``--apply_chat_template`` with a tokenizer that has none fails deep in transformers."""
    tokenizer = getattr(_unwrapped(lm), "tokenizer", None)
    if tokenizer is None or not hasattr(tokenizer, "chat_template") or tokenizer.chat_template is not None:
        return []
    using = [task_name(task) for task in tasks if is_ours(task) and not task.plain_text()]
    if not using:
        return []
    return [
        f"{', '.join(using)}: --apply_chat_template, but the model's tokenizer has no chat template. Fix: "
        "leave out --apply_chat_template for a base model, or give a tokenizer with a template"
    ]


def _echo_aligned(lm) -> bool:
    """Whether ``lm`` is lm-eval's ``local-completions`` backend (or its OpenAI twin) with lm-eval's
    own reading of echoed log-probabilities, which :func:`_aligned_echo_logprobs` replaces."""
    module = sys.modules.get("lm_eval.models.openai_completions")
    return (
        module is not None
        and isinstance(lm, module.LocalCompletionsAPI)
        and type(lm).parse_logprobs is module.LocalCompletionsAPI.parse_logprobs
    )


@contextlib.contextmanager
def _aligned_echo_logprobs(lm):
    """Read a completions server's echoed log-probabilities from the end of the echoed prompt
    (:mod:`lm_eval_bias.models.completions_api`): lm-eval's own reading is one token off when the
    server leaves the BOS out of its echo or generates nothing (llama.cpp), silently."""
    inner = _unwrapped(lm)
    if not _echo_aligned(inner):
        yield
        return
    from lm_eval_bias.models.completions_api import continuation_logprobs

    prefix_token_id = inner.prefix_token_id

    def parse_logprobs(outputs, tokens=None, ctxlens=None, **kwargs):
        return continuation_logprobs(outputs, tokens, ctxlens, prefix_token_id)

    with adapted_for_ours(inner, "parse_logprobs", parse_logprobs):
        yield


def _refused_token_prompts(inner, error) -> bool:
    """Whether ``error`` is a server refusing (HTTP 4xx/5xx) the token-id prompts lm-eval sends
    with ``tokenized_requests=True`` (llama.cpp's server takes text prompts only)."""
    status = getattr(getattr(error, "response", None), "status_code", None) or getattr(error, "status", None)
    return getattr(inner, "tokenized_requests", False) and isinstance(status, int) and 400 <= status < 600


def _token_prompts_message(tasks: str, error) -> str:
    return (
        f"{tasks}: the completions server refused lm-eval's prompts ({type(error).__name__}: {error}). lm-eval "
        "sends them as token ids by default, and servers such as llama.cpp take text only. Fix: --model_args "
        "...,tokenized_requests=False (lm-eval still tokenizes locally to locate the scored tokens)"
    )


@contextlib.contextmanager
def _explained_backend_failures(lm, tasks):
    """A completions server whose answers hold no prompt log-probabilities makes lm-eval's API
    backend fail with a bare TypeError or KeyError while parsing them, and one that takes no
    token-id prompts with an HTTP error after its retries: say what they mean."""
    inner = _unwrapped(lm)
    ours = [task for task in tasks if is_ours(task)]
    scoring = [task_name(task) for task in ours if needs(task) == "log-likelihoods"]
    generating = [task_name(task) for task in ours if needs(task) == "generation"]
    if not _is_api_model(inner) or not ours:
        yield
        return
    import requests
    from aiohttp import ClientResponseError

    http_errors = (requests.exceptions.HTTPError, ClientResponseError)
    original_loglikelihood, original_generate_until = inner.loglikelihood, inner.generate_until

    def loglikelihood(*args, **kwargs):
        try:
            return original_loglikelihood(*args, **kwargs)
        except ConfigurationError as error:  # completions_api could not read an answer
            raise ConfigurationError(f"{', '.join(scoring)}: {error}") from error
        except http_errors as error:
            if _refused_token_prompts(inner, error):
                raise ConfigurationError(_token_prompts_message(", ".join(scoring), error)) from error
            raise
        except (TypeError, KeyError, IndexError, AttributeError) as error:
            raise ConfigurationError(
                f"{', '.join(scoring)}: the server's answers hold no usable log-probabilities of the prompt "
                f"({type(error).__name__}: {error}). Fix: a /v1/completions server that returns echo and "
                "logprobs (llama.cpp: --logits_all true), or --model hf / vllm"
            ) from error

    def generate_until(*args, **kwargs):
        try:
            return original_generate_until(*args, **kwargs)
        except http_errors as error:
            if _refused_token_prompts(inner, error):
                raise ConfigurationError(_token_prompts_message(", ".join(generating), error)) from error
            raise

    with contextlib.ExitStack() as patches:
        if scoring:
            patches.enter_context(adapted_for_ours(inner, "loglikelihood", loglikelihood))
        if generating:
            patches.enter_context(adapted_for_ours(inner, "generate_until", generate_until))
        yield


def _do_sample(generation_kwargs: dict) -> bool | None:
    """The settings' ``do_sample`` (text such as "True" from ``--gen_kwargs`` read as lm-eval's
    backends read it), None when not given."""
    value = generation_kwargs.get("do_sample")
    return None if value is None else str(value).strip().lower() in ("true", "1", "yes")


def _samples(generation_kwargs: dict) -> bool:
    """Whether these settings sample (lm-eval's rule: do_sample, else a temperature above 0)."""
    do_sample = _do_sample(generation_kwargs)
    try:
        temperature = float(generation_kwargs.get("temperature", 0.0))
    except (TypeError, ValueError):
        return False
    if do_sample is None:
        return temperature > 0
    return do_sample and temperature > 0


@contextlib.contextmanager
def _fresh_draws_from_servers(lm, tasks):
    """lm-eval's API backends send one seed (``--model_args seed``, 1234 unless given) with every
    request. vLLM's, SGLang's and llama.cpp's servers seed each request's sampler with it, so every
    repeat of a prompt (``repeats``, or the same prompt as several documents) would get the same
    continuation: ten samples of a prompt would be one sample ten times, and their spread none.
    For the sampling settings of our tasks the seed is left out of the request, so that each
    continuation is drawn anew (as with hf and vllm, whose generator runs on); the run is then
    not reproducible from its seed."""
    inner = _unwrapped(lm)
    sampled = [
        dict(task.config.generation_kwargs or {})
        for task in tasks
        if is_ours(task) and needs(task) == "generation" and _samples(task.config.generation_kwargs or {})
    ]
    if not _is_api_model(inner) or not sampled:
        yield
        return
    original = inner._create_payload
    names = ", ".join(
        task_name(task) for task in tasks if is_ours(task) and dict(task.config.generation_kwargs or {}) in sampled
    )
    logger.info(
        "%s: sampled requests go to the server without lm-eval's seed, so that repeats of a prompt are "
        "drawn independently (results are not reproducible from --seed on this backend)",
        names,
    )

    def create_payload(messages, *args, **kwargs):
        ours = kwargs.get("generate") and kwargs.get("gen_kwargs") in sampled
        payload = original(messages, *args, **kwargs)
        if ours and isinstance(payload, dict):
            payload.pop("seed", None)
        return payload

    with adapted_for_ours(inner, "_create_payload", create_payload):
        yield


@contextlib.contextmanager
def _text_generations_only(lm, tasks):
    """A model wrapper whose ``generate_until`` answers something other than text (lm-eval's API
    asks for strings) would crash our scoring after every generation: say so at the first batch."""
    inner = _unwrapped(lm)
    generating = [task_name(task) for task in tasks if is_ours(task) and needs(task) == "generation"]
    if not generating or not callable(getattr(inner, "generate_until", None)):
        yield
        return
    original = inner.generate_until

    def generate_until(requests, *args, **kwargs):
        answers = original(requests, *args, **kwargs)
        wrong = next((answer for answer in answers if answer is not None and not isinstance(answer, str)), None)
        if wrong is not None:
            raise ConfigurationError(
                f"{', '.join(generating)}: the {type(inner).__name__} backend answered a generation with "
                f"{type(wrong).__name__} {wrong!r:.60}, not text. Fix: its generate_until must return one string "
                "per request (lm-eval's LM API)"
            )
        return answers

    with adapted_for_ours(inner, "generate_until", generate_until):
        yield


def _warn_about_empty_generations(results, tasks) -> None:
    """Say loudly when a task's generations are mostly empty (a server that answers nothing,
    a stop string that matches at once): they are counted in empty_rate and nowhere else."""
    from lm_eval_bias.harness import EMPTY_WARNING_SHARE

    if not isinstance(results, dict):
        return
    ours = {task_name(task) for task in tasks if is_ours(task)}
    for task, metrics in (results.get("results") or {}).items():
        for key, share in metrics.items():
            if (
                task in ours
                and key.startswith("empty_rate,")
                and isinstance(share, float)
                and share > EMPTY_WARNING_SHARE
            ):
                logger.warning(
                    "%s: %.1f%% of the generations are empty (counted in empty_rate, left out of every other "
                    "metric); check the model's stop strings, chat template and server logs",
                    task,
                    100 * share,
                )


def _install_excepthook() -> None:
    """With the stock ``lm_eval`` CLI, print our errors' message alone, as ``lm-eval-bias`` does:
    it says what, where and the fix; a traceback would bury it. Other errors are untouched."""
    previous = sys.excepthook
    if getattr(previous, "_lm_eval_bias", False):
        return

    def excepthook(kind, error, trace):
        if isinstance(error, LmEvalBiasError):
            print(f"lm-eval-bias: error: {error}", file=sys.stderr)
            return
        previous(kind, error, trace)

    excepthook._lm_eval_bias = True
    sys.excepthook = excepthook


# The --use_cache paths keyed on the model and its weights (``cache_key.cache_path_for_run``) in this process.
_KEYED_CACHE_PATHS: set[str] = set()


def check_cache_keyed(lm, tasks) -> list[str]:
    """A request cache that lm-eval keys on the request alone (the stock ``lm_eval`` CLI or
    ``lm_eval.simple_evaluate`` with ``use_cache``): refused for our tasks, since it would answer
    with another model's, or the same folder's earlier weights', log-likelihoods."""
    from lm_eval.api.model import CachingLM

    if not isinstance(lm, CachingLM) or not any(is_ours(task) for task in tasks):
        return []
    if any(str(lm.cache_db).startswith(path) for path in _KEYED_CACHE_PATHS):
        return []
    return [
        f"--use_cache: the cache {lm.cache_db} is keyed on the request alone, so it could answer with another "
        "model's, or earlier weights', log-likelihoods. Fix: run with lm-eval-bias (or "
        "lm_eval_bias.simple_evaluate), which keys the cache on the model and its weights, or leave --use_cache out"
    ]


def install_request_gate() -> None:
    """Wrap ``lm_eval.evaluator.evaluate`` (once) so that the backend and ``--limit`` checks run
    on the loaded model before any request is built, and tasks can see the model; and show our
    errors without a traceback in the stock CLI."""
    import lm_eval.evaluator as evaluator

    _install_excepthook()
    if getattr(evaluator.evaluate, "_lm_eval_bias_gate", False):
        return
    original = evaluator.evaluate

    @functools.wraps(original)
    def evaluate(lm, task_dict, *args, **kwargs):
        tasks = list(task_dict.get("tasks", {}).values()) if isinstance(task_dict, dict) else []
        limit = kwargs.get("limit", args[0] if args else None)
        problems = check_backend(lm, tasks) + check_limit(limit, tasks)
        problems += check_chat_messages(lm, tasks, kwargs.get("apply_chat_template"))
        problems += check_cache_keyed(lm, tasks)
        problems += check_shards(lm, limit, tasks) if not problems else []
        if kwargs.get("apply_chat_template"):
            problems += _no_chat_template(lm, tasks)
        if problems:
            raise PreflightError(problems)
        token = _current_lm.set(lm)
        try:
            with (
                _explained_backend_failures(lm, tasks),
                _text_generations_only(lm, tasks),
                _fresh_draws_from_servers(lm, tasks),
                _logits_cache_split(lm),
                _distinct_loglikelihood_requests(lm),
                distributed.shards_merged(lm, tasks),
                _aligned_echo_logprobs(lm),
                # outermost: every adapter above acts on our tasks' requests only
                _requests_routed_by_task(lm, {task_name(task) for task in tasks if is_ours(task)}),
            ):
                results = original(lm, task_dict, *args, **kwargs)
        finally:
            _current_lm.reset(token)
        _warn_about_empty_generations(results, tasks)
        return results

    evaluate._lm_eval_bias_gate = True
    evaluator.evaluate = evaluate


# --------------------------------------------------------------------------
# Before the model loads: lm-eval's simple_evaluate, with every check first


# Options of ours that are also model arguments of some lm-eval backend (vLLM's seed).
MODEL_ARG_OPTIONS = frozenset({"seed"})


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


def _metadata_not_in(task_manager, metadata) -> list[str]:
    """lm-eval gives tasks the task manager's metadata only: options passed beside it are lost."""
    given = getattr(task_manager, "metadata", None) or {}
    lost = sorted(key for key, value in (metadata or {}).items() if given.get(key) != value)
    if not lost:
        return []
    return [
        f"metadata: {', '.join(map(repr, lost))} would not reach the tasks: lm-eval gives them only the "
        "metadata of the task_manager passed with them. Fix: pass the options to "
        "lm_eval_bias.task_manager(metadata=...) instead"
    ]


def _model_arg_keys(model_args) -> set[str]:
    if isinstance(model_args, dict):
        return set(model_args)
    if isinstance(model_args, str) and model_args.strip():
        from lm_eval.utils import simple_parse_args_string

        return set(simple_parse_args_string(model_args))
    return set()


def _build(task_manager, spec):
    """One task spec built (data read, classifiers loaded), as lm-eval would build it."""
    if hasattr(task_manager, "_load_spec"):
        # What TaskManager.load does for each spec of its list (lm-eval 0.4.13), keeping a
        # group a group.
        return task_manager._load_spec(spec)
    return list(task_manager.load([spec])["tasks"].values())


def _leaves(built) -> list:
    from lm_eval.api.group import Group

    items = built if isinstance(built, list) else [built]
    leaves = []
    for item in items:
        leaves += list(item.get_all_tasks()) if isinstance(item, Group) else [item]
    return leaves


def _tags_expanded(task_manager, specs) -> list:
    """Specs with each tag (``lm_eval_bias``) replaced by its tasks, so that one task's problem
    does not hide the others'."""
    expanded = []
    for spec in specs:
        entry = task_manager.task_index.get(spec) if isinstance(spec, str) else None
        if entry is not None and getattr(entry.kind, "name", None) == "TAG":
            expanded += sorted(entry.tags)
        else:
            expanded.append(spec)
    return expanded


def build_tasks(task_manager, tasks) -> tuple[list, list, list[str]]:
    """Build every spec, collecting our errors instead of stopping at the first.

    Returns (built specs for lm-eval, leaf tasks, problems). The same problem met by several
    tasks (one missing classifier checkpoint, say) is reported once, naming them all.
    """
    built, leaves = [], []
    failed: dict[str, list[str]] = {}  # message -> the specs that met it
    for spec in _tags_expanded(task_manager, tasks):
        try:
            item = spec if not isinstance(spec, (str, dict)) else _build(task_manager, spec)
        except LmEvalBiasError as error:
            name = spec if isinstance(spec, str) else str(spec.get("task"))
            for message in error.problems if isinstance(error, PreflightError) else [str(error)]:
                failed.setdefault(message, []).append(name)
            continue
        built += item if isinstance(item, list) else [item]
        leaves += _leaves(item)
    problems = []
    for message, specs in failed.items():
        named = ", ".join(specs)
        problems.append(message if len(specs) == 1 and message.startswith(f"{named}:") else f"{named}: {message}")
    return built, leaves, problems


def _is_task_spec(task) -> bool:
    """A task name, or a complete task config (lm-eval crashes deep inside on an incomplete one)."""
    if isinstance(task, dict):
        return isinstance(task.get("task"), str) and bool(task.get("dataset_path") or task.get("custom_dataset"))
    return isinstance(task, str)


def simple_evaluate(model, model_args=None, tasks=None, *args, task_manager=None, metadata=None, limit=None, **kwargs):
    """``lm_eval.simple_evaluate`` with our tasks indexed and every check done before the model
    loads: each task is built first (options, data, classifiers), then the ``--metadata`` keys,
    the backend and ``--limit`` are checked, and all problems are raised together as one
    :class:`PreflightError`. Arguments and result are lm-eval's. The run collects cyclic garbage
    less often (``harness.fewer_garbage_collections``)."""
    from lm_eval_bias.harness import fewer_garbage_collections

    with fewer_garbage_collections():
        return _checked_evaluate(
            model, model_args, tasks, *args, task_manager=task_manager, metadata=metadata, limit=limit, **kwargs
        )


def _checked_evaluate(model, model_args, tasks, *args, task_manager, metadata, limit, **kwargs):
    import lm_eval.evaluator

    import lm_eval_bias
    from lm_eval_bias import cache_key

    # By name, so that a use_cache (or gen_kwargs, ...) given by position is checked like the others.
    by_position = dict(zip(list(inspect.signature(lm_eval.evaluator.simple_evaluate).parameters)[3:], args))
    if set(by_position) & set(kwargs):
        raise TypeError(f"simple_evaluate() got multiple values for {sorted(set(by_position) & set(kwargs))}")
    kwargs.update(by_position)
    args = ()
    unwritable = cache_key.unwritable_run_paths(kwargs)
    if unwritable:
        raise PreflightError(unwritable)

    if metadata is not None and (not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata)):
        raise ConfigurationError(
            f"simple_evaluate(metadata=...): expected a dict of option names (text) to values, got {metadata!r}"[:300]
        )
    if tasks is not None and (not isinstance(tasks, (list, tuple)) or not all(map(_is_task_spec, tasks))):
        raise ConfigurationError(
            f"simple_evaluate(tasks=...): expected a list of task names, e.g. "
            f"['winoqueer'] (or complete task configs), got {tasks!r}"[:300]
        )
    problems = []
    if task_manager is None:
        merged = {**({} if not isinstance(model_args, dict) else model_args), **(metadata or {})}
        if isinstance(model_args, str) and model_args.strip():
            from lm_eval.utils import simple_parse_args_string

            merged = {**simple_parse_args_string(model_args), **(metadata or {})}
        task_manager = lm_eval_bias.task_manager(metadata=merged)
    else:
        problems += _metadata_not_in(task_manager, metadata)
    # Model arguments go to the model: one of our options there crashes the model's loader.
    misplaced = sorted(_model_arg_keys(model_args) & options.known_names() - MODEL_ARG_OPTIONS)
    problems += [
        f"--model_args: {key!r} is an option of lm-eval-bias's tasks, not a model argument. Fix: pass "
        f"it with --metadata '{{\"{key}\": ...}}'"
        for key in misplaced
    ]
    # lm-eval's CLI merges --model_args into --metadata; what remains is what the user wrote there.
    user_keys = set(task_manager.metadata or {}) - _model_arg_keys(model_args)
    # A key only a task's YAML may set would change every task of the run: refused before any is
    # built (each of ours would refuse it again as it is built).
    yaml_only = [f"--metadata: {problem}" for problem in options.yaml_only(sorted(user_keys))]
    if yaml_only:
        raise PreflightError(problems + yaml_only)
    specs = list(tasks or [])
    built, leaves, build_problems = build_tasks(task_manager, specs)
    problems = build_problems + problems
    # Each of our tasks has reported the keys that look misspelt; when every task is ours, a key
    # none of them reads is a mistake too (it could be another harness task's option otherwise).
    if leaves and all(is_ours(task) for task in leaves):
        reported = {key for key in user_keys if options.misspelt([key], ())}
        problems += [f"--metadata: {problem}" for problem in options.unknown_keys(sorted(user_keys - reported))]
        read = {option.name for task in leaves for option in getattr(task.config.custom_dataset, "options", ())}
        unread = sorted(user_keys & options.known_names() - read - reported)
        problems += [
            f"--metadata: no task of this run reads the option {key!r} "
            f"({', '.join(task_name(task) for task in leaves)}); remove it, or add the task it is for"
            for key in unread
        ]
    if isinstance(model, str):
        problems += check_backend(model, leaves)
        problems += check_generation_settings(model, leaves, kwargs.get("gen_kwargs"))
        problems += check_chat_messages(model, leaves, kwargs.get("apply_chat_template"))
    problems += check_limit(limit, leaves)
    if kwargs.get("use_cache"):
        try:
            kwargs["use_cache"] = cache_key.cache_path_for_run(kwargs["use_cache"], model, model_args)
            _KEYED_CACHE_PATHS.add(kwargs["use_cache"])
        except ConfigurationError as error:
            problems.append(str(error))
    if problems:
        raise PreflightError(problems)
    install_request_gate()
    return lm_eval.evaluator.simple_evaluate(
        model, model_args, built or specs, *args, task_manager=task_manager, metadata=metadata, limit=limit, **kwargs
    )
