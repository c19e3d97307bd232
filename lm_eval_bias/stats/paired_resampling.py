"""The permutation tests behind :mod:`.paired` and the intervals obtained by inverting them.

Each test swaps the two runs' values of a unit (a document, or every document of a cluster) at
random. Its null distribution holds one value per swap pattern: every pattern where there are at
most ``n_resamples`` (exact), otherwise ``n_resamples`` drawn patterns (seeded) with the +1 of a
Monte Carlo p-value (Phipson & Smyth 2010). The same patterns give the test at 0 and at every
other hypothesised difference, so the interval (the differences the test does not reject) and the
p-value are read off one array and cannot contradict each other.

- the mean of the differences (:func:`sign_flip_inversion`): the test of "the differences are
  symmetric about delta" is inverted in closed form; its bounds are order statistics of the means
  of the flipped units (Hartigan 1969; Good 2005, *Permutation, Parametric and Bootstrap Tests of
  Hypotheses*, 3.5.1);
- any statistic (:func:`swap_quantile_interval`): the estimate plus or minus the quantile of
  ``|statistic difference|`` over the swaps that the two-sided test compares it with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lm_eval_bias.stats.means import COUNT_MATRIX_CELLS

# Values of a null distribution this close to the observed one (relative to the values' scale) are
# ties: sums of the same numbers in another order differ in their last bits.
_TIE_TOLERANCE = 1e-9


def minimum_units(confidence: float) -> int:
    """The fewest units whose swap test can reach p < 1 - ``confidence``: its smallest p-value is
    2 / 2^G (the observed pattern and its mirror image are always as extreme)."""
    alpha = 1 - confidence
    return math.floor(math.log2(2 / alpha) + 1e-9) + 1


def swap_patterns(units: int, n_resamples: int, random_state: int):
    """Batches of swap patterns (boolean rows: True where a unit's two values are swapped).

    Yields every one of the 2^G patterns when there are at most ``n_resamples``, otherwise
    ``n_resamples`` random ones drawn from one seeded generator, eight per random byte, in
    batches of at most ``COUNT_MATRIX_CELLS`` cells.
    """
    import numpy as np

    if 2**units <= n_resamples:
        codes = np.arange(2**units)[:, None]
        yield ((codes >> np.arange(units)) & 1).astype(bool)
        return
    rng = np.random.default_rng(random_state)
    batch = max(1, COUNT_MATRIX_CELLS // units)
    for start in range(0, n_resamples, batch):
        size = (min(batch, n_resamples - start), (units + 7) // 8)
        yield np.unpackbits(rng.integers(0, 256, size=size, dtype=np.uint8), axis=1, count=units).view(bool)


def permutation_label(units: int, n_resamples: int, kind: str) -> str:
    """The test's name: exact where every one of the 2^G swap patterns is enumerated."""
    if 2**units <= n_resamples:
        return f"exact {kind} permutation test (all {2**units} swaps)"
    return f"{kind} permutation test ({n_resamples} random swaps)"


def _snap_ties(values, target, scale):
    """``values`` with those within the tie tolerance of ``target`` set to it exactly."""
    import numpy as np

    return np.where(np.abs(values - target) <= _TIE_TOLERANCE * scale, target, values)


# --------------------------------------------------------------------------
# The mean of the differences: sign-flip test and its inversion


def flipped_means(totals, sizes, n_resamples: int, random_state: int):
    """For each swap pattern, the mean difference over the documents of the swapped units.

    Parameters
    ----------
    totals : ndarray, shape (rows, G)
        Each unit's sum of per-document differences, for one or several inputs (rows).
    sizes : ndarray, shape (G,)
        Each unit's number of documents.
    n_resamples, random_state : int
        As for :func:`swap_patterns`.

    Returns
    -------
    means : ndarray, shape (rows, patterns with a unit swapped)
    unswapped : int
        Patterns that swap nothing: the observed one itself (always as extreme as itself).
    patterns : int
        The denominator of the p-value: 2^G, or ``n_resamples + 1``.
    """
    import numpy as np

    units = sizes.size
    exact = 2**units <= n_resamples
    means, unswapped = [], 0 if exact else 1
    for flips in swap_patterns(units, n_resamples, random_state):
        swapped = flips.sum(axis=1) > 0
        unswapped += int(np.count_nonzero(~swapped))
        flips = flips[swapped]
        # Sums by numpy (pairwise, the same floats on every machine) rather than a BLAS product;
        # negating the totals negates every sum exactly.
        rows = max(1, COUNT_MATRIX_CELLS // flips.size)
        sums = np.concatenate(
            [
                np.where(flips[None, :, :], totals[start : start + rows, None, :], 0.0).sum(axis=2)
                for start in range(0, totals.shape[0], rows)
            ]
        )
        means.append(sums / (flips * sizes).sum(axis=1))
    patterns = 2**units if exact else n_resamples + 1
    return np.concatenate(means, axis=1), unswapped, patterns


def sign_flip_inversion(totals, sizes, confidence: float, n_resamples: int, random_state: int):
    """The sign-flip test of a zero mean difference and the interval of the differences it does
    not reject, for each row of ``totals``.

    The test of "the differences are symmetric about delta" counts the patterns whose statistic
    is at least the observed one: the unswapped ones, and those whose swapped units' mean
    difference m is at most delta (at least, for the other tail). Its two-sided p-value is
    ``min(1, 2 * min(tails) / patterns)``, scipy's definition, and the deltas it does not reject
    at level 1 - ``confidence`` are those between the j-th smallest and the j-th largest m.

    Returns
    -------
    lower, upper, pvalue : ndarray, shape (rows,)
        Infinite bounds where no delta can be rejected (too few units or resamples).
    """
    import numpy as np

    means, unswapped, patterns = flipped_means(totals, sizes, n_resamples, random_state)
    scale = np.abs(totals / sizes).max(axis=1, keepdims=True)
    means = _snap_ties(means, 0.0, scale)
    at_most = unswapped + np.count_nonzero(means <= 0, axis=1)
    at_least = unswapped + np.count_nonzero(means >= 0, axis=1)
    pvalue = np.minimum(1.0, 2.0 * np.minimum(at_most, at_least) / patterns)
    # Not rejected at delta: both tails hold at least ceil(alpha * patterns / 2) patterns.
    order = math.ceil((1 - confidence) * patterns / 2 - 1e-9) - unswapped
    if order < 1:
        infinite = np.full(totals.shape[0], np.inf)
        return -infinite, infinite, pvalue
    means.sort(axis=1)
    return means[:, order - 1], means[:, means.shape[1] - order], pvalue


# --------------------------------------------------------------------------
# Any statistic: swap test and the interval of its quantile


def statistic_value(statistic, rows: list, what: str) -> float:
    """``statistic(rows)`` as a float, refused (``ValueError`` naming ``what``) where not finite."""
    value = float(statistic(rows))
    if not math.isfinite(value):
        raise ValueError(f"the statistic of the {what} is not a finite number: {value!r}")
    return value


def swapped_differences(base, cand, unit_of, statistic, n_resamples: int, random_state: int):
    """statistic(candidate) - statistic(baseline) under each swap pattern of the units, and the
    p-value's denominator (2^G, or ``n_resamples + 1``).

    ``unit_of[i]`` is the unit (0 .. G-1) of document ``i``; swapping a unit swaps the two runs'
    values of every document in it.
    """
    import numpy as np

    units = int(unit_of.max()) + 1
    exact = 2**units <= n_resamples
    n = base.size
    rows = np.concatenate([base, cand])
    positions = np.arange(n)
    values = []
    for flips in swap_patterns(units, n_resamples, random_state):
        for flip in flips:
            swapped = flip[unit_of]
            base_rows = rows[np.where(swapped, positions + n, positions)].tolist()
            cand_rows = rows[np.where(swapped, positions, positions + n)].tolist()
            value = statistic_value(statistic, cand_rows, "swapped candidate")
            values.append(value - statistic_value(statistic, base_rows, "swapped baseline"))
    return np.asarray(values), 2**units if exact else n_resamples + 1


def swap_quantile_interval(null, observed, patterns: int, confidence: float, exact: bool):
    """The two-sided swap test of the observed difference and the interval ``observed +- q``
    whose half-width q is the smallest the test would not reject at level 1 - ``confidence``.

    Swapping every unit negates the difference, so the null distribution is symmetric and the
    two-sided p-value is the share of patterns with ``|difference| >= |observed|`` (with the +1 of
    a Monte Carlo p-value); the interval excludes 0 exactly where that share is below
    1 - ``confidence``. Vectorised over rows: ``null`` (rows, patterns), ``observed`` (rows,).

    Returns
    -------
    lower, upper, pvalue : ndarray, shape (rows,)
        Infinite bounds where the test cannot reject anything.
    """
    import numpy as np

    observed = np.asarray(observed, dtype=float)
    size = np.abs(observed)[:, None]
    magnitudes = np.abs(null)
    magnitudes = _snap_ties(magnitudes, size, np.maximum(size, magnitudes.max(axis=1, keepdims=True)))
    # The unswapped patterns are in the enumeration when exact; the +1 stands for the observed one.
    extra = 0 if exact else 1
    pvalue = np.minimum(1.0, (extra + np.count_nonzero(magnitudes >= size, axis=1)) / patterns)
    order = math.ceil((1 - confidence) * patterns - 1e-9) - extra
    if order < 1:
        infinite = np.full(observed.shape, np.inf)
        return -infinite, infinite, pvalue
    half_width = -np.sort(-magnitudes, axis=1)[:, order - 1]
    return observed - half_width, observed + half_width, pvalue


def object_array(values: Sequence):
    """Per-document values of any kind as a one-dimensional object array (rows that are
    sequences, such as ``(group, value)`` tuples, stay whole), for drawing documents by position."""
    import numpy as np

    return np.fromiter(values, dtype=object, count=len(values))
