"""lm-eval's hooks for the SCM tasks (``custom_dataset``, ``doc_to_text``) and the task class."""

from __future__ import annotations

import logging

# Imported under another name: "options" is what this module calls an Options object.
from lm_eval_bias import options as task_options
from lm_eval_bias.benchmarks.scm.constants import AXES, GROUPS
from lm_eval_bias.benchmarks.scm.metrics import rating_ci_lower, rating_ci_upper
from lm_eval_bias.benchmarks.scm.options import OPTIONS, Options, parse_options
from lm_eval_bias.benchmarks.scm.prompts import (
    mc_docs,
    prob_ratio_docs,
    score_docs,
    story_docs,
)
from lm_eval_bias.harness import SubgroupMetricsTask

logger = logging.getLogger("lm_eval_bias")


# --------------------------------------------------------------------------
# lm-eval custom_dataset hooks


def _dataset(rows: list[dict], task: str, options: Options):
    from lm_eval_bias.harness import evaluation_split

    logger.info("%s: %d prompts built from the thesis's term lists and templates", task, len(rows))
    return evaluation_split(rows, {"official": None, "files": []}, task)


@task_options.takes(*OPTIONS)
def load_score(metadata, **_parsed):
    """``custom_dataset`` for ``scm_score`` and ``scm_score_prob`` (154 prompts by default)."""
    options = parse_options(metadata)
    return _dataset(score_docs(options), "scm_score", options)


@task_options.takes(*OPTIONS)
def load_mc(metadata, **_parsed):
    """``custom_dataset`` for ``scm_mc``: ``scm_mc_samples`` documents per group."""
    options = parse_options(metadata)
    return _dataset(mc_docs(options, options.mc_samples), "scm_mc", options)


@task_options.takes(*OPTIONS)
def load_mc_prob(metadata, **_parsed):
    """``custom_dataset`` for ``scm_mc_prob``: one document per group, or ``scm_mc_samples``
    list orders per group when the order is shuffled (a fixed prompt scored twice is the same)."""
    options = parse_options(metadata)
    return _dataset(
        mc_docs(options, options.mc_samples if options.term_order == "shuffled" else 1), "scm_mc_prob", options
    )


@task_options.takes(*OPTIONS)
def load_prob_ratio(metadata, **_parsed):
    """``custom_dataset`` for ``scm_prob_ratio`` (5 templates x 7 groups)."""
    options = parse_options(metadata)
    return _dataset(prob_ratio_docs(options), "scm_prob_ratio", options)


@task_options.takes(*OPTIONS)
def load_story(metadata, **_parsed):
    """``custom_dataset`` for ``scm_story`` (5 prompts x 7 groups)."""
    options = parse_options(metadata)
    return _dataset(story_docs(options), "scm_story", options)


def doc_to_text_with_cue_line(doc: dict) -> str:
    """The prompt and a line break: the scoring tasks' ``gen_prefix`` ("Rating:", "Answer:")
    then starts its own line in plain-text prompts."""
    return doc["prompt"] + "\n"


def doc_terms(doc: dict) -> list[str]:
    return list(doc["terms"])


# --------------------------------------------------------------------------
# The task class


RATING_BASES = frozenset(AXES) | frozenset(f"{axis}_{group}" for axis in AXES for group in GROUPS)


def is_rating_interval(name: str) -> str | None:
    """'lower'/'upper' when ``name`` is an interval of a mean rating (1-5), else None."""
    for side in ("lower", "upper"):
        suffix = f"_ci_{side}"
        if name.endswith(suffix) and name[: -len(suffix)] in RATING_BASES:
            return side
    return None


class ScmTask(SubgroupMetricsTask):
    """``SubgroupMetricsTask`` with two SCM needs.

    * Mean ratings are on a 1-5 scale: their intervals are always bootstrapped. (The shared
      rule gives a Wilson interval when every value is 0 or 1, which for ratings would fire
      when every rating is 1.)
    * Sentence-completion probes (``scm_prob_ratio``, YAML metadata ``plain_text: true``)
      ignore ``--apply_chat_template``; ``--metadata '{"scm_chat_template": false}'`` does the
      same for every SCM task, ``true`` makes every SCM task follow the flag.
    """

    def __init__(self, config=None, **kwargs):
        super().__init__(config=config, **kwargs)
        self._rating_intervals: set[str] = set()

    def plain_text(self) -> bool:
        follow = (self.config.metadata or {}).get("scm_chat_template")
        if follow is None:
            return super().plain_text()
        return not task_options.flag(follow)

    def process_results(self, doc, results):
        metrics = super().process_results(doc, results)
        for name in metrics:
            side = is_rating_interval(name)
            if side and name not in self._rating_intervals:
                self._rating_intervals.add(name)
                bound = rating_ci_lower if side == "lower" else rating_ci_upper
                self._aggregation_list[name] = self._reported_or_na(name, bound)
        return metrics
