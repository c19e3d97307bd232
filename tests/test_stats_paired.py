"""The paired comparison of two runs (lm_eval_bias.stats.paired): exact numbers on fixed inputs,
and each statistic against an independent implementation (statsmodels, or the formula or the
resampling written out here)."""

import itertools
import math
from dataclasses import astuple

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import permutation_test
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from lm_eval_bias.stats import (
    adjust_bh,
    detectable_difference,
    paired_means,
    paired_proportions,
    paired_statistic,
)
from lm_eval_bias.stats.paired_resampling import swap_quantile_interval

Z95 = float(ndtri(0.975))


def runs_from_table(both, candidate_only, baseline_only, neither):
    """Per-document outcomes (baseline, candidate) with the given paired 2x2 table, interleaved
    so that the order is not the table's."""
    pairs = [(1, 1)] * both + [(0, 1)] * candidate_only + [(1, 0)] * baseline_only + [(0, 0)] * neither
    order = np.random.default_rng(7).permutation(len(pairs))
    return [pairs[i][0] for i in order], [pairs[i][1] for i in order]


def box_reference(became_yes, became_no, n, confidence=0.95):
    """The Clopper-Pearson box interval of p_candidate - p_baseline written out with beta
    quantiles (Clopper & Pearson 1934): psi (2 pi - 1) over pi's interval at ``confidence`` and
    psi's at 1 - (1 - confidence) / 50."""
    from scipy.stats import beta

    def clopper_pearson(k, total, level):
        tail = (1 - level) / 2
        low = 0.0 if k == 0 else beta.ppf(tail, k, total - k + 1)
        high = 1.0 if k == total else beta.ppf(1 - tail, k + 1, total - k)
        return low, high

    changed = became_yes + became_no
    psi_low, psi_high = clopper_pearson(changed, n, 1 - (1 - confidence) / 50)
    pi_low, pi_high = clopper_pearson(became_yes, changed, confidence) if changed else (0.0, 1.0)
    corners = [psi * (2 * pi - 1) for psi in (psi_low, psi_high) for pi in (pi_low, pi_high)]
    return min(corners), max(corners)


TABLES = [  # (both, candidate only, baseline only, neither)
    (12, 9, 2, 21),
    (1, 7, 1, 12),
    (59, 16, 6, 80),
    (14, 0, 5, 22),
    (0, 3, 0, 0),
    (500, 40, 61, 900),
    (3, 1, 1, 3),
]


# --------------------------------------------------------------------------
# paired_proportions


@pytest.mark.parametrize("table", TABLES)
def test_mcnemar_pvalue_equals_statsmodels_exact(table):
    both, candidate_only, baseline_only, neither = table
    baseline, candidate = runs_from_table(*table)
    expected = mcnemar([[both, baseline_only], [candidate_only, neither]], exact=True).pvalue
    assert paired_proportions(baseline, candidate).pvalue == pytest.approx(expected, abs=1e-12)


def test_mcnemar_pvalue_on_a_fixed_table_is_the_binomial_tail():
    # 9 documents changed, 7 one way, 2 the other: 2 * P(X <= 2), X ~ Bin(9, 1/2) = 2 * 46 / 512.
    result = paired_proportions(*runs_from_table(12, 7, 2, 21))
    assert result.pvalue == pytest.approx(92 / 512, abs=1e-15)
    assert result.difference == pytest.approx(5 / 42, abs=1e-15)
    assert result.n == 42
    assert result.test == "exact McNemar; Clopper-Pearson box interval"
    assert result.note == ""
    assert (result.design_effect, result.n_clusters) == (None, None)


@pytest.mark.parametrize("table", TABLES)
def test_box_interval_equals_the_formula_written_out(table):
    both, candidate_only, baseline_only, neither = table
    result = paired_proportions(*runs_from_table(*table))
    lower, upper = box_reference(candidate_only, baseline_only, sum(table))
    assert result.difference == pytest.approx((candidate_only - baseline_only) / sum(table), abs=1e-15)
    assert result.ci_lower == pytest.approx(lower, abs=1e-12)
    assert result.ci_upper == pytest.approx(upper, abs=1e-12)


