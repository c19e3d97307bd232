import math

import pytest
from scipy.stats import binomtest

from lm_eval_bias import stats
from lm_eval_bias.stats import intervals


@pytest.mark.parametrize("k,n", [(0, 0), (-1, 5), (6, 5), (1.5, 5)])
def test_the_exact_interval_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError):
        stats.clopper_pearson_interval(k, n)


def test_percent_aggregations_give_the_clopper_pearson_bounds():
    outcomes = [100.0] * 8 + [0.0] * 2
    exact = binomtest(8, 10).proportion_ci(confidence_level=0.95, method="exact")
    assert stats.exact_lower_pct(outcomes) == pytest.approx(44.3905, abs=1e-4)
    assert stats.exact_upper_pct(outcomes) == pytest.approx(97.4789, abs=1e-4)
    assert (stats.exact_lower_pct(outcomes), stats.exact_upper_pct(outcomes)) == pytest.approx(
        (100 * exact.low, 100 * exact.high), abs=1e-8
    )


@pytest.mark.parametrize("k,n", [(8, 10), (0, 10), (10, 10), (1, 1), (3, 17), (4168, 5784)])
def test_clopper_pearson_interval_matches_scipy(k, n):
    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert stats.clopper_pearson_interval(k, n) == pytest.approx((expected.low, expected.high), abs=1e-10)


def test_percent_aggregations_reject_other_codings():
    with pytest.raises(ValueError, match="0 or 100"):
        stats.exact_lower_pct([1.0, 0.0])
    assert not math.isnan(stats.exact_upper_pct([0.0]))


def test_mean_interval_uses_clopper_pearson_for_outcomes_and_bootstrap_t_otherwise():
    assert stats.mean_interval([1, 1, 0, 1]) == stats.clopper_pearson_interval(3, 4)
    shares = [0.1 * (i % 11) for i in range(33)]  # mean 0.5
    assert stats.mean_interval(shares) == pytest.approx((0.388225624635786, 0.6158083221402886), abs=1e-12)
    assert stats.mean_interval(shares) == (stats.ci_lower(shares), stats.ci_upper(shares))  # fixed seed
    assert stats.mean_interval(shares) == stats.bootstrap_mean_interval(shares)


def test_bootstrap_t_interval_is_the_studentized_bootstrap():
    import numpy as np

    values = np.asarray([0.1 * (i % 11) for i in range(33)])
    means, variances = intervals._resampled_moments(values, 0)
    t_stats = (means - values.mean()) / np.sqrt(variances / values.size)
    tail = (1 - 0.95) / 2  # as the function computes it: 2,000 x tail falls just above 50
    low, high = np.quantile(t_stats, [tail, 1 - tail], method="inverted_cdf")
    scale = values.std(ddof=1) / np.sqrt(values.size)
    expected = (values.mean() - high * scale, values.mean() - low * scale)
    assert stats.bootstrap_mean_interval(values) == pytest.approx(expected, abs=1e-12)


def test_difference_interval_and_p_value_are_welchs():
    from scipy.stats import ttest_ind

    first, second = [1.0, 0.8, 0.9], [0.1, 0.3, 0.2]
    values = [(0, v) for v in first] + [(1, v) for v in second]
    welch = ttest_ind(first, second, equal_var=False)
    interval = welch.confidence_interval()
    assert stats.difference_of_means(values) == pytest.approx(0.7)
    assert stats.difference_interval(values) == pytest.approx((0.4733042064472481, 0.9266957935527518), abs=1e-12)
    assert stats.difference_interval(values) == pytest.approx((interval.low, interval.high), abs=1e-12)
    assert stats.difference_pvalue(values) == pytest.approx(0.0010166626172891215, abs=1e-15)
    assert stats.difference_pvalue(values) == pytest.approx(welch.pvalue, abs=1e-15)
    with pytest.raises(ValueError, match="both sides"):
        stats.difference_of_means([(0, 1.0)])


