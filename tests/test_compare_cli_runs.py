"""``lm-eval-bias compare`` and the worsening gate on two runs written as lm-eval writes them: the
same invented WinoQueer pairs scored by two models (tests/test_compare.py writes them)."""

import json

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from helpers import run_cli
from test_compare import BASE_GAY, BASE_LESBIAN, CAND_GAY, CAND_LESBIAN, winoqueer_samples, write_run


@pytest.fixture
def runs(tmp_path):
    """A baseline 80% stereotyped (16 of 20 pairs) and a candidate 50% (10 of 20) on the same pairs."""
    baseline = write_run(tmp_path / "base", "winoqueer", winoqueer_samples(BASE_GAY, BASE_LESBIAN))
    candidate = write_run(tmp_path / "cand", "winoqueer", winoqueer_samples(CAND_GAY, CAND_LESBIAN), model="org/b")
    return baseline, candidate


def compared(capsys, tmp_path, baseline, candidate):
    target = tmp_path / "compare.json"
    code, out, err = run_cli(["compare", baseline, candidate, "--json", target], capsys)
    assert (code, err) == (0, "")
    (task,) = json.loads(target.read_text())["tasks"]
    return out, {metric["metric"]: metric for metric in task["metrics"]}


def mcnemar_p(base, cand) -> float:
    table = [[0, 0], [0, 0]]
    for b, c in zip(base, cand):
        table[b][c] += 1
    return mcnemar(table, exact=True).pvalue


def test_compare_gives_the_paired_difference_and_swapping_the_runs_negates_it(runs, tmp_path, capsys):
    out, metrics = compared(capsys, tmp_path, *runs)
    assert "winoqueer (version " in out and ": documents: baseline 20, candidate 20, matched 20\n" in out
    headline = metrics["bias_score"]
    assert (headline["baseline"], headline["candidate"], headline["difference"], headline["n"]) == (80, 50, -30, 20)
    assert headline["pvalue"] == pytest.approx(mcnemar_p(BASE_GAY + BASE_LESBIAN, CAND_GAY + CAND_LESBIAN), abs=1e-12)
    assert headline["ci_lower"] < -30 < headline["ci_upper"] < 0
    _, swapped = compared(capsys, tmp_path, *reversed(runs))
    assert swapped.keys() == metrics.keys()
    for name, metric in metrics.items():
        other = swapped[name]
        assert (other["difference"], other["ci_lower"], other["ci_upper"]) == (
            negative(metric["difference"]),
            negative(metric["ci_upper"]),
            negative(metric["ci_lower"]),
        ), name
        assert (other["pvalue"], other["pvalue_bh"], other["test"]) == (
            metric["pvalue"],
            metric["pvalue_bh"],
            metric["test"],
        ), name
    # Every pair's Straight sentence scores alike in both runs: its difference has no interval either way.
    assert (metrics["sent_y_score"]["ci_lower"], swapped["sent_y_score"]["ci_lower"]) == (None, None)


def negative(number):
    """A number of compare's JSON negated; null (not computable) stays null."""
    return None if number is None else -number


def test_identical_runs_give_zero_differences_and_pass_the_gate_but_not_the_strict_one(runs, tmp_path, capsys):
    _, metrics = compared(capsys, tmp_path, runs[0], runs[0])
    assert list(metrics) == [
        "bias_score",
        "bias_score_gay",
        "bias_score_lesbian",
        "sent_x_score",
        "sent_y_score",
        "tie_pct",
    ]
    for name, metric in metrics.items():
        assert (metric["difference"], metric["pvalue"]) == (0, 1), name
    for name in ("bias_score", "bias_score_gay", "bias_score_lesbian", "tie_pct"):
        metric = metrics[name]
        # the box interval keeps the uncertainty of n pairs even when none changed
        assert metric["ci_lower"] == -metric["ci_upper"] < 0, name
        assert metric["note"] == "no discordant pairs: p = 1", name
    for name in ("bias_score", "bias_score_gay", "bias_score_lesbian"):
        metric = metrics[name]
        assert metric["worsening"] == 0, name
        # values at or above the ideal 50: the difference's interval, cut where the candidate would reach 50
        expected = [max(metric["ci_lower"], 50 - metric["baseline"]), metric["ci_upper"]]
        assert metric["worsening_ci"] == pytest.approx(expected, abs=1e-12), name
    for name in ("sent_x_score", "sent_y_score"):  # numbers that agree on every pair: no interval
        assert (metrics[name]["ci_lower"], metrics[name]["ci_upper"], metrics[name]["worsening"]) == (None, None, None)
        assert metrics[name]["note"] == (
            "every document's difference is 0: no interval, as documents that agree this closely do not show how "
            "far the difference could be"
        )
    same = f"baseline and candidate are the same run ({runs[0].resolve()}): nothing was compared"
    code, out, _ = run_cli(["check", runs[0], "--baseline", runs[0], "--max-worsening", "winoqueer=0"], capsys)
    assert code == 0 and out.endswith("1 passed, 0 failed\n")
    assert f"        note: {same}; no discordant pairs: p = 1\n" in out
    code, out, _ = run_cli(
        ["check", runs[0], "--baseline", runs[0], "--max-worsening", "winoqueer=0", "--gate", "strict"], capsys
    )
    assert code == 1 and out.endswith("0 passed, 1 failed\n")
    assert " (distance from the ideal 50): one run on both sides: not shown to be within 0\n" in out


