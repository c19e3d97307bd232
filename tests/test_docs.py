"""The documentation agrees with the code: paper values, links, versions and wording.

A paper's published values live in one place, the ``metadata: paper_values`` block of a task's
YAML (what the report reads). A README that shows them does so in a table under a "Paper values"
heading, which these tests compare with the YAML cell by cell; a paper value written in prose
beside its model's name is not allowed, since no test could keep it true.
"""

import ast
import json
import re
from pathlib import Path

import pytest
from lm_eval.tasks._yaml_loader import load_yaml

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "tasks"
BENCHMARK_FOLDERS = sorted(path.parent for path in TASKS.glob("*/README.md"))
DOCS = [ROOT / "README.md", TASKS / "README.md", *(f / "README.md" for f in BENCHMARK_FOLDERS)]
DOCS += [ROOT / "lm_eval_bias" / "README.md", ROOT / "lm_eval_bias" / "report" / "README.md"]
# The modules whose top docstring explains how a benchmark's values are computed.
BENCHMARK_MODULES = sorted((ROOT / "lm_eval_bias" / "benchmarks").glob("*.py")) + [
    ROOT / "lm_eval_bias" / "benchmarks" / "scm" / "__init__.py",
    ROOT / "lm_eval_bias" / "benchmarks" / "community" / "__init__.py",
]