def test_yes_no_gap_interval_and_p_value_are_agresti_caffos():
    from statsmodels.stats.proportion import confint_proportions_2indep, test_proportions_2indep

    values = [(0, v) for v in (1, 1, 1, 0, 1)] + [(1, v) for v in (0, 1, 0, 0)]
    assert stats.difference_interval(values) == pytest.approx((-0.12330165879698224, 0.8852064207017443), abs=1e-12)
    assert stats.difference_interval(values) == pytest.approx(
        confint_proportions_2indep(4, 5, 1, 4, method="agresti-caffo"), abs=1e-12
    )
    assert stats.difference_pvalue(values) == pytest.approx(0.1386844246158657, abs=1e-15)
    assert stats.difference_pvalue(values) == pytest.approx(
        test_proportions_2indep(4, 5, 1, 4, method="agresti-caffo").pvalue, abs=1e-12
    )
    assert stats.difference_pvalue([(0, 1.0), (0, 0.0), (0, 1.0), (1, 0.0), (1, 1.0), (1, 1.0)]) == 1.0


def test_too_few_documents_for_a_gap():
    with pytest.raises(ValueError) as raised:
        stats.difference_ci_lower([(0, 1.0), (0, 0.0), (1, 0.0), (1, 1.0), (1, 1.0)])
    assert str(raised.value) == (
        "too few documents (n = 2): the Agresti-Caffo interval of a gap of yes/no outcomes holds its 95% level "
        "from 3 documents (tests/test_interval_coverage.py)"
    )
    with pytest.raises(ValueError) as raised:
        stats.difference_pvalue([(0, 0.5), (1, 0.25), (1, 0.75)])
    assert str(raised.value) == (
        "too few documents (n = 1): the Welch interval of a gap holds its 95% level from 2 documents "
        "(tests/test_interval_coverage.py)"
    )
    with pytest.raises(ValueError, match="a Welch interval needs them to vary"):
        stats.difference_pvalue([(0, 0.5), (0, 0.5), (1, 0.25), (1, 0.25)])


@pytest.mark.parametrize(
    "values",
    [
        [1.0] * 864 + [0.5] * 2016,  # two levels: resampled by their counts (multinomial)
        [0.1 * (i % 11) for i in range(330)],  # shares of 10 samples: likewise
        [1.0 + i / 700 for i in range(700)],  # all distinct: documents resampled
    ],
)
def test_resampled_moments_follow_the_bootstrap_law(values):
    import numpy as np

    array = np.asarray(values)
    means, variances = intervals._resampled_moments(array, stream=0)
    assert means.shape == variances.shape == (stats.BOOTSTRAP_RESAMPLES,)
    # resampling n documents: the mean's mean is the sample mean, its sd the sample sd / sqrt(n)
    assert means.mean() == pytest.approx(array.mean(), abs=3 * array.std() / np.sqrt(array.size * 2000))
    assert means.std() == pytest.approx(array.std() / np.sqrt(array.size), rel=0.08)
    assert variances.mean() == pytest.approx(array.var(ddof=1), rel=0.02)
    assert np.array_equal(means, intervals._resampled_moments(array, stream=0)[0])  # seeded
    assert not np.array_equal(means, intervals._resampled_moments(array, stream=1)[0])


