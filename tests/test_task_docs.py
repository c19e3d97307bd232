"""The generated tables of every doc of tasks/ are the ones the records and task YAMLs generate."""

from pathlib import Path

import pytest

from lm_eval_bias import task_docs, task_metadata

# The checkout's docs (an installed package ships the task YAMLs alone).
TASKS = Path(__file__).resolve().parents[1] / "tasks"
DOCUMENTS = task_docs.documents(TASKS)


def test_the_documents_are_the_index_and_each_benchmark_folder_s_readme_and_metrics():
    names = [str(path.relative_to(path.parents[1] if folder else path.parent)) for path, folder in DOCUMENTS]
    folders = ["winoqueer", "tango", "gendercare", "scm", "community"]
    assert names == ["README.md", *(f"{f}/{doc}" for f in folders for doc in ("README.md", "METRICS.md"))]
    assert [folder for _, folder in DOCUMENTS] == [None, *(f for f in folders for _ in range(2))]


@pytest.mark.parametrize(("path", "folder"), DOCUMENTS, ids=lambda value: getattr(value, "name", value))
def test_every_generated_table_is_up_to_date(path, folder):
    text = path.read_text(encoding="utf-8")
    assert task_docs.regenerated(text, folder) == text, "run: python -m lm_eval_bias.task_docs"


def test_the_index_marks_every_table_and_each_folder_its_tasks_and_paper_values():
    marked = {(path.name, folder): task_docs.marked_tables(path.read_text()) for path, folder in DOCUMENTS}
    assert sorted(marked.pop(("README.md", None))) == sorted(task_docs.TABLES)
    for (name, folder), names in marked.items():
        assert names == (["tasks"] if name == "README.md" else ["paper_values"]), f"{folder}/{name}"


def test_a_doc_is_scoped_by_its_folder():
    assert task_docs.folder_of(TASKS / "scm" / "METRICS.md") == "scm"
    assert task_docs.folder_of(TASKS / "README.md") is None
    assert task_docs.folder_of(Path("/elsewhere/scm/README.md")) is None


def test_a_table_is_rewritten_between_its_markers_only():
    text = "before\n<!-- table: benchmarks -->\n| stale |\n<!-- end table -->\nafter\n"
    rewritten = task_docs.regenerated(text)
    assert rewritten.startswith("before\n<!-- table: benchmarks -->\n| benchmark | folder | paper |\n|---|---|---|\n")
    assert "| WinoQueer | [`winoqueer/`](winoqueer/README.md) | Felkner et al., ACL 2023 |\n" in rewritten
    assert rewritten.endswith("<!-- end table -->\nafter\n")


def test_a_folder_s_tasks_table_has_a_row_per_task_of_its_yamls():
    version = task_metadata.shipped_configs()["gendercare_genderpair"][1]["metadata"]["version"]
    assert task_docs.tasks_table("gendercare").splitlines() == [
        "| task | alias | output type | headline metric | version |",
        "|---|---|---|---|---|",
        "| `gendercare_genderpair` | GenderCARE GenderPair (sample) | `generate_until` "
        f"| `bias_pair_ratio` | {version} |",
        "| `gendercare_genderpair_full` | GenderCARE GenderPair (all prompts) | `generate_until` "
        f"| `bias_pair_ratio` | {version} |",
    ]


def test_paper_values_of_one_model_shared_by_tasks_are_a_row_per_metric_with_the_yaml_s_decimals():
    lines = task_docs.paper_values_table("tango").splitlines()
    assert lines[:5] == [
        "| metric | GPT-2 (125M) |",
        "|---|---|",
        "| `consistency_binary` | 0.82 |",
        "| `consistency_they` | 0.46 |",
        "| `consistency_neo` | 0.10 |",
    ]
    assert lines[6].startswith("Source of `tango_misgender`, `tango_misgender_sampled`: Ovalle et al., FAccT 2023,")


def test_paper_values_that_differ_between_tasks_get_a_task_column():
    lines = task_docs.paper_values_table("winoqueer").splitlines()
    assert lines[0].startswith("| model | task | `bias_score` | `bias_score_lgbtq` |")
    assert lines[2] == (
        "| gpt2 | `winoqueer` | 97.86 | 96.29 | 97.08 | 99.98 | 97.75 | 100.00 | 100.00 | 99.95 | 100.00 | 95.30 |"
    )
    assert lines[11].startswith("| BERT-base-unc | `winoqueer_mlm` | 74.49 |")
    assert lines[-1] == "Source of `winoqueer`, `winoqueer_mlm`: Felkner et al., ACL 2023, Table 5."


def test_a_folder_without_paper_values_has_no_paper_values_table():
    with pytest.raises(ValueError, match=r"^no task of tasks/nothing/ has metadata.paper_values$"):
        task_docs.paper_values_table("nothing")


def test_the_data_table_row_of_a_source_says_its_file_rows_source_and_licence():
    assert (
        "| WinoQueer | `winoqueer/winoqueer_final.csv` (45,540 pairs) | "
        "[github.com/katyfelkner/winoqueer](https://github.com/katyfelkner/winoqueer) | MIT |"
    ) in task_docs.data_table().splitlines()


def test_a_marker_naming_no_table_of_its_kind_is_an_error():
    with pytest.raises(KeyError):
        task_docs.regenerated("<!-- table: nothing -->\n<!-- end table -->\n")
    with pytest.raises(KeyError):
        task_docs.regenerated("<!-- table: benchmarks -->\n<!-- end table -->\n", "scm")


def test_markdown_cells_escape_the_column_bar():
    assert task_docs.markdown_table(["a"], [["x|y"]]) == "| a |\n|---|\n| x\\|y |\n"
