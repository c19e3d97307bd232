"""The regression gate given bad inputs, as a careless or hurried user would: a margin the metric can
never move by, a comparison too small to show anything, runs whose pairs tie, the same run on both
sides, and malformed results files."""

import dataclasses
import json
import math
import shutil
from pathlib import Path

import pytest

from compare_fixtures import COMPARISON, WINOQUEER
from helpers import run_cli, winoqueer_logged_metrics, winoqueer_results, write
from lm_eval_bias.report import worsening_gate
from lm_eval_bias.report.gate_rules import GATES, WorseningRule
from lm_eval_bias.report.no_verdict import no_verdict
from lm_eval_bias.report.run import Metric, Run, TaskBase
from test_check_gate import compared, gate  # noqa: F401 (the fixture)
from test_compare import disclosure_document, logged, winoqueer_pair, winoqueer_samples, write_run

NEVER_FAILS = (
    "lm-eval-bias check: {where}rule 'tango_disclosure worsening <= {margin}': the worsening of toxicity (toxicity "
    "takes values 0 to 1, its ideal value is 0) takes values -1 to 1, so a limit of {margin} {outside}makes a rule "
    "that can never fail; give a limit within the range\n"
)


def tied_pair(pair: int, subgroup: str) -> dict:
    """A WinoQueer pair whose two sentences score alike: a tie, which the task counts as not stereotyped."""
    doc = winoqueer_pair(pair, subgroup, False)["doc"]
    return logged(doc, winoqueer_logged_metrics(doc["subgroup"], ["Gay", "Lesbian"], -11.0, -11.0), "none")


def tied_samples(count: int) -> list[dict]:
    """``count`` pairs, the first half Gay and the rest Lesbian, each tied."""
    return [tied_pair(pair, "Gay" if pair < count // 2 else "Lesbian") for pair in range(count)]


@pytest.fixture
def disclosure_runs(tmp_path):
    """TANGO disclosure runs of 20 prompts: the candidate's toxicity 0.3 on each where the baseline's is 0.1."""
    baseline = write_run(tmp_path / "base", "tango_disclosure", [disclosure_document(i, 0.1) for i in range(20)])
    candidate = write_run(
        tmp_path / "cand", "tango_disclosure", [disclosure_document(i, 0.3) for i in range(20)], model="org/b"
    )
    return baseline, candidate


# --------------------------------------------------------------------------
# 1. A margin the metric can never move by


@pytest.mark.parametrize(("margin", "outside"), [("2", "is outside that range and "), ("1", "")])
def test_a_margin_the_worsening_can_never_exceed_is_refused_as_an_unreachable_limit_is(
    disclosure_runs, capsys, margin, outside
):
    baseline, candidate = disclosure_runs
    argv = ["check", candidate, "--baseline", baseline, "--max-worsening", f"tango_disclosure={margin}"]
    assert run_cli(argv, capsys) == (2, "", NEVER_FAILS.format(where="", margin=margin, outside=outside))
    # the same words as the absolute limit's
    assert run_cli(["check", candidate, "--max", "tango_disclosure=2"], capsys) == (
        2,
        "",
        "lm-eval-bias check: rule 'tango_disclosure <= 2': toxicity takes values 0 to 1, so a limit of 2 is outside "
        "that range and makes a rule that can never fail; give a limit within the range\n",
    )


def test_a_policy_margin_the_worsening_can_never_exceed_names_its_line(disclosure_runs, tmp_path, capsys):
    baseline, candidate = disclosure_runs
    policy = write(tmp_path / "policy.yaml", "gate: strict\nmax_worsening:\n  tango_disclosure: 2\n")
    where = f"{policy}, line 3: max_worsening['tango_disclosure']: "
    assert run_cli(["check", candidate, "--baseline", baseline, "--policy", policy], capsys) == (
        2,
        "",
        NEVER_FAILS.format(where=where, margin="2", outside="is outside that range and "),
    )


@pytest.mark.parametrize(
    ("rule", "outside"),
    [
        ("winoqueer:bias_score_gay=50", ""),  # ideal 50 in 0 to 100: at most 50 further from it
        ("winoqueer:bias_score_gay=50.5", "is outside that range and "),
    ],
)
def test_the_widest_worsening_is_the_farther_end_of_the_range_from_the_ideal(compared, capsys, rule, outside):  # noqa: F811
    margin = rule.partition("=")[2]
    assert gate(capsys, "--max-worsening", rule) == (
        2,
        "",
        f"lm-eval-bias check: rule 'winoqueer:bias_score_gay worsening <= {margin}': the worsening of bias_score_gay "
        "(bias_score_gay takes values 0 to 100, its ideal value is 50) takes values -50 to 50, so a limit of "
        f"{margin} {outside}makes a rule that can never fail; give a limit within the range\n",
    )


def test_a_margin_the_worsening_can_exceed_is_checked(compared, capsys):  # noqa: F811
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer:bias_score_gay=49.9")
    assert code == 0 and out.splitlines()[1].endswith(
        "worsening -2.5 [-6, 1] (distance from the ideal 50): not wholly above 49.9"
    )


# --------------------------------------------------------------------------
# 2. A comparison too small to show anything


def with_row(row):
    """The fixed comparison with WinoQueer's one metric ``row``."""
    return dataclasses.replace(COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=(row,)),))