def paper_values_by_task(folder: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Task name -> {model as the paper prints it -> {metric: value}}, from a folder's YAMLs.

    Parameters
    ----------
    folder : Path
        A benchmark folder of ``tasks/``.

    Returns
    -------
    dict
        Only the tasks whose metadata has ``paper_values``, read as lm-eval reads the YAML
        (``include:`` resolved).
    """
    found = {}
    for path in sorted(folder.glob("*.yaml")):
        config = load_yaml(path, resolve_func=False)
        paper = (config.get("metadata") or {}).get("paper_values")
        if isinstance(config.get("task"), str) and paper:
            found[config["task"]] = {row["model"]: row["values"] for row in paper["rows"]}
    return found


def hf_ids_by_model(folder: Path) -> dict[str, list[str]]:
    """Model as the paper prints it -> its Hugging Face ids, over a folder's YAMLs."""
    ids = {}
    for path in sorted(folder.glob("*.yaml")):
        paper = (load_yaml(path, resolve_func=False).get("metadata") or {}).get("paper_values")
        for row in (paper or {}).get("rows", []):
            ids[row["model"]] = row["hf_ids"]
    return ids


def markdown_tables(text: str) -> list[tuple[str, int, list[list[str]]]]:
    """Every Markdown table of a text, with the heading it sits under and its first line number.

    Parameters
    ----------
    text : str
        A Markdown document.

    Returns
    -------
    list of (heading, line, rows)
        ``rows`` are the table's rows of cell texts, header first, the ``|---|`` line left out,
        backticks removed.
    """
    tables, heading, current, start = [], "", [], 0
    for number, line in enumerate(text.splitlines() + [""], start=1):
        stripped = line.strip()
        if stripped.startswith("|"):
            if not current:
                start = number
            if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", stripped):
                current.append([cell.strip().replace("`", "") for cell in stripped.strip("|").split("|")])
            continue
        if current:
            tables.append((heading, start, current))
            current = []
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
    return tables


def paper_value_tables(readme: Path) -> list[tuple[int, list[list[str]]]]:
    """The tables under a "Paper values" heading of a README, with their first line numbers."""
    return [(line, rows) for heading, line, rows in markdown_tables(readme.read_text()) if heading == "Paper values"]


def table_values(rows: list[list[str]], tasks: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Task -> model -> metric -> value, as a paper-values table states them.

    A table either has a row per model (header ``model``, an optional ``task`` column, then one
    column per metric) or a row per metric (header ``metric``, then one column per model). A table
    without a ``task`` column states the values of every task in ``tasks``.
    """
    header, body = rows[0], rows[1:]
    stated = {task: {} for task in tasks}
    if header[0] == "model":
        has_task = header[1] == "task"
        metrics = header[2:] if has_task else header[1:]
        for row in body:
            values = {metric: float(cell) for metric, cell in zip(metrics, row[2:] if has_task else row[1:])}
            for task in [row[1]] if has_task else tasks:
                stated.setdefault(task, {})[row[0]] = values
    else:
        assert header[0] == "metric", f"a paper-values table starts with a model or a metric column: {header}"
        for task in tasks:
            for column, model in enumerate(header[1:], start=1):
                stated[task][model] = {row[0]: float(row[column]) for row in body}
    return stated


@pytest.mark.parametrize("folder", BENCHMARK_FOLDERS, ids=lambda folder: folder.name)
def test_paper_value_tables_state_the_yaml_s_values_exactly(folder):
    expected = paper_values_by_task(folder)
    tables = paper_value_tables(folder / "README.md")
    if not expected:
        assert tables == [], f"{folder.name}: a paper-values table but no paper_values in any YAML"
        return
    assert tables, f"{folder.name}/README.md shows none of the paper values of its YAMLs"
    for line, rows in tables:
        for task, models in table_values(rows, sorted(expected)).items():
            where = f"{folder.name}/README.md, the table of line {line}, task {task}"
            assert task in expected, f"{where}: the task has no paper_values"
            assert sorted(models) == sorted(expected[task]), f"{where}: not the models of the YAML"
            for model, values in models.items():
                assert values == {metric: expected[task][model][metric] for metric in values}, f"{where}, {model}"


@pytest.mark.parametrize("folder", BENCHMARK_FOLDERS, ids=lambda folder: folder.name)
def test_every_paper_value_names_a_metric_its_task_reports(folder):
    """A paper value under a misspelt metric would never stand beside ours in a report."""
    for task, models in paper_values_by_task(folder).items():
        golden = json.loads((ROOT / "tests" / "golden" / f"{task}.json").read_text())["results"]
        reported = {key.split(",")[0] for key in golden}
        for model, values in models.items():
            assert sorted(set(values) - reported) == [], f"{task}, {model}"


def test_a_table_that_differs_from_the_yaml_is_found():
    rows = [["model", "task", "bias_score"], ["gpt2", "winoqueer", "97.68"]]
    assert table_values(rows, ["winoqueer"]) == {"winoqueer": {"gpt2": {"bias_score": 97.68}}}
    expected = paper_values_by_task(TASKS / "winoqueer")["winoqueer"]["gpt2"]["bias_score"]
    assert expected == 97.86  # so the swapped digits above would fail the comparison
    by_metric = [["metric", "GPT-2 (125M)"], ["consistency_they", "0.46"]]
    assert table_values(by_metric, ["a", "b"]) == {t: {"GPT-2 (125M)": {"consistency_they": 0.46}} for t in "ab"}


@pytest.mark.parametrize("readme", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_paper_value_is_written_beside_its_model_outside_the_checked_tables(readme):
    checked = {n for line, rows in paper_value_tables(readme) for n in range(line, line + len(rows) + 1)}
    rows = {}
    for folder in BENCHMARK_FOLDERS:
        ids = hf_ids_by_model(folder)
        for models in paper_values_by_task(folder).values():
            for model, values in models.items():
                rows[model] = ([model, *ids[model]], set(values.values()))
    found = []
    for number, line in enumerate(readme.read_text().splitlines(), start=1):
        if number in checked:
            continue
        numbers = {float(n) for n in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", line)}
        for model, (names, values) in rows.items():
            if numbers & values and any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", line) for n in names):
                found.append(f"line {number}: {model} {sorted(numbers & values)}")
    assert found == []


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of every heading of a Markdown file (code blocks left out)."""
    found, in_code = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(github_anchor(line.lstrip("#")))
    return found


def test_the_anchor_of_a_heading_is_github_s():
    assert github_anchor("Classifiers (Detoxify and VADER)") == "classifiers-detoxify-and-vader"
    assert github_anchor("A real serving engine: llama.cpp through `local-completions`") == (
        "a-real-serving-engine-llamacpp-through-local-completions"
    )


@pytest.mark.parametrize("doc", DOCS + [ROOT / "bench" / "README.md"], ids=lambda path: str(path.relative_to(ROOT)))
def test_every_link_to_a_doc_reaches_its_file_and_heading(doc):
    broken = []
    for target, anchor in re.findall(r"\]\(([^)\s#]*\.md|)(?:#([^)\s]+))?\)", doc.read_text()):
        path = (doc.parent / target).resolve() if target else doc
        if not path.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(path):
            broken.append(f"{target}#{anchor}: no such heading")
    assert broken == []


@pytest.mark.parametrize("folder", BENCHMARK_FOLDERS, ids=lambda folder: folder.name)
def test_a_benchmark_readme_has_lm_eval_s_sections_and_each_task_s_current_version(folder):
    text = (folder / "README.md").read_text()
    headings = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    for section in ("Paper", "Citation", "Tasks", "Options", "Fidelity notes", "Checklist", "Changelog"):
        assert section in headings, f"{folder.name}/README.md has no '{section}' section"
    assert any(h.startswith("Metric card") for h in headings), f"{folder.name}/README.md has no metric card"
    changelog = text[text.index("### Changelog") :]
    for path in sorted(folder.glob("*.yaml")):
        config = load_yaml(path, resolve_func=False)
        if isinstance(config.get("task"), str):  # not the example probe file beside the tasks
            version = config["metadata"]["version"]
            assert f"**{version}**" in changelog, f"{config['task']} {version} is not in the changelog"


# Wording of a work log, not of the product: what happened while it was made, on which machine.
WORK_LOG = re.compile(
    r"seed copy|the seed's|offline here|from here|not at hand|no (?:several )?GPUs? here|issue \d|this session"
    r"|review round|earlier target|withdrawn|earlier code|before the work",
    re.IGNORECASE,
)


def test_the_docs_and_benchmark_docstrings_speak_of_the_product():
    texts = {str(path.relative_to(ROOT)): path.read_text() for path in DOCS}
    for module in BENCHMARK_MODULES:
        texts[str(module.relative_to(ROOT))] = ast.get_docstring(ast.parse(module.read_text())) or ""
    found = [f"{name}: {match.group(0)!r}" for name, text in texts.items() for match in WORK_LOG.finditer(text)]
    assert found == []


def test_the_scm_readme_s_survey_correlation_follows_from_the_yaml_s_llama_row():
    """The README cites r = 0.816 for the thesis's LLaMA 2 model: recomputed from the YAML's row."""
    from lm_eval_bias.benchmarks import scm

    (row,) = load_yaml(TASKS / "scm" / "scm_score.yaml", resolve_func=False)["metadata"]["paper_values"]["rows"]
    means = [(group, axis, row["values"][f"{axis}_{group}"]) for group in scm.GROUPS for axis in scm.AXES]
    assert round(scm.survey_r(means), 3) == 0.816
    assert "r = 0.852, 0.724, 0.816" in (TASKS / "scm" / "README.md").read_text()
