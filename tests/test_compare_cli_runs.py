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
    for name, metric in metrics.items():
        other = swapped[name]
        assert (other["difference"], other["ci_lower"], other["ci_upper"]) == (
            -metric["difference"],
            -metric["ci_upper"],
            -metric["ci_lower"],
        )
        assert (other["pvalue"], other["pvalue_bh"]) == (metric["pvalue"], metric["pvalue_bh"])


def test_identical_runs_give_zero_differences_and_pass_the_gate(runs, tmp_path, capsys):
    _, metrics = compared(capsys, tmp_path, runs[0], runs[0])
    for metric in metrics.values():
        assert (metric["difference"], metric["pvalue"], metric["worsening"], metric["worsening_ci"]) == (
            0,
            1,
            0,
            [0, 0],
        )
        # Newcombe's interval keeps the uncertainty of n pairs even when none changed
        assert metric["ci_lower"] == -metric["ci_upper"] < 0
        assert metric["note"] == "no discordant pairs: p = 1"
    code, out, _ = run_cli(["check", runs[0], "--baseline", runs[0], "--max-worsening", "winoqueer=0"], capsys)
    assert code == 0 and out.endswith("1 passed, 0 failed\n")


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
    assert ", p = 0.00391, p BH = 0.00391, n = 20 (exact McNemar; Newcombe paired interval); worsening +45 [" in out
    assert ": wholly above 0: worse by more than the margin\n" in out
    assert gate(capsys, baseline, candidate, lower - 0.5)[0] == 1
    assert gate(capsys, baseline, candidate, lower)[0] == 0  # not wholly above a margin at its lower end
    assert gate(capsys, baseline, candidate, upper, "--gate", "strict")[0] == 1
    assert gate(capsys, baseline, candidate, upper + 0.5, "--gate", "strict")[0] == 0


def test_the_gate_passes_a_candidate_that_moved_towards_the_ideal(moved_away, capsys):
    baseline, candidate = moved_away
    code, out, _ = gate(capsys, candidate, baseline, 0)  # 100 -> 55
    assert code == 0 and "difference -45 [" in out and "; worsening -45 [" in out and ": not wholly above 0\n" in out
    code, out, _ = gate(capsys, candidate, baseline, 0, "--gate", "strict")
    assert code == 0 and ": wholly below 0\n" in out