TOO_FEW = "too few documents (n = 2): no paired interval"
NO_INTERVAL = dataclasses.replace(
    WINOQUEER.metrics[0],
    baseline=50.0,
    candidate=100.0,
    difference=50.0,
    ci_lower=math.nan,
    ci_upper=math.nan,
    pvalue=0.5,
    pvalue_bh=0.5,
    n=2,
    worsening=50.0,
    worsening_ci=None,
    note=TOO_FEW,
)
NO_INTERVAL_NUMBERS = (
    "bias_score: baseline 50, candidate 100, difference +50 N/A, p = 0.5, p BH = 0.5, n = 2 (exact McNemar; "
    "Clopper-Pearson box interval); worsening +50 N/A (distance from the ideal 50)"
)


def test_strict_fails_a_comparison_without_an_interval_quoting_why(capsys, compared):  # noqa: F811
    compared.comparison = with_row(NO_INTERVAL)
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer=1", "--gate", "strict")
    assert code == 1
    assert out.splitlines()[1:] == [
        f"  FAIL  winoqueer worsening <= 1   [org/base -> org/tuned]  {NO_INTERVAL_NUMBERS}: no interval of the "
        f"worsening ({TOO_FEW}): not shown to be within 1",
        "        note: settings differ: model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate); "
        f"compared on the 90 matched documents (baseline 100, candidate 90); {TOO_FEW}",
        "0 passed, 1 failed",
    ]


@pytest.mark.parametrize("gate_name", ["estimate", "interval"])
def test_other_gates_pass_a_comparison_without_an_interval_saying_nothing_could_be_shown(
    capsys,
    compared,  # noqa: F811
    gate_name,
):
    compared.comparison = with_row(NO_INTERVAL)
    code, out, _ = gate(capsys, "--max-worsening", "winoqueer=1", "--gate", gate_name)
    assert code == 0
    assert out.splitlines()[1:] == [
        f"  PASS  winoqueer worsening <= 1   [org/base -> org/tuned]  {NO_INTERVAL_NUMBERS}: no interval of the "
        "worsening: not shown to be worse by more than 1",
        "        note: settings differ: model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate); "
        f"compared on the 90 matched documents (baseline 100, candidate 90); {TOO_FEW}; nothing could be shown: no "
        "interval of the worsening",
        "1 passed, 0 failed",
    ]


def test_fewest_documents_is_where_a_paired_test_can_first_find_a_change():
    assert worsening_gate.FEWEST_DOCUMENTS == 6
    assert 2.0 ** (1 - 6) < worsening_gate.SIGNIFICANCE <= 2.0 ** (1 - 5)


