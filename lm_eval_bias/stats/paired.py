"""Paired comparison of two runs over the same documents: the difference of a metric between a
baseline and a candidate, its paired interval and the p-value of a paired test.

Both runs scored the same documents, so each document is its own control: a test on the
documents whose outcome changed detects differences that two separate intervals never will.
``baseline[i]`` and ``candidate[i]`` are always the same document.

- yes/no outcomes (:func:`paired_proportions`): the exact McNemar test and Newcombe's paired
  interval;
- continuous values (:func:`paired_means`): a paired bootstrap interval (BCa) and a sign-flip
  permutation test;
- any statistic of the documents, such as a gap between groups (:func:`paired_statistic`): a
  paired percentile bootstrap and a permutation test that swaps each document's two values.

Swapping the baseline and the candidate negates the difference and the interval exactly and
keeps the p-value, and the same inputs always give the same numbers (seeded resampling).
Inputs the statistics cannot support raise ``ValueError``: no documents, sequences of unequal
length, values that are not finite numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lm_eval_bias.stats.intervals import CONFIDENCE, COUNT_MATRIX_CELLS, _check_confidence, _wilson
from lm_eval_bias.stats.paired_resampling import (
    bca_levels,
    object_array,
    paired_bootstrap_differences,
    permutation_label,
    sign_flip_pvalue,
    statistic_value,
    swap_pvalue,
)


@dataclass(frozen=True)
class PairedDifference:
    """A paired comparison of one metric between a baseline and a candidate run.

    Attributes
    ----------
    difference : float
        ``statistic(candidate) - statistic(baseline)``, in the metric's units.
    ci_lower, ci_upper : float
        The paired interval of the difference.
    pvalue : float
        Two-sided p-value of the paired test named in ``test``.
    n : int
        The matched documents it rests on.
    test : str
        The test and the interval, e.g. ``"exact McNemar; Newcombe paired interval"``.
    note : str
        What the reader must know to read the numbers, e.g. ``"no discordant pairs: p = 1"``.
    """

    difference: float
    ci_lower: float
    ci_upper: float
    pvalue: float
    n: int
    test: str
    note: str = ""


def _negated(result: PairedDifference) -> PairedDifference:
    """The comparison with baseline and candidate swapped (``+ 0.0`` turns -0.0 into 0.0)."""
    return replace(
        result,
        difference=-result.difference + 0.0,
        ci_lower=-result.ci_upper + 0.0,
        ci_upper=-result.ci_lower + 0.0,
    )


# --------------------------------------------------------------------------
# Input checks


def _check_lengths(baseline: Sequence, candidate: Sequence) -> int:
    if len(baseline) != len(candidate):
        raise ValueError(
            f"paired values must describe the same documents: the baseline has {len(baseline)}, "
            f"the candidate {len(candidate)}"
        )
    if len(baseline) == 0:
        raise ValueError("a paired comparison needs at least one matched document, got n = 0")
    return len(baseline)


def _paired_arrays(baseline: Sequence[float], candidate: Sequence[float]):
    """Both runs' per-document values as float arrays of one length, every value finite."""
    import numpy as np

    _check_lengths(baseline, candidate)
    arrays = []
    for name, values in (("baseline", baseline), ("candidate", candidate)):
        array = np.asarray(values, dtype=float)
        if array.ndim != 1:
            raise ValueError(f"the {name}'s values must be one number per document")
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            value = float(array[bad[0]])
            raise ValueError(f"the {name}'s value of document {bad[0]} is not a finite number: {value!r}")
        arrays.append(array)
    return arrays


def _check_resampling(n: int, n_resamples: int) -> None:
    if n < 2:
        raise ValueError(f"a paired bootstrap needs at least two matched documents, got n = {n}")
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive whole number, got {n_resamples!r}")


# --------------------------------------------------------------------------
# Yes/no outcomes: exact McNemar and Newcombe's paired interval


def _outcomes(values, scale: float, name: str):
    """Boolean outcomes from values coded 0 and 1, or 0 and ``scale``."""
    import numpy as np

    yes = (values == 1) | (values == scale)
    no = values == 0
    bad = np.flatnonzero(~(yes | no))
    if bad.size:
        expected = "0 or 1" if scale == 1 else f"0 or 1, or 0 or {scale:g}"
        value = float(values[bad[0]])
        raise ValueError(f"the {name}'s outcome of document {bad[0]} is {value!r}; expected {expected}")
    return yes


def _newcombe_half_width(first: float, second: float, phi: float) -> float:
    """One side of the square-and-add interval; written so that swapping ``first`` and
    ``second`` gives the same float (sums and products of two terms are commutative)."""
    return math.sqrt(max(0.0, (first * first + second * second) - 2.0 * phi * (first * second)))


