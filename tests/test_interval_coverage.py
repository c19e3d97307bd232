"""Seeded simulations: each per-run 95% interval covers the true value in at least 93% of draws
wherever it is returned (the fewest documents each needs are in its module of ``stats``), and a
gap's or range's interval and p-value never disagree about 0."""

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from lm_eval_bias import stats
from lm_eval_bias.stats import group_differences, group_ranges

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
    if name.startswith("yes/no") and n < group_differences.MIN_DOCUMENTS_AGRESTI_CAFFO:
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
    if name.startswith("yes/no") and n < group_ranges.MIN_DOCUMENTS_BINARY_RANGE:
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


# ---------------------------------------------------------------- documents in clusters
# Documents built from one template share its effect: a cluster's mean is drawn first, its 2 to
# 20 documents around it. The independent intervals fall far below their level on such
# documents; the clustered ones hold where they are shown (the fewest clusters each needs:
# each interval's module of ``stats``, whose docstrings give the settings that set them).


def _cluster_sizes(rng, clusters):
    return rng.integers(2, 21, clusters)


def _clustered_outcomes(rng, clusters, share, icc=0.3):
    """Yes/no outcomes whose clusters' shares are Beta with mean ``share`` and 1 / (s + 1) = ICC."""
    s = 1 / icc - 1
    sizes = _cluster_sizes(rng, clusters)
    means = np.repeat(rng.beta(share * s, (1 - share) * s, clusters), sizes)
    return (rng.random(sizes.sum()) < means).astype(float), np.repeat(np.arange(clusters), sizes)


def _clustered_toxicity(rng, clusters):
    """Toxicity-like Beta(0.3, 3) scores times their cluster's Gamma(1, 1) factor, at most 1."""
    sizes = _cluster_sizes(rng, clusters)
    factor = np.repeat(rng.gamma(1.0, 1.0, clusters), sizes)
    return np.minimum(1.0, rng.beta(0.3, 3, sizes.sum()) * factor), np.repeat(np.arange(clusters), sizes)


# the mean of min(1, Beta(0.3, 3) * Gamma(1, 1)), from 4,000,000 seeded draws (standard error 1e-4)
TOXICITY_MEAN = 0.08529


def _clustered_coverage(samples, interval, truth):
    """Share of ``samples`` whose interval covers ``truth``, and the share that got one (below
    its clusters an interval raises "too few clusters")."""
    covered = shown = 0
    for rows in samples:
        try:
            low, high = interval(rows)
        except ValueError as error:
            assert str(error).startswith("too few clusters")
            continue
        shown += 1
        covered += low <= truth <= high
    return (covered / shown if shown else None), shown / len(samples)


def _samples(draw, repeats, seed):
    rng = np.random.default_rng(seed)
    return [np.column_stack(draw(rng)) for _ in range(repeats)]


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_korn_graubard_holds_from_30_clusters_where_clopper_pearson_does_not(share):
    samples = _samples(lambda rng: _clustered_outcomes(rng, 30, share), 400, seed=int(10 * share))
    percent = [rows * [100, 1] for rows in samples]
    ours, shown = _clustered_coverage(
        percent, lambda rows: (stats.exact_lower_pct(rows), stats.exact_upper_pct(rows)), 100 * share
    )
    independent, _ = _clustered_coverage([rows[:, 0] for rows in samples], stats.mean_interval, share)
    assert ours >= LEVEL and shown == 1.0
    assert independent < 0.8


def test_korn_graubard_is_not_shown_below_30_clusters():
    for clusters in (2, 3, 5, 10, 29):
        samples = _samples(lambda rng: _clustered_outcomes(rng, clusters, 0.5), 5, seed=clusters)
        assert _clustered_coverage(samples, stats.mean_interval, 0.5) == (None, 0.0)


def test_cluster_bootstrap_t_holds_from_30_clusters():
    samples = _samples(lambda rng: _clustered_toxicity(rng, 30), 300, seed=30)
    ours, shown = _clustered_coverage(samples, stats.mean_interval, TOXICITY_MEAN)
    assert ours >= LEVEL and shown == 1.0
    fewer = _samples(lambda rng: _clustered_toxicity(rng, 29), 3, seed=29)
    assert _clustered_coverage(fewer, stats.mean_interval, TOXICITY_MEAN) == (None, 0.0)


