"""Seeded simulations: each per-run 95% interval covers the true value in at least 93% of draws
wherever it is returned (the fewest documents each needs are in ``stats.intervals``), and a
gap's or range's interval and p-value never disagree about 0."""

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from lm_eval_bias import stats
from lm_eval_bias.stats import intervals

LEVEL = 0.93


def _coverage(draw, interval, truth, repeats, seed):
    """Share of ``repeats`` seeded samples whose interval covers ``truth``, and the share that
    got an interval at all (a ValueError is no interval)."""
    rng = np.random.default_rng(seed)
    covered = shown = 0
    for _ in range(repeats):
        try:
            low, high = interval(draw(rng))
        except ValueError as error:
            assert str(error).startswith(("too few documents", "every document"))
            continue
        shown += 1
        covered += low <= truth <= high
    return (covered / shown if shown else None), shown / repeats


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 30, 100])
def test_clopper_pearson_holds_for_every_p_exactly(n):
    successes = np.arange(n + 1)
    bounds = np.array([stats.clopper_pearson_interval(k, n) for k in successes])
    for p in (0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9):
        inside = (bounds[:, 0] <= p) & (p <= bounds[:, 1])
        assert binom.pmf(successes, n, p)[inside].sum() >= 0.95


def test_wilson_falls_below_the_level_where_clopper_pearson_replaces_it():
    successes = np.arange(4)
    wilson = [binomtest(int(k), 3).proportion_ci(confidence_level=0.95, method="wilson") for k in successes]
    bounds = np.array([(interval.low, interval.high) for interval in wilson])
    inside = (bounds[:, 0] <= 0.2) & (0.2 <= bounds[:, 1])
    assert binom.pmf(successes, 3, 0.2)[inside].sum() == pytest.approx(0.896, abs=1e-3)


MEANS = {
    "toxicity Beta(0.3, 3)": (lambda rng, n: rng.beta(0.3, 3, n), 0.3 / 3.3),
    "toxicity Beta(0.1, 5)": (lambda rng, n: rng.beta(0.1, 5, n), 0.1 / 5.1),
    "shares of 10 samples, mean 0.1": (lambda rng, n: rng.binomial(10, rng.beta(0.2, 1.8, n)) / 10, 0.1),
    "1-5 ratings": (lambda rng, n: rng.choice(np.arange(1.0, 6.0), p=[0.05, 0.1, 0.2, 0.4, 0.25], size=n), 3.7),
}


@pytest.mark.parametrize("name", MEANS)
def test_bootstrap_t_mean_interval_holds_from_30_documents(name):
    draw, truth = MEANS[name]
    # ratings are cheap to resample (5 levels), and need more draws: their coverage is near 94.6%
    repeats = 4000 if name == "1-5 ratings" else 600
    coverage, shown = _coverage(lambda rng: draw(rng, 30), stats.mean_interval, truth, repeats, seed=30)
    assert coverage >= LEVEL and shown > 0.9


def test_a_mean_of_under_30_non_yes_no_values_has_no_interval():
    with pytest.raises(ValueError) as raised:
        stats.ci_lower([0.1, 0.3] * 14 + [0.2])
    assert str(raised.value) == (
        "too few documents (n = 29): the bootstrap-t interval of a mean holds its 95% level from 30 "
        "documents (tests/test_interval_coverage.py)"
    )


SIDES = {
    "toxicity, no gap": (lambda rng, n: rng.beta(0.3, 3, n), lambda rng, n: rng.beta(0.3, 3, n), 0.0),
    "toxicity, a gap": (lambda rng, n: rng.beta(0.3, 3, n), lambda rng, n: rng.beta(0.5, 2, n), 0.3 / 3.3 - 0.2),
    "yes/no 0.1 vs 0.1": (lambda rng, n: rng.random(n) < 0.1, lambda rng, n: rng.random(n) < 0.1, 0.0),
    "yes/no 0.9 vs 0.2": (lambda rng, n: rng.random(n) < 0.9, lambda rng, n: rng.random(n) < 0.2, 0.7),
    "yes/no 0.5 vs 0.8": (lambda rng, n: rng.random(n) < 0.5, lambda rng, n: rng.random(n) < 0.8, -0.3),
}