def test_range_and_spread_of_group_means_and_their_intervals():
    values = [("a", 1.0), ("a", 3.0), ("b", 5.0), ("c", 0.0), ("c", 1.0)]
    assert stats.range_of_means(values) == pytest.approx(4.5)
    with pytest.raises(ValueError, match=r"^too few documents \(n = 1\): the Welch interval of a gap"):
        stats.range_interval(values)
    groups = (("a", (0.0, 0.1, 0.05, 0.02)), ("b", (1.0, 0.9, 0.95, 0.97)), ("c", (0.5, 0.4, 0.6, 0.45)))
    separated = [(name, v) for name, group in groups for v in group]
    assert stats.range_interval(separated) == pytest.approx((0.8130393781156467, 1.0119606218843529), abs=1e-12)
    assert stats.spread_interval(separated) == pytest.approx((0.3009024093131426, 0.451135573963305), abs=1e-12)
    # Bonferroni: the smallest of the three pairs' Welch p-values (a against b), times 3
    a_against_b = [(0, v) for v in groups[0][1]] + [(1, v) for v in groups[1][1]]
    assert stats.range_pvalue(separated) == pytest.approx(3 * stats.difference_pvalue(a_against_b), rel=1e-12)
    assert stats.range_pvalue(separated) == pytest.approx(2.6765247173192435e-07, rel=1e-12)
    assert stats.range_pvalue([("a", 1.0), ("a", 2.0), ("b", 2.0), ("b", 1.0)]) == 1.0
    with pytest.raises(ValueError, match="two groups"):
        stats.range_of_means([("a", 1.0)])


def test_a_range_of_yes_no_outcomes_needs_30_documents_a_group():
    values = [(group, float(i % 2)) for group in "ab" for i in range(29)] + [("a", 1.0)]
    with pytest.raises(ValueError) as raised:
        stats.range_ci_upper(values)
    assert str(raised.value) == (
        "too few documents (n = 29): the Bonferroni interval of a range or spread of yes/no outcome means "
        "holds its 95% level from 30 documents (tests/test_interval_coverage.py)"
    )


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


# ---------------------------------------------------------------- resampling in batches


def test_very_many_documents_are_resampled_in_batches_from_the_same_draws(monkeypatch):
    values = [i / 997 for i in range(997)]
    one_matrix = stats.bootstrap_mean_interval(values)
    monkeypatch.setattr(intervals, "COUNT_MATRIX_CELLS", 0)
    monkeypatch.setattr(intervals, "RESAMPLING_BATCH_CELLS", 997 * 7)  # 7 resamples a batch
    assert stats.bootstrap_mean_interval(values) == pytest.approx(one_matrix, abs=1e-12)


def test_a_bootstrap_of_few_documents_is_refused():
    with pytest.raises(ValueError, match=r"^too few documents \(n = 1\): the bootstrap-t interval of a mean"):
        stats.bootstrap_mean_interval([0.3])
    with pytest.raises(ValueError, match="every document has the value 0.5"):
        stats.bootstrap_mean_interval([0.5] * 40)


def test_the_exact_interval_of_a_share_excludes_one_half_exactly_when_the_sign_test_rejects():
    """WinoQueer's score and its test: the Clopper-Pearson interval and the two-sided binomial test
    against 1/2 (of the same outcomes) agree at every n and count up to 60."""
    for n in range(1, 61):
        for k in range(n + 1):
            low, high = stats.clopper_pearson_interval(k, n)
            excludes = not low <= 0.5 <= high
            assert excludes == (stats.sign_test_pvalue([1] * k + [-1] * (n - k)) < 0.05), (k, n)


def test_values_equal_up_to_rounding_are_no_spread_for_an_interval():
    """A prompt's mean of ten equal scores can differ from another's in its last bits: no variance."""
    import numpy as np

    rounded = float(np.mean(np.full(10, 0.1) * (1 + 1e-16 * np.arange(10))))
    gap = [(0, rounded), (0, 0.1), (0, 0.1), (1, 0.7), (1, 0.7), (1, 0.7)]
    with pytest.raises(ValueError, match="^every document on each side has one value: a Welch interval"):
        stats.difference_interval(gap)
    with pytest.raises(ValueError, match="^every document on each side has one value"):
        stats.difference_pvalue(gap)
    with pytest.raises(ValueError, match="^every document has the value"):
        stats.bootstrap_mean_interval([rounded] + [0.1] * 39)
