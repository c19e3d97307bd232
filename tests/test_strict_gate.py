"""The strict gate of ``check --baseline`` on scores: the betting bounds of
lm_eval_bias.stats.bounded_means, on fixed inputs and in seeded simulations at n = 2 to 100 (the skewed
runs of test_paired_coverage.py), where the gate passes a change exactly at its margin at most 2.5% of
the time plus three Monte Carlo standard errors, and end to end, where the verdict quotes the bound."""

import dataclasses
import math
import re

import numpy as np
import pytest

from compare_fixtures import COMPARISON, WINOQUEER
from helpers import run_cli
from lm_eval_bias.report.compare import compare_runs, comparison_json
from lm_eval_bias.report.gate_rules import WorseningRule
from lm_eval_bias.report.worsening_gate import evaluate_worsening
from lm_eval_bias.stats.bounded_means import (
    gap_change_bounds,
    lower_bounds,
    mean_change_bounds,
    range_change_upper_bound,
    spread_change_upper_bound,
    unit_values,
    upper_bounds,
    worsening_upper_bound,
)
from lm_eval_bias.stats.paired_resampling import sign_flip_inversion
from test_compare import disclosure_document, write_run
from test_paired_coverage import GATE_TOLERANCE, REPS, RESAMPLES, SIZES, toxicity_runs

# --------------------------------------------------------------------------
# Fixed inputs


def capital(units, bound, mean):
    """The diversified Kelly capital against ``mean`` (in the units' scale), written out plainly."""
    fractions = [k / 21 for k in range(1, 21)]
    scaled = [(value + bound) / (2 * bound) for value in units]
    at = (mean + bound) / (2 * bound)
    products = [math.prod(1 + f * (at - x) / (1 - at) for x in scaled) for f in fractions]
    return sum(products) / len(products)


def test_one_unit_at_zero_is_bounded_where_the_average_bet_makes_forty_times_the_stake():
    # One unit at the centre of [-1, 1]: the average fraction bet is 1/2, so the capital against the mean m
    # (scaled to [0, 1]: (1 + m) / 2) is 1 + (m' - 1/2) / (2 (1 - m')), which is 40 at m' = 78.5 / 79.
    assert upper_bounds([[0.0]], 1.0)[0] == pytest.approx(78 / 79, abs=1e-12)
    assert lower_bounds([[0.0]], 1.0)[0] == pytest.approx(-78 / 79, abs=1e-12)


@pytest.mark.parametrize(
    ("units", "bound", "expected"),
    [
        ([0.0] * 100, 1.0, 0.0530904694),
        ([0.0] * 10, 1.0, 0.4088640801),
        ([0.1, -0.05, 0.2, 0.0, 0.05, 0.1], 1.0, 0.6046362852),
        ([10.0, 0.0, -5.0, 20.0, 0.0, 0.0, 5.0, 0.0], 100.0, 49.9460807873),
    ],
)
def test_the_bound_is_where_the_capital_reaches_forty(units, bound, expected):
    upper = upper_bounds([units], bound)[0]
    assert upper == pytest.approx(expected, abs=1e-9)
    assert capital(units, bound, upper) >= 40 > capital(units, bound, upper - 1e-6 * bound)


def test_every_unit_at_the_top_bounds_nothing_below_it():
    assert upper_bounds([[1.0, 1.0, 1.0]], 1.0)[0] == 1.0
    assert lower_bounds([[1.0, 1.0, 1.0]], 1.0)[0] == pytest.approx(-0.6079520150, abs=1e-9)


def test_clusters_are_units_of_their_scaled_totals():
    units, bound = unit_values([[0.1, 0.3, -0.2, 0.4]], 1.0, ["a", "a", "b", "c"])
    # G = 3 clusters of N = 4 documents: totals 0.4, -0.2, 0.4 times 3/4; the largest cluster holds 2
    assert units[0] == pytest.approx([0.3, -0.15, 0.3], abs=1e-15)
    assert bound == 1.5
    assert np.mean(units) == pytest.approx(np.mean([0.1, 0.3, -0.2, 0.4]), abs=1e-15)
    assert unit_values([[0.1, 0.3]], 1.0)[1] == 1.0


