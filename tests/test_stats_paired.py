"""The paired comparison of two runs (lm_eval_bias.stats.paired): exact numbers on fixed inputs,
and each statistic against an independent implementation (statsmodels, or the formula or the
resampling written out here)."""

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import binomtest, bootstrap, permutation_test
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from lm_eval_bias.stats import (
    PairedDifference,
    adjust_bh,
    detectable_difference,
    paired_means,
    paired_proportions,
    paired_statistic,
)

Z95 = float(ndtri(0.975))


def runs_from_table(both, candidate_only, baseline_only, neither):
    """Per-document outcomes (baseline, candidate) with the given paired 2x2 table, interleaved
    so that the order is not the table's."""
    pairs = [(1, 1)] * both + [(0, 1)] * candidate_only + [(1, 0)] * baseline_only + [(0, 0)] * neither
    order = np.random.default_rng(7).permutation(len(pairs))
    return [pairs[i][0] for i in order], [pairs[i][1] for i in order]


def newcombe_reference(table, confidence=0.95):
    """Newcombe's method 10 for p_row - p_column of [[n11, n12], [n21, n22]], written from the
    published formula (Newcombe 1998; Fagerland, Lydersen & Laake 2017, section 8), with scipy's
    own Wilson intervals."""
    (n11, n12), (n21, n22) = table
    total = n11 + n12 + n21 + n22
    rows, columns = (n11 + n12, n21 + n22), (n11 + n21, n12 + n22)
    p1, p2 = rows[0] / total, columns[0] / total
    l1, u1 = binomtest(rows[0], total).proportion_ci(confidence, "wilson")
    l2, u2 = binomtest(columns[0], total).proportion_ci(confidence, "wilson")
    if 0 in rows or 0 in columns:
        psi = 0.0
    else:
        a = n11 * n22 - n12 * n21
        product = math.sqrt(rows[0] * rows[1] * columns[0] * columns[1])
        psi = (a - total / 2) / product if a > total / 2 else (0.0 if a >= 0 else a / product)
    estimate = p1 - p2
    lower = estimate - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * psi * (p1 - l1) * (u2 - p2))
    upper = estimate + math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * psi * (p2 - l2) * (u1 - p1))
    return estimate, lower, upper


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
    assert result.test == "exact McNemar; Newcombe paired interval"
    assert result.note == ""


@pytest.mark.parametrize("table", TABLES)
def test_newcombe_interval_equals_the_formula_written_out(table):
    both, candidate_only, baseline_only, neither = table
    result = paired_proportions(*runs_from_table(*table))
    estimate, lower, upper = newcombe_reference([[both, candidate_only], [baseline_only, neither]])
    assert result.difference == pytest.approx(estimate, abs=1e-12)
    assert result.ci_lower == pytest.approx(lower, abs=1e-12)
    assert result.ci_upper == pytest.approx(upper, abs=1e-12)


def test_published_example_complete_response_before_and_after_consolidation():
    # Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, ch. 8: the
    # paired table [[59, 6], [16, 80]] of Cavo et al. (2012), as printed by the book's R package
    # (ocbe-uio/contingencytables, tests/testthat, chapter 8): Newcombe square-and-add
    # "estimate = -0.0621 (95% CI -0.1186 to -0.0046)", McNemar exact conditional P = 0.052479.
    result = paired_proportions(*runs_from_table(59, 6, 16, 80))
    assert result.difference == pytest.approx(-10 / 161, abs=1e-15)
    assert round(result.ci_lower, 4) == -0.1186
    assert round(result.ci_upper, 4) == -0.0046
    assert round(result.pvalue, 6) == 0.052479


def test_newcombe_interval_on_fixed_tables():
    # One document, yes in the baseline and no in the candidate: phi = 0 (empty margins), the
    # Wilson intervals are [0, z^2 / (1 + z^2)] and [1 / (1 + z^2), 1].
    result = paired_proportions([1], [0])
    assert (result.difference, result.ci_lower, result.pvalue) == (-1.0, -1.0, 1.0)
    assert result.ci_upper == pytest.approx(-1 + math.sqrt(2) * Z95**2 / (1 + Z95**2), abs=1e-14)
    # Both runs say no on all ten documents: no discordant pairs, phi = 0 (empty margins), and
    # the interval is +-(Wilson upper bound of 0/10) = +-z^2 / (10 + z^2).
    result = paired_proportions([0] * 10, [0] * 10)
    bound = Z95**2 / (10 + Z95**2)
    assert (result.difference, result.pvalue, result.note) == (0.0, 1.0, "no discordant pairs: p = 1")
    assert result.ci_lower == pytest.approx(-bound, abs=1e-14)
    assert result.ci_upper == pytest.approx(bound, abs=1e-14)
    assert result.ci_upper == -result.ci_lower