def test_published_example_where_newcombe_contradicted_mcnemar():
    # Fagerland, Lydersen & Laake (2017), ch. 8: the paired table [[59, 6], [16, 80]] of Cavo et
    # al. (2012): McNemar exact conditional P = 0.052479, while Newcombe's interval (-0.1186 to
    # -0.0046) excludes 0. The box interval includes 0, as the test says.
    result = paired_proportions(*runs_from_table(59, 6, 16, 80))
    assert result.difference == pytest.approx(-10 / 161, abs=1e-15)
    assert round(result.pvalue, 6) == 0.052479
    assert round(result.ci_lower, 4) == -0.1927
    assert round(result.ci_upper, 4) == 0.0011


def test_box_interval_on_fixed_tables():
    # One document, yes in the baseline and no in the candidate: pi's interval is [0, 0.975] and
    # psi's [0.0005, 1]: the difference lies in [-1, 0.95].
    result = paired_proportions([1], [0])
    assert (result.difference, result.ci_lower, result.pvalue) == (-1.0, -1.0, 1.0)
    assert result.ci_upper == pytest.approx(0.95, abs=1e-12)
    # Both runs say no on all ten documents: no discordant pairs, and the interval is +- the
    # 99.9% Clopper-Pearson upper bound of 0/10, 1 - 0.0005^(1/10).
    result = paired_proportions([0] * 10, [0] * 10)
    bound = 1 - 0.0005 ** (1 / 10)
    assert (result.difference, result.pvalue, result.note) == (0.0, 1.0, "no discordant pairs: p = 1")
    assert result.ci_lower == pytest.approx(-bound, abs=1e-12)
    assert result.ci_upper == pytest.approx(bound, abs=1e-12)
    assert result.ci_upper == -result.ci_lower


def test_scale_gives_percentage_points_and_accepts_outcomes_coded_0_and_100():
    baseline, candidate = runs_from_table(12, 7, 2, 21)
    in_points = paired_proportions([100 * b for b in baseline], [100 * c for c in candidate], scale=100)
    coded_01 = paired_proportions(baseline, candidate, scale=100)
    unit = paired_proportions(baseline, candidate)
    assert in_points == coded_01
    assert in_points.difference == pytest.approx(100 * unit.difference, abs=1e-12)
    assert in_points.ci_lower == pytest.approx(100 * unit.ci_lower, abs=1e-12)
    assert in_points.ci_upper == pytest.approx(100 * unit.ci_upper, abs=1e-12)
    assert in_points.pvalue == unit.pvalue


def test_outcomes_other_than_0_1_or_scale_are_refused():
    with pytest.raises(ValueError, match=r"the candidate's outcome of document 1 is 0\.5; expected 0 or 1$"):
        paired_proportions([1, 0], [1, 0.5])
    message = r"the baseline's outcome of document 0 is 50\.0; expected 0 or 1, or 0 or 100$"
    with pytest.raises(ValueError, match=message):
        paired_proportions([50, 0], [100, 0], scale=100)


# --------------------------------------------------------------------------
# Refusals shared by the three


@pytest.mark.parametrize("compare", [paired_proportions, paired_means])
def test_refusals(compare):
    with pytest.raises(ValueError, match="at least one matched document, got n = 0"):
        compare([], [])
    with pytest.raises(ValueError, match="the baseline has 3, the candidate 2"):
        compare([0, 1, 0], [0, 1])
    with pytest.raises(ValueError, match="the candidate's value of document 1 is not a finite number: nan"):
        compare([0, 1, 0], [0, float("nan"), 1])
    with pytest.raises(ValueError, match="the baseline's value of document 2 is not a finite number: inf"):
        compare([0, 1, float("inf")], [0, 1, 1])
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        compare([0, 1], [1, 1], confidence=1.0)


def test_statistic_refusals():
    with pytest.raises(ValueError, match="at least one matched document, got n = 0"):
        paired_statistic([], [], len)
    with pytest.raises(ValueError, match="the baseline has 2, the candidate 1"):
        paired_statistic([1, 2], [1], sum)
    with pytest.raises(ValueError, match="the statistic of the candidate is not a finite number: nan"):
        paired_statistic([1.0, 2.0], [1.0, float("nan")], sum)


@pytest.mark.parametrize("compare", [paired_means, lambda b, c: paired_statistic(b, c, sum)])
def test_one_document_gives_a_pvalue_and_no_interval(compare):
    result = compare([0.2], [0.7])
    assert (result.difference, result.pvalue, result.n) == (pytest.approx(0.5, abs=1e-15), 1.0, 1)
    assert math.isnan(result.ci_lower) and math.isnan(result.ci_upper)
    assert result.note == (
        "too few documents (n = 1): a permutation test of fewer than 6 documents cannot reach p < 0.05, so no interval"
    )


