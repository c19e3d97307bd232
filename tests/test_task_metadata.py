"""Each task says what it is in its YAML metadata, and the report, leaderboard and check read it
from the results file: renamed copies keep their figure and headline metric, versions are
compared, and the paper's published values stand beside ours for the models it reports."""

import copy
import importlib.metadata
import json
import logging
from pathlib import Path

import lm_eval
import lm_eval.utils
import pytest
import yaml

import lm_eval_bias
from fake_models import ScriptedLM
from helpers import run_cli, winoqueer_results, write
from lm_eval_bias import options, task_metadata
from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.report import html as report_html
from lm_eval_bias.report import leaderboard, results, threshold_gate
from lm_eval_bias.report.gate_rules import parse_rule

# The report's headline metrics before tasks declared them (its table by task name): the
# metadata must say the same for every shipped task.
HEADLINES_BEFORE = {
    "winoqueer": "bias_score",
    "winoqueer_mlm": "bias_score",
    "tango_misgender": "consistency",
    "tango_misgender_sampled": "consistency",
    "tango_misgender_prob": "consistency",
    "tango_disclosure": "toxicity",
    "tango_disclosure_full": "toxicity",
    "gendercare_genderpair": "bias_pair_ratio",
    "gendercare_genderpair_full": "bias_pair_ratio",
    "scm_score": "warmth",
    "scm_score_prob": "warmth",
    "scm_mc": "warmth_pick",
    "scm_mc_prob": "warmth_pick",
    "scm_prob_ratio": "warmth_ratio",
    "scm_story": "refusal_rate",
    "community_probes": "sentiment",
    "community_probes_full": "sentiment",
    "community_probes_custom": "sentiment",
}


def test_every_shipped_task_declares_what_it_is():
    assert task_metadata.headline_metrics() == HEADLINES_BEFORE
    units = {task: task_metadata.shipped_identity(task).document_unit for task in HEADLINES_BEFORE}
    assert {task for task, unit in units.items() if unit == "pairs"} == {"winoqueer", "winoqueer_mlm"}
    assert {task for task, unit in units.items() if unit == "prompts"} == {
        task for task in HEADLINES_BEFORE if task.startswith("tango_")
    }
    figures = {task: task_metadata.shipped_identity(task).figure for task in HEADLINES_BEFORE}
    assert figures["tango_misgender_prob"] == "consistency_of_next_pronoun"
    assert {task for task, figure in figures.items() if figure == "ratings_plane"} == {"scm_score", "scm_score_prob"}


def test_the_package_has_one_version():
    assert importlib.metadata.version("lm-eval-bias") == lm_eval_bias.__version__


WINOQUEER_IDENTITY = {"benchmark": "winoqueer", "headline_metric": "bias_score", "figure": "bias_score_by_subgroup"}


