"""Every run-time replacement of lm-eval's behaviour (0.4.13 and 0.5.0.dev1), in one place.

lm-eval has no hook for what these do, so each replaces an lm-eval function, method or attribute.
The ones that change what reaches the model, or how its answers are read, act on our tasks'
requests only (:func:`adapted_for_ours`, :func:`_requests_routed_by_task`): a task that is not
ours, run with lm-eval-bias alone or beside ours, gets exactly what the stock ``lm_eval`` gives it
(``tests/test_adapters.py``). No other module of the package assigns to lm-eval's objects.

Each entry: what is replaced (by which function, installed when); the lm-eval behaviour it works
around; the test that pins it; when it can go; the lm-eval versions that need it (where one does
not, the replacement installs nothing there, or nothing that acts). Each upstream report's offline
reproduction (``tests/upstream/``) runs on both lm-evals in CI (``-m lm_eval_versions``).

Process-wide, installed once and kept:

* ``lm_eval.tasks.TaskManager`` (:func:`install_task_manager_shim`; the ``lm-eval-bias`` command).
  lm-eval's CLI builds a TaskManager that indexes only ``--include_path``. Pinned by
  ``tests/test_end_to_end.py::test_ls_and_validate_see_our_tasks_beside_a_users_own``. Goes when
  lm-eval finds a plugin's task folders through an entry point.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1 (neither reads the entry point).
* The same ``lm_eval.tasks.TaskManager``, in every interpreter of an environment the companion
  distribution lm-eval-bias-autoload is installed in (``lm_eval_bias/autoload/``: its
  ``lm_eval_bias_autoload.start``, or ``lm_eval_bias_autoload.pth`` before Python 3.15, starts
  ``_lm_eval_bias_autoload``, whose import hook calls :func:`install_task_manager_shim` once
  ``lm_eval.tasks`` is imported; lm-eval-bias itself ships no start-up file). lm-eval 0.4.13 does
  not read our ``lm_eval.tasks`` entry point, so the stock ``lm_eval --tasks winoqueer`` and
  ``lm_eval.simple_evaluate`` without a task manager would not find our tasks. Off with
  ``LM_EVAL_BIAS_NO_AUTOLOAD=1``; any error is one line on standard error. Pinned by
  ``tests/test_autoload.py::test_the_stock_cli_runs_our_tasks_with_no_flag`` and
  ``tests/test_autoload.py::test_the_hook_steps_aside_where_lm_eval_reads_the_entry_point``. Goes
  when lm-eval reads the entry point (upstream PR #4015): the hook steps aside then, and
  ``tests/test_autoload.py::test_the_installed_lm_eval_does_not_read_the_entry_point_yet`` fails
  to say that the companion can go.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1 (neither reads the entry point).
* ``lm_eval.simple_evaluate`` (:func:`install_simple_evaluate_shim`; the ``lm-eval-bias`` command).
  lm-eval builds tasks after the model loads and keys ``--use_cache`` on the request alone. Pinned
  by ``tests/test_cli_errors.py::test_an_unwritable_cache_or_output_path_is_refused_before_the_model_loads``
  and ``tests/test_end_to_end.py::test_cache_file_is_specific_to_the_model``. Goes when lm-eval
  builds tasks before loading the model and keys its cache on the model.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
* ``lm_eval.evaluator.evaluate`` (:func:`install_request_gate`; our ``simple_evaluate``, or the
  first of our tasks to be built). lm-eval shows a task no model, so the checks on the loaded model
  (:func:`lm_eval_bias.checks.check_loaded_model`) and the per-call adapters below run here, and each
  of our tasks is handed the model before its requests are built (``SubgroupMetricsTask.use_model``:
  its prefix token as text, and the checks of its requests against the model's context). Pinned
  by ``tests/test_end_to_end.py::test_stock_cli_with_include_path`` and ``tests/test_preflight.py``.
  Goes with the last per-call adapter and a task hook that sees the model.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1. On 0.5.0.dev1, whose samples copy each document's values
  as ``process_results`` returned them, it also gives our tasks' samples their plain values
  (:func:`plain_samples_of`; ``tests/test_adapters.py::test_only_our_tasks_logged_samples_get_their_plain_values``)
  and, with several processes, one process's order (:func:`samples_in_document_order`;
  ``tests/test_several_processes.py``).
* ``sys.excepthook`` (:func:`_install_excepthook`; with the gate and the TaskManager shim). The
  stock CLI prints our errors' message, and why a run of our tasks could not load its model, under
  a traceback. Pinned by ``tests/test_mistakes_and_faulty_backends.py::
  test_the_stock_cli_shows_our_errors_without_a_traceback`` and ``tests/test_cli_failures.py::
  test_the_stock_cli_explains_a_load_failure_for_our_tasks_only``. Goes when lm-eval prints a
  plugin's configuration errors without one.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
* A filter on the ``lm_eval.evaluator_utils`` logger (:func:`expect_subgroup_metrics`; each of our
  tasks when built). lm-eval warns on every run of a task whose metrics rest on different numbers
  of documents, which per-subgroup metrics do by design; only our tasks' warnings are dropped.
  Pinned by ``tests/test_adapters.py::test_only_our_tasks_subgroup_count_warning_is_dropped``. Goes
  when lm-eval lets a task declare such metrics.
  Needed on lm-eval 0.4.13; 0.5.0.dev1 gives no such warning (the filter drops nothing).

Per ``evaluate`` call, on the model (and our tasks) only, undone when the call returns:

* ``loglikelihood``, ``loglikelihood_rolling``, ``generate_until`` (:func:`_requests_routed_by_task`):
  lm-eval sends every task's requests in one call; ours and the others are answered in separate
  calls, so that the adapters below see ours only. Pinned by ``tests/test_adapters.py``. Goes with
  the last adapter below.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
* ``HFLM._loglikelihood_tokens`` (:func:`_logits_cache_split`). With ``logits_cache`` lm-eval reads
  a shorter continuation from the positions of a longer one (:func:`logits_cache_rounds`). Pinned by
  ``tests/test_preflight.py::
  test_lm_eval_hf_logits_cache_misreads_a_sentence_split_at_two_words_unless_split_in_rounds``
  and ``tests/test_adapters.py``. Goes when lm-eval groups only requests of one continuation
  length (that test's first assertion fails then).
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
  Report: ``tests/upstream/hf_logits_cache_shorter_continuation.md``.
* ``loglikelihood`` (:func:`_distinct_loglikelihood_requests`). lm-eval sends a request that several
  documents ask as often as they ask it. Pinned by ``tests/test_preflight.py::
  test_each_distinct_loglikelihood_request_reaches_the_backend_once``. Goes when lm-eval
  de-duplicates requests.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
  Report: ``tests/upstream/duplicate_loglikelihood_requests.md``.
* ``LocalCompletionsAPI.parse_logprobs`` (:func:`_aligned_echo_logprobs`). lm-eval reads echoed
  log-probabilities one token off when a server leaves BOS out of its echo (llama.cpp). Pinned by
  ``tests/test_completions_api.py::test_lm_evals_own_reading_of_a_llama_cpp_answer_is_one_token_off``.
  Goes when lm-eval reads them from the end of the echoed prompt.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
  Report: ``tests/upstream/local_completions_echo_offsets.md``.
* ``TemplateAPI._create_payload`` (:func:`_fresh_draws_from_servers`). lm-eval sends one seed with
  every request, so a server draws every repeat of a prompt alike. Pinned by
  ``tests/test_backend_options.py::test_sampled_requests_reach_a_server_without_lm_evals_fixed_seed``.
  Goes when lm-eval varies the seed per request.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
  Report: ``tests/upstream/api_fixed_seed.md``.
* ``generate_until`` (:func:`_text_generations_only`) and an API backend's ``loglikelihood`` and
  ``generate_until`` (:func:`_explained_backend_failures`). lm-eval fails late, or with a bare
  ``TypeError``, on an answer that is not text or holds no prompt log-probabilities. Pinned by
  ``tests/test_preflight.py::test_a_model_that_answers_generations_with_something_else_than_text_is_named``
  and ``tests/test_mistakes_and_faulty_backends.py::test_a_server_without_prompt_log_probabilities_is_explained``.
  Go when lm-eval checks its backends' answers.
  Needed on lm-eval 0.4.13 and 0.5.0.dev1.
* ``lm_eval.evaluator._process_results`` (:func:`companions_derived`). lm-eval keeps every value
  ``process_results`` returns, per document, in memory and in the samples file, and aggregates a
  list per returned key: our tasks return each value once (:mod:`lm_eval_bias.companions`), each
  companion's list is rebuilt from its metric's values before lm-eval aggregates, and the logged
  samples get the plain values of those metrics after (our tasks only). Pinned by
  ``tests/test_golden.py`` (results unchanged; the samples, without the derived companions, give
  them again) and ``tests/test_adapters.py::test_companions_are_rebuilt_for_our_tasks_only``. Goes
  when lm-eval lets a task aggregate statistics of one per-document value (a metric with several
  aggregations).
  Needed on lm-eval 0.4.13 only: 0.5.0.dev1 has each task aggregate its own values, and our tasks'
  class derives the lists there (``SubgroupMetricsTask.aggregate``, no replacement); nothing is
  installed.
* ``lm.gather_object``, ``lm_eval.evaluator._process_results`` and our tasks' ``process_results``
  (:func:`shards_merged`; several processes only). lm-eval gathers the ranks' values rank after
  rank and drops or crashes on metrics only some ranks have (:mod:`lm_eval_bias.distributed`).
  Pinned by ``tests/test_several_processes.py``. Goes when lm-eval gathers per-document values in
  document order with every rank's keys.
  Needed on lm-eval 0.4.13 only: 0.5.0.dev1 merges every rank's values into each task by document
  id, which ``SubgroupMetricsTask.aggregate`` reads in document order; nothing is installed (the
  gate orders the samples).

Not replacements: ``--model hf-mlm`` (lm-eval's model registry, :func:`lm_eval_bias.models.register`)
and our tasks' class, ``harness.SubgroupMetricsTask`` (a ``ConfigurableTask`` of our tasks alone;
where lm-eval's task is an abstract base that dispatches by output type, 0.5.0.dev1, joined with
lm-eval's task class of the YAML's output type, ``harness.concrete_task_class``, and aggregating its
own values, ``SubgroupMetricsTask.aggregate``). What differs between lm-eval releases is read from
lm-eval itself, never its version: :mod:`lm_eval_bias.lm_eval_features`.
One backend setting works around an engine rather than lm-eval: ``--model vllm`` scores our
log-likelihood tasks with ``enable_prefix_caching=False`` (``evaluate._prefix_caching_off``, which
``checks.check_prefix_caching`` requires), as vLLM's prompt log-probabilities can depend on the order
of the requests with it on (vLLM issue #42019). Goes when vLLM returns the same prompt
log-probabilities with prefix caching on. Report: ``tests/upstream/vllm_prefix_cache_prompt_logprobs.md``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import sys
from collections.abc import Sequence
from typing import Any

from lm_eval_bias import distributed, lm_eval_features
from lm_eval_bias.backends import echo_aligned, is_api_model, load_failure, unwrapped, world_size
from lm_eval_bias.checks import check_loaded_model, empty_generation_warnings, is_sampling
from lm_eval_bias.errors import ConfigurationError, LmEvalBiasError, PreflightError, exit_with_run_error
from lm_eval_bias.task_kinds import is_ours, needs, task_name

logger = logging.getLogger("lm_eval_bias")

# Whether the backend is answering our tasks' requests (True) or another task's (False), as
# :func:`_requests_routed_by_task` tells; None outside a routed call (then every request is adapted).
_answering_ours: contextvars.ContextVar = contextvars.ContextVar("lm_eval_bias_answering_ours", default=None)


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
def adapted_for_ours(model, name: str, adapted, theirs=None):
    """``model.<name>`` is ``adapted`` while the backend answers our tasks' requests and what it
    was otherwise (or ``theirs(original)``, which must answer as ``original`` does), inside the
    block: a user's own tasks in the run get lm-eval's behaviour."""
    original = getattr(model, name)
    other = original if theirs is None else theirs(original)

    def switch(*args, **kwargs):
        return (other if _answering_ours.get() is False else adapted)(*args, **kwargs)

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
    if world_size(lm) > 1:
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


@contextlib.contextmanager
def _logits_cache_split(lm):
    """While lm-eval runs, ``hf`` with ``logits_cache`` scores its log-likelihood requests in
    :func:`logits_cache_rounds`, so that no request is read from another's positions."""
    from lm_eval.models.huggingface import HFLM

    model = unwrapped(lm)
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


