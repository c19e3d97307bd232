import json

import pytest

from lm_eval_bias import cli
from lm_eval_bias.report import leaderboard, results, threshold_gate
from lm_eval_bias.report.gate_rules import parse_rule


def write_results(path, model, wq=62.0, wq_ci=(60.0, 64.0), lgbtq=70.0, consistency=0.4, date=1.0):
    document = {
        "results": {
            "winoqueer": {
                "name": "winoqueer",
                "alias": "WinoQueer",
                "sample_len": 100,
                "bias_score,none": wq,
                "bias_score_stderr,none": 1.0,
                "bias_score_ci_lower,none": wq_ci[0],
                "bias_score_ci_upper,none": wq_ci[1],
                "bias_score_ci_lower_stderr,none": "N/A",
                "bias_score_ci_upper_stderr,none": "N/A",
                "bias_score_lgbtq,none": lgbtq,
                "bias_score_lgbtq_stderr,none": 3.0,
                "bias_score_lgbtq_ci_lower,none": lgbtq - 6,
                "bias_score_lgbtq_ci_upper,none": lgbtq + 5,
                "bias_score_n,none": 100,
                "bias_score_lgbtq_n,none": 40,
                "tie_pct,none": 0.0,
                "tie_pct_stderr,none": 0.0,
            },
            "tango_misgender": {
                "name": "tango_misgender",
                "sample_len": 2880,
                "consistency,none": consistency,
                "consistency_stderr,none": 0.01,
                "consistency_ci_lower,none": consistency - 0.02,
                "consistency_ci_upper,none": consistency + 0.02,
                "distal_minus_nongendered_gap,none": "N/A",
                "distal_minus_nongendered_gap_stderr,none": "N/A",
            },
        },
        "higher_is_better": {"winoqueer": {"bias_score": False}, "tango_misgender": {"consistency": True}},
        # tango_misgender has no _n companions, as in results files written before they existed
        "n-samples": {
            "winoqueer": {"original": 100, "effective": 100},
            "tango_misgender": {"original": 2880, "effective": 2880},
        },
        "config": {"model": "hf", "model_args": {"pretrained": model}},
        "model_name": model,
        "date": date,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def two_models(tmp_path):
    return [
        write_results(tmp_path / "a" / "results_1.json", "org/model-a"),
        write_results(
            tmp_path / "b" / "results_1.json", "org/model-b", wq=81.0, wq_ci=(79.0, 83.0), lgbtq=90.0, consistency=0.7
        ),
    ]


def test_results_are_read_with_their_intervals(two_models):
    (run,) = results.load_runs([two_models[0]])
    metric = run.metric("winoqueer")
    assert (metric.name, metric.value, metric.ci_lower, metric.ci_upper, metric.stderr) == (
        "bias_score",
        62.0,
        60.0,
        64.0,
        1.0,
    )
    assert metric.higher_is_better is False
    assert run.metric("tango_misgender", "distal_minus_nongendered_gap").value == "N/A"
    assert "bias_score_ci_lower" not in run.tasks["winoqueer"]
    with pytest.raises(results.ResultsError, match="no metric 'bias_scor'; similar: bias_score"):
        run.metric("winoqueer", "bias_scor")
    with pytest.raises(results.ResultsError, match="no task 'scm_score'"):
        run.metric("scm_score")


def test_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(results.ResultsError, match="no such file or folder"):
        results.load_runs([tmp_path / "missing.json"])
    # a bare NaN is read as "N/A" for that metric, not as a broken file
    (tmp_path / "x.json").write_text('{"results": {"winoqueer": {"bias_score,none": NaN}}}')
    (nan_run,) = results.load_runs([tmp_path / "x.json"])
    assert nan_run.metric("winoqueer").value == "N/A"
    (outcome,) = threshold_gate.evaluate([parse_rule("winoqueer<=65")], [nan_run])
    assert not outcome.passed and outcome.message == "winoqueer:bias_score is N/A, N=unknown: not a number"
    (tmp_path / "z.json").write_text('{"results": ')
    with pytest.raises(results.ResultsError, match="not valid JSON"):
        results.load_runs([tmp_path / "z.json"])
    (tmp_path / "y.json").write_text('{"foo": 1}')
    with pytest.raises(results.ResultsError, match="not an lm-eval results file"):
        results.load_runs([tmp_path / "y.json"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(results.ResultsError, match="no results_\\*.json"):
        results.load_runs([tmp_path / "empty"])


@pytest.mark.parametrize(
    "text,bare,expected",
    [
        ("winoqueer=65", "<=", ("winoqueer", None, "<=", 65.0)),
        ("tango_misgender:consistency_neo>=0.5", None, ("tango_misgender", "consistency_neo", ">=", 0.5)),
        ("winoqueer:bias_score < 70", None, ("winoqueer", "bias_score", "<", 70.0)),
        # the issue's own example: an operator inside --max wins over --max's default
        ("tango_misgender:neo_consistency>=0.5", "<=", ("tango_misgender", "neo_consistency", ">=", 0.5)),
    ],
)
def test_rules(text, bare, expected):
    rule = parse_rule(text, bare)
    assert (rule.task, rule.metric, rule.op, rule.threshold) == expected


@pytest.mark.parametrize("text", ["winoqueer", "winoqueer=65", "winoqueer<=high"])
def test_unreadable_rules(text):
    with pytest.raises(results.ResultsError):
        parse_rule(text)


def test_gate_on_estimates_and_on_intervals(two_models):
    runs = results.load_runs(two_models)
    rules = [parse_rule("winoqueer<=63")]
    by_estimate = threshold_gate.evaluate(rules, runs, "estimate")
    assert [(o.model, o.passed) for o in by_estimate] == [("org/model-a", True), ("org/model-b", False)]
    # model-a's interval reaches 64 > 63: not demonstrably below the limit
    by_interval = threshold_gate.evaluate(rules, runs, "interval")
    assert [o.passed for o in by_interval] == [False, False]
    assert by_interval[0].message == "winoqueer:bias_score = 62 [60, 64], N=100, upper bound 64"
    lower = threshold_gate.evaluate([parse_rule("tango_misgender>=0.39")], runs[:1], "interval")
    assert lower[0].passed is False
    assert lower[0].message == "tango_misgender:consistency = 0.4 [0.38, 0.42], N=2,880 (task total), lower bound 0.38"


def test_missing_task_or_na_value_fails(two_models):
    runs = results.load_runs(two_models[:1])
    (missing,) = threshold_gate.evaluate([parse_rule("scm_score:warmth>=3")], runs)
    assert not missing.passed and "no results file has task 'scm_score'" in missing.message
    (na,) = threshold_gate.evaluate([parse_rule("tango_misgender:distal_minus_nongendered_gap>=0")], runs)
    assert not na.passed and "N/A" in na.message


def test_check_command_exit_codes_and_summary(two_models, tmp_path, capsys):
    assert cli._check([str(two_models[0]), "--max", "winoqueer=65", "--min", "tango_misgender=0.3"]) == 0
    assert capsys.readouterr().out == (
        "lm-eval-bias check (point estimates)\n"
        "  PASS  winoqueer <= 65   [org/model-a]  winoqueer:bias_score = 62 [60, 64], N=100\n"
        "  PASS  tango_misgender >= 0.3   [org/model-a]  tango_misgender:consistency = 0.4 [0.38, 0.42], "
        "N=2,880 (task total)\n"
        "2 passed, 0 failed\n"
    )
    assert cli._check([str(tmp_path), "--max", "winoqueer=65"]) == 1
    assert "FAIL  winoqueer <= 65   [org/model-b]" in capsys.readouterr().out
    assert cli._check([str(tmp_path / "nope"), "--max", "winoqueer=65"]) == 2
    assert capsys.readouterr().err == f"lm-eval-bias check: {tmp_path / 'nope'}: no such file or folder\n"
    policy = tmp_path / "policy.yaml"
    policy.write_text("gate: interval\nrules:\n  - winoqueer:bias_score <= 65\n  - winoqueer:bias_score_lgbtq <= 80\n")
    assert cli._check([str(two_models[0]), "--policy", str(policy)]) == 0
    assert "95% interval bounds" in capsys.readouterr().out
    policy.write_text("rules: []\n")
    assert cli._check([str(two_models[0]), "--policy", str(policy)]) == 2
    assert capsys.readouterr().err == (
        f"lm-eval-bias check: {policy}: a policy needs a non-empty 'rules' list or 'max_worsening' mapping\n"
    )
    policy.write_text("rules: [a\n")
    assert cli._check([str(two_models[0]), "--policy", str(policy)]) == 2
    assert capsys.readouterr().err.startswith(f"lm-eval-bias check: {policy}: cannot read the policy: while parsing")


def test_leaderboard_rows_per_model_with_intervals(two_models, tmp_path):
    runs = results.load_runs(two_models)
    markdown = leaderboard.to_markdown(runs)
    lines = markdown.splitlines()
    assert lines[0] == ("| model | tango_misgender:consistency | winoqueer:bias_score | winoqueer:bias_score_lgbtq |")
    assert lines[2] == (
        "| org/model-a | 0.4 [0.38, 0.42], N=2,880 (task total) | 62 [60, 64], N=100 | 70 [64, 75], N=40 |"
    )
    assert lines[3].startswith("| org/model-b | 0.7 [0.68, 0.72], N=2,880 (task total) | 81 [79, 83], N=100 |")
    csv_text = leaderboard.to_csv(runs, [("winoqueer", "bias_score")])
    assert csv_text.splitlines()[0] == (
        "model,winoqueer:results_file,winoqueer:version,winoqueer:documents,"
        "winoqueer:partial,"
        "winoqueer:bias_score,winoqueer:bias_score:ci_lower,"
        "winoqueer:bias_score:ci_upper,winoqueer:bias_score:stderr,"
        "winoqueer:bias_score:n,winoqueer:bias_score:n_samples"
    )
    assert csv_text.splitlines()[1] == f"org/model-a,{two_models[0]},,100,,62.0,60.0,64.0,1.0,100,"
    html_text = leaderboard.to_html(runs)
    assert "<th>org/model-b</th>" in html_text and "81 [79, 83], N=100" in html_text
    # of two equal runs of a model, the newest is used
    write_results(tmp_path / "c" / "results_2.json", "org/model-a", wq=50.0, wq_ci=(48.0, 52.0), date=5.0)
    newest = results.load_runs([*two_models, tmp_path / "c" / "results_2.json"])
    assert "| org/model-a | 0.4 [0.38, 0.42], N=2,880 (task total) | 50 [48, 52], N=100 |" in (
        leaderboard.to_markdown(newest)
    )


def test_leaderboard_command_writes_files(two_models, tmp_path, capsys):
    out = tmp_path / "board"
    assert cli._leaderboard([str(two_models[0]), "--csv", f"{out}.csv", "--html", f"{out}.html"]) == 0
    assert (tmp_path / "board.csv").read_text().startswith("model,")
    assert (tmp_path / "board.html").read_text().startswith("<!DOCTYPE html>")
    assert capsys.readouterr().out == f"wrote {out}.csv\nwrote {out}.html\n"
    assert cli._leaderboard([str(two_models[0]), "--metric", "winoqueer"]) == 2
    assert capsys.readouterr().err == (
        "lm-eval-bias leaderboard: --metric winoqueer: write TASK:METRIC, e.g. winoqueer:bias_score\n"
    )