@pytest.mark.parametrize(
    "metadata, message",
    [
        (
            {"benchmark": "winoquer", "headline_metric": "bias_score", "figure": "bias_score_by_subgroup"},
            "t: metadata benchmark 'winoquer' is none of ours; use one of winoqueer, tango_misgender, "
            "tango_disclosure, gendercare, scm, community",
        ),
        (
            {"benchmark": "winoqueer", "headline_metric": "bias_scor", "figure": "bias_score_by_subgroup"},
            "t: metadata headline_metric 'bias_scor' is not a metric of the task's metric_list (bias_score, tie_pct); "
            "name one of them",
        ),
        (
            {"benchmark": "scm", "headline_metric": "bias_score", "figure": "bias_score_by_subgroup"},
            "t: metadata figure 'bias_score_by_subgroup' is not a figure of scm; use one of ratings_plane, "
            "shares_and_plane",
        ),
        (
            {"benchmark": "winoqueer", "figure": "bias_score_by_subgroup"},
            "t: metadata 'headline_metric' is None; expected text, e.g. headline_metric: bias_score",
        ),
        (
            {
                "benchmark": "winoqueer",
                "headline_metric": "bias_score",
                "figure": "bias_score_by_subgroup",
                "paper_values": {"source": "Table 5", "rows": [{"model": "gpt2", "hf_ids": "gpt2", "values": {}}]},
            },
            "t: metadata paper_values.rows[0].hf_ids is 'gpt2'; expected a non-empty list of Hugging Face ids",
        ),
        (
            {**WINOQUEER_IDENTITY, "cluster_unit": "template"},
            "t: metadata cluster_unit is 'template'; expected an object {name: template, fields: [template_id]}",
        ),
        (
            {**WINOQUEER_IDENTITY, "cluster_unit": {"name": "template", "fields": []}},
            "t: metadata cluster_unit.fields is empty; expected an object {name: template, fields: [template_id]}",
        ),
        (
            {**WINOQUEER_IDENTITY, "cluster_unit": {"name": "template", "fields": "template"}},
            "t: metadata cluster_unit.fields is 'template'; expected a list of document fields",
        ),
        (
            {**WINOQUEER_IDENTITY, "no_verdict": [{"metrics": ["bias_score"], "share": "tie_pct"}]},
            "t: metadata no_verdict[0] is {'metrics': ['bias_score'], 'share': 'tie_pct'}; expected a list of "
            "{metrics: [...], share: tie_rate, happened: tied, counted: they are left out}",
        ),
    ],
)
def test_a_wrong_identity_is_one_message_naming_the_fix(metadata, message):
    with pytest.raises(ConfigurationError) as error:
        task_metadata.identity(metadata, "t", ("bias_score", "tie_pct"))
    assert str(error.value) == message


@pytest.mark.parametrize("key", ["run_level_doc_fields", "no_such_key"])
def test_a_key_the_metadata_does_not_declare_is_left_to_lm_eval(key):
    """``run_level_doc_fields``, which an older copy of a task's YAML may still carry, is read as any
    other key the metadata does not declare: no part of the task's identity, nor refused per run."""
    metadata = {**WINOQUEER_IDENTITY, key: ["subgroups_present"]}
    assert task_metadata.identity(metadata, "t") == task_metadata.identity(WINOQUEER_IDENTITY, "t")
    assert options.yaml_only([key]) == []


@pytest.mark.parametrize("key", ["benchmark", "headline_metric", "version", "plain_text"])
def test_a_task_s_own_keys_are_refused_in_metadata_for_the_run(key):
    """--metadata is merged into every task of the run over the YAML's own keys."""
    with pytest.raises(ConfigurationError) as error:
        lm_eval_bias.task_manager(metadata={key: "x"}, include_defaults=False)
    assert str(error.value) == (
        f"task_manager(metadata=...): {key!r} is set by each task's YAML metadata (it says what the task is), not "
        f"per run: it would override every task's own {key}. Fix: remove it; to change it, copy the task's YAML "
        f"and set {key} under its metadata:"
    )
    assert options.misspelt([key], ()) == []  # in a task's own metadata it is no misspelt option


# --------------------------------------------------------------------------
# Results files: a renamed copy, an older file, versions, the paper's values


def renamed(document, task, metadata=None):
    """The document with its winoqueer task renamed (as a YAML copy under another name would be)."""
    document = copy.deepcopy(document)
    for part in ("results", "n-samples", "higher_is_better", "configs"):
        document[part][task] = document[part].pop("winoqueer")
    document["configs"][task]["task"] = task
    if metadata is not None:
        document["configs"][task]["metadata"].update(metadata)
    return document


WINOQUEER_IDENTITY = {
    "benchmark": "winoqueer",
    "headline_metric": "bias_score",
    "figure": "bias_score_by_subgroup",
    "document_unit": "pairs",
}


