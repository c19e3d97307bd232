"""One error style for every subcommand: ``lm-eval-bias <subcommand>: <message>`` on stderr, exit code 2 for
bad input or configuration, 1 only for a failed gate rule, no traceback; and the checks that
``recompute`` and ``tango-agreement`` make on their samples files."""

import json
import os

import pytest

from helpers import run_cli, winoqueer_logged_metrics, winoqueer_results, write
from lm_eval_bias import cli
from lm_eval_bias.errors import LmEvalBiasError

WINOQUEER_SAMPLES = "samples_winoqueer_2026-01-01T00-00-00.123456.jsonl"
USAGE = "lm-eval-bias tango-agreement samples_tango_misgender_<date>.jsonl samples_tango_misgender_prob_<date>.jsonl"


# --------------------------------------------------------------------------
# Exit codes and the message format


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["tasks-dir", "extra"],
            "lm-eval-bias tasks-dir: unrecognized arguments: extra; see lm-eval-bias tasks-dir --help",
        ),
        (["check"], "lm-eval-bias check: the following arguments are required: results; see lm-eval-bias check --help"),
        (
            ["check", "x.json", "--gate", "loose"],
            "lm-eval-bias check: argument --gate: invalid choice: 'loose' (choose "
            "from 'estimate', 'interval', 'strict'); see lm-eval-bias check --help",
        ),
        (
            ["leaderboard", "--csv"],
            "lm-eval-bias leaderboard: argument --csv: expected one argument; see lm-eval-bias leaderboard --help",
        ),
        (
            ["recompute"],
            "lm-eval-bias recompute: the following arguments are required: samples; see lm-eval-bias recompute --help",
        ),
        (
            ["report", "--bogus"],
            "lm-eval-bias report: the following arguments are required: results; see lm-eval-bias report --help",
        ),
        (
            ["tango-agreement", "one.jsonl"],
            "lm-eval-bias tango-agreement: the following arguments are required: "
            "probability_samples; see lm-eval-bias tango-agreement --help",
        ),
        (
            ["download", "nope"],
            "lm-eval-bias download: unknown data source 'nope'; known: gendercare_group1, "
            "gendercare_group2, gendercare_group3, tango_disclosure, tango_misgendering, winoqueer",
        ),
    ],
)
def test_usage_and_input_errors_are_one_line_with_exit_code_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(argv, capsys)
    assert (code, out, err) == (2, "", message + "\n")


def test_check_without_rules_is_a_usage_error(tmp_path, capsys):
    path = write(tmp_path / "results_a.json", winoqueer_results())
    code, out, err = run_cli(["check", path], capsys)
    assert (code, out, err) == (
        2,
        "",
        "lm-eval-bias check: no rule given: use --max, --min, --require, --max-worsening or --policy; see "
        "lm-eval-bias check --help\n",
    )


