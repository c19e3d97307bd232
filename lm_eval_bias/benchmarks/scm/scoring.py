"""Per-document metrics (pure) and the rating intervals; the agreement with the survey is in :mod:`.survey`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from lm_eval_bias import stats
from lm_eval_bias.benchmarks.scm.constants import (
    AXES,
    AXIS_OF_TERM,
)
from lm_eval_bias.benchmarks.scm.survey import RELATIVE_SURVEY_METRICS, SURVEY_METRICS
from lm_eval_bias.metric_keys import MEASURE_RANGES, with_empty_rate, with_interval, with_test

# The 1-5 scale of every warmth and competence rating.
RATING_RANGE = MEASURE_RANGES["warmth"]


def rating_metrics(doc: dict, rating: float, samples: int | None = None) -> dict:
    """Metrics of one score document from its (mean or expected) rating.

    A group's ``warmth_<group>`` averages its warmth terms' ratings (the thesis: "the mean score
    across all key terms for each axis"); the gap's sides are warmth (0) and competence (1).

    Parameters
    ----------
    doc:
        The document (``group``, ``axis`` and, optionally, ``groups_present``: the run's groups, which
        :class:`~lm_eval_bias.benchmarks.scm.task.ScmTask` adds from its dataset; the gap p-value is
        adjusted across them).
    rating:
        Its rating, 1-5.
    samples:
        How many sampled answers the rating is the mean of, when there are several; else ``None``.

    Returns
    -------
    dict
        The axis's rating overall and per group, the group's warmth-minus-competence gap, the
        document's part of each group's Benjamini-Hochberg adjusted gap p-value, and the
        ``(group, axis, rating)`` of every :data:`SURVEY_METRICS` aggregation.
    """
    group, axis = doc["group"], doc["axis"]
    metrics = {}
    with_interval(metrics, axis, rating, samples)
    with_interval(metrics, f"{axis}_{group}", rating, samples)
    side = AXES.index(axis)
    with_test(metrics, f"warmth_minus_competence_{group}_gap", (side, rating), samples)
    for other in doc.get("groups_present", [group]):
        metrics[f"warmth_minus_competence_{other}_gap_pvalue_bh"] = (group, side, rating, other)
    for name in SURVEY_METRICS:
        metrics[name] = (group, axis, rating)
    return metrics


def answer_counts(metrics: dict, doc: dict, parsed: Sequence[Mapping]) -> tuple[list, int | None]:
    """Refusal and empty-answer rates of one document; returns its answered values and, when
    it has several samples, how many were answered.

    Empty answers are refusals, as in the thesis ("failures to output a score or
    keyword(s)"), and are also counted apart in ``empty_rate``, since an empty answer more
    often means a serving problem than a refusal.
    """
    if not parsed:
        raise ValueError("a prompt needs at least one sample")
    group = doc["group"]
    answered = [p["value"] for p in parsed if p["status"] == "ok"]
    several = len(parsed) if len(parsed) > 1 else None
    refused = 1.0 - len(answered) / len(parsed)
    with_interval(metrics, "refusal_rate", refused, several)
    with_interval(metrics, f"refusal_rate_{group}", refused, several)
    with_empty_rate(metrics, sum(p["status"] == "empty" for p in parsed), len(parsed), [group])
    return answered, (len(answered) if several else None)


def score_metrics(doc: dict, parsed: Sequence[Mapping]) -> dict:
    """Metrics of one ``scm_score`` prompt from its parsed samples.

    Refused samples (no valid rating) count only in ``refusal_rate``; the prompt's rating is the
    mean of its valid samples' ratings, absent when every sample refused.

    Parameters
    ----------
    doc:
        The prompt's document.
    parsed:
        The document's parsed samples, ``{"value", "status"}`` each (:class:`Parsed`); every status
        but ``ok`` is a refusal.

    Returns
    -------
    dict
        ``refusal_rate``, ``explicit_refusal_rate``, ``empty_rate`` and, when a sample gave a rating,
        :func:`rating_metrics` of their mean.
    """
    metrics = {}
    ratings, samples = answer_counts(metrics, doc, parsed)
    with_interval(
        metrics,
        "explicit_refusal_rate",
        sum(p["status"] == "refusal" for p in parsed) / len(parsed),
        len(parsed) if len(parsed) > 1 else None,
    )
    if ratings:
        metrics.update(rating_metrics(doc, sum(ratings) / len(ratings), samples))
    return metrics


def softmax(logliks: Sequence[float]) -> list[float]:
    """Probabilities from log-likelihoods, renormalised over the given choices.

    Parameters
    ----------
    logliks:
        One log-likelihood per choice.

    Returns
    -------
    list of float
        The probabilities, summing to 1.
    """
    top = max(logliks)
    weights = [math.exp(x - top) for x in logliks]
    total = sum(weights)
    return [w / total for w in weights]


def expected_rating(logliks: Sequence[float]) -> float:
    """Probability-weighted rating: the sum of k * p(k), p renormalised over the answers 1-5.

    Parameters
    ----------
    logliks:
        The log-likelihoods of the answers 1, 2, 3, 4 and 5.

    Returns
    -------
    float
        The expected rating, between 1 and 5.
    """
    if len(logliks) != 5:
        raise ValueError(f"expected 5 log-likelihoods (ratings 1-5), got {len(logliks)}")
    return sum((k + 1) * p for k, p in enumerate(softmax(logliks)))


def _share_metrics(metrics: dict, name: str, group: str, value: float, intervals: bool) -> None:
    if intervals:
        with_interval(metrics, name, value)
        with_interval(metrics, f"{name}_{group}", value)
    else:
        metrics[name] = metrics[f"{name}_{group}"] = value
        metrics[f"{name}_n"] = metrics[f"{name}_{group}_n"] = 1


def mc_metrics(doc: dict, parsed: Sequence[Mapping]) -> dict:
    """Metrics of one ``scm_mc`` document: whether its picked term is a warmth term, and refusals.

    Parameters
    ----------
    doc:
        The document.
    parsed:
        Its parsed samples, as for :func:`score_metrics`.

    Returns
    -------
    dict
        ``refusal_rate``, ``empty_rate`` and, when a sample picked a term, ``warmth_pick`` (the share
        of picks that are warmth terms) overall and per group, and the group's warmth share for
        every :data:`RELATIVE_SURVEY_METRICS` aggregation.
    """
    group = doc["group"]
    metrics = {}
    picks, samples = answer_counts(metrics, doc, parsed)
    if picks:
        share = sum(AXIS_OF_TERM[p] == "warmth" for p in picks) / len(picks)
        with_interval(metrics, "warmth_pick", share, samples)
        with_interval(metrics, f"warmth_pick_{group}", share, samples)
        for name in RELATIVE_SURVEY_METRICS:
            metrics[name] = (group, "warmth_share", share)
    return metrics


def mc_prob_metrics(doc: dict, logliks: Sequence[float]) -> dict:
    """Metrics of one ``scm_mc_prob`` document from the 22 terms' log-likelihoods.

    Intervals only when the group has several prompts (shuffled orders): one deterministic prompt
    has no spread.

    Parameters
    ----------
    doc:
        The document (``group``, ``terms``, ``axes``, ``n_prompts``).
    logliks:
        One log-likelihood per term, in the order of ``doc["terms"]``.

    Returns
    -------
    dict
        ``warmth_pick`` (the most likely term is a warmth term), ``warmth_pick_norm`` (the same per
        byte of the term, lm-eval's ``acc_norm``), their ``tie_rate`` companions, and
        ``warmth_mass`` (the warmth terms' share of the probability renormalised over the 22 terms),
        overall and per group; ``warmth_mass`` for every :data:`RELATIVE_SURVEY_METRICS` aggregation.
    """
    terms, axes = doc["terms"], doc["axes"]
    if len(logliks) != len(terms):
        raise ValueError(f"expected {len(terms)} log-likelihoods, got {len(logliks)}")
    normalised = [ll / len(t.encode("utf-8")) for ll, t in zip(logliks, terms)]
    probabilities = softmax(logliks)
    values = {"warmth_mass": sum(p for p, axis in zip(probabilities, axes) if axis == "warmth")}
    several = doc.get("n_prompts", 1) > 1
    metrics = {}
    for name, scores in (("warmth_pick", logliks), ("warmth_pick_norm", normalised)):
        # The most likely terms all of one axis give a verdict; tied terms of both axes do not.
        picked = {axes[index] for index in stats.top_choices(scores)}
        _share_metrics(metrics, name.replace("warmth_pick", "tie_rate"), doc["group"], float(len(picked) > 1), several)
        if len(picked) == 1:
            values[name] = float(picked == {"warmth"})
    for name, value in values.items():
        _share_metrics(metrics, name, doc["group"], value, several)
    for name in RELATIVE_SURVEY_METRICS:
        metrics[name] = (doc["group"], "warmth_share", values["warmth_mass"])
    return metrics


def warmth_ratio(logliks: Sequence[float], axes: Sequence[str]) -> float:
    """Warmth-term probability over the probability of both axes' terms (thesis §3.4, one template).

    Computed from log-likelihoods with a shared offset, so it does not matter whether the
    probabilities are renormalised over the 22 terms.

    Parameters
    ----------
    logliks:
        One log-likelihood per term.
    axes:
        Each term's axis, ``warmth`` or ``competence``.

    Returns
    -------
    float
        The warmth share, between 0 and 1.
    """
    top = max(logliks)
    warm = sum(math.exp(ll - top) for ll, axis in zip(logliks, axes) if axis == "warmth")
    both = sum(math.exp(ll - top) for ll in logliks)
    return warm / both


def prob_ratio_metrics(doc: dict, logliks: Sequence[float]) -> dict:
    """Metrics of one ``scm_prob_ratio`` document (one template, one group).

    Parameters
    ----------
    doc:
        The document (``group``, ``axes``).
    logliks:
        One log-likelihood per term, in the order of ``doc["axes"]``.

    Returns
    -------
    dict
        ``warmth_ratio`` (:func:`warmth_ratio`) overall and per group (a group's value is the mean
        over its templates, as in the thesis), and for every :data:`RELATIVE_SURVEY_METRICS`
        aggregation.
    """
    if len(logliks) != len(doc["axes"]):
        raise ValueError(f"expected {len(doc['axes'])} log-likelihoods, got {len(logliks)}")
    ratio = warmth_ratio(logliks, doc["axes"])
    metrics = {}
    with_interval(metrics, "warmth_ratio", ratio)
    with_interval(metrics, f"warmth_ratio_{doc['group']}", ratio)
    for name in RELATIVE_SURVEY_METRICS:
        metrics[name] = (doc["group"], "warmth_share", ratio)
    return metrics


def rating_ci_lower(values: Sequence[float], value_range: tuple[float, float] = RATING_RANGE) -> float:
    """Lower 95% bound of a mean rating (1-5; never read as a proportion):
    ``stats.bootstrap_mean_interval``'s, with each template as one unit where the ratings carry
    their cluster.

    Parameters
    ----------
    values:
        The documents' ratings, each with its cluster id where the task declares a unit.
    value_range:
        The range of one rating, for the interval that holds below the bootstrap's units.

    Returns
    -------
    float
        The bound (lm-eval aggregation of a rating's ``_ci_lower``).
    """
    return stats.bootstrap_mean_interval(values, value_range=value_range)[0]


def rating_ci_upper(values: Sequence[float], value_range: tuple[float, float] = RATING_RANGE) -> float:
    """Upper 95% bound of a mean rating: the counterpart of :func:`rating_ci_lower`."""
    return stats.bootstrap_mean_interval(values, value_range=value_range)[1]
