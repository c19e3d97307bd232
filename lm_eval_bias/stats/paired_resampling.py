"""The resampling behind :mod:`.paired`: sign-flip and swap permutation p-values with
``scipy.stats.permutation_test``'s definitions, the BCa levels of a mean, and the paired
bootstrap of any statistic of per-document values."""

from __future__ import annotations

import math
from collections.abc import Sequence

from lm_eval_bias.stats.intervals import COUNT_MATRIX_CELLS

# --------------------------------------------------------------------------
# Sign-flip permutation p-values, with scipy's definitions


def two_sided_pvalue(null, observed: float, exact: bool) -> float:
    """``scipy.stats.permutation_test``'s two-sided p-value from a null distribution: twice the
    smaller tail, values within its relative tolerance of ``observed`` counted as equal, and
    the +1 in numerator and denominator of a Monte Carlo estimate."""
    import numpy as np

    adjustment = 0 if exact else 1
    tolerance = abs(np.finfo(float).eps * 100 * observed)
    at_most = (np.count_nonzero(null <= observed + tolerance) + adjustment) / (null.size + adjustment)
    at_least = (np.count_nonzero(null >= observed - tolerance) + adjustment) / (null.size + adjustment)
    return float(min(1.0, 2.0 * min(at_most, at_least)))


def permutation_label(n: int, n_resamples: int, kind: str) -> str:
    """The permutation test's name: exact where every one of the 2^n swaps is enumerated."""
    if 2**n <= n_resamples:
        return f"exact {kind} permutation test (all {2**n} swaps)"
    return f"{kind} permutation test ({n_resamples} random swaps)"


def mean_difference(baseline, candidate, axis=-1):
    """mean(candidate - baseline) along ``axis``: the statistic of :func:`.paired.paired_means`."""
    import numpy as np

    return np.mean(candidate - baseline, axis=axis)


def sign_flip_pvalue(differences, n_resamples: int, random_state: int) -> float:
    """Two-sided p-value of the mean of per-document differences when each document's two
    values are swapped at random (its difference's sign flipped).

    Every flip is enumerated by ``scipy.stats.permutation_test`` when there are at most
    ``n_resamples``; otherwise that many are drawn (seeded) as one matrix of signs per batch:
    scipy draws them as permutations of each pair, which took 25 s for 20,000 documents.
    """
    import numpy as np

    n = differences.size
    if 2**n <= n_resamples:
        from scipy.stats import permutation_test

        result = permutation_test(
            (np.zeros(n), differences),
            mean_difference,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            alternative="two-sided",
        )
        return float(result.pvalue)
    rng = np.random.default_rng(random_state)
    batch = max(1, COUNT_MATRIX_CELLS // n)
    total = differences.sum()
    null = []
    for start in range(0, n_resamples, batch):
        # Eight swaps per random byte; the flipped sum is 2 * (sum of the kept) - sum, summed by
        # numpy (pairwise, the same floats on every machine) rather than a BLAS product.
        size = (min(batch, n_resamples - start), (n + 7) // 8)
        kept = np.unpackbits(rng.integers(0, 256, size=size, dtype=np.uint8), axis=1, count=n)
        null.append((2.0 * np.where(kept.view(bool), differences, 0.0).sum(axis=1) - total) / n)
    return two_sided_pvalue(np.concatenate(null), float(np.mean(differences)), exact=False)


# --------------------------------------------------------------------------
# The BCa interval of a mean


def bca_levels(differences, distribution, confidence: float):
    """The BCa interval's two quantile levels (Efron & Tibshirani 1993, 14.3), as
    ``scipy.stats.bootstrap(method="BCa")`` computes them, for the mean of the differences.

    scipy's acceleration comes from a jackknife that resamples n x (n - 1) documents (8 s for
    20,000 documents); for a mean each jackknife value is ``(sum - d_i) / (n - 1)``, so the
    same acceleration is computed from the differences directly.
    """
    import numpy as np
    from scipy.special import ndtr, ndtri

    observed = np.mean(differences)
    below = np.count_nonzero(distribution < observed) + np.count_nonzero(distribution <= observed)
    bias = ndtri(below / (2 * distribution.size))
    n = differences.size
    jackknife = (differences.sum() - differences) / (n - 1)
    deviations = (n - 1) * (jackknife.mean() - jackknife)
    z_tail = ndtri((1 - confidence) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):  # undefined without spread: NaN levels
        acceleration = (np.sum(deviations**3) / n**3) / 6 / (np.sum(deviations**2) / n**2) ** 1.5
        return [ndtr(bias + (bias + z) / (1 - acceleration * (bias + z))) for z in (z_tail, -z_tail)]


# --------------------------------------------------------------------------
# Any statistic of the documents


def statistic_value(statistic, rows: list, what: str) -> float:
    """``statistic(rows)`` as a float, refused (``ValueError`` naming ``what``) where not finite."""
    value = float(statistic(rows))
    if not math.isfinite(value):
        raise ValueError(f"the statistic of the {what} is not a finite number: {value!r}")
    return value


def paired_bootstrap_differences(base, cand, statistic, n_resamples: int, random_state: int):
    """statistic(candidate) - statistic(baseline) on resamples of the documents (the same
    documents on both sides), with the number of resamples on which the statistic is undefined
    (it raised ``ValueError`` or was not finite: a group with no document drawn)."""
    import numpy as np

    rng = np.random.default_rng(random_state)
    differences, undefined = [], 0
    for _ in range(n_resamples):
        drawn = rng.integers(0, base.size, size=base.size)
        try:
            difference = float(statistic(cand[drawn].tolist())) - float(statistic(base[drawn].tolist()))
        except ValueError:
            undefined += 1
            continue
        if math.isfinite(difference):
            differences.append(difference)
        else:
            undefined += 1
    return np.asarray(differences), undefined


def swap_pvalue(base, cand, statistic, observed: float, n_resamples: int, random_state: int) -> float:
    """Two-sided p-value of the difference when each document's two values are swapped at
    random: every swap enumerated by ``scipy.stats.permutation_test`` (on the documents'
    positions) when there are at most ``n_resamples``, otherwise that many drawn (seeded)."""
    import numpy as np

    n = base.size
    rows = np.concatenate([base, cand])

    def swapped_difference(base_positions, cand_positions):
        return statistic_value(statistic, rows[cand_positions].tolist(), "swapped candidate") - statistic_value(
            statistic, rows[base_positions].tolist(), "swapped baseline"
        )

    if 2**n <= n_resamples:
        from scipy.stats import permutation_test

        result = permutation_test(
            (np.arange(n), np.arange(n, 2 * n)),
            swapped_difference,
            permutation_type="samples",
            vectorized=False,
            n_resamples=n_resamples,
            alternative="two-sided",
        )
        return float(result.pvalue)
    rng = np.random.default_rng(random_state)
    positions = np.arange(n)
    null = np.empty(n_resamples)
    for i in range(n_resamples):
        swap = rng.integers(0, 2, size=n).astype(bool)
        null[i] = swapped_difference(np.where(swap, positions + n, positions), np.where(swap, positions, positions + n))
    return two_sided_pvalue(null, observed, exact=False)


def object_array(values: Sequence):
    """Per-document values of any kind as a one-dimensional object array (rows that are
    sequences, such as ``(group, value)`` tuples, stay whole), for drawing documents by position."""
    import numpy as np

    return np.fromiter(values, dtype=object, count=len(values))
