"""Reading results, samples and policy files strictly: every inconsistency is one message with exit code 2.

The results files are built by hand here in lm-eval's layout with our companions
(``_ci_lower``/``_ci_upper``, ``_n``, ``_n_samples``), ``n-samples``,
``config.limit`` and the data provenance in ``configs[task].metadata`` by
:func:`helpers.winoqueer_results`.
"""

import json
import os

import pytest

from helpers import run_cli, winoqueer_results, write
from lm_eval_bias.report import results, threshold_gate
from lm_eval_bias.report.gate_rules import parse_rule

# --------------------------------------------------------------------------
# Values


def test_a_bare_nan_is_read_and_shown_as_na(tmp_path, capsys):
    path = write(
        tmp_path / "results_nan.json",
        json.dumps(winoqueer_results()).replace('"bias_score,none": 62.0', '"bias_score,none": NaN'),
    )
    (run,) = results.load_runs([path])
    assert run.metric("winoqueer").value == "N/A"
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert code == 1
    assert "FAIL  winoqueer <= 65   [org/model-a]  winoqueer:bias_score is N/A, N=45,540: not a number" in out


def test_numpy_numbers_written_as_text_are_numbers(tmp_path):
    # lm-eval writes a numpy float32 it cannot serialise as its text
    path = write(tmp_path / "results_text.json", winoqueer_results(extra={"tie_pct,none": "0.25"}))
    (run,) = results.load_runs([path])
    assert run.metric("winoqueer", "tie_pct").value == 0.25


@pytest.mark.parametrize(
    "key, value, shown",
    [
        ("bias_score,none", "high", "'high'"),
        ("bias_score,none", None, "None"),
        ("bias_score,none", True, "True"),
        ("bias_score_ci_upper,none", [64], "[64]"),
        ("bias_score_stderr,none", {"x": 1}, "{'x': 1}"),
    ],
)
def test_a_value_that_is_neither_a_number_nor_na_is_exit_2(tmp_path, capsys, key, value, shown):
    path = write(tmp_path / "results_bad.json", winoqueer_results(extra={key: value}))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f'lm-eval-bias check: {path}: task winoqueer, {key}: {shown} is neither a number nor "N/A"; '
        "correct the value or re-run the evaluation\n"
    )


def test_an_interval_whose_lower_end_is_above_its_upper_end_is_exit_2(tmp_path, capsys):
    path = write(tmp_path / "results_ci.json", winoqueer_results(ci=(66.0, 64.0)))
    message = (
        f"{path}: task winoqueer, metric bias_score (none): ci_lower 66 is above ci_upper 64, so the file "
        "is inconsistent; re-run the evaluation, or recompute the task from its samples file "
        "(lm-eval-bias recompute)"
    )
    for gate in ("interval", "estimate"):
        code, out, err = run_cli(["check", path, "--max", "winoqueer=65", "--gate", gate], capsys)
        assert (code, out, err) == (2, "", f"lm-eval-bias check: {message}\n")
    for command in (["report", path], ["leaderboard", path]):
        code, out, err = run_cli(command, capsys)
        assert (code, out, err) == (2, "", f"lm-eval-bias {command[0]}: {message}\n")


def test_an_estimate_outside_its_own_interval_is_exit_2(tmp_path, capsys):
    path = write(tmp_path / "results_est.json", winoqueer_results(score=70.0, ci=(20.0, 40.0)))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=60", "--gate", "interval"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias check: {path}: task winoqueer, metric bias_score (none): the estimate 70 lies "
        "outside its own interval [20, 40], so the file is inconsistent; re-run the evaluation, or "
        "recompute the task from its samples file (lm-eval-bias recompute)\n"
    )


def test_an_estimate_above_its_only_bound_is_exit_2(tmp_path, capsys):
    path = write(tmp_path / "results_half.json", winoqueer_results(score=70.0, ci=("N/A", 40.0)))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=60"], capsys)
    assert (code, out) == (2, "")
    assert "the estimate 70 lies outside its own interval [N/A, 40]" in err


@pytest.mark.parametrize(
    "n, rests_on",
    [
        (99_999, "99,999 documents, more than the 12 the task evaluated"),
        (0, "0 documents, yet it has a value"),
        ("N/A", "N/A documents, yet it has a value"),
    ],
)
def test_a_count_the_task_cannot_have_is_exit_2(tmp_path, capsys, n, rests_on):
    path = write(tmp_path / "results_n.json", winoqueer_results(n=n, effective=12, limit=12, lgbtq_n=5))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert (code, out) == (2, "")
    assert f"bias_score_n says the number rests on {rests_on}, so the file is inconsistent" in err