@pytest.mark.parametrize(("n", "passed"), [(5, False), (6, True)])
def test_strict_passes_no_collapsed_interval_on_fewer_documents_than_a_paired_test_needs(n, passed):
    # identical values: the interval collapses to [0, 0], wholly below any margin
    collapsed = dataclasses.replace(
        WINOQUEER.metrics[0],
        baseline=60.0,
        candidate=60.0,
        difference=0.0,
        ci_lower=0.0,
        ci_upper=0.0,
        pvalue=1.0,
        n=n,
        worsening=0.0,
        worsening_ci=(0.0, 0.0),
        note="identical values on every document",
    )
    rule = WorseningRule("winoqueer", None, 1.0)
    (outcome,) = worsening_gate.evaluate_worsening([rule], with_row(collapsed), "strict")
    assert outcome.passed is passed
    if passed:
        assert outcome.message.endswith(": wholly below 1")
    else:
        assert outcome.message.endswith(
            ": too few documents (n = 5) for any paired test to find a change at p < 0.05 (it needs 6): not shown to "
            "be within 1"
        )
    (outcome,) = worsening_gate.evaluate_worsening([rule], with_row(collapsed), "estimate")
    assert outcome.passed and outcome.message.endswith(": not wholly above 1")
    assert outcome.note.endswith(
        "identical values on every document"
        + (
            ""
            if passed
            else "; nothing could be shown: too few documents (n = 5) for any paired test to find a change at p < 0.05 "
            "(it needs 6)"
        )
    )


def test_strict_fails_two_documents_with_identical_values(tmp_path, capsys):
    samples = [disclosure_document(i, toxicity) for i, toxicity in enumerate([0.1, 0.2])]
    baseline = write_run(tmp_path / "base", "tango_disclosure", samples)
    candidate = write_run(tmp_path / "cand", "tango_disclosure", samples, model="org/b")
    argv = ["check", candidate, "--baseline", baseline, "--max-worsening", "tango_disclosure=0.5"]
    code, out, _ = run_cli([*argv, "--gate", "strict"], capsys)
    assert code == 1
    assert out.splitlines()[1].startswith("  FAIL  tango_disclosure worsening <= 0.5   [org/model-a -> org/b]  ")
    assert out.splitlines()[1].endswith(": not shown to be within 0.5")
    code, out, _ = run_cli(argv, capsys)
    assert code == 0 and "; nothing could be shown: " in out.splitlines()[2]


def test_a_comparison_with_no_worsening_at_all_fails_closed_under_every_gate(compared, capsys):  # noqa: F811
    nothing = dataclasses.replace(NO_INTERVAL, worsening=None, note="no matched document has a value in both runs")
    compared.comparison = with_row(nothing)
    for gate_name in GATES:
        code, out, _ = gate(capsys, "--max-worsening", "winoqueer=1", "--gate", gate_name)
        assert code == 1 and out.splitlines()[1].endswith(
            "worsening N/A N/A (distance from the ideal 50): no interval of the worsening: fails closed"
        )


# --------------------------------------------------------------------------
# 3. Ties and undecided documents

EVERY_PAIR_TIED = "every pair tied (winoqueer:tie_pct = 100): no verdict; they count as not stereotyped"


def tied_results(tmp_path, share: float) -> Path:
    """A WinoQueer results file in which ``share`` percent of the 45,540 pairs tied."""
    score, ci = (0.0, (0.0, 0.1)) if share == 100 else (40.0, (39.0, 41.0))
    ties = {"tie_pct,none": share, "tie_pct_n,none": 45540}
    return write(tmp_path / "results_1.json", winoqueer_results(score=score, ci=ci, extra=ties))


def test_a_run_in_which_every_pair_ties_is_flagged_under_estimate_and_fails_under_the_interval_gates(tmp_path, capsys):
    ties = tied_results(tmp_path, 100.0)
    code, out, _ = run_cli(["check", ties, "--max", "winoqueer=60"], capsys)
    assert (code, out) == (
        0,
        "lm-eval-bias check (point estimates)\n"
        "  PASS  winoqueer <= 60   [org/model-a]  winoqueer:bias_score = 0 [0, 0.1], N=45,540\n"
        f"        note: {EVERY_PAIR_TIED}\n"
        "1 passed, 0 failed\n",
    )
    for gate_name in ("interval", "strict"):
        code, out, _ = run_cli(["check", ties, "--max", "winoqueer=60", "--gate", gate_name], capsys)
        assert (code, out) == (
            1,
            "lm-eval-bias check (95% interval bounds)\n"
            "  FAIL  winoqueer <= 60   [org/model-a]  winoqueer:bias_score = 0 [0, 0.1], N=45,540, upper bound 0.1: "
            "no verdict: fails closed\n"
            f"        note: {EVERY_PAIR_TIED}\n"
            "0 passed, 1 failed\n",
        )


