"""Paired comparison of two runs over the same documents: the difference of a metric between a
baseline and a candidate, its paired interval and the p-value of a paired test.

Both runs scored the same documents, so each document is its own control: a test on the
documents whose outcome changed detects differences that two separate intervals never will.
``baseline[i]`` and ``candidate[i]`` are always the same document.

Every interval is obtained from the test shown beside it, or bounds it from outside, so that the
interval excludes 0 exactly where p < 1 - confidence, and it holds its level at small n (the
paired bootstrap intervals used before covered 52%, 73%, 85% and 91% at n = 2, 3, 5, 10):

- yes/no outcomes (:func:`paired_proportions`): the exact McNemar test, and the interval of the
  difference ``psi * (2 pi - 1)`` over the Clopper-Pearson intervals of pi, the share of changed
  documents that became yes (the interval McNemar's test inverts, at the confidence level), and
  psi, the share of documents that changed (at 1 - (1 - confidence) / 50). By Bonferroni's
  inequality it covers at least ``confidence - (1 - confidence) / 50`` (94.9%) at every n, even
  one document, and the upper bound falls below the truth at most 2.55% of the time.
- continuous values (:func:`paired_means`): the sign-flip permutation test and the interval
  obtained by inverting it (exact for differences symmetric about their mean; Hartigan 1969;
  Good 2005, *Permutation, Parametric and Bootstrap Tests of Hypotheses*);
- any statistic of the documents, such as a gap between groups (:func:`paired_statistic`): the
  permutation test that swaps each document's two values, and the estimate plus or minus the
  quantile of the swapped differences at which that test rejects.

A permutation test of G units cannot reach p < 0.05 below G = 6 (its smallest p-value is
2 / 2^G = 0.0625 at G = 5): there the p-value stands but the bounds are NaN, with a note that
starts "too few documents (n = N)" or "too few clusters (G = N)". An interval that collapses to
one point (every unit's difference the same, identical runs among them) is NaN too: agreement on
a few documents does not show how far the difference could be. The simulations behind these
rules are ``tests/test_paired_coverage.py``.

With ``clusters`` (one id per document: the template a document was generated from) the
permutation tests swap whole clusters, so the cluster is the independent unit, and
``design_effect`` measures how much the clustering inflates the variance of the mean difference.
Clusters of one document each are no clusters: the result is the one without them.

Swapping the baseline and the candidate negates the difference and the interval exactly and
keeps the p-value, and the same inputs always give the same numbers (seeded resampling).
Inputs the statistics cannot support raise ``ValueError``: no documents, sequences of unequal
length, values that are not finite numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace

from lm_eval_bias.stats.clusters import design_effect
from lm_eval_bias.stats.confidence import CONFIDENCE, check_confidence
from lm_eval_bias.stats.paired_resampling import (
    minimum_units,
    object_array,
    permutation_label,
    sign_flip_inversion,
    statistic_value,
    swap_quantile_interval,
    swapped_differences,
)

# How much of 1 - confidence the interval of the share of changed documents spends (see the
# module docstring): the interval of yes/no outcomes covers at least confidence - this.
_DISCORDANT_SHARE_ALPHA = 1 / 50


@dataclass(frozen=True)
class PairedDifference:
    """A paired comparison of one metric between a baseline and a candidate run.

    Attributes
    ----------
    difference : float
        ``statistic(candidate) - statistic(baseline)``, in the metric's units.
    ci_lower, ci_upper : float
        The paired interval of the difference; NaN where the documents cannot support one (the
        reason in ``note``).
    pvalue : float
        Two-sided p-value of the paired test named in ``test``.
    n : int
        The matched documents it rests on.
    test : str
        The test and the interval, e.g. ``"exact McNemar; Clopper-Pearson box interval"``.
    note : str
        What the reader must know to read the numbers, e.g. ``"no discordant pairs: p = 1"``.
    design_effect : float or None
        With clusters: the cluster-robust variance of the mean difference over its variance with
        independent documents (for :func:`paired_statistic`, the variance of the cluster swaps
        over that of the document swaps); None without clusters or where there is no variance.
    n_clusters : int or None
        With clusters: how many; None without.
    """

    difference: float
    ci_lower: float
    ci_upper: float
    pvalue: float
    n: int
    test: str
    note: str = ""
    design_effect: float | None = None
    n_clusters: int | None = None


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


def _check_resamples(n_resamples: int) -> None:
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive whole number, got {n_resamples!r}")


# --------------------------------------------------------------------------
# Clusters


def _cluster_index(clusters: Sequence[Hashable] | None, n: int):
    """Each document's cluster as 0 .. G-1 in order of first appearance, or None where there are
    no clusters or every cluster holds one document (the same as none)."""
    import numpy as np

    if clusters is None:
        return None
    ids = list(clusters)
    if len(ids) != n:
        raise ValueError(f"clusters must name one cluster per document: got {len(ids)} for {n} documents")
    numbers: dict = {}
    try:
        index = np.array([numbers.setdefault(cluster, len(numbers)) for cluster in ids], dtype=np.intp)
    except TypeError as error:
        raise ValueError(f"cluster ids must be hashable: {error}") from None
    return None if len(numbers) == n else index


def _unit_words(clustered: bool) -> tuple[str, str]:
    return ("clusters", "G") if clustered else ("documents", "n")


def _too_few_note(units: int, clustered: bool, confidence: float) -> str:
    noun, symbol = _unit_words(clustered)
    fewest, alpha = minimum_units(confidence), 1 - confidence
    return (
        f"too few {noun} ({symbol} = {units}): a permutation test of fewer than {fewest} {noun} cannot reach "
        f"p < {alpha:.2g}, so no interval"
    )


# The swap interval of a statistic (a gap between groups) covers only 91-93% at 6-8 units when one
# group's values shift and are skewed; from 10 units it holds 94% or more
# (tests/test_paired_coverage.py::test_a_gap_s_interval_is_given_only_where_it_holds_its_level).
STATISTIC_MINIMUM_UNITS = 10


def _interval_or_note(
    lower: float, upper: float, units: int, exact: bool, clustered: bool, confidence: float, fewest: int = 0
):
    """The bounds where they are an interval, else NaN bounds and the note that says why; ``fewest``:
    the units from which the method's interval holds its level."""
    if exact and units < minimum_units(confidence):
        return math.nan, math.nan, _too_few_note(units, clustered, confidence)
    if units < fewest:
        noun, symbol = _unit_words(clustered)
        return (
            math.nan,
            math.nan,
            f"too few {noun} ({symbol} = {units}): the interval of a statistic holds its {confidence:.0%} level "
            f"from {fewest} {noun}, so no interval",
        )
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return math.nan, math.nan, f"too few resamples for a {confidence:.0%} interval: raise n_resamples"
    if math.isclose(lower, upper, rel_tol=1e-9, abs_tol=1e-12):  # a point, up to rounding in the sums
        noun = "cluster" if clustered else "document"
        return (
            math.nan,
            math.nan,
            f"every {noun}'s difference is {lower:.6g}: no interval, as {noun}s that agree this closely do "
            "not show how far the difference could be",
        )
    return lower, upper, ""


