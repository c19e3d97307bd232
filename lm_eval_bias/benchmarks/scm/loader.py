"""lm-eval's ``custom_dataset`` loaders of the SCM tasks: the documents built from the thesis's lists."""

from __future__ import annotations

import logging

# Imported under another name: "options" is what this module calls an Options object.
from lm_eval_bias import options as task_options
from lm_eval_bias.benchmarks.scm.options import OPTIONS, parse_options
from lm_eval_bias.benchmarks.scm.prompts import mc_docs, prob_ratio_docs, score_docs, story_docs

logger = logging.getLogger("lm_eval_bias")


def _dataset(rows: list[dict], task: str):
    from lm_eval_bias.harness import evaluation_split

    logger.info("%s: %d prompts built from the thesis's term lists and templates", task, len(rows))
    return evaluation_split(rows, {"official": None, "files": []}, task)


@task_options.takes(*OPTIONS)
def load_score(metadata, **_parsed):
    """``custom_dataset`` for ``scm_score`` and ``scm_score_prob`` (154 prompts by default)."""
    return _dataset(score_docs(parse_options(metadata)), "scm_score")


@task_options.takes(*OPTIONS)
def load_mc(metadata, **_parsed):
    """``custom_dataset`` for ``scm_mc``: ``scm_mc_samples`` documents per group."""
    options = parse_options(metadata)
    return _dataset(mc_docs(options, options.mc_samples), "scm_mc")


@task_options.takes(*OPTIONS)
def load_mc_prob(metadata, **_parsed):
    """``custom_dataset`` for ``scm_mc_prob``: one document per group, or ``scm_mc_samples``
    list orders per group when the order is shuffled (a fixed prompt scored twice is the same)."""
    options = parse_options(metadata)
    return _dataset(mc_docs(options, options.mc_samples if options.term_order == "shuffled" else 1), "scm_mc_prob")


@task_options.takes(*OPTIONS)
def load_prob_ratio(metadata, **_parsed):
    """``custom_dataset`` for ``scm_prob_ratio`` (5 templates x 7 groups)."""
    return _dataset(prob_ratio_docs(parse_options(metadata)), "scm_prob_ratio")


@task_options.takes(*OPTIONS)
def load_story(metadata, **_parsed):
    """``custom_dataset`` for ``scm_story`` (5 prompts x 7 groups)."""
    return _dataset(story_docs(parse_options(metadata)), "scm_story")
