import math

import pytest
from scipy.stats import binomtest

from lm_eval_bias import stats
from lm_eval_bias.stats import intervals, significance


@pytest.mark.parametrize("k,n", [(8, 10), (0, 10), (10, 10), (1, 1), (3, 17), (4168, 5784)])
def test_wilson_interval_matches_scipy(k, n):
    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lower, upper = stats.wilson_interval(k, n)
    assert lower == pytest.approx(expected.low, abs=1e-12)
    assert upper == pytest.approx(expected.high, abs=1e-12)


def test_wilson_interval_is_scipys_to_the_last_bit():
    # _wilson writes out scipy's formula rather than calling binomtest (which first computes a p-value)
    for n in [*range(1, 60), 997, 2880, 16004]:
        for k in range(0, n + 1, max(1, n // 40)):
            for confidence in (0.9, 0.95, 0.99):
                expected = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
                assert stats.wilson_interval(k, n, confidence) == (
                    0.0 if k == 0 else float(expected.low),
                    1.0 if k == n else float(expected.high),
                )


def test_wilson_interval_textbook_value():
    lower, upper = stats.wilson_interval(8, 10)
    assert (round(lower, 4), round(upper, 4)) == (0.4902, 0.9433)


def test_wilson_interval_of_a_perfect_score_has_width():
    lower, upper = stats.wilson_interval(10, 10)
    assert upper == 1.0
    assert lower == pytest.approx(0.7224672, abs=1e-6)


@pytest.mark.parametrize("k,n", [(0, 0), (-1, 5), (6, 5)])
def test_wilson_interval_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError):
        stats.wilson_interval(k, n)


def test_percent_aggregations_read_0_100_outcomes():
    outcomes = [100.0] * 8 + [0.0] * 2
    assert stats.wilson_lower_pct(outcomes) == pytest.approx(49.0162, abs=1e-4)
    assert stats.wilson_upper_pct(outcomes) == pytest.approx(94.3318, abs=1e-4)


def test_percent_aggregations_reject_other_codings():
    with pytest.raises(ValueError, match="0 or 100"):
        stats.wilson_lower_pct([1.0, 0.0])
    assert not math.isnan(stats.wilson_upper_pct([0.0]))


def test_mean_interval_uses_wilson_for_outcomes_and_bootstrap_otherwise():
    assert stats.mean_interval([1, 1, 0, 1]) == stats.wilson_interval(3, 4)
    low, high = stats.mean_interval([0.2, 0.4, 0.6, 0.8])
    assert low < 0.5 < high
    assert (low, high) == stats.mean_interval([0.2, 0.4, 0.6, 0.8])  # fixed seed


def test_difference_of_means_and_its_interval():
    values = [(0, 1.0), (0, 0.8), (0, 0.9), (1, 0.1), (1, 0.3), (1, 0.2)]
    assert stats.difference_of_means(values) == pytest.approx(0.7)
    low, high = stats.difference_interval(values)
    assert 0.5 <= low <= 0.7 <= high <= 0.9
    with pytest.raises(ValueError, match="both sides"):
        stats.difference_of_means([(0, 1.0)])


def test_permutation_pvalue_matches_scipy():
    from scipy.stats import permutation_test

    first, second = [0.9, 0.7, 0.8, 0.6, 0.75], [0.5, 0.55, 0.7, 0.4, 0.6]
    values = [(0, v) for v in first] + [(1, v) for v in second]
    expected = permutation_test(
        (first, second),
        lambda a, b: sum(a) / len(a) - sum(b) / len(b),
        permutation_type="independent",
        n_resamples=20000,
        random_state=0,
    ).pvalue
    assert stats.difference_pvalue(values) == pytest.approx(expected, abs=0.01)
    # no difference at all: p is 1
    assert stats.difference_pvalue([(0, 1.0), (0, 2.0), (1, 1.0), (1, 2.0)]) == 1.0


def test_binary_difference_pvalue_is_the_exact_permutation_pvalue():
    import itertools

    from scipy.stats import permutation_test

    first, second = [1, 1, 1, 0, 1], [0, 1, 0, 0]
    values = [(0, v) for v in first] + [(1, v) for v in second]
    exact = permutation_test(
        (first, second),
        lambda a, b, axis: a.mean(axis) - b.mean(axis),
        vectorized=True,
        permutation_type="independent",
        n_resamples=10_000,
    ).pvalue  # 126 relabellings: all
    # by hand: 5 ones among 9 documents, 4 of them in `first` (5 documents): P(4 or more) = 21/126
    ones_in_first = [sum(combo) for combo in itertools.combinations(first + second, 5)]
    assert sum(ones >= 4 for ones in ones_in_first) == 21 and len(ones_in_first) == 126
    assert stats.difference_pvalue(values) == pytest.approx(exact, abs=1e-12) == pytest.approx(42 / 126)
    # large groups (far more relabellings than scipy enumerates): the hypergeometric tail
    rng = __import__("numpy").random.default_rng(1)
    big_first, big_second = (rng.random(600) < 0.30).astype(float), (rng.random(800) < 0.25).astype(float)
    big = [(0, v) for v in big_first] + [(1, v) for v in big_second]
    monte_carlo = permutation_test(
        (big_first, big_second),
        lambda a, b, axis: a.mean(axis) - b.mean(axis),
        vectorized=True,
        permutation_type="independent",
        n_resamples=20_000,
        rng=rng,
    ).pvalue
    assert stats.difference_pvalue(big) == pytest.approx(monte_carlo, abs=0.01)
    assert stats.difference_pvalue([(0, 1.0), (0, 0.0), (1, 0.0), (1, 1.0)]) == 1.0


def test_monte_carlo_permutation_pvalue_keeps_scipys_definition():
    from scipy.stats import permutation_test

    # 40 documents in two groups of 20: C(40, 20) relabellings, so 2,000 are drawn
    low, high = [0.1 * i for i in range(20)], [5 + 0.1 * i for i in range(20)]
    separated = [(0, v) for v in high] + [(1, v) for v in low]
    # no drawn relabelling reaches the observed gap: scipy's (0 + 1) / (2000 + 1), doubled
    assert stats.difference_pvalue(separated) == pytest.approx(2 / 2001)
    assert stats.range_pvalue([("a", v) for v in high] + [("b", v) for v in low]) == pytest.approx(1 / 2001)
    rng = __import__("numpy").random.default_rng(3)
    first, second = rng.normal(0.0, 1.0, 30), rng.normal(0.4, 1.0, 25)
    values = [(0, v) for v in first] + [(1, v) for v in second]
    reference = permutation_test(
        (first, second),
        lambda a, b, axis: a.mean(axis) - b.mean(axis),
        vectorized=True,
        permutation_type="independent",
        n_resamples=100_000,
        rng=rng,
    ).pvalue
    assert stats.difference_pvalue(values) == pytest.approx(reference, abs=0.02)  # 2,000 draws: MC error


@pytest.mark.parametrize(
    "values",
    [
        [1.0] * 864 + [0.0] * 2016,  # yes/no outcomes: resampled by their counts (multinomial)
        [0.1 * (i % 11) for i in range(330)],  # shares of 10 samples: likewise
        [1.0 + i / 700 for i in range(700)],  # all distinct: documents resampled
    ],
)
def test_resampled_means_follow_the_bootstrap_law(values):
    import numpy as np

    array = np.asarray(values)
    means = intervals._resampled_means(array, stream=0)
    assert means.shape == (stats.BOOTSTRAP_RESAMPLES,)
    # resampling n documents: the mean's mean is the sample mean, its sd the sample sd / sqrt(n)
    assert means.mean() == pytest.approx(array.mean(), abs=3 * array.std() / np.sqrt(array.size * 2000))
    assert means.std() == pytest.approx(array.std() / np.sqrt(array.size), rel=0.08)
    assert np.array_equal(means, intervals._resampled_means(array, stream=0))  # seeded
    assert not np.array_equal(means, intervals._resampled_means(array, stream=1))


def test_range_of_group_means():
    values = [("a", 1.0), ("a", 3.0), ("b", 5.0), ("c", 0.0), ("c", 1.0)]
    assert stats.range_of_means(values) == pytest.approx(4.5)
    low, high = stats.range_interval(values)
    assert low <= 4.5 <= high
    separated = [("a", v) for v in (0.0, 0.1, 0.05, 0.02)] + [("b", v) for v in (1.0, 0.9, 0.95, 0.97)]
    assert stats.range_pvalue(separated) < 0.05
    assert stats.range_pvalue([("a", 1.0), ("a", 2.0), ("b", 2.0), ("b", 1.0)]) == 1.0
    with pytest.raises(ValueError, match="two groups"):
        stats.range_of_means([("a", 1.0)])


def test_pearson_interval_matches_scipy():
    from scipy.stats import pearsonr

    x, y = [3.1, 3.5, 2.9, 4.0, 3.3, 3.8, 2.5], [3.0, 3.7, 3.1, 4.2, 3.0, 3.6, 2.8]
    result = pearsonr(x, y)
    ci = result.confidence_interval(confidence_level=0.95)
    assert stats.pearson_interval(x, y) == pytest.approx((result.statistic, ci.low, ci.high), abs=1e-9)
    with pytest.raises(ValueError, match="at least 4"):
        stats.pearson_interval([1, 2, 3], [1, 2, 3])


def test_sign_test_matches_scipy_binomtest():
    from scipy.stats import binomtest

    signs = [1] * 14 + [-1] * 6 + [0] * 5  # ties are left out
    assert stats.sign_test_pvalue(signs) == pytest.approx(binomtest(14, 20, 0.5).pvalue)
    assert stats.sign_test_pvalue([1, -1]) == 1.0
    with pytest.raises(ValueError, match="untied"):
        stats.sign_test_pvalue([0, 0])


def test_benjamini_hochberg_matches_scipy():
    from scipy.stats import false_discovery_control

    pvalues = [0.01, 0.04, 0.03, 0.2, 0.005]
    assert stats.benjamini_hochberg(pvalues) == pytest.approx(list(false_discovery_control(pvalues)))


def test_sign_test_bh_adjusts_across_subgroups():
    from scipy.stats import binomtest, false_discovery_control

    values = [("a", 1, "a")] * 9 + [("a", -1, "a")] + [("b", 1, "a")] * 5 + [("b", -1, "a")] * 5
    raw = [binomtest(9, 10).pvalue, binomtest(5, 10).pvalue]
    assert stats.sign_test_bh(values) == pytest.approx(false_discovery_control(raw)[0])


def test_difference_pvalue_bh_adjusts_across_groups():
    a = [("a", 0, v, "b") for v in (5.0, 4.8, 4.9, 5.1)] + [("a", 1, v, "b") for v in (1.0, 1.2, 0.9, 1.1)]
    b = [("b", 0, v, "b") for v in (3.0, 2.0, 4.0)] + [("b", 1, v, "b") for v in (3.1, 2.2, 3.9)]
    raw = [stats.difference_pvalue([(s, v) for _, s, v, _ in group]) for group in (a, b)]
    assert stats.difference_pvalue_bh(a + b) == pytest.approx(stats.benjamini_hochberg(raw)[1])
    with pytest.raises(ValueError, match="no documents of group 'c'"):
        stats.difference_pvalue_bh([("a", 0, 1.0, "c"), ("a", 1, 2.0, "c")])


def test_bh_leaves_out_groups_without_a_p_value():
    from scipy.stats import binomtest

    values = [("a", 1, "a")] * 6 + [("a", -1, "a")] + [("b", 0, "a")] * 3  # b: ties only
    assert stats.sign_test_bh(values) == pytest.approx(binomtest(6, 7).pvalue)
    with pytest.raises(ValueError, match="untied"):
        stats.sign_test_bh([("b", 0, "b"), ("a", 1, "b")])


def test_group_statistics_reject_non_finite_values():
    with pytest.raises(ValueError, match="finite"):
        stats.range_of_means([("a", float("nan")), ("b", 1.0)])


# ---------------------------------------------------------------- resampling and relabelling in batches


def test_very_many_documents_are_resampled_in_batches_from_the_same_draws(monkeypatch):
    values = [i / 997 for i in range(997)]
    one_matrix = stats.bootstrap_mean_interval(values)
    monkeypatch.setattr(intervals, "COUNT_MATRIX_CELLS", 0)
    monkeypatch.setattr(intervals, "RESAMPLING_BATCH_CELLS", 997 * 7)  # 7 resamples a batch
    assert stats.bootstrap_mean_interval(values) == pytest.approx(one_matrix, abs=1e-12)


def test_monte_carlo_relabellings_are_shuffles_of_the_pooled_values_in_any_batch_size(monkeypatch):
    import numpy as np

    rng = np.random.default_rng(5)
    toxicity = [(int(side), float(value)) for side, value in zip(rng.integers(0, 2, 300), rng.random(300))]
    one_batch = stats.difference_pvalue(toxicity)
    (positions,) = significance._relabellings(300, stats.SEED)
    pooled = rng.random(300)
    shuffled = np.random.default_rng(stats.SEED).permuted(np.tile(pooled, (stats.PERMUTATIONS, 1)), axis=1)
    assert np.array_equal(pooled[positions], shuffled)
    monkeypatch.setattr(intervals, "RESAMPLING_BATCH_CELLS", 300 * 7)  # 7 relabellings a batch
    assert stats.difference_pvalue(toxicity) == one_batch


def test_few_relabellings_are_enumerated_exactly():
    # {1, 2} vs {3, 4}: 6 ways to split the 4 documents; the observed -2 is the lowest of
    # (-2, -1, 0, 0, 1, 2), so the two-sided p-value is 2 * 1/6.
    assert stats.difference_pvalue([(0, 1.0), (0, 2.0), (1, 3.0), (1, 4.0)]) == pytest.approx(1 / 3)
    # {0, 0} vs {1, 1}: of the 6 splits, 2 reach the observed range of 1
    assert stats.range_pvalue([("a", 0.0), ("a", 0.0), ("b", 1.0), ("b", 1.0)]) == pytest.approx(2 / 6)
    with pytest.raises(ValueError, match="at least two documents in each group"):
        stats.range_pvalue([("a", 0.0), ("b", 1.0), ("b", 2.0)])


def test_a_bootstrap_of_one_document_is_a_point():
    assert stats.bootstrap_mean_interval([0.3]) == (0.3, 0.3)
