"""Confidence intervals shared by every benchmark.

Pure functions: numbers in, numbers out. The ``*_pct`` aggregations are meant
for lm-eval ``metric_list`` entries (``aggregation: !function ...``): lm-eval
calls them with the list of per-document values of one metric.

lm-eval computes a standard error itself only for its built-in ``mean``
aggregation, so each proportion is reported as three metrics: the ``mean``
(with lm-eval's closed-form standard error) and the two Wilson bounds below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

CONFIDENCE = 0.95


def z_value(confidence: float = CONFIDENCE) -> float:
    """Two-sided standard-normal quantile, e.g. 1.959964 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(
    successes: float, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Preferred over the normal (Wald) interval because it stays inside [0, 1]
    and keeps its coverage for proportions near 0 or 1 and for small
    subgroups, which WinoQueer has (a model scoring 100 on a subgroup still
    gets an interval of non-zero width).

    Returns ``(lower, upper)`` as proportions in [0, 1].
    """
    if n <= 0:
        raise ValueError(f"a proportion needs at least one observation, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}], got {successes!r}")
    z = z_value(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    # exact bounds at the extremes (the formula leaves rounding noise there)
    lower = 0.0 if successes == 0 else max(0.0, centre - half)
    upper = 1.0 if successes == n else min(1.0, centre + half)
    return lower, upper


def _count_percent_outcomes(values: Sequence[float]) -> tuple[int, int]:
    """(successes, n) from per-document outcomes coded 100 (yes) or 0 (no)."""
    successes = 0
    for value in values:
        if value == 100:
            successes += 1
        elif value != 0:
            raise ValueError(
                f"expected per-document outcomes of 0 or 100, got {value!r}"
            )
    return successes, len(values)


def wilson_lower_pct(values: Sequence[float]) -> float:
    """Lower 95% Wilson bound, in percent, of outcomes coded 0/100."""
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[0]


def wilson_upper_pct(values: Sequence[float]) -> float:
    """Upper 95% Wilson bound, in percent, of outcomes coded 0/100."""
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[1]


# --------------------------------------------------------------------------
# Means of per-document values in [0, 1], and differences between two groups

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 1234


def _as_array(values: Sequence[float]):
    import numpy as np

    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("an interval needs at least one per-document value")
    if not np.isfinite(array).all():
        raise ValueError("per-document values must be finite numbers")
    return array


def bootstrap_mean_interval(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (documents resampled, fixed seed)."""
    import numpy as np

    array = _as_array(values)
    rng = np.random.default_rng(seed)
    means = array[rng.integers(0, array.size, size=(resamples, array.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of a mean of per-document values in [0, 1].

    Every value 0 or 1 (one yes/no outcome per document): Wilson. Otherwise
    (e.g. the share of a document's several samples): percentile bootstrap
    over documents, which respects that samples of one prompt are correlated.
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


def _split_sides(values: Sequence[tuple[int, float]]):
    import numpy as np

    first = np.asarray([v for side, v in values if side == 0], dtype=float)
    second = np.asarray([v for side, v in values if side == 1], dtype=float)
    if first.size == 0 or second.size == 0:
        raise ValueError("a difference of means needs documents on both sides")
    return first, second


def difference_of_means(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation over per-document ``(side, value)``: mean(side 0) - mean(side 1)."""
    first, second = _split_sides(values)
    return float(first.mean() - second.mean())


def difference_interval(
    values: Sequence[tuple[int, float]],
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(side 0) - mean(side 1), each side resampled."""
    import numpy as np

    first, second = _split_sides(values)
    rng = np.random.default_rng(seed)
    diffs = (
        first[rng.integers(0, first.size, size=(resamples, first.size))].mean(axis=1)
        - second[rng.integers(0, second.size, size=(resamples, second.size))].mean(axis=1)
    )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(diffs, [tail, 1.0 - tail])
    return float(low), float(high)


def difference_ci_lower(values: Sequence[tuple[int, float]]) -> float:
    return difference_interval(values)[0]


def difference_ci_upper(values: Sequence[tuple[int, float]]) -> float:
    return difference_interval(values)[1]


# --------------------------------------------------------------------------
# Permutation tests, ranges of group means, correlations

PERMUTATIONS = 2000


def _permutation_pvalue(observed: float, statistic, values, labels, permutations: int, seed: int) -> float:
    """Two-sided p-value: share of label shufflings whose |statistic| reaches |observed|.

    Counts the observed labelling itself (the +1s), so p is never 0.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(permutations):
        if abs(statistic(values, rng.permutation(labels))) >= abs(observed) - 1e-12:
            hits += 1
    return (hits + 1) / (permutations + 1)


def difference_pvalue(values: Sequence[tuple[int, float]], permutations: int = PERMUTATIONS,
                      seed: int = BOOTSTRAP_SEED) -> float:
    """lm-eval aggregation: permutation p-value of mean(side 0) - mean(side 1)."""
    import numpy as np

    first, second = _split_sides(values)
    pooled = np.concatenate([first, second])
    labels = np.concatenate([np.zeros(first.size, dtype=int), np.ones(second.size, dtype=int)])

    def statistic(vals, labs):
        return vals[labs == 0].mean() - vals[labs == 1].mean()

    return _permutation_pvalue(statistic(pooled, labels), statistic, pooled, labels, permutations, seed)


def _grouped(values: Sequence[tuple[str, float]]):
    import numpy as np

    names = sorted({str(group) for group, _ in values})
    if len(names) < 2:
        raise ValueError("a range of group means needs at least two groups")
    index = {name: i for i, name in enumerate(names)}
    labels = np.asarray([index[str(group)] for group, _ in values])
    numbers = np.asarray([float(value) for _, value in values])
    if not np.isfinite(numbers).all():
        raise ValueError("per-document values must be finite numbers")
    return names, labels, numbers


def _range_of_means(numbers, labels, n_groups: int) -> float:
    import numpy as np

    sums = np.bincount(labels, weights=numbers, minlength=n_groups)
    counts = np.bincount(labels, minlength=n_groups)
    means = sums[counts > 0] / counts[counts > 0]
    return float(means.max() - means.min())


def range_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation over per-document ``(group, value)``: max minus min group mean."""
    names, labels, numbers = _grouped(values)
    return _range_of_means(numbers, labels, len(names))


def _bootstrap_of_group_means(values: Sequence[tuple[str, float]], statistic, confidence: float,
                              resamples: int, seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(group means)``, documents resampled within groups."""
    import numpy as np

    names, labels, numbers = _grouped(values)
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(labels == i) for i in range(len(names))]
    draws = np.empty(resamples)
    for r in range(resamples):
        draws[r] = statistic(np.array([numbers[rng.choice(m, size=m.size)].mean() for m in members]))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return float(low), float(high)


def range_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE,
                   resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the range of group means (documents resampled within groups)."""
    return _bootstrap_of_group_means(values, lambda means: means.max() - means.min(), confidence, resamples, seed)


def range_ci_lower(values: Sequence[tuple[str, float]]) -> float:
    return range_interval(values)[0]


def range_ci_upper(values: Sequence[tuple[str, float]]) -> float:
    return range_interval(values)[1]


def range_pvalue(values: Sequence[tuple[str, float]], permutations: int = PERMUTATIONS,
                 seed: int = BOOTSTRAP_SEED) -> float:
    """lm-eval aggregation: permutation p-value of the range of group means (no group differs)."""
    names, labels, numbers = _grouped(values)

    def statistic(vals, labs):
        return _range_of_means(vals, labs, len(names))

    return _permutation_pvalue(statistic(numbers, labels), statistic, numbers, labels, permutations, seed)


def pearson_interval(x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE
                     ) -> tuple[float, float, float]:
    """Pearson r with its Fisher-z confidence interval: ``(r, lower, upper)``.

    Needs at least 4 pairs (the interval's standard error is 1/sqrt(n - 3)).
    """
    import numpy as np

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 4:
        raise ValueError("a correlation interval needs two equally long lists of at least 4 numbers")
    if a.std() <= 1e-12 * max(1.0, abs(a).max()) or b.std() <= 1e-12 * max(1.0, abs(b).max()):
        raise ValueError("a correlation is undefined when one list is constant")
    r = float(np.corrcoef(a, b)[0, 1])
    z, half = math.atanh(max(min(r, 1 - 1e-15), -1 + 1e-15)), z_value(confidence) / math.sqrt(a.size - 3)
    return r, math.tanh(z - half), math.tanh(z + half)


# --------------------------------------------------------------------------
# Spread of group means


def _population_sd_of_means(numbers, labels, n_groups: int) -> float:
    import numpy as np

    sums = np.bincount(labels, weights=numbers, minlength=n_groups)
    counts = np.bincount(labels, minlength=n_groups)
    return float(np.std(sums[counts > 0] / counts[counts > 0]))


def spread_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation over per-document ``(group, value)``: population standard
    deviation (ddof=0) of the group means, the disparity GenderCARE reports as sigma."""
    names, labels, numbers = _grouped(values)
    return _population_sd_of_means(numbers, labels, len(names))


def spread_interval(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE,
                    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the spread (documents resampled within groups)."""
    import numpy as np

    return _bootstrap_of_group_means(values, np.std, confidence, resamples, seed)


def spread_ci_lower(values: Sequence[tuple[str, float]]) -> float:
    return spread_interval(values)[0]


def spread_ci_upper(values: Sequence[tuple[str, float]]) -> float:
    return spread_interval(values)[1]


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


def _adjusted_for(target: str, pvalue_of: dict, data_of: dict) -> float:
    """The target's Benjamini-Hochberg adjusted p-value over the groups whose raw p-value can
    be computed (a group with only ties, or one side, is left out of the family)."""
    if target not in data_of:
        raise ValueError(f"no documents of group {target!r} were evaluated")
    raw = {}
    for name in sorted(data_of):
        try:
            raw[name] = pvalue_of(data_of[name])
        except ValueError:
            if name == target:
                raise
    names = sorted(raw)
    return benjamini_hochberg([raw[name] for name in names])[names.index(target)]


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        index = order[rank - 1]
        running = min(running, pvalues[index] * m / rank)
        adjusted[index] = running
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
