"""compare's outputs on a fixed, hand-made comparison: exact terminal and Markdown text, the HTML
page's forest plots, and every text from the runs escaped."""

import dataclasses
import json
import math
import re
import xml.etree.ElementTree as ET

import pytest

from compare_fixtures import COMPARISON, TANGO, WINOQUEER, metric
from helpers import run_cli, winoqueer_results, write
from lm_eval_bias.report import compare, compare_outputs, compare_text, forest_plot, verdicts
from lm_eval_bias.report.outputs import CONTENT_SECURITY_POLICY
from lm_eval_bias.report.values import ResultsError
from test_report import CHROMIUM, chromium, console_problems

EXPECTED_TEXT = """\
lm-eval-bias compare
baseline:  org/base (runs/base/results_1.json)
candidate: org/tuned (runs/tuned/results_1.json)
Differences are candidate minus baseline, in the metric's units, with paired 95% intervals.
worsening: how much further from the metric's ideal value the candidate is than the baseline, in the
metric's units, with its paired 95% interval. verdict: worse or better where that interval lies
wholly above or below 0, "no clear change" where it holds 0, "crossed the ideal" where the candidate
lies on the other side of the ideal value after a change whose interval excludes 0, and why where
there is no interval. p: the paired test's two-sided p-value; p BH: Benjamini-Hochberg adjusted
across all of the task's non-headline metrics (per-subgroup values, gaps, ranges, cells); the
headline metric keeps its p. n: the matched documents a metric rests on; independent unit: what the
paired test treats as independent, with its design effect where documents of one unit are
correlated. "N/A" marks a number that could not be computed.

winoqueer (version 1.0): documents: baseline 100, candidate 90, matched 90
  setting differs: model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate)
  metric            baseline  candidate  difference [95% CI]  worsening [95% CI]  verdict                 p      p BH   n  independent unit  test
  bias_score              60         66    +6 [4.125, 7.875]   +6 [4.125, 7.875]  worse            0.000123  0.000123  90  document          exact McNemar; Clopper-Pearson box interval
  bias_score_gay          55       52.5         -2.5 [-6, 1]        -2.5 [-6, 1]  no clear change      0.25       0.5  40  document          exact McNemar; Clopper-Pearson box interval
  bias_score_trans        45         45             0 [0, 0]            0 [0, 0]  no clear change         1         1  30  document          exact McNemar; Clopper-Pearson box interval
  note: bias_score_trans: no discordant pairs: p = 1

tango_misgender (version 2.0): documents: baseline 48, candidate 48, matched 48
  metric                        baseline  candidate        difference [95% CI]   worsening [95% CI]  verdict                        p   p BH   n  independent unit  test
  consistency                        0.8        0.9          +0.1 [0.05, 0.15]  -0.1 [-0.15, -0.05]  better                     0.002  0.002  48  document          exact McNemar; Clopper-Pearson box interval
  distal_minus_nongendered_gap       0.1        N/A  too few documents (n = 0)             no ideal  too few documents (n = 0)    N/A    N/A   0  document          paired permutation test (2000 random swaps); interval of its rejection size
  note: distal_minus_nongendered_gap: no distal antecedent matched

skipped (in one run only):
  scm_score: only in the baseline
"""  # noqa: E501