@contextlib.contextmanager
def _aligned_echo_logprobs(lm):
    """Read a completions server's echoed log-probabilities from the end of the echoed prompt
    (:mod:`lm_eval_bias.models.completions_api`): lm-eval's own reading is one token off when the
    server leaves the BOS out of its echo or generates nothing (llama.cpp), silently."""
    inner = unwrapped(lm)
    if not echo_aligned(inner):
        yield
        return
    from lm_eval_bias.models.completions_api import continuation_logprobs

    prefix_token_id = inner.prefix_token_id

    def parse_logprobs(outputs, tokens=None, ctxlens=None, **kwargs):
        return continuation_logprobs(outputs, tokens, ctxlens, prefix_token_id)

    def read_by_lm_eval_and_checked(original):
        """Other tasks' answers as lm-eval reads them, with a warning where our reading refuses
        them (their numbers stay the stock lm_eval's, but not silently wrong)."""
        warned = []

        def parse(outputs, tokens=None, ctxlens=None, **kwargs):
            if not warned:
                try:
                    continuation_logprobs(outputs, tokens, ctxlens, prefix_token_id)
                except (ConfigurationError, KeyError, TypeError, IndexError, ValueError) as error:
                    warned.append(error)
                    logger.warning(
                        "a task that is not lm-eval-bias's gets lm-eval's own reading of the server's echo, "
                        "which lm-eval-bias refuses for its own tasks: %s",
                        error,
                    )
            return original(outputs, tokens, ctxlens, **kwargs)

        return parse

    with adapted_for_ours(inner, "parse_logprobs", parse_logprobs, theirs=read_by_lm_eval_and_checked):
        yield


