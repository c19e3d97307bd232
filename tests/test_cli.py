import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from lm_eval_bias import cli

ROOT = Path(__file__).resolve().parents[1]


def test_tasks_dir_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["tasks-dir"])
    assert exit_.value.code == 0
    assert (Path(capsys.readouterr().out.strip()) / "winoqueer" / "winoqueer.yaml").is_file()


def test_readme_names_the_quick_test_command_and_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(?P<lines>(?:pytest[^\n]*\n)+)```", readme).group("lines")
    assert block.splitlines() == ["pytest", 'pytest -m "not slow"']
    ci_tests = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("pytest")]
    assert ci_tests == ['pytest -m "not slow"']
    # a plain pytest leaves out exactly what the second command adds: the e2e tests
    addopts = re.search(r'^addopts = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    assert addopts == "-ra --strict-markers -m 'not slow and not e2e'"


def test_ci_installs_what_the_readme_s_first_command_installs():
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(pip install [^\n]*)\n```", readme).group(1)
    readme_requirements = shlex.split(first.split("&&")[0])[2:]
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("pip install")]
    ci_requirements = shlex.split(ci_lines[0])[2:]
    assert readme_requirements == ["torch==2.13.0", ".[test]", "./lm_eval_bias/autoload"]
    assert set(readme_requirements) <= set(ci_requirements)


# lm-eval 0.4.13 logs each request's filtered answer; 0.5.0.dev1 the list of its repeats
@pytest.mark.parametrize("logged", [lambda answer: answer, lambda answer: [answer]], ids=["0.4.13", "0.5.0.dev1"])
def test_tango_agreement_command(tmp_path, capsys, logged):
    import json

    def line(family, text=None, best=None):
        doc = {"template_idx": 1, "ante": "pat", "pronoun_family": family}
        if text is not None:
            return json.dumps({"doc": doc, "filtered_resps": [logged(text)]})
        lls = [logged([str(-1.0 if f == best else -4.0), "False"]) for f in ("he", "she", "they", "xe", "ey", "fae")]
        return json.dumps({"doc": doc, "filtered_resps": lls})

    generation, probability = tmp_path / "gen.jsonl", tmp_path / "prob.jsonl"
    generation.write_text(line("xe", " Xe sings.") + "\n" + line("ey", " He sings.") + "\n")
    probability.write_text(line("xe", best="xe") + "\n" + line("ey", best="ey") + "\n")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["tango-agreement", str(generation), str(probability)])
    assert exit_.value.code == 0
    assert json.loads(capsys.readouterr().out) == {
        "prompts_compared": 2,
        "verdict_agreement": 0.5,
        "family_agreement": 0.5,
        "left_out": {"only_in_generation": 0, "only_in_probability": 0, "no_pronoun": 0, "probability_tie": 0},
    }
    with pytest.raises(SystemExit) as exit_:
        cli.main(["tango-agreement", str(generation), str(tmp_path / "missing.jsonl")])
    assert exit_.value.code == 2  # bad input, as for every subcommand
    assert capsys.readouterr().err == f"lm-eval-bias tango-agreement: {tmp_path / 'missing.jsonl'}: no such file\n"


OUR_COMMAND_LINES = [
    "  tasks-dir        print the folder of the task YAMLs, for the stock lm-eval's --include_path",
    "  download         fetch the benchmarks' public data once, for offline use",
    "  tango-agreement  how often TANGO's generation and probability methods agree",
    "  check            gate on results files (exit 0 when every rule holds, 1 when one fails)",
    "  compare          did it get more biased? two runs compared document by document, with paired tests",
    "  leaderboard      models side by side, as Markdown, CSV or HTML",
    "  recompute        a task's results again from its --log_samples file, without the model",
    "  report           an HTML (and Markdown) report of one or more runs, with figures",
    "  shards           split one run of a task across machines: --samples files and their command lines",
    "  merge            shards of one run (lm-eval-bias shards) merged into that run's results, exactly",
]


@pytest.mark.parametrize("argv", [["--help"], ["-h"], []])
def test_help_lists_our_commands_then_lm_evals_help(argv):
    # The installed command itself, in its own process: what a user types, and its exit code.
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "lm-eval-bias"), *argv], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    ours = [lines.index(line) for line in OUR_COMMAND_LINES]  # ValueError: a line is missing
    assert ours == list(range(ours[0], ours[0] + len(OUR_COMMAND_LINES)))
    assert "lm-eval-bias COMMAND --help describes one of them. lm-eval's own help follows." in lines
    # lm-eval's own help, after ours
    assert lines.index("usage: lm-eval [-h] COMMAND ...") > ours[-1]
    assert "    run       Run the evaluation harness on specified tasks" in lines


@pytest.mark.parametrize("command", [line.split()[0] for line in OUR_COMMAND_LINES])
def test_each_of_our_commands_has_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: lm-eval-bias {command} ")
    assert "-h, --help" in out
    assert "%%" not in out  # argparse formats help strings, not descriptions: a doubled % shows as typed