EXPECTED_MARKDOWN = """\
# lm-eval-bias comparison

- baseline: org/base (runs/base/results_1.json)
- candidate: org/tuned (runs/tuned/results_1.json)

Differences are candidate minus baseline, in the metric's units, with paired 95% intervals. worsening: how much \
further from the metric's ideal value the candidate is than the baseline, in the metric's units, with its paired \
95% interval. verdict: worse or better where that interval lies wholly above or below 0, "no clear change" where it \
holds 0, "crossed the ideal" where the candidate lies on the other side of the ideal value after a change whose \
interval excludes 0, and why where there is no interval. p: the paired test's two-sided p-value; p BH: \
Benjamini-Hochberg adjusted across all of the task's non-headline metrics (per-subgroup values, gaps, ranges, \
cells); the headline metric keeps its p. n: the matched documents a metric rests on; independent unit: what the \
paired test treats as independent, with its design effect where documents of one unit are correlated. "N/A" marks a \
number that could not be computed.

## winoqueer (version 1.0)

Documents: baseline 100, candidate 90, matched 90.

Settings that differ:

- model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate)

| metric | baseline | candidate | difference [95% CI] | worsening [95% CI] | verdict | p | p BH | n | independent \
unit | test |
|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|
| bias_score | 60 | 66 | +6 [4.125, 7.875] | +6 [4.125, 7.875] | worse | 0.000123 | 0.000123 | 90 | document | \
exact McNemar; Clopper-Pearson box interval |
| bias_score_gay | 55 | 52.5 | -2.5 [-6, 1] | -2.5 [-6, 1] | no clear change | 0.25 | 0.5 | 40 | document | exact \
McNemar; Clopper-Pearson box interval |
| bias_score_trans | 45 | 45 | 0 [0, 0] | 0 [0, 0] | no clear change | 1 | 1 | 30 | document | exact McNemar; \
Clopper-Pearson box interval |

Notes:

- bias_score_trans: no discordant pairs: p = 1

## tango_misgender (version 2.0)

Documents: baseline 48, candidate 48, matched 48.

| metric | baseline | candidate | difference [95% CI] | worsening [95% CI] | verdict | p | p BH | n | independent \
unit | test |
|---|---:|---:|---:|---:|---|---:|---:|---:|---|---|
| consistency | 0.8 | 0.9 | +0.1 [0.05, 0.15] | -0.1 [-0.15, -0.05] | better | 0.002 | 0.002 | 48 | document | \
exact McNemar; Clopper-Pearson box interval |
| distal_minus_nongendered_gap | 0.1 | N/A | too few documents (n = 0) | no ideal | too few documents (n = 0) | N/A \
| N/A | 0 | document | paired permutation test (2000 random swaps); interval of its rejection size |

Notes:

- distal_minus_nongendered_gap: no distal antecedent matched

## Skipped (in one run only)

- scm_score: only in the baseline
"""

HOSTILE = dataclasses.replace(
    COMPARISON,
    baseline="<script>alert(1)</script>",
    candidate="tuned\u202eevil",
    baseline_path="a|b](http://x)\nPASS",
    tasks=(
        dataclasses.replace(
            WINOQUEER,
            task='wq"><b>',
            setting_differences=("temperature: <i>0</i>",),
            metrics=(dataclasses.replace(WINOQUEER.metrics[1], subgroup="<img src=x>", note="a\u200bb <u>"),),
        ),
    ),
    skipped=("<svg onload=x>",),
)


def test_the_terminal_table_is_exact():
    assert compare_outputs.to_text(COMPARISON) == EXPECTED_TEXT


def test_the_markdown_is_exact():
    assert compare_outputs.to_markdown(COMPARISON) == EXPECTED_MARKDOWN


@pytest.mark.parametrize(
    ("value", "signed", "plain"),
    [
        (6.0, "+6", "6"),
        (-2.5, "-2.5", "-2.5"),
        (-0.0, "0", "0"),
        (1 / 3, "+0.3333", "0.3333"),
        (float("nan"), "N/A", "N/A"),
    ],
)
def test_numbers_as_text(value, signed, plain):
    assert (compare_text.signed_text(value), compare_text.number_text(value)) == (signed, plain)


def test_an_interval_of_a_swapped_zero_difference_reads_as_zero():
    assert compare_text.interval_text(-0.0, 0.0) == "[0, 0]"
    assert compare_text.interval_text(float("nan"), 1.0) == "N/A"


