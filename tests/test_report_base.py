"""Every number shows its base (N), partial runs say so and why, and the leaderboard says which run it used."""

import csv
import io
import json
from pathlib import Path

import pytest

from helpers import OFFICIAL_WINOQUEER, run_cli, winoqueer_results, write
from lm_eval_bias.report import html as report_html
from lm_eval_bias.report import leaderboard, results

UNOFFICIAL = dict(OFFICIAL_WINOQUEER, path="/x/y.csv", sha256="cd" * 32, rows=300, official=False)
SHORT_OFFICIAL = dict(OFFICIAL_WINOQUEER, path="/x/x.csv", rows=42)
OLD, NEW = 1_763_000_000.0, 1_763_900_000.0  # 2025-11-13 02:13 and 2025-11-23 12:13 UTC


def base_of(**options) -> results.TaskBase:
    (run,) = results.load_runs([write_tmp(winoqueer_results(**options))])
    return run.base("winoqueer")


@pytest.fixture(autouse=True)
def _folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def write_tmp(document, name="results_x.json"):
    """Write into the test's folder (the current directory), so that paths in outputs are short."""
    return write(Path(name), document)


# --------------------------------------------------------------------------
# Partial runs: one rule


@pytest.mark.parametrize(
    "options, reasons",
    [
        ({}, ()),
        ({"limit": 20, "effective": 20}, ("--limit 20 (20 of 45,540 pairs)",)),
        ({"limit": 0.5, "effective": 22770}, ("--limit 0.5 (22,770 of 45,540 pairs)",)),
        ({"effective": 45000}, ("45,000 of 45,540 pairs evaluated",)),
        (
            {"files": [UNOFFICIAL], "original": 300},
            ("non-official data file /x/y.csv (300 rows; the official file has 45,540)",),
        ),
        ({"files": [dict(UNOFFICIAL, rows=45540)]}, ("non-official data file /x/y.csv",)),
        # recorded as the official file, yet with another row count: not the whole benchmark
        ({"files": [SHORT_OFFICIAL]}, ("data file /x/x.csv has 42 rows; the official file has 45,540",)),
        # the official row count is the benchmark's own, whatever the record says (or leaves out)
        (
            {"files": [dict(SHORT_OFFICIAL, official_rows=None)]},
            ("data file /x/x.csv has 42 rows; the official file has 45,540",),
        ),
        (
            {"files": [dict(SHORT_OFFICIAL, rows=100, official_rows=100)]},
            ("data file /x/x.csv has 100 rows; the official file has 45,540",),
        ),
        # recorded as official, with a sha256 that is not the official file's
        (
            {"files": [dict(OFFICIAL_WINOQUEER, sha256="cd" * 32)]},
            (
                "data file /data/winoqueer/winoqueer_final.csv is recorded as official but has another sha256 "
                "than the official file's",
            ),
        ),
        (
            {"files": [dict(OFFICIAL_WINOQUEER, sha256="cd" * 32, official_sha256="cd" * 32)]},
            (
                "data file /data/winoqueer/winoqueer_final.csv is recorded as official but has another sha256 "
                "than the official file's",
            ),
        ),
        ({"files": ()}, ("data recorded as official without its files, so the claim cannot be checked",)),
        # the official file, yet the task had fewer pairs than its rows and no option narrowed them
        (
            {"original": 1200},
            (
                "the task had 1,200 pairs; the official file /data/winoqueer/winoqueer_final.csv has 45,540, "
                "and no option narrowed them",
            ),
        ),
        ({"selection": {"subgroups": "Transgender"}}, ("subgroups=Transgender",)),
        ({"selection": {"subgroups": ["Gay", "Lesbian"], "seed": 3}}, ("subgroups=Gay,Lesbian, seed=3",)),
        (
            {"limit": 20, "effective": 20, "selection": {"subgroups": "Gay"}},
            ("--limit 20 (20 of 45,540 pairs)", "subgroups=Gay"),
        ),
    ],
)
def test_partial_reasons(options, reasons):
    base = base_of(**options)
    assert base.partial == reasons
    assert base.status == ("partial: " + "; ".join(reasons) if reasons else f"complete, {base.evaluated:,} pairs")


def test_prompts_built_in_code_are_not_partial_and_older_files_without_provenance_neither():
    document = winoqueer_results()
    document["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"] = {"official": None, "files": [], "selection": {}}
    assert not results.parse_run(write_tmp(document), document).base("winoqueer").is_partial
    del document["configs"]
    assert results.parse_run(write_tmp(document), document).base("winoqueer").status == "complete, 45,540 pairs"


