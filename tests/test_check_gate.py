"""The regression gate: ``lm-eval-bias check CANDIDATE --baseline BASELINE --max-worsening
TASK[:METRIC]=MARGIN``, on a fixed, hand-made comparison of the two runs."""

import dataclasses
import math

import pytest

from compare_fixtures import COMPARISON, TANGO, WINOQUEER
from helpers import run_cli, winoqueer_results, write
from lm_eval_bias.report import worsening_gate
from lm_eval_bias.report.gate_rules import Policy, WorseningRule, read_policy
from lm_eval_bias.report.values import ResultsError
from test_compare import winoqueer_samples, write_run

HEADING = (
    "lm-eval-bias check (worsening from the baseline: fails when its paired 95% interval lies wholly above the margin "
    "and its paired test has p < 0.05)"
)
STRICT_HEADING = (
    "lm-eval-bias check (worsening from the baseline: fails unless its paired 95% interval (of a score: its betting "
    "bound, valid at every n) lies wholly below the margin)"
)
WINOQUEER_NUMBERS = (
    "bias_score: baseline 60, candidate 66, difference +6 [4.125, 7.875], p = 0.000123, p BH = 0.000123, n = 90 "
    "(exact McNemar; Clopper-Pearson box interval); worsening +6 [4.125, 7.875] (distance from the ideal 50)"
)
WINOQUEER_NOTE = (
    "        note: settings differ: model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate); "
    "compared on the 90 matched documents (baseline 100, candidate 90)"
)


@pytest.fixture
def compared(monkeypatch):
    """The runs compare as the fixed comparison; records what was asked (the rules' tasks)."""
    calls = []

    def compare_for(rules, baseline, candidate):
        calls.append((str(baseline), str(candidate), sorted({rule.task for rule in rules})))
        return compared.comparison

    compared.comparison = COMPARISON
    monkeypatch.setattr(worsening_gate, "compare_for", compare_for)
    compared.calls = calls
    return compared


def gate(capsys, *argv):
    return run_cli(["check", "runs/tuned", "--baseline", "runs/base", *argv], capsys)


def test_worse_by_more_than_the_margin_fails_naming_both_values_the_difference_its_interval_and_p(compared, capsys):
    code, out, err = gate(capsys, "--max-worsening", "winoqueer=2")
    assert (code, err) == (1, "")
    assert out == (
        f"{HEADING}\n"
        f"  FAIL  winoqueer worsening <= 2   [org/base -> org/tuned]  {WINOQUEER_NUMBERS}: wholly above 2: worse by "
        "more than the margin\n"
        f"{WINOQUEER_NOTE}\n"
        "0 passed, 1 failed\n"
    )
    assert compared.calls == [("runs/base", "runs/tuned", ["winoqueer"])]


def test_worse_but_not_demonstrably_by_more_than_the_margin_passes(compared, capsys):
    # the worsening's interval [4.125, 7.875] holds 5: not shown to exceed it
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer:bias_score=5")
    assert code == 0
    assert (
        f"  PASS  winoqueer:bias_score worsening <= 5   [org/base -> org/tuned]  {WINOQUEER_NUMBERS}: not wholly "
        in out
    )
    assert out.endswith("above 5\n" + WINOQUEER_NOTE + "\n1 passed, 0 failed\n")


@pytest.mark.parametrize(
    ("margin", "code", "verdict"),
    [
        ("5", 1, "not wholly below 5: not shown to be within it"),  # [4.125, 7.875] reaches above 5
        ("7.875", 1, "not wholly below 7.875: not shown to be within it"),  # the bound itself is not below
        ("8", 0, "wholly below 8"),
    ],
)
def test_the_strict_gate_passes_only_an_interval_wholly_below_the_margin(compared, capsys, margin, code, verdict):
    result = gate(capsys, "--max-worsening", f"winoqueer={margin}", "--gate", "strict")
    assert result[0] == code
    assert result[1] == (
        f"{STRICT_HEADING}\n"
        f"  {'PASS' if code == 0 else 'FAIL'}  winoqueer worsening <= {margin}   [org/base -> org/tuned]  "
        f"{WINOQUEER_NUMBERS}: {verdict}\n"
        f"{WINOQUEER_NOTE}\n"
        f"{1 - code} passed, {code} failed\n"
    )


