"""One record per benchmark, in its own package: every registry of the package reads it, and it
covers every task, figure kind and data source."""

import importlib
import subprocess
import sys

import pytest

from lm_eval_bias import benchmark_records, benchmarks, task_metadata
from lm_eval_bias.benchmarks import records, sources
from lm_eval_bias.benchmarks.winoqueer import record as winoqueer_record
from lm_eval_bias.errors import ConfigurationError

RECORDS = records()


def test_the_benchmarks_in_the_order_of_the_report():
    assert list(RECORDS) == ["winoqueer", "tango_misgender", "tango_disclosure", "gendercare", "scm", "community"]
    assert [name for name, record in RECORDS.items() if record.name != name] == []


@pytest.mark.parametrize("package", benchmarks.PACKAGES)
def test_each_package_has_the_shape_of_a_benchmark(package):
    for part in ("record", "loader", "scoring", "task"):
        module = importlib.import_module(f"lm_eval_bias.benchmarks.{package}.{part}")
        assert module.__doc__, f"{module.__name__} says what it holds"
    assert {record.package for record in RECORDS.values() if record.package == package} == {package}


def test_reading_the_records_imports_no_task_code():
    """The registry reads each package's record alone: the report and the data commands do not
    pull in lm-eval or a benchmark's loader, scoring or task code."""
    code = (
        "import sys; from lm_eval_bias.benchmarks import records; records(); "
        "print([m for m in sorted(sys.modules) if m.split('.')[0] == 'lm_eval' "
        "or m.rsplit('.', 1)[-1] in ('loader', 'scoring', 'task')])"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found == "[]\n"


def test_each_figure_kind_belongs_to_one_benchmark_and_is_found_by_its_name():
    kinds = [kind for record in RECORDS.values() for kind in record.figures]
    assert len(kinds) == len(set(kinds)), "a figure kind belongs to one benchmark"
    for record in RECORDS.values():
        for kind, figures in record.figures.items():
            assert benchmarks.figure_kind(kind) is figures


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
    assert sources() == {source.name: source for record in RECORDS.values() for source in record.sources}
    assert sources()["winoqueer"] is winoqueer_record.WINOQUEER


def test_task_metadata_checks_a_tasks_figure_against_its_record(monkeypatch):
    metadata = {"benchmark": "scm", "headline_metric": "warmth", "figure": "a_new_plot"}
    with pytest.raises(ConfigurationError, match="use one of ratings_plane, shares_and_plane$"):
        task_metadata.identity(metadata, "t")
    extended = benchmark_records.BenchmarkRecord(**{**vars(RECORDS["scm"]), "figures": {"a_new_plot": None}})
    monkeypatch.setitem(records(), "scm", extended)
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