@pytest.mark.parametrize("command", [["leaderboard", "--csv"], ["report", "--markdown"]])
def test_an_output_over_an_input_or_a_link_is_refused(tmp_path, capsys, command):
    path = write(tmp_path / "results_a.json", winoqueer_results())
    before = path.read_text()
    code, out, err = run_cli([command[0], path, command[1], path], capsys)
    assert (code, out) == (2, "")
    assert "it is one of the files this command reads" in err and path.read_text() == before
    link = tmp_path / "link.csv"
    (tmp_path / "target.csv").write_text("old")
    link.symlink_to(tmp_path / "target.csv")
    code, out, err = run_cli([command[0], path, command[1], link], capsys)
    assert code == 2 and "it is a symbolic link, which writing would replace" in err
    assert link.is_symlink() and (tmp_path / "target.csv").read_text() == "old"


def test_a_range_of_group_means_may_lie_below_its_bootstrap_interval(tmp_path, capsys):
    # resampling inflates a range or spread, so its percentile interval can sit above the estimate
    path = write(
        tmp_path / "results_range.json",
        winoqueer_results(
            extra={
                "toxicity_gender_range,none": 0.01,
                "toxicity_gender_range_ci_lower,none": 0.02,
                "toxicity_gender_range_ci_upper,none": 0.09,
            }
        ),
    )
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize("date, shown", [("yesterday", "'yesterday'"), (True, "True"), ([1], "[1]")])
def test_a_date_that_is_not_a_number_is_exit_2_not_a_failed_rule(tmp_path, capsys, date, shown):
    path = write(tmp_path / "results_date.json", winoqueer_results(date=date))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias check: {path}: 'date' is {shown}, not a number (lm-eval writes the run's start "
        "time in seconds since 1970); correct it or remove it\n"
    )