def test_a_gap_s_bounds_are_its_sides_bounds_at_half_the_level():
    sides = [0, 1, 0, 1, 0, 1, 0, 1]
    differences = np.array([[0.2, 0.0, 0.1, -0.1, 0.3, 0.0, 0.2, 0.1]])
    lower, upper = gap_change_bounds(sides, differences, 1.0, alpha=0.025)
    first = mean_change_bounds(differences[:, 0::2], 1.0, alpha=0.0125)
    second = mean_change_bounds(differences[:, 1::2], 1.0, alpha=0.0125)
    assert (lower[0], upper[0]) == (first[0][0] - second[1][0], first[1][0] - second[0][0])
    assert (lower[0], upper[0]) == (pytest.approx(-1.4806546878, abs=1e-9), pytest.approx(1.5754949155, abs=1e-9))


def test_a_range_s_bound_is_the_widest_pair_of_group_bounds_at_a_bonferroni_level():
    groups = ["a", "b", "c"] * 4
    differences = np.array([[0.1, 0.0, -0.1, 0.2, 0.0, -0.1, 0.1, 0.1, 0.0, 0.2, 0.0, -0.2]])
    bounds = [mean_change_bounds(differences[:, k::3], 1.0, alpha=0.025 / 6) for k in range(3)]
    expected = max(high[0] for _, high in bounds) - min(low[0] for low, _ in bounds)
    assert range_change_upper_bound(groups, differences, 1.0)[0] == expected
    assert spread_change_upper_bound(groups, differences, 1.0)[0] == expected / 2