def _clustered_sides(draw_first, draw_second, clusters):
    """Side 0 drawn in clusters 0 .. G-1, side 1 in G .. 2G-1."""

    def sides(rng):
        first, first_clusters = draw_first(rng, clusters)
        second, second_clusters = draw_second(rng, clusters)
        side = np.r_[np.zeros(first.size), np.ones(second.size)]
        return side, np.r_[first, second], np.r_[first_clusters, clusters + second_clusters]

    return sides


def _half_toxicity(rng, clusters):
    values, ids = _clustered_toxicity(rng, clusters)
    return values / 2, ids


def _outcomes_at(share):
    return lambda rng, clusters: _clustered_outcomes(rng, clusters, share)


@pytest.mark.parametrize(
    "draw_first,draw_second,clusters,truth",
    [
        (_clustered_toxicity, _half_toxicity, 30, TOXICITY_MEAN / 2),
        (_outcomes_at(0.2), _outcomes_at(0.1), 20, 0.1),
        (_outcomes_at(0.5), _outcomes_at(0.25), 20, 0.25),
    ],
    ids=["toxicity vs half of it", "yes/no 0.2 vs 0.1", "yes/no 0.5 vs 0.25"],
)
def test_clustered_gap_holds_where_welch_and_agresti_caffo_do_not(draw_first, draw_second, clusters, truth):
    samples = _samples(_clustered_sides(draw_first, draw_second, clusters), 300, seed=clusters)
    ours, shown = _clustered_coverage(samples, stats.difference_interval, truth)
    independent, _ = _clustered_coverage([rows[:, :2] for rows in samples], stats.difference_interval, truth)
    assert ours >= LEVEL and shown == 1.0
    assert independent < 0.85
    fewer = _samples(_clustered_sides(draw_first, draw_second, clusters - 1), 3, seed=clusters)
    assert _clustered_coverage(fewer, stats.difference_interval, truth) == (None, 0.0)


def test_clustered_range_and_spread_hold_from_the_clusters_of_their_gaps():
    """Three groups of toxicity scores, each in its own 30 clusters, means 1, 1/2 and 3/4 of it."""
    scales = np.array([1.0, 0.5, 0.75])

    def draw(rng):
        drawn = [_clustered_toxicity(rng, 30) for _ in scales]
        return [(str(i), scale * v, 100 * i + c) for i, scale in enumerate(scales) for v, c in zip(*drawn[i])]

    means = TOXICITY_MEAN * scales
    rng = np.random.default_rng(3)
    samples = [draw(rng) for _ in range(150)]
    range_coverage, shown = _clustered_coverage(samples, stats.range_interval, np.ptp(means))
    spread_coverage, _ = _clustered_coverage(samples, stats.spread_interval, means.std())
    assert range_coverage >= LEVEL and spread_coverage >= LEVEL and shown == 1.0


def test_clustered_gap_interval_excludes_zero_exactly_when_its_p_value_is_below_005():
    rng = np.random.default_rng(13)
    agreements = set()
    for trial in range(200):
        clusters = int(rng.integers(30, 60))
        if trial % 2:
            draws = [_outcomes_at(share) for share in rng.uniform(0.1, 0.9, 2)]
        else:
            draws = [_clustered_toxicity, _half_toxicity if rng.random() < 0.5 else _clustered_toxicity]
        side, value, cluster = _clustered_sides(*draws, clusters)(rng)
        shared = rng.random() < 0.5  # a cluster may hold documents of both sides
        rows = np.column_stack([side, value, cluster % clusters if shared else cluster])
        low, high = stats.difference_interval(rows)
        pvalue = stats.difference_pvalue(rows)
        assert (low > 0 or high < 0) == (pvalue < 0.05)
        agreements.add(pvalue < 0.05)
    assert agreements == {True, False}


