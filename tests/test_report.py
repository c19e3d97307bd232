"""``lm-eval-bias report``: HTML and Markdown from real results files.

Results files come from lm-eval itself (``simple_evaluate`` with a scripted
model over our tasks, saved by lm-eval's own ``EvaluationTracker``), except
for SCM and community probes, whose files are written by hand in the same
layout from the metric names their modules produce.
"""

import csv
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest
from lm_eval.api.model import LM

from helpers import winoqueer_results, write
from lm_eval_bias import cli
from lm_eval_bias.report import figures, results
from lm_eval_bias.report import html as report_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

# --------------------------------------------------------------------------
# A deterministic model with varied answers


def checksum(*parts: str) -> int:
    return zlib.crc32("|".join(parts).encode())


class VariedLM(LM):
    """Answers that differ from prompt to prompt (by a checksum), so every subgroup gets its own number.

    ``lgbtq_preference`` makes text about an LGBTQ+ identity cheaper per
    character, so WinoQueer pairs lean stereotyped by that much.
    """

    PRONOUN_STARTS = (" He", " He", " He", " She", " She", " They", " They", " Xe", " Fae", " Nobody")
    IDENTITY_WORDS = ("lgbtq", "queer", "trans", "nonbinary", "bisexual", "pansexual", "lesbian", "asexual", "gay")

    def __init__(self, salt: str, lgbtq_preference: float):
        super().__init__()
        self.salt, self.lgbtq_preference = salt, lgbtq_preference

    def generate_until(self, requests, disable_tqdm=False):
        return [self._reply(request.args[0]) for request in requests]

    def _reply(self, prompt: str) -> str:
        pick = checksum(self.salt, prompt)
        pair = re.search(r"phrase pairs: \{\((.+?), (.+?)\)", prompt) or re.search(
            r"following: \{(.+?), (.+?)\}", prompt
        )
        if pair:  # GenderPair: use one of the two offered descriptors
            return f" Someone {{{pair.group(1 + pick % 2)}}} came by."
        start = self.PRONOUN_STARTS[pick % len(self.PRONOUN_STARTS)]
        return f"{start} said it was {['great', 'awful', 'fine', 'terrible'][pick % 4]}."

    def loglikelihood(self, requests, disable_tqdm=False):
        scores = []
        for request in requests:
            text = request.args[1].lower()
            per_char = 0.1 if any(w in text for w in self.IDENTITY_WORDS) else 0.1 + self.lgbtq_preference
            noise = (checksum(self.salt, text) % 100) / 100
            scores.append((-len(text) * per_char - noise, False))
        return scores

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


# --------------------------------------------------------------------------
# Results files