def test_a_renamed_copy_gets_its_figure_and_headline_metric_from_its_metadata(tmp_path, capsys):
    path = write(tmp_path / "results_copy.json", renamed(winoqueer_results(), "my_probes_copy", WINOQUEER_IDENTITY))
    (run,) = results.load_runs([path])
    assert run.metric("my_probes_copy").name == "bias_score"
    assert run.base("my_probes_copy").status == "complete, 45,540 pairs"
    (section,) = report_html.build_sections([run])
    assert section.title == "WinoQueer: my_probes_copy"
    assert len(section.figures) == 1 and "WinoQueer bias score by subgroup" in section.figures[0].svg
    assert section.plotted == ["bias_score", "bias_score_lgbtq"]
    assert leaderboard.default_columns([run]) == [
        ("my_probes_copy", "bias_score"),
        ("my_probes_copy", "bias_score_lgbtq"),
    ]
    code, out, _ = run_cli(["check", path, "--max", "my_probes_copy=65"], capsys)
    assert code == 0 and "PASS  my_probes_copy <= 65" in out and "my_probes_copy:bias_score = 62" in out


def test_an_older_file_is_read_by_our_task_names_and_an_unknown_task_gets_a_table(tmp_path):
    """Results files written before the metadata keys: our tasks by name; any other name has no
    headline metric (its rule must name the metric) and a section without a figure."""
    ours = write(tmp_path / "results_ours.json", winoqueer_results())
    other = write(tmp_path / "results_other.json", renamed(winoqueer_results(), "winoqueer_copy"))
    run, copy_run = results.load_runs([ours, other])
    assert run.identity("winoqueer") == task_metadata.shipped_identity("winoqueer")
    assert copy_run.identity("winoqueer_copy") is None
    with pytest.raises(results.ResultsError, match="winoqueer_copy has no default metric"):
        copy_run.metric("winoqueer_copy")
    section = next(s for s in report_html.build_sections([copy_run]) if s.task == "winoqueer_copy")
    assert (section.title, section.figures) == ("winoqueer_copy", [])


def test_a_wrong_identity_in_a_results_file_is_a_results_error(tmp_path, capsys):
    path = write(
        tmp_path / "results_bad.json", renamed(winoqueer_results(), "copy", {**WINOQUEER_IDENTITY, "figure": "planes"})
    )
    code, _, err = run_cli(["report", path], capsys)
    assert code == 2
    assert (
        f"{path}: configs.copy: metadata figure 'planes' is not a figure of winoqueer; use one of "
        "bias_score_by_subgroup; correct it or re-run the evaluation"
    ) in err