@pytest.mark.parametrize(
    ("metric", "side", "verdict", "words"),
    [
        (WINOQUEER.metrics[0], "worse →", "worse", "worse"),  # 60 -> 66, ideal 50: the worsening's interval is above 0
        (WINOQUEER.metrics[1], "worse →", "no clear change", "no clear change"),  # 55 -> 52.5: [-6, 1] holds 0
        (WINOQUEER.metrics[2], "← worse", "no clear change", "no clear change"),  # 45 -> 45, below 50
        (TANGO.metrics[0], "← worse", "better", "better"),  # consistency 0.8 -> 0.9, ideal 1
        (TANGO.metrics[1], "", "too few", "too few documents (n = 0)"),  # no difference, no document
        (dataclasses.replace(WINOQUEER.metrics[0], baseline=50.0), "worse either way", "worse", "worse"),
        (dataclasses.replace(WINOQUEER.metrics[0], ideal=None), "", "no ideal", "no ideal declared"),
    ],
)
def test_the_worse_side_and_what_the_worsening_interval_shows(metric, side, verdict, words):
    assert verdicts.worse_side(metric) == side
    assert (verdicts.verdict(metric), verdicts.verdict_text(metric)) == (verdict, words)


def test_the_page_has_one_forest_plot_per_task_with_a_point_per_finite_difference():
    page = compare_outputs.to_html(COMPARISON)
    assert page.startswith("<!DOCTYPE html>")
    assert f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">' in page
    assert "<script" not in page and "http:" not in page and "https:" not in page  # nothing to run, nothing fetched
    svgs = re.findall(r"<svg .*?</svg>", page)
    assert len(svgs) == 2
    for figure in svgs:
        ET.fromstring(figure)  # well-formed
    # winoqueer: worse (orange), no clear change, no clear change; tango: better (green), and N/A for the missing gap
    assert re.findall(r'<circle cx="[\d.]+" cy="[\d.]+" r="4.5" fill="(#\w+)"/>', svgs[0]) == [
        "#D55E00",
        "#0072B2",
        "#0072B2",
    ]
    assert re.findall(r'<circle cx="[\d.]+" cy="[\d.]+" r="4.5" fill="(#\w+)"/>', svgs[1]) == ["#009E73"]
    assert (
        '<g class="na"><title>distal_minus_nongendered_gap: baseline 0.1, candidate N/A, difference N/A, p = N/A, '
        "p BH = N/A, n = 0; unit: document; verdict: too few documents (n = 0)</title>"
    ) in svgs[1]
    assert re.findall(r">(worse →|← worse|worse either way)</text>", svgs[0]) == ["worse →", "worse →", "← worse"]
    assert re.findall(r">(worse|better|no clear change|too few documents \(n = \d+\))</text>", "".join(svgs)) == [
        "worse",
        "no clear change",
        "no clear change",
        "better",
        "too few documents (n = 0)",
    ]
    assert ">overall (bias_score) (n = 90)</text>" in svgs[0] and ">gay (n = 40)</text>" in svgs[0]
    assert ">0: no change</text>" in svgs[0]
    assert (
        "<title>bias_score: baseline 60, candidate 66, difference +6 [4.125, 7.875], p = 0.000123, "
        "p BH = 0.000123, n = 90; worsening +6 [4.125, 7.875] (distance from the ideal 50); unit: document; "
        "verdict: worse</title>"
    ) in svgs[0]
    assert "the metric&#x27;s ideal value (50, from the task&#x27;s metadata)" in page
    assert "<h2>Skipped (in one run only)</h2><ul><li>scm_score: only in the baseline</li></ul>" in page


def test_the_zero_line_is_drawn_at_zero_on_the_axis():
    figure = forest_plot.forest_plot(WINOQUEER)
    # axis -10..10 over x 20 + width of "overall (bias_score) (n = 90)" .. 520: 0 in the middle
    zero = re.search(
        r'<line x1="([\d.]+)" y1="[\d.]+" x2="\1" y2="[\d.]+" stroke="#444444" stroke-width="1.5" '
        r'stroke-dasharray="6 4" class="reference"/>',
        figure,
    )
    left = 20 + len("overall (bias_score) (n = 90)") * 12 * 0.6
    assert float(zero[1]) == pytest.approx((left + 520) / 2, abs=0.05)
    ticks = re.findall(r">(-?\d+)</text>", figure)
    assert ticks == ["-10", "-5", "0", "5", "10"]


