"""p-values: of a difference or a range of group means, each the dual of its interval in
:mod:`.intervals`; the exact sign test; Benjamini-Hochberg adjustment across groups.

A gap's p-value is the test that its interval inverts (Welch's t test, or Agresti and Caffo's
Wald test for two groups of yes/no outcomes; same estimate, standard error and law), so a 95%
interval excludes 0 exactly when p < 0.05; a range's p-value is the Bonferroni-adjusted
smallest of its pairs' p-values, so it is below 0.05 exactly when the range's interval lower
bound is above 0. They need the documents their intervals need (``intervals``'s table) and
raise the same "too few documents (n = N)" error below them.

The permutation tests these replace were exact or Monte Carlo tests of "the groups' values are
exchangeable", which no interval of a difference of means inverts: a permutation p of 0.06
stood beside bootstrap intervals that excluded 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.stats.intervals import _Contrast, _groups, _pairwise_contrasts, _split_sides

# --------------------------------------------------------------------------
# Differences and ranges of group means


def difference_pvalue(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: the two-sided p-value of "mean(side 0) = mean(side 1)": Welch's t
    test, or for yes/no outcomes on both sides the Agresti-Caffo Wald test; below 0.05 exactly
    when ``intervals.difference_interval`` excludes 0.

    Parameters
    ----------
    values : sequence of (int, float)
        Per-document ``(side, value)``, side 0 or 1: at least 3 documents a side for yes/no
        outcomes, 2 otherwise.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smaller side) below those numbers; or when
        neither side's values vary.
    """
    return _Contrast(*_split_sides(values)).pvalue()


def range_pvalue(values: Sequence[tuple[str, float]]) -> float:
    """lm-eval aggregation: the p-value of "every group has the same mean" against the range of
    group means: the smallest of the pairs' :func:`difference_pvalue` tests, times the number of
    pairs (Bonferroni, at most 1); below 0.05 exactly when ``intervals.range_interval``'s lower
    bound is above 0.

    Parameters
    ----------
    values : sequence of (str, float)
        Per-document ``(group, value)``; at least two groups, as many documents each as
        ``intervals.range_interval`` needs.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        As ``intervals.range_interval``.
    """
    contrasts = _pairwise_contrasts(_groups(values))
    return float(min(1.0, len(contrasts) * min(contrast.pvalue() for contrast in contrasts)))


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