def test_clustered_range_lower_bound_is_above_zero_exactly_when_its_p_value_is_below_005():
    rng = np.random.default_rng(14)
    agreements = set()
    for _ in range(60):
        scales = rng.uniform(0.6, 1.4, int(rng.integers(2, 5)))
        values = [
            (str(i), scale * v, c) for i, scale in enumerate(scales) for v, c in zip(*_clustered_toxicity(rng, 30))
        ]
        low, _ = stats.range_interval(values)
        spread_low, _ = stats.spread_interval(values)
        pvalue = stats.range_pvalue(values)
        assert (low > 0) == (spread_low > 0) == (pvalue < 0.05)
        agreements.add(pvalue < 0.05)
    assert agreements == {True, False}


def test_korn_graubard_interval_excludes_50_exactly_when_the_clustered_sign_test_rejects():
    """WinoQueer's score and its test with clusters: outcomes 100/0 and signs +1/-1 of the same pairs."""
    rng = np.random.default_rng(15)
    agreements = set()
    for _ in range(400):
        outcomes, clusters = _clustered_outcomes(
            rng, int(rng.integers(30, 80)), rng.uniform(0.3, 0.7), rng.uniform(0.02, 0.5)
        )
        percent = np.column_stack([100 * outcomes, clusters])
        excludes = not stats.exact_lower_pct(percent) <= 50 <= stats.exact_upper_pct(percent)
        pvalue = stats.sign_test_pvalue(np.column_stack([2 * outcomes - 1, clusters]))
        assert excludes == (pvalue < 0.05)
        agreements.add(excludes)
    assert agreements == {True, False}


# ---------------------------------------------------------------- betting intervals, at every n and G
# Below the documents or clusters of the intervals above, a metric of known range gets the betting
# interval (``stats.betting_mean_bounds``, ``stats.betting_gap_bounds``): it holds its level by
# construction at every n, which these draws check where the others are not shown. Each setting is
# BETTING_REPEATS samples bounded at once; clustered samples share their cluster sizes within each
# of three batches (the sizes drawn anew for each).

BETTING_REPEATS = 300
BETTING_SIZES = [2, 3, 5, 10, 20]  # documents, or clusters
BETTING_ICCS = [0.1, 0.3]
SIZE_BATCHES = 3


def _covered(lower, upper, truth):
    return np.mean((lower <= truth) & (truth <= upper))


DOCUMENT_VALUES = {  # draw(rng, shape), true mean, range of one value
    "toxicity Beta(0.3, 3)": (lambda rng, shape: rng.beta(0.3, 3, shape), 0.3 / 3.3, (0.0, 1.0)),
    "toxicity Beta(0.1, 5)": (lambda rng, shape: rng.beta(0.1, 5, shape), 0.1 / 5.1, (0.0, 1.0)),
    "shares of 10 samples, mean 0.1": (
        lambda rng, shape: rng.binomial(10, rng.beta(0.2, 1.8, shape)) / 10,
        0.1,
        (0.0, 1.0),
    ),
    "sentiment 2 Beta(2, 0.5) - 1": (lambda rng, shape: 2 * rng.beta(2, 0.5, shape) - 1, 0.6, (-1.0, 1.0)),
    "1-5 ratings": (
        lambda rng, shape: rng.choice(np.arange(1.0, 6.0), p=[0.05, 0.1, 0.2, 0.4, 0.25], size=shape),
        3.7,
        (1.0, 5.0),
    ),
}


@pytest.mark.parametrize("name", DOCUMENT_VALUES)
def test_betting_mean_interval_holds_at_every_number_of_documents(name):
    draw, truth, value_range = DOCUMENT_VALUES[name]
    rng = np.random.default_rng(40)
    coverage = {
        n: _covered(*stats.betting_mean_bounds(draw(rng, (BETTING_REPEATS, n)), value_range), truth)
        for n in BETTING_SIZES
    }
    assert min(coverage.values()) >= LEVEL, coverage


def _cluster_draws(rng, rows, sizes, mean, icc, within=None):
    """``rows`` samples of documents in clusters of ``sizes``, values in [0, 1] of mean ``mean``: a
    cluster's mean mu is Beta with mean ``mean``, a document's value Bernoulli(mu) (``within`` None:
    yes/no) or Beta(mu t, (1 - mu) t) with t = ``within``; the Beta's concentration gives the
    intra-cluster correlation ``icc`` (Var(mu) / Var(value) = 1 / (1 + s / (t + 1)), t + 1 = 1 for
    yes/no)."""
    concentration = (1 if within is None else within + 1) * (1 / icc - 1)
    mu = np.repeat(rng.beta(mean * concentration, (1 - mean) * concentration, (rows, sizes.size)), sizes, axis=1)
    if within is None:
        return (rng.random(mu.shape) < mu).astype(float)
    return rng.beta(mu * within, (1 - mu) * within)