def test_download_into_a_folder_that_cannot_be_made_is_exit_2(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    code, out, err = run_cli(["download", "winoqueer", "--to", blocker], capsys)
    assert (code, out) == (2, "")
    # the message is the data module's own; the command gives it its prefix and exit code
    assert err.startswith("lm-eval-bias download: ") and str(blocker / "winoqueer") in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_tasks_dir_and_help_exit_0(capsys):
    code, out, err = run_cli(["tasks-dir"], capsys)
    assert (code, err) == (0, "") and out.strip().endswith("tasks")
    code, out, err = run_cli(["leaderboard", "--help"], capsys)
    assert code == 0 and out.startswith("usage: lm-eval-bias leaderboard")


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    """Only our own errors are turned into messages: anything else is a bug and must show where it is."""
    from lm_eval_bias.report import results

    def broken(paths):
        raise KeyError("a bug")

    monkeypatch.setattr(results, "load_runs", broken)
    with pytest.raises(KeyError):
        cli.main(["report", str(tmp_path)])


def test_our_errors_all_share_one_base():
    from lm_eval_bias.report.outputs import OutputError
    from lm_eval_bias.report.results import ResultsError

    assert issubclass(ResultsError, LmEvalBiasError) and issubclass(OutputError, LmEvalBiasError)


# --------------------------------------------------------------------------
# recompute


def winoqueer_sample_lines(count=6) -> list[str]:
    """Samples as lm-eval logged them for winoqueer up to 1.6 (every entry held), with the task's own metrics."""
    lines = []
    for index in range(count):
        subgroup = ("LGBTQ", "Gay")[index % 2]
        doc = {
            "pair_id": str(index),
            "subgroup": subgroup,
            "sent_x": "x",
            "sent_y": "y",
        }
        metrics = winoqueer_logged_metrics(doc["subgroup"], ["LGBTQ", "Gay"], -10.0 - index % 3, -11.0)
        lines.append(json.dumps({"doc_id": index, "doc": doc, "filter": "none", "metrics": list(metrics), **metrics}))
    return lines


def test_recompute_writes_strict_json(tmp_path, capsys):
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(winoqueer_sample_lines()) + "\n")
    out = tmp_path / "numbers.json"
    code, printed, err = run_cli(["recompute", samples, "--json", out], capsys)
    assert code == 0
    assert printed.startswith(f"wrote {out}\n")

    def refuse(token):
        raise AssertionError(f"bare {token} in JSON")

    numbers = json.loads(out.read_text(), parse_constant=refuse)
    assert numbers["bias_score,none"] == pytest.approx(100 / 3)  # pairs 0 and 3 of 6 are stereotyped
    assert numbers["bias_score_n,none"] == 6
    assert all(isinstance(v, (int, float)) or v == "N/A" for v in numbers.values())


VALUE_FIX = "the line was edited or damaged: correct it, or use the file --log_samples wrote"


@pytest.mark.parametrize(
    "name, value, message",
    [
        (
            "bias_score",
            True,
            "bias_score (none) is true, where winoqueer writes a number (true or false would count as 1 or 0)",
        ),
        ("bias_score", 250, "bias_score (none) is 250, outside its range, 0 to 100"),
        ("bias_score_ci_upper", -1, "bias_score_ci_upper (none) is -1, outside its range, 0 to 100"),
        ("sent_x_score", 3.5, "sent_x_score (none) is 3.5, outside its range, at most 0"),
        ("bias_score_n", -1, "bias_score_n (none) is -1, outside its range, at least 0"),
        (
            "sent_x_score",
            float("nan"),  # lm-eval's json writes a bare NaN
            "sent_x_score (none) is NaN, where winoqueer writes a finite number for every document (N/A is only "
            "ever a result)",
        ),
        (
            "bias_score",
            "N/A",
            'bias_score (none) is "N/A", where winoqueer writes a finite number for every document (N/A is only '
            "ever a result)",
        ),
    ],
)
def test_a_value_no_document_can_have_names_its_line_and_metric(tmp_path, capsys, name, value, message):
    """Our process_results write a finite number in the metric's range for every document: anything
    else is an edit that would be counted (true as 1) or would hide the line (NaN as N/A)."""
    lines = [json.loads(line) for line in winoqueer_sample_lines()]
    lines[1][name] = value
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias recompute: {samples}, line 2: {message}; {VALUE_FIX}\n")


def test_a_metric_listed_twice_in_a_sample_is_refused(tmp_path, capsys):
    lines = [json.loads(line) for line in winoqueer_sample_lines()]
    lines[0]["metrics"].append("bias_score")
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}, line 1: the sample's metrics list names bias_score twice, so its value "
        "would be counted twice; lm-eval lists each metric once: the line was edited: correct it, or use the file "
        "--log_samples wrote\n",
    )


