"""CONTRIBUTING.md's example benchmark works as written, touching only its own places.

The test writes the guide's files into a copy of the package, adds the one line that lists the
package, and runs the task on a stand-in model in a fresh interpreter: the results, the report
section with its figure and the generated tables of tasks/README.md all know the new benchmark.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "CONTRIBUTING.md"
# A file of the guide: its path in backquotes opening a paragraph, then (after any words) its code block.
FILE_BLOCK = re.compile(
    r"^`(?P<path>[\w/.]+\.(?:py|yaml))`[^`]*?:\n\n```\w+\n(?P<body>.*?)```", re.MULTILINE | re.DOTALL
)
LISTING = re.compile(r"^PACKAGES = \(.*\)$", re.MULTILINE)
OWN_PLACES = ("lm_eval_bias/benchmarks/occupations/", "tasks/occupations/")

pytestmark = pytest.mark.e2e


def guide_files() -> dict[str, str]:
    """Path -> text of every file the guide writes out."""
    return {match.group("path"): match.group("body") for match in FILE_BLOCK.finditer(GUIDE.read_text("utf-8"))}


def test_the_guide_writes_only_into_the_benchmarks_own_places_and_one_listing_line():
    files = guide_files()
    assert sorted(files) == [
        "lm_eval_bias/benchmarks/occupations/__init__.py",
        "lm_eval_bias/benchmarks/occupations/loader.py",
        "lm_eval_bias/benchmarks/occupations/record.py",
        "lm_eval_bias/benchmarks/occupations/scoring.py",
        "lm_eval_bias/benchmarks/occupations/task.py",
        "tasks/occupations/occupations.yaml",
    ]
    assert all(path.startswith(OWN_PLACES) for path in files)
    listed = LISTING.findall(GUIDE.read_text("utf-8"))
    current = LISTING.search((ROOT / "lm_eval_bias" / "benchmarks" / "__init__.py").read_text("utf-8")).group(0)
    assert listed == [current[:-1] + ', "occupations")']


RUN = """
import json, sys
import lm_eval
import lm_eval_bias
from fake_models import HashedLM
from lm_eval_bias import task_docs
from lm_eval_bias.report import html, results

assert lm_eval_bias.__file__.startswith(sys.argv[1]), lm_eval_bias.__file__
manager = lm_eval_bias.task_manager(include_defaults=False)
output = lm_eval.simple_evaluate(model=HashedLM(), tasks=["occupations"], task_manager=manager)
path = sys.argv[1] + "/results.json"
with open(path, "w") as handle:
    json.dump(output, handle, default=str)
report = html.to_html(results.load_runs([path]))
print(json.dumps({
    "results": output["results"]["occupations"],
    "report": report,
    "benchmarks_table": task_docs.benchmarks_table(),
}))
"""


def test_the_example_benchmark_runs_reports_and_is_listed(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "lm_eval_bias", copy / "lm_eval_bias", ignore=shutil.ignore_patterns("__pycache__"))
    # tasks/ is the package lm_eval_bias.tasks once installed: here too, so the copy's YAMLs are found.
    shutil.copytree(ROOT / "tasks", copy / "lm_eval_bias" / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    for path, text in guide_files().items():
        target = copy / "lm_eval_bias" / path if path.startswith("tasks/") else copy / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    listing = copy / "lm_eval_bias" / "benchmarks" / "__init__.py"
    listing.write_text(LISTING.sub(LISTING.findall(GUIDE.read_text("utf-8"))[0], listing.read_text("utf-8")), "utf-8")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(copy)], capture_output=True, text=True, env=env, cwd=copy, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])

    # 8 prompts; per kind of job 4, each with its interval and the design effect of its 2 templates
    assert found["results"]["stereotype_rate_male_coded_n,none"] == 4
    assert found["results"]["stereotype_rate_female_coded_n,none"] == 4
    assert set(found["results"]) >= {
        "stereotype_rate,none",
        "stereotype_rate_ci_lower,none",
        "stereotype_rate_ci_upper,none",
        "stereotype_rate_male_coded,none",
    }
    assert "<h2>Occupation pronouns" in found["report"]
    assert "Stereotyped pronoun by kind of job" in found["report"]  # the figure the record declares
    assert "male-coded jobs" in found["report"]
    assert (
        "| Occupation pronouns | [`occupations/`](occupations/README.md) | An example probe |"
        in found["benchmarks_table"]
    )