# --------------------------------------------------------------------------
# The mean of the differences: sign-flip test and its inversion


def _sign_flip(differences, unit_of, confidence: float, n_resamples: int, random_state: int, kind: str):
    """The sign-flip test and its inverted interval of mean(differences), the units of
    ``unit_of`` (None: documents) swapped as wholes. Returns (lower, upper, p, test, note)."""
    import numpy as np

    clustered = unit_of is not None
    if not clustered:
        unit_of = np.arange(differences.size)
    totals = np.bincount(unit_of, weights=differences)
    sizes = np.bincount(unit_of).astype(float)
    lower, upper, pvalue = sign_flip_inversion(totals[None, :], sizes, confidence, n_resamples, random_state)
    units = sizes.size
    lower, upper, note = _interval_or_note(
        float(lower[0]), float(upper[0]), units, 2**units <= n_resamples, clustered, confidence
    )
    label = permutation_label(units, n_resamples, f"cluster {kind}" if clustered else kind)
    return lower, upper, float(pvalue[0]), f"{label}; interval inverting it", note


def _clustered_result(difference, differences, unit_of, n, test_parts, scale=1.0) -> PairedDifference:
    lower, upper, pvalue, test, note = test_parts
    return PairedDifference(
        difference=difference,
        ci_lower=lower * scale,
        ci_upper=upper * scale,
        pvalue=pvalue,
        n=n,
        test=test,
        note=note,
        design_effect=design_effect(differences, unit_of),
        n_clusters=int(unit_of.max()) + 1,
    )


# --------------------------------------------------------------------------
# Yes/no outcomes: exact McNemar and the Clopper-Pearson box interval


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


def _box_upper_bound(became_yes: int, became_no: int, n: int, confidence: float) -> float:
    """The largest ``psi * (2 pi - 1)`` over the Clopper-Pearson intervals of pi (the share of the
    changed documents that became yes, at ``confidence``) and psi (the share that changed, at
    1 - alpha / 50). The lower bound is minus this with the two directions exchanged, so that
    swapping the runs negates the interval exactly."""
    from scipy.stats import binomtest

    changed = became_yes + became_no
    alpha = 1 - confidence
    share = binomtest(changed, n).proportion_ci(1 - alpha * _DISCORDANT_SHARE_ALPHA, "exact")
    towards_yes = 1.0 if changed == 0 else binomtest(became_yes, changed).proportion_ci(confidence, "exact").high
    lean = 2 * towards_yes - 1
    return share.high * lean if lean >= 0 else share.low * lean


