"""Intervals of means and of differences, ranges and spreads of group means, each chosen to hold
its 95% level at the number of documents it is shown for; and Pearson's r.

Every interval here was checked by simulation (``tests/test_interval_coverage.py``: skewed and
symmetric values in [0, 1], shares of several samples, yes/no outcomes at p = 0.1 to 0.9, two
to five groups, 2 to 100 documents per group): it covers the true value in at least 93% of
draws wherever it is returned. Below the documents an interval needs it raises ``ValueError``
with a message starting "too few documents (n = N)" (the task reports ``N/A`` with it).

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

A gap's interval and its p-value (``significance.difference_pvalue``) come from one
estimate, standard error and reference law, so an interval excludes 0 exactly when p < 0.05;
a range's lower bound is above 0 exactly when ``significance.range_pvalue`` < 0.05.

References: Clopper & Pearson (1934), Biometrika 26:404; Efron & Tibshirani (1993), *An
Introduction to the Bootstrap*, ch. 12 (bootstrap-t), and Hall (1988), Ann. Stat. 16:927 (its
second-order accuracy, which follows skewed values); Welch (1947), Biometrika 34:28; Agresti &
Caffo (2000), Am. Stat. 54:280.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def _count_percent_outcomes(values: Sequence[float]) -> tuple[int, int]:
    """(successes, n) from per-document outcomes coded 100 (yes) or 0 (no)."""
    import numpy as np

    array = np.asarray(values, dtype=float)
    wrong = array[(array != 0) & (array != 100)]
    if wrong.size:
        raise ValueError(f"expected per-document outcomes of 0 or 100, got {wrong[0]!r}")
    return int(np.count_nonzero(array)), int(array.size)


def exact_lower_pct(values: Sequence[float]) -> float:
    """lm-eval aggregation: the lower 95% Clopper-Pearson bound of outcomes coded 0/100, in percent.

    Parameters
    ----------
    values : sequence of float
        Per-document outcomes coded 100 (yes) or 0 (no), as lm-eval passes one metric's values.

    Returns
    -------
    float
        The bound in percent.
    """
    return 100.0 * clopper_pearson_interval(*_count_percent_outcomes(values))[0]


def exact_upper_pct(values: Sequence[float]) -> float:
    """lm-eval aggregation: the upper 95% Clopper-Pearson bound of outcomes coded 0/100, in percent.

    Parameters
    ----------
    values : sequence of float
        Per-document outcomes coded 100 (yes) or 0 (no), as lm-eval passes one metric's values.

    Returns
    -------
    float
        The bound in percent.
    """
    return 100.0 * clopper_pearson_interval(*_count_percent_outcomes(values))[1]


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


def bootstrap_mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Studentized bootstrap (bootstrap-t) interval of the mean: documents resampled with
    replacement :data:`BOOTSTRAP_RESAMPLES` times, seeded; the quantiles of the resamples'
    t statistics (mean - sample mean) / (sd / sqrt(n)) replace Student's (Efron & Tibshirani
    1993, ch. 12), which follows skewed values where the percentile bootstrap (85% coverage
    at 5 documents, 92% at 30) and Student's t (91% at 30 documents of Beta(0.3, 3) values)
    do not. From 30 documents it held 94.6% or more for toxicity-like Beta(0.1, 5) to
    Beta(0.3, 3) values, shares of 10 samples with means 0.05 to 0.9, and 1-5 ratings.

    Parameters
    ----------
    values : sequence of float
        Per-document values (e.g. 1-5 ratings), finite, not all equal, at least
        :data:`MIN_DOCUMENTS_BOOTSTRAP_T` (30).
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." below 30 documents (where the simulation found it
        below its level for skewed values), or when so many resamples repeat one value that a
        bound is infinite; or when the values cannot support it (see the parameters).
    """
    import numpy as np

    _check_confidence(confidence)
    array = _as_array(values)
    n = array.size
    what = "the bootstrap-t interval of a mean"
    _require_documents(n, MIN_DOCUMENTS_BOOTSTRAP_T, what)
    _require_spread(array)
    mean, scale = float(array.mean()), float(array.std(ddof=1)) / math.sqrt(n)
    means, variances = _resampled_moments(array, 0)
    # a resample of one repeated value has no spread: its t is infinite (signed by its mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        studentized = np.where(variances > 0, (means - mean) / np.sqrt(variances / n), np.sign(means - mean) * np.inf)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(studentized, [tail, 1.0 - tail], method="inverted_cdf")
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(
            f"too few documents (n = {n}): {what} is unbounded when over {tail:.1%} of resamples repeat one value"
        )
    return mean - float(high) * scale, mean - float(low) * scale


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of a mean of per-document values.

    Every value 0 or 1 (one yes/no outcome per document): Clopper-Pearson, from one document.
    Otherwise (e.g. the share of a document's several samples, a toxicity score):
    :func:`bootstrap_mean_interval`, from 30 documents; it resamples documents, which respects
    that samples of one prompt are correlated.

    Parameters
    ----------
    values : sequence of float
        Per-document values, at least one.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." under 30 documents of values not all 0 or 1; or when
        the documents cannot support the interval (see the functions above).
    """
    array = _as_array(values)
    if _all_zero_or_one(array):
        return clopper_pearson_interval(int(array.sum()), int(array.size), confidence)
    return bootstrap_mean_interval(array, confidence)


def _all_zero_or_one(array) -> bool:
    return bool(((array == 0) | (array == 1)).all())


def ci_lower(values: Sequence[float]) -> float:
    """lm-eval aggregation: the lower 95% bound of the mean (:func:`mean_interval`).

    Parameters
    ----------
    values : sequence of float
        Per-document values.

    Returns
    -------
    float
    """
    return mean_interval(values)[0]


def ci_upper(values: Sequence[float]) -> float:
    """lm-eval aggregation: the upper 95% bound of the mean (:func:`mean_interval`).

    Parameters
    ----------
    values : sequence of float
        Per-document values.

    Returns
    -------
    float
    """
    return mean_interval(values)[1]


# --------------------------------------------------------------------------
# Differences of two groups' means: one estimate, standard error and law for interval and test


def _split_sides(values: Sequence[tuple[int, float]]):
    import numpy as np

    pairs = np.asarray(values, dtype=float).reshape(-1, 2)
    first, second = pairs[pairs[:, 0] == 0, 1], pairs[pairs[:, 0] == 1, 1]
    if first.size == 0 or second.size == 0:
        raise ValueError("a difference of means needs documents on both sides")
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise ValueError("per-document values must be finite numbers")
    return first, second


class _Contrast:
    """A difference of two groups' means as its interval and its test both see it: an estimate,
    its standard error and the reference law of (estimate - difference) / standard error
    (Student's t with ``df`` degrees of freedom, or the normal where ``df`` is None).

    Yes/no outcomes on both sides: Agresti & Caffo (2000), one yes and one no added to each
    side, then the normal law (their Wald interval holds from 3 documents a side; the plain
    one does not). Otherwise Welch (1947): unequal variances, Welch-Satterthwaite degrees of
    freedom (holds from 2 documents a side, skewed values included).
    """

    def __init__(self, first, second):
        if _all_zero_or_one(first) and _all_zero_or_one(second):
            fewest, what = MIN_DOCUMENTS_AGRESTI_CAFFO, "the Agresti-Caffo interval of a gap of yes/no outcomes"
        else:
            fewest, what = MIN_DOCUMENTS_WELCH, "the Welch interval of a gap"
        _require_documents(min(first.size, second.size), fewest, what)
        if fewest == MIN_DOCUMENTS_AGRESTI_CAFFO:
            shares = [(side.sum() + 1.0) / (side.size + 2.0) for side in (first, second)]
            self.estimate = float(shares[0] - shares[1])
            self.se = math.sqrt(sum(p * (1.0 - p) / (side.size + 2.0) for p, side in zip(shares, (first, second))))
            self.df = None
            return
        if not (_varies(first) or _varies(second)):
            raise ValueError("every document on each side has one value: a Welch interval needs them to vary")
        parts = [side.var(ddof=1) / side.size for side in (first, second)]
        self.estimate = float(first.mean() - second.mean())
        self.se = math.sqrt(parts[0] + parts[1])
        sides = (first, second)
        self.df = float((parts[0] + parts[1]) ** 2 / sum(part**2 / (side.size - 1) for part, side in zip(parts, sides)))

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


def difference_of_means(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: mean(side 0) - mean(side 1).

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1; each side needs a document.

    Returns
    -------
    float
    """
    first, second = _split_sides(values)
    return float(first.mean() - second.mean())


def difference_interval(values: Sequence[tuple[int, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of mean(side 0) - mean(side 1): Agresti-Caffo when both sides are yes/no
    outcomes, Welch otherwise (:class:`_Contrast`); it excludes 0 exactly when
    ``significance.difference_pvalue`` is below 1 - confidence.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1: at least 3 documents a side for yes/no
        outcomes (:data:`MIN_DOCUMENTS_AGRESTI_CAFFO`), 2 otherwise (:data:`MIN_DOCUMENTS_WELCH`).
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smaller side) below those numbers; or when
        neither side's values vary.
    """
    _check_confidence(confidence)
    return _Contrast(*_split_sides(values)).interval(confidence)


def difference_ci_lower(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1.

    Returns
    -------
    float
    """
    return difference_interval(values)[0]


def difference_ci_upper(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1.

    Returns
    -------
    float
    """
    return difference_interval(values)[1]


# --------------------------------------------------------------------------
# Several groups: range and spread of their means


def _groups(values: Sequence[tuple[str, float]]) -> list:
    """Each group's values, groups in name order; needs two groups and finite values."""
    import numpy as np

    by_group: dict[str, list[float]] = {}
    for group, value in values:
        by_group.setdefault(str(group), []).append(float(value))
    if len(by_group) < 2:
        raise ValueError("a range of group means needs at least two groups")
    groups = [np.asarray(by_group[name]) for name in sorted(by_group)]
    if not all(np.isfinite(group).all() for group in groups):
        raise ValueError("per-document values must be finite numbers")
    return groups


def _means(groups):
    import numpy as np

    return np.asarray([group.mean() for group in groups])


def range_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the largest minus the smallest group mean.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.

    Returns
    -------
    float
    """
    means = _means(_groups(values))
    return float(means.max() - means.min())


def spread_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the population standard deviation (ddof=0) of the group means,
    the disparity GenderCARE reports as sigma.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.

    Returns
    -------
    float
    """
    return float(_means(_groups(values)).std())


def _pairwise_contrasts(groups) -> list[_Contrast]:
    """Every pair of groups' :class:`_Contrast`; groups of yes/no outcomes need
    :data:`MIN_DOCUMENTS_BINARY_RANGE` documents each (Agresti-Caffo at a Bonferroni level
    falls to 92% coverage at 10 documents a group over five groups)."""
    import itertools

    if all(_all_zero_or_one(group) for group in groups):
        _require_documents(
            min(group.size for group in groups),
            MIN_DOCUMENTS_BINARY_RANGE,
            "the Bonferroni interval of a range or spread of yes/no outcome means",
        )
    return [_Contrast(first, second) for first, second in itertools.combinations(groups, 2)]


def _pairwise_distance_bounds(values, confidence: float):
    """Bounds on each pair's |mean difference|, all holding together with probability at least
    ``confidence`` (Bonferroni: each pair's interval at 1 - (1 - confidence) / pairs)."""
    import numpy as np

    _check_confidence(confidence)
    groups = _groups(values)
    contrasts = _pairwise_contrasts(groups)
    pair_confidence = 1.0 - (1.0 - confidence) / len(contrasts)
    bounds = np.asarray([contrast.interval(pair_confidence) for contrast in contrasts])
    excludes_zero = (bounds[:, 0] > 0) | (bounds[:, 1] < 0)
    nearest = np.where(excludes_zero, np.abs(bounds).min(axis=1), 0.0)
    farthest = np.abs(bounds).max(axis=1)
    return nearest, farthest, len(groups)


def range_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of the range of group means, from simultaneous (Bonferroni) intervals of every
    pair's difference (:class:`_Contrast` at 1 - 0.05 / pairs): the range is the largest
    |difference|, so it lies between the largest lower and the largest upper bound of the
    |differences| whenever all of them hold. Its lower bound is above 0 exactly when
    ``significance.range_pvalue`` is below 1 - confidence.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups, each of at least 2 documents
        (3 where both groups of a pair are yes/no outcomes, 30 where every group's are:
        :data:`MIN_DOCUMENTS_BINARY_RANGE`).
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smallest group) below those numbers; or when
        the documents cannot support the interval (see the parameters).
    """
    nearest, farthest, _ = _pairwise_distance_bounds(values, confidence)
    return float(nearest.max()), float(farthest.max())


def range_ci_lower(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`range_interval`.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.

    Returns
    -------
    float
    """
    return range_interval(values)[0]


def range_ci_upper(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`range_interval`.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.

    Returns
    -------
    float
    """
    return range_interval(values)[1]


def spread_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of the spread (population sd) of k group means, from the same simultaneous
    pairwise intervals as :func:`range_interval`: the spread is sqrt(sum over pairs of
    difference^2) / k, bounded by the pairs' nearest and farthest |differences| (conservative:
    the differences' own constraints are not used). Its lower bound is above 0 exactly when
    the range's is.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; as :func:`range_interval`.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

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

    nearest, farthest, k = _pairwise_distance_bounds(values, confidence)
    return float(np.sqrt((nearest**2).sum()) / k), float(np.sqrt((farthest**2).sum()) / k)


def spread_ci_lower(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`spread_interval`.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.

    Returns
    -------
    float
    """
    return spread_interval(values)[0]


def spread_ci_upper(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`spread_interval`.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.

    Returns
    -------
    float
    """
    return spread_interval(values)[1]


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