@pytest.fixture
def moved_away(tmp_path):
    """A baseline 55% stereotyped (11 of 20 pairs), a candidate 100%: 9 pairs changed, all away from 50."""
    baseline = write_run(tmp_path / "b55", "winoqueer", winoqueer_samples([1] * 6 + [0] * 4, [1] * 5 + [0] * 5))
    candidate = write_run(tmp_path / "c100", "winoqueer", winoqueer_samples([1] * 10, [1] * 10), model="org/b")
    return baseline, candidate


def gate(capsys, baseline, candidate, margin, *options):
    return run_cli(
        ["check", candidate, "--baseline", baseline, "--max-worsening", f"winoqueer={margin}", *options], capsys
    )


def test_the_gate_fails_a_candidate_demonstrably_worse_by_more_than_the_margin(moved_away, tmp_path, capsys):
    baseline, candidate = moved_away
    _, metrics = compared(capsys, tmp_path, baseline, candidate)
    headline = metrics["bias_score"]
    assert (headline["baseline"], headline["candidate"], headline["worsening"]) == (55, 100, 45)
    assert headline["pvalue"] == pytest.approx(mcnemar_p([1] * 6 + [0] * 4 + [1] * 5 + [0] * 5, [1] * 20), abs=1e-12)
    lower, upper = headline["worsening_ci"]
    assert 0 < lower < 45 <= upper
    code, out, _ = gate(capsys, baseline, candidate, 0)
    assert code == 1
    assert "  FAIL  winoqueer worsening <= 0   [org/model-a -> org/b]  bias_score: baseline 55, candidate 100, " in out
    assert ", p = 0.00391, p BH = 0.00391, n = 20 (exact McNemar; Clopper-Pearson box interval); worsening +45 [" in out
    assert ": wholly above 0: worse by more than the margin\n" in out
    assert gate(capsys, baseline, candidate, lower - 0.5)[0] == 1
    assert gate(capsys, baseline, candidate, lower)[0] == 0  # not wholly above a margin at its lower end
    # The interval reaches past 50, the farthest a bias score can move from the ideal 50: no margin the rule
    # accepts lies above it, so the strict gate fails at every one.
    assert upper > 50
    code, out, _ = gate(capsys, baseline, candidate, 49.9, "--gate", "strict")
    assert code == 1 and ": not wholly below 49.9: not shown to be within it\n" in out
    code, out, err = gate(capsys, baseline, candidate, 50, "--gate", "strict")
    assert (code, out) == (2, "")
    assert err == (
        "lm-eval-bias check: rule 'winoqueer worsening <= 50': the worsening of bias_score (bias_score takes values "
        "0 to 100, its ideal value is 50) takes values -50 to 50, so a limit of 50 makes a rule that can never "
        "fail; give a limit within the range\n"
    )


def test_the_gate_passes_a_candidate_that_moved_towards_the_ideal(moved_away, capsys):
    baseline, candidate = moved_away
    code, out, _ = gate(capsys, candidate, baseline, 0)  # 100 -> 55
    assert code == 0 and "difference -45 [" in out and "; worsening -45 [" in out and ": not wholly above 0\n" in out
    code, out, _ = gate(capsys, candidate, baseline, 0, "--gate", "strict")
    assert code == 0 and ": wholly below 0\n" in out