def data_dir(root: Path, shared: Path) -> Path:
    """A data directory with a 241-pair WinoQueer slice (8 subgroups, no Gay), TANGO, GenderPair and a
    16-prompt disclosure file."""
    from benchmark_data import write_tango_disclosure_jsonl

    rows = []
    with open(shared / "winoqueer" / "winoqueer_head_sample.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))
    with open(shared / "winoqueer" / "winoqueer_gender_subset.csv", encoding="utf-8-sig", newline="") as f:
        rows += list(csv.DictReader(f))[::80][:200]
    # The two samples share a pair; a file other than the official one may not repeat a pair.
    rows = list({(r["Gender_ID_x"], r["Gender_ID_y"], r["sent_x"], r["sent_y"]): r for r in rows}.values())
    (root / "winoqueer").mkdir(parents=True)
    with open(root / "winoqueer" / "winoqueer_final.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["", "Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y"])
        for index, row in enumerate(rows):
            writer.writerow([index, row["Gender_ID_x"], row["Gender_ID_y"], row["sent_x"], row["sent_y"]])
    (root / "tango").mkdir()
    shutil.copy(shared / "tango" / "misgendering_prompts.csv", root / "tango")
    write_tango_disclosure_jsonl(root / "tango" / "disclosure.jsonl")
    shutil.copytree(shared / "gendercare", root / "gendercare")
    return root


def evaluate_and_save(model: LM, name: str, tasks: list[str], task_manager, out: Path) -> Path:
    """Run lm-eval and save its results file exactly as the CLI does (EvaluationTracker)."""
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    output = lm_eval.simple_evaluate(model=model, tasks=tasks, task_manager=task_manager)
    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.log_experiment_args(
        model_source="hf",
        model_args=f"pretrained={name}",
        system_instruction=None,
        chat_template=None,
        fewshot_as_multiturn=False,
    )
    tracker.save_results_aggregated(results=output, samples=None)
    return next((out / name.replace("/", "__")).glob("results_*.json"))


def results_entry(metrics: dict[str, float], name: str) -> dict:
    """A task's entry in lm-eval's layout: ``<metric>,<filter>`` and its companions."""
    entry = {"name": name, "alias": name, "sample_len": 100}
    for metric, value in metrics.items():
        entry[f"{metric},none"] = value
        entry[f"{metric}_stderr,none"] = 0.01 if isinstance(value, float) else "N/A"
    return entry


def scm_and_community_results(path: Path) -> Path:
    """SCM ratings and community-probe scores by hand, named as the benchmarks name them."""
    from lm_eval_bias.benchmarks.community import prompts as community_prompts
    from lm_eval_bias.benchmarks.scm import constants as scm
    from lm_eval_bias.metric_keys import metric_range
    from test_community import metric_names

    scm_metrics = {}
    for index, group in enumerate(scm.GROUPS):
        for axis, centre in (("warmth", 2.2 + 0.3 * index), ("competence", 4.1 - 0.25 * index)):
            scm_metrics[f"{axis}_{group}"] = centre
            scm_metrics[f"{axis}_{group}_ci_lower"] = centre - 0.2
            scm_metrics[f"{axis}_{group}_ci_upper"] = centre + 0.25
        scm_metrics[f"warmth_minus_competence_{group}_gap"] = 0.1
    scm_metrics["warmth_lesbians"] = "N/A"  # a group whose samples all refused
    community_metrics = {}
    for index, name in enumerate(metric_names(community_prompts.paper_prompts())):
        if name.endswith(("_ci_lower", "_ci_upper", "_pvalue")):
            continue
        if name.endswith(("_n", "_n_samples")):  # how many prompts (and generations) a number rests on
            community_metrics[name] = 96 if name.endswith("_n") else 480
            continue
        value = ((index % 7) - 3) / 10 if name.startswith("sentiment") else (index % 5) / 50
        low, high = metric_range(name)  # as a real run gives them: a share or a range of means is never negative
        value = abs(value) if name.endswith("_range") else min(max(value, low), high)
        community_metrics[name] = value
        community_metrics[f"{name}_ci_lower"] = max(value - 0.02, low)
        community_metrics[f"{name}_ci_upper"] = min(value + 0.02, high)
    document = {
        "results": {
            "scm_score": results_entry(scm_metrics, "scm_score"),
            "community_probes": results_entry(community_metrics, "community_probes"),
        },
        "higher_is_better": {},
        "config": {"model": "hf", "model_args": "pretrained=org/model-c"},
        "model_name": "org/model-c",
        "date": 1763700000.0,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
    return path


@pytest.fixture(scope="module")
def result_files(tmp_path_factory, winoqueer_dir, tiny_detoxify):
    """Model A: every benchmark with the package's data; model B: WinoQueer and TANGO only; model C: by hand."""
    import lm_eval_bias

    root = tmp_path_factory.mktemp("report")
    data = data_dir(root / "data", winoqueer_dir.parent)
    checkpoint, config_dir = tiny_detoxify["original"]
    metadata = {
        "data_dir": str(data),
        "pairs_per_target": 1,
        "names_per_group": 1,
        "detoxify_checkpoint": str(checkpoint),
        "detoxify_config_dir": str(config_dir),
    }
    # lm-eval's own thousands of tasks are not indexed: that alone would take most of this module's time.
    tasks = lm_eval_bias.task_manager(include_defaults=False, metadata=metadata)
    model_a = evaluate_and_save(
        VariedLM("a", 0.02),
        "org/model-a",
        ["winoqueer", "tango_misgender", "gendercare_genderpair", "tango_disclosure"],
        tasks,
        root / "out",
    )
    model_b = evaluate_and_save(
        VariedLM("b", 0.0), "org/model-b", ["winoqueer", "tango_misgender"], tasks, root / "out"
    )
    return {"a": model_a, "b": model_b, "c": scm_and_community_results(root / "out" / "c" / "results_c.json")}


@pytest.fixture(scope="module")
def report(result_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("rendered")
    html_path, markdown_path = out / "report.html", out / "report.md"
    with pytest.raises(SystemExit) as exit_code:
        cli.main(
            ["report", *map(str, result_files.values()), "--html", str(html_path), "--markdown", str(markdown_path)]
        )
    assert exit_code.value.code == 0
    return {
        "html_path": html_path,
        "html": html_path.read_text(encoding="utf-8"),
        "markdown": markdown_path.read_text(encoding="utf-8"),
    }


def raw(path: Path) -> dict:
    return json.loads(path.read_text())["results"]


def svgs(page: str) -> list[ET.Element]:
    """Every figure of the page, parsed (the SVG we write is well-formed XML)."""
    return [ET.fromstring(s) for s in re.findall(r"<svg .*?</svg>", page, flags=re.S)]


def figure_titled(page: str, start: str) -> list[ET.Element]:
    return [svg for svg in svgs(page) if svg.get("aria-label", "").startswith(start)]


def tooltips(svg: ET.Element, kind: str = "bar") -> list[str]:
    return [g.find("title").text for g in svg.iter("g") if g.get("class") == kind]


def dashed_lines(svg: ET.Element) -> list[ET.Element]:
    """The reference lines."""
    return [line for line in svg.iter("line") if line.get("class") == "reference"]


def texts(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter("text")]


def row(*cells) -> str:
    return "| " + " | ".join(cells) + " |"


def fmt(value: float) -> str:
    return f"{value:.4g}"


# --------------------------------------------------------------------------
# Numbers


def test_markdown_tables_hold_the_results_numbers(result_files, report):
    markdown = report["markdown"]
    a, b = raw(result_files["a"]), raw(result_files["b"])
    for label, results_of in (("org/model-a", a), ("org/model-b", b)):
        winoqueer = results_of["winoqueer"]
        for name in ["bias_score"] + [
            f"bias_score_{g}"
            for g in ("lgbtq", "queer", "transgender", "nonbinary", "bisexual", "pansexual", "lesbian", "asexual")
        ]:
            expected = row(
                name,
                label,
                fmt(winoqueer[f"{name},none"]),
                f"[{fmt(winoqueer[f'{name}_ci_lower,none'])}, {fmt(winoqueer[f'{name}_ci_upper,none'])}]",
                f"{winoqueer[f'{name}_stderr,none']:.2g}",
            )
            assert expected in markdown  # followed by the p-value column
        assert "| bias_score_gay |" not in markdown  # no Gay pairs in the slice: absent, not 0
        cell = results_of["tango_misgender"]["consistency_she_feminine_name,none"]
        assert f"| consistency_she_feminine_name | {label} | {fmt(cell)} |" in markdown
    genderpair = a["gendercare_genderpair"]
    for group in (1, 2, 3):
        value = genderpair[f"bias_pair_ratio_group{group},scored"]
        assert f"| bias_pair_ratio_group{group} | {fmt(value)} | [" in markdown
    # GenderPair's undecided share, which readers are told to check beside the ratio
    undecided = genderpair["undecided_rate,scored"]
    assert f"| undecided_rate | {fmt(undecided)} | [" in markdown
    disclosure = a["tango_disclosure"]
    # 4 prompts of one identity: below the bootstrap-t's documents, the betting interval within 0 to 1
    interval = [fmt(disclosure[f"toxicity_genderqueer_ci_{end},scored"]) for end in ("lower", "upper")]
    assert (
        f"| toxicity_genderqueer | {fmt(disclosure['toxicity_genderqueer,scored'])} | [{interval[0]}, {interval[1]}] |"
        in markdown
    )
    # the p-value columns show WinoQueer's sign test, then BH-adjusted across subgroups
    pvalue, pvalue_bh = (a["winoqueer"][f"bias_score_lgbtq_{name},none"] for name in ("pvalue", "pvalue_bh"))
    assert next(line for line in markdown.splitlines() if line.startswith("| bias_score_lgbtq | org/model-a")).endswith(
        f"| {pvalue:.3g} | {pvalue_bh:.3g} |"
    )


def test_numbers_show_their_base_and_partial_runs_say_why(result_files, report):
    """N comes from lm-eval's ``_n`` companions; the 241-pair WinoQueer slice is not the official file."""
    document = json.loads(result_files["a"].read_text())
    winoqueer = document["results"]["winoqueer"]
    (data_file,) = document["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"]["files"]
    name = "bias_score_transgender"
    expected = row(
        name,
        "org/model-a",
        fmt(winoqueer[f"{name},none"]),
        f"[{fmt(winoqueer[f'{name}_ci_lower,none'])}, {fmt(winoqueer[f'{name}_ci_upper,none'])}]",
        f"{winoqueer[f'{name}_stderr,none']:.2g}",
        f"{winoqueer[f'{name}_n,none']:,}",
    )
    assert expected in report["markdown"]
    assert winoqueer[f"{name}_n,none"] < document["n-samples"]["winoqueer"]["effective"] == 241
    partial = f"non-official data file {data_file['path']} (241 rows; the official file has 45,540)"
    assert f"- org/model-a: **partial**: {partial}\n" in report["markdown"]
    assert f"<li>org/model-a: <span class=partial>partial</span>: {partial}</li>" in report["html"]
    assert "- org/model-a: complete, 2,880 prompts\n" in report["markdown"]  # TANGO's official file


def test_html_tables_match_markdown(report):
    """The HTML has the same numbers in its tables (spot check on a metric with every column)."""
    line = next(row for row in report["markdown"].splitlines() if row.startswith("| bias_score_queer | org/model-b"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    html_row = "".join(f"<td class=name>{c}</td>" if i < 2 else f"<td>{c}</td>" for i, c in enumerate(cells))
    assert html_row in report["html"]


# --------------------------------------------------------------------------
# The page


def test_html_is_one_self_contained_file(report):
    page = report["html"]
    assert sorted(p.name for p in report["html_path"].parent.iterdir()) == ["report.html", "report.md"]
    assert not re.search(r"https?:|ftp:|file:|//[a-z]", page.lower())
    for forbidden in ("<script", "<link", "<img", "<iframe", " src=", "url(", "@import"):
        assert forbidden not in page.lower(), forbidden
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert len(svgs(page)) >= 9  # WinoQueer, 2 x misgendering, GenderPair, 2 x disclosure, SCM, 3 x community
    # every figure has a caption
    assert page.count("<figure>") == page.count("<figcaption>") == len(svgs(page))


def test_winoqueer_figure_has_one_bar_per_subgroup_and_model_and_the_50_line(result_files, report):
    (svg,) = figure_titled(report["html"], "WinoQueer")
    bars = tooltips(svg)
    subgroups = [
        "all pairs",
        "LGBTQ",
        "Queer",
        "Transgender",
        "Nonbinary",
        "Bisexual",
        "Pansexual",
        "Lesbian",
        "Asexual",
    ]
    assert len(bars) == len(subgroups) * 2
    for model, path in (("org/model-a", result_files["a"]), ("org/model-b", result_files["b"])):
        winoqueer = raw(path)["winoqueer"]
        for subgroup in subgroups:
            name = "bias_score" if subgroup == "all pairs" else f"bias_score_{subgroup.lower()}"
            assert any(b.startswith(f"{model}, {subgroup}: {fmt(winoqueer[name + ',none'])} [") for b in bars)
    assert "Gay" not in texts(svg)
    (fifty,) = dashed_lines(svg)
    assert "50: no preference (ideal)" in texts(svg)
    # the 50 line lies halfway between the 0 and 100 gridlines
    grid = {t.text: float(t.get("y")) - 4 for t in svg.iter("text") if t.text in ("0", "100")}
    assert float(fifty.get("y1")) == pytest.approx((grid["0"] + grid["100"]) / 2, abs=0.2)
    # bar heights are to scale: height / plot height == value / 100
    plot_height = grid["0"] - grid["100"]
    for g in (g for g in svg.iter("g") if g.get("class") == "bar"):
        value = float(g.find("title").text.split(": ")[1].split(" ")[0])
        assert float(g.find("rect").get("height")) == pytest.approx(value / 100 * plot_height, abs=0.2)
    caption = re.search(r'aria-label="WinoQueer.*?<figcaption>(.*?)</figcaption>', report["html"], re.S).group(1)
    assert "Dashed line at 50: no preference between the two sentences, the ideal" in caption


def test_misgendering_figure_per_model_by_family_and_antecedent(report):
    figures_ = figure_titled(report["html"], "Pronoun consistency")
    assert len(figures_) == 2  # one per model
    for svg in figures_:
        labels = texts(svg)
        for family in ("he", "she", "they", "xe", "ey", "fae"):
            assert family in labels
        for antecedent in ("nongendered name", "feminine name", "masculine name", "distal", "all antecedents"):
            assert antecedent in labels
        assert len(tooltips(svg)) == 6 * 5
        assert "1: always consistent (ideal)" in labels and len(dashed_lines(svg)) == 1


def test_genderpair_and_disclosure_figures(result_files, report):
    (pair,) = figure_titled(report["html"], "GenderPair")
    assert len(tooltips(pair)) == 4 and "0.5: no preference" in texts(pair)
    (toxicity,) = figure_titled(report["html"], "Toxicity of continuations")
    bars = tooltips(toxicity)
    assert sorted(b.split(":")[0].split(", ")[1] for b in bars) == ["genderqueer", "man", "nonbinary", "woman"]
    # most toxic first
    values = [float(b.split(": ")[1].split(" ")[0]) for b in bars]
    assert values == sorted(values, reverse=True)
    assert figure_titled(report["html"], "Sentiment of continuations")


def test_scm_plane_and_community_bars(report):
    (plane,) = figure_titled(report["html"], "Stereotype content")
    points = tooltips(plane, "point")
    assert len(points) == 6  # 7 groups, lesbians' warmth is N/A
    assert any(t.startswith("women: warmth 2.2 [2, 2.45]; competence 4.1 [3.9, 4.35]") for t in points)
    assert len(tooltips(plane, "comparison")) == 7  # the survey's means
    assert "not plotted (no value): lesbians" in texts(plane)
    assert len(dashed_lines(plane)) == 2  # the two midpoints
    (sentiment,) = figure_titled(report["html"], "Sentiment by demographic")
    labels = texts(sentiment)
    assert "woman (gender)" in labels and "rich (class)" in labels and "0: neutral" in labels
    assert len(tooltips(sentiment)) == 15


def test_markdown_has_no_figures_but_says_where_they_are(report):
    assert "<svg" not in report["markdown"]
    assert "--html report.html" in report["markdown"]


# --------------------------------------------------------------------------
# Odd inputs


def test_na_values_unknown_tasks_and_absent_subgroups(tmp_path):
    document = {
        "results": {
            "winoqueer": results_entry(
                {
                    "bias_score": 61.5,
                    "bias_score_ci_lower": 58.0,
                    "bias_score_ci_upper": 65.0,
                    "bias_score_queer": "N/A",
                },
                "winoqueer",
            ),
            "tango_misgender": results_entry(
                {"consistency": "N/A", "consistency_xe": "N/A", "consistency_xe_distal": "N/A"}, "tango_misgender"
            ),
            "gendercare_genderpair": results_entry({"bias_pair_ratio_group3": "N/A"}, "gendercare_genderpair"),
            "tango_disclosure": results_entry({"toxicity_woman": "N/A", "sentiment": "N/A"}, "tango_disclosure"),
            "my_own_task": results_entry({"acc": 0.75, "acc_ci_lower": 0.7, "acc_ci_upper": 0.8}, "my_own_task"),
        },
        "model_name": "org/model-na",
    }
    path = tmp_path / "results_na.json"
    path.write_text(json.dumps(document))
    page = report_html.to_html(results.load_runs([path]))
    (winoqueer,) = figure_titled(page, "WinoQueer")
    assert "N/A" in texts(winoqueer) and len(tooltips(winoqueer)) == 1
    assert tooltips(winoqueer, "na") == ["org/model-na, Queer: N/A"]
    assert "<td class=name>acc</td><td>0.75</td><td>[0.7, 0.8]</td><td>0.01</td>" in page
    assert 'id="task-my-own-task"' in page
    markdown = report_html.to_markdown(results.load_runs([path]))
    assert "| bias_score_queer | N/A |  |  |" in markdown


def test_two_runs_of_one_model_on_one_task_are_told_apart(tmp_path):
    paths = []
    for index, score in enumerate((55.0, 70.0)):
        path = tmp_path / f"results_{index}.json"
        path.write_text(
            json.dumps(
                {"results": {"winoqueer": results_entry({"bias_score": score}, "winoqueer")}, "model_name": "org/same"}
            )
        )
        paths.append(path)
    (svg,) = figure_titled(report_html.to_html(results.load_runs(paths)), "WinoQueer")
    assert sorted(tooltips(svg)) == [
        "org/same (results_0.json), all pairs: 55",
        "org/same (results_1.json), all pairs: 70",
    ]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no such file or folder"),
        ("{not json", "not valid JSON"),
        ('{"config": {}}', "not an lm-eval results file"),
        ('{"results": {}}', "no task results in this file"),
        ('{"results": {"winoqueer": [1, 2]}}', "is not an object"),
    ],
)
def test_bad_results_files_exit_2_with_a_clear_error(tmp_path, capsys, content, message):
    path = tmp_path / "results_bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exit_code:
        cli.main(["report", str(path), "--html", str(tmp_path / "out.html")])
    assert exit_code.value.code == 2
    error = capsys.readouterr().err
    assert message in error and str(path) in error
    assert not (tmp_path / "out.html").exists()


def test_an_output_that_cannot_be_written_exits_2(result_files, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_code:
        cli.main(["report", str(result_files["c"]), "--html", str(tmp_path / "no" / "such" / "dir" / "r.html")])
    assert exit_code.value.code == 2
    assert "cannot write" in capsys.readouterr().err


def test_without_output_flags_markdown_goes_to_stdout(result_files, capsys):
    with pytest.raises(SystemExit) as exit_code:
        cli.main(["report", str(result_files["c"])])
    assert exit_code.value.code == 0
    assert capsys.readouterr().out.startswith("# lm-eval-bias report")


def test_ticks_and_ranges_are_round():
    assert figures.ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert figures.ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert figures.auto_range([0.013, 0.041], include=[0.0], floor=0.0, ceiling=1.0) == (0.0, 0.05)
    assert figures.auto_range([-0.3, 0.12], include=[0.0], floor=-1, ceiling=1) == (-0.3, 0.2)


def test_labels_are_escaped():
    svg = figures.bar_chart(
        ["<b>&"],
        [figures.Series("m<1>", "#000000", (figures.Estimate(0.5, 0.4, 0.6),))],
        value_range=(0, 1),
        value_label="x",
        title="a & b",
    )
    assert "<b>" not in svg and "&lt;b&gt;&amp;" in svg
    ET.fromstring(svg)


# --------------------------------------------------------------------------
# In a real browser


def chromium(*args: str, profile: Path, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def console_problems(log: str, page: Path) -> list[str]:
    """Console messages (our page has no script, so any is an error, CSP violations included) and any
    file the browser tried to load besides the page itself."""
    problems = [line for line in log.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    problems += [
        line
        for line in log.splitlines()
        if "FileURLLoader::Start" in line and not line.rstrip().endswith(page.as_uri())
    ]
    return problems


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs it; apt-get install chromium)")
def test_the_page_renders_in_headless_chromium_without_console_errors(report, tmp_path):
    page = report["html_path"]
    screenshot = tmp_path / "report.png"
    shot = chromium(
        f"--screenshot={screenshot}", "--window-size=1200,3000", page.as_uri(), profile=tmp_path / "profile"
    )
    assert screenshot.is_file(), shot.stderr[-3000:]
    png = screenshot.read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 50_000  # a blank page of this size is a few kB
    logged = chromium("--enable-logging=stderr", "--v=1", "--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    assert "WinoQueer bias score by subgroup" in logged.stdout  # the page was loaded and parsed
    assert console_problems(logged.stderr, page) == []
    # the check can fail: a page with a script error and a missing image is caught
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><p>x</p><img src="missing.png"><script>undefinedFunction()</script>')
    logged = chromium("--enable-logging=stderr", "--v=1", "--dump-dom", broken.as_uri(), profile=tmp_path / "profile")
    problems = console_problems(logged.stderr, broken)
    assert any("Uncaught" in p for p in problems) and any("missing.png" in p for p in problems)


def test_a_table_shows_the_design_effect_and_says_why_an_interval_is_missing(tmp_path):
    extra = {
        "bias_score_design_effect,none": 1.6234,
        "bias_score_lgbtq_ci_lower,none": "N/A",
        "bias_score_lgbtq_ci_upper,none": "N/A",
    }
    document = winoqueer_results(extra=extra)
    (run,) = results.load_runs([write(tmp_path / "results_a.json", document)])
    (section,) = report_html.build_sections([run])
    header, rows = report_html.table_rows(section, section.plotted)
    assert header == ["metric", "value", "95% CI", "stderr", "N", "design effect", "p BH"]
    assert rows == [
        ["bias_score", "62", "[60, 64]", "0.5", "45,540", "1.62", ""],
        ["bias_score_lgbtq", "70", "no interval (N = 1,200)", "2", "1,200", "", "0.012"],
    ]


def test_a_task_built_from_templates_says_which_intervals_treat_them_as_units(result_files, report):
    expected = (
        "Documents of one template are built alike, so their outcomes move together: every interval and p-value "
        "here treats each template as one unit, and the design effect is the variance of a mean over what it "
        "would be with independent documents (1: no more; 2: as if half the documents)."
    )
    assert f"*{expected}*" in report["markdown"]
    assert f'<p class="note">{expected}</p>' in report["html"]