def test_every_text_from_the_runs_is_escaped_in_every_format():
    page = compare_outputs.to_html(HOSTILE)
    for raw in ("<script>", "<b>", "<i>", "<img", "<svg onload", "<u>", "\u202e", "\u200b"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "tuned\\u202eevil" in page
    assert "<li>temperature: &lt;i&gt;0&lt;/i&gt;</li>" in page and "a\\u200bb &lt;u&gt;" in page
    assert 'id="compare-wq&quot;&gt;&lt;b&gt;"' in page
    for figure in re.findall(r"<svg .*?</svg>", page):
        ET.fromstring(figure)
    markdown = compare_outputs.to_markdown(HOSTILE)
    assert "- baseline: &lt;script&gt;alert(1)&lt;/script&gt; (a\\|b\\](http://x) PASS)" in markdown
    assert "- candidate: tuned\\\\u202eevil (runs/tuned/results_1.json)" in markdown
    text = compare_outputs.to_text(HOSTILE)
    assert "baseline:  <script>alert(1)</script> (a|b](http://x) PASS)" in text.splitlines()
    assert not any(line.startswith("PASS") for line in text.splitlines())
    assert "\u202e" not in text and "tuned\\u202eevil" in text


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs it; apt-get install chromium)")
def test_the_page_renders_in_headless_chromium_without_console_errors(tmp_path):
    page = tmp_path / "compare.html"
    page.write_text(compare_outputs.to_html(HOSTILE), encoding="utf-8")
    logged = chromium("--enable-logging=stderr", "--v=1", "--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    assert "Skipped (in one run only)" in logged.stdout  # the page was loaded and parsed
    assert console_problems(logged.stderr, page) == []


# --------------------------------------------------------------------------
# lm-eval-bias compare


@pytest.fixture
def compared(monkeypatch):
    """``compare_runs`` gives the fixed comparison, and records what it was asked."""
    calls = []

    def compare_runs(baseline, candidate, *, tasks=None):
        calls.append((str(baseline), str(candidate), tasks))
        return COMPARISON

    monkeypatch.setattr(compare, "compare_runs", compare_runs, raising=False)
    return calls


def test_the_command_prints_the_table_and_writes_each_file_asked_for(compared, tmp_path, capsys):
    markdown, page = tmp_path / "compare.md", tmp_path / "compare.html"
    code, out, err = run_cli(
        [
            "compare",
            "runs/base",
            "runs/tuned",
            "--tasks",
            "winoqueer,tango_misgender",
            "--markdown",
            markdown,
            "--html",
            page,
        ],
        capsys,
    )
    assert (code, err) == (0, "")
    assert out == f"wrote {markdown}\nwrote {page}\n" + EXPECTED_TEXT
    assert markdown.read_text(encoding="utf-8") == EXPECTED_MARKDOWN
    assert page.read_text(encoding="utf-8") == compare_outputs.to_html(COMPARISON)
    assert compared == [("runs/base", "runs/tuned", ["winoqueer", "tango_misgender"])]


def test_the_command_compares_every_task_by_default_and_takes_repeated_tasks(compared, capsys):
    assert run_cli(["compare", "a", "b"], capsys)[0] == 0
    assert run_cli(["compare", "a", "b", "--tasks", "winoqueer", "--tasks", "scm_score,"], capsys)[0] == 0
    assert compared == [("a", "b", None), ("a", "b", ["winoqueer", "scm_score"])]


def test_the_command_never_writes_over_a_file_it_reads(compared, tmp_path, capsys):
    results = write(tmp_path / "base" / "results_1.json", "{}")
    samples = write(tmp_path / "base" / "samples_winoqueer_1.jsonl", "")
    for source in (results, tmp_path / "base"):
        code, out, err = run_cli(["compare", source, tmp_path / "tuned", "--markdown", samples], capsys)
        assert (code, out) == (2, "")
        assert err == (
            f"lm-eval-bias compare: cannot write {samples}: it is one of the files this command reads; give another "
            "file name\n"
        )
    assert samples.read_text() == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["a"], "the following arguments are required: candidate"),
        (["a", "b", "--csv", "x"], "unrecognized arguments: --csv x"),
    ],
)
def test_the_command_reports_bad_arguments_with_exit_2(compared, capsys, argv, message):
    assert run_cli(["compare", *argv], capsys) == (
        2,
        "",
        f"lm-eval-bias compare: {message}; see lm-eval-bias compare --help\n",
    )
    assert compared == []