# --------------------------------------------------------------------------
# N


def test_n_of_each_metric_with_samples_and_the_older_file_fallback():
    document = winoqueer_results(extra={"bias_score_n_samples,none": 227700})
    document["configs"]["winoqueer"]["repeats"] = 5
    (run,) = [results.parse_run(write_tmp(document), document)]
    assert run.metric("winoqueer").base == "45,540 (227,700 samples)"
    assert run.metric("winoqueer", "bias_score_lgbtq").base == "1,200"
    older = results.parse_run(write_tmp(winoqueer_results(counts=False)), winoqueer_results(counts=False))
    assert older.metric("winoqueer", "bias_score_lgbtq").base == "45,540 (task total)"
    bare = winoqueer_results(counts=False)
    del bare["n-samples"]
    assert results.parse_run(write_tmp(bare), bare).metric("winoqueer").base == "unknown"


def test_report_tables_show_n_and_sections_mark_partial_runs(capsys):
    complete = write_tmp(winoqueer_results(), "a/results_a.json")
    limited = write_tmp(
        winoqueer_results("org/model-b", n=20, lgbtq_n=3, limit=20, effective=20, date=NEW), "b/results_b.json"
    )
    code, out, err = run_cli(["report", complete, limited], capsys)
    assert (code, err) == (0, "")
    assert "| org/model-a | a/results_a.json | 2025-11-21 04:40 UTC | winoqueer |" in out
    assert "| org/model-b | b/results_b.json | 2025-11-23 12:13 UTC | winoqueer (partial) |" in out
    assert (
        "- org/model-a: complete, 45,540 pairs\n- org/model-b: **partial**: --limit 20 (20 of 45,540 pairs)\n"
    ) in out
    assert "| bias_score | org/model-a | 62 | [60, 64] | 0.5 | 45,540 |  |" in out
    assert "| bias_score | org/model-b | 62 | [60, 64] | 0.5 | 20 |  |" in out
    assert "| bias_score_lgbtq | org/model-b | 70 | [64, 75] | 2 | 3 | 0.012 |" in out
    page = report_html.to_html(results.load_runs([complete, limited]))
    assert (
        "<li>org/model-a: complete, 45,540 pairs</li>"
        "<li>org/model-b: <span class=partial>partial</span>: --limit 20 (20 of 45,540 pairs)</li>"
    ) in page
    assert "Partial run: org/model-b (--limit 20 (20 of 45,540 pairs)).</figcaption>" in page
    assert "<td>0.5</td><td>20</td><td></td></tr>" in page


# --------------------------------------------------------------------------
# Leaderboard: which run is used


@pytest.fixture
def older_larger_and_newer_limited():
    return [
        write_tmp(winoqueer_results(date=OLD), "runs/results_old.json"),
        write_tmp(
            winoqueer_results(score=50.0, ci=(40.0, 60.0), n=20, lgbtq_n=3, limit=20, effective=20, date=NEW),
            "runs/results_new.json",
        ),
    ]


def test_leaderboard_uses_the_older_complete_run_over_a_newer_limit_run_and_lists_both(
    older_larger_and_newer_limited, capsys
):
    code, out, err = run_cli(["leaderboard", *older_larger_and_newer_limited], capsys)
    assert code == 0
    assert out == (
        "| model | winoqueer:bias_score | winoqueer:bias_score_lgbtq |\n"
        "|---|---|---|\n"
        "| org/model-a | 62 [60, 64], N=45,540 | 70 [64, 75], N=1,200 |\n"
        "\n"
        "Values with 95% intervals in brackets; N: the documents each number rests on.\n"
        "\n"
        "### Runs\n"
        "\n"
        "| model | task | version | run | results file | date | status | why skipped |\n"
        "|---|---|---|---|---|---|---|---|\n"
        "| org/model-a | winoqueer | 1.0 | used | runs/results_old.json | 2025-11-13 02:13 UTC | complete, 45,540 "
        "pairs |  |\n"
        "| org/model-a | winoqueer | 1.0 | skipped | runs/results_new.json | 2025-11-23 12:13 UTC | partial: --limit "
        "20 (20 of 45,540 pairs) | partial; a complete run is used |\n"
    )
    assert err == (
        "lm-eval-bias leaderboard: note: skipped runs/results_new.json (partial: --limit 20 (20 of 45,540 "
        "pairs)) for org/model-a, winoqueer: partial; a complete run is used\n"
    )