def test_a_missing_date_is_fine_until_it_is_needed(tmp_path, capsys):
    document = winoqueer_results()
    del document["date"]
    path = write(tmp_path / "results_undated.json", document)
    assert run_cli(["check", path, "--max", "winoqueer=65"], capsys)[0] == 0
    assert run_cli(["report", path], capsys)[0] == 0
    # two equal runs of one model: only the date could tell which to use
    other = write(tmp_path / "results_dated.json", winoqueer_results())
    code, out, err = run_cli(["leaderboard", path, other], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias leaderboard: org/model-a, task winoqueer: cannot tell which of {path} and {other} "
        "to use: both are complete with the same number of pairs, and "
        f"{path} has no 'date' to tell the newer; add the run's 'date' (seconds since 1970) or pass "
        "only one of the files\n"
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: d.update({"n-samples": {"winoqueer": {"original": 10, "effective": 20}}}),
            "n-samples of task winoqueer is {'original': 10, 'effective': 20}; expected {\"original\": N, "
            '"effective": M} with whole numbers, M <= N; correct it or re-run the evaluation',
        ),
        (
            lambda d: d["config"].update({"limit": "20"}),
            "config.limit is '20', not a positive number or null; correct it or re-run the evaluation",
        ),
        (
            lambda d: d["results"]["winoqueer"].update({"bias_score_n,none": 2.5}),
            "task winoqueer, bias_score_n,none: 2.5 is not a count (a whole number >= 0); correct the value or re-run "
            "the evaluation",
        ),
        (
            lambda d: d["configs"]["winoqueer"]["metadata"].update({"lm_eval_bias_data": {"files": "x.csv"}}),
            "configs.winoqueer.metadata.lm_eval_bias_data.files is 'x.csv'; expected a list of files; correct it or "
            "re-run the evaluation",
        ),
        (
            lambda d: d["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"].update({"selection": ["Gay"]}),
            "configs.winoqueer.metadata.lm_eval_bias_data.selection is ['Gay']; expected an object {option: value}; "
            "correct it or re-run the evaluation",
        ),
    ],
)
def test_inconsistent_counts_limits_and_provenance_are_exit_2(tmp_path, capsys, change, message):
    document = winoqueer_results()
    change(document)
    path = write(tmp_path / "results_x.json", document)
    code, out, err = run_cli(["report", path], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias report: {path}: {message}\n")


def test_a_metric_ending_in_n_is_a_metric_unless_it_counts_another(tmp_path):
    path = write(tmp_path / "results_n.json", winoqueer_results(extra={"share_of_n,none": 0.5}))
    (run,) = results.load_runs([path])
    assert "share_of_n" in run.tasks["winoqueer"]
    assert "bias_score_n" not in run.tasks["winoqueer"] and "bias_score_lgbtq_n" not in run.tasks["winoqueer"]


# --------------------------------------------------------------------------
# Encodings and unreadable files


def test_a_results_file_with_a_non_utf8_byte_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "results_latin1.json"
    path.write_bytes(b'{"results": {"winoqueer":\n {"bias_score,none": 62.0, "alias": "Wino\xe9"}}}')
    for command in ("check", "report", "leaderboard"):
        argv = [command, path] + (["--max", "winoqueer=65"] if command == "check" else [])
        code, out, err = run_cli(argv, capsys)
        assert (code, out) == (2, "")
        assert err == (
            f"lm-eval-bias {command}: {path}, line 2: byte 0xe9 is not UTF-8; save the results file "
            "as UTF-8 (lm-eval writes UTF-8)\n"
        )


@pytest.mark.parametrize(
    "text, key, first, again",
    [
        # a second, looser gate and rules below the first: a plain reader would keep the last ones
        (
            "gate: interval\nrules:\n  - winoqueer <= 50\ngate: estimate\nrules:\n  - winoqueer <= 99\n",
            "gate",
            1,
            4,
        ),
        ("rules:\n  - winoqueer <= 50\nrules:\n  - winoqueer <= 99\n", "rules", 1, 3),
    ],
)
def test_a_policy_key_given_twice_is_exit_2_naming_both_lines(tmp_path, capsys, text, key, first, again):
    results_path = write(tmp_path / "results_a.json", winoqueer_results(score=62.0))
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    code, out, err = run_cli(["check", results_path, "--policy", policy], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias check: {policy}, line {again}: the key {key!r} is given twice in one object (first on "
        f"line {first}); a plain reader would silently keep only the last. Fix: keep one of them\n",
    )


@pytest.mark.parametrize(
    "text, message",
    [
        # a written "rules:" would replace the merged, stricter one
        (
            '<<: {rules: ["winoqueer:bias_score <= 50"], gate: interval}\nrules: ["winoqueer:bias_score <= 99"]\n',
            "line 1: a merge key ('<<') is not allowed here: a key written beside it would silently override the "
            "merged one. Fix: write the keys out instead of merging them",
        ),
        (
            '<<: {rules: ["winoqueer:bias_score <= 50"]}\n<<: {rules: ["winoqueer:bias_score <= 99"]}\n',
            "line 2: the key '<<' is given twice in one object (first on line 1); a plain reader would silently "
            "keep only the last. Fix: keep one of them",
        ),
    ],
)
def test_a_policy_with_merge_keys_is_exit_2(tmp_path, capsys, text, message):
    results_path = write(tmp_path / "results_a.json", winoqueer_results(score=62.0))
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    code, out, err = run_cli(["check", results_path, "--policy", policy], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias check: {policy}, {message}\n")


@pytest.mark.parametrize(
    "rule, message",
    [
        (
            "[winoqueer:bias_score <= 99]",
            "line 3: rules[1] is a list (['winoqueer:bias_score <= 99']), not a rule: YAML reads brackets and "
            "'key: value' as structure; write the rule as text, e.g. - \"my_task:bias_score <= 65\"",
        ),
        (
            "winoqueer:bias_score: <= 99",
            "line 3: rules[1] is a mapping ({'winoqueer:bias_score': '<= 99'}), not a rule: YAML reads brackets "
            "and 'key: value' as structure; write the rule as text, e.g. - \"my_task:bias_score <= 65\"",
        ),
        (
            "winoqueer:bias_score ~ 99",
            "line 3: rules[1]: cannot read the rule 'winoqueer:bias_score ~ 99'; write TASK[:METRIC] OP VALUE, "
            "e.g. my_task:bias_score<=65",
        ),
    ],
)
def test_a_policy_rule_that_is_not_one_names_file_line_and_place(tmp_path, capsys, rule, message):
    results_path = write(tmp_path / "results_a.json", winoqueer_results(score=62.0))
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"rules:\n  - winoqueer:bias_score <= 50\n  - {rule}\n")
    code, out, err = run_cli(["check", results_path, "--policy", policy], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias check: {policy}, {message}\n")


def test_a_policy_with_a_non_utf8_byte_names_file_and_line(tmp_path, capsys):
    results_path = write(tmp_path / "results_a.json", winoqueer_results())
    policy = tmp_path / "policy.yaml"
    policy.write_bytes(b"rules:\n  - winoqueer <= 65\n  # \xff\n")
    code, out, err = run_cli(["check", results_path, "--policy", policy], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias check: {policy}, line 3: byte 0xff is not UTF-8; save the policy as UTF-8 "
        "(lm-eval writes UTF-8)\n"
    )


def test_a_samples_file_with_a_non_utf8_byte_names_file_and_line(tmp_path, capsys):
    samples = tmp_path / "samples_winoqueer_2026-01-01T00-00-00.jsonl"
    samples.write_bytes(b'{"doc": {}}\n{"doc": "\x80"}\n')
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias recompute: {samples}, line 2: byte 0x80 is not UTF-8; save the samples file as "
        "UTF-8 (lm-eval writes UTF-8)\n"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_results_file(tmp_path, capsys):
    path = write(tmp_path / "results_a.json", winoqueer_results())
    path.chmod(0)
    code, out, err = run_cli(["report", path], capsys)
    assert (code, err) == (2, f"lm-eval-bias report: {path}: cannot read the results file: Permission denied\n")


def test_a_policy_that_is_missing(tmp_path, capsys):
    results_path = write(tmp_path / "results_a.json", winoqueer_results())
    code, out, err = run_cli(["check", results_path, "--policy", tmp_path / "nope.yaml"], capsys)
    assert (code, err) == (2, f"lm-eval-bias check: {tmp_path / 'nope.yaml'}: no such file\n")


def test_check_still_reads_rules_after_the_reader_became_strict(tmp_path):
    (run,) = results.load_runs([write(tmp_path / "results_a.json", winoqueer_results())])
    (outcome,) = threshold_gate.evaluate([parse_rule("winoqueer:bias_score_lgbtq<=80")], [run], "interval")
    assert outcome.passed and outcome.message == ("winoqueer:bias_score_lgbtq = 70 [64, 75], N=1,200, upper bound 75")


# --------------------------------------------------------------------------
# A metric under several filters


@pytest.mark.parametrize("other", ["strict", "n\u03bfne", "none\u200b"])
def test_our_metric_under_two_filters_is_exit_2_listing_them(tmp_path, capsys, other):
    # A second filter's number (a look-alike of "none" among them) is never taken for the run's.
    path = write(tmp_path / "results_two.json", winoqueer_results(extra={f"bias_score,{other}": 10.0}))
    shown = results.filter_text(other)
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert code == 2
    assert err.strip() == (
        f"lm-eval-bias check: {path}: task winoqueer, metric bias_score is given under 2 filters (none, {shown}), "
        "while the task writes each metric under one filter, so which number the run scored cannot be known; "
        "keep only the entries of the filter the run wrote (configs.winoqueer.filter_list) or re-run the evaluation"
    )
    assert shown in {"strict", "n\\u03bfne", "none\\u200b"}
    code, out, err = run_cli(["leaderboard", path], capsys)
    assert (code, out) == (2, "")
    assert f"metric bias_score is given under 2 filters (none, {shown})" in err


def test_another_tasks_metric_under_two_filters_must_be_named_with_its_filter(tmp_path, capsys):
    document = {
        "results": {"gsm8k": {"exact_match,strict-match": 0.2, "exact_match,flexible-extract": 0.6}},
        "config": {"model": "hf", "model_args": "pretrained=org/m"},
        "model_name": "org/m",
    }
    path = write(tmp_path / "results_gsm.json", document)
    (run,) = results.load_runs([path])
    with pytest.raises(results.ResultsError) as error:
        run.metric("gsm8k", "exact_match")
    assert str(error.value) == (
        f"{path}: task gsm8k has metric 'exact_match' under 2 filters (strict-match, flexible-extract); name the "
        "filter, e.g. gsm8k:exact_match,strict-match or gsm8k:exact_match,flexible-extract"
    )
    code, out, _ = run_cli(["check", path, "--min", "gsm8k:exact_match,strict-match=0.5"], capsys)
    assert code == 1
    assert "gsm8k:exact_match,strict-match = 0.2, N=unknown" in out


def test_a_filter_that_is_not_plain_ascii_is_shown_escaped(tmp_path, capsys):
    document = json.loads(json.dumps(winoqueer_results()).replace(",none", ",n\u03bfne"))
    path = write(tmp_path / "results_lookalike.json", document)
    code, out, _ = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert code == 0
    assert "winoqueer:bias_score,n\\u03bfne = 62 [60, 64]" in out


# --------------------------------------------------------------------------
# Rule limits


@pytest.mark.parametrize(
    "option, rule, message",
    [
        (
            "--max",
            "winoqueer=250",
            "bias_score takes values 0 to 100, so a limit of 250 is outside that range and "
            "makes a rule that can never fail",
        ),
        (
            "--min",
            "winoqueer:bias_score=-5",
            "bias_score takes values 0 to 100, so a limit of -5 is outside that "
            "range and makes a rule that can never fail",
        ),
        (
            "--min",
            "winoqueer:bias_score_lgbtq_pvalue_bh=-1",
            "bias_score_lgbtq_pvalue_bh takes values 0 to 1, so a "
            "limit of -1 is outside that range and makes a rule that can never fail",
        ),
        (
            "--max",
            "winoqueer=100",
            "bias_score takes values 0 to 100, so a limit of 100 makes a rule that can never fail",
        ),
        (
            "--min",
            "winoqueer=101",
            "bias_score takes values 0 to 100, so a limit of 101 is outside that range and "
            "makes a rule that can never pass",
        ),
    ],
)
def test_a_limit_outside_the_metrics_range_is_exit_2(tmp_path, capsys, option, rule, message):
    path = write(tmp_path / "results_a.json", winoqueer_results())
    code, out, err = run_cli(["check", path, option, rule], capsys)
    op = "<=" if option == "--max" else ">="
    task_metric, _, limit = rule.partition("=")
    assert code == 2
    assert err.strip() == (
        f"lm-eval-bias check: rule '{task_metric} {op} {float(limit):g}': {message}; give a limit within the range"
    )


def test_the_interval_gate_fails_closed_on_a_bound_that_is_na(tmp_path, capsys):
    document = winoqueer_results(extra={"bias_score_ci_lower,none": "N/A"})
    path = write(tmp_path / "results_na_bound.json", document)
    code, out, err = run_cli(["check", path, "--min", "winoqueer=5", "--gate", "interval"], capsys)
    assert (code, err) == (1, "")
    assert out.splitlines()[1] == (
        "  FAIL  winoqueer >= 5   [org/model-a]  winoqueer:bias_score is 62, N=45,540 (no interval, so the interval "
        "gate cannot decide): fails closed"
    )


def test_a_limit_outside_the_range_in_a_policy_names_its_file_and_line(tmp_path, capsys):
    path = write(tmp_path / "results_a.json", winoqueer_results())
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - winoqueer:bias_score <= 50\n  - winoqueer:bias_score <= 1_000\n")
    code, out, err = run_cli(["check", path, "--policy", policy], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias check: {policy}, line 3: rules[1]: rule 'winoqueer:bias_score <= 1000': bias_score takes "
        "values 0 to 100, so a limit of 1000 is outside that range and makes a rule that can never fail; give a "
        "limit within the range\n"
    )


@pytest.mark.parametrize(
    "key, token, shown",
    [
        ("bias_score_ci_lower,none", "-Infinity", "-inf"),
        ("bias_score,none", "Infinity", "inf"),
        ("bias_score_ci_upper,none", '"inf"', "'inf'"),
    ],
)
def test_an_infinite_number_of_our_task_is_exit_2_not_na(tmp_path, capsys, key, token, shown):
    # -Infinity read as N/A would leave the estimate gate passing without its interval.
    text = json.dumps(winoqueer_results())
    value = {"bias_score_ci_lower,none": "60.0", "bias_score,none": "62.0", "bias_score_ci_upper,none": "64.0"}[key]
    path = write(tmp_path / "results_inf.json", text.replace(f'"{key}": {value}', f'"{key}": {token}'))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert code == 2
    assert err.strip() == (
        f"lm-eval-bias check: {path}: task winoqueer, {key}: {shown} is infinite, which our tasks never write "
        '(a number they cannot compute is "N/A"), so the file is inconsistent; correct the value or re-run the '
        "evaluation"
    )