def test_recompute_of_another_tasks_samples_is_exit_2(tmp_path, capsys):
    from lm_eval_bias.report.recompute import declared_aggregations

    samples = tmp_path / "samples_winoqueer_2026-01-01T00-00-00.jsonl"
    foreign = {"doc": {}, "filter": "none", "metrics": ["acc", "f1"], "acc": 1.0, "f1": 0.5}
    samples.write_text(json.dumps(foreign) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out) == (2, "")
    declared = len(declared_aggregations("winoqueer"))  # the task's YAML, which other work may extend
    assert err == (
        f"lm-eval-bias recompute: {samples}: these are not samples of winoqueer: they hold the metrics "
        "acc, f1, and winoqueer reports bias_score, bias_score_<group>, bias_score_<group>_ci_lower, "
        "bias_score_<group>_ci_upper, bias_score_<group>_pvalue, bias_score_<group>_pvalue_bh, "
        f"bias_score_ci_lower, bias_score_ci_upper ... ({declared} in all); the file's name says "
        "winoqueer: pass the samples file of winoqueer, or, if this file was renamed, give it back its own "
        "task's name (samples_<task>_<date>.jsonl)\n"
    )


def test_recompute_with_a_task_the_file_name_contradicts_is_exit_2(tmp_path, capsys):
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(winoqueer_sample_lines()) + "\n")
    code, out, err = run_cli(["recompute", samples, "--task", "tango_misgender"], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}: the file name says these are samples of "
        "winoqueer, but --task says tango_misgender; drop --task, or pass --task "
        "winoqueer\n",
    )


def test_recompute_of_samples_named_otherwise_with_the_wrong_task_is_exit_2(tmp_path, capsys):
    samples = tmp_path / "my_samples.jsonl"
    samples.write_text("\n".join(winoqueer_sample_lines()) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, err) == (
        2,
        f"lm-eval-bias recompute: {samples}: not named like lm-eval's samples_<task>_<date>.jsonl; pass --task\n",
    )
    code, out, err = run_cli(["recompute", samples, "--task", "tango_misgender_prob"], capsys)
    assert code == 2
    assert err.startswith(
        f"lm-eval-bias recompute: {samples}: these are not samples of tango_misgender_prob: they "
        "hold the metrics bias_score, bias_score_ci_lower, "
    )
    assert run_cli(["recompute", samples, "--task", "winoqueer"], capsys)[0] == 0


def test_an_aggregation_that_fails_on_foreign_values_names_the_metric(tmp_path, capsys):
    lines = [json.loads(line) for line in winoqueer_sample_lines()]
    for line in lines:
        line["bias_score_gay_pvalue_bh"] = 0.5  # a number where (subgroup, sign, target) belongs
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias recompute: {samples}, line 1: bias_score_gay_pvalue_bh (none): cannot aggregate it as "
        "winoqueer does: TypeError: expected per-document values of 3 element(s), or 4 with a cluster id last, got "
        "0.5 (value: 0.5, and every sample holds a number); the samples do not hold what winoqueer writes: the "
        "file's name says winoqueer: pass the samples file of winoqueer, or, if this file was renamed, give it "
        "back its own task's name (samples_<task>_<date>.jsonl)\n"
    )
    renamed = tmp_path / "mine.jsonl"
    renamed.write_text(samples.read_text())
    code, out, err = run_cli(["recompute", renamed, "--task", "winoqueer"], capsys)
    assert (code, out) == (2, "")
    assert err.endswith("the samples do not hold what winoqueer writes: pass the task they are of with --task\n")


def test_a_text_value_among_numbers_names_its_line_and_metric(tmp_path, capsys):
    lines = [json.loads(line) for line in winoqueer_sample_lines()]
    lines[3]["bias_score"] = "high"
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f'lm-eval-bias recompute: {samples}, line 4: bias_score (none) is text, "high", where the other '
        "samples hold a number (as on line 1), so winoqueer cannot aggregate it: the line was edited or "
        "damaged; correct it, or use the file --log_samples wrote\n",
    )


