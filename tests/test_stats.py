import math

import numpy as np
import pytest
from scipy.stats import binomtest

from lm_eval_bias import stats


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
    means, variances = stats.means._resampled_moments(values, 0)
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
    means, variances = stats.means._resampled_moments(array, stream=0)
    assert means.shape == variances.shape == (stats.BOOTSTRAP_RESAMPLES,)
    # resampling n documents: the mean's mean is the sample mean, its sd the sample sd / sqrt(n)
    assert means.mean() == pytest.approx(array.mean(), abs=3 * array.std() / np.sqrt(array.size * 2000))
    assert means.std() == pytest.approx(array.std() / np.sqrt(array.size), rel=0.08)
    assert variances.mean() == pytest.approx(array.var(ddof=1), rel=0.02)
    assert np.array_equal(means, stats.means._resampled_moments(array, stream=0)[0])  # seeded
    assert not np.array_equal(means, stats.means._resampled_moments(array, stream=1)[0])


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
    monkeypatch.setattr(stats.means, "COUNT_MATRIX_CELLS", 0)
    monkeypatch.setattr(stats.means, "RESAMPLING_BATCH_CELLS", 997 * 7)  # 7 resamples a batch
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


# ---------------------------------------------------------------- documents in clusters


def _cluster_robust_variance(y, x, groups):
    """statsmodels' cluster-robust (CR1) variance of the last OLS coefficient, without its
    (n - 1) / (n - k) factor: G / (G - 1) times the sandwich."""
    import numpy as np
    import statsmodels.api as sm

    design = np.column_stack([np.ones(len(y))] + ([x] if x is not None else []))
    fit = sm.OLS(np.asarray(y, dtype=float), design).fit(cov_type="cluster", cov_kwds={"groups": np.asarray(groups)})
    n, k = design.shape
    return float(fit.cov_params()[-1, -1]) * (n - k) / (n - 1)


def _strongly_clustered_outcomes():
    """30 clusters of two yes/no outcomes (coded 0/100): every third cluster all yes, every fifth
    (of the others) one yes."""
    return [
        (100.0 if c % 3 == 0 or (c % 5 == 0 and j == 0) else 0.0, c * 1_000_003 + 7)
        for c in range(30)
        for j in range(2)
    ]