# --------------------------------------------------------------------------
# paired_means


def continuous_runs(n, shift, seed=11):
    rng = np.random.default_rng(seed)
    baseline = rng.normal(size=n)
    candidate = baseline + rng.normal(shift, 0.5, size=n)
    if candidate[0] < baseline[0]:  # the orientation computed directly (see paired_means)
        baseline[0], candidate[0] = candidate[0], baseline[0]
    return baseline, candidate


def _mean_difference(baseline, candidate, axis=-1):
    return np.mean(candidate - baseline, axis=axis)


def sign_flip_test_rejects(differences, delta):
    """Whether scipy's exact sign-flip test rejects a mean difference of ``delta`` at 5%."""
    shifted = np.asarray(differences) - delta
    result = permutation_test((np.zeros(shifted.size), shifted), _mean_difference, permutation_type="samples")
    return result.pvalue < 0.05


def test_paired_means_interval_holds_the_deltas_the_exact_test_does_not_reject():
    baseline, candidate = continuous_runs(8, 0.3)
    result = paired_means(baseline, candidate)
    differences = candidate - baseline
    assert result.test == "exact sign-flip permutation test (all 256 swaps); interval inverting it"
    # The bounds are the 6th smallest and largest of the 255 means of the flipped documents'
    # differences (ceil(0.05 * 256 / 2) - 1 = 6, the unflipped pattern being always as extreme):
    # brute force over every subset.
    subsets = [s for k in range(1, 9) for s in itertools.combinations(range(8), k)]
    means = np.sort([differences[list(s)].mean() for s in subsets])
    assert result.ci_lower == pytest.approx(means[5], abs=1e-12)
    assert result.ci_upper == pytest.approx(means[-6], abs=1e-12)
    width = result.ci_upper - result.ci_lower
    for bound, outward in ((result.ci_lower, -1), (result.ci_upper, 1)):
        assert not sign_flip_test_rejects(differences, bound - outward * 1e-9 * width)
        assert sign_flip_test_rejects(differences, bound + outward * 1e-3 * width)


def test_paired_means_exact_permutation_on_few_documents():
    baseline = [0.1, 0.4, 0.3, 0.9, 0.5, 0.2, 0.7, 0.6]
    candidate = [0.3, 0.5, 0.2, 1.2, 0.9, 0.4, 0.8, 0.6]
    result = paired_means(baseline, candidate)
    differences = np.subtract(candidate, baseline)
    null = [np.mean(np.multiply(signs, differences)) for signs in itertools.product([-1, 1], repeat=8)]
    observed = differences.mean()
    # 256 sign flips; the last document's difference is 0, so they come in equal pairs. At least
    # the observed 1.2: no flip, or one of the three differences of 0.1 flipped: 2 * 4 of 256.
    tolerance = 1e-12
    expected = 2 * min(np.mean(np.array(null) >= observed - tolerance), np.mean(np.array(null) <= observed + tolerance))
    assert result.pvalue == pytest.approx(expected, abs=1e-15)
    assert result.pvalue == pytest.approx(2 * 8 / 256, abs=1e-15)
    reference = permutation_test((baseline, candidate), _mean_difference, permutation_type="samples")
    assert result.pvalue == pytest.approx(reference.pvalue, abs=1e-12)
    assert result.test == "exact sign-flip permutation test (all 256 swaps); interval inverting it"


def test_paired_means_seeded_numbers_on_a_fixed_input():
    # The numbers that the default seed gives, so that a change of the resampling shows here;
    # the checks above tie them to scipy's exact test and to the subsets enumerated.
    baseline = [(i * 37 % 11) / 10 for i in range(24)]
    candidate = [value + ((i * 5) % 7 - 2) / 10 for i, value in enumerate(baseline)]
    result = paired_means(baseline, candidate)
    assert result.difference == pytest.approx(0.23 / 2.4, abs=1e-15)
    assert result.ci_lower == pytest.approx(0.009090909090909094, abs=1e-12)
    assert result.ci_upper == pytest.approx(0.18333333333333335, abs=1e-12)
    assert result.pvalue == pytest.approx(0.0422, abs=1e-12)
    assert result.test == "sign-flip permutation test (9999 random swaps); interval inverting it"