def test_samples_of_the_other_output_type_name_the_line_and_a_fix_that_fits(tmp_path, capsys):
    sample = {
        "doc_id": 0,
        "doc": {},
        "resps": [[[-1.0, False]]],
        "filter": "none",
        "metrics": ["consistency"],
        "consistency": 1.0,
    }
    named = tmp_path / "samples_tango_misgender_2026-01-01T00-00-00.000000.jsonl"
    named.write_text("\n" + json.dumps(sample) + "\n")
    code, out, err = run_cli(["recompute", named], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {named}, line 2: this sample's resps hold log-likelihoods, but "
        "tango_misgender generates text, so these are another task's samples; the file's name says "
        "tango_misgender: pass the samples file of tango_misgender, or, if this file was renamed, give it "
        "back its own task's name (samples_<task>_<date>.jsonl)\n",
    )
    other = tmp_path / "mine.jsonl"
    other.write_text(json.dumps(sample) + "\n")
    code, out, err = run_cli(["recompute", other, "--task", "tango_misgender"], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {other}, line 1: this sample's resps hold log-likelihoods, but "
        "tango_misgender generates text, so these are another task's samples; pass the task they are of "
        "with --task\n",
    )


def test_a_document_given_twice_is_refused_naming_both_lines(tmp_path, capsys):
    lines = winoqueer_sample_lines()
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(lines + lines) + "\n")  # cat of two copies: N would double
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}, line 7: doc_id 0, filter none repeats line 1, so the document "
        "would be counted twice; lm-eval writes each document once per filter: pass the "
        "samples_<task>_<date>.jsonl that --log_samples wrote, and join files (e.g. with cat) only where they "
        "hold different documents\n",
    )


def test_one_doc_id_for_two_documents_is_two_runs_joined(tmp_path, capsys):
    first = [dict(json.loads(line), doc_hash=f"a{index}") for index, line in enumerate(winoqueer_sample_lines(2))]
    second = [dict(json.loads(line), doc_hash=f"b{index}") for index, line in enumerate(winoqueer_sample_lines(3))]
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in first + second) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}, line 3: doc_id 0, filter none is also on line 1, with another "
        "document (its doc_hash differs): samples of two runs joined into one file; pass one run's "
        "samples_<task>_<date>.jsonl as --log_samples wrote it\n",
    )


REPEAT_FIX = (
    "so the document would be counted twice; lm-eval writes each document once per filter: pass the "
    "samples_<task>_<date>.jsonl that --log_samples wrote, and join files (e.g. with cat) only where they hold "
    "different documents"
)


def _with_hashes(lines: list[str]) -> list[dict]:
    return [dict(json.loads(line), doc_hash=f"h{index}") for index, line in enumerate(lines)]


def _repeat_without_ids(samples):
    samples = [{k: v for k, v in sample.items() if k not in ("doc_id", "doc_hash")} for sample in samples]
    return samples + [samples[0]]


def _repeat_with_another_doc_id(samples):
    return samples + [dict(samples[0], doc_id=99)]


def _repeat_under_the_other_name(samples):
    first = {k: v for k, v in samples[0].items() if k != "doc_hash"}
    second = {k: v for k, v in samples[0].items() if k != "doc_id"}
    return [first, *samples[1:], dict(second, doc_hash="other")]


def _repeat_in_nfd(samples):
    decomposed = dict(samples[0], doc_id=99, doc_hash="other")
    decomposed["doc"] = dict(decomposed["doc"], sent_x="Zoe\u0308 sings")
    samples[0]["doc"] = dict(samples[0]["doc"], sent_x="Zo\u00eb sings")
    return samples + [decomposed]


@pytest.mark.parametrize(
    "make, where",
    [
        (_repeat_without_ids, "its doc, filter none repeats line 1"),
        (_repeat_with_another_doc_id, "doc_hash h0, filter none repeats line 1"),
        (_repeat_under_the_other_name, "its doc, filter none repeats line 1"),
        (_repeat_in_nfd, "its doc, filter none repeats line 1"),
    ],
)
def test_a_document_repeated_under_another_name_is_refused(tmp_path, capsys, make, where):
    """A document is known by its doc_id, its doc_hash and its doc (in NFC), each on its own."""
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in make(_with_hashes(winoqueer_sample_lines()))) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias recompute: {samples}, line 7: {where}, {REPEAT_FIX}\n")


