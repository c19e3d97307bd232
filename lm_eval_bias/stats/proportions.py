"""Intervals of a share of yes/no outcomes, and the test of a share of 1/2 that they invert:
Clopper-Pearson (exact), from one document; with clusters, Korn & Graubard's, from
:data:`MIN_CLUSTERS_KORN_GRAUBARD` clusters; and the aggregations of outcomes coded 0/100
(:func:`exact_lower_pct`, :func:`exact_upper_pct`), which below those clusters give the betting
interval (:mod:`.bounded_means`) where the outcomes' range is given.

Korn & Graubard's interval is Clopper-Pearson at an effective number of documents: the
documents shrunk by the design effect, and again for the few clusters that estimate it (degrees
of freedom adjusted). In simulation it was conservative at 2 to 5 clusters (its t_{G-1}
adjustment), but 0.908 at 10 clusters and 0.924 at 20 for shares of 0.1 or 0.9 with
intra-cluster correlation 0.3; 0.931 to 0.958 at 30, 0.950 to 0.956 at 100 (3,000 draws each).

References: Clopper & Pearson (1934), Biometrika 26:404; Korn & Graubard (1998), Survey
Methodology 24:193 (the effective-sample-size Clopper-Pearson interval).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from lm_eval_bias.stats.bounded_means import betting_mean_interval, sharp_or_betting
from lm_eval_bias.stats.clusters import design_effect, require_clusters, split_cluster_ids, unit_index
from lm_eval_bias.stats.confidence import CONFIDENCE, check_confidence

# The fewest clusters from which the Korn-Graubard interval held at least 93% coverage of its 95%
# level, at every number of clusters simulated above it.
MIN_CLUSTERS_KORN_GRAUBARD = 30


def _check_counts(successes: float, n: int, confidence: float) -> None:
    check_confidence(confidence)
    if n <= 0:
        raise ValueError(f"a proportion needs at least one observation, got n={n}")
    if not 0 <= successes <= n or successes != int(successes):
        raise ValueError(f"successes must be a whole number in [0, n={n}], got {successes!r}")


def clopper_pearson_interval(successes: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval for a binomial proportion: the interval of
    ``scipy.stats.binomtest(successes, n).proportion_ci(confidence, "exact")``, from the beta
    quantiles that scipy finds by root-finding.

    Covers p with probability at least the confidence for every p and n (it inverts the
    exact binomial test), so it holds from one document; the Wilson interval does not at small n
    (its coverage dips to 90% at n = 3 and 5 for p = 0.2 and 0.1, 82% near p = 0.09 at n = 2:
    tests/test_interval_coverage.py).

    Parameters
    ----------
    successes : int
        Number of successes, a whole number in [0, n].
    n : int
        Number of trials, at least 1.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound, as proportions in [0, 1].

    Raises
    ------
    ValueError
        For counts that are not a proportion's, or a confidence outside (0, 1).
    """
    from scipy.special import betaincinv

    _check_counts(successes, n, confidence)
    k, n, tail = int(successes), int(n), (1.0 - confidence) / 2.0
    lower = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, tail))
    upper = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1.0 - tail))
    return lower, upper


