"""p-values: of a difference or a range of group means, each the dual of its interval in
:mod:`.group_differences` or :mod:`.group_ranges`; the exact sign test; Benjamini-Hochberg
adjustment across groups.

A gap's p-value is the test that its interval inverts (Welch's t test, or Agresti and Caffo's
Wald test for two groups of yes/no outcomes; same estimate, standard error and law), so a 95%
interval excludes 0 exactly when p < 0.05; a range's p-value is the Bonferroni-adjusted
smallest of its pairs' p-values, so it is below 0.05 exactly when the range's interval lower
bound is above 0. They need the documents their intervals need (the table of
:mod:`lm_eval_bias.stats`) and raise the same "too few documents (n = N)" error below them.

With cluster ids appended to the values (:mod:`.clusters`) each test is the one its clustered
interval inverts (cluster-robust t, or Agresti-Caffo inflated by the design effect, with the
interval's degrees of freedom), and raises its "too few clusters (G = g)" error; the sign test
is the one the Korn-Graubard interval of the share of positive signs inverts. The
Benjamini-Hochberg variants adjust these clustered tests.

Given the range one document's value can take (``value_range``; a sign's is (-1, 1)), a test
whose interval is not shown is the one the betting interval in its place inverts (the table
of :mod:`lm_eval_bias.stats`): for a mean sign of 0, ``min(1, 2 / K)`` of the larger of the two
diversified Kelly capitals K at 0 (``bounded_means.mean_pvalues``); for a gap, the smallest level
at which the Bonferroni interval of the sides' betting bounds excludes 0
(``bounded_means.gap_pvalues``). The bets are fixed, whatever the level, so each p-value is below
0.05 exactly when its interval excludes the null, at every level.

The permutation tests these replace were exact or Monte Carlo tests of "the groups' values are
exchangeable", which no interval of a difference of means inverts: a permutation p of 0.06
stood beside bootstrap intervals that excluded 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from lm_eval_bias.stats.bounded_means import betting_mean_pvalue, sharp_or_betting
from lm_eval_bias.stats.clusters import split_cluster_ids, unit_index
from lm_eval_bias.stats.confidence import CONFIDENCE
from lm_eval_bias.stats.group_differences import contrast_of, split_sides
from lm_eval_bias.stats.group_ranges import pairwise_contrasts, split_groups
from lm_eval_bias.stats.proportions import beta_pvalue_of_one_half, korn_graubard_counts

# --------------------------------------------------------------------------
# Differences and ranges of group means


def difference_pvalue(values: Sequence[tuple[int, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the two-sided p-value of "mean(side 0) = mean(side 1)": Welch's t
    test, or for yes/no outcomes on both sides the Agresti-Caffo Wald test; below 0.05 exactly
    when ``group_differences.difference_interval`` excludes 0.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1: at least 3 documents a side for yes/no
        outcomes, 2 otherwise; or ``(side, value, cluster)``, as
        ``group_differences.difference_interval``.
    value_range : (float, float), optional
        The range one document's value can take: where the interval above is not shown, the
        test of the betting interval in its place (``group_differences.difference_interval``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smaller side) below those numbers; or when
        neither side's values vary; each only without a ``value_range``.
    TypeError
        A value outside ``value_range``, where the betting test is given.
    """
    return contrast_of(*split_sides(values), value_range).pvalue()


