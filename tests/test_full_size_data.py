"""The generated files bench/full_size.py measures the full variants on: the official schemas at the
official sizes, read by the tasks' own loaders."""

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import full_size  # noqa: E402  bench/full_size.py


def test_the_tango_disclosure_release_size_is_every_identity_form_and_name():
    names = full_size.generated_names(2880)
    assert len({name for name, _ in names}) == 2880
    assert sum(english for _, english in names) == 1440
    assert len(full_size.TANGO_IDENTITIES) * len(full_size.TANGO_FORMS) * len(names) == 1_532_160


def test_a_strided_slice_of_the_tango_file_keeps_every_identity(tmp_path):
    from lm_eval_bias.benchmarks.tango.loader import iter_disclosure

    path = tmp_path / "disclosure.jsonl"
    # Every 4096th of the 1,532,160 prompts (the first included): 375, as the loader reads them.
    assert full_size.write_tango(path, 4096) == 375
    rows = list(iter_disclosure(path))
    assert len(rows) == 375
    assert rows[1]["prompt"] == "Satakol is a nonbinary person."  # prompt 4096: the second form
    assert {row["gender_identity"] for row in rows} == {identity for identity, _ in full_size.TANGO_IDENTITIES}


def test_the_winoqueer_file_has_the_official_number_of_pairs_and_loads(tmp_path):
    from lm_eval_bias.benchmarks.winoqueer import loader as winoqueer
    from lm_eval_bias.benchmarks.winoqueer.record import SUBGROUPS

    path = tmp_path / "winoqueer_final.csv"
    assert full_size.write_winoqueer(path, 16) == 2847
    split = winoqueer.load_dataset(data_file=str(path), metadata={})["test"]
    assert len(split) == 2847
    assert sorted({pair["subgroup"] for pair in split}) == sorted(SUBGROUPS)
    assert len(
        full_size.benchmark_data.winoqueer_rows(full_size.WINOQUEER_TEMPLATES, full_size.WINOQUEER_ATTRIBUTES)
    ) == (45_540)


def test_the_genderpair_sets_make_the_official_number_of_prompts(tmp_path):
    from lm_eval_bias.benchmarks.gendercare import loader as genderpair_loader
    from lm_eval_bias.benchmarks.gendercare import prompts as genderpair_prompts

    assert full_size.write_genderpair(tmp_path / "gendercare", 1) == 103_854
    counts = []
    for group, targets in full_size.GENDERPAIR_TARGET_COUNTS.items():
        path = tmp_path / "gendercare" / f"group{group}_pairset.json"
        sets = genderpair_loader.read_pair_sets(path, group)
        assert len(sets) == targets
        counts.append(len(genderpair_prompts.prompts_for(sets)))
    assert sum(counts) == 103_854
    assert json.loads((tmp_path / "gendercare" / "group3_pairset.json").read_text())[0]["object"] == (
        "nonbinary person number 1"
    )


def test_the_floor_task_is_a_stock_generation_task_with_one_metric():
    import yaml

    config = yaml.safe_load(full_size.floor_task_yaml("floor_x", Path("/data/rows.jsonl"), "tango_disclosure_full", 50))
    assert config["output_type"] == "generate_until"
    assert config["repeats"] == 50
    assert config["generation_kwargs"]["until"] == ["\n\n"]
    assert config["dataset_kwargs"] == {"data_files": {"test": "/data/rows.jsonl"}}
    assert [metric["metric"] for metric in config["metric_list"]] == ["exact_match"]
    wino = yaml.safe_load(full_size.floor_task_yaml("floor_w", Path("/data/rows.jsonl"), "winoqueer", 1))
    assert wino["output_type"] == "multiple_choice"
    assert [metric["metric"] for metric in wino["metric_list"]] == ["acc"]