@contextlib.contextmanager
def _explained_backend_failures(lm, tasks):
    """A completions server whose answers hold no prompt log-probabilities makes lm-eval's API
    backend fail with a bare TypeError or KeyError while parsing them, and one that takes no
    token-id prompts with an HTTP error after its retries: say what they mean."""
    inner = unwrapped(lm)
    ours = [task for task in tasks if is_ours(task)]
    scoring = [task_name(task) for task in ours if needs(task) == "log-likelihoods"]
    generating = [task_name(task) for task in ours if needs(task) == "generation"]
    if not is_api_model(inner) or not ours:
        yield
        return
    import requests
    from aiohttp import ClientResponseError

    from lm_eval_bias.models.completions_api import refused_token_prompts, token_prompts_problem

    http_errors = (requests.exceptions.HTTPError, ClientResponseError)
    original_loglikelihood, original_generate_until = inner.loglikelihood, inner.generate_until

    def loglikelihood(*args, **kwargs):
        try:
            return original_loglikelihood(*args, **kwargs)
        except ConfigurationError as error:  # completions_api could not read an answer
            raise ConfigurationError(f"{', '.join(scoring)}: {error}") from error
        except http_errors as error:
            if refused_token_prompts(inner, error):
                raise ConfigurationError(token_prompts_problem(", ".join(scoring), error)) from error
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
            if refused_token_prompts(inner, error):
                raise ConfigurationError(token_prompts_problem(", ".join(generating), error)) from error
            raise

    with contextlib.ExitStack() as patches:
        if scoring:
            patches.enter_context(adapted_for_ours(inner, "loglikelihood", loglikelihood))
        if generating:
            patches.enter_context(adapted_for_ours(inner, "generate_until", generate_until))
        yield