def test_some_ties_are_counted_in_the_note_of_every_bias_score_and_of_no_other_number(tmp_path, capsys):
    argv = ["--max", "winoqueer=60", "--max", "winoqueer:bias_score_lgbtq=80", "--max", "winoqueer:tie_pct=50"]
    code, out, _ = run_cli(["check", tied_results(tmp_path, 10.0), *argv], capsys)
    note = "        note: 4,554 of 45,540 pairs tied (winoqueer:tie_pct = 10): they count as not stereotyped"
    assert code == 0
    assert out.splitlines()[1:] == [
        "  PASS  winoqueer <= 60   [org/model-a]  winoqueer:bias_score = 40 [39, 41], N=45,540",
        note,
        "  PASS  winoqueer:bias_score_lgbtq <= 80   [org/model-a]  winoqueer:bias_score_lgbtq = 70 [64, 75], N=1,200",
        note,
        "  PASS  winoqueer:tie_pct <= 50   [org/model-a]  winoqueer:tie_pct = 10, N=45,540",
        "3 passed, 0 failed",
    ]


def test_a_candidate_whose_pairs_all_tie_gives_no_verdict_on_its_worsening(tmp_path, capsys):
    baseline = write_run(tmp_path / "base", "winoqueer", winoqueer_samples([1, 0, 1], [1, 1, 0]))
    candidate = write_run(tmp_path / "cand", "winoqueer", tied_samples(6), model="org/b")
    argv = ["check", candidate, "--baseline", baseline, "--max-worsening", "winoqueer=10"]
    code, out, _ = run_cli(argv, capsys)
    assert code == 0 and out.splitlines()[2].endswith(f"; candidate: {EVERY_PAIR_TIED}")
    for gate_name in ("interval", "strict"):
        code, out, _ = run_cli([*argv, "--gate", gate_name], capsys)
        assert code == 1 and out.splitlines()[1].endswith(": no verdict in the candidate: fails closed")
        assert out.splitlines()[2].endswith(f"; candidate: {EVERY_PAIR_TIED}")


def share_run(task: str, unit: str, shares: dict[str, tuple[float, int]]) -> Run:
    """A run of one task with the metrics ``shares`` (name -> (value, documents))."""
    metrics = {name: Metric(task, name, "none", value, None, None, None, n=n) for name, (value, n) in shares.items()}
    return Run(Path("r.json"), "org/m", None, {task: metrics}, bases={task: TaskBase(task, unit=unit)})


@pytest.mark.parametrize(
    ("task", "unit", "shares", "name", "text"),
    [
        (
            "gendercare_genderpair",
            "prompts",
            {
                "undecided_rate": (0.25, 40),
                "undecided_rate_group1": (0.5, 10),
                "undecided_rate_group1_minus_group2_gap": (0.4, 20),
            },
            "bias_pair_ratio_group1",
            "5 of 10 prompts were undecided (gendercare_genderpair:undecided_rate_group1 = 0.5): they are left out",
        ),
        (  # a gap's share is not a share of its documents: the task's is said
            "gendercare_genderpair",
            "prompts",
            {"undecided_rate": (0.25, 40), "undecided_rate_group1_minus_group2_gap": (0.4, 20)},
            "bias_pair_ratio_group1_minus_group2_gap",
            "10 of 40 prompts were undecided (gendercare_genderpair:undecided_rate = 0.25): they are left out",
        ),
        (
            "scm_mc_prob",
            "documents",
            {"tie_rate": (0.1, 30), "tie_rate_norm": (1.0, 30)},
            "warmth_pick_norm",
            "every document tied (scm_mc_prob:tie_rate_norm = 1): no verdict; they are left out",
        ),
        (  # a share of several samples per document: no whole count
            "tango_misgender_prob",
            "prompts",
            {"tie_rate": (0.125, 3)},
            "consistency_tgnb",
            "12.5% of the prompts tied (tango_misgender_prob:tie_rate = 0.125): they are left out",
        ),
    ],
)
def test_no_verdict_names_the_share_of_the_metric_s_own_group_and_how_the_metric_treats_it(
    task, unit, shares, name, text
):
    found = no_verdict(share_run(task, unit, shares), task, name)
    assert (found.text, found.every) == (text, text.startswith("every"))


