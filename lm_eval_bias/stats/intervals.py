"""Intervals of means and of differences, ranges and spreads of group means: the Wilson
interval for yes/no outcomes, a seeded percentile bootstrap otherwise; and Pearson's r."""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
SEED = 1234
# A bootstrap of up to this many cells (resamples x documents) is one matrix product of
# resampling counts with the values (16 MB at most); more documents are resampled in batches of
# RESAMPLING_BATCH_CELLS draws, as are Monte Carlo permutation tests' relabellings.
COUNT_MATRIX_CELLS = 2_000_000
RESAMPLING_BATCH_CELLS = 20_000_000
# Values with at most one distinct value per this many documents are resampled by their counts.
FEW_LEVELS_PER_DOCUMENT = 4


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


# --------------------------------------------------------------------------
# Proportions


def wilson_interval(successes: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion, as scipy computes it (``_wilson``).

    Preferred over the normal (Wald) interval because it stays inside [0, 1] and keeps its
    coverage for proportions near 0 or 1 and for small subgroups, which WinoQueer has (a
    model scoring 100 on a subgroup still gets an interval of non-zero width).

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
    """
    _check_confidence(confidence)
    if n <= 0:
        raise ValueError(f"a proportion needs at least one observation, got n={n}")
    if not 0 <= successes <= n or successes != int(successes):
        raise ValueError(f"successes must be a whole number in [0, n={n}], got {successes!r}")
    return _wilson(int(successes), int(n), float(confidence))


def _wilson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """The interval of ``scipy.stats.binomtest(successes, n).proportion_ci(confidence,
    "wilson")`` (Newcombe 1998), term for term, so the same floats (a test compares them on a
    grid). Not scipy's call itself: scipy gives the interval only on a test result, and
    ``binomtest`` first computes the exact two-sided p-value, which costs about 1 ms, 300 times
    the interval (a task asks for dozens)."""
    from scipy.special import ndtri

    p = successes / n
    z = ndtri(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    lower = 0.0 if successes == 0 else float(center - delta)
    upper = 1.0 if successes == n else float(center + delta)
    return lower, upper


def _count_percent_outcomes(values: Sequence[float]) -> tuple[int, int]:
    """(successes, n) from per-document outcomes coded 100 (yes) or 0 (no)."""
    successes = 0
    for value in values:
        if value == 100:
            successes += 1
        elif value != 0:
            raise ValueError(f"expected per-document outcomes of 0 or 100, got {value!r}")
    return successes, len(values)


def wilson_lower_pct(values: Sequence[float]) -> float:
    """lm-eval aggregation: the lower 95% Wilson bound of outcomes coded 0/100, in percent.

    Parameters
    ----------
    values : sequence of float
        Per-document outcomes coded 100 (yes) or 0 (no), as lm-eval passes one metric's values.

    Returns
    -------
    float
        The bound in percent.
    """
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[0]


def wilson_upper_pct(values: Sequence[float]) -> float:
    """lm-eval aggregation: the upper 95% Wilson bound of outcomes coded 0/100, in percent.

    Parameters
    ----------
    values : sequence of float
        Per-document outcomes coded 100 (yes) or 0 (no), as lm-eval passes one metric's values.

    Returns
    -------
    float
        The bound in percent.
    """
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[1]


# --------------------------------------------------------------------------
# The percentile bootstrap


def _as_array(values: Sequence[float]):
    import numpy as np

    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("an interval needs at least one per-document value")
    if not np.isfinite(array).all():
        raise ValueError("per-document values must be finite numbers")
    return array


def _resampling_counts(n: int, stream: int, resamples: int, seed: int):
    """How often each of ``n`` documents is drawn in each resample: a ``(resamples, n)`` matrix.

    ``stream`` gives each group of a grouped statistic its own independent draws; the same
    ``n`` and ``stream`` always give the same resamples, so both bounds of an interval (asked
    for apart) and every metric over the same documents are computed on the same resamples.
    """
    import numpy as np

    draws = np.random.default_rng([seed, stream]).integers(0, n, size=(resamples, n))
    cells = (draws + n * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(cells, minlength=resamples * n).reshape(resamples, n).astype(float)
    return counts


def _resampled_means(values, stream: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED):
    """The mean of ``values`` in each of ``resamples`` bootstrap resamples (documents drawn with
    replacement), from the shared resampling counts; very many documents are resampled in
    batches instead, from the same draws."""
    import numpy as np

    n = values.size
    levels, level_counts = np.unique(values, return_counts=True)
    if levels.size * FEW_LEVELS_PER_DOCUMENT <= n:
        # Resampling n documents draws each distinct value a multinomial number of times, so
        # the resampled means are drawn from that law directly: the same bootstrap distribution
        # at the cost of the distinct values, not the documents (yes/no outcomes, shares of 10
        # samples, 1-5 ratings).
        draws = np.random.default_rng([seed, stream]).multinomial(n, level_counts / n, size=resamples)
        return draws @ levels / n
    if resamples * n <= COUNT_MATRIX_CELLS:
        return _resampling_counts(n, stream, resamples, seed) @ values / n
    rng = np.random.default_rng([seed, stream])
    batch = max(1, RESAMPLING_BATCH_CELLS // n)
    means = np.empty(resamples)
    for start in range(0, resamples, batch):
        stop = min(start + batch, resamples)
        means[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return means


def _percentile_interval(draws, confidence: float) -> tuple[float, float]:
    import numpy as np

    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean: documents resampled with replacement,
    :data:`BOOTSTRAP_RESAMPLES` times, seeded.

    Parameters
    ----------
    values : sequence of float
        Per-document values, finite, at least one.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        When the documents cannot support the interval (see the parameters).
    """
    array = _as_array(values)
    return _percentile_interval(_resampled_means(array, 0), confidence)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of a mean of per-document values in [0, 1].

    Every value 0 or 1 (one yes/no outcome per document): Wilson. Otherwise (e.g. the share
    of a document's several samples): percentile bootstrap over documents, which respects
    that samples of one prompt are correlated.

    Parameters
    ----------
    values : sequence of float
        Per-document values in [0, 1], at least one.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        When the documents cannot support the interval (see the parameters).
    """
    array = _as_array(values)
    if ((array == 0) | (array == 1)).all():
        return wilson_interval(int(array.sum()), int(array.size), confidence)
    return bootstrap_mean_interval(array, confidence)


def ci_lower(values: Sequence[float]) -> float:
    """lm-eval aggregation: the lower 95% bound of the mean (:func:`mean_interval`).

    Parameters
    ----------
    values : sequence of float
        Per-document values in [0, 1].

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
        Per-document values in [0, 1].

    Returns
    -------
    float
    """
    return mean_interval(values)[1]


# --------------------------------------------------------------------------
# Differences of two groups' means


def _split_sides(values: Sequence[tuple[int, float]]):
    import numpy as np

    first = np.asarray([v for side, v in values if side == 0], dtype=float)
    second = np.asarray([v for side, v in values if side == 1], dtype=float)
    if first.size == 0 or second.size == 0:
        raise ValueError("a difference of means needs documents on both sides")
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise ValueError("per-document values must be finite numbers")
    return first, second


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
    """Percentile bootstrap interval of mean(side 0) - mean(side 1), each side resampled
    on its own.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1; each side needs a document.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        When the documents cannot support the interval (see the parameters).
    """
    first, second = _split_sides(values)
    return _percentile_interval(_resampled_means(first, 1) - _resampled_means(second, 2), confidence)


def difference_ci_lower(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1; each side needs a document.

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
        Per-document ``(side, value)``, side 0 or 1; each side needs a document.

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


def _means(groups, axis=-1):
    import numpy as np

    return np.stack([group.mean(axis=axis) for group in groups], axis=-1)


def _range_of(means):
    return means.max(axis=-1) - means.min(axis=-1)


def _spread_of(means):
    return means.std(axis=-1)


def _range_statistic(*groups, axis=-1):
    return _range_of(_means(groups, axis))


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
    return float(_range_of(_means(_groups(values))))


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
    return float(_spread_of(_means(_groups(values))))


def _group_bootstrap(values, of_means, confidence: float) -> tuple[float, float]:
    """Percentile bootstrap interval of ``of_means(group means)``, documents resampled within
    each group (each group its own draws)."""
    import numpy as np

    groups = _groups(values)
    means = np.stack([_resampled_means(group, stream) for stream, group in enumerate(groups, start=1)], axis=-1)
    return _percentile_interval(of_means(means), confidence)


def range_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of the range of group means (documents resampled
    within each group, each group its own draws).

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        When the documents cannot support the interval (see the parameters).
    """
    return _group_bootstrap(values, _range_of, confidence)


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
    """Percentile bootstrap interval of the spread of group means (documents resampled
    within each group, each group its own draws).

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        When the documents cannot support the interval (see the parameters).
    """
    return _group_bootstrap(values, _spread_of, confidence)


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