def test_a_comparison_refused_is_exit_2_with_its_message_and_nothing_written(monkeypatch, tmp_path, capsys):
    def refuse(baseline, candidate, *, tasks=None):
        raise ResultsError("task winoqueer: the baseline has version 1.0, the candidate 2.0; re-run one of them")

    monkeypatch.setattr(compare, "compare_runs", refuse, raising=False)
    page = tmp_path / "compare.html"
    assert run_cli(["compare", "a", "b", "--html", page], capsys) == (
        2,
        "",
        "lm-eval-bias compare: task winoqueer: the baseline has version 1.0, the candidate 2.0; re-run one of them\n",
    )
    assert not page.exists()


# --------------------------------------------------------------------------
# lm-eval-bias report BASELINE CANDIDATE --compare


def test_the_report_adds_the_paired_section_last(compared, tmp_path, capsys):
    baseline = write(tmp_path / "base" / "results_1.json", winoqueer_results("org/base"))
    candidate = write(tmp_path / "tuned" / "results_1.json", winoqueer_results("org/tuned", 66.0, (64.0, 68.0)))
    page, markdown = tmp_path / "report.html", tmp_path / "report.md"
    code, _, err = run_cli(["report", baseline, candidate, "--compare", "--html", page, "--markdown", markdown], capsys)
    assert (code, err) == (0, "")
    assert compared == [(str(baseline), str(candidate), None)]
    html = page.read_text(encoding="utf-8")
    title = "Paired comparison: candidate against baseline, document by document"
    assert f'<li><a href="#paired">{title}</a></li>' in html
    paired = html[html.index(f'<section id="paired"><h2>{title}</h2>') :]
    assert paired.endswith("</section></body></html>\n")
    assert paired.count("<svg ") == 2 and '<section id="compare-winoqueer"><h3>winoqueer (version 1.0)</h3>' in paired
    assert "<h3>Skipped (in one run only)</h3>" in paired
    assert html.index("WinoQueer") < html.index('<section id="paired">')  # the runs' own sections come first
    text = markdown.read_text(encoding="utf-8")
    assert text.endswith(f"\n## {title}\n\n" + EXPECTED_MARKDOWN.split("\n\n", 1)[1].replace("\n## ", "\n### "))


def test_the_report_compares_exactly_two_runs(compared, tmp_path, capsys):
    one = write(tmp_path / "results_1.json", winoqueer_results())
    assert run_cli(["report", one, "--compare"], capsys) == (
        2,
        "",
        "lm-eval-bias report: --compare needs two runs, BASELINE CANDIDATE; got 1; see lm-eval-bias report --help\n",
    )
    assert compared == []