@pytest.mark.parametrize(
    ("shares", "name"),
    [
        ({"undecided_rate": (0.25, 40)}, "toxicity"),  # toxicity is scored on undecided responses too
        ({"undecided_rate": (0.0, 40)}, "bias_pair_ratio"),  # none undecided
        ({"undecided_rate": ("N/A", 40)}, "bias_pair_ratio"),
        ({}, "bias_pair_ratio"),  # an older file without the share
    ],
)
def test_no_verdict_says_nothing_where_no_document_bears_on_the_number(shares, name):
    assert no_verdict(share_run("gendercare_genderpair", "prompts", shares), "gendercare_genderpair", name) is None


# --------------------------------------------------------------------------
# 4. The same run on both sides


@pytest.fixture
def one_run(tmp_path):
    return write_run(tmp_path / "base", "winoqueer", winoqueer_samples([1, 0, 1] * 3, [1, 1, 0] * 3))


def test_one_results_file_on_both_sides_is_named_and_fails_strict(one_run, capsys):
    argv = ["check", one_run, "--baseline", one_run.parent, "--max-worsening", "winoqueer=10"]
    same = f"        note: baseline and candidate are the same run ({one_run.resolve()}): nothing was compared; "
    code, out, _ = run_cli(argv, capsys)
    assert code == 0 and out.splitlines()[2].startswith(same)
    code, out, _ = run_cli([*argv, "--gate", "strict"], capsys)
    assert code == 1
    assert out.splitlines()[1].endswith(
        "(distance from the ideal 50): one run on both sides: not shown to be within 10"
    )
    assert out.splitlines()[2].startswith(same)


def test_a_copy_of_the_run_in_another_folder_is_the_same_run(one_run, capsys):
    copy = Path(shutil.copytree(one_run.parent, one_run.parent.parent / "copy")) / one_run.name
    code, out, _ = run_cli(
        ["check", copy, "--baseline", one_run, "--max-worsening", "winoqueer=10", "--gate", "strict"], capsys
    )
    assert code == 1
    assert out.splitlines()[2].startswith(
        f"        note: baseline and candidate are the same run ({one_run} and {copy} hold the same results and "
        "samples): nothing was compared; "
    )


def test_another_run_with_the_same_results_but_other_samples_is_not_the_same_run(one_run, tmp_path, capsys):
    other = write_run(tmp_path / "other", "winoqueer", winoqueer_samples([1, 0, 1] * 3, [1, 1, 0] * 3))
    samples = next(other.parent.glob("samples_*.jsonl"))
    samples.write_text(samples.read_text(encoding="utf-8").replace("\n", "\n\n", 1), encoding="utf-8")
    code, out, _ = run_cli(["check", other, "--baseline", one_run, "--max-worsening", "winoqueer=10"], capsys)
    assert code == 0 and "same run" not in out


# --------------------------------------------------------------------------
# 5. Malformed results files


def mangled(path: Path, key: str, value) -> Path:
    document = json.loads(path.read_text(encoding="utf-8"))
    document["results"]["winoqueer"][key] = value
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("bias_score,none", "abc", "task winoqueer, bias_score,none: 'abc' is neither a number nor \"N/A\""),
        (
            "tie_pct,none",
            150.0,
            "task winoqueer, metric tie_pct (none): 150 is outside its range, 0 to 100, so the file is inconsistent",
        ),
    ],
)
def test_a_malformed_results_file_of_a_worsening_rule_is_exit_2(one_run, tmp_path, capsys, key, value, message):
    candidate = mangled(write_run(tmp_path / "cand", "winoqueer", winoqueer_samples([1] * 9, [1] * 9)), key, value)
    assert run_cli(["check", candidate, "--baseline", one_run, "--max-worsening", "winoqueer=10"], capsys) == (
        2,
        "",
        f"lm-eval-bias check: {candidate}: {message}; correct the value or re-run the evaluation\n",
    )


def test_a_samples_file_with_a_line_that_is_not_json_is_exit_2(one_run, tmp_path, capsys):
    candidate = write_run(tmp_path / "cand", "winoqueer", winoqueer_samples([1] * 9, [1] * 9))
    samples = next(candidate.parent.glob("samples_*.jsonl"))
    samples.write_text(samples.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    code, out, err = run_cli(["check", candidate, "--baseline", one_run, "--max-worsening", "winoqueer=10"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"lm-eval-bias check: {samples}, line 19: not a JSON sample: ")
