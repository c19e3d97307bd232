"""p-values: permutation tests of a difference or a range of group means, the exact sign test,
and Benjamini-Hochberg adjustment across groups."""

from __future__ import annotations

import math
from collections.abc import Sequence

from lm_eval_bias.stats import intervals
from lm_eval_bias.stats.intervals import SEED, _groups, _means, _range_of, _split_sides

PERMUTATIONS = 2000


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
    :data:`~lm_eval_bias.stats.intervals.RESAMPLING_BATCH_CELLS` cells.

    Shuffling positions and reading the values at them gives exactly the shuffled values (a
    shuffle's draws depend on the length alone), in int32 where the positions fit: half the
    memory of the pooled values.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    positions = np.arange(size, dtype=np.int64 if size > np.iinfo(np.int32).max else np.int32)
    batch = max(1, intervals.RESAMPLING_BATCH_CELLS // size)
    for start in range(0, PERMUTATIONS, batch):
        yield rng.permuted(np.tile(positions, (min(batch, PERMUTATIONS - start), 1)), axis=1)


def _difference_statistic(first, second, axis=-1):
    return first.mean(axis=axis) - second.mean(axis=axis)


def difference_pvalue(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: the two-sided permutation p-value of mean(side 0) - mean(side 1).

    Exact for yes/no values (:func:`binary_difference_pvalue`) and where there are at most
    :data:`PERMUTATIONS` relabellings (scipy's ``permutation_test`` enumerates them); otherwise
    estimated from that many seeded relabellings, with scipy's definitions.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1; each side needs two documents.

    Returns
    -------
    float
    """
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

    Parameters
    ----------
    first, second : numpy.ndarray
        Each side's values, all 0 or 1.

    Returns
    -------
    float
    """
    from scipy.stats import hypergeom

    ones_first = int(first.sum())
    law = hypergeom(first.size + second.size, ones_first + int(second.sum()), first.size)
    at_least, at_most = law.sf(ones_first - 1), law.cdf(ones_first)
    return float(min(1.0, 2.0 * min(at_least, at_most)))


def _range_statistic(*groups, axis=-1):
    return _range_of(_means(groups, axis))


def range_pvalue(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the permutation p-value of the range of group means against "no
    group differs": the share of relabellings whose range is at least the observed one.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups of two documents.

    Returns
    -------
    float
    """
    return _permutation_pvalue(_groups(values), _range_statistic, "greater")


# --------------------------------------------------------------------------
# Paired sign test and Benjamini-Hochberg


def sign_test_pvalue(signs: Sequence[float]) -> float:
    """lm-eval aggregation: the exact two-sided sign test of per-pair signs.

    The null is that each untied pair is as likely to favour either sentence
    (``scipy.stats.binomtest`` with p = 0.5).

    Parameters
    ----------
    signs : sequence of float
        Per-pair signs: +1, -1, or 0 for a tie (left out); at least one untied pair.

    Returns
    -------
    float
    """
    from scipy.stats import binomtest

    positive = sum(1 for s in signs if s > 0)
    negative = sum(1 for s in signs if s < 0)
    if positive + negative == 0:
        raise ValueError("a sign test needs at least one untied pair")
    return float(binomtest(positive, positive + negative, 0.5).pvalue)


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), ``scipy.stats.false_discovery_control``.

    Parameters
    ----------
    pvalues : sequence of float
        Raw p-values.

    Returns
    -------
    list of float
        The adjusted p-values, in the input order.
    """
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
    """lm-eval aggregation: the target subgroup's sign-test p-value, Benjamini-Hochberg adjusted
    across every subgroup present (a subgroup with only ties is left out of the family).

    Parameters
    ----------
    values : sequence of (str, float, str)
        Per-pair ``(subgroup, sign, target subgroup)``, one target for all.

    Returns
    -------
    float
    """
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
    """lm-eval aggregation: the target group's permutation p-value of its two sides'
    difference (:func:`difference_pvalue`), Benjamini-Hochberg adjusted across every group present
    (a group whose p-value cannot be computed is left out of the family).

    Parameters
    ----------
    values : sequence of (str, int, float, str)
        Per-document ``(group, side, value, target group)``, one target for all.

    Returns
    -------
    float
    """
    by_group: dict[str, list[tuple[int, float]]] = {}
    targets = set()
    for group, side, value, target in values:
        by_group.setdefault(str(group), []).append((int(side), float(value)))
        targets.add(str(target))
    if len(targets) != 1:
        raise ValueError(f"expected one target group per metric, got {sorted(targets)}")
    (target,) = targets
    return _adjusted_for(target, difference_pvalue, by_group)