def test_leaderboard_csv_and_html_name_the_run_used(older_larger_and_newer_limited, capsys):
    code, out, err = run_cli(
        ["leaderboard", *older_larger_and_newer_limited, "--csv", "board.csv", "--html", "board.html"], capsys
    )
    assert (code, out) == (0, "wrote board.csv\nwrote board.html\n")
    assert "skipped runs/results_new.json" in err
    rows = list(csv.DictReader(io.StringIO(open("board.csv", encoding="utf-8").read())))
    assert rows == [
        {
            "model": "org/model-a",
            "winoqueer:results_file": "runs/results_old.json",
            "winoqueer:version": "1.0",
            "winoqueer:documents": "45540",
            "winoqueer:partial": "",
            "winoqueer:bias_score": "62.0",
            "winoqueer:bias_score:ci_lower": "60.0",
            "winoqueer:bias_score:ci_upper": "64.0",
            "winoqueer:bias_score:stderr": "0.5",
            "winoqueer:bias_score:n": "45540",
            "winoqueer:bias_score:n_samples": "",
            "winoqueer:bias_score_lgbtq": "70.0",
            "winoqueer:bias_score_lgbtq:ci_lower": "64.0",
            "winoqueer:bias_score_lgbtq:ci_upper": "75.0",
            "winoqueer:bias_score_lgbtq:stderr": "2.0",
            "winoqueer:bias_score_lgbtq:n": "1200",
            "winoqueer:bias_score_lgbtq:n_samples": "",
        }
    ]
    page = open("board.html", encoding="utf-8").read()
    assert "<th>org/model-a</th><td>62 [60, 64], N=45,540</td>" in page
    assert (
        "<h2>Runs</h2><table><tr><th>model</th><th>task</th><th>version</th><th>run</th><th>results file</th>"
        "<th>date</th>"
        "<th>status</th><th>why skipped</th></tr>"
    ) in page
    assert (
        "<td>skipped</td><td>runs/results_new.json</td><td>2025-11-23 12:13 UTC</td><td>partial: --limit 20 "
        "(20 of 45,540 pairs)</td><td>partial; a complete run is used</td>"
    ) in page


def test_a_partial_run_is_used_when_it_is_the_only_one_and_says_so(capsys):
    only = write_tmp(winoqueer_results(counts=False, files=[UNOFFICIAL], original=300), "results_only.json")
    code, out, err = run_cli(["leaderboard", only], capsys)
    assert (code, err) == (0, "")
    assert (
        "| org/model-a | 62 [60, 64], N=300 (task total), partial | 70 [64, 75], N=300 (task total), partial |"
    ) in out
    assert (
        "| org/model-a | winoqueer | 1.0 | used | results_only.json | 2025-11-21 04:40 UTC | partial: non-official "
        "data file /x/y.csv (300 rows; the official file has 45,540) |  |"
    ) in out


def choices_of(paths):
    return [(c.run.path.name, c.used, c.reason) for c in leaderboard.choose_runs(results.load_runs(paths))]


def test_more_documents_win_among_partial_runs_then_the_newest_then_the_path():
    small = write_tmp(winoqueer_results(limit=20, effective=20, date=NEW), "results_small.json")
    large = write_tmp(winoqueer_results(limit=200, effective=200, date=OLD), "results_large.json")
    assert choices_of([small, large]) == [
        ("results_large.json", True, ""),
        ("results_small.json", False, "fewer pairs (20 vs 200)"),
    ]
    old = write_tmp(winoqueer_results(date=OLD), "results_old.json")
    new = write_tmp(winoqueer_results(date=NEW), "results_new.json")
    assert choices_of([new, old]) == [
        ("results_new.json", True, ""),
        ("results_old.json", False, "older (2025-11-13 02:13 UTC vs 2025-11-23 12:13 UTC)"),
    ]
    twin = write_tmp(winoqueer_results(date=NEW), "results_twin.json")
    expected = [
        ("results_new.json", True, ""),
        ("results_twin.json", False, "the same status, size and date as the run used, which comes first by file path"),
    ]
    assert choices_of([twin, new]) == choices_of([new, twin]) == expected


def test_each_task_of_a_model_is_chosen_on_its_own(capsys):
    both = winoqueer_results(date=OLD)
    both["results"]["tango_misgender"] = {"consistency,none": 0.4, "consistency_n,none": 2880}
    both["n-samples"]["tango_misgender"] = {"original": 2880, "effective": 2880}
    paths = [
        write_tmp(both, "results_both.json"),
        write_tmp(winoqueer_results(score=10.0, ci=(8.0, 12.0), date=NEW), "results_wq.json"),
    ]
    code, out, err = run_cli(["leaderboard", *paths], capsys)
    # tango_misgender from the only file that has it, WinoQueer from the newer file
    assert "| org/model-a | 0.4, N=2,880 | 10 [8, 12], N=45,540 | 70 [64, 75], N=1,200 |" in out
    assert "| org/model-a | tango_misgender |  | used | results_both.json |" in out
    assert "| org/model-a | winoqueer | 1.0 | used | results_wq.json |" in out
    assert (
        "| org/model-a | winoqueer | 1.0 | skipped | results_both.json | 2025-11-13 02:13 UTC | complete, 45,540 "
        "pairs | older (2025-11-13 02:13 UTC vs 2025-11-23 12:13 UTC) |"
    ) in out