def test_an_improvement_passes_both_gates_and_each_rule_gets_its_line(compared, capsys):
    tango_line = (
        "  PASS  tango_misgender worsening <= 0   [org/base -> org/tuned]  consistency: baseline 0.8, candidate 0.9, "
        "difference +0.1 [0.05, 0.15], p = 0.002, p BH = 0.002, n = 48 (exact McNemar; Clopper-Pearson box interval); "
        "worsening -0.1 [-0.15, -0.05] (distance from the ideal 1): "
    )
    code, out, _ = gate(capsys, "--max-worsening", "tango_misgender=0", "--max-worsening", "winoqueer:bias_score_gay=0")
    assert code == 0
    assert out.splitlines()[1] == tango_line + "not wholly above 0"
    assert out.splitlines()[2].startswith("  PASS  winoqueer:bias_score_gay worsening <= 0   [org/base -> org/tuned]  ")
    assert out.splitlines()[2].endswith("worsening -2.5 [-6, 1] (distance from the ideal 50): not wholly above 0")
    code, out, _ = gate(capsys, "--max-worsening", "tango_misgender=0", "--gate", "strict")
    assert code == 0 and out.splitlines()[1] == tango_line + "wholly below 0"


def test_identical_runs_pass_the_default_gate_and_not_the_strict_one_at_margin_zero(compared, capsys):
    same = dataclasses.replace(
        WINOQUEER.metrics[2], ideal=50.0, worsening=0.0, worsening_ci=(0.0, 0.0), note="no discordant pairs: p = 1"
    )
    compared.comparison = dataclasses.replace(COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=(same,)),))
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer:bias_score_trans=0")
    assert code == 0 and "worsening 0 [0, 0] (distance from the ideal 50): not wholly above 0\n" in out
    assert out.endswith("; no discordant pairs: p = 1\n1 passed, 0 failed\n")
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer:bias_score_trans=0", "--gate", "strict")
    assert code == 1 and "not wholly below 0: not shown to be within it" in out


def test_a_worsening_without_an_interval_fails_closed(compared, capsys):
    unknown = dataclasses.replace(WINOQUEER.metrics[1], worsening=math.nan, worsening_ci=(math.nan, math.nan))
    compared.comparison = dataclasses.replace(COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=(unknown,)),))
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer:bias_score_gay=10")
    assert code == 1
    assert "worsening N/A N/A (distance from the ideal 50): no interval of the worsening: fails closed\n" in out


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            "winoqeer=2",
            "rule 'winoqeer worsening <= 2': the comparison has no task 'winoqeer'; similar: winoqueer; tasks "
            "compared: tango_misgender, winoqueer",
        ),
        (
            "scm_score=2",
            "rule 'scm_score worsening <= 2': the comparison has no task 'scm_score' (scm_score: only in the "
            "baseline); tasks compared: tango_misgender, winoqueer",
        ),
        (
            "winoqueer:bias_score_gya=2",
            "rule 'winoqueer:bias_score_gya worsening <= 2': task winoqueer has no compared metric "
            "'bias_score_gya'; similar: bias_score_gay, bias_score, bias_score_trans; compared: bias_score, "
            "bias_score_gay, bias_score_trans",
        ),
        (
            "tango_misgender:distal_minus_nongendered_gap=2",
            "rule 'tango_misgender:distal_minus_nongendered_gap worsening <= 2': tango_misgender's metadata "
            "declares no ideal value for distal_minus_nongendered_gap, so 'worse' is not defined for it; gate it "
            "with an absolute rule (--max, --min) instead",
        ),
        (
            "winoqueer=-1",
            "worsening rule 'winoqueer=-1': the margin must be a finite number at least 0 (how much worse the "
            "candidate may be, in the metric's units), got '-1'",
        ),
        (
            "winoqueer=nan",
            "worsening rule 'winoqueer=nan': the margin must be a finite number at least 0 (how much worse the "
            "candidate may be, in the metric's units), got 'nan'",
        ),
        (
            "winoqueer<=2",
            "cannot read the worsening rule 'winoqueer<=2'; write TASK[:METRIC]=MARGIN, e.g. my_task:bias_score=2",
        ),
    ],
)
def test_a_rule_the_comparison_cannot_answer_is_exit_2_naming_it(compared, capsys, rule, message):
    assert gate(capsys, "--max-worsening", rule) == (2, "", f"lm-eval-bias check: {message}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["cand", "--max-worsening", "winoqueer=2"],
            "worsening rule 'winoqueer worsening <= 2' needs the run to compare with: give --baseline BASELINE",
        ),
        (
            ["cand", "--baseline", "base", "--max", "winoqueer=65"],
            "--baseline is used by worsening rules only: add --max-worsening TASK[:METRIC]=MARGIN",
        ),
        (
            ["a", "b", "--baseline", "base", "--max-worsening", "winoqueer=2"],
            "with --baseline, give one candidate run (a results file or its output folder)",
        ),
    ],
)
def test_options_that_do_not_fit_together_are_exit_2(compared, capsys, argv, message):
    assert run_cli(["check", *argv], capsys) == (
        2,
        "",
        f"lm-eval-bias check: {message}; see lm-eval-bias check --help\n",
    )
    assert compared.calls == []