def test_an_entry_renamed_by_hand_is_refused_naming_what_its_config_says(tmp_path, capsys):
    """WinoQueer's numbers under TANGO's name would pass TANGO's gate: each way of renaming the
    entry is caught by what its config (or lm-eval's own record of the entry) still says."""
    entry_only = winoqueer_results()
    entry_only["results"]["tango_misgender"] = entry_only["results"].pop("winoqueer")
    path = write(tmp_path / "results_entry.json", entry_only)
    code, out, err = run_cli(["check", path, "--max", "tango_misgender=70"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias check: {path}: results entry 'tango_misgender' has no config (configs.tango_misgender), "
        "while the config of 'winoqueer' has no results entry, so an entry was renamed and its numbers are not "
        "tango_misgender's; give the entry its task's name again, or re-run the evaluation\n"
    )
    with_config = renamed(winoqueer_results(), "tango_misgender")
    with_config["configs"]["tango_misgender"]["task"] = "winoqueer"
    with pytest.raises(results.ResultsError) as error:
        results.load_runs([write(tmp_path / "results_config.json", with_config)])
    assert str(error.value) == (
        f"{tmp_path}/results_config.json: results entry 'tango_misgender' was run as task 'winoqueer' "
        "(configs.tango_misgender.task says 'winoqueer'), so its numbers are not tango_misgender's; give the "
        "entry its task's name 'winoqueer' again, or re-run the evaluation"
    )
    everything = renamed(winoqueer_results(), "tango_misgender", WINOQUEER_IDENTITY)
    with pytest.raises(results.ResultsError) as error:
        results.load_runs([write(tmp_path / "results_all.json", everything)])
    assert str(error.value) == (
        f"{tmp_path}/results_all.json: results entry 'tango_misgender' is named as our tango_misgender task, but "
        "its config (configs.tango_misgender.metadata.benchmark) says 'winoqueer', so its numbers are not "
        "tango_misgender's; give the entry the name of the task that was run, or re-run the evaluation"
    )
    named = renamed(winoqueer_results(), "tango_misgender")
    named["results"]["tango_misgender"]["name"] = "winoqueer"  # lm-eval records each entry's task
    with pytest.raises(results.ResultsError, match=r"\(results.tango_misgender.name says 'winoqueer'\)"):
        results.load_runs([write(tmp_path / "results_named.json", named)])


def test_an_entry_under_its_own_name_and_a_group_without_config_are_read(tmp_path):
    document = renamed(winoqueer_results(), "my_copy", WINOQUEER_IDENTITY)
    document["results"]["my_copy"]["name"] = "my_copy"
    document["results"]["my_group"] = {"alias": "my group", "bias_score,none": 62.0}
    document["group_subtasks"] = {"my_group": ["my_copy"]}
    (run,) = results.load_runs([write(tmp_path / "results_group.json", document)])
    assert sorted(run.tasks) == ["my_copy", "my_group"]
    assert run.metric("my_copy").value == 62.0


def two_versions(tmp_path):
    old = winoqueer_results(model="org/model-a")
    new = winoqueer_results(model="org/model-b", score=55.0, ci=(53.0, 57.0))
    new["versions"] = {"winoqueer": 1.3}
    old["versions"] = {"winoqueer": 1.2}
    return write(tmp_path / "a" / "results_a.json", old), write(tmp_path / "b" / "results_b.json", new)


def test_check_refuses_results_of_two_versions_of_a_task(tmp_path, capsys):
    a, b = two_versions(tmp_path)
    code, out, err = run_cli(["check", a, b, "--max", "winoqueer=65"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"lm-eval-bias check: task winoqueer: results of different task versions: version 1.2 ({a}), "
        f"version 1.3 ({b}). A rule's limit holds for one definition of a task: re-run the older results "
        "with this version of lm-eval-bias, or check each version's files separately\n"
    )
    code, out, _ = run_cli(["check", b, "--max", "winoqueer=65"], capsys)
    assert code == 0


def test_the_leaderboard_marks_results_of_two_versions_side_by_side(tmp_path):
    a, b = two_versions(tmp_path)
    runs = results.load_runs([a, b])
    markdown = leaderboard.to_markdown(runs)
    lines = markdown.splitlines()
    assert lines[2] == ("| org/model-a | 62 [60, 64], N=45,540, version 1.2 | 70 [64, 75], N=1,200, version 1.2 |")
    assert lines[3] == ("| org/model-b | 55 [53, 57], N=45,540, version 1.3 | 70 [64, 75], N=1,200, version 1.3 |")
    assert (
        f"**Not comparable: task winoqueer has results of different task versions side by side: version 1.2 "
        f"({a}), version 1.3 ({b}); re-run the older ones with this version of lm-eval-bias**"
    ) in markdown
    assert "Not comparable: task winoqueer" in leaderboard.to_html(runs)
    rows = leaderboard.to_csv(runs).splitlines()
    assert rows[1].startswith(f"org/model-a,{a},1.2,45540,")
    # one version: no mark
    same = leaderboard.to_markdown(results.load_runs([b]))
    assert "version 1.3 |" not in same.splitlines()[2] and "Not comparable" not in same


@pytest.mark.parametrize(
    "model, shown",
    [
        ("gpt2", True),
        ("openai-community/gpt2", True),
        ("gpt2-large", False),  # not in the paper
        ("gpt2,peft=/adapters/mine", False),  # an adapter on gpt2 is another model
    ],
)
def test_the_paper_s_value_stands_beside_ours_for_a_model_it_reports(tmp_path, model, shown):
    document = winoqueer_results(model=model.split(",")[0], score=96.5, ci=(96.3, 96.7), lgbtq=(95.0, 94.0, 96.0))
    document["config"]["model_args"] = f"pretrained={model},dtype=float32"
    (run,) = results.load_runs([write(tmp_path / "results_gpt2.json", document)])
    (section,) = report_html.build_sections([run])
    header, rows = report_html.table_rows(section, section.plotted)
    markdown = report_html.to_markdown([run])
    if not shown:
        assert "paper" not in header and "the paper reports" not in markdown
        return
    assert header == ["metric", "value", "95% CI", "stderr", "N", "p BH", "paper"]
    assert rows == [
        ["bias_score", "96.5", "[96.3, 96.7]", "0.5", "45,540", "", "97.86"],
        ["bias_score_lgbtq", "95", "[94, 96]", "2", "1,200", "0.012", "96.29"],
    ]
    assert "the paper reports this model (Felkner et al., ACL 2023, Table 5, row gpt2)" in markdown
    assert "<td>97.86</td>" in report_html.to_html([run])


def test_the_masked_models_values_belong_to_winoqueer_mlm_only(tmp_path):
    """The paper scored BERT with Eq. 1 (winoqueer_mlm); its number is no reference for Eq. 2."""
    for task, expected in (("winoqueer_mlm", 74.49), ("winoqueer", None)):
        document = (
            renamed(winoqueer_results(model="bert-base-uncased"), task)
            if task != "winoqueer"
            else (winoqueer_results(model="bert-base-uncased"))
        )
        (run,) = results.load_runs([write(tmp_path / f"results_{task}.json", document)])
        row = run.paper_row(task)
        assert (row.values["bias_score"] if row else None) == expected


# --------------------------------------------------------------------------
# End to end: a YAML of one's own that includes ours under another name


def results_file(output, path: Path) -> Path:
    """The results file lm-eval's tracker would write (without the samples)."""
    document = {key: value for key, value in output.items() if key != "samples"}
    path.write_text(json.dumps(document, default=lm_eval.utils.handle_non_serializable), encoding="utf-8")
    return path


def test_a_copy_of_ours_under_another_name_is_reported_like_the_original(tmp_path, winoqueer_dir, caplog):
    release_file = str(winoqueer_dir.parent / "tango" / "misgendering_prompts.csv")
    prob = Path(lm_eval_bias.tasks_dir()) / "tango" / "tango_misgender_prob.yaml"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "my_pronoun_probe.yaml").write_text(f"include: {prob}\ntask: my_pronoun_probe\n")
    # its own metadata block replaces ours whole (lm-eval merges includes shallowly)
    (suite / "bare_probe.yaml").write_text(f"include: {prob}\ntask: bare_probe\nmetadata: {{version: 7}}\n")
    manager = lm_eval_bias.task_manager(str(suite), metadata={"data_file": release_file}, include_defaults=False)
    with caplog.at_level(logging.WARNING):
        output = lm_eval.simple_evaluate(
            model=ScriptedLM(), tasks=["my_pronoun_probe", "bare_probe"], task_manager=manager
        )
    assert output["configs"]["my_pronoun_probe"]["metadata"]["benchmark"] == "tango_misgender"
    shipped = yaml.safe_load(prob.read_text().replace("!function", "!!str"))["metadata"]["version"]
    assert output["versions"] == {"my_pronoun_probe": shipped, "bare_probe": 7}
    assert any("bare_probe" in record.message and "has no 'benchmark'" in record.message for record in caplog.records)
    (run,) = results.load_runs([results_file(output, tmp_path / "results_2026.json")])
    metric = run.metric("my_pronoun_probe")  # the headline metric, by the copy's metadata
    assert (metric.name, metric.value) == ("consistency", pytest.approx(1 / 6))
    assert run.base("my_pronoun_probe").status == "complete, 2,880 prompts"
    copy_section, bare_section = report_html.build_sections([run])
    assert copy_section.title == "TANGO misgendering: my_pronoun_probe"
    assert len(copy_section.figures) == 1
    assert "Share of prompts whose most likely next-sentence pronoun" in copy_section.figures[0].caption
    assert (bare_section.title, bare_section.figures) == ("bare_probe", [])
    assert ("my_pronoun_probe", "consistency") in leaderboard.default_columns([run])
    (outcome,) = threshold_gate.evaluate([parse_rule("my_pronoun_probe>=0.1")], [run])
    assert outcome.passed and outcome.message.startswith("my_pronoun_probe:consistency = 0.166667")


def test_the_cli_s_task_manager_gets_the_same_refusal_before_the_model_is_asked(winoqueer_dir):
    """lm-eval's CLI builds its own TaskManager from --metadata; preflight refuses the key."""
    from lm_eval.tasks import TaskManager

    from fake_models import CountingLM
    from lm_eval_bias.errors import PreflightError

    release_file = str(winoqueer_dir.parent / "tango" / "misgendering_prompts.csv")
    manager = TaskManager(
        include_path=lm_eval_bias.tasks_dir(),
        include_defaults=False,
        metadata={"version": 2, "data_file": release_file},
    )
    model = CountingLM()
    with pytest.raises(PreflightError) as error:
        lm_eval_bias.simple_evaluate(model=model, tasks=["tango_misgender_prob"], task_manager=manager)
    assert error.value.problems == [
        "--metadata: 'version' is set by each task's YAML metadata (it says what the task is), not per run: it would "
        "override every task's own version. Fix: remove it; to change it, copy the task's YAML and set version "
        "under its metadata:"
    ]
    assert model.requests == 0


def test_the_stock_lm_eval_route_refuses_the_keys_when_the_task_is_built():
    """``lm_eval --include_path`` has no preflight: each of our tasks compares its YAML's keys."""
    from lm_eval.tasks import TaskManager

    yaml_path = Path(lm_eval_bias.tasks_dir()) / "scm" / "scm_mc.yaml"
    manager = TaskManager(
        include_path=lm_eval_bias.tasks_dir(),
        include_defaults=False,
        metadata={"version": 9, "headline_metric": "refusal_rate"},
    )
    version = task_metadata.shipped_configs()["scm_mc"][1]["metadata"]["version"]
    with pytest.raises(ConfigurationError) as error:
        manager.load(["scm_mc"])
    assert str(error.value) == (
        f"scm_mc ({yaml_path}): metadata 'headline_metric' is 'refusal_rate', not 'warmth_pick' as its YAML says; "
        f"metadata 'version' is 9, not {version} as its YAML says: the run's --metadata (or a group's override) "
        "changed what the task is. Fix: remove headline_metric, version there; to change it, copy the task's YAML and "
        "set it under its metadata:"
    )
    # the same keys, unchanged, are no problem (lm-eval copies them into every task's config)
    same = TaskManager(include_path=lm_eval_bias.tasks_dir(), include_defaults=False, metadata={"version": version})
    assert list(same.load(["scm_mc"])["tasks"]) == ["scm_mc"]


def test_genderpair_s_paper_values_are_per_group_for_the_ids_of_its_appendix():
    sample, full = map(task_metadata.shipped_identity, ("gendercare_genderpair", "gendercare_genderpair_full"))
    assert sample.paper_rows == full.paper_rows and sample.paper_source == full.paper_source
    row = full.paper_row("meta-llama/Llama-2-7b-chat-hf")
    assert (row.model, row.values) == (
        "Llama2_7B",
        {"bias_pair_ratio_group1": 0.46, "bias_pair_ratio_group2": 0.46, "bias_pair_ratio_group3": 0.44},
    )
    assert full.paper_row("meta-llama/Llama-2-7b-hf") is None  # the paper ran the chat model
    assert full.paper_row("lmsys/vicuna-13b-v1.5") is None  # its id is misprinted in the paper: left out
    assert len(full.paper_rows) == 16


def test_a_cluster_unit_names_each_document_s_cluster_by_its_fields():
    metadata = {**WINOQUEER_IDENTITY, "cluster_unit": {"name": "template", "fields": ["template_idx", "ante"]}}
    found = task_metadata.identity(metadata, "t")
    assert (found.cluster_unit, found.cluster_fields) == ("template", ("template_idx", "ante"))
    assert found.cluster_of({"template_idx": 3, "ante": "Casey", "name": "x"}) == '[3, "Casey"]'
    assert found.cluster_of({"template_idx": 3}) is None
    plain = task_metadata.identity(WINOQUEER_IDENTITY, "t")
    assert (plain.cluster_unit, plain.cluster_fields, plain.cluster_of({"template_idx": 3})) == ("document", (), None)


def test_a_cluster_id_is_a_number_a_float_holds_exactly_and_the_same_in_every_process():
    metadata = {**WINOQUEER_IDENTITY, "cluster_unit": {"name": "template", "fields": ["template_idx", "ante"]}}
    found = task_metadata.identity(metadata, "t")
    # the top 52 bits of BLAKE2b('[3, "Casey"]'): fixed, not Python's per-process salted hash()
    assert found.cluster_id({"template_idx": 3, "ante": "Casey", "name": "x"}) == 4279408360513832
    assert found.cluster_id({"template_idx": 4, "ante": "Casey"}) == 2608681880780662
    assert float(4279408360513832) == 4279408360513832 < 2**52
    assert found.cluster_id({"template_idx": 3}) is None
    assert task_metadata.identity(WINOQUEER_IDENTITY, "t").cluster_id({"template_idx": 3}) is None


def test_every_shipped_task_built_from_templates_declares_its_unit_and_its_documents_carry_it(generated_data_dir):
    """Each declared unit's fields are fields of the documents the task's loader makes."""
    declared = {
        task: identity
        for task in task_metadata.shipped_configs()
        if (identity := task_metadata.shipped_identity(task)) is not None and identity.cluster_fields
    }
    assert sorted(declared) == [
        "community_probes",
        "community_probes_custom",
        "community_probes_full",
        "gendercare_genderpair",
        "gendercare_genderpair_full",
        "scm_prob_ratio",
        "scm_score",
        "scm_score_prob",
        "scm_story",
        "tango_disclosure",
        "tango_disclosure_full",
        "tango_misgender",
        "tango_misgender_prob",
        "tango_misgender_sampled",
        "winoqueer",
        "winoqueer_mlm",
    ]
    # which share counts the documents without a verdict, for the metrics of each family it names
    wq = task_metadata.shipped_identity("winoqueer")
    assert [(entry.share, head) for entry, head in [wq.no_verdict_share("bias_score_gay")]] == [
        ("tie_pct", "bias_score")
    ]
    assert wq.no_verdict_share("sent_x_score") is None
    from lm_eval_bias.benchmarks.community import loader as community_loader
    from lm_eval_bias.benchmarks.gendercare import loader as genderpair_loader
    from lm_eval_bias.benchmarks.scm import loader as scm_loader
    from lm_eval_bias.benchmarks.tango import loader as tango_loader
    from lm_eval_bias.benchmarks.winoqueer import loader as winoqueer

    data_dir = str(generated_data_dir)
    loaders = {
        "winoqueer": lambda: winoqueer.load_dataset(data_dir=data_dir, metadata={}),
        "tango_misgender": lambda: tango_loader.load_misgendering(data_dir=data_dir, metadata={}),
        "tango_disclosure": lambda: tango_loader.load_disclosure(data_dir=data_dir, metadata={}),
        "gendercare_genderpair": lambda: genderpair_loader.load_genderpair(data_dir=data_dir, metadata={}),
        "community_probes": lambda: community_loader.load_probes(metadata={}),
        "scm_score": lambda: scm_loader.load_score(metadata={}),
        "scm_prob_ratio": lambda: scm_loader.load_prob_ratio(metadata={}),
        "scm_story": lambda: scm_loader.load_story(metadata={}),
    }
    for task, load in loaders.items():
        doc = load()["test"][0]
        assert declared[task].cluster_of(doc) is not None, (task, sorted(doc))
