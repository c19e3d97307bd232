"""Per-document metrics (pure) and the aggregations of agreement with the survey."""

from __future__ import annotations

import collections
import math
from collections.abc import Iterable, Mapping, Sequence

from lm_eval_bias import stats
from lm_eval_bias.benchmarks.scm.constants import (
    AXES,
    AXIS_OF_TERM,
    GROUPS,
    SURVEY_MEANS,
)
from lm_eval_bias.benchmarks.scm.parsing import _parsed
from lm_eval_bias.metric_keys import with_empty_rate, with_interval, with_test

SURVEY_METRICS = tuple(
    f"{base}{suffix}"
    for base in ("survey_r", "survey_r_warmth", "survey_r_competence", "survey_r_gap")
    for suffix in ("", "_ci_lower", "_ci_upper")
)
RELATIVE_SURVEY_METRICS = tuple(f"survey_r_gap{suffix}" for suffix in ("", "_ci_lower", "_ci_upper"))


def rating_metrics(doc: dict, rating: float, samples: int | None = None) -> dict:
    """Metrics of one score document whose (mean or expected) rating is ``rating`` (from
    ``samples`` sampled answers, when there are several).

    A group's ``warmth_<group>`` averages its warmth terms' ratings (the thesis: "the mean
    score across all key terms for each axis"); the gap's sides are warmth (0) and competence (1).
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


def _answer_counts(metrics: dict, doc: dict, parsed: Sequence[Mapping]) -> tuple[list, int | None]:
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

    Refused samples (no valid rating) count only in ``refusal_rate``; the prompt's rating is
    the mean of its valid samples' ratings, absent when every sample refused.
    """
    metrics = {}
    ratings, samples = _answer_counts(metrics, doc, parsed)
    with_interval(
        metrics,
        "explicit_refusal_rate",
        sum(p["status"] == "refusal" for p in parsed) / len(parsed),
        len(parsed) if len(parsed) > 1 else None,
    )
    if ratings:
        metrics.update(rating_metrics(doc, sum(ratings) / len(ratings), samples))
    return metrics