def test_absolute_rules_are_checked_on_the_candidate_beside_the_worsening_rules(compared, tmp_path, capsys):
    candidate = write(tmp_path / "results_1.json", winoqueer_results())
    code, out, _ = run_cli(
        ["check", candidate, "--baseline", "runs/base", "--max", "winoqueer=99", "--max-worsening", "winoqueer=2"],
        capsys,
    )
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == (
        "lm-eval-bias check (point estimates; worsening from the baseline: fails when its paired 95% interval "
        "lies wholly above the margin and its paired test has p < 0.05)"
    )
    assert lines[1].startswith("  PASS  winoqueer <= 99   [")
    assert lines[2].startswith("  FAIL  winoqueer worsening <= 2   [org/base -> org/tuned]")
    assert lines[-1] == "1 passed, 1 failed"


def test_the_policy_file_holds_worsening_rules_and_the_strict_gate(compared, tmp_path, capsys):
    policy = write(
        tmp_path / "policy.yaml", "gate: strict\nmax_worsening:\n  winoqueer: 8\n  tango_misgender:consistency: 0\n"
    )
    read = read_policy(policy)
    assert read == Policy(
        (),
        (WorseningRule("winoqueer", None, 8.0), WorseningRule("tango_misgender", "consistency", 0.0)),
        "strict",
    )
    assert [rule.where for rule in read.worsening] == [
        f"{policy}, line 3: max_worsening['winoqueer']",
        f"{policy}, line 4: max_worsening['tango_misgender:consistency']",
    ]
    code, out, _ = gate(capsys, "--policy", policy)
    assert code == 0 and out.startswith(STRICT_HEADING + "\n") and out.endswith("2 passed, 0 failed\n")
    # the command line's gate wins over the policy's
    assert gate(capsys, "--policy", policy, "--gate", "estimate")[1].startswith(HEADING + "\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "max_worsening:\n  winoqueer: 2\n  winoqueer:bias_score_gya: 2\n",
            "{policy}, line 3: max_worsening['winoqueer:bias_score_gya']: rule 'winoqueer:bias_score_gya worsening "
            "<= 2': task winoqueer has no compared metric 'bias_score_gya'; similar: bias_score_gay, bias_score, "
            "bias_score_trans; compared: bias_score, bias_score_gay, bias_score_trans",
        ),
        (
            "max_worsening:\n  winoqueer: yes\n",
            "{policy}, line 2: max_worsening['winoqueer']: worsening rule 'winoqueer=True': the margin must be a "
            "finite number at least 0 (how much worse the candidate may be, in the metric's units), got True",
        ),
        (
            "max_worsening:\n  winoqueer <= 2: 1\n",
            "{policy}, line 2: max_worsening['winoqueer <= 2']: write TASK[:METRIC]: MARGIN, e.g. "
            "my_task:bias_score: 2",
        ),
        (
            "max_worsening:\n  - winoqueer=2\n",
            "{policy}: 'max_worsening' must be a mapping of TASK[:METRIC] to a margin, e.g. my_task: 2",
        ),
        ("max_worsening: {}\n", "{policy}: a policy needs a non-empty 'rules' list or 'max_worsening' mapping"),
        (
            "max_worsening:\n  winoqueer: 2\nmax_worsenning:\n  winoqueer: 1\n",
            "{policy}: unknown key(s) 'max_worsenning' (did you mean 'max_worsening'?); a policy has gate, "
            "max_worsening and rules",
        ),
    ],
)
def test_a_policy_worsening_rule_that_cannot_be_used_names_its_line(compared, tmp_path, capsys, text, message):
    policy = write(tmp_path / "policy.yaml", text)
    assert gate(capsys, "--policy", policy) == (2, "", f"lm-eval-bias check: {message.format(policy=policy)}\n")