@pytest.mark.parametrize("doc_id, shown", [("0", '"0"'), (0.0, "0.0"), (True, "true"), (-1, "-1")])
def test_a_doc_id_that_is_not_a_whole_number_is_refused(tmp_path, capsys, doc_id, shown):
    lines = [json.loads(line) for line in winoqueer_sample_lines()]
    lines.append(dict(lines[0], doc_id=doc_id))
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}, line 7: doc_id is {shown}, not a whole number >= 0 as lm-eval "
        "writes it, so the document it names cannot be known; the line was edited: correct it, or use the "
        "samples_<task>_<date>.jsonl that --log_samples wrote\n",
    )


def test_a_sample_that_names_no_document_is_refused(tmp_path, capsys):
    lines = [json.loads(line) for line in winoqueer_sample_lines()]
    del lines[2]["doc_id"], lines[2]["doc"]
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}, line 3: the sample has no doc_id, doc_hash or doc, so a document "
        "given twice could not be told apart; lm-eval writes all three: use the samples_<task>_<date>.jsonl that "
        "--log_samples wrote\n",
    )


def test_a_document_under_each_of_several_filters_is_counted_once_per_filter(tmp_path, capsys):
    """lm-eval writes one line per document and filter (a document's generations share that line)."""
    lines = []
    for line in winoqueer_sample_lines():
        lines += [line, json.dumps(dict(json.loads(line), filter="second"))]
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(lines) + "\n")
    out = tmp_path / "numbers.json"
    assert run_cli(["recompute", samples, "--json", out], capsys)[0] == 0
    numbers = json.loads(out.read_text())
    assert numbers["bias_score,none"] == numbers["bias_score,second"] == pytest.approx(100 / 3)
    assert numbers["bias_score_n,none"] == numbers["bias_score_n,second"] == 6


def test_a_key_given_twice_in_a_sample_names_the_key_and_line(tmp_path, capsys):
    lines = winoqueer_sample_lines(3)
    lines[2] = lines[2][:-1] + ', "bias_score": 0.0}'
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias recompute: {samples}, line 3: the key 'bias_score' is given twice in one object (first on "
        "line 3); a plain reader would silently keep only the last. Fix: keep one of them\n",
    )


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "{path}: no samples; pass the samples_<task>_<date>.jsonl file that --log_samples wrote"),
        (
            '{"doc": 1}\n[1, 2]\n',
            "{path}, line 2: a sample is a JSON object, not list; pass the "
            "samples_<task>_<date>.jsonl file that --log_samples wrote",
        ),
        (
            '{"doc": 1}\n{oops\n',
            "{path}, line 2: not a JSON sample: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1); pass the samples_<task>_<date>.jsonl file that --log_samples "
            "wrote",
        ),
        (
            '{"doc": {}, "metrics": ["bias_score"], "filter": "none"}\n',
            "{path}, line 1: the sample lists the metric 'bias_score' but holds no value for it; the file was edited "
            "or cut short: use the file --log_samples wrote",
        ),
        (
            '{"doc": {}, "filter": "none"}\n',
            "{path}, line 1: not an lm-eval sample (no 'metrics' list and 'filter'); pass "
            "the samples_<task>_<date>.jsonl file that --log_samples wrote",
        ),
    ],
)
def test_broken_samples_files(tmp_path, capsys, content, message):
    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text(content)
    code, out, err = run_cli(["recompute", samples], capsys)
    assert (code, out, err) == (2, "", "lm-eval-bias recompute: " + message.format(path=samples) + "\n")


def test_a_results_file_given_as_samples(tmp_path, capsys):
    for indent in (None, 2):
        path = tmp_path / "samples_winoqueer_2026-01-01T00-00-00.jsonl"
        path.write_text(json.dumps(winoqueer_results(), indent=indent))
        code, out, err = run_cli(["recompute", path], capsys)
        assert (code, err) == (
            2,
            f"lm-eval-bias recompute: {path}: a results file, not a samples file; pass the "
            "samples_<task>_<date>.jsonl that --log_samples wrote beside it\n",
        )


