"""Intervals of means and of differences, ranges and spreads of group means, each chosen to hold
its 95% level at the number of documents it is shown for; and Pearson's r.

Every interval here was checked by simulation (``tests/test_interval_coverage.py``: skewed and
symmetric values in [0, 1], shares of several samples, yes/no outcomes at p = 0.1 to 0.9, two
to five groups, 2 to 100 documents per group): it covers the true value in at least 93% of
draws wherever it is returned. Below the documents an interval needs it raises ``ValueError``
with a message starting "too few documents (n = N)" (the task reports ``N/A`` with it), unless
the values' range is given: then the betting interval is shown (the last table).

============================  ==========================================  =====================
statistic                     interval                                    fewest documents
============================  ==========================================  =====================
mean of yes/no outcomes       Clopper-Pearson (exact)                     1
mean of other values          studentized bootstrap (bootstrap-t)         30
gap of yes/no outcomes        Agresti-Caffo                               3 on each side
gap of other values           Welch                                       2 on each side
range, spread of group means  Bonferroni over the groups' pairwise gaps   as the gaps; 30 per
                                                                          group of yes/no
============================  ==========================================  =====================

Documents built from one template are not independent. Where a task appends each document's
cluster id to its values (:mod:`.clusters`), the cluster is the independent unit:

============================  ==========================================  =====================
statistic                     clustered interval                          fewest clusters
============================  ==========================================  =====================
mean of yes/no outcomes       Korn-Graubard (effective-size Clopper-      30
                              Pearson, degrees-of-freedom adjusted)
mean of other values          cluster bootstrap-t                         30
gap of yes/no outcomes        Agresti-Caffo, its standard error times     20 on each side
                              sqrt(max(1, design effect)), t(G_s - 1)
gap of other values           cluster-robust (CR1) t, t(G_s - 1)          30 on each side
range, spread of group means  Bonferroni over clustered pairwise gaps     as the gaps; and 30
                                                                          documents per group
                                                                          of yes/no
============================  ==========================================  =====================

G_s is the number of clusters holding documents of the side that has fewer (a cluster may hold
both sides): where each side has its own clusters the variance of the gap is the sum of two
sides' cluster variances, and t(G - 1) over all G clusters under-covered (0.83 to 0.91 at 3 to
5 clusters a side, 0.92 at 15); Welch's lower bound on its degrees of freedom, min(G_0, G_1) - 1,
restored it. The fewest clusters are where the simulation held 93% in every setting at and above
them (cluster sizes 2 to 20, unequal; intra-cluster correlation 0.1 to 0.3; G = 2 to 100):

- Korn-Graubard: conservative at 2 to 5 clusters (its t_{G-1} adjustment), but 0.908 at 10
  clusters and 0.924 at 20 for shares of 0.1 or 0.9 with correlation 0.3; 0.931 to 0.958 at 30,
  0.950 to 0.956 at 100 (3,000 draws each).
- Cluster bootstrap-t of toxicity-like scores (Beta(0.3, 3) times a cluster's Gamma(1, 1)):
  0.912 at 5 clusters, 0.925 at 10, 0.934 at 20, 0.945 at 30 (1,000 draws); Beta cluster means
  0.947 to 0.967 from 10 clusters.
- Cluster-robust t of a gap of skewed values, each side its own clusters: 0.923, 0.925, 0.929
  and 0.936 at 5, 10, 20 and 30 clusters a side (2,000 draws; other settings 0.93 or more from 3).
- Clustered Agresti-Caffo: 0.955, 0.924, 0.940, 0.943 at 5, 10, 20, 30 clusters a side with
  correlation 0.3 (2,000 draws).

The documents' own intervals on the same clustered draws covered 0.55 to 0.85 (means, gaps with
separate clusters). Below its clusters an interval raises ``ValueError`` with a message starting
"too few clusters (G = g)". When every cluster holds one document the independent method
applies, and its result is returned unchanged.

Every metric of ours has a known range (``metric_keys.MEASURE_RANGES``). Given it as
``value_range`` (the range ONE document's value can take; for a gap, range or spread, that of the
values compared), the intervals and tests of ``stats.VALUE_RANGE_AWARE`` give a betting interval
wherever the ones above are not shown (below their documents or clusters, or where they need
values that vary), instead of raising:

============================  ==========================================  =====================
statistic                     shown                                       where
============================  ==========================================  =====================
mean of yes/no outcomes       Clopper-Pearson                             from 1 document
  in clusters                 Korn-Graubard                               from 30 clusters
                              betting, clusters as units                  2 to 29 clusters
mean of other values          bootstrap-t                                 from 30 documents
                              betting, documents as units                 1 to 29 documents
  in clusters                 cluster bootstrap-t                         from 30 clusters
                              betting, clusters as units                  2 to 29 clusters
gap of yes/no outcomes        Agresti-Caffo                               from 3 a side
                              Bonferroni of the sides' betting bounds     1 or 2 on a side
  in clusters                 clustered Agresti-Caffo                     from 20 a side
                              Bonferroni of the sides' betting bounds,    under 20 on a side
                              each side's clusters as its units
gap of other values           Welch                                       from 2 a side
                              Bonferroni of the sides' betting bounds     1 on a side
  in clusters                 cluster-robust t                            from 30 a side
                              Bonferroni of the sides' betting bounds,    under 30 on a side
                              each side's clusters as its units
range, spread of group means  Bonferroni over the pairs' gaps, each       as each gap; every
                              shown as above                              pair betting where
                                                                          yes/no groups have
                                                                          under 30 documents
============================  ==========================================  =====================

The betting bounds (:mod:`.bounded_means`; Waudby-Smith & Ramdas 2024, diversified Kelly capital
of fixed bets) hold their level at every number of units, independent units of different means
included, with nothing but the range assumed: a mean's 95% interval is its lower and upper bound
at 0.025 each, over the documents' values centred on the middle of the range, or each cluster's
centred total times G / N (G clusters, N documents), clipped to the range. A gap's is
``[L0 - U1, U0 - L1]`` of the two sides' bounds at 0.0125 each: Bonferroni's inequality needs no
independence, so it holds where clusters hold both sides' documents, each side's documents of a
cluster being one unit of that side. In the settings of ``tests/test_interval_coverage.py`` they
covered 0.997 to 1.000 at 2 to 20 documents and clusters (2,000 draws each: toxicity-like
scores, shares, sentiment and 1-5 ratings; yes/no shares 0.1 to 0.9 and skewed scores in
clusters of 2 to 20 documents with intra-cluster correlation 0.1 and 0.3; gaps, each side in its
own clusters or both in shared ones): conservative, as Markov's inequality makes them. Their
price is width: 0.45 for 10 documents of Beta(0.3, 3) toxicity, 0.36 for a yes/no share of 0.7
over 12 equal clusters. Their p-values are the tests they invert (``bounded_means.mean_pvalues``,
``bounded_means.gap_pvalues``). A value outside ``value_range`` is one no task writes:
``TypeError``.

A gap's interval and its p-value (``significance.difference_pvalue``) come from one
estimate, standard error and reference law, so an interval excludes 0 exactly when p < 0.05;
a range's lower bound is above 0 exactly when ``significance.range_pvalue`` < 0.05; with
clusters as without.

References: Clopper & Pearson (1934), Biometrika 26:404; Efron & Tibshirani (1993), *An
Introduction to the Bootstrap*, ch. 12 (bootstrap-t), and Hall (1988), Ann. Stat. 16:927 (its
second-order accuracy, which follows skewed values); Welch (1947), Biometrika 34:28; Agresti &
Caffo (2000), Am. Stat. 54:280. Clusters: Korn & Graubard (1998), Survey Methodology 24:193
(the effective-sample-size Clopper-Pearson interval); Liang & Zeger (1986), Biometrika 73:13
(cluster-robust variance); Cameron, Gelbach & Miller (2008), Rev. Econ. Stat. 90:414 (cluster
bootstrap-t, and t(G - 1) with few clusters); Davison & Hinkley (1997), *Bootstrap Methods and
their Application*, section 3.8 (resampling clusters). Betting: Waudby-Smith & Ramdas (2024),
JRSS-B 86(1):1 (bounds of bounded means at every n).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

from lm_eval_bias.stats.clusters import design_effect, require_clusters, robust_variance, split_cluster_ids, unit_index

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
SEED = 1234
# A bootstrap of up to this many cells (resamples x documents) is one matrix product of
# resampling counts with the values (16 MB at most); more documents are resampled in batches of
# RESAMPLING_BATCH_CELLS draws.
COUNT_MATRIX_CELLS = 2_000_000
RESAMPLING_BATCH_CELLS = 20_000_000
# Values with at most one distinct value per this many documents are resampled by their counts.
FEW_LEVELS_PER_DOCUMENT = 4

# The fewest documents (per group, for gaps, ranges and spreads) at which each interval held
# at least 93% coverage of its 95% level in tests/test_interval_coverage.py.
MIN_DOCUMENTS_BOOTSTRAP_T = 30
MIN_DOCUMENTS_WELCH = 2
MIN_DOCUMENTS_AGRESTI_CAFFO = 3
MIN_DOCUMENTS_BINARY_RANGE = 30
# The fewest clusters (for gaps: on each side) from which each clustered interval held at least
# 93% coverage of its 95% level there, at every number of clusters simulated above it.
MIN_CLUSTERS_KORN_GRAUBARD = 30
MIN_CLUSTERS_BOOTSTRAP_T = 30
MIN_CLUSTERS_GAP = 30
MIN_CLUSTERS_BINARY_GAP = 20


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _require_documents(n: int, fewest: int, what: str) -> None:
    """The "too few documents" error: ``what`` holds its level from ``fewest`` documents."""
    if n < fewest:
        raise ValueError(
            f"too few documents (n = {n}): {what} holds its 95% level from {fewest} documents "
            "(tests/test_interval_coverage.py)"
        )


# --------------------------------------------------------------------------
# Proportions


def _check_counts(successes: float, n: int, confidence: float) -> None:
    _check_confidence(confidence)
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
    _check_confidence(confidence)
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
    outcomes (:func:`betting_mean_bounds`, clusters as units).

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
        As :func:`betting_units`.
    """
    outcomes, unit_of = _percent_outcomes(values)

    def exact():
        lower, upper = yes_no_interval(outcomes, unit_of)
        return 100.0 * lower, 100.0 * upper

    return _or_betting(
        exact, value_range, partial(_betting_interval, 100.0 * outcomes, unit_of, value_range, CONFIDENCE)
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


# --------------------------------------------------------------------------
# Means of other values


def _as_array(values: Sequence[float]):
    import numpy as np

    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("an interval needs at least one per-document value")
    if not np.isfinite(array).all():
        raise ValueError("per-document values must be finite numbers")
    return array


def _varies(array) -> bool:
    """Whether the values differ by more than float rounding: a document's mean of several equal
    scores can differ from another's in its last bits, which is no spread to build an interval on."""
    import numpy as np

    return float(np.ptp(array)) > 1e-12 * max(1.0, float(np.abs(array).max()))


def _require_spread(array) -> None:
    if not _varies(array):
        raise ValueError(
            f"every document has the value {float(array[0])!r}: "
            "an interval of a mean of non-yes/no values needs them to vary"
        )


def _resampled_moments(values, stream: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED):
    """The mean and the variance (ddof=1) of ``values`` in each of ``resamples`` bootstrap
    resamples (documents drawn with replacement), seeded by ``seed`` and ``stream``: the same
    values always give the same resamples, so both bounds of an interval (asked for apart) come
    from the same draws."""
    import numpy as np

    n = values.size
    levels, level_counts = np.unique(values, return_counts=True)
    powers = np.stack([values, values**2])
    rng = np.random.default_rng([seed, stream])
    if levels.size * FEW_LEVELS_PER_DOCUMENT <= n:
        # Resampling n documents draws each distinct value a multinomial number of times, so
        # the resampled sums are drawn from that law directly: the same bootstrap distribution
        # at the cost of the distinct values, not the documents (shares of 10 samples, ratings).
        sums = rng.multinomial(n, level_counts / n, size=resamples) @ np.stack([levels, levels**2]).T
    elif resamples * n <= COUNT_MATRIX_CELLS:
        draws = rng.integers(0, n, size=(resamples, n))
        cells = (draws + n * np.arange(resamples)[:, None]).ravel()
        counts = np.bincount(cells, minlength=resamples * n).reshape(resamples, n).astype(float)
        sums = counts @ powers.T
    else:
        batch = max(1, RESAMPLING_BATCH_CELLS // n)
        sums = np.empty((resamples, 2))
        for start in range(0, resamples, batch):
            stop = min(start + batch, resamples)
            drawn = values[rng.integers(0, n, size=(stop - start, n))]
            sums[start:stop] = np.stack([drawn.sum(axis=1), (drawn**2).sum(axis=1)], axis=1)
    means = sums[:, 0] / n
    variances = np.maximum(sums[:, 1] - n * means**2, 0.0) / (n - 1)
    return means, variances


def _cluster_resampled_deviations(residuals, sizes, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED):
    """The deviation of the mean from the sample mean, and its cluster-robust variance, in each of
    ``resamples`` cluster bootstrap resamples (G clusters drawn with replacement), seeded.

    A resample's mean is its clusters' sum of values over their sum of sizes; with each cluster's
    residual total ``e`` (sum of value - sample mean) and size ``m``, its deviation is
    ``d = sum(e) / sum(m)`` and its CR1 variance ``G / (G - 1) * sum((e - d m)^2) / sum(m)^2``,
    both sums of counts times five per-cluster columns: one matrix product per batch."""
    import numpy as np

    units = residuals.size
    columns = np.stack([residuals, sizes, residuals**2, residuals * sizes, sizes**2])
    rng = np.random.default_rng([seed, 0])
    sums = np.empty((resamples, columns.shape[0]))
    batch = max(1, COUNT_MATRIX_CELLS // units)
    for start in range(0, resamples, batch):
        stop = min(start + batch, resamples)
        draws = rng.integers(0, units, size=(stop - start, units))
        cells = (draws + units * np.arange(stop - start)[:, None]).ravel()
        counts = np.bincount(cells, minlength=(stop - start) * units).reshape(stop - start, units)
        sums[start:stop] = counts @ columns.T
    documents = sums[:, 1]
    deviations = sums[:, 0] / documents
    squares = np.maximum(sums[:, 2] - 2.0 * deviations * sums[:, 3] + deviations**2 * sums[:, 4], 0.0)
    return deviations, units / (units - 1) * squares / documents**2


def _studentized_bounds(studentized, confidence: float, too_few: str) -> tuple[float, float]:
    """The two quantiles of the resamples' t statistics; ``too_few`` (the start of the error)
    when over a tail's share of resamples repeat one value (an infinite t)."""
    import numpy as np

    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(studentized, [tail, 1.0 - tail], method="inverted_cdf")
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"{too_few} is unbounded when over {tail:.1%} of resamples repeat one value")
    return float(low), float(high)


def _cluster_bootstrap_interval(array, unit_of, confidence: float) -> tuple[float, float]:
    """Cluster bootstrap-t interval of the mean of ``array`` (see :func:`bootstrap_mean_interval`)."""
    import numpy as np

    units = int(unit_of.max()) + 1
    what = "the cluster bootstrap-t interval of a mean"
    require_clusters(units, MIN_CLUSTERS_BOOTSTRAP_T, what)
    n, mean = array.size, float(array.mean())
    residuals = array - mean
    scale = math.sqrt(robust_variance(residuals / n, unit_of))
    if scale <= 1e-12 * max(1.0, float(np.abs(array).max())):
        raise ValueError(
            "every cluster has the same mean: an interval of a mean of non-yes/no values needs them to vary"
        )
    totals = np.bincount(unit_of, weights=residuals, minlength=units)
    sizes = np.bincount(unit_of, minlength=units).astype(float)
    deviations, variances = _cluster_resampled_deviations(totals, sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        studentized = np.where(variances > 0, deviations / np.sqrt(variances), np.sign(deviations) * np.inf)
    low, high = _studentized_bounds(studentized, confidence, f"too few clusters (G = {units}): {what}")
    return mean - high * scale, mean - low * scale


def bootstrap_mean_interval(
    values: Sequence, confidence: float = CONFIDENCE, value_range: tuple[float, float] | None = None
) -> tuple[float, float]:
    """Studentized bootstrap (bootstrap-t) interval of the mean: documents resampled with
    replacement :data:`BOOTSTRAP_RESAMPLES` times, seeded; the quantiles of the resamples'
    t statistics (mean - sample mean) / (sd / sqrt(n)) replace Student's (Efron & Tibshirani
    1993, ch. 12), which follows skewed values where the percentile bootstrap (85% coverage
    at 5 documents, 92% at 30) and Student's t (91% at 30 documents of Beta(0.3, 3) values)
    do not. From 30 documents it held 94.6% or more for toxicity-like Beta(0.1, 5) to
    Beta(0.3, 3) values, shares of 10 samples with means 0.05 to 0.9, and 1-5 ratings.

    With cluster ids, the cluster bootstrap-t: whole clusters resampled (a resample's mean is
    its sum of values over its sum of documents), each studentized by its cluster-robust
    standard error (Davison & Hinkley 1997, section 3.8; Cameron, Gelbach & Miller 2008), from
    :data:`MIN_CLUSTERS_BOOTSTRAP_T` clusters.

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document values (e.g. 1-5 ratings), finite, not all equal, at least
        :data:`MIN_DOCUMENTS_BOOTSTRAP_T` (30); or each with its cluster id, from
        :data:`MIN_CLUSTERS_BOOTSTRAP_T` clusters whose means are not all equal.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take: where the interval above is not shown, the
        betting interval (:func:`betting_mean_bounds`) is, at every number of documents or
        clusters.

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." below 30 documents (where the simulation found it
        below its level for skewed values), "too few clusters (G = g) ..." below its clusters,
        or when so many resamples repeat one value that a bound is infinite; or when the values
        cannot support it (see the parameters); each only without a ``value_range``.
    TypeError
        A value outside ``value_range`` (:func:`betting_units`), where the betting interval is
        given.
    """
    _check_confidence(confidence)
    array, unit_of = _mean_values(values)
    return _or_betting(
        partial(_bootstrap_interval, array, unit_of, confidence),
        value_range,
        partial(_betting_interval, array, unit_of, value_range, confidence),
    )


def _bootstrap_interval(array, unit_of, confidence: float) -> tuple[float, float]:
    """The (cluster) bootstrap-t interval of :func:`bootstrap_mean_interval`."""
    import numpy as np

    if unit_of is not None:
        return _cluster_bootstrap_interval(array, unit_of, confidence)
    n = array.size
    what = "the bootstrap-t interval of a mean"
    _require_documents(n, MIN_DOCUMENTS_BOOTSTRAP_T, what)
    _require_spread(array)
    mean, scale = float(array.mean()), float(array.std(ddof=1)) / math.sqrt(n)
    means, variances = _resampled_moments(array, 0)
    # a resample of one repeated value has no spread: its t is infinite (signed by its mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        studentized = np.where(variances > 0, (means - mean) / np.sqrt(variances / n), np.sign(means - mean) * np.inf)
    low, high = _studentized_bounds(studentized, confidence, f"too few documents (n = {n}): {what}")
    return mean - high * scale, mean - low * scale


def _mean_values(values: Sequence):
    """Per-document values as a float array, and their clusters (:func:`clusters.unit_index`)."""
    plain, ids = split_cluster_ids(values, 1)
    return _as_array(plain), unit_index(ids)


def mean_interval(
    values: Sequence, confidence: float = CONFIDENCE, value_range: tuple[float, float] | None = None
) -> tuple[float, float]:
    """Interval of a mean of per-document values.

    Every value 0 or 1 (one yes/no outcome per document): Clopper-Pearson, from one document;
    with cluster ids Korn-Graubard (:func:`yes_no_interval`). Otherwise (e.g. the share of a
    document's several samples, a toxicity score): :func:`bootstrap_mean_interval`, from 30
    documents; it resamples documents, which respects that samples of one prompt are
    correlated, and with cluster ids whole clusters. With a ``value_range``, where neither is
    shown, the betting interval (:func:`betting_mean_bounds`).

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document values, at least one, each optionally with its cluster id.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take: where the interval above is not shown, the
        betting interval (:func:`betting_mean_bounds`) is, at every number of documents or
        clusters.

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." under 30 documents of values not all 0 or 1, "too few
        clusters (G = g) ..." under the clusters its clustered method needs; or when the
        documents cannot support the interval (see the functions above); each only without a
        ``value_range``.
    TypeError
        A value outside ``value_range`` (:func:`betting_units`), where the betting interval is
        given.
    """
    _check_confidence(confidence)
    array, unit_of = _mean_values(values)
    sharp = yes_no_interval if _all_zero_or_one(array) else _bootstrap_interval
    return _or_betting(
        partial(sharp, array, unit_of, confidence),
        value_range,
        partial(_betting_interval, array, unit_of, value_range, confidence),
    )


def mean_design_effect(values: Sequence) -> float:
    """lm-eval aggregation: the cluster-robust variance of the mean over its variance with
    independent documents (:func:`clusters.design_effect`, the one of paired comparisons); 1
    when every cluster holds one document.

    Parameters
    ----------
    values : sequence of (float, int)
        Per-document ``(value, cluster)``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Without cluster ids, with one cluster, or when every document has one value.
    """
    plain, ids = split_cluster_ids(values, 1)
    if ids is None:
        raise ValueError("a design effect needs each document's cluster: per-document values (value, cluster)")
    array = _as_array(plain)
    if not _varies(array):
        raise ValueError(f"every document has the value {float(array[0])!r}: a design effect needs them to vary")
    unit_of = unit_index(ids)
    if unit_of is None:
        return 1.0
    if int(unit_of.max()) == 0:
        raise ValueError(f"all {array.size} documents are in one cluster: a design effect needs two clusters")
    return design_effect(array, unit_of)


def _all_zero_or_one(array) -> bool:
    return bool(((array == 0) | (array == 1)).all())


def ci_lower(values: Sequence[float], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of the mean (:func:`mean_interval`).

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document values, each optionally with its cluster id.
    value_range : (float, float), optional
        The range one document's value can take: below the documents or clusters of the
        interval otherwise shown, the betting bound (:func:`mean_interval`).

    Returns
    -------
    float
    """
    return mean_interval(values, value_range=value_range)[0]


def ci_upper(values: Sequence[float], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of the mean (:func:`mean_interval`).

    Parameters
    ----------
    values : sequence of float or of (float, int)
        Per-document values, each optionally with its cluster id.
    value_range : (float, float), optional
        The range one document's value can take: below the documents or clusters of the
        interval otherwise shown, the betting bound (:func:`mean_interval`).

    Returns
    -------
    float
    """
    return mean_interval(values, value_range=value_range)[1]


# --------------------------------------------------------------------------
# Betting intervals: at every number of documents or clusters, for values of a known range


def _or_betting(sharp, value_range, betting):
    """``sharp()``, unless it raises ValueError (too few documents or clusters, or values that do
    not vary) and a ``value_range`` is given: then ``betting()``, which holds at every n."""
    try:
        return sharp()
    except ValueError:
        if value_range is None:
            raise
    return betting()


def _checked_value_range(value_range) -> tuple[float, float]:
    """``value_range`` as two floats; TypeError unless two finite numbers, the first smaller."""
    try:
        low, high = (float(end) for end in value_range)
    except (TypeError, ValueError):
        raise TypeError(f"value_range must be two finite numbers (low, high), got {value_range!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise TypeError(f"value_range must be two finite numbers (low, high), low < high, got {value_range!r}")
    return low, high


def betting_units(values, value_range, unit_of=None):
    """Per-document values as the independent units of :mod:`.bounded_means`, and their bound.

    The values are centred on the middle of their range, so each lies within half its width h;
    without clusters the documents are the units, with them each cluster's centred total times
    G / N (G clusters, N documents; :func:`bounded_means.unit_values`), whose average over the
    clusters is the documents' centred mean, each within ``h * G * (its documents) / N``.

    Parameters
    ----------
    values : array-like, shape (n,) or (rows, n)
        Per-document values (each row one sample; the simulations bound many at once).
    value_range : (float, float)
        The range one document's value can take.
    unit_of : numpy.ndarray, optional
        Each document's cluster as 0 .. G-1, every one present (the same in every row).

    Returns
    -------
    units : numpy.ndarray, shape (rows, n) or (rows, G)
    bound : float
        Every unit lies in ``[-bound, bound]``: h, or ``h * G * (largest cluster) / N``.

    Raises
    ------
    TypeError
        A value outside ``value_range`` (a value no task writes), or a ``value_range`` that is
        not two finite numbers, the first smaller.
    """
    import numpy as np

    low, high = _checked_value_range(value_range)
    array = np.atleast_2d(np.asarray(values, dtype=float))
    outside = array[~((array >= low) & (array <= high))]
    if outside.size:
        raise TypeError(
            f"a per-document value {float(outside[0])!r} is outside the metric's range [{low:g}, {high:g}]: "
            "no task writes it, and no betting interval rests on a range its values leave"
        )
    half = (high - low) / 2
    centred = array - (low + high) / 2
    if unit_of is None:
        return centred, half
    sizes = np.bincount(unit_of)
    totals = np.stack([np.bincount(unit_of, weights=row, minlength=sizes.size) for row in centred])
    scale = sizes.size / unit_of.size
    return totals * scale, half * scale * int(sizes.max())


def betting_mean_bounds(values, value_range, unit_of=None, alpha: float = (1.0 - CONFIDENCE) / 2.0):
    """Lower and upper betting bounds of the mean of values of a known range, each one-sided at
    ``alpha``, valid at every number of documents or clusters (:mod:`.bounded_means`: the
    diversified Kelly capital of fixed bets; Waudby-Smith & Ramdas 2024).

    Parameters
    ----------
    values : array-like, shape (n,) or (rows, n)
        Per-document values, each in ``value_range``.
    value_range : (float, float)
        The range one document's value can take.
    unit_of : numpy.ndarray, optional
        Each document's cluster as 0 .. G-1 (:func:`betting_units`); None: independent documents.
    alpha : float, default 0.025
        Each bound's one-sided level.

    Returns
    -------
    lower, upper : numpy.ndarray, shape (rows,)

    Raises
    ------
    TypeError
        As :func:`betting_units`.
    """
    import numpy as np

    from lm_eval_bias.stats.bounded_means import lower_bounds, upper_bounds

    units, bound = betting_units(values, value_range, unit_of)
    low, high = _checked_value_range(value_range)
    centre = (low + high) / 2
    # Clusters' units may reach beyond half the range (a large cluster's total); the mean cannot.
    lower = np.clip(lower_bounds(units, bound, alpha) + centre, low, high)
    return lower, np.clip(upper_bounds(units, bound, alpha) + centre, low, high)


def betting_mean_pvalue(values, value_range, null: float, unit_of=None):
    """Two-sided p-values of "the mean is ``null``" that the betting interval of
    :func:`betting_mean_bounds` inverts (:func:`bounded_means.mean_pvalues`): below 0.05 exactly
    when its 95% interval excludes ``null``.

    Parameters
    ----------
    values : array-like, shape (n,) or (rows, n)
        Per-document values, each in ``value_range``.
    value_range : (float, float)
        The range one document's value can take.
    null : float
        The mean tested, strictly inside ``value_range``.
    unit_of : numpy.ndarray, optional
        Each document's cluster as 0 .. G-1; None: independent documents.

    Returns
    -------
    numpy.ndarray, shape (rows,)

    Raises
    ------
    TypeError
        As :func:`betting_units`.
    """
    from lm_eval_bias.stats.bounded_means import mean_pvalues

    units, bound = betting_units(values, value_range, unit_of)
    return mean_pvalues(units, bound, null - sum(_checked_value_range(value_range)) / 2)


def _betting_interval(array, unit_of, value_range, confidence: float) -> tuple[float, float]:
    lower, upper = betting_mean_bounds(array, value_range, unit_of, (1.0 - confidence) / 2.0)
    return float(lower[0]), float(upper[0])


# --------------------------------------------------------------------------
# Differences of two groups' means: one estimate, standard error and law for interval and test


def _split_sides(values: Sequence):
    """Side 0's and side 1's values, and the clusters of their documents (side 0's first) or None."""
    import numpy as np

    pairs, ids = split_cluster_ids(values, 2)
    pairs = np.asarray(pairs, dtype=float).reshape(-1, 2)
    on_first, on_second = pairs[:, 0] == 0, pairs[:, 0] == 1
    first, second = pairs[on_first, 1], pairs[on_second, 1]
    if first.size == 0 or second.size == 0:
        raise ValueError("a difference of means needs documents on both sides")
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise ValueError("per-document values must be finite numbers")
    unit_of = None if ids is None else unit_index(np.concatenate([ids[on_first], ids[on_second]]))
    return first, second, unit_of


class _Contrast:
    """A difference of two groups' means as its interval and its test both see it: an estimate,
    its standard error and the reference law of (estimate - difference) / standard error
    (Student's t with ``df`` degrees of freedom, or the normal where ``df`` is None).

    Yes/no outcomes on both sides: Agresti & Caffo (2000), one yes and one no added to each
    side, then the normal law (their Wald interval holds from 3 documents a side; the plain
    one does not). Otherwise Welch (1947): unequal variances, Welch-Satterthwaite degrees of
    freedom (holds from 2 documents a side, skewed values included).

    With clusters (``unit_of``: each document's cluster, side 0's documents first; a cluster
    may hold documents of both sides) the variance is cluster-robust and the law Student's t
    with G - 1 degrees of freedom (G clusters): :meth:`_clustered`.
    """

    def __init__(self, first, second, unit_of=None):
        binary = _all_zero_or_one(first) and _all_zero_or_one(second)
        if binary:
            fewest, what = MIN_DOCUMENTS_AGRESTI_CAFFO, "the Agresti-Caffo interval of a gap of yes/no outcomes"
        else:
            fewest, what = MIN_DOCUMENTS_WELCH, "the Welch interval of a gap"
        if unit_of is not None:
            self._require_clusters(first, unit_of, binary)
        _require_documents(min(first.size, second.size), fewest, what)
        if unit_of is not None:
            self._clustered_estimate(first, second, unit_of, binary)
            return
        if binary:
            self.estimate, self.se = self._agresti_caffo(first, second)
            self.df = None
            return
        if not (_varies(first) or _varies(second)):
            raise ValueError("every document on each side has one value: a Welch interval needs them to vary")
        parts = [side.var(ddof=1) / side.size for side in (first, second)]
        self.estimate = float(first.mean() - second.mean())
        self.se = math.sqrt(parts[0] + parts[1])
        sides = (first, second)
        self.df = float((parts[0] + parts[1]) ** 2 / sum(part**2 / (side.size - 1) for part, side in zip(parts, sides)))

    @staticmethod
    def _agresti_caffo(first, second) -> tuple[float, float]:
        shares = [(side.sum() + 1.0) / (side.size + 2.0) for side in (first, second)]
        se = math.sqrt(sum(p * (1.0 - p) / (side.size + 2.0) for p, side in zip(shares, (first, second))))
        return float(shares[0] - shares[1]), se

    @staticmethod
    def _sparser_side_clusters(first, unit_of) -> int:
        """The clusters holding documents of the side that has fewer of them."""
        import numpy as np

        return min(np.unique(unit_of[: first.size]).size, np.unique(unit_of[first.size :]).size)

    def _require_clusters(self, first, unit_of, binary: bool) -> None:
        units = self._sparser_side_clusters(first, unit_of)
        if binary:
            what = "the clustered Agresti-Caffo interval of a gap of yes/no outcomes (clusters on each side)"
            require_clusters(units, MIN_CLUSTERS_BINARY_GAP, what)
        else:
            what = "the cluster-robust t interval of a gap (clusters on each side)"
            require_clusters(units, MIN_CLUSTERS_GAP, what)

    def _clustered_estimate(self, first, second, unit_of, binary: bool) -> None:
        """Each document's score is its residual (from its side's mean) over its side's documents,
        negated on side 1, so a cluster's score u_c = sum of side-0 residuals / n0 - sum of side-1
        residuals / n1 and the CR1 variance of the gap is G / (G - 1) * sum u_c^2. Yes/no outcomes
        keep Agresti-Caffo's estimate and standard error, times the square root of the design
        effect of the gap (at least 1): that variance over its value with one document a
        cluster."""
        import numpy as np

        scores = np.concatenate([(first - first.mean()) / first.size, (second.mean() - second) / second.size])
        clustered = robust_variance(scores, unit_of)
        self.df = float(self._sparser_side_clusters(first, unit_of) - 1)
        if binary:
            self.estimate, se = self._agresti_caffo(first, second)
            independent = robust_variance(scores, np.arange(scores.size))
            effect = clustered / independent if independent > 0 else 1.0
            self.se = se * math.sqrt(max(1.0, effect))
            return
        if not (_varies(first) or _varies(second)):
            raise ValueError("every document on each side has one value: a cluster-robust interval needs them to vary")
        if clustered <= 0:
            raise ValueError("the clusters' residuals cancel: a cluster-robust interval of a gap needs them to vary")
        self.estimate = float(first.mean() - second.mean())
        self.se = math.sqrt(clustered)

    def _law(self):
        from scipy.stats import norm, t

        return norm if self.df is None else t(self.df)

    def interval(self, confidence: float) -> tuple[float, float]:
        half = float(self._law().ppf(0.5 + 0.5 * confidence)) * self.se
        return self.estimate - half, self.estimate + half

    def pvalue(self) -> float:
        """Two-sided p-value of "the means are equal": below 1 - confidence exactly when
        :meth:`interval` excludes 0."""
        return float(min(1.0, 2.0 * self._law().sf(abs(self.estimate) / self.se)))


class _BettingContrast:
    """A difference of two groups' means of values of a known range, as the Bonferroni
    combination of each side's betting bounds (:func:`betting_gap_bounds`): its interval at
    confidence c is ``[L0 - U1, U0 - L1]``, each side's bounds one-sided at (1 - c) / 4, which
    all hold together with probability at least c at every number of documents or clusters.
    Bonferroni's inequality needs no independence, so it holds where clusters hold documents of
    both sides; but the units are formed per side (each side's documents of a cluster are one
    unit of that side), since a cluster is a unit of both.

    Its test (:meth:`pvalue`) is the one the interval inverts (:func:`bounded_means.gap_pvalues`).
    """

    def __init__(self, first, second, unit_of, value_range):
        self.value_range = value_range
        self.sides = [
            (side, None if unit_of is None else _reindexed(unit_of[where]))
            for side, where in ((first, slice(None, first.size)), (second, slice(first.size, None)))
        ]
        self.units = [betting_units(side, value_range, side_unit_of) for side, side_unit_of in self.sides]

    def interval(self, confidence: float) -> tuple[float, float]:
        (first, first_unit_of), (second, second_unit_of) = self.sides
        lower, upper = betting_gap_bounds(
            first, second, self.value_range, first_unit_of, second_unit_of, (1.0 - confidence) / 2.0
        )
        return float(lower[0]), float(upper[0])

    def pvalue(self) -> float:
        """Two-sided p-value of "the means are equal": below 1 - confidence exactly when
        :meth:`interval` excludes 0."""
        from lm_eval_bias.stats.bounded_means import gap_pvalues

        (first, first_bound), (second, second_bound) = self.units
        return float(gap_pvalues(first, first_bound, second, second_bound)[0])


def betting_gap_bounds(
    first, second, value_range, first_unit_of=None, second_unit_of=None, alpha: float = (1.0 - CONFIDENCE) / 2.0
):
    """Lower and upper betting bounds of mean(side 0) - mean(side 1), each one-sided at
    ``alpha``: ``L0 - U1`` and ``U0 - L1`` of the sides' :func:`betting_mean_bounds`, each at
    ``alpha / 2`` (Bonferroni), valid at every number of documents or clusters, whether or not
    the sides share clusters.

    Parameters
    ----------
    first, second : array-like, shape (n0,) or (rows, n0), and (n1,) or (rows, n1)
        Each side's per-document values, each in ``value_range``.
    value_range : (float, float)
        The range one document's value can take.
    first_unit_of, second_unit_of : numpy.ndarray, optional
        Each side's documents' clusters as 0 .. G_s-1 (a side's documents of one cluster are one
        unit of that side); None: independent documents.
    alpha : float, default 0.025
        Each bound's one-sided level.

    Returns
    -------
    lower, upper : numpy.ndarray, shape (rows,)

    Raises
    ------
    TypeError
        As :func:`betting_units`.
    """
    first_low, first_high = betting_mean_bounds(first, value_range, first_unit_of, alpha / 2.0)
    second_low, second_high = betting_mean_bounds(second, value_range, second_unit_of, alpha / 2.0)
    return first_low - second_high, first_high - second_low


def _reindexed(unit_of):
    """Clusters numbered 0 .. G-1 as they appear among some documents."""
    import numpy as np

    return np.unique(unit_of, return_inverse=True)[1].astype(np.intp)


def _contrast(first, second, unit_of=None, value_range=None):
    """The :class:`_Contrast` of two sides, or below its documents or clusters (or where it needs
    values that vary) with a ``value_range``, the :class:`_BettingContrast`."""
    return _or_betting(
        partial(_Contrast, first, second, unit_of),
        value_range,
        partial(_BettingContrast, first, second, unit_of, value_range),
    )


def difference_of_means(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: mean(side 0) - mean(side 1).

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last (left
        out: a point estimate); each side needs a document.

    Returns
    -------
    float
    """
    first, second, _ = _split_sides(values)
    return float(first.mean() - second.mean())


def difference_interval(
    values: Sequence[tuple[int, float]],
    confidence: float = CONFIDENCE,
    value_range: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Interval of mean(side 0) - mean(side 1): Agresti-Caffo when both sides are yes/no
    outcomes, Welch otherwise (:class:`_Contrast`); with cluster ids, their clustered forms. With
    a ``value_range``, where those are not shown, the Bonferroni combination of the two sides'
    betting bounds (:class:`_BettingContrast`). It excludes 0 exactly when
    ``significance.difference_pvalue`` (given the same ``value_range``) is below 1 - confidence.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1: at least 3 documents a side for yes/no
        outcomes (:data:`MIN_DOCUMENTS_AGRESTI_CAFFO`), 2 otherwise (:data:`MIN_DOCUMENTS_WELCH`);
        or ``(side, value, cluster)``, with also :data:`MIN_CLUSTERS_BINARY_GAP` (20) or
        :data:`MIN_CLUSTERS_GAP` (30) clusters holding each side's documents. With a
        ``value_range``, at least one document a side.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take (the values compared: (0, 1) for a toxicity gap).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smaller side) or "too few clusters (G = g) ..."
        (g: the side with fewer) below those numbers; or when neither side's values vary; each
        only without a ``value_range``.
    TypeError
        A value outside ``value_range`` (:func:`betting_units`), where the betting interval is
        given.
    """
    _check_confidence(confidence)
    return _contrast(*_split_sides(values), value_range).interval(confidence)


def difference_ci_lower(values: Sequence[tuple[int, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last.
    value_range : (float, float), optional
        The range one document's value can take (:func:`difference_interval`).

    Returns
    -------
    float
    """
    return difference_interval(values, value_range=value_range)[0]


def difference_ci_upper(values: Sequence[tuple[int, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last.
    value_range : (float, float), optional
        The range one document's value can take (:func:`difference_interval`).

    Returns
    -------
    float
    """
    return difference_interval(values, value_range=value_range)[1]


# --------------------------------------------------------------------------
# Several groups: range and spread of their means


def _groups(values: Sequence) -> tuple[list, list | None]:
    """Each group's values, groups in name order, and each group's cluster ids (None without);
    needs two groups and finite values."""
    import numpy as np

    rows, ids = split_cluster_ids(values, 2)
    by_group: dict[str, list[int]] = {}
    for position, (group, _) in enumerate(rows):
        by_group.setdefault(str(group), []).append(position)
    if len(by_group) < 2:
        raise ValueError("a range of group means needs at least two groups")
    numbers = np.asarray([float(value) for _, value in rows])
    positions = [np.asarray(by_group[name]) for name in sorted(by_group)]
    groups = [numbers[where] for where in positions]
    if not all(np.isfinite(group).all() for group in groups):
        raise ValueError("per-document values must be finite numbers")
    return groups, (None if ids is None else [ids[where] for where in positions])


def _means(groups):
    import numpy as np

    return np.asarray([group.mean() for group in groups])


def range_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the largest minus the smallest group mean.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.

    Returns
    -------
    float
    """
    means = _means(_groups(values)[0])
    return float(means.max() - means.min())


def spread_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the population standard deviation (ddof=0) of the group means,
    the disparity GenderCARE reports as sigma.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.

    Returns
    -------
    float
    """
    return float(_means(_groups(values)[0]).std())


def _pairwise_contrasts(groups, group_ids=None, value_range=None) -> list:
    """Every pair of groups' contrast (:func:`_contrast`: with a ``value_range``, a betting one
    where the other cannot be shown), clustered where ``group_ids`` gives each group's cluster
    ids; groups of yes/no outcomes need :data:`MIN_DOCUMENTS_BINARY_RANGE` documents each
    (Agresti-Caffo at a Bonferroni level falls to 92% coverage at 10 documents a group over
    five groups), below which every pair's contrast is a betting one with a ``value_range``."""
    import itertools

    import numpy as np

    pairs = list(itertools.combinations(range(len(groups)), 2))

    def unit_of(i, j):
        return None if group_ids is None else unit_index(np.concatenate([group_ids[i], group_ids[j]]))

    def sharp():
        if all(_all_zero_or_one(group) for group in groups):
            _require_documents(
                min(group.size for group in groups),
                MIN_DOCUMENTS_BINARY_RANGE,
                "the Bonferroni interval of a range or spread of yes/no outcome means",
            )
        return [_contrast(groups[i], groups[j], unit_of(i, j), value_range) for i, j in pairs]

    def betting():
        return [_BettingContrast(groups[i], groups[j], unit_of(i, j), value_range) for i, j in pairs]

    return _or_betting(sharp, value_range, betting)


def _pairwise_distance_bounds(values, confidence: float, value_range=None):
    """Bounds on each pair's |mean difference|, all holding together with probability at least
    ``confidence`` (Bonferroni: each pair's interval at 1 - (1 - confidence) / pairs)."""
    import numpy as np

    _check_confidence(confidence)
    groups, group_ids = _groups(values)
    contrasts = _pairwise_contrasts(groups, group_ids, value_range)
    pair_confidence = 1.0 - (1.0 - confidence) / len(contrasts)
    bounds = np.asarray([contrast.interval(pair_confidence) for contrast in contrasts])
    excludes_zero = (bounds[:, 0] > 0) | (bounds[:, 1] < 0)
    nearest = np.where(excludes_zero, np.abs(bounds).min(axis=1), 0.0)
    farthest = np.abs(bounds).max(axis=1)
    return nearest, farthest, len(groups)


def range_interval(
    values: Sequence[tuple[str, float]],
    confidence: float = CONFIDENCE,
    value_range: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Interval of the range of group means, from simultaneous (Bonferroni) intervals of every
    pair's difference (:class:`_Contrast` at 1 - 0.05 / pairs): the range is the largest
    |difference|, so it lies between the largest lower and the largest upper bound of the
    |differences| whenever all of them hold. With a ``value_range``, a pair whose interval is
    not shown gets the betting one (:class:`_BettingContrast`), and every pair does where all
    groups are yes/no outcomes of fewer than :data:`MIN_DOCUMENTS_BINARY_RANGE` documents. Its
    lower bound is above 0 exactly when ``significance.range_pvalue`` (given the same
    ``value_range``) is below 1 - confidence.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last (then each pair's
        gap needs its clusters, as :func:`difference_interval`); at least two groups, each of at
        least 2 documents (3 where both groups of a pair are yes/no outcomes, 30 where every
        group's are: :data:`MIN_DOCUMENTS_BINARY_RANGE`); with a ``value_range``, of one.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take (the values compared).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smallest group) below those numbers; or when
        the documents cannot support the interval (see the parameters); each only without a
        ``value_range``.
    TypeError
        A value outside ``value_range`` (:func:`betting_units`), where a betting interval is
        given.
    """
    nearest, farthest, _ = _pairwise_distance_bounds(values, confidence, value_range)
    return float(nearest.max()), float(farthest.max())


def range_ci_lower(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`range_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return range_interval(values, value_range=value_range)[0]


def range_ci_upper(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`range_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return range_interval(values, value_range=value_range)[1]


def spread_interval(
    values: Sequence[tuple[str, float]],
    confidence: float = CONFIDENCE,
    value_range: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Interval of the spread (population sd) of k group means, from the same simultaneous
    pairwise intervals as :func:`range_interval`: the spread is sqrt(sum over pairs of
    difference^2) / k, bounded by the pairs' nearest and farthest |differences| (conservative:
    the differences' own constraints are not used). Its lower bound is above 0 exactly when
    the range's is.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; as :func:`range_interval`.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take (as :func:`range_interval`).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        As :func:`range_interval`.
    """
    import numpy as np

    nearest, farthest, k = _pairwise_distance_bounds(values, confidence, value_range)
    return float(np.sqrt((nearest**2).sum()) / k), float(np.sqrt((farthest**2).sum()) / k)


def spread_ci_lower(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`spread_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return spread_interval(values, value_range=value_range)[0]


def spread_ci_upper(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`spread_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return spread_interval(values, value_range=value_range)[1]


# --------------------------------------------------------------------------
# Correlation


def pearson_interval(
    x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """Pearson's r with its Fisher-z confidence interval (``scipy.stats.pearsonr``).

    Parameters
    ----------
    x, y : sequence of float
        Equally long, at least 4 numbers each (the interval's standard error is 1/sqrt(n - 3)),
        neither constant.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float, float)
        ``(r, lower, upper)``.
    """
    import numpy as np
    from scipy.stats import pearsonr

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 4:
        raise ValueError("a correlation interval needs two equally long lists of at least 4 numbers")
    if a.std() <= 1e-12 * max(1.0, abs(a).max()) or b.std() <= 1e-12 * max(1.0, abs(b).max()):
        raise ValueError("a correlation is undefined when one list is constant")
    result = pearsonr(a, b)
    interval = result.confidence_interval(confidence_level=confidence)
    return float(result.statistic), float(interval.low), float(interval.high)


# --------------------------------------------------------------------------
# Choices


def top_choices(scores: Sequence[float]) -> list[int]:
    """The positions of the highest score, several when it is tied.

    A verdict from scores must not fall to whichever tied choice comes first (a backend that
    returns equal log-likelihoods would then always "choose" the first option).

    Parameters
    ----------
    scores : sequence of float
        One score per choice, at least one.

    Returns
    -------
    list of int
        The positions of the highest score, in order.
    """
    best = max(scores)
    return [index for index, score in enumerate(scores) if score == best]
