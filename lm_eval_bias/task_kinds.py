"""Which built tasks are ours, and what each needs from the model.

The lowest layer of the package's run-time code: the checks, the adapters and the task base
all read it, and it reads nothing of the package. A built task is ours by its class, never by its
name (:mod:`lm_eval_bias.task_origin` tells it for names and results entries).
"""

from __future__ import annotations


def is_ours(task) -> bool:
    """Whether ``task`` is one of lm-eval-bias's (built on ``harness.SubgroupMetricsTask``); by its
    class, so a user's task of one of our names is not."""
    return getattr(type(task), "LM_EVAL_BIAS_TASK", False) is True


def task_name(task) -> str:
    """The name lm-eval gives ``task`` (its requests' ``task_name``)."""
    return getattr(task, "task_name", None) or getattr(getattr(task, "config", None), "task", "?")


def needs(task) -> str:
    """``masked pairs`` (winoqueer_mlm), ``generation`` or ``log-likelihoods``."""
    if getattr(task, "MASKED_LM_PAIRS", False):
        return "masked pairs"
    return "generation" if getattr(task, "OUTPUT_TYPE", None) == "generate_until" else "log-likelihoods"


def doc_label(doc: dict) -> str:
    """How a message names a document: its pair id (and data-file line), template index or prompt."""
    for key in ("pair_id", "template_idx", "prompt"):
        if key in doc:
            value = doc[key]
            line = f" (line {doc['line']})" if "line" in doc else ""
            return f"{key}={(value[:80] if isinstance(value, str) else value)!r}{line}"
    return repr(doc)[:80]
