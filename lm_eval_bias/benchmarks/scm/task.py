"""lm-eval's hooks for the SCM tasks (``process_results``, ``doc_to_text``, ``doc_to_choice``) and the task class."""

from __future__ import annotations

from collections.abc import Sequence

# Imported under another name: "options" is what this module calls an Options object.
from lm_eval_bias import options as task_options
from lm_eval_bias.benchmarks.scm import loader  # noqa: F401 (declares the loaders' options)
from lm_eval_bias.benchmarks.scm.constants import AXES, GROUPS
from lm_eval_bias.benchmarks.scm.parsing import parsed_answers
from lm_eval_bias.benchmarks.scm.scoring import (
    expected_rating,
    mc_metrics,
    mc_prob_metrics,
    prob_ratio_metrics,
    rating_ci_lower,
    rating_ci_upper,
    rating_metrics,
    score_metrics,
)
from lm_eval_bias.benchmarks.scm.stories import story_metrics
from lm_eval_bias.harness import SubgroupMetricsTask

# --------------------------------------------------------------------------
# Prompt hooks


def doc_to_text_with_cue_line(doc: dict) -> str:
    """The prompt and a line break: the scoring tasks' ``gen_prefix`` ("Rating:", "Answer:")
    then starts its own line in plain-text prompts."""
    return doc["prompt"] + "\n"


def doc_terms(doc: dict) -> list[str]:
    """``doc_to_choice`` of the log-likelihood tasks: the document's terms, in its order."""
    return list(doc["terms"])


# --------------------------------------------------------------------------
# process_results hooks


def process_score(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_score``: :func:`score_metrics` of the ``ParseRatings`` output."""
    return score_metrics(doc, parsed_answers(results))


def process_score_prob(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_score_prob``: :func:`rating_metrics` of the expected rating."""
    return rating_metrics(doc, expected_rating([loglik for loglik, _ in results]))


def process_mc(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_mc``: :func:`mc_metrics` of the ``ParseChoices`` output."""
    return mc_metrics(doc, parsed_answers(results))


def process_mc_prob(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_mc_prob``: :func:`mc_prob_metrics` of the log-likelihoods."""
    return mc_prob_metrics(doc, [loglik for loglik, _ in results])


def process_prob_ratio(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_prob_ratio``: :func:`prob_ratio_metrics`."""
    return prob_ratio_metrics(doc, [loglik for loglik, _ in results])


def process_story(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_story``: :func:`story_metrics` of the ``StoryAnalysis`` output."""
    (analysed,) = results
    return story_metrics(doc, analysed)


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
    """``SubgroupMetricsTask`` with three SCM needs.

    * Mean ratings are on a 1-5 scale: their intervals are always bootstrapped. (The shared
      rule gives a Wilson interval when every value is 0 or 1, which for ratings would fire
      when every rating is 1.)
    * Sentence-completion probes (``scm_prob_ratio``, YAML metadata ``plain_text: true``)
      ignore ``--apply_chat_template``; ``--metadata '{"scm_chat_template": false}'`` does the
      same for every SCM task, ``true`` makes every SCM task follow the flag.
    * A rating's warmth-minus-competence p-value is adjusted across the run's groups: the
      groups of the task's documents, which the hooks get beside each document
      (``groups_present``), so that no document stores a fact of the run.
    """

    def __init__(self, config=None, **kwargs):
        super().__init__(config=config, **kwargs)
        self._rating_intervals: set[str] = set()
        self._groups_present: list[str] | None = None

    def plain_text(self) -> bool:
        follow = (self.config.metadata or {}).get("scm_chat_template")
        if follow is None:
            return super().plain_text()
        return not task_options.flag(follow)

    def groups_present(self) -> list[str]:
        """The groups of the task's documents, in the documents' order (the thesis's, by default)."""
        if self._groups_present is None:
            self._groups_present = list(dict.fromkeys(doc["group"] for doc in self.eval_docs))
        return self._groups_present

    def process_results(self, doc, results):
        metrics = super().process_results({**doc, "groups_present": self.groups_present()}, results)
        for name in metrics:
            side = is_rating_interval(name)
            if side and name not in self._rating_intervals:
                self._rating_intervals.add(name)
                bound = rating_ci_lower if side == "lower" else rating_ci_upper
                self._aggregation_list[name] = self._reported_or_na(name, bound)
        return metrics
