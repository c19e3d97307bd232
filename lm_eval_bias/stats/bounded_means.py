"""Confidence bounds of the change of a bounded score that hold at every n, for the strict gate of
``lm-eval-bias check``: the betting bounds of Waudby-Smith & Ramdas (2024, "Estimating means of
bounded random variables by betting", JRSS-B 86(1): 1-27). The per-run intervals of a metric of
known range rest on them too (:func:`betting_mean_bounds`, :func:`betting_gap_bounds`), below the
documents or clusters of the others (:mod:`.proportions`, :mod:`.means`,
:mod:`.group_differences`), with the p-values those bounds invert (:func:`log_capitals`,
:func:`mean_pvalues`, :func:`gap_pvalues`).

The permutation intervals of :mod:`.paired` are exact only for differences symmetric about their
mean; on skewed scores one tail is approximate at small n (``tests/test_paired_coverage.py``). A
betting bound needs nothing but the values' range. To test "the mean is m", a gambler bets on each
unit's value against m; under that mean her capital ``K(m)`` is a nonnegative random variable of
expectation at most 1, so by Markov's inequality it reaches ``1 / alpha`` with probability at most
alpha, and the means at which it does are rejected. The bound is the edge of the means not rejected.

The bets are the paper's diversified Kelly ("dKelly") capital: the average of ``BETS`` capitals,
each betting one fixed fraction ``k / (BETS + 1)`` (k = 1 .. ``BETS``) of the largest bet the range
allows. Fixed bets rather than the paper's predictable plug-in ones, because with them
``E[K(m)] <= 1`` holds for independent units whose means differ, as long as they average m
(``1 + x <= e^x``: ``E[K] = prod(1 + lambda (m - mean_i)) <= exp(lambda sum(m - mean_i)) = 1``),
whereas a bet sized on the units seen so far needs every unit to have the same mean. Documents of a
run are not draws of one law (each has its own expected score), nor are clusters of unequal sizes
(below); and a fixed-bet capital is the same whatever the units' order. On 10 to 100 documents of
skewed toxicity scores these bounds were at most 8% farther from the mean than those of predictable
plug-in bets capped at 3/4 of the largest bet.

Units: documents are independent, each difference in ``[-width, width]``; where documents come in
clusters (templates: :mod:`.paired`, ``clusters``) the clusters are, and each cluster's unit is its
total difference times ``G / N`` (G clusters, N documents), whose average over the clusters is the
documents' mean difference and whose range is ``width * G * (largest cluster) / N``.

Per run, a mean's 95% interval is its lower and upper bound at 0.025 each, over the documents'
values centred on the middle of their range, or each cluster's centred total times G / N, clipped
to the range. A gap's is ``[L0 - U1, U0 - L1]`` of the two sides' bounds at 0.0125 each:
Bonferroni's inequality needs no independence, so it holds where clusters hold both sides'
documents, each side's documents of a cluster being one unit of that side. In the settings of
``tests/test_interval_coverage.py`` they covered 0.997 to 1.000 at 2 to 20 documents and clusters
(2,000 draws each: toxicity-like scores, shares, sentiment and 1-5 ratings; yes/no shares 0.1 to
0.9 and skewed scores in clusters of 2 to 20 documents with intra-cluster correlation 0.1 and 0.3;
gaps, each side in its own clusters or both in shared ones): conservative, as Markov's inequality
makes them. Their price is width: 0.45 for 10 documents of Beta(0.3, 3) toxicity, 0.36 for a
yes/no share of 0.7 over 12 equal clusters. A value outside the metric's range is one no task
writes: ``TypeError``.

No library is used: scipy and statsmodels have no betting bounds, and the packages that have them
(``confseq``, ``expectation``) are not among this package's dependencies, for a few lines of numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence

from lm_eval_bias.stats.confidence import CONFIDENCE

# One-sided level of every bound the strict gate reads: the upper end of a 95% interval.
ALPHA = 0.025
# Fixed bets averaged in the diversified Kelly capital.
BETS = 20
# Halvings of [mean, 1] when solving for the bound: to 2^-52 of the range, the precision of a float.
_BISECTIONS = 52


def upper_bounds(units, bound: float, alpha: float = ALPHA):
    """Upper confidence bounds of the average mean of independent units in ``[-bound, bound]``.

    The smallest m at which the diversified Kelly capital of the bets that the units lie below m
    (Waudby-Smith & Ramdas 2024) reaches ``1 / alpha``; that capital grows with m, so the
    means not rejected are every m below it, and the true average mean is among them with
    probability at least ``1 - alpha`` at every number of units.

    Parameters
    ----------
    units : array-like, shape (rows, n)
        Each row one set of units (the simulations bound many at once).
    bound : float
        Every unit's value lies in ``[-bound, bound]``.
    alpha : float, default 0.025
        The probability that the bound falls below the true average mean, at most.

    Returns
    -------
    ndarray, shape (rows,)
        The bounds; ``bound`` where no mean below it can be rejected.

    Raises
    ------
    ValueError
        No units, a bound that is not a positive number, a unit outside ``[-bound, bound]`` or not
        finite, or alpha not in (0, 1).
    """
    import numpy as np

    values = _checked_units(units, bound)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    scaled = (values + bound) / (2 * bound)  # in [0, 1]
    threshold = math.log(BETS / alpha)  # the average of BETS capitals reaches 1 / alpha
    # At the units' own mean no bet wins (Jensen's inequality), so the bound lies above it.
    low = scaled.mean(axis=1)
    high = np.ones_like(low)
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        open_ = middle < 1  # every unit at the top: nothing below 1 can be rejected
        hit = np.zeros_like(open_)
        hit[open_] = _log_capital_sum(scaled[open_], middle[open_]) >= threshold
        high = np.where(hit, middle, high)
        low = np.where(hit | ~open_, low, middle)
    return np.minimum(high * 2 * bound - bound, bound)


def _log_capital_sum(scaled, mean):
    """The logarithm of the sum of the ``BETS`` fixed bets' capitals that the units, scaled to
    [0, 1] (shape (rows, n)), average below ``mean`` (one per row, in [0, 1))."""
    import numpy as np

    fractions = np.arange(1, BETS + 1) / (BETS + 1)
    # Each bet's factor 1 + f (m - x) / (1 - m) is at least 1 - f > 0 for x in [0, 1].
    ratio = (mean[:, None] - scaled) / (1 - mean[:, None])
    log_capital = np.log1p(fractions[None, :, None] * ratio[:, None, :]).sum(axis=2)
    top = log_capital.max(axis=1)
    return top + np.log(np.exp(log_capital - top[:, None]).sum(axis=1))


def _checked_units(units, bound: float):
    """``units`` as a float array of shape (rows, n), each value finite and within the bound."""
    import numpy as np

    if not (isinstance(bound, (int, float)) and math.isfinite(bound) and bound > 0):
        raise ValueError(f"the units' bound must be a positive number, got {bound!r}")
    values = np.asarray(units, dtype=float)
    if values.ndim != 2 or values.shape[1] == 0:
        raise ValueError(f"units must be rows of at least one number, got shape {values.shape}")
    outside = ~(np.abs(values) <= bound * (1 + 1e-12))
    if outside.any():
        value = float(values[np.nonzero(outside)][0])
        raise ValueError(f"a unit's value {value!r} is outside [-{bound:g}, {bound:g}]")
    return np.clip(values, -bound, bound)


def lower_bounds(units, bound: float, alpha: float = ALPHA):
    """Lower confidence bounds of the average mean: minus the upper bounds of the negated units
    (:func:`upper_bounds`, same parameters)."""
    import numpy as np

    return -upper_bounds(-np.asarray(units, dtype=float), bound, alpha)


def log_capitals(units, bound: float, mean):
    """The logarithms of the diversified Kelly capitals against "the units' average mean is
    ``mean``": of the bets that it is below (which :func:`upper_bounds` reads) and above (which
    :func:`lower_bounds` reads).

    The bets are fixed, whatever the level, so ``mean`` lies above the upper bound at level alpha
    exactly when the first capital reaches ``1 / alpha``, and below the lower bound exactly when
    the second does: ``1 / capital`` (at most 1) is each side's p-value.

    Parameters
    ----------
    units : array-like, shape (rows, n)
        Each row one set of units.
    bound : float
        Every unit's value lies in ``[-bound, bound]``.
    mean : float or array-like, shape (rows,)
        The mean tested, strictly inside ``(-bound, bound)``.

    Returns
    -------
    below, above : ndarray, shape (rows,)

    Raises
    ------
    ValueError
        As :func:`upper_bounds`, or a mean not strictly inside the bound.
    """
    import numpy as np

    values = _checked_units(units, bound)
    means = np.broadcast_to(np.asarray(mean, dtype=float), values.shape[:1])
    if not (np.abs(means) < bound).all():
        raise ValueError(f"the mean tested must lie strictly inside (-{bound:g}, {bound:g}), got {mean!r}")
    # as upper_bounds scales the units, and lower_bounds their negations
    below = _log_capital_sum((values + bound) / (2 * bound), (means + bound) / (2 * bound))
    above = _log_capital_sum((bound - values) / (2 * bound), (bound - means) / (2 * bound))
    return below - math.log(BETS), above - math.log(BETS)


def mean_pvalues(units, bound: float, mean):
    """Two-sided p-values of "the units' average mean is ``mean``" that the interval of
    :func:`lower_bounds` and :func:`upper_bounds`, each at half the level, inverts:
    ``min(1, 2 / the larger capital)`` (:func:`log_capitals`), below 2 alpha exactly when that
    interval excludes ``mean``.

    Parameters
    ----------
    units : array-like, shape (rows, n)
        Each row one set of units.
    bound : float
        Every unit's value lies in ``[-bound, bound]``.
    mean : float or array-like, shape (rows,)
        The mean tested, strictly inside ``(-bound, bound)``.

    Returns
    -------
    ndarray, shape (rows,)

    Raises
    ------
    ValueError
        As :func:`log_capitals`.
    """
    import numpy as np

    below, above = log_capitals(units, bound, mean)
    return np.minimum(1.0, 2.0 * np.exp(-np.maximum(below, above)))


def gap_pvalues(first_units, first_bound: float, second_units, second_bound: float):
    """Two-sided p-values of "two sets of units have the same average mean" that the Bonferroni
    interval of the gap inverts: the smallest level a at which ``[L0 - U1, U0 - L1]``, each of
    the four bounds (:func:`lower_bounds`, :func:`upper_bounds`) at ``a / 4``, excludes 0.

    ``L0 > U1`` at level b exactly when some mean m lies below L0 and above U1, that is where
    the capitals that side 0's mean is above m and that side 1's is below m both reach ``1 / b``;
    the first falls and the second grows with m, so the largest m-wise smaller of the two, C, is
    where they cross (found by bisection), and the gap's lower bound is above 0 from ``b = 1 / C``.
    The p-value is ``min(1, 4 / C)`` for the larger C of the two directions.

    Parameters
    ----------
    first_units, second_units : array-like, shape (rows, n0) and (rows, n1)
        Each side's units, in one scale (so their average means can be compared).
    first_bound, second_bound : float
        Every unit of that side lies within plus or minus its bound.

    Returns
    -------
    ndarray, shape (rows,)

    Raises
    ------
    ValueError
        As :func:`upper_bounds`.
    """
    import numpy as np

    first, second = _checked_units(first_units, first_bound), _checked_units(second_units, second_bound)
    # Both bounds compared lie between the sides' means, inside either side's bound.
    edge = min(first_bound, second_bound)

    def crossing(falling_at, rising_at):
        """The largest over m of the smaller of a falling and a rising log capital: where they cross."""
        low, high = np.full(first.shape[0], -edge), np.full(first.shape[0], edge)
        largest = np.full(first.shape[0], -np.inf)
        for _ in range(_BISECTIONS):
            middle = (low + high) / 2
            falling, rising = falling_at(middle), rising_at(middle)
            largest = np.maximum(largest, np.minimum(falling, rising))
            above = falling > rising
            low, high = np.where(above, middle, low), np.where(above, high, middle)
        return largest

    # the gap's lower bound above 0: side 0's mean above m, side 1's below it; its upper bound below 0: the reverse
    lower_excludes = crossing(
        lambda m: log_capitals(first, first_bound, m)[1], lambda m: log_capitals(second, second_bound, m)[0]
    )
    upper_excludes = crossing(
        lambda m: log_capitals(second, second_bound, m)[1], lambda m: log_capitals(first, first_bound, m)[0]
    )
    return np.minimum(1.0, 4.0 * np.exp(-np.maximum(lower_excludes, upper_excludes)))


def unit_values(differences, width: float, clusters: Sequence[Hashable] | None = None):
    """The independent units whose average mean is the documents' mean difference, and their bound.

    Parameters
    ----------
    differences : array-like, shape (rows, n)
        Per-document differences (candidate minus baseline), each in ``[-width, width]``.
    width : float
        The width of the metric's range.
    clusters : sequence of hashable, optional
        Each document's cluster (the same in every row); None: documents are independent.

    Returns
    -------
    units : ndarray, shape (rows, units)
        The documents' differences; with clusters, each cluster's total times ``G / N``.
    bound : float
        Every unit lies in ``[-bound, bound]``: ``width``, or ``width * G * (largest cluster) / N``.

    Raises
    ------
    ValueError
        Clusters not one per document.
    """
    import numpy as np

    values = np.atleast_2d(np.asarray(differences, dtype=float))
    if clusters is None:
        return values, float(width)
    ids = list(clusters)
    if len(ids) != values.shape[1]:
        raise ValueError(f"clusters must name one cluster per document: got {len(ids)} for {values.shape[1]}")
    numbers: dict = {}
    index = np.array([numbers.setdefault(cluster, len(numbers)) for cluster in ids], dtype=np.intp)
    order = np.argsort(index, kind="stable")
    sizes = np.bincount(index)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    totals = np.add.reduceat(values[:, order], starts, axis=1)
    scale = sizes.size / index.size
    return totals * scale, float(width) * scale * int(sizes.max())


def mean_change_bounds(differences, width: float, clusters=None, alpha: float = ALPHA):
    """Lower and upper confidence bounds of the mean difference, each one-sided at ``alpha``.

    Parameters
    ----------
    differences : array-like, shape (rows, n)
        Per-document differences, each in ``[-width, width]``.
    width : float
        The width of the metric's range.
    clusters : sequence of hashable, optional
        Each document's cluster (:func:`unit_values`).
    alpha : float, default 0.025
        Each bound's one-sided level.

    Returns
    -------
    lower, upper : ndarray, shape (rows,)

    Raises
    ------
    ValueError
        As :func:`upper_bounds` and :func:`unit_values`.
    """
    units, bound = unit_values(differences, width, clusters)
    return lower_bounds(units, bound, alpha), upper_bounds(units, bound, alpha)


def _group_bounds(groups: Sequence[Hashable], differences, width: float, clusters, alpha: float):
    """Each group's (lower, upper) bounds of its mean difference, by group in order of first
    appearance, each one-sided at ``alpha``."""
    import numpy as np

    values = np.atleast_2d(np.asarray(differences, dtype=float))
    labels = list(groups)
    if len(labels) != values.shape[1]:
        raise ValueError(f"groups must name one group per document: got {len(labels)} for {values.shape[1]}")
    bounds = {}
    for group in dict.fromkeys(labels):
        members = np.array([label == group for label in labels])
        own = None if clusters is None else [cluster for cluster, inside in zip(clusters, members) if inside]
        bounds[group] = mean_change_bounds(values[:, members], width, own, alpha)
    return bounds


def gap_change_bounds(sides: Sequence[int], differences, width: float, clusters=None, alpha: float = ALPHA):
    """Lower and upper confidence bounds of the change of a gap, mean(side 0) - mean(side 1), each
    one-sided at ``alpha``: by Bonferroni's inequality, the upper bound is side 0's upper bound minus
    side 1's lower bound, each at ``alpha / 2`` (and the lower bound the other way round), whether
    or not the sides share clusters.

    Parameters
    ----------
    sides : sequence of int
        Each document's side, 0 or 1; each side needs a document.
    differences : array-like, shape (rows, n)
        Per-document differences, each in ``[-width, width]``.
    width : float
        The width of the range of one document's value.
    clusters : sequence of hashable, optional
        Each document's cluster.
    alpha : float, default 0.025
        Each bound's one-sided level.

    Returns
    -------
    lower, upper : ndarray, shape (rows,)

    Raises
    ------
    ValueError
        A side other than 0 or 1, or a side without documents; as :func:`upper_bounds`.
    """
    labels = list(sides)
    if set(labels) != {0, 1}:
        raise ValueError(f"a gap needs documents on sides 0 and 1, got sides {sorted(set(labels), key=str)}")
    bounds = _group_bounds(labels, differences, width, clusters, alpha / 2)
    (first_low, first_high), (second_low, second_high) = bounds[0], bounds[1]
    return first_low - second_high, first_high - second_low


def range_change_upper_bound(groups: Sequence[Hashable], differences, width: float, clusters=None, alpha=ALPHA):
    """An upper confidence bound, one-sided at ``alpha``, of the change of the range of the group
    means (largest minus smallest).

    ``range(b + d) - range(b) <= max(d) - min(d)`` for the baseline's group means b and their
    changes d, and ``max(d) - min(d)`` is at most the largest group's upper bound minus the smallest
    lower bound; all 2K bounds of K groups hold together with probability ``1 - alpha`` when each
    is at ``alpha / (2K)`` (Bonferroni).

    Parameters
    ----------
    groups : sequence of hashable
        Each document's group; at least two groups.
    differences : array-like, shape (rows, n)
        Per-document differences, each in ``[-width, width]``.
    width : float
        The width of the range of one document's value.
    clusters : sequence of hashable, optional
        Each document's cluster.
    alpha : float, default 0.025
        The bound's one-sided level.

    Returns
    -------
    ndarray, shape (rows,)

    Raises
    ------
    ValueError
        Fewer than two groups; as :func:`upper_bounds`.
    """
    import numpy as np

    count = len(set(groups))
    if count < 2:
        raise ValueError(f"a range of group means needs at least two groups, got {count}")
    bounds = _group_bounds(groups, differences, width, clusters, alpha / (2 * count))
    lowers = np.stack([low for low, _ in bounds.values()])
    uppers = np.stack([high for _, high in bounds.values()])
    return uppers.max(axis=0) - lowers.min(axis=0)


def spread_change_upper_bound(groups: Sequence[Hashable], differences, width: float, clusters=None, alpha=ALPHA):
    """An upper confidence bound, one-sided at ``alpha``, of the change of the population standard
    deviation of the group means: ``SD(b + d) - SD(b) <= SD(d) <= range(d) / 2`` (the standard
    deviation is a norm of the centred means), so half of :func:`range_change_upper_bound`'s bound
    (same parameters and errors)."""
    return range_change_upper_bound(groups, differences, width, clusters, alpha) / 2


def worsening_upper_bound(change_bounds: Callable, base_value, ideal: float, value_range, alpha: float = ALPHA):
    """An upper confidence bound, one-sided at ``alpha``, of how much farther from ``ideal`` the
    candidate's value is than the baseline's: ``w(d) = |base + d - ideal| - |base - ideal|`` of the
    change d of the statistic.

    Where the ideal is an end of the statistic's range (toxicity's 0, a share's 1, a range's 0),
    ``w(d) = d`` (``-d`` at the top) for every candidate value in the range and ``w(d) >= d``
    beyond it, so ``w`` of the upper (lower) bound of d at ``alpha`` bounds it. Where it lies inside
    (a gap's 0), the statistic can worsen either way: ``w`` is convex, so its larger value at d's
    lower and upper bounds, each at ``alpha / 2``, bounds it when both hold (the baseline's value
    taken as the reference, as the comparison's worsening takes it).

    Parameters
    ----------
    change_bounds : callable
        ``change_bounds(level)`` -> (lower, upper) bounds of d, each one-sided at ``level``
        (numbers, or arrays of one per row).
    base_value : float or ndarray
        The baseline's value of the statistic (one per row).
    ideal : float
        The statistic's ideal value.
    value_range : (float, float)
        The statistic's range.
    alpha : float, default 0.025
        The bound's one-sided level.

    Returns
    -------
    float or ndarray
        The bound (one per row).
    """
    import numpy as np

    def farther(change):
        return np.abs(base_value + change - ideal) - np.abs(base_value - ideal)

    low, high = value_range
    if ideal <= low:
        return farther(change_bounds(alpha)[1])
    if ideal >= high:
        return farther(change_bounds(alpha)[0])
    lower, upper = change_bounds(alpha / 2)
    return np.maximum(farther(lower), farther(upper))


# --------------------------------------------------------------------------
# Per-run intervals of per-document values of a known range: at every number of documents or clusters


def sharp_or_betting(sharp, value_range, betting):
    """``sharp()``, unless it raises ValueError (too few documents or clusters, or values that do
    not vary) and a ``value_range`` is given: then ``betting()``, which holds at every n.

    Parameters
    ----------
    sharp : callable
        The interval (or test) otherwise shown, called with no argument.
    value_range : (float, float) or None
        The range one document's value can take; None: no betting interval.
    betting : callable
        The betting interval (or test) in its place, called with no argument.

    Returns
    -------
    What ``sharp()`` or ``betting()`` returns.

    Raises
    ------
    ValueError
        ``sharp()``'s, without a ``value_range``.
    """
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
    """Per-document values as the independent units of the bounds above, and their bound.

    The values are centred on the middle of their range, so each lies within half its width h;
    without clusters the documents are the units, with them each cluster's centred total times
    G / N (G clusters, N documents; :func:`unit_values`), whose average over the
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
    ``alpha``, valid at every number of documents or clusters (:func:`lower_bounds`,
    :func:`upper_bounds`: the diversified Kelly capital of fixed bets; Waudby-Smith & Ramdas 2024).

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

    units, bound = betting_units(values, value_range, unit_of)
    low, high = _checked_value_range(value_range)
    centre = (low + high) / 2
    # Clusters' units may reach beyond half the range (a large cluster's total); the mean cannot.
    lower = np.clip(lower_bounds(units, bound, alpha) + centre, low, high)
    return lower, np.clip(upper_bounds(units, bound, alpha) + centre, low, high)


def betting_mean_pvalue(values, value_range, null: float, unit_of=None):
    """Two-sided p-values of "the mean is ``null``" that the betting interval of
    :func:`betting_mean_bounds` inverts (:func:`mean_pvalues`): below 0.05 exactly
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
    units, bound = betting_units(values, value_range, unit_of)
    return mean_pvalues(units, bound, null - sum(_checked_value_range(value_range)) / 2)


def betting_mean_interval(array, unit_of, value_range, confidence: float) -> tuple[float, float]:
    """The betting interval of one sample's mean at ``confidence``: its :func:`betting_mean_bounds`,
    each one-sided at half of 1 - ``confidence``.

    Parameters
    ----------
    array : numpy.ndarray, shape (n,)
        Per-document values, each in ``value_range``.
    unit_of : numpy.ndarray or None
        Each document's cluster as 0 .. G-1; None: independent documents.
    value_range : (float, float)
        The range one document's value can take.
    confidence : float
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    TypeError
        As :func:`betting_units`.
    """
    lower, upper = betting_mean_bounds(array, value_range, unit_of, (1.0 - confidence) / 2.0)
    return float(lower[0]), float(upper[0])


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