def test_identical_outcomes_give_zero_difference_p_one_and_newcombe_interval():
    baseline, _ = runs_from_table(20, 0, 0, 30)
    result = paired_proportions(baseline, list(baseline))
    # phi = (20 * 30 - 25) / sqrt(20 * 30 * 20 * 30): the interval is narrow, not [0, 0].
    _, lower, upper = newcombe_reference([[20, 0], [0, 30]])
    assert (result.difference, result.pvalue, result.note) == (0.0, 1.0, "no discordant pairs: p = 1")
    assert (result.ci_lower, result.ci_upper) == (pytest.approx(lower, abs=1e-12), pytest.approx(upper, abs=1e-12))
    assert -0.05 < result.ci_lower < 0 < result.ci_upper < 0.05
    assert result.ci_lower == -result.ci_upper


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
def test_one_document_cannot_be_bootstrapped(compare):
    with pytest.raises(ValueError, match="a paired bootstrap needs at least two matched documents, got n = 1"):
        compare([0.2], [0.7])


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


def test_paired_means_interval_equals_scipy_paired_bca():
    baseline, candidate = continuous_runs(30, 0.1)
    result = paired_means(baseline, candidate, n_resamples=999, random_state=5)
    expected = bootstrap(
        (baseline, candidate),
        _mean_difference,
        paired=True,
        n_resamples=999,
        method="BCa",
        rng=np.random.default_rng(5),
    ).confidence_interval
    assert result.ci_lower == pytest.approx(expected.low, abs=1e-12)
    assert result.ci_upper == pytest.approx(expected.high, abs=1e-12)
    assert result.difference == pytest.approx(np.mean(candidate - baseline), abs=1e-15)
    assert result.test == "sign-flip permutation test (999 random swaps); paired BCa bootstrap interval"


def plain_bca(differences, n_resamples, rng, confidence=0.95):
    """A BCa interval of the mean written from Efron & Tibshirani (1993), 14.3, with a real
    jackknife: an independent check of the closed form."""
    from scipy.special import ndtr

    n = differences.size
    means = differences[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
    estimate = differences.mean()
    bias = ndtri(np.mean(means < estimate))
    jackknife = np.array([np.delete(differences, i).mean() for i in range(n)])
    spread = jackknife.mean() - jackknife
    acceleration = np.sum(spread**3) / (6 * np.sum(spread**2) ** 1.5)
    z = ndtri([(1 - confidence) / 2, (1 + confidence) / 2])
    levels = ndtr(bias + (bias + z) / (1 - acceleration * (bias + z)))
    return np.quantile(means, levels)


def plain_sign_flip_pvalue(differences, n_resamples, rng):
    signs = rng.choice([-1.0, 1.0], size=(n_resamples, differences.size))
    null = (signs * differences).mean(axis=1)
    observed = differences.mean()
    return min(1.0, 2 * min(np.mean(null >= observed), np.mean(null <= observed)))


def test_paired_means_within_monte_carlo_tolerance_of_plain_numpy():
    baseline, candidate = continuous_runs(200, 0.02)
    result = paired_means(baseline, candidate)
    rng = np.random.default_rng(2024)
    lower, upper = plain_bca(candidate - baseline, 9999, rng)
    pvalue = plain_sign_flip_pvalue(candidate - baseline, 9999, rng)
    # Monte Carlo standard errors with 9999 resamples: about 0.7% of the width for a bound, and
    # sqrt(p (1 - p) / 9999) = 0.003 for the p-value; the tolerances are five times the
    # standard error of the difference of two independent estimates.
    width = upper - lower
    assert result.ci_lower == pytest.approx(lower, abs=0.05 * width)
    assert result.ci_upper == pytest.approx(upper, abs=0.05 * width)
    assert 0.05 < pvalue < 0.2
    assert result.pvalue == pytest.approx(pvalue, abs=0.02)


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
    assert result.test == "exact sign-flip permutation test (all 256 swaps); paired BCa bootstrap interval"


def test_paired_means_seeded_numbers_on_a_fixed_input():
    # The numbers that the default seed gives, so that a change of the resampling shows here;
    # the checks above tie them to scipy and to plain numpy.
    baseline = [(i * 37 % 11) / 10 for i in range(24)]
    candidate = [value + ((i * 5) % 7 - 2) / 10 for i, value in enumerate(baseline)]
    result = paired_means(baseline, candidate)
    assert result.difference == pytest.approx(0.23 / 2.4, abs=1e-15)
    assert result.ci_lower == pytest.approx(0.0125, abs=1e-12)
    assert result.ci_upper == pytest.approx(0.17083333333333336, abs=1e-12)
    assert result.pvalue == pytest.approx(0.0394, abs=1e-12)
    assert result.test == "sign-flip permutation test (9999 random swaps); paired BCa bootstrap interval"


def test_equal_differences_fall_back_to_the_percentile_interval():
    baseline = [float(i) for i in range(40)]
    result = paired_means(baseline, [b + 0.5 for b in baseline])
    assert (result.difference, result.ci_lower, result.ci_upper) == (0.5, 0.5, 0.5)
    # No random flip of 40 signs reaches the observed mean: (0 + 1) / (9999 + 1), twice.
    assert result.pvalue == 0.0002
    assert result.test == "sign-flip permutation test (9999 random swaps); paired percentile bootstrap interval"
    assert result.note == "BCa undefined (the resampled means do not spread around the estimate): percentile interval"
    few = paired_means([1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 3.5, 4.5])
    assert (few.ci_lower, few.ci_upper, few.pvalue) == (0.5, 0.5, 2 / 16)


def test_identical_values_give_zero_interval_and_p_one():
    values = [0.3, 0.1, 0.8, 0.8, 0.25]
    result = paired_means(values, list(values))
    assert result == PairedDifference(
        0.0,
        0.0,
        0.0,
        1.0,
        5,
        "exact sign-flip permutation test (all 32 swaps); paired BCa bootstrap interval",
        "identical values on every document",
    )


# --------------------------------------------------------------------------
# Swapping the runs, and determinism


def assert_swapped(forward, backward):
    assert backward.difference == -forward.difference
    assert (backward.ci_lower, backward.ci_upper) == (-forward.ci_upper, -forward.ci_lower)
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
    assert result.test == "exact paired permutation test (all 64 swaps); paired percentile bootstrap interval"
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


def test_gap_bootstrap_leaves_out_resamples_without_a_group():
    result = paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap, n_resamples=2000, random_state=0)
    rng = np.random.default_rng(0)
    draws, undefined = [], 0
    for _ in range(2000):
        drawn = rng.integers(0, 6, size=6)
        if {GROUPS[i] for i in drawn} != {"A", "B"}:
            undefined += 1
            continue
        draws.append(gap([CANDIDATE_ROWS[i] for i in drawn]) - gap([BASELINE_ROWS[i] for i in drawn]))
    assert result.note == f"{undefined} of 2000 resamples left out: the statistic is undefined on them"
    assert 100 < undefined < 250  # (4/6)^6 + (2/6)^6 = 8.9% of resamples lack group B (or A)
    assert result.ci_lower == pytest.approx(np.quantile(draws, 0.025), abs=1e-12)
    assert result.ci_upper == pytest.approx(np.quantile(draws, 0.975), abs=1e-12)