def test_the_json_is_strict_with_the_documented_fields(compared, tmp_path, capsys):
    target = tmp_path / "compare.json"
    assert run_cli(["compare", "a", "b", "--json", target], capsys)[0] == 0
    text = target.read_text(encoding="utf-8")
    assert text == compare_outputs.to_json(COMPARISON) and text.endswith("}\n")
    document = json.loads(text, parse_constant=lambda name: pytest.fail(f"bare {name} in the JSON"))
    assert (document["baseline"], document["candidate"], document["skipped"]) == (
        "org/base",
        "org/tuned",
        ["scm_score: only in the baseline"],
    )
    winoqueer, tango = document["tasks"]
    assert {key: winoqueer[key] for key in ("task", "version", "n_baseline", "n_candidate", "n_matched")} == {
        "task": "winoqueer",
        "version": "1.0",
        "n_baseline": 100,
        "n_candidate": 90,
        "n_matched": 90,
    }
    headline = winoqueer["metrics"][0]
    assert {key: headline[key] for key in ("baseline", "candidate", "difference", "ci_lower", "ci_upper")} == {
        "baseline": 60.0,
        "candidate": 66.0,
        "difference": 6.0,
        "ci_lower": 4.125,
        "ci_upper": 7.875,
    }
    assert (headline["pvalue"], headline["pvalue_bh"], headline["n"], headline["test"]) == (
        0.000123,
        0.000123,
        90,
        "exact McNemar; Clopper-Pearson box interval",
    )
    gap = tango["metrics"][1]
    assert (gap["candidate"], gap["difference"], gap["ci_lower"], gap["pvalue"], gap["ideal"]) == (None,) * 5
    assert gap["null_reasons"]["difference"] == "no distal antecedent matched"


EXPECTED_JSON = """\
{
  "baseline": "org/base",
  "candidate": "org/tuned",
  "baseline_path": "runs/base/results_1.json",
  "candidate_path": "runs/tuned/results_1.json",
  "skipped": [],
  "tasks": [
    {
      "task": "winoqueer",
      "version": "1.0",
      "headline_metric": "bias_score",
      "n_baseline": 100,
      "n_candidate": 90,
      "n_matched": 90,
      "setting_differences": [
        "model_args: pretrained=org/base (baseline), pretrained=org/tuned (candidate)"
      ],
      "metrics": [
        {
          "task": "winoqueer",
          "metric": "bias_score",
          "subgroup": null,
          "baseline": 60.0,
          "candidate": 66.0,
          "difference": 6.0,
          "ci_lower": 4.125,
          "ci_upper": 7.875,
          "pvalue": 0.000123,
          "pvalue_bh": 0.000123,
          "n": 90,
          "test": "exact McNemar; Clopper-Pearson box interval",
          "ideal": 50.0,
          "worsening": 6.0,
          "worsening_ci": [
            4.125,
            7.875
          ],
          "cluster_unit": "document",
          "design_effect": null,
          "note": "",
          "null_reasons": {
            "design_effect": "each document is its own unit"
          }
        }
      ]
    }
  ]
}
"""


def test_the_json_text_is_exact():
    one = dataclasses.replace(
        COMPARISON, tasks=(dataclasses.replace(WINOQUEER, metrics=WINOQUEER.metrics[:1]),), skipped=()
    )
    assert compare_outputs.to_json(one) == EXPECTED_JSON


def test_runs_without_a_task_in_common_are_exit_2_with_the_reasons(monkeypatch, capsys):
    nothing = dataclasses.replace(
        COMPARISON, tasks=(), skipped=("scm_score: only in the baseline", "winoqueer: only in the candidate")
    )
    monkeypatch.setattr(compare, "compare_runs", lambda baseline, candidate, *, tasks=None: nothing, raising=False)
    assert run_cli(["compare", "a", "b"], capsys) == (
        2,
        "",
        "lm-eval-bias compare: no task can be compared: scm_score: only in the baseline; winoqueer: only in the "
        "candidate; give two runs of the same tasks\n",
    )


# --------------------------------------------------------------------------
# A page that reads without colour