@contextlib.contextmanager
def _fresh_draws_from_servers(lm, tasks):
    """lm-eval's API backends send one seed (``--model_args seed``, 1234 unless given) with every
    request. vLLM's, SGLang's and llama.cpp's servers seed each request's sampler with it, so every
    repeat of a prompt (``repeats``, or the same prompt as several documents) would get the same
    continuation: ten samples of a prompt would be one sample ten times, and their spread none.
    For the sampling settings of our tasks the seed is left out of the request, so that each
    continuation is drawn anew (as with hf and vllm, whose generator runs on); the run is then
    not reproducible from its seed."""
    inner = unwrapped(lm)
    sampled = [
        dict(task.config.generation_kwargs or {})
        for task in tasks
        if is_ours(task) and needs(task) == "generation" and is_sampling(task.config.generation_kwargs or {})
    ]
    if not is_api_model(inner) or not sampled:
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
    inner = unwrapped(lm)
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


def _install_excepthook() -> None:
    """With the stock ``lm_eval`` CLI, end on our errors as ``lm-eval-bias`` does (the message
    alone, exit code 2): it says what, where and the fix; a traceback would bury it. So too a
    model that fails to load in a run of our tasks (:func:`lm_eval_bias.backends.load_failure`).
    Other errors are untouched."""
    previous = sys.excepthook
    if getattr(previous, "_lm_eval_bias", False):
        return

    def excepthook(kind, error, trace):
        explained = error if isinstance(error, LmEvalBiasError) else load_failure(error, ours_only=True)
        if explained is not None:
            exit_with_run_error(explained)
        previous(kind, error, trace)

    excepthook._lm_eval_bias = True
    sys.excepthook = excepthook