def _newcombe_interval(both: int, first_only: int, second_only: int, neither: int, confidence: float):
    """Newcombe's interval (method 10) of p_first - p_second from the paired 2x2 table.

    Newcombe, R. G. (1998). Improved confidence intervals for the difference between binomial
    proportions based on paired data. Statistics in Medicine 17: 2635-2650. scipy has no paired
    interval, so it is written out: the Wilson intervals of the two marginal proportions
    (``_wilson``, scipy's formula) combined by "square and add", with the correlation of the two
    proportions estimated by phi, corrected towards 0 as in Newcombe's own presentation
    (Altman et al. 2000, *Statistics with Confidence*, ch. 6) and Fagerland, Lydersen & Laake
    (2017, *Statistical Analysis of Contingency Tables*, ch. 8): phi = 0 when a margin is empty.
    """
    n = both + first_only + second_only + neither
    first_yes, second_yes = both + first_only, both + second_only
    p_first, p_second = first_yes / n, second_yes / n
    lower_first, upper_first = _wilson(first_yes, n, confidence)
    lower_second, upper_second = _wilson(second_yes, n, confidence)
    margins = first_yes * (n - first_yes) * second_yes * (n - second_yes)  # exact: Python ints
    agreement = both * neither - first_only * second_only
    if margins == 0 or 0 <= agreement <= n / 2:
        phi = 0.0
    elif agreement > n / 2:
        phi = (agreement - n / 2) / math.sqrt(margins)
    else:
        phi = agreement / math.sqrt(margins)
    difference = (first_only - second_only) / n
    lower = difference - _newcombe_half_width(p_first - lower_first, upper_second - p_second, phi)
    upper = difference + _newcombe_half_width(upper_first - p_first, p_second - lower_second, phi)
    return difference, lower, upper


def paired_proportions(
    baseline: Sequence[float], candidate: Sequence[float], *, scale: float = 1.0, confidence: float = CONFIDENCE
) -> PairedDifference:
    """Per-document yes/no outcomes of two runs: the exact McNemar test and Newcombe's paired
    interval of the difference of the two proportions.

    McNemar's test is the two-sided binomial test (``scipy.stats.binomtest``, p = 1/2) of the
    documents whose outcome changed, as ``statsmodels``' ``mcnemar(table, exact=True)``; without
    such documents there is nothing to test and p = 1. Newcombe's interval (method 10) combines
    the two Wilson intervals with the correlation of the paired outcomes: unlike the test, it
    is not [0, 0] without changed documents, as agreement on n documents bounds the share of
    documents that could change only so far.

    Parameters
    ----------
    baseline, candidate : sequence of float
        Each run's outcome per document, in the same document order: 0 (no) or 1 (yes), or 0 and
        ``scale`` (outcomes coded 0 and 100 with ``scale=100``).
    scale : float, default 1.0
        The unit of the difference and its interval: 100 for percentage points.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    PairedDifference
        The difference of the candidate's share of yes minus the baseline's, times ``scale``.

    Raises
    ------
    ValueError
        No documents, sequences of unequal length, or an outcome other than 0, 1 or ``scale``.
    """
    _check_confidence(confidence)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    base_values, cand_values = _paired_arrays(baseline, candidate)
    base_yes = _outcomes(base_values, scale, "baseline")
    cand_yes = _outcomes(cand_values, scale, "candidate")
    n = base_yes.size
    both = int((base_yes & cand_yes).sum())
    became_yes = int((~base_yes & cand_yes).sum())
    became_no = int((base_yes & ~cand_yes).sum())
    neither = n - both - became_yes - became_no
    difference, lower, upper = _newcombe_interval(both, became_yes, became_no, neither, confidence)
    changed = became_yes + became_no
    if changed == 0:
        pvalue, note = 1.0, "no discordant pairs: p = 1"
    else:
        from scipy.stats import binomtest

        # The smaller count, so that swapping the runs gives the same float.
        pvalue, note = float(binomtest(min(became_yes, became_no), changed, 0.5).pvalue), ""
    return PairedDifference(
        difference=difference * scale + 0.0,
        ci_lower=lower * scale,
        ci_upper=upper * scale,
        pvalue=pvalue,
        n=n,
        test="exact McNemar; Newcombe paired interval",
        note=note,
    )


# --------------------------------------------------------------------------
# Continuous values: paired BCa bootstrap and sign-flip permutation test