def test_equal_differences_give_no_interval():
    baseline = [float(i) for i in range(40)]
    result = paired_means(baseline, [b + 0.5 for b in baseline])
    assert (result.difference, result.pvalue) == (0.5, 0.0002)  # no random flip reaches 0.5: 2 / 10000
    assert math.isnan(result.ci_lower) and math.isnan(result.ci_upper)
    assert result.note == (
        "every document's difference is 0.5: no interval, as documents that agree this closely do not show how far "
        "the difference could be"
    )


def test_identical_values_give_p_one_and_no_interval():
    values = [0.3, 0.1, 0.8, 0.8, 0.25, 0.4]
    result = paired_means(values, list(values))
    assert (result.difference, result.pvalue, result.n) == (0.0, 1.0, 6)
    assert math.isnan(result.ci_lower) and math.isnan(result.ci_upper)
    assert result.note.startswith("every document's difference is 0: no interval")


# --------------------------------------------------------------------------
# Swapping the runs, and determinism


def same(first: float, second: float) -> bool:
    """Equal, or both NaN (an interval not shown)."""
    return first == second or (math.isnan(first) and math.isnan(second))


def assert_swapped(forward, backward):
    assert backward.difference == -forward.difference
    assert same(backward.ci_lower, -forward.ci_upper) and same(backward.ci_upper, -forward.ci_lower)
    assert backward.pvalue == forward.pvalue
    assert (backward.n, backward.test, backward.note) == (forward.n, forward.test, forward.note)


@pytest.mark.parametrize("table", TABLES)
def test_swapping_runs_negates_proportions_exactly(table):
    baseline, candidate = runs_from_table(*table)
    assert_swapped(paired_proportions(baseline, candidate), paired_proportions(candidate, baseline))


@pytest.mark.parametrize("n,shift", [(8, 0.2), (30, 0.0), (30, 0.3), (500, 0.05)])
def test_swapping_runs_negates_means_exactly(n, shift):
    baseline, candidate = continuous_runs(n, shift)
    forward = paired_means(baseline, candidate, n_resamples=999)
    assert_swapped(forward, paired_means(candidate, baseline, n_resamples=999))
    assert forward == paired_means(baseline, candidate, n_resamples=999)  # same inputs, same numbers


# --------------------------------------------------------------------------
# paired_statistic with a gap between groups


def gap(rows):
    """mean(value of group A) - mean(value of group B)."""
    a = [row["value"] for row in rows if row["group"] == "A"]
    b = [row["value"] for row in rows if row["group"] == "B"]
    if not a or not b:
        raise ValueError("a gap needs both groups")
    return sum(a) / len(a) - sum(b) / len(b)


GROUPS = ["A", "A", "B", "A", "B", "A"]
BASELINE_ROWS = [{"group": g, "value": v} for g, v in zip(GROUPS, [0.5, 0.25, 0.5, 0.75, 0.25, 0.5])]
CANDIDATE_ROWS = [{"group": g, "value": v} for g, v in zip(GROUPS, [1.0, 0.5, 0.25, 0.75, 0.5, 1.0])]


def test_gap_difference_and_exact_permutation_pvalue():
    result = paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap)
    # Baseline gap 0.5 - 0.375 = 0.125; candidate gap 0.8125 - 0.375 = 0.4375.
    assert result.difference == 0.3125
    assert result.n == 6
    assert result.test == "exact paired permutation test (all 64 swaps); interval of its rejection size"
    null = []
    for swaps in itertools.product([False, True], repeat=6):
        base = [c if s else b for b, c, s in zip(BASELINE_ROWS, CANDIDATE_ROWS, swaps)]
        cand = [b if s else c for b, c, s in zip(BASELINE_ROWS, CANDIDATE_ROWS, swaps)]
        null.append(gap(cand) - gap(base))
    null = np.array(null)
    expected = 2 * min(np.mean(null >= 0.3125 - 1e-12), np.mean(null <= 0.3125 + 1e-12))
    assert result.pvalue == pytest.approx(expected, abs=1e-15)
    # The gap is linear in the values: its change is mean over A of the documents' differences
    # (0.5, 0.25, 0, 0.5) minus mean over B of (-0.25, 0.25). Of the 64 swaps, 12 reach 0.3125.
    assert result.pvalue == pytest.approx(2 * 12 / 64, abs=1e-15)


