"""One record per benchmark: every registry of the package reads it, and it covers every task,
figure kind and data source."""

import importlib

import pytest

from lm_eval_bias import benchmark_records, benchmarks, data, task_metadata
from lm_eval_bias.benchmark_records import RECORDS
from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.report import sections


def test_the_benchmarks_in_the_order_of_the_report():
    assert list(RECORDS) == ["winoqueer", "tango_misgender", "tango_disclosure", "gendercare", "scm", "community"]
    assert [name for name, record in RECORDS.items() if record.name != name] == []


@pytest.mark.parametrize("name", list(RECORDS))
def test_each_records_module_imports(name):
    module = importlib.import_module(f"lm_eval_bias.benchmarks.{RECORDS[name].module}")
    assert module.__name__ == f"lm_eval_bias.benchmarks.{RECORDS[name].module}"


def test_import_all_imports_each_records_module_once():
    assert benchmarks.MODULES == ("winoqueer", "tango", "gendercare", "scm", "community")


def test_each_figure_kind_has_a_drawer_and_each_drawer_a_figure_kind():
    kinds = [kind for record in RECORDS.values() for kind in record.figures]
    assert len(kinds) == len(set(kinds)), "a figure kind belongs to one benchmark"
    assert sorted(sections.DRAWERS) == sorted(kinds)


def test_each_shipped_tasks_benchmark_and_figure_have_a_record():
    named = {}
    for task, (path, config) in task_metadata.shipped_configs().items():
        metadata = config.get("metadata") or {}
        assert metadata.get("benchmark") in RECORDS, f"{path}: metadata benchmark {metadata.get('benchmark')!r}"
        assert metadata["figure"] in RECORDS[metadata["benchmark"]].figures, f"{path}: figure {metadata['figure']!r}"
        named.setdefault(metadata["benchmark"], set()).add(metadata["figure"])
    # ...and no record, nor figure kind, that no shipped task names
    assert named == {name: set(record.figures) for name, record in RECORDS.items()}


def test_each_data_source_belongs_to_one_record():
    owners = {}
    for record in RECORDS.values():
        for source in record.sources:
            owners.setdefault(source.name, []).append(record.name)
    assert owners == {
        "winoqueer": ["winoqueer"],
        "tango_misgendering": ["tango_misgender"],
        "tango_disclosure": ["tango_disclosure"],
        "gendercare_group1": ["gendercare"],
        "gendercare_group2": ["gendercare"],
        "gendercare_group3": ["gendercare"],
    }
    assert data.SOURCES == {source.name: source for record in RECORDS.values() for source in record.sources}
    assert data.WINOQUEER is benchmark_records.WINOQUEER


def test_task_metadata_checks_a_tasks_figure_against_its_record(monkeypatch):
    metadata = {"benchmark": "scm", "headline_metric": "warmth", "figure": "a_new_plot"}
    with pytest.raises(ConfigurationError, match="use one of ratings_plane, shares_and_plane$"):
        task_metadata.identity(metadata, "t")
    extended = benchmark_records.BenchmarkRecord(**{**vars(RECORDS["scm"]), "figures": ("a_new_plot",)})
    monkeypatch.setitem(RECORDS, "scm", extended)
    assert task_metadata.identity(metadata, "t").figure == "a_new_plot"


def test_the_download_command_lists_each_records_sources(capsys):
    from lm_eval_bias import cli

    with pytest.raises(SystemExit):
        cli._download(["--help"])
    listing = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    assert (
        "data files to fetch (default: all; WinoQueer: winoqueer; TANGO misgendering: tango_misgendering; "
        "TANGO gender disclosure: tango_disclosure; GenderCARE GenderPair: gendercare_group1, gendercare_group2, "
        "gendercare_group3)"
    ) in listing