def _paired_means_oriented(base, cand, confidence: float, n_resamples: int, random_state: int):
    import numpy as np
    from scipy.stats import bootstrap, quantile

    n = base.size
    differences = cand - base
    # The bootstrap of the differences draws the same documents as paired=True on the two runs
    # (scipy draws the same positions) and gives the same resampled means, at half the cost.
    result = bootstrap(
        (differences,),
        np.mean,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        batch=max(1, COUNT_MATRIX_CELLS // n),
        rng=np.random.default_rng(random_state),
    )
    distribution = result.bootstrap_distribution
    levels = bca_levels(differences, distribution, confidence)
    if all(np.isfinite(levels)):
        lower, upper = (float(bound) for bound in quantile(distribution, np.asarray(levels)))
        interval, note = "paired BCa bootstrap interval", ""
    else:
        # BCa needs resampled means on both sides of the estimate and a jackknife spread: with
        # every document's difference equal there is neither, and the percentile interval of
        # the same resamples is the estimate itself.
        lower, upper = float(result.confidence_interval.low), float(result.confidence_interval.high)
        interval = "paired percentile bootstrap interval"
        note = "BCa undefined (the resampled means do not spread around the estimate): percentile interval"
    return PairedDifference(
        difference=float(np.mean(differences)),
        ci_lower=lower,
        ci_upper=upper,
        pvalue=sign_flip_pvalue(differences, n_resamples, random_state),
        n=n,
        test=f"{permutation_label(n, n_resamples, 'sign-flip')}; {interval}",
        note=note,
    )


def paired_means(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 9999,
    random_state: int = 0,
) -> PairedDifference:
    """Continuous per-document values of two runs: the mean difference, its paired bootstrap
    interval and a sign-flip permutation test.

    The interval resamples documents, the same ones on both sides (``scipy.stats.bootstrap``,
    the resamples of ``paired=True``), and is bias-corrected and accelerated (BCa, its
    acceleration computed from the differences rather than scipy's jackknife), or the
    percentile interval of the same resamples where BCa is undefined (every document's
    difference equal). The test swaps each document's two values at random: every swap is
    enumerated by ``scipy.stats.permutation_test(permutation_type="samples")`` for up to
    log2(``n_resamples``) documents, otherwise ``n_resamples`` swaps are drawn, with scipy's
    definition of the p-value.

    The numbers are computed with the two runs in a fixed order (the one whose first differing
    document is lower in the baseline), and negated for the other: BCa counts the resamples
    below the estimate, which is not antisymmetric when resamples tie with it, and this way
    swapping the runs negates the difference and the interval exactly.

    Parameters
    ----------
    baseline, candidate : sequence of float
        Each run's value per document, in the same document order; finite numbers.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    n_resamples : int, default 9999
        Bootstrap resamples, and random swaps of the permutation test.
    random_state : int, default 0
        Seed of both.

    Returns
    -------
    PairedDifference
        mean(candidate - baseline); identical runs give 0, [0, 0] and p = 1.

    Raises
    ------
    ValueError
        Fewer than two documents, sequences of unequal length, or a value that is not finite.
    """
    import numpy as np

    _check_confidence(confidence)
    base, cand = _paired_arrays(baseline, candidate)
    _check_resampling(base.size, n_resamples)
    changed = np.flatnonzero(cand != base)
    if changed.size == 0:
        test = f"{permutation_label(base.size, n_resamples, 'sign-flip')}; paired BCa bootstrap interval"
        return _identical(base.size, test)
    if cand[changed[0]] < base[changed[0]]:
        return _negated(_paired_means_oriented(cand, base, confidence, n_resamples, random_state))
    return _paired_means_oriented(base, cand, confidence, n_resamples, random_state)


def _identical(n: int, test: str) -> PairedDifference:
    return PairedDifference(0.0, 0.0, 0.0, 1.0, n, test, "identical values on every document")


# --------------------------------------------------------------------------
# Any statistic of the documents


def paired_statistic(
    baseline: Sequence,
    candidate: Sequence,
    statistic: Callable[[list], float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 2000,
    random_state: int = 0,
) -> PairedDifference:
    """Any statistic of a list of per-document values (a task's own aggregation, such as a gap
    between the means of two groups) in two runs: its difference, a paired bootstrap interval
    and a paired permutation test.

    The bootstrap resamples documents, the same on both sides, and takes the percentile
    interval of the resampled differences (BCa would evaluate the statistic n times more, for
    its jackknife). A resample on which the statistic is undefined (it raises ``ValueError`` or
    is not finite, e.g. no document of a group drawn) is left out, and the note says how many.
    The permutation test swaps each document's two values at random.

    Parameters
    ----------
    baseline, candidate : sequence
        Each run's value per document (numbers, dicts, ...), in the same document order.
    statistic : callable
        Takes a list of per-document values and returns a float; raises ``ValueError`` where
        the values cannot support it.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    n_resamples : int, default 2000
        Bootstrap resamples, and random swaps of the permutation test.
    random_state : int, default 0
        Seed of both.

    Returns
    -------
    PairedDifference
        statistic(candidate) - statistic(baseline); identical runs give 0, [0, 0] and p = 1.

    Raises
    ------
    ValueError
        Fewer than two documents, sequences of unequal length, a statistic that is not finite on
        either run or on a swap of their values, or undefined on every resample.
    """
    import numpy as np

    _check_confidence(confidence)
    n = _check_lengths(baseline, candidate)
    _check_resampling(n, n_resamples)
    base, cand = object_array(baseline), object_array(candidate)
    difference = statistic_value(statistic, cand.tolist(), "candidate") - statistic_value(
        statistic, base.tolist(), "baseline"
    )
    test = f"{permutation_label(n, n_resamples, 'paired')}; paired percentile bootstrap interval"
    if base.tolist() == cand.tolist():
        return _identical(n, test)
    draws, undefined = paired_bootstrap_differences(base, cand, statistic, n_resamples, random_state)
    if draws.size == 0:
        raise ValueError(f"the statistic is undefined on all {n_resamples} bootstrap resamples")
    # The upper bound as the lower bound of the negated draws: swapping the runs negates every
    # draw, and so exactly swaps and negates the two bounds.
    tail = (1 - confidence) / 2
    lower, upper = float(np.quantile(draws, tail)), -float(np.quantile(-draws, tail))
    note = f"{undefined} of {n_resamples} resamples left out: the statistic is undefined on them" if undefined else ""
    return PairedDifference(
        difference=difference + 0.0,
        ci_lower=lower,
        ci_upper=upper,
        pvalue=swap_pvalue(base, cand, statistic, difference, n_resamples, random_state),
        n=n,
        test=test,
        note=note,
    )


# --------------------------------------------------------------------------
# Multiple comparisons and power


def adjust_bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (``scipy.stats.false_discovery_control``), for the
    comparisons of the subgroups of one task.

    Parameters
    ----------
    pvalues : sequence of float
        Raw p-values in [0, 1]; may be empty.

    Returns
    -------
    list of float
        The adjusted p-values, in the input order.

    Raises
    ------
    ValueError
        A p-value that is not a number in [0, 1].
    """
    from scipy.stats import false_discovery_control

    values = [float(p) for p in pvalues]
    for p in values:
        if not 0.0 <= p <= 1.0:  # also refuses NaN
            raise ValueError(f"p-values must be numbers in [0, 1], got {p!r}")
    if not values:
        return []
    return [float(p) for p in false_discovery_control(values, method="bh")]


def detectable_difference(n: int, *, discordant_share: float = 0.2, alpha: float = 0.05, power: float = 0.8) -> float:
    """Roughly the smallest difference of paired proportions that McNemar's test detects on
    ``n`` documents: Connor's (1987, Biometrics 43: 207-211) normal approximation of its power,
    solved for the difference (``scipy.optimize.brentq``).

    The difference is the share of documents that changed one way minus the share that changed
    the other; how many change at all (``discordant_share``) matters as much as ``n``.

    Parameters
    ----------
    n : int
        Matched documents, at least 1.
    discordant_share : float, default 0.2
        The share of documents whose outcome differs between the runs, in (0, 1].
    alpha : float, default 0.05
        Two-sided significance level.
    power : float, default 0.8
        The probability of detecting the difference.

    Returns
    -------
    float
        The difference, as a proportion (times 100 for percentage points).

    Raises
    ------
    ValueError
        Arguments out of range, or ``n`` too small to detect even a change of every discordant
        document in the same direction.
    """
    from scipy.optimize import brentq
    from scipy.special import ndtri

    if n < 1:
        raise ValueError(f"n must be at least 1, got {n!r}")
    if not 0.0 < discordant_share <= 1.0:
        raise ValueError(f"discordant_share must be in (0, 1], got {discordant_share!r}")
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0):
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha!r} and {power!r}")
    z_alpha, z_power = ndtri(1 - alpha / 2), ndtri(power)

    def shortfall(difference: float) -> float:  # increasing in the difference; 0 at the answer
        spread = math.sqrt(max(0.0, discordant_share - difference**2))
        return math.sqrt(n) * difference - (z_alpha * math.sqrt(discordant_share) + z_power * spread)

    if shortfall(discordant_share) < 0:
        raise ValueError(
            f"{n} documents with {discordant_share:g} of them discordant cannot detect a difference at "
            f"alpha={alpha:g} with power {power:g}"
        )
    return float(brentq(shortfall, 0.0, discordant_share, xtol=1e-12))