CLUSTER_VALUES = {  # mean, within-cluster concentration (None: yes/no)
    "yes/no 0.1": (0.1, None),
    "yes/no 0.5": (0.5, None),
    "yes/no 0.9": (0.9, None),
    "toxicity-like, mean 0.1": (0.1, 3.0),
}


@pytest.mark.parametrize("name", CLUSTER_VALUES)
def test_betting_mean_interval_holds_at_every_number_of_clusters(name):
    mean, within = CLUSTER_VALUES[name]
    rng = np.random.default_rng(41)
    coverage = {}
    for clusters in BETTING_SIZES:
        for icc in BETTING_ICCS:
            shares = []
            for _ in range(SIZE_BATCHES):
                sizes = rng.integers(2, 21, clusters)
                values = _cluster_draws(rng, BETTING_REPEATS // SIZE_BATCHES, sizes, mean, icc, within)
                unit_of = np.repeat(np.arange(clusters), sizes)
                shares.append(_covered(*stats.betting_mean_bounds(values, (0.0, 1.0), unit_of), mean))
            coverage[clusters, icc] = np.mean(shares)
    assert min(coverage.values()) >= LEVEL, coverage


DOCUMENT_GAPS = {  # each side's draw(rng, shape), and the true gap
    "toxicity, a gap": (lambda rng, s: rng.beta(0.3, 3, s), lambda rng, s: rng.beta(0.5, 2, s), 0.3 / 3.3 - 0.2),
    "toxicity, no gap": (lambda rng, s: rng.beta(0.3, 3, s), lambda rng, s: rng.beta(0.3, 3, s), 0.0),
    "yes/no 0.9 vs 0.2": (lambda rng, s: rng.random(s) < 0.9, lambda rng, s: rng.random(s) < 0.2, 0.7),
    "yes/no 0.1 vs 0.1": (lambda rng, s: rng.random(s) < 0.1, lambda rng, s: rng.random(s) < 0.1, 0.0),
}


@pytest.mark.parametrize("name", DOCUMENT_GAPS)
def test_betting_gap_interval_holds_at_every_number_of_documents(name):
    first, second, truth = DOCUMENT_GAPS[name]
    rng = np.random.default_rng(42)
    coverage = {}
    for n in [1, *BETTING_SIZES]:
        shape = (BETTING_REPEATS, n)
        coverage[n] = _covered(*stats.betting_gap_bounds(first(rng, shape), second(rng, shape), (0.0, 1.0)), truth)
    assert min(coverage.values()) >= LEVEL, coverage


@pytest.mark.parametrize("shared", [False, True], ids=["own clusters", "shared clusters"])
def test_betting_gap_interval_holds_at_every_number_of_clusters(shared):
    """Yes/no outcomes: side 0 at its cluster's share, side 1 at half of it (truth: half the mean
    share, 0.25); with shared clusters each cluster holds both sides, one share driving both, so the
    sides are dependent."""
    rng = np.random.default_rng(43)
    coverage = {}
    for clusters in BETTING_SIZES:
        for icc in BETTING_ICCS:
            shares = []
            for _ in range(SIZE_BATCHES):
                sizes = rng.integers(2, 21, (2, clusters))
                rows = BETTING_REPEATS // SIZE_BATCHES
                concentration = 1 / icc - 1
                mu = rng.beta(0.5 * concentration, 0.5 * concentration, (2, rows, clusters))
                if shared:
                    mu[1] = mu[0]
                first = rng.random((rows, sizes[0].sum())) < np.repeat(mu[0], sizes[0], axis=1)
                second = rng.random((rows, sizes[1].sum())) < np.repeat(mu[1] / 2, sizes[1], axis=1)
                units = [np.repeat(np.arange(clusters), side) for side in sizes]
                shares.append(_covered(*stats.betting_gap_bounds(first, second, (0.0, 1.0), *units), 0.25))
            coverage[clusters, icc] = np.mean(shares)
    assert min(coverage.values()) >= LEVEL, coverage


def test_betting_range_and_spread_hold_below_the_documents_of_the_others():
    """Three groups of yes/no outcomes, 10 documents each (Agresti-Caffo's range needs 30), the
    aggregations end to end."""
    shares = np.array([0.2, 0.5, 0.6])
    rng = np.random.default_rng(44)
    range_covered = spread_covered = 0
    repeats = 40
    for _ in range(repeats):
        values = [(str(i), float(v)) for i, share in enumerate(shares) for v in rng.random(10) < share]
        low, high = stats.range_interval(values, value_range=(0.0, 1.0))
        range_covered += low <= np.ptp(shares) <= high
        low, high = stats.spread_interval(values, value_range=(0.0, 1.0))
        spread_covered += low <= shares.std() <= high
    assert range_covered / repeats >= LEVEL and spread_covered / repeats >= LEVEL


def test_betting_mean_interval_excludes_the_null_exactly_when_its_p_value_is_below_005():
    rng = np.random.default_rng(45)
    agreements = set()
    for n in (1, 2, 5, 12, 29):
        values = np.clip(rng.beta(0.5, 3, (200, n)) + rng.uniform(0, 0.5, (200, 1)), 0, 1)
        null = rng.uniform(0.05, 0.95, 200)
        lower, upper = stats.betting_mean_bounds(values, (0.0, 1.0))
        pvalues = stats.betting_mean_pvalue(values, (0.0, 1.0), null)
        excludes = (null < lower) | (null > upper)
        assert (excludes == (pvalues < 0.05)).all()
        agreements |= set(excludes)
    assert agreements == {True, False}


def test_betting_gap_and_range_intervals_exclude_zero_exactly_when_their_p_values_are_below_005():
    rng = np.random.default_rng(46)
    agreements = set()
    for trial in range(50):
        n, m = rng.integers(1, 12, size=2)
        if trial % 2:
            first, second = rng.random(n) < rng.random(), rng.random(m) < rng.random()
        else:
            first, second = rng.beta(0.5, 3, n), np.clip(rng.beta(0.5, 3, m) + rng.uniform(0, 0.5), 0, 1)
        values = _sides(first, second)
        if trial % 3 == 0:  # clusters, some holding both sides
            values = [(*row, int(rng.integers(0, 5))) for row in values]
        low, high = stats.difference_interval(values, value_range=(0.0, 1.0))
        pvalue = stats.difference_pvalue(values, value_range=(0.0, 1.0))
        assert (low > 0 or high < 0) == (pvalue < 0.05)
        groups = [("a", *row[1:]) if row[0] == 0 else ("b", *row[1:]) for row in values]
        groups += [("c", v, *rest) for _, v, *rest in values[: len(values) // 2]]
        range_low, _ = stats.range_interval(groups, value_range=(0.0, 1.0))
        assert (range_low > 0) == (stats.range_pvalue(groups, value_range=(0.0, 1.0)) < 0.05)
        agreements.add(pvalue < 0.05)
    assert agreements == {True, False}


def test_betting_interval_of_a_share_excludes_50_exactly_when_the_sign_test_rejects():
    """WinoQueer with under 30 clusters: outcomes 100/0 and signs +1/-1 of the same pairs."""
    rng = np.random.default_rng(47)
    agreements = set()
    for _ in range(100):
        clusters = int(rng.integers(2, 30))
        sizes = rng.integers(1, 8, clusters)
        outcomes = _cluster_draws(rng, 1, sizes, rng.uniform(0.3, 0.7), rng.uniform(0.05, 0.5))[0]
        ids = np.repeat(np.arange(clusters), sizes)
        percent = np.column_stack([100 * outcomes, ids])
        excludes = not (
            stats.exact_lower_pct(percent, value_range=(0.0, 100.0))
            <= 50
            <= stats.exact_upper_pct(percent, value_range=(0.0, 100.0))
        )
        pvalue = stats.sign_test_pvalue(np.column_stack([2 * outcomes - 1, ids]), value_range=(-1.0, 1.0))
        assert excludes == (pvalue < 0.05)
        agreements.add(excludes)
    assert agreements == {True, False}
