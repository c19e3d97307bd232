import math

import pytest
from scipy.stats import binomtest

from lm_eval_bias import stats


def test_z_value_for_95_percent():
    assert stats.z_value() == pytest.approx(1.959963984540054, abs=1e-12)


@pytest.mark.parametrize("k,n", [(8, 10), (0, 10), (10, 10), (1, 1), (3, 17), (4168, 5784)])
def test_wilson_interval_matches_scipy(k, n):
    expected = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lower, upper = stats.wilson_interval(k, n)
    assert lower == pytest.approx(expected.low, abs=1e-12)
    assert upper == pytest.approx(expected.high, abs=1e-12)


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
