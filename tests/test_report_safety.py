"""Every output is safe to open: CSV cells a spreadsheet would execute are neutralised, Markdown and HTML carry
no markup from the input, JSON is strict, and an output that cannot be written leaves nothing half-written."""

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest

from helpers import run_cli, winoqueer_results, write
from lm_eval_bias.report import html as report_html
from lm_eval_bias.report import leaderboard, results
from lm_eval_bias.report.outputs import csv_cell, markdown_cell, strict_json

HOSTILE = '=HYPERLINK("http://x")|<b>bold</b> & \\ new\nline'


@pytest.mark.parametrize(
    "value, cell",
    [
        ("=1+2", "'=1+2"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("org/model", "org/model"),
        ("N/A", "N/A"),
        ("", ""),
        (None, ""),
        (-0.25, -0.25),
        (62.0, 62.0),
        (0, 0),
        (float("nan"), "N/A"),
        (float("-inf"), "N/A"),
    ],
)
def test_csv_cells(value, cell):
    assert csv_cell(value) == cell


@pytest.mark.parametrize(
    "text, cell",
    [
        ("a|b", "a\\|b"),
        ("a\\b", "a\\\\b"),
        ("a\\|b", "a\\\\\\|b"),
        ("<script>", "&lt;script&gt;"),
        ("R&D", "R&amp;D"),
        ("one\ntwo\r\nthree\rfour", "one two three four"),
        ("org/model-a", "org/model-a"),
    ],
)
def test_markdown_cells(text, cell):
    assert markdown_cell(text) == cell


def test_strict_json():
    assert strict_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": "N/A"}) == (
        '{"a": "N/A", "b": ["N/A", 1.5], "c": "N/A"}'
    )


def hostile_runs(tmp_path):
    document = winoqueer_results(HOSTILE, score=5.0, ci=(4.0, 6.0))
    document["results"]["winoqueer"]["=cmd|' /C calc'!A0,none"] = 0.5  # a metric name from the input
    document["results"]["@evil"] = {"+m,none": -1.0}  # a task name from the input
    return [
        write(tmp_path / "results_hostile.json", document),
        write(tmp_path / "results_plain.json", winoqueer_results("org/plain")),
    ]


def test_leaderboard_csv_neutralises_formulas_and_keeps_numbers(tmp_path):
    runs = results.load_runs(hostile_runs(tmp_path))
    text = leaderboard.to_csv(runs, [("winoqueer", "bias_score"), ("winoqueer", "=cmd|' /C calc'!A0"), ("@evil", "+m")])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][-10:] == [
        "'@evil:results_file",
        "'@evil:version",
        "'@evil:documents",
        "'@evil:partial",
        "'@evil:+m",
        "'@evil:+m:ci_lower",
        "'@evil:+m:ci_upper",
        "'@evil:+m:stderr",
        "'@evil:+m:n",
        "'@evil:+m:n_samples",
    ]
    assert "winoqueer:=cmd|' /C calc'!A0" in rows[0]  # starts with a letter: nothing to neutralise
    hostile = next(row for row in rows if row[0].startswith("'="))
    assert hostile[0] == "'" + HOSTILE
    assert hostile[5:8] == ["5.0", "4.0", "6.0"]
    assert hostile[-6] == "-1.0"  # negative numbers stay numbers
    for row in rows:
        assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in row)
        assert not any(cell.startswith("-") and not cell.lstrip("-").replace(".", "").isdigit() for cell in row)


def test_leaderboard_markdown_escapes_names(tmp_path, capsys):
    code, out, err = run_cli(["leaderboard", *hostile_runs(tmp_path)], capsys)
    assert code == 0
    escaped = '=HYPERLINK("http://x")\\|&lt;b&gt;bold&lt;/b&gt; &amp; \\\\ new line'
    assert f"| {escaped} | -1, N=unknown | 5 [4, 6], N=45,540 |" in out
    assert "<b>" not in out
    # every table line has as many cells as the header
    for table in out.split("\n\n"):
        lines = [line for line in table.splitlines() if line.startswith("|")]
        cells = {len(line.replace("\\|", "").split("|")) for line in lines}
        assert len(cells) <= 1, table