def test_mean_design_effect_is_the_cluster_robust_variance_over_the_independent_one():
    import numpy as np

    values = [(float(i + 1), i // 2) for i in range(6)]  # residuals -2.5 .. 2.5, cluster sums -4, 0, 4
    # CR1: 3/2 * 32 / 36 = 4/3; independent: 17.5 / 30; ratio 16/7
    assert stats.mean_design_effect(values) == pytest.approx(16 / 7, rel=1e-14)
    outcomes = _strongly_clustered_outcomes()
    y, groups = np.array([v for v, _ in outcomes]) / 100, [c for _, c in outcomes]
    independent = y.var(ddof=1) / y.size
    assert stats.mean_design_effect([(v / 100, c) for v, c in outcomes]) == pytest.approx(
        _cluster_robust_variance(y, None, groups) / independent, rel=1e-12
    )
    assert stats.mean_design_effect([(v, i) for i, v in enumerate([0.1, 0.5, 0.2])]) == 1.0


@pytest.mark.parametrize(
    "values,message",
    [
        ([0.1, 0.2], "a design effect needs each document's cluster: per-document values (value, cluster)"),
        ([(0.1, 4), (0.2, 4)], "all 2 documents are in one cluster: a design effect needs two clusters"),
        ([(0.5, 1), (0.5, 2), (0.5, 2)], "every document has the value 0.5: a design effect needs them to vary"),
    ],
)
def test_mean_design_effect_is_undefined_without_clusters_or_variance(values, message):
    with pytest.raises(ValueError) as raised:
        stats.mean_design_effect(values)
    assert str(raised.value) == message


def test_the_shared_design_effect_is_the_one_of_paired_comparisons():
    import numpy as np

    from lm_eval_bias.stats import clusters

    values, unit_of = np.array([0.1, 0.4, 0.35, 0.9, 0.2]), np.array([0, 0, 1, 1, 2])
    residuals = values - values.mean()
    clustered = 3 / 2 * float(np.sum(np.bincount(unit_of, weights=residuals) ** 2)) / 25
    assert clusters.design_effect(values, unit_of) == pytest.approx(clustered / (residuals @ residuals / 20), rel=1e-14)
    assert clusters.design_effect(values, np.zeros(5, dtype=int)) is None
    assert clusters.design_effect(np.full(5, 0.3), unit_of) is None


def test_korn_graubard_interval_of_clustered_outcomes():
    """n_eff = n / d * (t_{n-1} / t_{G-1})^2, x_eff = share * n_eff, then the beta quantiles."""
    import numpy as np
    from scipy.special import betaincinv
    from scipy.stats import t

    outcomes = _strongly_clustered_outcomes()
    y, groups = np.array([v for v, _ in outcomes]) / 100, [c for _, c in outcomes]
    effect = _cluster_robust_variance(y, None, groups) / (y.var(ddof=1) / y.size)
    assert effect == pytest.approx(1.7519157088122606, rel=1e-12)
    effective = 60 / effect * (t.ppf(0.975, 59) / t.ppf(0.975, 29)) ** 2
    successes = 0.4 * effective
    expected = (
        betaincinv(successes, effective - successes + 1, 0.025),
        betaincinv(successes + 1, effective - successes, 0.975),
    )
    assert (stats.exact_lower_pct(outcomes), stats.exact_upper_pct(outcomes)) == pytest.approx(
        (23.36381437139875, 58.51438530014197), abs=1e-10
    )
    assert stats.exact_lower_pct(outcomes) == pytest.approx(100 * expected[0], abs=1e-10)
    assert stats.exact_upper_pct(outcomes) == pytest.approx(100 * expected[1], abs=1e-10)
    as_shares = [(v / 100, c) for v, c in outcomes]
    assert stats.mean_interval(as_shares) == pytest.approx(expected, abs=1e-12)
    assert (stats.ci_lower(as_shares), stats.ci_upper(as_shares)) == stats.mean_interval(as_shares)
    # wider than Clopper-Pearson of the same 24 of 60 outcomes taken as independent
    assert stats.exact_lower_pct([v for v, _ in outcomes]) == pytest.approx(
        100 * stats.clopper_pearson_interval(24, 60)[0]
    )
    assert stats.exact_lower_pct([v for v, _ in outcomes]) > stats.exact_lower_pct(outcomes)


def test_korn_graubard_of_all_yes_or_all_no_uses_a_design_effect_of_one():
    from scipy.special import betaincinv
    from scipy.stats import t

    effective = 60 * (t.ppf(0.975, 59) / t.ppf(0.975, 29)) ** 2
    none = [(0.0, c) for c in range(30) for _ in range(2)]
    assert stats.mean_interval(none) == pytest.approx((0.0, betaincinv(1, effective, 0.975)), abs=1e-14)
    every = [(1.0, c) for c in range(30) for _ in range(2)]
    assert stats.mean_interval(every) == pytest.approx((betaincinv(effective, 1, 0.025), 1.0), abs=1e-14)


def test_clustered_sign_test_inverts_the_korn_graubard_interval():
    import numpy as np
    from scipy.special import betainc, betaincc

    outcomes = _strongly_clustered_outcomes()
    signs = [(1 if v else -1, c) for v, c in outcomes] + [(0, 5)]  # a tie is left out
    successes, effective = stats.korn_graubard_counts(np.array([v / 100 for v, _ in outcomes]), np.arange(60) // 2)
    lower_tail = betainc(successes, effective - successes + 1, 0.5)
    upper_tail = betaincc(successes + 1, effective - successes, 0.5)
    assert stats.sign_test_pvalue(signs) == pytest.approx(2 * min(lower_tail, upper_tail), rel=1e-12)
    assert stats.sign_test_pvalue(signs) == pytest.approx(0.3319334215009502, rel=1e-12)


def _clustered_ratings():
    """59 documents in 30 clusters of 1 to 3 (ids 100 to 129)."""
    return [(round(0.05 * ((c * 3 + j) % 7) + 0.1 * (c % 4), 2), 100 + c) for c in range(30) for j in range(1 + c % 3)]


def test_cluster_bootstrap_t_resamples_clusters_and_studentizes_by_the_robust_se():
    import numpy as np

    values = _clustered_ratings()
    y, groups = np.array([v for v, _ in values]), np.array([c for _, c in values]) - 100
    assert stats.mean_interval(values) == pytest.approx((0.2477553910558366, 0.33223025882990986), abs=1e-12)
    assert (
        stats.bootstrap_mean_interval(values)
        == stats.mean_interval(values)
        == (stats.ci_lower(values), stats.ci_upper(values))
    )
    # the same draws, resample by resample: the resampled clusters' documents, each draw its own cluster
    draws = np.random.default_rng([stats.SEED, 0]).integers(0, 30, size=(stats.BOOTSTRAP_RESAMPLES, 30))
    t_stats = []
    for drawn in draws:
        members = [np.flatnonzero(groups == cluster) for cluster in drawn]
        resampled = np.concatenate([y[m] for m in members])
        labels = np.repeat(np.arange(30), [m.size for m in members])
        se = np.sqrt(_cluster_robust_variance(resampled, None, labels)) if np.ptp(resampled) > 0 else 0.0
        t_stats.append((resampled.mean() - y.mean()) / se)
    tail = (1 - 0.95) / 2  # as the function computes it
    low, high = np.quantile(t_stats, [tail, 1 - tail], method="inverted_cdf")
    scale = np.sqrt(_cluster_robust_variance(y, None, groups))
    assert stats.mean_interval(values) == pytest.approx((y.mean() - high * scale, y.mean() - low * scale), abs=1e-12)


def _clustered_gap():
    """30 clusters, each one document of side 0 and one or two of side 1."""
    values = []
    for c in range(30):
        values.append((0, round(0.3 + 0.02 * ((c * 7) % 11) + 0.1 * (c % 3), 2), c))
        values += [(1, round(0.2 + 0.03 * ((c * 5 + j) % 9) + 0.1 * (c % 3), 2), c) for j in range(1 + c % 2)]
    return values


def test_clustered_gap_is_the_cluster_robust_t_interval_and_test():
    import numpy as np
    from scipy.stats import t

    values = _clustered_gap()
    side, y, groups = (np.array(column) for column in zip(*values))
    se = np.sqrt(_cluster_robust_variance(y, side, groups))  # the side coefficient: mean(1) - mean(0)
    estimate = y[side == 0].mean() - y[side == 1].mean()
    half = t.ppf(0.975, 29) * se  # 30 clusters on each side
    assert stats.difference_of_means(values) == pytest.approx(estimate, abs=1e-15)
    assert stats.difference_interval(values) == pytest.approx((estimate - half, estimate + half), abs=1e-12)
    assert stats.difference_interval(values) == pytest.approx((0.049178402667592006, 0.12148826399907452), abs=1e-12)
    assert stats.difference_pvalue(values) == pytest.approx(2 * t.sf(estimate / se, 29), rel=1e-10)
    assert stats.difference_pvalue(values) == pytest.approx(4.1003375848658044e-05, rel=1e-10)
    assert (stats.difference_ci_lower(values), stats.difference_ci_upper(values)) == stats.difference_interval(values)


def test_clustered_yes_no_gap_inflates_agresti_caffo_by_the_design_effect():
    import numpy as np
    from scipy.stats import t

    values = [
        row
        for c in range(20)
        for j in range(2)
        for row in ((0, float(c % 3 == 0 or (c * j) % 7 == 1), c), (1, float(c % 4 == 0 and j == 0), c))
    ]
    side, y, groups = (np.array(column) for column in zip(*values))
    effect = _cluster_robust_variance(y, side, groups) / _cluster_robust_variance(y, side, np.arange(y.size))
    shares = [(y[side == s].sum() + 1) / (np.sum(side == s) + 2) for s in (0, 1)]
    agresti_caffo = np.sqrt(sum(p * (1 - p) / (np.sum(side == s) + 2) for s, p in enumerate(shares)))
    half = t.ppf(0.975, 19) * agresti_caffo * np.sqrt(max(1.0, effect))
    estimate = shares[0] - shares[1]
    assert stats.difference_interval(values) == pytest.approx((estimate - half, estimate + half), abs=1e-12)
    assert stats.difference_interval(values) == pytest.approx((0.030770276610228214, 0.4930392471992956), abs=1e-12)
    assert stats.difference_pvalue(values) == pytest.approx(0.02842903449818826, rel=1e-10)


def test_clustered_range_is_bonferroni_over_the_clustered_gaps():
    import itertools

    gap = _clustered_gap()
    groups = {"a": [v for s, v, _ in gap if s == 0], "b": [v for s, v, _ in gap if s == 1]}
    clusters_of = {"a": [c for s, _, c in gap if s == 0], "b": [c for s, _, c in gap if s == 1]}
    groups["c"], clusters_of["c"] = [v + 0.02 * (i % 3) for i, v in enumerate(groups["a"])], clusters_of["a"]
    values = [(name, v, c) for name in groups for v, c in zip(groups[name], clusters_of[name])]
    pairs = [
        [(0, v, c) for v, c in zip(groups[x], clusters_of[x])] + [(1, v, c) for v, c in zip(groups[y], clusters_of[y])]
        for x, y in itertools.combinations("abc", 2)
    ]
    bounds = [stats.difference_interval(pair, confidence=1 - 0.05 / 3) for pair in pairs]
    farthest = max(max(abs(low), abs(high)) for low, high in bounds)
    nearest = max(min(abs(low), abs(high)) if low > 0 or high < 0 else 0.0 for low, high in bounds)
    assert stats.range_interval(values) == pytest.approx((nearest, farthest), abs=1e-15)
    assert stats.range_pvalue(values) == pytest.approx(min(1.0, 3 * min(map(stats.difference_pvalue, pairs))))
    assert stats.range_of_means(values) == stats.range_of_means([row[:2] for row in values])
    assert stats.spread_of_means(values) == stats.spread_of_means([row[:2] for row in values])


def test_clustered_bh_variants_adjust_the_clustered_tests():
    outcomes = _strongly_clustered_outcomes()
    signs = [(1 if v else -1, c) for v, c in outcomes]
    other = [(-s, c) for s, c in signs[:50]] + [(1, c) for _, c in signs[50:]]
    values = [("a", s, "b", c) for s, c in signs] + [("b", s, "b", c) for s, c in other]
    raw = [stats.sign_test_pvalue(signs), stats.sign_test_pvalue(other)]
    assert stats.sign_test_bh(values) == pytest.approx(stats.benjamini_hochberg(raw)[1], rel=1e-12)
    gap = _clustered_gap()
    shifted = [(s, v + 0.1 * s, c) for s, v, c in gap]
    rows = [("x", s, v, "y", c) for s, v, c in gap] + [("y", s, v, "y", c) for s, v, c in shifted]
    raw = [stats.difference_pvalue(gap), stats.difference_pvalue(shifted)]
    assert stats.difference_pvalue_bh(rows) == pytest.approx(stats.benjamini_hochberg(raw)[1], rel=1e-12)


@pytest.mark.parametrize(
    "aggregation,values,message",
    [
        (
            stats.exact_lower_pct,
            [(100.0 * (c % 2), c) for c in range(29)] + [(0.0, 0)],
            "too few clusters (G = 29): the Korn-Graubard interval of a mean of yes/no outcomes holds its 95% level "
            "from 30 clusters (tests/test_interval_coverage.py)",
        ),
        (
            stats.sign_test_pvalue,
            [(1 - 2 * (c % 2), c) for c in range(29)] + [(1, 0)],
            "too few clusters (G = 29): the Korn-Graubard interval of a mean of yes/no outcomes holds its 95% level "
            "from 30 clusters (tests/test_interval_coverage.py)",
        ),
        (
            stats.ci_upper,
            [(0.1 * (c % 7), c) for c in range(29)] + [(0.5, 0)],
            "too few clusters (G = 29): the cluster bootstrap-t interval of a mean holds its 95% level from 30 "
            "clusters (tests/test_interval_coverage.py)",
        ),
        (
            stats.difference_pvalue,
            [(0, 0.1 * (c % 7), c) for c in range(40)] + [(1, 0.1 * (c % 5), c) for c in range(29)] + [(1, 0.3, 0)],
            "too few clusters (G = 29): the cluster-robust t interval of a gap (clusters on each side) holds its 95% "
            "level from 30 clusters (tests/test_interval_coverage.py)",
        ),
        (
            stats.difference_ci_lower,
            [(0, float(c % 2), c) for c in range(19)] + [(0, 1.0, 0)] + [(1, float(c % 3 == 0), c) for c in range(25)],
            "too few clusters (G = 19): the clustered Agresti-Caffo interval of a gap of yes/no outcomes (clusters on "
            "each side) holds its 95% level from 20 clusters (tests/test_interval_coverage.py)",
        ),
    ],
)
def test_too_few_clusters(aggregation, values, message):
    with pytest.raises(ValueError) as raised:
        aggregation(values)
    assert str(raised.value) == message


def _old_shape_inputs():
    """Valid per-document values of each cluster-aware aggregation, without cluster ids."""
    shares = [0.1 * (i % 11) for i in range(33)]
    gap = [(0, v) for v in (1.0, 0.8, 0.9)] + [(1, v) for v in (0.1, 0.3, 0.2)]
    yes_no_gap = [(0, v) for v in (1, 1, 1, 0, 1)] + [(1, v) for v in (0, 1, 0, 0)]
    groups = [("a", v) for v in (0.0, 0.1, 0.05)] + [("b", v) for v in (1.0, 0.9)] + [("c", v) for v in (0.5, 0.4)]
    signs = [1] * 14 + [-1] * 6 + [0] * 5
    return [
        (stats.ci_lower, shares),
        (stats.ci_upper, [1.0, 0.0, 1.0, 1.0]),
        (stats.exact_lower_pct, [100.0] * 8 + [0.0] * 2),
        (stats.exact_upper_pct, [100.0] * 8 + [0.0] * 2),
        (stats.difference_of_means, gap),
        (stats.difference_ci_lower, gap),
        (stats.difference_ci_upper, yes_no_gap),
        (stats.difference_pvalue, yes_no_gap),
        (stats.difference_pvalue_bh, [("g", s, v, "g") for s, v in gap] + [("h", s, v, "g") for s, v in yes_no_gap]),
        (stats.range_of_means, groups),
        (stats.range_ci_lower, groups),
        (stats.range_ci_upper, groups),
        (stats.range_pvalue, groups),
        (stats.spread_of_means, groups),
        (stats.spread_ci_lower, groups),
        (stats.spread_ci_upper, groups),
        (stats.sign_test_pvalue, signs),
        (stats.sign_test_bh, [("a", s, "a") for s in signs] + [("b", s, "a") for s in signs[::2]]),
    ]


def _with_ids(values, ids):
    return [(*value, cluster) if isinstance(value, tuple) else (value, cluster) for value, cluster in zip(values, ids)]


@pytest.mark.parametrize("aggregation,values", _old_shape_inputs(), ids=lambda x: getattr(x, "__name__", ""))
def test_one_document_a_cluster_is_the_independent_result_exactly(aggregation, values):
    independent = aggregation(values)
    assert aggregation(_with_ids(values, [7 * i + 2**51 for i in range(len(values))])) == independent
    # a JSON samples file gives lists
    assert aggregation([list(row) for row in _with_ids(values, range(len(values)))]) == independent


@pytest.mark.parametrize("aggregation,values", _old_shape_inputs(), ids=lambda x: getattr(x, "__name__", ""))
def test_values_with_and_without_clusters_cannot_mix(aggregation, values):
    mixed = _with_ids(values[:1], [3]) + values[1:]
    with pytest.raises(TypeError) as raised:
        aggregation(mixed)
    assert str(raised.value) == (
        f"per-document values mix two shapes: 1 with a cluster id and {len(values) - 1} without"
    )


def test_every_cluster_aware_aggregation_is_listed():
    point_estimates = {stats.difference_of_means, stats.range_of_means, stats.spread_of_means}
    assert {aggregation for aggregation, _ in _old_shape_inputs()} - point_estimates | {
        stats.mean_design_effect
    } == stats.CLUSTER_AWARE


def test_clustered_results_read_back_from_json_are_the_same():
    import json

    for values, aggregation in (
        (_clustered_gap(), stats.difference_interval),
        (_clustered_ratings(), stats.mean_interval),
    ):
        assert aggregation(json.loads(json.dumps(values))) == aggregation(values)


@pytest.mark.parametrize("cluster", [-1, 2**52, 1.5, "t"])
def test_cluster_ids_are_whole_numbers_below_two_to_the_52(cluster):
    with pytest.raises(TypeError, match=r"^cluster ids must be whole numbers in \[0, 2\*\*52\), got "):
        stats.ci_lower([(0.5, 1), (0.2, cluster)])


# ---------------------------------------------------------------- betting intervals, given each value's range


def _capital(values, low, high, mean, above):
    """The diversified Kelly capital (20 fixed bets k / 21 of the largest) that the mean of
    ``values`` in [low, high] is above ``mean`` (else below it), written out plainly."""
    x = [(v - low) / (high - low) for v in values]
    m = (mean - low) / (high - low)

    def factor(xi, f):
        return 1 + f * (xi - m) / m if above else 1 + f * (m - xi) / (1 - m)

    return sum(math.prod(factor(xi, k / 21) for xi in x) for k in range(1, 21)) / 20


TOXICITY_10 = [0.02, 0.0, 0.15, 0.4, 0.05, 0.01, 0.3, 0.08, 0.0, 0.12]


def test_betting_mean_interval_is_where_either_capital_reaches_forty():
    lower, upper = stats.mean_interval(TOXICITY_10, value_range=(0.0, 1.0))
    assert (lower, upper) == pytest.approx((0.03193805801673688, 0.4811631305051859), abs=1e-12)
    assert (stats.ci_lower(TOXICITY_10, value_range=(0, 1)), stats.ci_upper(TOXICITY_10, value_range=(0, 1))) == (
        lower,
        upper,
    )
    assert stats.bootstrap_mean_interval(TOXICITY_10, value_range=(0.0, 1.0)) == (lower, upper)
    assert _capital(TOXICITY_10, 0, 1, lower, above=True) >= 40 * (1 - 1e-9)
    assert _capital(TOXICITY_10, 0, 1, lower + 1e-7, above=True) < 40
    assert _capital(TOXICITY_10, 0, 1, upper, above=False) >= 40 * (1 - 1e-9)
    assert _capital(TOXICITY_10, 0, 1, upper - 1e-7, above=False) < 40
    # the same values as sentiment on [-1, 1]: a wider range, a wider interval
    wide = stats.mean_interval(TOXICITY_10, value_range=(-1.0, 1.0))
    assert wide[0] < lower and wide[1] > upper


def test_betting_p_value_of_a_mean_is_twice_one_over_the_larger_capital():
    import numpy as np

    null = 0.3
    expected = min(1.0, 2 / max(_capital(TOXICITY_10, 0, 1, null, True), _capital(TOXICITY_10, 0, 1, null, False)))
    assert stats.betting_mean_pvalue(TOXICITY_10, (0.0, 1.0), null)[0] == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.5096414475138457, rel=1e-9)
    assert stats.betting_mean_pvalue(np.array([TOXICITY_10]), (0.0, 1.0), 0.6)[0] < 0.05  # above the upper bound


def _toxicity_in_6_clusters():
    """18 toxicity scores in 6 clusters of 1 to 5 documents (ids 40 to 45)."""
    sizes = [1, 5, 2, 4, 3, 3]
    return [
        (round(0.03 * ((7 * i) % 5) + 0.1 * (c % 3), 2), 40 + c) for c, size in enumerate(sizes) for i in range(size)
    ]


def test_betting_mean_interval_of_clusters_bets_on_their_scaled_centred_totals():
    import numpy as np

    from lm_eval_bias.stats.bounded_means import lower_bounds, unit_values, upper_bounds

    values = _toxicity_in_6_clusters()
    y, ids = np.array([v for v, _ in values]), [c for _, c in values]
    # G = 6 clusters of N = 18 documents, values centred on 1/2: totals times 6/18, within 0.5 * 6 * 5 / 18
    units, bound = unit_values([y - 0.5], 0.5, ids)
    assert bound == pytest.approx(5 / 6, abs=1e-15)
    assert stats.betting_units(y, (0.0, 1.0), np.repeat(np.arange(6), [1, 5, 2, 4, 3, 3]))[0] == pytest.approx(
        units, abs=1e-15
    )
    lower, upper = stats.mean_interval(values, value_range=(0.0, 1.0))
    # a cluster's unit reaches beyond half the range, the units' lower bound below 0; the mean cannot
    assert 0.5 + lower_bounds(units, bound)[0] == pytest.approx(-0.14104364512452805, abs=1e-12)
    assert lower == 0.0
    assert upper == pytest.approx(0.5 + upper_bounds(units, bound)[0], abs=1e-15)
    assert upper == pytest.approx(0.8358298164643119, abs=1e-12)
    assert _capital(units[0], -bound, bound, upper - 0.5, above=False) >= 40 * (1 - 1e-9)
    assert _capital(units[0], -bound, bound, upper - 0.5 - 1e-7, above=False) < 40
    with pytest.raises(ValueError, match=r"^too few clusters \(G = 6\): the cluster bootstrap-t"):
        stats.mean_interval(values)


def test_a_yes_no_share_of_clusters_below_30_gets_the_betting_interval():
    percent = [(100.0 * (c % 10 < 7 if j < 200 else c % 10 >= 7), c) for c in range(12) for j in range(240)]
    lower, upper = stats.percent_interval(percent, value_range=(0.0, 100.0))
    assert (stats.exact_lower_pct(percent, value_range=(0, 100)), stats.exact_upper_pct(percent, (0, 100))) == (
        lower,
        upper,
    )
    shares = [(v / 100, c) for v, c in percent]
    assert stats.mean_interval(shares, value_range=(0.0, 1.0)) == pytest.approx((lower / 100, upper / 100), abs=1e-12)
    assert (lower, upper) == pytest.approx((37.39793682439991, 83.43122058826954), abs=1e-9)
    with pytest.raises(ValueError, match=r"^too few clusters \(G = 12\): the Korn-Graubard interval"):
        stats.exact_lower_pct(percent)


def test_clustered_sign_test_below_30_clusters_is_the_betting_test_of_a_mean_sign_of_0():
    import numpy as np

    signs = [(1 if (c + j) % 3 else -1, c) for c in range(8) for j in range(1 + c % 3)] + [(0, 2)]  # a tie: left out
    untied = np.array([s for s, _ in signs if s])
    unit_of = np.array([c for s, c in signs if s])
    sizes = np.bincount(unit_of)
    units = np.bincount(unit_of, weights=untied) * 8 / untied.size
    bound = 8 * sizes.max() / untied.size
    expected = min(1.0, 2 / max(_capital(units, -bound, bound, 0.0, True), _capital(units, -bound, bound, 0.0, False)))
    assert stats.sign_test_pvalue(signs, value_range=(-1.0, 1.0)) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(1.0)
    lopsided = [(1, c) for c in range(8) for _ in range(3)] + [(-1, 0)]
    assert stats.sign_test_pvalue(lopsided, value_range=(-1.0, 1.0)) == pytest.approx(0.10486699631133478, rel=1e-9)


YES_NO_GAP_OF_2_AND_3 = [(0, 1.0), (0, 1.0), (1, 0.0), (1, 1.0), (1, 0.0)]


def test_betting_gap_is_bonferroni_over_each_sides_betting_bounds():
    lower, upper = stats.difference_interval(YES_NO_GAP_OF_2_AND_3, value_range=(0.0, 1.0))
    first_low, first_high = stats.betting_mean_bounds([1.0, 1.0], (0.0, 1.0), alpha=0.0125)
    second_low, second_high = stats.betting_mean_bounds([0.0, 1.0, 0.0], (0.0, 1.0), alpha=0.0125)
    assert (lower, upper) == pytest.approx(
        (float(first_low[0] - second_high[0]), float(first_high[0] - second_low[0])), abs=1e-15
    )
    assert (lower, upper) == pytest.approx((-0.8996679683774379, 0.998905472636816), abs=1e-12)
    assert stats.difference_ci_lower(YES_NO_GAP_OF_2_AND_3, value_range=(0, 1)) == lower
    assert stats.difference_ci_upper(YES_NO_GAP_OF_2_AND_3, value_range=(0, 1)) == upper
    with pytest.raises(ValueError, match=r"^too few documents \(n = 2\): the Agresti-Caffo"):
        stats.difference_interval(YES_NO_GAP_OF_2_AND_3)


def test_betting_gap_p_value_is_the_level_at_which_its_interval_reaches_zero():
    gap = [(0, 0.0)] * 20 + [(1, 0.6)] * 20  # no spread on either side: no Welch interval
    pvalue = stats.difference_pvalue(gap, value_range=(0.0, 1.0))
    assert pvalue == pytest.approx(0.0030131457424162566, rel=1e-9)
    with pytest.raises(ValueError, match="^every document on each side has one value"):
        stats.difference_pvalue(gap)
    assert stats.difference_interval(gap, 1 - pvalue * (1 + 1e-7), value_range=(0.0, 1.0))[1] < 0
    assert stats.difference_interval(gap, 1 - pvalue * (1 - 1e-7), value_range=(0.0, 1.0))[1] > 0
    bh = [("g", s, v, "g") for s, v in gap] + [("h", s, v, "g") for s, v in YES_NO_GAP_OF_2_AND_3]
    raw = [pvalue, stats.difference_pvalue(YES_NO_GAP_OF_2_AND_3, value_range=(0.0, 1.0))]
    assert stats.difference_pvalue_bh(bh, value_range=(0.0, 1.0)) == pytest.approx(stats.benjamini_hochberg(raw)[0])


def test_a_gap_whose_sides_share_clusters_forms_each_sides_units_from_its_own_documents():
    gap = [(0, 0.2, 1), (0, 0.4, 1), (1, 0.1, 1), (0, 0.3, 2), (1, 0.0, 2), (1, 0.2, 2), (1, 0.1, 3)]
    lower, upper = stats.difference_interval(gap, value_range=(0.0, 1.0))
    # side 0: clusters 1 and 2 hold 2 and 1 documents; side 1: clusters 1, 2, 3 hold 1, 2 and 1
    first = stats.betting_units([0.2, 0.4, 0.3], (0.0, 1.0), np.array([0, 0, 1]))
    second = stats.betting_units([0.1, 0.0, 0.2, 0.1], (0.0, 1.0), np.array([0, 1, 1, 2]))
    assert first[1] == pytest.approx(0.5 * 2 * 2 / 3) and second[1] == pytest.approx(0.5 * 3 * 2 / 4)
    expected = stats.betting_gap_bounds(
        [0.2, 0.4, 0.3], [0.1, 0.0, 0.2, 0.1], (0.0, 1.0), np.array([0, 0, 1]), np.array([0, 1, 1, 2])
    )
    assert (lower, upper) == (float(expected[0][0]), float(expected[1][0]))


def test_a_range_of_yes_no_groups_under_30_documents_is_bonferroni_over_betting_gaps():
    import itertools

    from lm_eval_bias.stats.bounded_means import gap_pvalues

    groups = {"a": [1.0] * 9 + [0.0], "b": [0.0] * 8 + [1.0] * 2, "c": [1.0, 0.0] * 4}
    values = [(name, v) for name, group in groups.items() for v in group]
    pairs = list(itertools.combinations(groups, 2))
    bounds = [stats.betting_gap_bounds(groups[x], groups[y], (0.0, 1.0), alpha=0.05 / 3 / 2) for x, y in pairs]
    bounds = [(float(low[0]), float(high[0])) for low, high in bounds]
    nearest = max(min(abs(low), abs(high)) if low > 0 or high < 0 else 0.0 for low, high in bounds)
    assert stats.range_interval(values, value_range=(0.0, 1.0)) == pytest.approx(
        (nearest, max(max(abs(low), abs(high)) for low, high in bounds)), abs=1e-15
    )
    assert stats.range_interval(values, value_range=(0.0, 1.0)) == pytest.approx((0.0, 0.996948675402872), abs=1e-12)
    pvalues = [
        gap_pvalues([[2 * v - 1 for v in groups[x]]], 1.0, [[2 * v - 1 for v in groups[y]]], 1.0) for x, y in pairs
    ]
    assert stats.range_pvalue(values, value_range=(0.0, 1.0)) == pytest.approx(min(1.0, 3 * min(pvalues)[0]))
    assert stats.range_ci_lower(values, value_range=(0, 1)) == stats.range_interval(values, value_range=(0, 1))[0]
    assert stats.spread_ci_upper(values, value_range=(0, 1)) == stats.spread_interval(values, value_range=(0, 1))[1]
    with pytest.raises(ValueError, match=r"^too few documents \(n = 8\): the Bonferroni interval of a range"):
        stats.range_interval(values)


@pytest.mark.parametrize("aggregation,values", _old_shape_inputs(), ids=lambda x: getattr(x, "__name__", ""))
def test_a_value_range_leaves_every_interval_shown_without_it_unchanged(aggregation, values):
    if aggregation not in stats.VALUE_RANGE_AWARE:
        return
    value_range = (-1.0, 1.0) if aggregation in (stats.sign_test_pvalue, stats.sign_test_bh) else (0.0, 100.0)
    assert aggregation(values, value_range=value_range) == aggregation(values)


@pytest.mark.parametrize(
    "aggregation,values",
    [
        (stats.exact_lower_pct, _strongly_clustered_outcomes()),
        (stats.sign_test_pvalue, [(1 if v else -1, c) for v, c in _strongly_clustered_outcomes()]),
        (stats.ci_lower, _clustered_ratings()),
        (stats.difference_pvalue, _clustered_gap()),
        (stats.range_ci_upper, [(str(s), v, c) for s, v, c in _clustered_gap()]),
    ],
)
def test_a_value_range_leaves_every_clustered_interval_shown_without_it_unchanged(aggregation, values):
    value_range = (-1.0, 1.0) if aggregation is stats.sign_test_pvalue else (0.0, 100.0)
    assert aggregation(values, value_range=value_range) == aggregation(values)


def test_the_value_range_aware_aggregations_are_the_cluster_aware_intervals_and_tests():
    assert stats.VALUE_RANGE_AWARE == stats.CLUSTER_AWARE - {stats.mean_design_effect}


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda: stats.ci_lower([0.5, 1.2], value_range=(0.0, 1.0)),
            "a per-document value 1.2 is outside the metric's range [0, 1]: no task writes it, and no betting "
            "interval rests on a range its values leave",
        ),
        (
            lambda: stats.difference_pvalue([(0, 0.5), (1, -0.5)], value_range=(0.0, 1.0)),
            "a per-document value -0.5 is outside the metric's range [0, 1]: no task writes it, and no betting "
            "interval rests on a range its values leave",
        ),
        (
            lambda: stats.sign_test_pvalue([(1, 0), (-1, 0), (1, 1)], value_range=(0.0, 100.0)),
            "a per-document value -1.0 is outside the metric's range [0, 100]: no task writes it, and no betting "
            "interval rests on a range its values leave",
        ),
        (
            lambda: stats.ci_upper([0.5, 0.2], value_range=(1.0, 0.0)),
            "value_range must be two finite numbers (low, high), low < high, got (1.0, 0.0)",
        ),
        (
            lambda: stats.ci_upper([0.5, 0.2], value_range=0.5),
            "value_range must be two finite numbers (low, high), got 0.5",
        ),
    ],
)
def test_a_value_outside_its_range_has_no_betting_interval(call, message):
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message


def test_a_spread_interval_stays_within_half_the_range():
    """Three groups of yes/no outcomes, too few for the sharp interval: the pairs' betting bounds
    would put the spread (population sd of the means) up to 0.565; no three means in [0, 1] are
    spread by more than 0.5."""
    values = [("a", 0.0), ("a", 0.0), ("b", 1.0), ("b", 1.0), ("c", 0.0), ("c", 1.0)] * 3
    assert stats.spread_interval(values, value_range=(0.0, 1.0)) == (0.0, 0.5)