def crossed(baseline, candidate, interval, pvalue, worsening_ci, **kw):
    """A WinoQueer subgroup metric (ideal 50) whose candidate may lie on the other side of 50."""
    return metric(
        "winoqueer",
        "bias_score_nonbinary",
        "nonbinary",
        baseline,
        candidate,
        interval,
        pvalue,
        min(1.0, 2 * pvalue),
        34,
        ideal=50.0,
        worsening_ci=worsening_ci,
        **kw,
    )


# 73.5 -> 35.3 about 50: a clear change (p = 0.0002), a distance 23.5 -> 14.7 whose interval holds 0
NONBINARY = crossed(73.5, 35.3, (-52.0, -22.1), 0.0002, (-23.5, 5.0))
# 80 -> 45: across 50, and the distance 30 -> 5 clearly shrank
SHRANK = crossed(80.0, 45.0, (-45.0, -25.0), 0.0001, (-30.0, -15.0))
# 45 -> 58: across 50, and the distance 5 -> 8 clearly grew
GREW = crossed(45.0, 58.0, (9.0, 17.0), 0.001, (1.0, 7.0))
# 52 -> 48: across 50, but the change's interval holds 0: not a crossing
NOISE = crossed(52.0, 48.0, (-9.0, 1.0), 0.3, (-4.0, 1.0))
TOO_FEW_DOCUMENTS = dataclasses.replace(
    crossed(60.0, 65.0, (math.nan, math.nan), math.nan, None),
    n=3,
    note="too few documents (n = 3): the paired test needs 5",
)
TOO_FEW_CLUSTERS = dataclasses.replace(
    crossed(60.0, 65.0, (math.nan, math.nan), math.nan, None),
    n=40,
    cluster_unit="template",
    note="matched on 40 documents; too few clusters (G = 2) for an interval",
)
CLUSTERED = dataclasses.replace(WINOQUEER.metrics[0], cluster_unit="template", design_effect=2.5)


@pytest.mark.parametrize(
    ("metric", "cells", "kind"),
    [
        (
            NONBINARY,
            [
                "-38.2 [-52, -22.1]",
                "-8.8 [-23.5, 5]",
                "crossed the ideal (50): 73.5 -> 35.3, p = 0.0002; distance to the ideal 23.5 -> 14.7, no clear "
                "change in it",
                "34",
                "document",
            ],
            "crossed",
        ),
        (
            SHRANK,
            [
                "-35 [-45, -25]",
                "-25 [-30, -15]",
                "crossed the ideal (50): 80 -> 45, p = 0.0001; distance to the ideal shrank, 30 -> 5",
                "34",
                "document",
            ],
            "better",
        ),
        (
            GREW,
            [
                "+13 [9, 17]",
                "+3 [1, 7]",
                "crossed the ideal (50): 45 -> 58, p = 0.001; distance to the ideal grew, 5 -> 8",
                "34",
                "document",
            ],
            "worse",
        ),
        (NOISE, ["-4 [-9, 1]", "0 [-4, 1]", "no clear change", "34", "document"], "no clear change"),
        (
            TOO_FEW_DOCUMENTS,
            [
                "+5, too few documents (n = 3)",
                "+5, too few documents (n = 3)",
                "too few documents (n = 3)",
                "3",
                "document",
            ],
            "too few",
        ),
        (
            TOO_FEW_CLUSTERS,
            [
                "+5, too few clusters (G = 2)",
                "+5, too few clusters (G = 2)",
                "too few clusters (G = 2)",
                "40",
                "template",
            ],
            "too few",
        ),
        (
            CLUSTERED,
            ["+6 [4.125, 7.875]", "+6 [4.125, 7.875]", "worse", "90", "template (design effect 2.5)"],
            "worse",
        ),
    ],
)
def test_each_row_says_its_verdict_worsening_n_and_unit_in_words(metric, cells, kind):
    row = compare_outputs.metric_row(metric)
    assert [row[3], row[4], row[5], row[8], row[9]] == cells
    assert verdicts.verdict(metric) == kind


