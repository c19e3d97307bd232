"""Intervals of the range (largest minus smallest) and the spread (population standard
deviation) of several groups' means: Bonferroni over every pair's gap (:mod:`.group_differences`),
so they need the documents and clusters each gap needs, and where every group's values are
yes/no outcomes :data:`MIN_DOCUMENTS_BINARY_RANGE` documents a group; where a ``value_range`` is
given, a pair whose gap is not shown gets the betting one, and every pair does where yes/no
groups have fewer. A range's lower bound is above 0 exactly when ``significance.range_pvalue``
is below 0.05, with clusters as without.
"""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.stats.bounded_means import sharp_or_betting
from lm_eval_bias.stats.clusters import split_cluster_ids, unit_index
from lm_eval_bias.stats.confidence import CONFIDENCE, check_confidence, require_documents
from lm_eval_bias.stats.group_differences import BettingContrast, contrast_of
from lm_eval_bias.stats.proportions import all_zero_or_one

# The fewest documents a group from which the Bonferroni intervals of yes/no outcome means held at
# least 93% coverage of their 95% level.
MIN_DOCUMENTS_BINARY_RANGE = 30


def split_groups(values: Sequence) -> tuple[list, list | None]:
    """Each group's values, groups in name order, and each group's cluster ids (None without);
    needs two groups and finite values.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last.

    Returns
    -------
    groups : list of numpy.ndarray
        Each group's values.
    group_ids : list of numpy.ndarray or None
        Each group's documents' cluster ids; None without them.

    Raises
    ------
    ValueError
        Fewer than two groups, or a value that is not finite.
    """
    import numpy as np

    rows, ids = split_cluster_ids(values, 2)
    by_group: dict[str, list[int]] = {}
    for position, (group, _) in enumerate(rows):
        by_group.setdefault(str(group), []).append(position)
    if len(by_group) < 2:
        raise ValueError("a range of group means needs at least two groups")
    numbers = np.asarray([float(value) for _, value in rows])
    positions = [np.asarray(by_group[name]) for name in sorted(by_group)]
    groups = [numbers[where] for where in positions]
    if not all(np.isfinite(group).all() for group in groups):
        raise ValueError("per-document values must be finite numbers")
    return groups, (None if ids is None else [ids[where] for where in positions])


def _means(groups):
    import numpy as np

    return np.asarray([group.mean() for group in groups])


def range_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the largest minus the smallest group mean.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.

    Returns
    -------
    float
    """
    means = _means(split_groups(values)[0])
    return float(means.max() - means.min())


def spread_of_means(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the population standard deviation (ddof=0) of the group means,
    the disparity GenderCARE reports as sigma.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.

    Returns
    -------
    float
    """
    return float(_means(split_groups(values)[0]).std())


def pairwise_contrasts(groups, group_ids=None, value_range=None) -> list:
    """Every pair of groups' contrast (:func:`group_differences.contrast_of`: with a
    ``value_range``, a betting one where the other cannot be shown), clustered where ``group_ids``
    gives each group's cluster ids; groups of yes/no outcomes need
    :data:`MIN_DOCUMENTS_BINARY_RANGE` documents each (Agresti-Caffo at a Bonferroni level falls
    to 92% coverage at 10 documents a group over five groups), below which every pair's contrast
    is a betting one with a ``value_range``.

    Parameters
    ----------
    groups : list of numpy.ndarray
        Each group's values (:func:`split_groups`).
    group_ids : list of numpy.ndarray, optional
        Each group's documents' cluster ids; None: independent documents.
    value_range : (float, float), optional
        The range one document's value can take.

    Returns
    -------
    list of group_differences.Contrast or group_differences.BettingContrast
        One per pair of groups, in the order of ``itertools.combinations``.

    Raises
    ------
    ValueError
        As :func:`group_differences.contrast_of`, or too few documents of yes/no outcomes, each
        without a ``value_range``.
    TypeError
        As :func:`bounded_means.betting_units`, where a betting contrast is given.
    """
    import itertools

    import numpy as np

    pairs = list(itertools.combinations(range(len(groups)), 2))

    def unit_of(i, j):
        return None if group_ids is None else unit_index(np.concatenate([group_ids[i], group_ids[j]]))

    def sharp():
        if all(all_zero_or_one(group) for group in groups):
            require_documents(
                min(group.size for group in groups),
                MIN_DOCUMENTS_BINARY_RANGE,
                "the Bonferroni interval of a range or spread of yes/no outcome means",
            )
        return [contrast_of(groups[i], groups[j], unit_of(i, j), value_range) for i, j in pairs]

    def betting():
        return [BettingContrast(groups[i], groups[j], unit_of(i, j), value_range) for i, j in pairs]

    return sharp_or_betting(sharp, value_range, betting)


