"""What the installed lm-eval does where its releases differ, read from lm-eval itself.

The package runs on lm-eval 0.4.13 and on 0.5.0.dev1. Where they behave differently, the code asks
lm-eval what it does (a class's fields, a method that exists or is abstract), never its version
string, so that a release that keeps one behaviour and changes another is read right. Each check is
cached: lm-eval cannot change under a running interpreter.

Every result of our tasks is the same on both (``tests/test_golden.py``). Where lm-eval's own
definitions changed, 0.5.0.dev1 differs in what lm-eval itself makes, not in our numbers:

* standard errors: 0.5.0.dev1 bootstraps every aggregation that is not a mean (100,000 draws); our
  tasks report lm-eval 0.4.13's (a mean's closed form, none for their intervals, tests and counts:
  ``aggregations.standard_error``), so ``<metric>_stderr`` is the same on both;
* the samples file logs each request's filtered answers as the list of its repeats (one level deeper:
  ``[["text"]]`` for a greedy generation, ``[[[log-likelihood, is-greedy]]]`` per choice), which
  ``lm-eval-bias tango-agreement`` reads in either form;
* lm-eval's own ``acc`` logs a document's 0 or 1 as an int (0.4.13: a float), for a task that is not ours;
* ``--model_args`` and ``--gen_kwargs`` text: ``-1`` is read as ``-1.0`` and ``None`` stays the text
  ``"None"`` (``checks.left_to_the_backend`` reads it as left out, as 0.4.13 does);
* ``--samples``: 0.5.0.dev1's own document iterator gives each selected document's index, which its
  samples file then maps through the selection again (a wrong ``doc_id``, or an ``IndexError``); our
  tasks give each document's position in the selection, lm-eval 0.4.13's contract, which the samples
  file maps to the document's index on both (``SubgroupMetricsTask.doc_iterator``).
"""

from __future__ import annotations

import dataclasses
import functools


@functools.cache
def task_classes_by_output_type() -> dict | None:
    """The concrete task class of each output type, where lm-eval's ``ConfigurableTask`` is an abstract
    base that dispatches by it (0.5.0.dev1: ``Task.from_config`` builds a ``MultipleChoiceTask``, a
    ``GenerateTask``, ..., while a YAML's ``class:`` is built as it is); None where ``ConfigurableTask``
    is itself the task of every output type (0.4.13).

    Returns
    -------
    dict or None
        Output type -> lm-eval's task class for it.
    """
    from lm_eval.api.task import ConfigurableTask

    registry = getattr(ConfigurableTask, "_registry", None)
    abstract = getattr(ConfigurableTask.construct_requests, "__isabstractmethod__", False)
    return dict(registry) if abstract and isinstance(registry, dict) and registry else None


@functools.cache
def tasks_score_and_aggregate() -> bool:
    """Whether lm-eval has each task score and aggregate its own documents (0.5.0.dev1:
    ``Task.process_instances`` runs one scorer per filter pipeline, which reads each list a
    ``process_results`` value is as that document's repeats and hands ``process_results`` the
    document's filtered answers flattened one level; ``Task.aggregate`` aggregates them), rather than
    the evaluator gathering every task's ``process_results`` values and aggregating them with
    ``Task.aggregation()`` (0.4.13).

    Returns
    -------
    bool
    """
    from lm_eval.api.task import ConfigurableTask

    return callable(getattr(ConfigurableTask, "process_instances", None)) and callable(
        getattr(ConfigurableTask, "aggregate", None)
    )


@functools.cache
def instance_requires(name: str) -> bool:
    """Whether lm-eval's ``Instance`` must be given the field ``name`` (it has no default)."""
    from lm_eval.api.instance import Instance

    return any(
        field.name == name
        and field.init
        and field.default is dataclasses.MISSING
        and field.default_factory is dataclasses.MISSING
        for field in dataclasses.fields(Instance)
    )


def request_keywords(task, keywords: dict) -> dict:
    """The keywords of an ``Instance`` of ``task`` built in a task's ``construct_requests``, from the
    keywords lm-eval called it with (``keywords``, without the chat-template ones).

    lm-eval 0.4.13 passes ``metadata=(task name, document id, repeats)``, which its ``Instance``
    unpacks; 0.5.0.dev1 passes ``doc_id=`` alone, and its ``Instance`` must be given ``task_name=``
    too. Where it must, a ``metadata`` tuple (0.4.13's form) is unpacked into those keywords.

    Parameters
    ----------
    task : lm-eval task or None
        The task building the requests (read only where ``keywords`` lack its name).
    keywords : dict
        What lm-eval passed to ``construct_requests`` beside the document and context.

    Returns
    -------
    dict
        Keywords for ``Instance(request_type=..., doc=..., arguments=..., idx=..., **keywords)``.
    """
    keywords = dict(keywords)
    if not instance_requires("task_name"):
        return keywords
    if isinstance(keywords.get("metadata"), tuple):
        keywords["task_name"], keywords["doc_id"], keywords["repeats"] = keywords.pop("metadata")
        return keywords
    return {"task_name": task.task_name, "repeats": task.config.repeats, **keywords}


def per_document(values: list) -> list:
    """A filter's output in the form the installed lm-eval reads it, from one value per document as
    lm-eval 0.4.13 hands it to ``process_results`` (``results == [value]`` for a document of one
    request).

    Where lm-eval flattens each document's filtered answers into ``process_results``'s ``results``
    (``tasks_score_and_aggregate``: a filter returns a sequence per document), each value is put in a
    list of its own, so that ``process_results`` gets the same ``[value]`` on both.

    Parameters
    ----------
    values : list
        The filter's value of each document, in the documents' order.

    Returns
    -------
    list
    """
    return [[value] for value in values] if tasks_score_and_aggregate() else values


def sample_size(task, limit) -> int | None:
    """How many of ``task``'s documents lm-eval evaluates under ``--limit`` (a count, or a fraction
    below 1): lm-eval's own reading (``evaluator_utils.get_sample_size`` in 0.4.13,
    ``_get_sample_size`` in 0.5.0.dev1); None without a limit."""
    import lm_eval.evaluator_utils as evaluator_utils

    reading = getattr(evaluator_utils, "get_sample_size", None) or evaluator_utils._get_sample_size
    return reading(task, limit)


def loads_built_tasks(task_manager, built: list) -> bool:
    """Whether ``task_manager.load`` takes tasks and groups already built (0.4.13, which passes them
    through), not only names and configs (0.5.0.dev1: ``TypeError``, "spec must be str or dict").
    Asked by trying: both releases' ``load`` take a list, and only the call tells them apart.

    Parameters
    ----------
    task_manager : lm-eval TaskManager
    built : list
        Built tasks and groups.

    Returns
    -------
    bool
    """
    try:
        task_manager.load(built)
    except TypeError:
        return False
    return True


def task_index(task_manager) -> dict:
    """A task manager's index: each task, group and tag name -> its entry (a ``kind``, and a tag's
    ``tags``); ``task_index`` in lm-eval 0.4.13, ``_task_index`` in 0.5.0.dev1."""
    index = getattr(task_manager, "task_index", None)
    return index if index is not None else getattr(task_manager, "_task_index", None) or {}


def index_entry(task_manager, name: str):
    """The entry of ``name`` in a task manager's index (:func:`task_index`), None where it has none."""
    return task_index(task_manager).get(name)