def test_gap_interval_is_the_difference_plus_or_minus_the_rejection_size():
    result = paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap)
    sizes = []
    for swaps in itertools.product([False, True], repeat=6):
        base = [c if s else b for b, c, s in zip(BASELINE_ROWS, CANDIDATE_ROWS, swaps)]
        cand = [b if s else c for b, c, s in zip(BASELINE_ROWS, CANDIDATE_ROWS, swaps)]
        sizes.append(abs(gap(cand) - gap(base)))
    # The test rejects below 5% with fewer than ceil(0.05 * 64) = 4 swaps as large: the 4th
    # largest size, 0.5625, is the half-width.
    half_width = sorted(sizes, reverse=True)[3]
    assert half_width == 0.5625
    signed = []
    for swaps in itertools.product([False, True], repeat=6):
        base = [c if s else b for b, c, s in zip(BASELINE_ROWS, CANDIDATE_ROWS, swaps)]
        cand = [b if s else c for b, c, s in zip(BASELINE_ROWS, CANDIDATE_ROWS, swaps)]
        signed.append(gap(cand) - gap(base))
    null = np.array(signed)
    lower, upper, _ = swap_quantile_interval(null[None, :], [0.3125], 64, 0.95, True)
    assert (lower[0], upper[0]) == (0.3125 - half_width, 0.3125 + half_width)
    # on 6 documents the method's interval is not shown: it holds its level from 10
    assert math.isnan(result.ci_lower) and math.isnan(result.ci_upper)
    assert result.note == (
        "too few documents (n = 6): the interval of a statistic holds its 95% level from 10 documents, so no interval"
    )


def test_rows_may_be_tuples():
    def tuple_gap(rows):
        return gap([{"group": group, "value": value} for group, value in rows])

    as_tuples = paired_statistic(
        [(row["group"], row["value"]) for row in BASELINE_ROWS],
        [(row["group"], row["value"]) for row in CANDIDATE_ROWS],
        tuple_gap,
    )
    assert as_tuples == paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap)


def test_gap_swap_symmetry_identity_and_determinism():
    forward = paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap)
    assert_swapped(forward, paired_statistic(CANDIDATE_ROWS, BASELINE_ROWS, gap))
    again = paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap)
    assert all(same(a, b) if isinstance(a, float) else a == b for a, b in zip(astuple(forward), astuple(again)))
    identical = paired_statistic(BASELINE_ROWS, [dict(row) for row in BASELINE_ROWS], gap)
    assert (identical.difference, identical.pvalue) == (0.0, 1.0)
    assert math.isnan(identical.ci_lower) and math.isnan(identical.ci_upper)
    assert identical.note.startswith("too few documents (n = 6)")
    twelve = BASELINE_ROWS * 2
    identical = paired_statistic(twelve, [dict(row) for row in twelve], gap)
    assert (identical.difference, identical.pvalue) == (0.0, 1.0)
    assert math.isnan(identical.ci_lower) and math.isnan(identical.ci_upper)
    assert identical.note.startswith("every document's difference is 0: no interval")


# --------------------------------------------------------------------------
# adjust_bh and detectable_difference


def test_adjust_bh_equals_statsmodels_fdr_bh():
    pvalues = [0.01, 0.04, 0.03, 0.5, 0.001, 0.04, 1.0]
    expected = multipletests(pvalues, method="fdr_bh")[1]
    assert adjust_bh(pvalues) == pytest.approx(list(expected), abs=1e-12)
    assert adjust_bh([]) == []
    with pytest.raises(ValueError, match=r"p-values must be numbers in \[0, 1\], got nan"):
        adjust_bh([0.2, float("nan")])


def test_detectable_difference_solves_connors_sample_size_formula():
    difference = detectable_difference(1000, discordant_share=0.2)
    z_alpha, z_power = ndtri(0.975), ndtri(0.8)
    # Connor (1987): n = (z_a sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2
    n = (z_alpha * math.sqrt(0.2) + z_power * math.sqrt(0.2 - difference**2)) ** 2 / difference**2
    assert n == pytest.approx(1000, rel=1e-9)
    assert 0.039 < difference < 0.040
    assert detectable_difference(4000, discordant_share=0.2) < difference / 1.9
    with pytest.raises(ValueError, match="3 documents with 0.2 of them discordant cannot detect a difference"):
        detectable_difference(3, discordant_share=0.2)