def test_worsening_rules_of_a_policy_need_a_baseline(compared, tmp_path, capsys):
    policy = write(tmp_path / "policy.yaml", "max_worsening:\n  winoqueer: 2\n")
    assert run_cli(["check", "cand", "--policy", policy], capsys) == (
        2,
        "",
        "lm-eval-bias check: worsening rule 'winoqueer worsening <= 2' needs the run to compare with: give "
        "--baseline BASELINE; see lm-eval-bias check --help\n",
    )


def test_evaluate_worsening_refuses_an_unknown_gate():
    with pytest.raises(ResultsError, match="gate must be one of estimate, interval, strict, got 'loose'"):
        worsening_gate.evaluate_worsening([WorseningRule("winoqueer", None, 2.0)], COMPARISON, "loose")
    assert TANGO.metrics[0].ideal == 1.0  # the fixture's improvement, as the tests above read it


def test_a_rule_naming_a_task_neither_run_has_is_exit_2_before_anything_is_compared(tmp_path, capsys):
    samples = winoqueer_samples([1, 0], [1, 1])
    baseline = write_run(tmp_path / "base", "winoqueer", samples)
    candidate = write_run(tmp_path / "cand", "winoqueer", samples, model="org/b")
    assert run_cli(["check", candidate, "--baseline", baseline, "--max-worsening", "winoqeer=2"], capsys) == (
        2,
        "",
        "lm-eval-bias check: rule 'winoqeer worsening <= 2': neither run has task 'winoqeer'; similar: winoqueer; "
        "the runs have winoqueer\n",
    )


def test_an_interval_above_the_margin_without_a_significant_paired_test_does_not_fail():
    # Two documents that both moved away from the ideal: an interval of [1, 1] lies above any margin
    # below 1, but the paired test cannot find a change in two documents (p = 0.5 at best).
    two = dataclasses.replace(
        WINOQUEER.metrics[0], n=2, pvalue=0.5, pvalue_bh=0.5, worsening=1.0, worsening_ci=(1.0, 1.0)
    )
    comparison = dataclasses.replace(COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=(two,)),))
    rule = WorseningRule("winoqueer", None, 0.5)
    (outcome,) = worsening_gate.evaluate_worsening([rule], comparison)
    assert outcome.passed
    assert outcome.message.endswith(": wholly above 0.5, but the paired test finds no change (p >= 0.05): not shown")
    significant = dataclasses.replace(two, pvalue=0.01, pvalue_bh=0.01)
    comparison = dataclasses.replace(COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=(significant,)),))
    (outcome,) = worsening_gate.evaluate_worsening([rule], comparison)
    assert not outcome.passed and outcome.message.endswith(": wholly above 0.5: worse by more than the margin")