def install_request_gate() -> None:
    """Wrap ``lm_eval.evaluator.evaluate`` (once) so that the backend and ``--limit`` checks run
    on the loaded model before any request is built, and each of our tasks is handed the model
    (``SubgroupMetricsTask.use_model``) for the call; and show our errors without a traceback in
    the stock CLI."""
    import lm_eval.evaluator as evaluator

    _install_excepthook()
    if getattr(evaluator.evaluate, "_lm_eval_bias_gate", False):
        return
    original = evaluator.evaluate

    @functools.wraps(original)
    def evaluate(lm, task_dict, *args, **kwargs):
        tasks = list(task_dict.get("tasks", {}).values()) if isinstance(task_dict, dict) else []
        limit = kwargs.get("limit", args[0] if args else None)
        problems = check_loaded_model(lm, tasks, limit, kwargs.get("apply_chat_template"))
        if problems:
            raise PreflightError(problems)
        ours = [task for task in tasks if is_ours(task)]
        for task in ours:
            task.use_model(lm)
        try:
            with (
                _explained_backend_failures(lm, tasks),
                _text_generations_only(lm, tasks),
                _fresh_draws_from_servers(lm, tasks),
                _logits_cache_split(lm),
                _distinct_loglikelihood_requests(lm),
                # before shards_merged: the companions are rebuilt after the shards are merged
                companions_derived(tasks),
                shards_merged(lm, tasks),
                _aligned_echo_logprobs(lm),
                # outermost: every adapter above acts on our tasks' requests only
                _requests_routed_by_task(lm, {task_name(task) for task in ours}),
            ):
                results = original(lm, task_dict, *args, **kwargs)
        finally:
            for task in ours:
                task.use_model(None)
        plain_samples_of(results, ours)
        samples_in_document_order(results, ours, lm)
        for warning in empty_generation_warnings(results, tasks):
            logger.warning("%s", warning)
        return results

    evaluate._lm_eval_bias_gate = True
    evaluator.evaluate = evaluate


@contextlib.contextmanager
def companions_derived(tasks):
    """For the duration of one lm-eval ``evaluate`` call: before lm-eval aggregates, each of our
    tasks' ``raw_metrics`` gets its derived companions' lists (``SubgroupMetricsTask.with_companions``),
    and its logged samples their plain values after (``companions.plain_samples``)."""
    import lm_eval.evaluator as evaluator

    from lm_eval_bias import companions

    ours = {id(task) for task in tasks if is_ours(task) and hasattr(task, "with_companions")}
    if not ours or lm_eval_features.tasks_score_and_aggregate():
        # lm-eval asks each task to aggregate (SubgroupMetricsTask.aggregate derives them there) and
        # gives the evaluator no lists: the gate gives the samples their plain values (plain_samples_of)
        yield
        return
    process_results = evaluator._process_results

    def derived(eval_results_acc, *args, **kwargs):
        accumulators = [acc for acc in eval_results_acc.values() if id(acc["task"]) in ours]
        for acc in accumulators:
            acc["raw_metrics"] = acc["task"].with_companions(acc["raw_metrics"])
        result = process_results(eval_results_acc, *args, **kwargs)
        for acc in accumulators:
            companions.plain_samples(acc["logged_samples"])
        return result

    with replaced(evaluator, "_process_results", derived):
        yield


def plain_samples_of(results: dict | None, ours: list) -> None:
    """Where lm-eval has each task aggregate its own values (``lm_eval_features.tasks_score_and_aggregate``),
    its logged samples copy each document's values as ``process_results`` returned them: ours, in
    ``results`` (what ``evaluate`` returned, None on other ranks), get their plain values, as
    :func:`companions_derived` gives them on lm-eval 0.4.13."""
    from lm_eval_bias import companions

    if not (results and results.get("samples") and lm_eval_features.tasks_score_and_aggregate()):
        return
    for task in ours:
        companions.plain_samples(results["samples"].get(task_name(task), []))