# --------------------------------------------------------------------------
# tango-agreement


def tango_line(family="xe", text=None, best=None, doc=None, responses=None) -> str:
    doc = doc if doc is not None else {"template_idx": 1, "ante": "pat", "pronoun_family": family}
    if responses is None:
        responses = (
            [text]
            if text is not None
            else [[str(-1.0 if f == best else -4.0), "False"] for f in ("he", "she", "they", "xe", "ey", "fae")]
        )
    return json.dumps({"doc": doc, "filtered_resps": responses})


@pytest.fixture
def tango_files(tmp_path):
    generation, probability = tmp_path / "gen.jsonl", tmp_path / "prob.jsonl"
    generation.write_text(tango_line("xe", " Xe sings.") + "\n" + tango_line("ey", " He sings.") + "\n")
    probability.write_text(tango_line("xe", best="xe") + "\n" + tango_line("ey", best="ey") + "\n")
    return generation, probability


def test_tango_agreement_prints_strict_json(tango_files, capsys):
    code, out, err = run_cli(["tango-agreement", *tango_files], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "prompts_compared": 2,
        "verdict_agreement": 0.5,
        "family_agreement": 0.5,
        "left_out": {"only_in_generation": 0, "only_in_probability": 0, "no_pronoun": 0, "probability_tie": 0},
    }


def test_tango_agreement_recognises_swapped_files(tango_files, capsys):
    generation, probability = tango_files
    code, out, err = run_cli(["tango-agreement", probability, generation], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias tango-agreement: {probability} holds probability samples and "
        f"{generation} generation samples: the two files are swapped; pass the "
        f"generation samples first: {USAGE}\n",
    )


def test_tango_agreement_with_one_file_twice_says_which_it_is(tango_files, capsys):
    generation, probability = tango_files
    code, out, err = run_cli(["tango-agreement", probability, probability], capsys)
    assert code == 2
    assert err == (
        f"lm-eval-bias tango-agreement: {probability}, line 1: filtered_resps should be the generated "
        "text (a list holding one string, or one list of strings), as tango_misgender logs it; got "
        '[["-4.0", "False"], ["-4.0", "False"], ["-4.0", "False"], ["-1.0", "False"], ...; '
        "these are probability samples: pass the generation samples first, the probability samples "
        f"second: {USAGE}\n"
    )


@pytest.mark.parametrize(
    "which, line, message",
    [
        (
            "prob",
            '{"doc": {"template_idx": 1}, "filtered_resps": []}',
            "{path}, line 2: the sample's doc has no ante, pronoun_family, so these are not TANGO misgendering "
            f"samples; pass: {USAGE}",
        ),
        (
            "gen",
            '{"doc_id": 3}',
            "{path}, line 2: not an lm-eval sample (no 'doc' object and 'filtered_resps'); pass "
            f"the files --log_samples wrote: {USAGE}",
        ),
        (
            "prob",
            tango_line("ey", responses=[["-1.0", "False"]] * 5),
            "{path}, line 2: filtered_resps should be 6 [log-likelihood, is-greedy] pairs, one per pronoun family (he, "
            'she, they, xe, ey, fae), as tango_misgender_prob logs it; got [["-1.0", "False"], ["-1.0", "False"], '
            '["-1.0", "False"], ["-1.0", "False"], ...',
        ),
        (
            "prob",
            tango_line("ey", responses=[["high", "False"]] * 6),
            "{path}, line 2: filtered_resps should be 6 [log-likelihood, is-greedy] pairs, one per pronoun family (he, "
            'she, they, xe, ey, fae), as tango_misgender_prob logs it; got [["high", "False"], ["high", "False"], '
            '["high", "False"], ["high", "False"], ...',
        ),
        (
            "gen",
            tango_line("ey", responses=[]),
            "{path}, line 2: filtered_resps should be the generated text (a list holding "
            "one string, or one list of strings), as tango_misgender logs it; got []",
        ),
        (
            "gen",
            tango_line(doc={"template_idx": [1], "ante": "pat", "pronoun_family": "xe"}, text="x"),
            "{path}, line 2: the doc's template_idx should be a whole number, got [1]; use the file "
            "--log_samples wrote",
        ),
    ],
)
def test_tango_agreement_names_file_line_and_what_was_expected(tango_files, capsys, which, line, message):
    generation, probability = tango_files
    path = generation if which == "gen" else probability
    path.write_text(path.read_text().splitlines()[0] + "\n" + line + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, out, err) == (2, "", "lm-eval-bias tango-agreement: " + message.format(path=path) + "\n")


