"""A results entry renamed to another of our task names, its metadata stripped, is not read as that task."""

import json

from helpers import run_cli, winoqueer_results, write
from lm_eval_bias.report import results
from test_compare import disclosure_document, write_run


def renamed_as_winoqueer(folder):
    """A tango_disclosure run whose results entry, config, counts and version are renamed to winoqueer,
    its config's metadata stripped to its version."""
    path = write_run(folder, "tango_disclosure", [disclosure_document(index, 0.1 * (index % 5)) for index in range(12)])
    document = json.loads(path.read_text(encoding="utf-8"))
    for key in ("results", "n-samples", "configs", "versions"):
        document[key] = {"winoqueer": document[key]["tango_disclosure"]}
    document["results"]["winoqueer"]["alias"] = "winoqueer"
    config = document["configs"]["winoqueer"]
    config["task"] = "winoqueer"
    config["metadata"] = {"version": config["metadata"]["version"]}
    return write(folder / "results_renamed.json", document)


def test_an_entry_renamed_to_our_task_without_its_metadata_is_refused(tmp_path, capsys):
    path = renamed_as_winoqueer(tmp_path / "run")
    assert run_cli(["check", path, "--max", "winoqueer:toxicity=0.5"], capsys) == (
        2,
        "",
        f"lm-eval-bias check: {path}: results entry 'winoqueer' has no identity of its own "
        "(configs.winoqueer.metadata has no 'benchmark') and it reports toxicity, toxicity_tgnb_minus_binary_gap "
        "and none of our task winoqueer's metrics, so it is another task's entry renamed to 'winoqueer' and its "
        "numbers are not winoqueer's; give the entry the name of the task that was run, or re-run the evaluation "
        "with lm-eval-bias, which records each task's identity\n",
    )


def test_a_config_listing_another_tasks_metrics_is_refused(tmp_path, capsys):
    document = winoqueer_results()
    document["configs"]["winoqueer"]["metric_list"] = [{"metric": "consistency", "aggregation": "mean"}]
    path = write(tmp_path / "results_listed.json", document)
    assert run_cli(["check", path, "--max", "winoqueer=60"], capsys)[::2] == (
        2,
        f"lm-eval-bias check: {path}: results entry 'winoqueer' has no identity of its own "
        "(configs.winoqueer.metadata has no 'benchmark') and its config lists consistency "
        "(configs.winoqueer.metric_list), which our task winoqueer does not declare, so it is another task's "
        "entry renamed to 'winoqueer' and its numbers are not winoqueer's; "
        "give the entry the name of the task that was run, or re-run the evaluation with lm-eval-bias, which "
        "records each task's identity\n",
    )


def test_an_older_entry_of_our_task_is_still_read_as_ours_by_its_metrics(tmp_path):
    """A results file written before our tasks declared their identity: its metrics are winoqueer's."""
    (run,) = results.load_runs([write(tmp_path / "results_older.json", winoqueer_results())])
    assert run.identity("winoqueer").benchmark == "winoqueer"
    assert run.identity("winoqueer").headline_metric == "bias_score"