def test_leaderboard_html_escapes_names(tmp_path):
    page = leaderboard.to_html(results.load_runs(hostile_runs(tmp_path)))
    assert "<b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "Content-Security-Policy" in page


def test_report_markdown_escapes_titles_names_and_metrics(tmp_path, capsys):
    code, out, err = run_cli(["report", *hostile_runs(tmp_path), "--title", "Bias | <i>report</i>\nQ3"], capsys)
    assert code == 0
    assert out.startswith("# Bias \\| &lt;i&gt;report&lt;/i&gt; Q3\n")
    assert "<b>" not in out and "<i>" not in out
    assert (
        "| =cmd\\|' /C calc'!A0 | =HYPERLINK(\"http://x\")\\|&lt;b&gt;bold&lt;/b&gt; &amp; \\\\ new line | 0.5 |"
    ) in out


def test_report_html_and_its_figures_escape_names(tmp_path):
    page = report_html.to_html(results.load_runs(hostile_runs(tmp_path)), title="<script>x</script>")
    assert "<script" not in page and "<b>" not in page
    assert "<title>&lt;script&gt;x&lt;/script&gt;</title>" in page
    for svg in __import__("re").findall(r"<svg .*?</svg>", page, flags=__import__("re").S):
        parsed = ET.fromstring(svg)  # well-formed: nothing from the input broke out of its text
        labels = [g.find("title").text for g in parsed.iter("g") if g.find("title") is not None]
        assert any(label.startswith(HOSTILE) for label in labels)


# --------------------------------------------------------------------------
# Output files