def paired_proportions(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    scale: float = 1.0,
    confidence: float = CONFIDENCE,
    clusters: Sequence[Hashable] | None = None,
    n_resamples: int = 9999,
    random_state: int = 0,
) -> PairedDifference:
    """Per-document yes/no outcomes of two runs: the exact McNemar test and an interval of the
    difference of the two proportions that agrees with it.

    McNemar's test is the two-sided binomial test (``scipy.stats.binomtest``, p = 1/2) of the
    documents whose outcome changed, as ``statsmodels``' ``mcnemar(table, exact=True)``; without
    such documents there is nothing to test and p = 1. The difference is psi (2 pi - 1), psi the
    share of documents that changed and pi the share of those that became yes; the interval is
    its range over the Clopper-Pearson intervals of pi (at ``confidence``: the interval that the
    exact binomial test inverts, so the difference's interval excludes 0 exactly where McNemar's
    p < 1 - confidence) and of psi (at 1 - (1 - confidence) / 50). It covers at least
    confidence - (1 - confidence) / 50 at every n (Bonferroni), and is not [0, 0] without changed
    documents: agreement on n documents bounds the share that could change only so far.

    With ``clusters`` the test and the interval are the cluster sign-flip test of the documents'
    differences and its inversion (:func:`paired_means`).

    Parameters
    ----------
    baseline, candidate : sequence of float
        Each run's outcome per document, in the same document order: 0 (no) or 1 (yes), or 0 and
        ``scale`` (outcomes coded 0 and 100 with ``scale=100``).
    scale : float, default 1.0
        The unit of the difference and its interval: 100 for percentage points.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    clusters : sequence of hashable, optional
        Each document's cluster (e.g. its template), in the same order.
    n_resamples : int, default 9999
        Random swaps of the cluster sign-flip test (every swap is enumerated up to
        log2(``n_resamples``) clusters); unused without clusters.
    random_state : int, default 0
        Seed of the swaps.

    Returns
    -------
    PairedDifference
        The difference of the candidate's share of yes minus the baseline's, times ``scale``.

    Raises
    ------
    ValueError
        No documents, sequences of unequal length, an outcome other than 0, 1 or ``scale``, or
        clusters not one per document.
    """
    check_confidence(confidence)
    _check_resamples(n_resamples)
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    base_values, cand_values = _paired_arrays(baseline, candidate)
    base_yes = _outcomes(base_values, scale, "baseline")
    cand_yes = _outcomes(cand_values, scale, "candidate")
    n = base_yes.size
    became_yes = int((~base_yes & cand_yes).sum())
    became_no = int((base_yes & ~cand_yes).sum())
    difference = (became_yes - became_no) / n * scale + 0.0
    unit_of = _cluster_index(clusters, n)
    if unit_of is not None:
        differences = cand_yes.astype(float) - base_yes.astype(float)
        parts = _sign_flip(differences, unit_of, confidence, n_resamples, random_state, "sign-flip")
        return _clustered_result(difference, differences, unit_of, n, parts, scale)
    changed = became_yes + became_no
    if changed == 0:
        pvalue, note = 1.0, "no discordant pairs: p = 1"
    else:
        from scipy.stats import binomtest

        # The smaller count, so that swapping the runs gives the same float.
        pvalue, note = float(binomtest(min(became_yes, became_no), changed, 0.5).pvalue), ""
    upper = _box_upper_bound(became_yes, became_no, n, confidence)
    lower = -_box_upper_bound(became_no, became_yes, n, confidence)
    if pvalue >= 1 - confidence:
        # Exact arithmetic puts 0 inside here; this keeps rounding in scipy's beta quantiles from
        # moving a bound across it.
        lower, upper = min(lower, 0.0), max(upper, 0.0)
    return PairedDifference(
        difference=difference,
        ci_lower=lower * scale + 0.0,
        ci_upper=upper * scale + 0.0,
        pvalue=pvalue,
        n=n,
        test="exact McNemar; Clopper-Pearson box interval",
        note=note,
    )


# --------------------------------------------------------------------------
# Continuous values: the sign-flip permutation test and its inversion