def test_check_prints_n_and_notes_partial_runs_without_changing_the_outcome(older_larger_and_newer_limited, capsys):
    code, out, err = run_cli(["check", *older_larger_and_newer_limited, "--max", "winoqueer=65"], capsys)
    assert (code, err) == (0, "")
    assert out == (
        "lm-eval-bias check (point estimates)\n"
        "  PASS  winoqueer <= 65   [org/model-a]  winoqueer:bias_score = 62 [60, 64], N=45,540\n"
        "  PASS  winoqueer <= 65   [org/model-a]  winoqueer:bias_score = 50 [40, 60], N=20\n"
        "        note: partial run (runs/results_new.json): --limit 20 (20 of 45,540 pairs)\n"
        "2 passed, 0 failed\n"
    )
    code, out, err = run_cli(["check", older_larger_and_newer_limited[1], "--max", "winoqueer=45"], capsys)
    assert code == 1
    assert out.splitlines()[1:3] == [
        "  FAIL  winoqueer <= 45   [org/model-a]  winoqueer:bias_score = 50 [40, 60], N=20",
        "        note: partial run (runs/results_new.json): --limit 20 (20 of 45,540 pairs)",
    ]


def test_a_metric_column_no_run_has_is_an_error(older_larger_and_newer_limited, capsys):
    code, out, err = run_cli(
        ["leaderboard", *older_larger_and_newer_limited, "--metric", "winoqueer:bias_scor"], capsys
    )
    assert (code, out, err) == (
        2,
        "",
        "lm-eval-bias leaderboard: --metric winoqueer:bias_scor: no results file has "
        "it; similar: bias_score, bias_score_lgbtq\n",
    )
    code, out, err = run_cli(["leaderboard", *older_larger_and_newer_limited, "--metric", "scm_score:warmth"], capsys)
    assert err == (
        "lm-eval-bias leaderboard: --metric scm_score:warmth: no results file has it; no file has task "
        "'scm_score'; tasks: winoqueer\n"
    )
    code, out, err = run_cli(["leaderboard", *older_larger_and_newer_limited, "--metric", "winoqueer"], capsys)
    assert (code, err) == (
        2,
        "lm-eval-bias leaderboard: --metric winoqueer: write TASK:METRIC, e.g. winoqueer:bias_score\n",
    )


def test_the_json_of_the_builder_is_what_lm_eval_writes():
    # keys the tests rely on, so that a change to the builder cannot make them vacuous
    document = json.loads(json.dumps(winoqueer_results(limit=20, effective=20)))
    assert document["n-samples"] == {"winoqueer": {"original": 45540, "effective": 20}}
    assert document["config"]["limit"] == 20


def test_a_file_given_twice_is_one_run(older_larger_and_newer_limited, capsys):
    old, _ = older_larger_and_newer_limited
    assert [run.path for run in results.load_runs([old, "runs", f"./{old}"])] == [old, Path("runs/results_new.json")]


def test_a_file_recorded_as_official_with_another_row_count_is_partial_wherever_it_is_read(capsys):
    path = write_tmp(winoqueer_results(files=[SHORT_OFFICIAL]))
    reason = "data file /x/x.csv has 42 rows; the official file has 45,540"
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[2] == f"        note: partial run (results_x.json): {reason}"
    code, out, err = run_cli(["report", path], capsys)
    assert (code, err) == (0, "")
    assert f"- org/model-a: **partial**: {reason}\n" in out
    code, out, err = run_cli(["leaderboard", path], capsys)
    assert code == 0
    assert reason in out


# --------------------------------------------------------------------------
# What a results file may claim


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '{\n"results": {"winoqueer": {"bias_score,none": 62.0}},\n"date": 1,\n"results": {}\n}',
            "results_x.json, line 4: the key 'results' is given twice in one object (first on line 2)",
        ),
        (
            '{"results": {"winoqueer": {\n  "bias_score,none": 62.0,\n  "bias_score,none": 40.0\n}}}',
            "results_x.json, line 3: the key 'bias_score,none' is given twice in one object (first on line 2)",
        ),
    ],
)
def test_a_key_given_twice_is_refused_naming_the_key_and_both_lines(text, message, capsys):
    path = write_tmp(text)
    with pytest.raises(results.ResultsError) as error:
        results.load_runs([path])
    assert str(error.value) == message + "; a plain reader would silently keep only the last. Fix: keep one of them"
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias check: {error.value}\n")