def samples_in_document_order(results: dict | None, ours: list, lm) -> None:
    """Where lm-eval has each task aggregate its own values (``lm_eval_features.tasks_score_and_aggregate``)
    and several processes ran, it logs rank 0's samples, then rank 1's, ...: ours, in ``results`` (what
    ``evaluate`` returned on rank 0), are put in the order one process logs them, each filter's in
    document order, as :func:`shards_merged` puts them on lm-eval 0.4.13."""
    if not (results and results.get("samples") and world_size(lm) > 1 and lm_eval_features.tasks_score_and_aggregate()):
        return
    for task in ours:
        samples = results["samples"].get(task_name(task))
        if samples:
            filters = {scorer.name: position for position, scorer in enumerate(task.scorers)}
            samples.sort(key=lambda sample: (filters.get(sample["filter"], len(filters)), sample["doc_id"]))


@contextlib.contextmanager
def shards_merged(lm, tasks):
    """For the duration of one lm-eval ``evaluate`` call on ``lm`` with these tasks: when
    ``lm.world_size > 1``, rank 0 aggregates our tasks' values in document order and with
    every rank's metrics (see :mod:`lm_eval_bias.distributed`). A no-op for one process."""
    import lm_eval.evaluator as evaluator

    if world_size(lm) <= 1 or lm_eval_features.tasks_score_and_aggregate():
        # lm-eval merges every rank's values into each task by document id, with every rank's metrics, and
        # SubgroupMetricsTask.aggregate reads them in document order; the gate orders the samples
        # (samples_in_document_order)
        yield
        return
    ours = {task_name(task): task for task in tasks if is_ours(task)}
    merge = distributed.ShardMerge(ours)
    with contextlib.ExitStack() as patches:
        for name, task in ours.items():
            patches.enter_context(replaced(task, "process_results", merge.recording(name, task.process_results)))
        patches.enter_context(replaced(lm, "gather_object", merge.gathering(lm.gather_object)))
        patches.enter_context(replaced(evaluator, "_process_results", merge.merging(evaluator._process_results)))
        yield


_SUBGROUP_TASKS: set[str] = set()
_COUNT_WARNING = "Metrics were not scored on the same number of documents"


class _SubgroupCountFilter(logging.Filter):
    """Drop lm-eval's warning that metrics have different document counts, for our tasks.

    Per-subgroup metrics (``bias_score_<subgroup>``) are scored on that
    subgroup's documents only, by design, so the warning would fire on every run.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (_COUNT_WARNING in message and any(message.startswith(f"[{task}]") for task in _SUBGROUP_TASKS))


_FILTER = _SubgroupCountFilter()


def expect_subgroup_metrics(task_name: str) -> None:
    """Declare that ``task_name`` reports metrics on subsets of its documents."""
    _SUBGROUP_TASKS.add(task_name)
    logger = logging.getLogger("lm_eval.evaluator_utils")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def install_task_manager_shim(ours: str) -> None:
    """Make every TaskManager lm-eval's CLI builds index our tasks first.

    lm-eval 0.4.13 imports ``TaskManager`` from ``lm_eval.tasks`` lazily inside
    ``run``, ``ls`` and ``validate``, so replacing the attribute reaches all three.
    A user's ``--include_path`` is indexed after ours and wins on a name clash.
    """
    import lm_eval.tasks as lm_eval_tasks

    _install_excepthook()  # the stock CLI loads the model before it builds any task of ours
    base = lm_eval_tasks.TaskManager
    if getattr(base, "_lm_eval_bias_shim", False):
        return

    class TaskManagerWithBiasTasks(base):
        _lm_eval_bias_shim = True

        def __init__(self, *args, include_path=None, **kwargs):
            if include_path is None:
                user_paths = []
            elif isinstance(include_path, (list, tuple)):
                user_paths = list(include_path)
            else:
                user_paths = [include_path]
            paths = [ours, *(p for p in user_paths if str(p) != ours)]
            super().__init__(*args, include_path=paths, **kwargs)

    lm_eval_tasks.TaskManager = TaskManagerWithBiasTasks


def install_simple_evaluate_shim(simple_evaluate) -> None:
    """Make the ``simple_evaluate`` that lm-eval's CLI calls ``simple_evaluate``
    (:func:`lm_eval_bias.evaluate.simple_evaluate`): every task is built and checked before the
    model loads, and ``--use_cache`` is keyed on the model and its weights."""
    import lm_eval

    if getattr(lm_eval.__dict__.get("simple_evaluate"), "_lm_eval_bias_shim", False):
        return

    def shim(*args, **kwargs):
        return simple_evaluate(*args, **kwargs)

    shim._lm_eval_bias_shim = True
    lm_eval.simple_evaluate = shim