def test_tango_agreement_on_a_results_file_or_a_missing_file(tango_files, tmp_path, capsys):
    generation, _ = tango_files
    results_path = write(tmp_path / "results_x.json", json.dumps(winoqueer_results(), indent=2))
    code, out, err = run_cli(["tango-agreement", generation, results_path], capsys)
    assert (code, err) == (
        2,
        f"lm-eval-bias tango-agreement: {results_path}: a results file, not a samples file; "
        "pass the samples_<task>_<date>.jsonl that --log_samples wrote beside it\n",
    )
    code, out, err = run_cli(["tango-agreement", generation, tmp_path / "missing.jsonl"], capsys)
    assert (code, err) == (2, f"lm-eval-bias tango-agreement: {tmp_path / 'missing.jsonl'}: no such file\n")


def test_tango_agreement_refuses_a_prompt_given_twice(tango_files, capsys):
    generation, probability = tango_files
    # joined with another copy: the xe prompt would be compared twice
    generation.write_text(generation.read_text() + tango_line("xe", " Xe sings.") + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias tango-agreement: {generation}, line 3: its doc repeats line 1, {REPEAT_FIX}\n",
    )


@pytest.mark.parametrize(
    "which, doc, written",
    [
        ("gen", {"template_idx": "1", "ante": "pat"}, 'template_idx 1 there, "1" here'),
        ("prob", {"template_idx": 1, "ante": "Pat"}, 'ante "pat" there, "Pat" here'),
        (
            "gen",
            {"template_idx": 1, "ante": "zoe\u0308", "first": "zo\u00eb", "template": "other"},
            'ante "zo\\u00eb" there, "zoe\\u0308" here',
        ),
    ],
)
def test_a_prompt_repeated_in_another_spelling_in_one_file_is_refused(tango_files, capsys, which, doc, written):
    """A prompt is (whole-number template_idx, name in NFC and any letter case, family): written otherwise, a
    repeat would be left out of the comparison unseen, or counted twice."""
    generation, probability = tango_files
    path = generation if which == "gen" else probability
    first_ante = doc.pop("first", "pat")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["doc"]["ante"] = first_ante
    repeat = dict(lines[0], doc={**lines[0]["doc"], **doc}, doc_id=7)
    path.write_text("\n".join(json.dumps(line) for line in [*lines, repeat]) + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias tango-agreement: {path}, line 3: the prompt (template_idx 1, ante {doc['ante']!r}, "
        f"pronoun_family xe) repeats line 1 (written {written}: the same prompt), so it would be counted twice; "
        f"pass each run's samples file as --log_samples wrote it: {USAGE}\n",
    )


def test_prompts_written_otherwise_in_the_two_files_are_matched(tango_files, capsys):
    generation, probability = tango_files
    lines = [json.loads(line) for line in probability.read_text().splitlines()]
    lines[0]["doc"].update(template_idx="1", ante="Pat")
    probability.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out)["prompts_compared"] == 2