def test_a_bare_nan_is_still_read_as_not_available():
    path = write_tmp('{"results": {"winoqueer": {"bias_score,none": NaN, "bias_score_n,none": 0}}}')
    (run,) = results.load_runs([path])
    assert run.metric("winoqueer").value == "N/A"


def tango_results(**metrics) -> dict:
    """A TANGO misgendering results document whose one entry holds ``metrics`` (name -> value)."""
    document = winoqueer_results()
    for part in ("results", "n-samples", "higher_is_better", "configs"):
        document[part]["tango_misgender"] = document[part].pop("winoqueer")
    document["configs"]["tango_misgender"]["task"] = "tango_misgender"
    document["results"]["tango_misgender"] = {f"{name},none": value for name, value in metrics.items()}
    return document


@pytest.mark.parametrize(
    "document, message",
    [
        (
            winoqueer_results(score=250.0, ci=(240.0, 260.0)),
            "metric bias_score (none): 250 is outside its range, 0 to 100",
        ),
        (winoqueer_results(score=-5.0, ci=(-6.0, -4.0)), "metric bias_score (none): -5 is outside its range, 0 to 100"),
        (
            winoqueer_results(extra={"bias_score_lgbtq_pvalue_bh,none": 7.5}),
            "metric bias_score_lgbtq_pvalue_bh (none): 7.5 is outside its range, 0 to 1",
        ),
        (winoqueer_results(n=-3), "metric bias_score_n (none): -3 is outside its range, at least 0"),
        (
            winoqueer_results(extra={"bias_score_stderr,none": -0.5}),
            "metric bias_score_stderr (none): -0.5 is outside its range, at least 0",
        ),
        (
            winoqueer_results(extra={"sent_x_score,none": 3.0}),
            "metric sent_x_score (none): 3 is outside its range, at most 0",
        ),
        (
            tango_results(no_pronoun_rate=1.2, no_pronoun_rate_ci_lower=1.1, no_pronoun_rate_ci_upper=1.3),
            "metric no_pronoun_rate (none): 1.2 is outside its range, 0 to 1",
        ),
        (
            tango_results(consistency=0.5, consistency_ci_lower=-0.1, consistency_ci_upper=0.6),
            "metric consistency_ci_lower (none): -0.1 is outside its range, 0 to 1",
        ),
    ],
)
def test_a_value_outside_its_metric_s_range_is_refused_naming_file_task_metric_value_and_range(document, message):
    task = next(iter(document["results"]))
    with pytest.raises(results.ResultsError) as error:
        results.load_runs([write_tmp(document)])
    assert str(error.value) == (
        f"results_x.json: task {task}, {message}, so the file is inconsistent; correct the value or re-run the "
        "evaluation"
    )


def test_check_refuses_a_percentage_of_250_rather_than_gating_on_it(capsys):
    path = write_tmp(winoqueer_results(score=250.0, ci=(240.0, 260.0)))
    code, out, err = run_cli(["check", path, "--min", "winoqueer=70"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("lm-eval-bias check: results_x.json: task winoqueer, metric bias_score (none): 250 is ")


def test_the_ends_of_each_range_and_numbers_of_tasks_not_ours_are_read():
    document = winoqueer_results(
        score=100.0,
        ci=(99.99, 100.0),
        lgbtq=(0.0, 0.0, 0.3),
        extra={"bias_score_lgbtq_pvalue_bh,none": 1.0, "sent_x_score,none": -41.5, "sent_x_score_n,none": 45540},
    )
    document["results"]["hellaswag"] = {"acc,none": 250.0, "acc_stderr,none": -1.0}
    (run,) = results.load_runs([write_tmp(document)])
    assert (run.metric("winoqueer").value, run.metric("winoqueer", "bias_score_lgbtq").value) == (100.0, 0.0)
    assert run.metric("winoqueer", "sent_x_score").value == -41.5
    assert run.metric("hellaswag", "acc").value == 250.0
    tango = tango_results(consistency=1.0, consistency_ci_lower=0.98, consistency_ci_upper=1.0, tie_rate="N/A")
    (run,) = results.load_runs([write_tmp(tango)])
    assert run.metric("tango_misgender").value == 1.0