def paired_means(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 9999,
    random_state: int = 0,
    clusters: Sequence[Hashable] | None = None,
) -> PairedDifference:
    """Continuous per-document values of two runs: the mean difference, the sign-flip permutation
    test and the interval obtained by inverting it.

    The test swaps each document's two values at random (flips the sign of its difference): every
    swap is enumerated for up to log2(``n_resamples``) documents, otherwise ``n_resamples`` swaps
    are drawn, with scipy's definition of the p-value. The interval holds the deltas at which the
    same test, applied to the differences minus delta with the same swaps, does not reject: its
    bounds are order statistics of the mean differences of the swapped documents. It is exact
    where the differences are symmetric about their mean, and within 1-2 points of its level on
    skewed values in [0, 1] (``tests/test_paired_coverage.py``). With ``clusters`` each cluster's
    documents are swapped together.

    Parameters
    ----------
    baseline, candidate : sequence of float
        Each run's value per document, in the same document order; finite numbers.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    n_resamples : int, default 9999
        Random swaps of the permutation test, where they are not all enumerated.
    random_state : int, default 0
        Their seed.
    clusters : sequence of hashable, optional
        Each document's cluster (e.g. its template), in the same order.

    Returns
    -------
    PairedDifference
        mean(candidate - baseline); NaN bounds with fewer than 6 documents (clusters), or where
        every document's (cluster's) difference is the same, identical runs among them (p = 1).

    Raises
    ------
    ValueError
        No documents, sequences of unequal length, a value that is not finite, or clusters not
        one per document.
    """
    import numpy as np

    check_confidence(confidence)
    _check_resamples(n_resamples)
    base, cand = _paired_arrays(baseline, candidate)
    differences = cand - base
    difference = float(np.mean(differences)) + 0.0
    unit_of = _cluster_index(clusters, base.size)
    parts = _sign_flip(differences, unit_of, confidence, n_resamples, random_state, "sign-flip")
    if unit_of is not None:
        return _clustered_result(difference, differences, unit_of, base.size, parts)
    lower, upper, pvalue, test, note = parts
    return PairedDifference(difference, lower, upper, pvalue, base.size, test, note)


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
    clusters: Sequence[Hashable] | None = None,
) -> PairedDifference:
    """Any statistic of a list of per-document values (a task's own aggregation, such as a gap
    between the means of two groups) in two runs: its difference, a paired permutation test and
    the interval that test gives.

    The test swaps each document's two values at random (every swap enumerated for up to
    log2(``n_resamples``) documents, otherwise ``n_resamples`` drawn): swapping every document
    negates the difference, so its null distribution is symmetric and the two-sided p-value is
    the share of swaps whose difference is at least as large in size as the observed one. The
    interval is the difference plus or minus the size at which that test rejects: it excludes 0
    exactly where p < 1 - confidence. Its half-width includes the difference's own size as well
    as its noise, so it errs towards wide. With ``clusters`` each cluster's documents are swapped
    together.

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
        Random swaps of the permutation test, where they are not all enumerated.
    random_state : int, default 0
        Their seed.
    clusters : sequence of hashable, optional
        Each document's cluster (e.g. its template), in the same order.

    Returns
    -------
    PairedDifference
        statistic(candidate) - statistic(baseline); NaN bounds with fewer than 6 documents
        (clusters), or where no swap changes the difference's size (identical runs: p = 1).

    Raises
    ------
    ValueError
        No documents, sequences of unequal length, a statistic that is not finite on either run
        or on a swap of their values, or clusters not one per document.
    """
    import numpy as np

    check_confidence(confidence)
    _check_resamples(n_resamples)
    n = _check_lengths(baseline, candidate)
    base, cand = object_array(baseline), object_array(candidate)
    difference = statistic_value(statistic, cand.tolist(), "candidate") - statistic_value(
        statistic, base.tolist(), "baseline"
    )
    unit_of = _cluster_index(clusters, n)
    clustered = unit_of is not None
    units_of = unit_of if clustered else np.arange(n)
    units = int(units_of.max()) + 1
    null, patterns = swapped_differences(base, cand, units_of, statistic, n_resamples, random_state)
    exact = 2**units <= n_resamples
    lower, upper, pvalue = swap_quantile_interval(null[None, :], [difference], patterns, confidence, exact)
    lower, upper, note = _interval_or_note(
        float(lower[0]), float(upper[0]), units, exact, clustered, confidence, STATISTIC_MINIMUM_UNITS
    )
    kind = "cluster swap" if clustered else "paired"
    result = PairedDifference(
        difference=difference + 0.0,
        ci_lower=lower,
        ci_upper=upper,
        pvalue=float(pvalue[0]),
        n=n,
        test=f"{permutation_label(units, n_resamples, kind)}; interval of its rejection size",
        note=note,
    )
    if not clustered:
        return result
    effect = None
    if units >= 2:  # one cluster has no variance between clusters to compare
        documents, _ = swapped_differences(base, cand, np.arange(n), statistic, n_resamples, random_state)
        spread, between = float(np.mean(documents**2)), float(np.mean(null**2))
        effect = between / spread if spread > 0 and between > 0 else None
    return replace(result, design_effect=effect, n_clusters=units)


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