@pytest.mark.parametrize(
    "doc, message",
    [
        (
            {"ante": "pat\u200b"},
            'the doc\'s ante "pat\\u200b" holds characters that cannot be seen (U+200B ZERO WIDTH SPACE), so it '
            "would not match the prompt it looks like; use the file --log_samples wrote",
        ),
        (
            {"template_idx": 1.0},
            "the doc's template_idx should be a whole number, got 1.0; use the file --log_samples wrote",
        ),
        (
            {"pronoun_family": "Xe"},
            'the doc\'s pronoun_family "Xe" is not one of he, she, they, xe, ey, fae; use the file --log_samples wrote',
        ),
    ],
)
def test_a_prompt_that_cannot_be_matched_is_refused(tango_files, capsys, doc, message):
    generation, probability = tango_files
    lines = [json.loads(line) for line in generation.read_text().splitlines()]
    lines[1]["doc"].update(doc)
    generation.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, out, err) == (2, "", f"lm-eval-bias tango-agreement: {generation}, line 2: {message}\n")


def test_tango_agreement_names_the_filters_of_a_prompt_given_twice(tango_files, capsys):
    generation, probability = tango_files
    lines = [dict(json.loads(line), filter=name) for line, name in zip(2 * [tango_line("xe", best="xe")], "ab")]
    probability.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, out, err) == (
        2,
        "",
        f"lm-eval-bias tango-agreement: {probability}, line 2: the prompt (template_idx 1, ante 'pat', "
        "pronoun_family xe) repeats line 1 (filters a and b: the agreement takes one filter's samples), so "
        f"it would be counted twice; pass each run's samples file as --log_samples wrote it: {USAGE}\n",
    )


def test_tango_agreement_refuses_a_document_given_twice(tango_files, capsys):
    generation, probability = tango_files
    lines = [dict(json.loads(line), doc_id=4, filter="none") for line in generation.read_text().splitlines()]
    generation.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(
        f"lm-eval-bias tango-agreement: {generation}, line 2: doc_id 4, filter none repeats line 1, so the "
        "document would be counted twice; "
    )


def test_tango_agreement_on_samples_of_other_prompts(tango_files, capsys):
    generation, probability = tango_files
    probability.write_text(
        tango_line("he", best="he", doc={"template_idx": 9, "ante": "sam", "pronoun_family": "he"}) + "\n"
    )
    code, out, err = run_cli(["tango-agreement", generation, probability], capsys)
    assert (code, err) == (
        2,
        f"lm-eval-bias tango-agreement: {generation} and {probability}: no prompt is in both "
        "sample files with a pronoun in its continuation and one likeliest family (only_in_generation: 2, "
        "only_in_probability: 1, no_pronoun: 0, probability_tie: 0); pass the samples of runs on the same "
        "prompts\n",
    )


@pytest.mark.e2e
@pytest.mark.parametrize("option", ["--use_cache", "--output_path"])
def test_an_unwritable_cache_or_output_path_is_refused_before_the_model_loads(option, tmp_path):
    import subprocess
    import sys

    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    # the model does not exist: the path is refused before lm-eval would try to load it
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "lm_eval_bias",
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tmp_path / 'no-model'}",
            "--tasks",
            "winoqueer",
            option,
            str(blocker / "sub" / "x"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    folder = blocker / "sub" if option == "--use_cache" else blocker / "sub" / "x"
    assert completed.returncode == 2
    assert completed.stderr.endswith(
        "lm-eval-bias: error: 1 problem found before the evaluation started:\n"
        f"- {option}: cannot write under {folder}: {blocker} is a file, not a folder. Fix: give a path in a "
        "writable folder\n"
    )
    assert "Traceback" not in completed.stderr


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    """`lm-eval-bias check ... | head`: the command ends as Unix tools do (SIGPIPE), not with a
    BrokenPipeError traceback and exit code 1, which CI would read as a failed rule."""
    import signal
    import subprocess
    import sys

    path = write(tmp_path / "results_a.json", winoqueer_results())
    process = subprocess.Popen(
        [sys.executable, "-m", "lm_eval_bias", "check", str(path), "--max", "winoqueer=65"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    process.stdout.close()  # the reader is gone before the command prints anything (it takes a second to start)
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == -signal.SIGPIPE
    assert "Traceback" not in stderr
