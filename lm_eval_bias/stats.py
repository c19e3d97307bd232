"""Intervals, tests and corrections shared by every benchmark, on scipy.

Pure functions: numbers in, numbers out. Most are lm-eval aggregations (``aggregation:
!function ...`` in a task's ``metric_list``, or chosen by a metric's name in
``harness.aggregation_for``): lm-eval calls them with the list of per-document values of
one metric.

scipy does the statistics where it has them: the exact sign test (``binomtest``; the Wilson
interval is its formula written out, see ``_wilson``), Benjamini-Hochberg
(``false_discovery_control``), Pearson's r and its Fisher-z interval (``pearsonr``), exact
permutation tests (``permutation_test``, which enumerates every relabelling; ``hypergeom`` for
two groups of yes/no outcomes). Monte Carlo permutation tests draw their relabellings as one
matrix, with scipy's definitions (scipy draws one permutation at a time). The percentile
bootstrap is ours: lm-eval asks for each bound of each metric in a separate call, and the
resamples are seeded by the number of documents and the group's position, so that both bounds
come from the same resamples (``scipy.stats.bootstrap`` would draw others for each); they are a
matrix product of resampling counts with the values.

lm-eval computes a standard error itself only for its built-in ``mean`` aggregation, so
each proportion is reported as three metrics: the ``mean`` (with lm-eval's closed-form
standard error) and the two interval bounds below. Every statistic that the documents
cannot support raises ``ValueError`` (``harness`` reports it as ``N/A``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
PERMUTATIONS = 2000
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
    """Wilson score interval for a binomial proportion (scipy's, see ``_wilson``).

    Preferred over the normal (Wald) interval because it stays inside [0, 1] and keeps its
    coverage for proportions near 0 or 1 and for small subgroups, which WinoQueer has (a
    model scoring 100 on a subgroup still gets an interval of non-zero width).

    Returns ``(lower, upper)`` as proportions in [0, 1].
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
    """Lower 95% Wilson bound, in percent, of outcomes coded 0/100."""
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[0]


def wilson_upper_pct(values: Sequence[float]) -> float:
    """Upper 95% Wilson bound, in percent, of outcomes coded 0/100."""
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
    """Percentile bootstrap interval of the mean (documents resampled, fixed seed)."""
    array = _as_array(values)
    return _percentile_interval(_resampled_means(array, 0), confidence)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of a mean of per-document values in [0, 1].

    Every value 0 or 1 (one yes/no outcome per document): Wilson. Otherwise (e.g. the share
    of a document's several samples): percentile bootstrap over documents, which respects
    that samples of one prompt are correlated.
    """
    array = _as_array(values)
    if ((array == 0) | (array == 1)).all():
        return wilson_interval(int(array.sum()), int(array.size), confidence)
    return bootstrap_mean_interval(array, confidence)


def ci_lower(values: Sequence[float]) -> float:
    """lm-eval aggregation: lower 95% bound of the mean (see ``mean_interval``)."""
    return mean_interval(values)[0]


def ci_upper(values: Sequence[float]) -> float:
    """lm-eval aggregation: upper 95% bound of the mean (see ``mean_interval``)."""
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
    """lm-eval aggregation over per-document ``(side, value)``: mean(side 0) - mean(side 1)."""
    first, second = _split_sides(values)
    return float(first.mean() - second.mean())


def difference_interval(values: Sequence[tuple[int, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(side 0) - mean(side 1), each side resampled."""
    first, second = _split_sides(values)
    return _percentile_interval(_resampled_means(first, 1) - _resampled_means(second, 2), confidence)


def difference_ci_lower(values: Sequence[tuple[int, float]]) -> float:
    return difference_interval(values)[0]


def difference_ci_upper(values: Sequence[tuple[int, float]]) -> float:
    return difference_interval(values)[1]


# --------------------------------------------------------------------------
# Permutation tests (scipy.stats.permutation_test)


def _permutation_pvalue(samples: list, statistic, alternative: str) -> float:
    """p-value of ``statistic`` (vectorised over its last axis) under random relabelling of the
    documents among ``samples``: scipy's ``permutation_test`` enumerates every relabelling when
    there are at most :data:`PERMUTATIONS` of them; otherwise that many are drawn (seeded) by
    :func:`_monte_carlo_pvalue`."""
    from scipy.stats import permutation_test

    if min(sample.size for sample in samples) < 2:
        raise ValueError("a permutation test needs at least two documents in each group")
    sizes = [sample.size for sample in samples]
    relabellings = math.prod(math.comb(sum(sizes[: i + 1]), sizes[i]) for i in range(1, len(sizes)))
    if relabellings > PERMUTATIONS:
        return _monte_carlo_pvalue(samples, statistic, alternative)
    result = permutation_test(
        samples,
        statistic,
        permutation_type="independent",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        alternative=alternative,
    )
    return float(result.pvalue)


def _monte_carlo_pvalue(samples: list, statistic, alternative: str, seed: int = SEED) -> float:
    """``scipy.stats.permutation_test``'s Monte Carlo p-value (the same comparison tolerance,
    the +1 in numerator and denominator, two-sided as twice the smaller tail), with the
    relabellings drawn as one matrix: scipy draws them one ``rng.permutation`` at a time in a
    Python loop, which cost 7 ms per test here (a task has dozens of tests)."""
    import numpy as np

    pooled = np.concatenate(samples)
    cuts = np.cumsum([sample.size for sample in samples])[:-1]
    observed = statistic(*samples, axis=-1)
    null = np.concatenate(
        [
            statistic(*np.split(pooled[positions], cuts, axis=1), axis=-1)
            for positions in _relabellings(pooled.size, seed)
        ]
    )
    tolerance = abs(observed) * np.finfo(float).eps * 100  # scipy's, for rounding in the statistic
    at_least = (np.count_nonzero(null >= observed - tolerance) + 1) / (PERMUTATIONS + 1)
    at_most = (np.count_nonzero(null <= observed + tolerance) + 1) / (PERMUTATIONS + 1)
    if alternative == "greater":
        return float(at_least)
    if alternative == "less":
        return float(at_most)
    return float(min(1.0, 2.0 * min(at_least, at_most)))


def _relabellings(size: int, seed: int):
    """The :data:`PERMUTATIONS` relabellings of ``size`` pooled documents that a Monte Carlo
    permutation test draws, as rows of positions into the pooled values, in batches of at most
    :data:`RESAMPLING_BATCH_CELLS` cells.

    Shuffling positions and reading the values at them gives exactly the shuffled values (a
    shuffle's draws depend on the length alone), in int32 where the positions fit: half the
    memory of the pooled values.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    positions = np.arange(size, dtype=np.int64 if size > np.iinfo(np.int32).max else np.int32)
    batch = max(1, RESAMPLING_BATCH_CELLS // size)
    for start in range(0, PERMUTATIONS, batch):
        yield rng.permuted(np.tile(positions, (min(batch, PERMUTATIONS - start), 1)), axis=1)


def _difference_statistic(first, second, axis=-1):
    return first.mean(axis=axis) - second.mean(axis=axis)


def difference_pvalue(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: two-sided permutation p-value of mean(side 0) - mean(side 1)
    (exact for yes/no values: :func:`binary_difference_pvalue`)."""
    first, second = _split_sides(values)
    if _all_zero_or_one(first) and _all_zero_or_one(second) and min(first.size, second.size) >= 2:
        return binary_difference_pvalue(first, second)
    return _permutation_pvalue([first, second], _difference_statistic, "two-sided")


def _all_zero_or_one(array) -> bool:
    return bool(((array == 0) | (array == 1)).all())


def binary_difference_pvalue(first, second) -> float:
    """The exact two-sided permutation p-value of mean(first) - mean(second) for 0/1 values.

    Relabelling the documents keeps the number of ones, so the ones that land in ``first``
    follow a hypergeometric law, and the difference of means grows with them: the permutation
    distribution is that law, with no relabelling to enumerate or draw. Two-sided as
    ``scipy.stats.permutation_test`` defines it (twice the smaller tail, at most 1), so this is
    the value its exact enumeration gives and its Monte Carlo estimates.
    """
    from scipy.stats import hypergeom

    ones_first = int(first.sum())
    law = hypergeom(first.size + second.size, ones_first + int(second.sum()), first.size)
    at_least, at_most = law.sf(ones_first - 1), law.cdf(ones_first)
    return float(min(1.0, 2.0 * min(at_least, at_most)))


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
    """lm-eval aggregation over per-document ``(group, value)``: max minus min group mean."""
    return float(_range_of(_means(_groups(values))))


def spread_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation over per-document ``(group, value)``: population standard
    deviation (ddof=0) of the group means, the disparity GenderCARE reports as sigma."""
    return float(_spread_of(_means(_groups(values))))


def _group_bootstrap(values, of_means, confidence: float) -> tuple[float, float]:
    """Percentile bootstrap interval of ``of_means(group means)``, documents resampled within
    each group (each group its own draws)."""
    import numpy as np

    groups = _groups(values)
    means = np.stack([_resampled_means(group, stream) for stream, group in enumerate(groups, start=1)], axis=-1)
    return _percentile_interval(of_means(means), confidence)


def range_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of the range of group means (documents resampled within groups)."""
    return _group_bootstrap(values, _range_of, confidence)


def range_ci_lower(values: Sequence[tuple[str, float]]) -> float:
    return range_interval(values)[0]


def range_ci_upper(values: Sequence[tuple[str, float]]) -> float:
    return range_interval(values)[1]


def range_pvalue(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: permutation p-value of the range of group means (no group differs):
    the share of relabellings whose range is at least the observed one."""
    return _permutation_pvalue(_groups(values), _range_statistic, "greater")


def spread_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile bootstrap interval of the spread (documents resampled within groups)."""
    return _group_bootstrap(values, _spread_of, confidence)


def spread_ci_lower(values: Sequence[tuple[str, float]]) -> float:
    return spread_interval(values)[0]


def spread_ci_upper(values: Sequence[tuple[str, float]]) -> float:
    return spread_interval(values)[1]


# --------------------------------------------------------------------------
# Correlation


def pearson_interval(
    x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """Pearson r with its Fisher-z confidence interval: ``(r, lower, upper)`` (``scipy.stats.pearsonr``).

    Needs at least 4 pairs (the interval's standard error is 1/sqrt(n - 3)).
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
    """The positions of the highest score (several when it is tied): a verdict from scores must
    not fall to whichever tied choice comes first (a backend that returns equal log-likelihoods
    would then always "choose" the first option)."""
    best = max(scores)
    return [index for index, score in enumerate(scores) if score == best]


# --------------------------------------------------------------------------
# Paired sign test and Benjamini-Hochberg


def sign_test_pvalue(signs: Sequence[float]) -> float:
    """lm-eval aggregation: exact two-sided sign test of per-pair signs (+1, -1; 0 = tie, left out).

    The null is that each untied pair is as likely to favour either sentence.
    """
    from scipy.stats import binomtest

    positive = sum(1 for s in signs if s > 0)
    negative = sum(1 for s in signs if s < 0)
    if positive + negative == 0:
        raise ValueError("a sign test needs at least one untied pair")
    return float(binomtest(positive, positive + negative, 0.5).pvalue)


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the input order."""
    from scipy.stats import false_discovery_control

    return [float(p) for p in false_discovery_control(list(pvalues), method="bh")]


def _adjusted_for(target: str, pvalue_of, data_of: dict) -> float:
    """The target's Benjamini-Hochberg adjusted p-value over the groups whose raw p-value can
    be computed (a group with only ties, or one side, is left out of the family)."""
    if target not in data_of:
        raise ValueError(f"no documents of group {target!r} were evaluated")
    names = sorted(data_of)
    raw = {}
    for name in names:
        try:
            raw[name] = pvalue_of(data_of[name])
        except ValueError as error:
            raw[name] = str(error)
    family = [name for name in names if not isinstance(raw[name], str)]
    adjusted = dict(zip(family, benjamini_hochberg([raw[name] for name in family])))
    adjusted = adjusted.get(target, raw[target])
    if isinstance(adjusted, str):  # the target's own p-value cannot be computed: why
        raise ValueError(adjusted)
    return adjusted


def sign_test_bh(values: Sequence[tuple[str, float, str]]) -> float:
    """lm-eval aggregation over per-pair ``(subgroup, sign, target subgroup)``: the target
    subgroup's sign-test p-value, Benjamini-Hochberg adjusted across all subgroups present."""
    by_subgroup: dict[str, list[float]] = {}
    targets = set()
    for subgroup, sign, target in values:
        by_subgroup.setdefault(str(subgroup), []).append(sign)
        targets.add(str(target))
    if len(targets) != 1:
        raise ValueError(f"expected one target subgroup per metric, got {sorted(targets)}")
    (target,) = targets
    return _adjusted_for(target, sign_test_pvalue, by_subgroup)


def difference_pvalue_bh(values: Sequence[tuple[str, int, float, str]]) -> float:
    """lm-eval aggregation over per-document ``(group, side, value, target group)``: the
    target group's permutation p-value of its two sides' difference, Benjamini-Hochberg
    adjusted across every group present."""
    by_group: dict[str, list[tuple[int, float]]] = {}
    targets = set()
    for group, side, value, target in values:
        by_group.setdefault(str(group), []).append((int(side), float(value)))
        targets.add(str(target))
    if len(targets) != 1:
        raise ValueError(f"expected one target group per metric, got {sorted(targets)}")
    (target,) = targets
    return _adjusted_for(target, difference_pvalue, by_group)