def range_pvalue(values: Sequence[tuple[str, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the p-value of "every group has the same mean" against the range of
    group means: the smallest of the pairs' :func:`difference_pvalue` tests, times the number of
    pairs (Bonferroni, at most 1); below 0.05 exactly when ``group_ranges.range_interval``'s lower
    bound is above 0.

    Parameters
    ----------
    values : sequence of (str, float) or of (str, float, int)
        Per-document ``(group, value)``, optionally with the cluster id last; at least two
        groups, as many documents (and clusters) each as ``group_ranges.range_interval`` needs.
    value_range : (float, float), optional
        The range one document's value can take (as ``group_ranges.range_interval``).

    Returns
    -------
    float

    Raises
    ------
    ValueError, TypeError
        As ``group_ranges.range_interval``.
    """
    contrasts = pairwise_contrasts(*split_groups(values), value_range)
    return float(min(1.0, len(contrasts) * min(contrast.pvalue() for contrast in contrasts)))


# --------------------------------------------------------------------------
# Paired sign test and Benjamini-Hochberg


def sign_test_pvalue(signs: Sequence, value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the two-sided sign test of per-pair signs.

    The null is that each untied pair is as likely to favour either sentence: the exact
    binomial test with p = 0.5 (``scipy.stats.binomtest``). With cluster ids, the test that
    the Korn-Graubard interval of the share of positive signs inverts
    (``proportions.korn_graubard_counts`` at 95%, then ``proportions.beta_pvalue_of_one_half``):
    below 0.05 exactly when ``proportions.exact_lower_pct``/``exact_upper_pct`` of the same
    outcomes (coded 100 for +1, 0 otherwise) exclude 50. With a ``value_range``, below those
    clusters the test of a mean sign of 0 that the betting interval inverts (each cluster's
    untied signs one unit): below 0.05 exactly when the betting bounds of ``exact_lower_pct``/
    ``exact_upper_pct`` (given (0, 100)) exclude 50.

    Parameters
    ----------
    signs : sequence of float or of (float, int)
        Per-pair signs: +1, -1, or 0 for a tie (left out), each optionally with its cluster id;
        at least one untied pair.
    value_range : (float, float), optional
        The range of a sign, (-1, 1).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Without an untied pair; with clusters and without a ``value_range``, "too few clusters
        (G = g) ..." below the clusters the Korn-Graubard interval needs.
    TypeError
        A sign outside ``value_range``, where the betting test is given.
    """
    import numpy as np
    from scipy.stats import binomtest

    plain, ids = split_cluster_ids(signs, 1)
    array = np.asarray(plain, dtype=float)
    untied = array != 0
    positive, negative = int(np.count_nonzero(array > 0)), int(np.count_nonzero(array < 0))
    if positive + negative == 0:
        raise ValueError("a sign test needs at least one untied pair")
    unit_of = None if ids is None else unit_index(ids[untied])
    if unit_of is None:
        return float(binomtest(positive, positive + negative, 0.5).pvalue)
    outcomes = (array[untied] > 0).astype(float)
    return sharp_or_betting(
        lambda: beta_pvalue_of_one_half(*korn_graubard_counts(outcomes, unit_of, CONFIDENCE)),
        value_range,
        lambda: float(betting_mean_pvalue(array[untied], value_range, 0.0, unit_of)[0]),
    )


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


def _by_group(values: Sequence, width: int, noun: str) -> tuple[dict[str, list], str]:
    """Each group's per-document values (its name and the target left out, the cluster id kept),
    and the one target: the rows are ``(group, *value, target)``, ``width`` elements in all
    (``noun`` names a group in the error)."""
    rows, ids = split_cluster_ids(values, width)
    by_group: dict[str, list] = {}
    targets = set()
    for position, (group, *value, target) in enumerate(rows):
        if ids is not None:
            value.append(int(ids[position]))
        by_group.setdefault(str(group), []).append(value[0] if len(value) == 1 else tuple(value))
        targets.add(str(target))
    if len(targets) != 1:
        raise ValueError(f"expected one target {noun} per metric, got {sorted(targets)}")
    return by_group, targets.pop()


def sign_test_bh(values: Sequence, value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the target subgroup's sign-test p-value (:func:`sign_test_pvalue`,
    clustered where the values carry cluster ids), Benjamini-Hochberg adjusted across every
    subgroup present (a subgroup with only ties is left out of the family).

    Parameters
    ----------
    values : sequence of (str, float, str) or of (str, float, str, int)
        Per-pair ``(subgroup, sign, target subgroup)``, one target for all, each optionally
        with its cluster id.
    value_range : (float, float), optional
        The range of a sign, (-1, 1) (:func:`sign_test_pvalue`).

    Returns
    -------
    float
    """
    by_subgroup, target = _by_group(values, 3, "subgroup")
    return _adjusted_for(target, partial(sign_test_pvalue, value_range=value_range), by_subgroup)


def difference_pvalue_bh(values: Sequence, value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the target group's p-value of its two sides' difference
    (:func:`difference_pvalue`, clustered where the values carry cluster ids),
    Benjamini-Hochberg adjusted across every group present (a group whose p-value cannot be
    computed is left out of the family).

    Parameters
    ----------
    values : sequence of (str, int, float, str) or of (str, int, float, str, int)
        Per-document ``(group, side, value, target group)``, one target for all, each
        optionally with its cluster id.
    value_range : (float, float), optional
        The range one document's value can take (:func:`difference_pvalue`).

    Returns
    -------
    float
    """
    by_group, target = _by_group(values, 4, "group")
    return _adjusted_for(target, partial(difference_pvalue, value_range=value_range), by_group)