def test_a_change_across_the_ideal_is_named_in_every_format():
    task = dataclasses.replace(WINOQUEER, metrics=(WINOQUEER.metrics[0], NONBINARY))
    comparison = dataclasses.replace(COMPARISON, tasks=(task,), skipped=())
    said = "crossed the ideal (50): 73.5 -> 35.3, p = 0.0002; distance to the ideal 23.5 -> 14.7, no clear change in it"
    assert said in compare_outputs.to_text(comparison)
    assert "| 34 | document |" in compare_outputs.to_markdown(comparison)
    assert f"| {said.replace('>', '&gt;')} |" in compare_outputs.to_markdown(comparison)
    page = compare_outputs.to_html(comparison)
    assert f"<td class=name>{said.replace('>', '&gt;')}</td>" in page
    (figure,) = re.findall(r"<svg .*?</svg>", page)
    row = re.search(r'<g class="difference"><title>bias_score_nonbinary.*?</g>', figure)[0]
    assert 'fill="#CC79A7"' in row and ">crossed the ideal (p = 0.0002)</text>" in row
    assert ">nonbinary (n = 34)</text>" in figure
    assert ">crossed the ideal: a clear change to its other side</text>" in figure  # the legend


def test_the_page_says_what_the_benjamini_hochberg_adjustment_covers():
    covered = (
        "Benjamini-Hochberg adjusted across all of the task's non-headline metrics (per-subgroup values, gaps, "
        "ranges, cells)"
    )
    assert covered in " ".join(compare_outputs.to_text(COMPARISON).split())
    assert covered in compare_outputs.to_markdown(COMPARISON)
    page = compare_outputs.to_html(COMPARISON)
    assert page.count(covered.replace("'", "&#x27;")) == 3  # the reading note and each figure's caption
    assert "across the subgroups" not in page


# The verdicts a point of each colour may carry, written beside it.
VERDICTS_OF_COLOUR = {
    forest_plot.WORSE_COLOUR: re.compile(r"worse|crossed the ideal, further \(p = [\d.e-]+\)"),
    forest_plot.BETTER_COLOUR: re.compile(r"better|crossed the ideal, closer \(p = [\d.e-]+\)"),
    forest_plot.UNCLEAR_COLOUR: re.compile(r"no clear change"),
    forest_plot.CROSSED_COLOUR: re.compile(r"crossed the ideal \(p = [\d.e-]+\)"),
    "#888888": re.compile(r"too few (documents \(n = \d+\)|clusters \(G = \d+\))|no ideal declared"),
}


def test_no_verdict_is_carried_by_colour_alone():
    metrics = (CLUSTERED, NONBINARY, SHRANK, GREW, NOISE, TOO_FEW_DOCUMENTS, TOO_FEW_CLUSTERS, *WINOQUEER.metrics[1:])
    task = dataclasses.replace(WINOQUEER, metrics=metrics)
    comparison = dataclasses.replace(COMPARISON, tasks=(task, TANGO, dataclasses.replace(TANGO, task="other")))
    page = compare_outputs.to_html(comparison)
    coloured = 0
    for figure in re.findall(r"<svg .*?</svg>", page):
        for group in ET.fromstring(figure).iter("g"):
            texts = [element.text for element in group.iter("text")]
            for point in group.iter("circle"):
                coloured += 1
                assert any(VERDICTS_OF_COLOUR[point.get("fill")].fullmatch(text) for text in texts), texts
    assert coloured == len(metrics) + 2  # every finite difference drawn, each with its words
    # the grey rows are those without an interval, with why in place of the interval
    assert "<td class=name>too few clusters (G = 2)</td>" in page
    for row in re.findall(r"<tbody>.*?</tbody>", page):
        for cells in re.findall(r"<tr>(.*?)</tr>", row):
            verdict = re.findall(r"<td[^>]*>(.*?)</td>", cells)[5] if cells.count("<td") == 11 else "run row"
            assert verdict  # every metric row has its verdict in words