def beta_interval(successes: float, n: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Clopper-Pearson bounds from the beta quantiles, for real counts: Korn & Graubard's
    interval is this one at an effective number of documents and successes.

    Parameters
    ----------
    successes : float
        The (effective) number of successes, in [0, n].
    n : float
        The (effective) number of documents, positive.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound, as proportions in [0, 1].
    """
    from scipy.special import betaincinv

    tail = (1.0 - confidence) / 2.0
    lower = 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, tail))
    upper = 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1.0 - tail))
    return lower, upper


def beta_pvalue_of_one_half(successes: float, n: float) -> float:
    """The two-sided p-value of "the share is 1/2" that :func:`beta_interval` inverts: twice the
    smaller of its two beta tails at 1/2, at most 1, so the 95% interval excludes 1/2 exactly
    when it is below 0.05 (for whole counts, the exact binomial test).

    Parameters
    ----------
    successes : float
        The (effective) number of successes, in [0, n].
    n : float
        The (effective) number of documents, positive.

    Returns
    -------
    float
    """
    from scipy.special import betainc, betaincc

    below = 1.0 if successes == 0 else float(betainc(successes, n - successes + 1, 0.5))
    above = 1.0 if successes == n else float(betaincc(successes + 1, n - successes, 0.5))
    return min(1.0, 2.0 * min(below, above))


def korn_graubard_counts(outcomes, unit_of, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Korn & Graubard's (1998) effective successes and documents of clustered yes/no outcomes.

    The design effect d = max(1, cluster-robust variance / independent variance) (d = 1 when
    every outcome is the same) shrinks the documents to n / d, then the ratio of Student's
    quantiles with n - 1 and G - 1 degrees of freedom, squared, shrinks them for the few
    clusters that estimate d; the successes keep the observed share.

    Parameters
    ----------
    outcomes : numpy.ndarray
        Per-document outcomes, 0 or 1.
    unit_of : numpy.ndarray
        Each document's cluster as 0 .. G-1, every one present.
    confidence : float, default 0.95
        The level of the Student quantiles, in (0, 1).

    Returns
    -------
    (float, float)
        The effective successes and documents.

    Raises
    ------
    ValueError
        "too few clusters (G = g): ..." below :data:`MIN_CLUSTERS_KORN_GRAUBARD` clusters.
    """
    from scipy.stats import t

    n, units = outcomes.size, int(unit_of.max()) + 1
    require_clusters(units, MIN_CLUSTERS_KORN_GRAUBARD, "the Korn-Graubard interval of a mean of yes/no outcomes")
    share = float(outcomes.mean())
    effect = 1.0 if share in (0.0, 1.0) else max(1.0, design_effect(outcomes, unit_of))
    quantile = 0.5 + 0.5 * confidence
    effective = n / effect * (float(t.ppf(quantile, n - 1)) / float(t.ppf(quantile, units - 1))) ** 2
    return share * effective, effective


def yes_no_interval(outcomes, unit_of, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of a share of yes/no outcomes: Clopper-Pearson without clusters (``unit_of``
    None), Korn & Graubard's effective-sample-size Clopper-Pearson with them.

    Parameters
    ----------
    outcomes : numpy.ndarray
        Per-document outcomes, 0 or 1, at least one.
    unit_of : numpy.ndarray or None
        Each document's cluster as 0 .. G-1, or None.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound, as proportions in [0, 1].

    Raises
    ------
    ValueError
        As :func:`clopper_pearson_interval` and :func:`korn_graubard_counts`.
    """
    if unit_of is None:
        return clopper_pearson_interval(int(outcomes.sum()), int(outcomes.size), confidence)
    check_confidence(confidence)
    return beta_interval(*korn_graubard_counts(outcomes, unit_of, confidence), confidence)


def _percent_outcomes(values: Sequence):
    """Per-document outcomes coded 100 (yes) or 0 (no), as 0/1, and their clusters or None."""
    import numpy as np

    plain, ids = split_cluster_ids(values, 1)
    array = np.asarray(plain, dtype=float)
    wrong = array[(array != 0) & (array != 100)]
    if wrong.size:
        raise ValueError(f"expected per-document outcomes of 0 or 100, got {wrong[0]!r}")
    return array / 100.0, unit_index(ids)


def percent_interval(values: Sequence, value_range: tuple[float, float] | None = None) -> tuple[float, float]:
    """Interval of a share of outcomes coded 0/100, in percent: :func:`yes_no_interval`; with a
    ``value_range``, where Korn-Graubard has too few clusters, the betting interval of the
    outcomes (:func:`bounded_means.betting_mean_bounds`, clusters as units).

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document outcomes coded 100 (yes) or 0 (no), each optionally with its cluster id.
    value_range : (float, float), optional
        The range of one outcome, (0, 100).

    Returns
    -------
    (float, float)
        The lower and upper bound, in percent.

    Raises
    ------
    ValueError
        Outcomes coded otherwise; "too few clusters (G = g) ..." below Korn-Graubard's clusters
        without a ``value_range``.
    TypeError
        As :func:`bounded_means.betting_units`.
    """
    outcomes, unit_of = _percent_outcomes(values)

    def exact():
        lower, upper = yes_no_interval(outcomes, unit_of)
        return 100.0 * lower, 100.0 * upper

    return sharp_or_betting(
        exact, value_range, partial(betting_mean_interval, 100.0 * outcomes, unit_of, value_range, CONFIDENCE)
    )


def exact_lower_pct(values: Sequence, value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of outcomes coded 0/100, in percent:
    Clopper-Pearson, or Korn-Graubard with clusters (:func:`yes_no_interval`); with a
    ``value_range``, below Korn-Graubard's clusters the betting bound (:func:`percent_interval`).

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document outcomes coded 100 (yes) or 0 (no), each optionally with its cluster id.
    value_range : (float, float), optional
        The range of one outcome, (0, 100).

    Returns
    -------
    float
        The bound in percent.
    """
    return percent_interval(values, value_range)[0]


def exact_upper_pct(values: Sequence, value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of outcomes coded 0/100, in percent:
    Clopper-Pearson, or Korn-Graubard with clusters (:func:`yes_no_interval`); with a
    ``value_range``, below Korn-Graubard's clusters the betting bound (:func:`percent_interval`).

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document outcomes coded 100 (yes) or 0 (no), each optionally with its cluster id.
    value_range : (float, float), optional
        The range of one outcome, (0, 100).

    Returns
    -------
    float
        The bound in percent.
    """
    return percent_interval(values, value_range)[1]


def all_zero_or_one(array) -> bool:
    """Whether every value is 0 or 1: yes/no outcomes, whose means get the intervals of shares.

    Parameters
    ----------
    array : numpy.ndarray
        Per-document values.

    Returns
    -------
    bool
    """
    return bool(((array == 0) | (array == 1)).all())