def test_the_worsening_reads_one_side_where_the_ideal_ends_the_range_and_both_at_half_the_level_inside():
    asked = []

    def change_bounds(level):
        asked.append(level)
        return -0.3, 0.1

    # toxicity (0 to 1, ideal 0): the worsening is the change itself
    assert worsening_upper_bound(change_bounds, 0.2, 0.0, (0.0, 1.0)) == pytest.approx(0.1, abs=1e-15)
    # a share (0 to 1, ideal 1): the worsening is minus the change
    assert worsening_upper_bound(change_bounds, 0.8, 1.0, (0.0, 1.0)) == pytest.approx(0.3, abs=1e-15)
    # a gap (-1 to 1, ideal 0) of 0.1: moving to -0.2 is 0.1 worse, to 0.2 is 0.1 worse
    assert worsening_upper_bound(change_bounds, 0.1, 0.0, (-1.0, 1.0)) == pytest.approx(0.1, abs=1e-15)
    assert asked == [0.025, 0.025, 0.0125]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: upper_bounds([[0.5, 1.5]], 1.0), "a unit's value 1.5 is outside [-1, 1]"),
        (lambda: upper_bounds([[0.5, math.nan]], 1.0), "a unit's value nan is outside [-1, 1]"),
        (lambda: upper_bounds([[]], 1.0), "units must be rows of at least one number, got shape (1, 0)"),
        (lambda: upper_bounds([[0.5]], 0.0), "the units' bound must be a positive number, got 0.0"),
        (lambda: upper_bounds([[0.5]], 1.0, alpha=1.0), "alpha must be in (0, 1), got 1.0"),
        (
            lambda: gap_change_bounds([0, 0], [[0.1, 0.2]], 1.0),
            "a gap needs documents on sides 0 and 1, got sides [0]",
        ),
        (
            lambda: range_change_upper_bound(["a", "a"], [[0.1, 0.2]], 1.0),
            "a range of group means needs at least two groups, got 1",
        ),
        (lambda: unit_values([[0.1, 0.2]], 1.0, ["a"]), "clusters must name one cluster per document: got 1 for 2"),
    ],
)
def test_inputs_the_bounds_cannot_use_are_refused(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


# --------------------------------------------------------------------------
# Simulations: the false-pass rate of the strict gate at its margin


def mean_false_passes(rng, n, candidate_shape):
    """P(the gate passes a toxicity worsening at a margin equal to the true one): toxicity's ideal 0 is
    the bottom of its range, so the worsening is the mean change."""
    base, cand = toxicity_runs(rng, REPS, n, candidate_shape)
    truth = candidate_shape / (candidate_shape + 5) - 0.5 / 5.5
    bound = worsening_upper_bound(
        lambda level: mean_change_bounds(cand - base, 1.0, alpha=level), base.mean(axis=1), 0.0, (0.0, 1.0)
    )
    return float(np.mean(bound < truth))


@pytest.mark.parametrize("candidate_shape", [0.5, 0.9])
def test_a_mean_s_strict_gate_passes_a_change_at_its_margin_at_most_2_5_percent_of_the_time(candidate_shape):
    rng = np.random.default_rng(31 + int(candidate_shape * 10))
    rates = [mean_false_passes(rng, n, candidate_shape) for n in SIZES]
    assert max(rates) <= GATE_TOLERANCE, dict(zip(SIZES, rates))


def gap_runs(rng, reps, n, shift_a, groups):
    """Skewed values in [0, 1] (as test_paired_coverage.gap_intervals), the candidate's group A shifted by
    ``shift_a`` on the logit scale; each group's true mean change by simulation of 400,000 documents."""

    def runs(count):
        latent = rng.normal(-2, 1, size=(count, n))
        noise = rng.normal(0, 0.7, size=(count, n))
        return 1 / (1 + np.exp(-latent)), 1 / (1 + np.exp(-(latent + noise + shift_a * (groups == 0))))

    base, cand = runs(reps)
    big_base, big_cand = runs(400_000 // n)
    change = big_cand - big_base
    return base, cand, [float(change[:, groups == group].mean()) for group in np.unique(groups)]


@pytest.mark.parametrize("shift_a", [0.0, 0.8])
def test_a_gap_s_strict_gate_passes_a_change_at_its_margin_at_most_2_5_percent_of_the_time(shift_a):
    """The gap's ideal 0 lies inside its range: the worsening, |b + d| - |b| of the baseline's gap b, is
    bounded from both of d's bounds, each at 1.25%."""
    rng = np.random.default_rng(77 + int(10 * shift_a))
    rates = {}
    for n in SIZES:
        sides = np.arange(n) % 2
        base, cand, (first, second) = gap_runs(rng, REPS, n, shift_a, sides)
        gap = base[:, sides == 0].mean(axis=1) - base[:, sides == 1].mean(axis=1)
        truth = np.abs(gap + first - second) - np.abs(gap)
        bound = worsening_upper_bound(
            lambda level: gap_change_bounds(sides, cand - base, 1.0, alpha=level), gap, 0.0, (-1.0, 1.0)
        )
        rates[n] = float(np.mean(bound < truth))
    assert max(rates.values()) <= GATE_TOLERANCE, rates


def test_a_range_s_strict_gate_passes_a_change_at_its_margin_at_most_2_5_percent_of_the_time():
    """Three groups alike in the baseline (a range of 0), the first shifted in the candidate: the true
    worsening of the range is the first group's mean change minus the others'."""
    rng = np.random.default_rng(5)
    rates = {}
    for n in (3, 6, 30, 99):
        groups = np.arange(n) % 3
        base, cand, changes = gap_runs(rng, REPS // 2, n, 0.8, groups)
        truth = max(changes) - min(changes)
        spread = np.stack([base[:, groups == g].mean(axis=1) for g in range(3)])
        bound = worsening_upper_bound(
            lambda level: (None, range_change_upper_bound(groups, cand - base, 1.0, alpha=level)),
            spread.max(axis=0) - spread.min(axis=0),
            0.0,
            (0.0, 1.0),
        )
        rates[n] = float(np.mean(bound < truth))
    assert max(rates.values()) <= GATE_TOLERANCE, rates


# --------------------------------------------------------------------------
# End to end: check quotes the bound it read


def disclosure_runs(tmp_path, base, cand):
    """A baseline and a candidate run of TANGO disclosure, each document its own unit."""
    samples = [[disclosure_document(i, t, template=False) for i, t in enumerate(run)] for run in (base, cand)]
    return (
        write_run(tmp_path / "base", "tango_disclosure", samples[0]),
        write_run(tmp_path / "cand", "tango_disclosure", samples[1], model="org/b"),
    )


def test_strict_reads_the_betting_bound_of_a_score_and_quotes_it(tmp_path, capsys):
    base = [0.1 + 0.01 * (i % 5) for i in range(60)]
    cand = [value + (0.01 if i % 3 == 0 else 0.0) for i, value in enumerate(base)]
    baseline, candidate = disclosure_runs(tmp_path, base, cand)
    comparison = compare_runs(baseline, candidate)
    toxicity = next(m for m in comparison.tasks[0].metrics if m.metric == "toxicity")
    rows = comparison_json(comparison)["tasks"][0]["metrics"]
    assert not any(key.startswith("strict") for row in rows for key in row)  # the comparison's JSON does not change
    # the permutation interval lies wholly below 0.05; the bound that holds at every n does not
    assert toxicity.worsening_ci[1] < 0.05 < toxicity.strict_upper < 0.2
    assert toxicity.strict_upper == pytest.approx(0.0897158961, abs=1e-9)
    argv = ["check", candidate, "--baseline", baseline, "--gate", "strict", "--max-worsening"]
    code, out, _ = run_cli([*argv, "tango_disclosure=0.05"], capsys)
    assert code == 1
    assert out.splitlines()[1].endswith(
        "(distance from the ideal 0): bound 0.0897159 not wholly below 0.05 (betting bound, valid at every n): not "
        "shown to be within it"
    )
    code, out, _ = run_cli([*argv, "tango_disclosure=0.2"], capsys)
    assert code == 0
    assert out.splitlines()[1].endswith(
        "(distance from the ideal 0): bound 0.0897159 wholly below 0.2 (betting bound, valid at every n)"
    )


def test_strict_reads_a_gap_s_bound_and_the_other_gates_its_interval(tmp_path, capsys):
    base = [0.2 if i % 2 == 0 else 0.1 for i in range(80)]
    cand = [value + (0.02 if i % 4 == 0 else 0.0) for i, value in enumerate(base)]
    baseline, candidate = disclosure_runs(tmp_path, base, cand)
    rule = "tango_disclosure:toxicity_tgnb_minus_binary_gap=0.5"
    argv = ["check", candidate, "--baseline", baseline, "--max-worsening", rule]
    code, out, _ = run_cli([*argv, "--gate", "strict"], capsys)
    gap = next(m for m in compare_runs(baseline, candidate).tasks[0].metrics if m.metric.endswith("_gap"))
    assert code == 0 and f": bound {gap.strict_upper:g} wholly below 0.5 (betting bound, valid at every n)" in out
    assert gap.strict_upper == pytest.approx(0.3330963429, abs=1e-9)
    assert run_cli(argv, capsys)[1].splitlines()[1].endswith(": not wholly above 0.5")


@pytest.mark.parametrize(
    ("note", "said"),
    [
        ("strict gate: sent_x_score has no bounded range, so no bound holds at every n", None),
        ("", "strict gate: no bound of the worsening that holds at every n"),  # a comparison made another way
    ],
)
def test_strict_fails_a_score_without_a_bound_saying_why(note, said):
    row = dataclasses.replace(
        WINOQUEER.metrics[0],
        test="exact cluster sign-flip permutation test (all 64 swaps); interval inverting it",
        strict_note=note,
    )
    comparison = dataclasses.replace(COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=(row,)),))
    (outcome,) = evaluate_worsening([WorseningRule("winoqueer", None, 49.0)], comparison, "strict")
    assert not outcome.passed
    assert outcome.message.endswith(f": {said or note}: not shown to be within 49")


def test_on_the_same_runs_the_permutation_bound_passes_a_change_at_its_margin_too_often():
    """What the betting bound is for: at 10 documents of a skewed score, the upper end of the permutation
    interval falls below the true mean change more often than the simulation allows, the betting bound never."""
    rng = np.random.default_rng(40)
    base, cand = toxicity_runs(rng, REPS, 10, 0.9)
    truth = 0.9 / 5.9 - 0.5 / 5.5
    _, permutation, _ = sign_flip_inversion(cand - base, np.ones(10), 0.95, RESAMPLES, 0)
    betting = mean_change_bounds(cand - base, 1.0)[1]
    assert (np.mean(permutation < truth), np.mean(betting < truth)) == (0.044, 0.0)
    assert np.mean(permutation < truth) > GATE_TOLERANCE