def process_score(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_score`` (after ``ParseRatings``)."""
    return score_metrics(doc, _parsed(results))


def softmax(logliks: Sequence[float]) -> list[float]:
    top = max(logliks)
    weights = [math.exp(x - top) for x in logliks]
    total = sum(weights)
    return [w / total for w in weights]


def expected_rating(logliks: Sequence[float]) -> float:
    """Probability-weighted rating: sum of k * p(k), p renormalised over the answers 1..5."""
    if len(logliks) != 5:
        raise ValueError(f"expected 5 log-likelihoods (ratings 1-5), got {len(logliks)}")
    return sum((k + 1) * p for k, p in enumerate(softmax(logliks)))


def process_score_prob(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_score_prob``."""
    return rating_metrics(doc, expected_rating([loglik for loglik, _ in results]))


def _share_metrics(metrics: dict, name: str, group: str, value: float, intervals: bool) -> None:
    if intervals:
        with_interval(metrics, name, value)
        with_interval(metrics, f"{name}_{group}", value)
    else:
        metrics[name] = metrics[f"{name}_{group}"] = value
        metrics[f"{name}_n"] = metrics[f"{name}_{group}_n"] = 1


def mc_metrics(doc: dict, parsed: Sequence[Mapping]) -> dict:
    """Metrics of one ``scm_mc`` document: is the (parsed) pick a warmth term, refusals."""
    group = doc["group"]
    metrics = {}
    picks, samples = _answer_counts(metrics, doc, parsed)
    if picks:
        share = sum(AXIS_OF_TERM[p] == "warmth" for p in picks) / len(picks)
        with_interval(metrics, "warmth_pick", share, samples)
        with_interval(metrics, f"warmth_pick_{group}", share, samples)
        for name in RELATIVE_SURVEY_METRICS:
            metrics[name] = (group, "warmth_share", share)
    return metrics


def process_mc(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_mc`` (after ``ParseChoices``)."""
    return mc_metrics(doc, _parsed(results))


def mc_prob_metrics(doc: dict, logliks: Sequence[float]) -> dict:
    """Metrics of one ``scm_mc_prob`` document from the 22 terms' log-likelihoods.

    ``warmth_pick``: the most likely term is a warmth term; ``warmth_pick_norm``: the same
    per byte of the term (lm-eval's ``acc_norm`` normalisation); ``warmth_mass``: the warmth
    terms' share of the probability renormalised over the 22 terms. Intervals only when the
    group has several prompts (shuffled orders): one deterministic prompt has no spread.
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


def process_mc_prob(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_mc_prob``."""
    return mc_prob_metrics(doc, [loglik for loglik, _ in results])


def warmth_ratio(logliks: Sequence[float], axes: Sequence[str]) -> float:
    """Sum of warmth-term probabilities over the sum for both axes (thesis §3.4, one template).

    Computed from log-likelihoods with a shared offset, so it does not matter whether the
    probabilities are renormalised over the 22 terms.
    """
    top = max(logliks)
    warm = sum(math.exp(ll - top) for ll, axis in zip(logliks, axes) if axis == "warmth")
    both = sum(math.exp(ll - top) for ll in logliks)
    return warm / both


def prob_ratio_metrics(doc: dict, logliks: Sequence[float]) -> dict:
    """Metrics of one ``scm_prob_ratio`` document (one template, one group). A group's
    ``warmth_ratio_<group>`` is the mean over its templates, as in the thesis."""
    if len(logliks) != len(doc["axes"]):
        raise ValueError(f"expected {len(doc['axes'])} log-likelihoods, got {len(logliks)}")
    ratio = warmth_ratio(logliks, doc["axes"])
    metrics = {}
    with_interval(metrics, "warmth_ratio", ratio)
    with_interval(metrics, f"warmth_ratio_{doc['group']}", ratio)
    for name in RELATIVE_SURVEY_METRICS:
        metrics[name] = (doc["group"], "warmth_share", ratio)
    return metrics


def process_prob_ratio(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``scm_prob_ratio``."""
    return prob_ratio_metrics(doc, [loglik for loglik, _ in results])


# --------------------------------------------------------------------------
# Agreement with the survey (aggregations over all documents)


def _group_axis_means(values: Iterable[tuple]) -> dict[tuple[str, str], float]:
    sums: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for group, axis, value in values:
        sums[(str(group), str(axis))].append(float(value))
    return {key: sum(v) / len(v) for key, v in sums.items()}


def survey_pairs(values: Iterable[tuple], which: str) -> tuple[list[float], list[float], list[str]]:
    """(model numbers, survey numbers, labels) to correlate.

    ``values`` are per-document ``(group, axis, value)``, axis ``warmth``/``competence``
    (ratings) or ``warmth_share`` (a warmth share). ``which``: ``warmth`` or ``competence``
    (7 group means each), ``all`` (the 14 group x axis means), ``gap`` (per group: warmth
    minus competence rating, or the warmth share, against the survey's warmth minus
    competence). A group enters only with every number it needs.
    """
    means = _group_axis_means(values)
    model, survey, labels = [], [], []
    axes = AXES if which in ("all", "gap") else (which,)
    for group in GROUPS:
        if which == "gap":
            if (group, "warmth_share") in means:
                model.append(means[(group, "warmth_share")])
            elif (group, "warmth") in means and (group, "competence") in means:
                model.append(means[(group, "warmth")] - means[(group, "competence")])
            else:
                continue
            survey.append(SURVEY_MEANS["warmth"][group] - SURVEY_MEANS["competence"][group])
            labels.append(group)
            continue
        for axis in axes:
            if (group, axis) in means:
                model.append(means[(group, axis)])
                survey.append(SURVEY_MEANS[axis][group])
                labels.append(f"{group}:{axis}")
    return model, survey, labels


def survey_correlation(values: Iterable[tuple], which: str) -> tuple[float, float, float]:
    """Pearson r with the survey means and its 95% Fisher-z interval (needs 4+ points)."""
    model, survey, _ = survey_pairs(values, which)
    # Equal group values that differ only by rounding noise must not give a correlation.
    if model and max(model) - min(model) <= 1e-9 * max(1.0, max(abs(v) for v in model)):
        raise ValueError("a correlation is undefined when the model gives every group the same value")
    return stats.pearson_interval(model, survey)


def survey_r(values):
    """r over the 14 group x axis means."""
    return survey_correlation(values, "all")[0]


def survey_r_ci_lower(values):
    return survey_correlation(values, "all")[1]


def survey_r_ci_upper(values):
    return survey_correlation(values, "all")[2]


def survey_r_warmth(values):
    """r over the 7 groups' warmth means."""
    return survey_correlation(values, "warmth")[0]


def survey_r_warmth_ci_lower(values):
    return survey_correlation(values, "warmth")[1]


def survey_r_warmth_ci_upper(values):
    return survey_correlation(values, "warmth")[2]


def survey_r_competence(values):
    """r over the 7 groups' competence means."""
    return survey_correlation(values, "competence")[0]


def survey_r_competence_ci_lower(values):
    return survey_correlation(values, "competence")[1]


def survey_r_competence_ci_upper(values):
    return survey_correlation(values, "competence")[2]


def survey_r_gap(values):
    """r of the groups' warmth-minus-competence (or warmth share) with the survey's W - C."""
    return survey_correlation(values, "gap")[0]


def survey_r_gap_ci_lower(values):
    return survey_correlation(values, "gap")[1]


def survey_r_gap_ci_upper(values):
    return survey_correlation(values, "gap")[2]


def rating_ci_lower(values: Sequence[float]) -> float:
    """Lower 95% bootstrap bound of a mean rating (1-5; never a Wilson interval)."""
    return stats.bootstrap_mean_interval(values)[0]


def rating_ci_upper(values: Sequence[float]) -> float:
    return stats.bootstrap_mean_interval(values)[1]