def test_report_to_a_missing_folder_writes_nothing(tmp_path, capsys):
    (path, _) = hostile_runs(tmp_path)
    markdown, html_path = tmp_path / "report.md", tmp_path / "no" / "report.html"
    code, out, err = run_cli(["report", path, "--markdown", markdown, "--html", html_path], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias report: cannot write {html_path}: No such file or directory (the folder "
        f"{html_path.parent} does not exist)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results_hostile.json", "results_plain.json"]


@pytest.mark.parametrize("option", ["--csv", "--markdown", "--html"])
def test_leaderboard_to_a_path_that_cannot_be_written(tmp_path, capsys, option):
    (path, _) = hostile_runs(tmp_path)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    target = blocker / "board.out"
    code, out, err = run_cli(["leaderboard", path, "--csv", tmp_path / "ok.csv", option, target], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias leaderboard: cannot write {target}: Not a directory ({blocker} is a file, not a folder)\n"
    )
    assert not (tmp_path / "ok.csv").exists()


def test_an_output_that_is_a_folder_or_given_twice(tmp_path, capsys):
    (path, _) = hostile_runs(tmp_path)
    code, out, err = run_cli(["leaderboard", path, "--csv", tmp_path], capsys)
    assert (code, err) == (2, f"lm-eval-bias leaderboard: cannot write {tmp_path}: it is a folder; give a file name\n")
    code, out, err = run_cli(["report", path, "--html", tmp_path / "r", "--markdown", tmp_path / "r"], capsys)
    assert (code, err) == (
        2,
        f"lm-eval-bias report: {tmp_path / 'r'} is given for two outputs; give each its own file\n",
    )


def test_recompute_json_to_a_path_that_cannot_be_written(tmp_path, capsys):
    from test_cli_errors import WINOQUEER_SAMPLES, winoqueer_sample_lines

    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(winoqueer_sample_lines()) + "\n")
    target = tmp_path / "missing" / "numbers.json"
    code, out, err = run_cli(["recompute", samples, "--json", target], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias recompute: cannot write {target}: No such file or directory (the folder "
        f"{target.parent} does not exist)\n"
    )


def test_outputs_replace_old_files_whole_and_are_readable_by_others(tmp_path, capsys):
    (path, _) = hostile_runs(tmp_path)
    target = tmp_path / "board.md"
    target.write_text("old")
    assert run_cli(["leaderboard", path, "--markdown", target], capsys)[0] == 0
    assert target.read_text(encoding="utf-8").startswith("| model |")
    assert target.stat().st_mode & 0o044  # not the private mode of a temporary file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.md", "results_hostile.json", "results_plain.json"]


def test_json_written_by_us_parses_strictly(tmp_path, capsys):
    def refuse(token):
        raise AssertionError(f"bare {token}")

    from test_cli_errors import WINOQUEER_SAMPLES, winoqueer_sample_lines

    samples = tmp_path / WINOQUEER_SAMPLES
    samples.write_text("\n".join(winoqueer_sample_lines(2)) + "\n")
    out = tmp_path / "n.json"
    assert run_cli(["recompute", samples, "--json", out], capsys)[0] == 0
    json.loads(out.read_text(), parse_constant=refuse)


def test_check_keeps_a_name_from_the_input_on_its_line(tmp_path, capsys):
    (path, _) = hostile_runs(tmp_path)
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert code == 0
    assert out.splitlines()[1] == (
        '  PASS  winoqueer <= 65   [=HYPERLINK("http://x")|<b>bold</b> & \\ new line]  '
        "winoqueer:bias_score = 5 [4, 6], N=45,540"
    )


# --------------------------------------------------------------------------
# Look-alike text: characters that cannot be seen, and Markdown links

# A right-to-left override, a zero-width space and an isolate, then an image and a link.
LOOKALIKE = "org/gpt2\u202e\u200b\u2066![x](http://e.test/a.png)[y](http://e.test)"
# As every output shows it: each such character as its escape.
SHOWN = "org/gpt2\\u202e\\u200b\\u2066![x](http://e.test/a.png)[y](http://e.test)"
# In Markdown, also backslashes doubled and the "]" that would end a link escaped.
MARKDOWN_SHOWN = "org/gpt2\\\\u202e\\\\u200b\\\\u2066![x\\](http://e.test/a.png)[y\\](http://e.test)"
INVISIBLE = ("\u202e", "\u200b", "\u2066")


@pytest.mark.parametrize(
    "text, shown",
    [
        ("a\u202eb", "a\\u202eb"),
        ("a\u200bb\u200cc\u200dd\ufeffe", "a\\u200bb\\u200cc\\u200dd\\ufeffe"),
        ("\u2066\u2067\u2068\u2069\u061c", "\\u2066\\u2067\\u2068\\u2069\\u061c"),
        ("bell\x07 del\x7f c1\x85", "bell\\u0007 del\\u007f c1\\u0085"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("tab\tand\nlines\r", "tab\tand\nlines\r"),  # whitespace each format handles itself
        ("Gödel ünïcode 模型 שלום", "Gödel ünïcode 模型 שלום"),  # right-to-left letters are text, not controls
        (7, "7"),
    ],
)
def test_visible_shows_what_cannot_be_seen(text, shown):
    from lm_eval_bias.text import visible

    assert visible(text) == shown


@pytest.mark.parametrize(
    "text, cell",
    [
        ("![x](http://e.test/a.png)", "![x\\](http://e.test/a.png)"),
        ("[y](http://e.test)", "[y\\](http://e.test)"),
        ("[a [b](c)](d)", "[a [b\\](c)\\](d)"),
        ("[x][ref] [ref]: http://e.test", "[x\\][ref] [ref\\]: http://e.test"),
        ("62 [60, 64], N=100", "62 [60, 64], N=100"),  # an interval is not a link
        ("a\\](b)", "a\\\\\\](b)"),  # a backslash of the input does not unescape the bracket
        ("gpt2\u202e", "gpt2\\\\u202e"),
    ],
)
def test_markdown_cells_carry_no_link_and_show_invisible_characters(text, cell):
    assert markdown_cell(text) == cell


def test_csv_cells_show_invisible_characters():
    assert csv_cell("=a\u202e") == "'=a\\u202e"
    assert csv_cell("\u200b=1+2") == "\\u200b=1+2"  # shown, so it no longer hides the formula start


def lookalike_runs(tmp_path):
    folder = tmp_path / "runs\u2067"
    document = winoqueer_results(LOOKALIKE, score=5.0, ci=(4.0, 6.0))
    document["results"]["winoqueer"]["alias"] = "Wino\u200bQueer"
    return [
        write(folder / "results_lookalike.json", document),
        write(folder / "results_lookalike_partial.json", winoqueer_results(LOOKALIKE, limit=20, effective=20)),
    ]


def test_check_shows_invisible_characters(tmp_path, capsys):
    code, out, err = run_cli(["check", lookalike_runs(tmp_path)[0], "--max", "winoqueer=65"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == f"  PASS  winoqueer <= 65   [{SHOWN}]  winoqueer:bias_score = 5 [4, 6], N=45,540"
    assert not any(char in out for char in INVISIBLE)


def test_leaderboard_markdown_and_its_notes_show_invisible_characters(tmp_path, capsys):
    paths = lookalike_runs(tmp_path)
    code, out, err = run_cli(["leaderboard", *paths], capsys)
    assert code == 0
    assert f"| {MARKDOWN_SHOWN} | 5 [4, 6], N=45,540 | 70 [64, 75], N=1,200 |" in out
    shown_folder = str(tmp_path / "runs\\\\u2067")  # in Markdown, the escape's backslash is doubled
    assert f"| {MARKDOWN_SHOWN} | winoqueer | 1.0 | skipped | {shown_folder}/results_lookalike_partial.json |" in out
    assert err == (
        f"lm-eval-bias leaderboard: note: skipped {tmp_path}/runs\\u2067/results_lookalike_partial.json "
        f"(partial: --limit 20 (20 of 45,540 pairs)) for {SHOWN}, winoqueer: partial; a complete run is used\n"
    )
    assert not any(char in out + err for char in INVISIBLE)


def test_leaderboard_csv_shows_invisible_characters(tmp_path):
    rows = list(csv.reader(io.StringIO(leaderboard.to_csv(results.load_runs(lookalike_runs(tmp_path))))))
    assert rows[1][:2] == [SHOWN, f"{tmp_path}/runs\\u2067/results_lookalike.json"]
    assert not any(char in cell for row in rows for cell in row for char in INVISIBLE)


def test_leaderboard_html_shows_invisible_characters(tmp_path):
    page = leaderboard.to_html(results.load_runs(lookalike_runs(tmp_path)))
    assert f"<th>{SHOWN}</th>" in page
    assert f"<td>{tmp_path}/runs\\u2067/results_lookalike.json</td>" in page
    assert not any(char in page for char in INVISIBLE)


def test_report_markdown_shows_invisible_characters_and_no_link(tmp_path, capsys):
    code, out, err = run_cli(["report", lookalike_runs(tmp_path)[0], "--title", "Q3\u202e ![t](http://e.test)"], capsys)
    assert code == 0
    assert out.startswith("# Q3\\\\u202e ![t\\](http://e.test)\n")
    assert f"| {MARKDOWN_SHOWN} | " in out
    assert not any(char in out for char in INVISIBLE)
    assert "](http" not in out.replace("\\](http", "")  # every link or image is escaped


def test_report_html_and_its_figures_show_invisible_characters(tmp_path):
    page = report_html.to_html(results.load_runs(lookalike_runs(tmp_path)[:1]), title="Q3\u202e")
    assert "<title>Q3\\u202e</title>" in page
    assert f'<td><span class="swatch" style="background:#0072B2"></span>{SHOWN}</td>' in page
    assert not any(char in page for char in INVISIBLE)
    svgs = __import__("re").findall(r"<svg .*?</svg>", page, flags=__import__("re").S)
    assert svgs and any(SHOWN in svg for svg in svgs)


def test_leaderboard_version_warning_shows_paths_as_they_are(tmp_path):
    folder = tmp_path / "[x](http:e.test)\u202e"
    older = winoqueer_results("org/a")
    older["configs"]["winoqueer"]["metadata"]["version"] = 0.9
    paths = [write(folder / "results_a.json", older), write(folder / "results_b.json", winoqueer_results("org/b"))]
    markdown = leaderboard.to_markdown(results.load_runs(paths))
    shown = f"{tmp_path}/[x\\](http:e.test)\\\\u202e"
    assert (
        f"**Not comparable: task winoqueer has results of different task versions side by side: version 0.9 "
        f"({shown}/results_a.json), version 1.0 ({shown}/results_b.json); re-run the older ones with this "
        "version of lm-eval-bias**"
    ) in markdown
    assert "\u202e" not in markdown


def test_an_error_message_shows_the_invisible_characters_it_quotes(tmp_path, capsys):
    folder = tmp_path / "runs\u2067"
    path = write(folder / "results_x.json", winoqueer_results("gpt2", score=250.0, ci=(249.0, 251.0)))
    code, out, err = run_cli(["check", path, "--max", "winoqueer=65"], capsys)
    assert code == 2
    assert err.startswith(
        f"lm-eval-bias check: {tmp_path}/runs\\u2067/results_x.json: task winoqueer, metric bias_score"
    )
    assert not any(char in err for char in INVISIBLE)


# Blank-looking characters that are letters, symbols or spaces to Unicode (a Hangul filler, a
# Braille blank, a variation selector, a combining grapheme joiner, a thin space at the end).
BLANK_LOOKING = ("\u3164", "\u115f", "\u2800", "\ufe0f", "\u034f", "\u2009")


@pytest.mark.parametrize("char", BLANK_LOOKING)
def test_leaderboard_and_check_show_blank_looking_characters_escaped(tmp_path, capsys, char):
    name = "org/gpt2" + char
    shown = "org/gpt2" + f"\\u{ord(char):04x}"
    path = write(tmp_path / "results_blank.json", winoqueer_results(name))
    runs = results.load_runs([path])
    rows = list(csv.reader(io.StringIO(leaderboard.to_csv(runs))))
    assert rows[1][0] == shown
    assert f"<th>{shown}</th>" in leaderboard.to_html(runs)
    code, out, err = run_cli(["leaderboard", path], capsys)
    assert (code, err) == (0, "")
    assert f"| org/gpt2\\\\u{ord(char):04x} | 62 [60, 64], N=45,540 |" in out
    for output in (out, leaderboard.to_csv(runs), leaderboard.to_html(runs)):
        assert char not in output


@pytest.mark.parametrize(
    "char, code, shown",
    [
        # letters to Unicode: a task name of their own, which no results file has
        ("\u3164", 1, "FAIL  winoqueer\\u3164 <= 65   [-]  no results file has task 'winoqueer\\u3164'"),
        ("\u115f", 1, "FAIL  winoqueer\\u115f <= 65   [-]  no results file has task 'winoqueer\\u115f'"),
        # no letters: the rule cannot be read
        ("\u2800", 2, "cannot read the rule 'winoqueer\\u2800=65'"),
        ("\ufe0f", 2, "cannot read the rule 'winoqueer\\ufe0f=65'"),
        ("\u034f", 2, "cannot read the rule 'winoqueer\\u034f=65'"),
    ],
)
def test_check_shows_blank_looking_characters_of_a_rule_escaped(tmp_path, capsys, char, code, shown):
    path = write(tmp_path / "results_blank.json", winoqueer_results())
    found, out, err = run_cli(["check", path, "--max", f"winoqueer{char}=65"], capsys)
    assert found == code
    assert shown in out + err
    assert char not in out + err