def _pairwise_distance_bounds(values, confidence: float, value_range=None):
    """Bounds on each pair's |mean difference|, all holding together with probability at least
    ``confidence`` (Bonferroni: each pair's interval at 1 - (1 - confidence) / pairs)."""
    import numpy as np

    check_confidence(confidence)
    groups, group_ids = split_groups(values)
    contrasts = pairwise_contrasts(groups, group_ids, value_range)
    pair_confidence = 1.0 - (1.0 - confidence) / len(contrasts)
    bounds = np.asarray([contrast.interval(pair_confidence) for contrast in contrasts])
    excludes_zero = (bounds[:, 0] > 0) | (bounds[:, 1] < 0)
    nearest = np.where(excludes_zero, np.abs(bounds).min(axis=1), 0.0)
    farthest = np.abs(bounds).max(axis=1)
    return nearest, farthest, len(groups)


def range_interval(
    values: Sequence[tuple[str, float]],
    confidence: float = CONFIDENCE,
    value_range: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Interval of the range of group means, from simultaneous (Bonferroni) intervals of every
    pair's difference (:class:`group_differences.Contrast` at 1 - 0.05 / pairs): the range is the largest
    |difference|, so it lies between the largest lower and the largest upper bound of the
    |differences| whenever all of them hold. With a ``value_range``, a pair whose interval is
    not shown gets the betting one (:class:`group_differences.BettingContrast`), and every pair does where all
    groups are yes/no outcomes of fewer than :data:`MIN_DOCUMENTS_BINARY_RANGE` documents. Its
    lower bound is above 0 exactly when ``significance.range_pvalue`` (given the same
    ``value_range``) is below 1 - confidence.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last (then each pair's
        gap needs its clusters, as :func:`group_differences.difference_interval`); at least two groups, each of at
        least 2 documents (3 where both groups of a pair are yes/no outcomes, 30 where every
        group's are: :data:`MIN_DOCUMENTS_BINARY_RANGE`); with a ``value_range``, of one.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take (the values compared).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smallest group) below those numbers; or when
        the documents cannot support the interval (see the parameters); each only without a
        ``value_range``.
    TypeError
        A value outside ``value_range`` (:func:`bounded_means.betting_units`), where a betting interval is
        given.
    """
    nearest, farthest, _ = _pairwise_distance_bounds(values, confidence, value_range)
    return float(nearest.max()), float(farthest.max())


def range_ci_lower(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`range_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return range_interval(values, value_range=value_range)[0]


def range_ci_upper(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`range_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return range_interval(values, value_range=value_range)[1]


def spread_interval(
    values: Sequence[tuple[str, float]],
    confidence: float = CONFIDENCE,
    value_range: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Interval of the spread (population sd) of k group means, from the same simultaneous
    pairwise intervals as :func:`range_interval`: the spread is sqrt(sum over pairs of
    difference^2) / k, bounded by the pairs' nearest and farthest |differences| (conservative:
    the differences' own constraints are not used). Its lower bound is above 0 exactly when
    the range's is.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; as :func:`range_interval`.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take (as :func:`range_interval`).

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

    nearest, farthest, k = _pairwise_distance_bounds(values, confidence, value_range)
    upper = float(np.sqrt((farthest**2).sum()) / k)
    if value_range is not None:
        # No spread of means within the range exceeds half its width: the pairs' bound can.
        upper = min(upper, (value_range[1] - value_range[0]) / 2)
    return float(np.sqrt((nearest**2).sum()) / k), upper


def spread_ci_lower(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`spread_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return spread_interval(values, value_range=value_range)[0]


def spread_ci_upper(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`spread_interval`.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with its cluster id last; at least two groups.
    value_range : (float, float), optional
        The range one document's value can take (:func:`range_interval`).

    Returns
    -------
    float
    """
    return spread_interval(values, value_range=value_range)[1]