def test_gap_bootstrap_within_monte_carlo_tolerance_of_plain_numpy():
    rng = np.random.default_rng(3)
    groups = rng.choice(["A", "B"], size=120)
    base_values = rng.normal(size=120)
    cand_values = base_values + np.where(groups == "A", 0.3, 0.0) + rng.normal(0, 0.3, size=120)
    baseline = [{"group": g, "value": v} for g, v in zip(groups, base_values)]
    candidate = [{"group": g, "value": v} for g, v in zip(groups, cand_values)]
    result = paired_statistic(baseline, candidate, gap, n_resamples=1000)

    def gaps(values, drawn):  # the gap in each row of drawn positions
        in_a = groups[drawn] == "A"
        drawn_values = values[drawn]
        mean_a = (drawn_values * in_a).sum(axis=-1) / in_a.sum(axis=-1)
        mean_b = (drawn_values * ~in_a).sum(axis=-1) / (~in_a).sum(axis=-1)
        return mean_a - mean_b

    drawn = np.random.default_rng(99).integers(0, 120, size=(4000, 120))
    lower, upper = np.quantile(gaps(cand_values, drawn) - gaps(base_values, drawn), [0.025, 0.975])
    everything = np.arange(120)
    assert result.difference == pytest.approx(gaps(cand_values, everything) - gaps(base_values, everything), abs=1e-12)
    # Monte Carlo standard error of a bound with 1000 resamples: about 1.5% of the width.
    assert result.ci_lower == pytest.approx(lower, abs=0.08 * (upper - lower))
    assert result.ci_upper == pytest.approx(upper, abs=0.08 * (upper - lower))
    assert result.ci_lower > 0
    assert result.pvalue == pytest.approx(2 / 1001, abs=1e-15)  # no swap reaches the observed gap


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
    assert forward == paired_statistic(BASELINE_ROWS, CANDIDATE_ROWS, gap)
    identical = paired_statistic(BASELINE_ROWS, [dict(row) for row in BASELINE_ROWS], gap)
    assert (identical.difference, identical.ci_lower, identical.ci_upper, identical.pvalue) == (0.0, 0.0, 0.0, 1.0)
    assert identical.note == "identical values on every document"


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