def _sides(first, second):
    return [(0, float(v)) for v in first] + [(1, float(v)) for v in second]


@pytest.mark.parametrize("name", SIDES)
@pytest.mark.parametrize("n", [2, 3, 5, 10, 30, 100])
def test_gap_interval_holds_wherever_it_is_shown(name, n):
    first, second, truth = SIDES[name]
    sample = lambda rng: _sides(first(rng, n), second(rng, n))  # noqa: E731
    coverage, shown = _coverage(sample, stats.difference_interval, truth, 400, n)
    if name.startswith("yes/no") and n < intervals.MIN_DOCUMENTS_AGRESTI_CAFFO:
        assert shown == 0.0
    else:
        assert coverage >= LEVEL


GROUPS = {
    "toxicity": lambda rng, i, n: rng.beta(0.3 + 0.2 * i, 3, n),
    "toxicity, equal means": lambda rng, i, n: rng.beta(0.3, 3, n),
    "yes/no": lambda rng, i, n: rng.random(n) < (0.1, 0.5, 0.3, 0.9, 0.2)[i],
    "yes/no, equal means": lambda rng, i, n: rng.random(n) < 0.5,
}
TRUE_MEANS = {
    "toxicity": np.array([(0.3 + 0.2 * i) / (3.3 + 0.2 * i) for i in range(5)]),
    "toxicity, equal means": np.full(5, 0.3 / 3.3),
    "yes/no": np.array([0.1, 0.5, 0.3, 0.9, 0.2]),
    "yes/no, equal means": np.full(5, 0.5),
}


@pytest.mark.parametrize("name", GROUPS)
@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("n", [2, 30])
def test_range_and_spread_intervals_hold_wherever_they_are_shown(name, k, n):
    means = TRUE_MEANS[name][:k]

    def draw(rng):
        return [(str(i), float(v)) for i in range(k) for v in GROUPS[name](rng, i, n)]

    range_coverage, shown = _coverage(draw, stats.range_interval, np.ptp(means), 250, seed=10 * k + n)
    spread_coverage, _ = _coverage(draw, stats.spread_interval, means.std(), 250, seed=10 * k + n)
    if name.startswith("yes/no") and n < intervals.MIN_DOCUMENTS_BINARY_RANGE:
        assert shown == 0.0
    else:
        assert range_coverage >= LEVEL and spread_coverage >= LEVEL and shown == 1.0


def test_gap_interval_excludes_zero_exactly_when_its_p_value_is_below_005():
    rng = np.random.default_rng(11)
    agreements = set()
    for trial in range(400):
        n, m = rng.integers(3, 40, size=2)
        if trial % 2:
            first, second = rng.random(n) < rng.random(), rng.random(m) < rng.random()
        else:
            first, second = rng.beta(0.5, 3, n), rng.beta(0.5, 3, m) + rng.normal(0, 0.1)
        values = _sides(first, second)
        low, high = stats.difference_interval(values)
        pvalue = stats.difference_pvalue(values)
        assert (low > 0 or high < 0) == (pvalue < 0.05)
        agreements.add(pvalue < 0.05)
    assert agreements == {True, False}  # both outcomes were met


def test_range_lower_bound_is_above_zero_exactly_when_its_p_value_is_below_005():
    rng = np.random.default_rng(12)
    agreements = set()
    for _ in range(200):
        k = int(rng.integers(2, 6))
        shifts = rng.normal(0, 0.08, k)
        values = [(str(i), float(v)) for i in range(k) for v in rng.beta(0.5, 3, rng.integers(2, 30)) + shifts[i]]
        low, _ = stats.range_interval(values)
        spread_low, _ = stats.spread_interval(values)
        pvalue = stats.range_pvalue(values)
        assert (low > 0) == (spread_low > 0) == (pvalue < 0.05)
        agreements.add(pvalue < 0.05)
    assert agreements == {True, False}
