"""One run split into shards (``lm-eval-bias shards``) and merged (``lm-eval-bias merge``).

End to end: WinoQueer (log-likelihoods), TANGO disclosure and GenderPair (generations, the first
through the classifier filter with :class:`fake_models.HashedDetoxify`) on the generated data, run
once whole and once as 3 shards with lm-eval's ``samples``, both written by lm-eval's own
``EvaluationTracker``; the merged shards must give every results value and every logged sample of
the whole run exactly. The fast tests build small shard files by hand: the shards files, and the
refusals (overlap, another model, task or lm-eval version, data file) and a partial merge.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import lm_eval
import pytest
from lm_eval.loggers import EvaluationTracker

import lm_eval_bias
from benchmark_data import write_data_dir
from fake_models import HashedDetoxify, HashedLM, _unit_interval
from helpers import OFFICIAL_WINOQUEER, run_cli, winoqueer_results, write
from lm_eval_bias import scorers, shards
from lm_eval_bias.report import compare, merge, results
from lm_eval_bias.report.run import date_text
from lm_eval_bias.report.values import shown
from lm_eval_bias.scorers.base import ScorerUnavailableError
from lm_eval_bias.scorers.filter import ClassifierFilter

# Two runs: GenderPair's whole run on the generated data has an interval bound the results reader
# refuses (undecided_rate_group_spread_ci_upper above 0.5), so the readers are checked on the others.
E2E_RUNS = {"readable": ("winoqueer", "tango_disclosure"), "genderpair": ("gendercare_genderpair",)}
NOT_ONE_RUN = (
    "these shards are not parts of one run; merge only shards run with the same model, lm-eval version, "
    "settings, task version and config and data"
)


# ---------------------------------------------------------------------------- end to end


class ChainRuleLM(HashedLM):
    """:class:`HashedLM` whose log-likelihoods obey the chain rule, as a real model's do: a
    continuation's is the sum of its characters' (each a multiple of 1/8 in (-1, 0], fixed by the text
    up to it), so a sentence prefix never scores above a shorter one. WinoQueer's scores are such
    differences, at most 0, and the readers refuse a document's score above 0."""

    def loglikelihood(self, requests, disable_tqdm=False):
        answers = []
        for request in requests:
            context, continuation = request.args[0], request.args[1]
            text = context + continuation
            steps = range(len(context), len(text))
            value = -sum(int(8 * _unit_interval("char", text[: end + 1])) for end in steps) / 8
            answers.append((value, _unit_interval("greedy", text) < 0.5))
        return answers


def run_and_write(manager, tasks, folder: Path, samples: dict | None, model=None) -> Path:
    """One ``simple_evaluate`` of ``tasks`` (``samples``: lm-eval's per-task doc indices) with ``model``
    (a :class:`ChainRuleLM` by default), written as ``lm-eval --output_path folder --log_samples``
    writes it; returns the results file."""
    tracker = EvaluationTracker(output_path=str(folder))
    output = lm_eval.simple_evaluate(
        model=model or ChainRuleLM(),
        tasks=list(tasks),
        log_samples=True,
        task_manager=manager,
        samples=samples,
        evaluation_tracker=tracker,
    )
    logged = output.pop("samples")
    tracker.save_results_aggregated(results=output, samples=logged)
    for task in output["configs"]:
        tracker.save_results_samples(task_name=task, samples=logged[task])
    (found,) = folder.rglob("results_*.json")
    return found


@pytest.fixture(scope="module")
def whole_and_shards(tmp_path_factory) -> dict[str, tuple[Path, list[Path]]]:
    """Per run of :data:`E2E_RUNS`: (the whole run's results file, the output folders of its 3 shards)."""
    root = tmp_path_factory.mktemp("merge")
    metadata = {"data_dir": str(write_data_dir(root / "data"))}
    runs = {}
    scorers.reset()
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(scorers.SCORERS, "detoxify", (lambda options: (), HashedDetoxify))
        manager = lm_eval_bias.task_manager(metadata=metadata, include_defaults=False)
        for name, tasks in E2E_RUNS.items():
            whole = run_and_write(manager, tasks, root / name / "whole", None)
            documents = json.loads(whole.read_text())["n-samples"]
            blocks = {task: shards.contiguous_blocks(documents[task]["original"], 3) for task in tasks}
            folders = [root / name / f"shard-{shard}-of-3" for shard in (1, 2, 3)]
            for shard, folder in enumerate(folders):
                run_and_write(manager, tasks, folder, {task: list(cut[shard]) for task, cut in blocks.items()})
            runs[name] = (whole, folders)
    scorers.reset()
    return runs


def read_samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.e2e
@pytest.mark.parametrize("run", list(E2E_RUNS))
def test_merged_shards_give_the_whole_runs_numbers_and_samples(run, whole_and_shards, tmp_path, capsys):
    whole, folders = whole_and_shards[run]
    code, out, err = run_cli(["merge", *folders, "--output_path", tmp_path / "merged"], capsys)
    assert code == 0, err
    (merged,) = (tmp_path / "merged").rglob("results_*.json")
    assert merged.parent.name == whole.parent.name  # the model's folder, as lm-eval names it
    expected, actual = json.loads(whole.read_text()), json.loads(merged.read_text())
    date = merged.stem.removeprefix("results_")
    assert out.splitlines() == [f"wrote {merged}"] + [
        f"wrote {merged.parent}/samples_{task}_{date}.jsonl" for task in expected["results"]
    ]
    # every value, standard error, interval, p-value and count, and what the readers take from the file
    for key in ("results", "n-samples", "higher_is_better", "versions", "n-shot", "configs", "task_hashes", "config"):
        assert actual[key] == expected[key], key
    assert list(actual["results"]) == list(expected["results"])
    assert actual["lm_eval_bias_merge"] == {
        "shards": [str(shard.path) for shard in merge.read_shards(folders)],
        "missing_documents": {},
    }
    for task in E2E_RUNS[run]:
        # every key of every logged sample (doc, responses, hashes, metric values), in the same order
        (whole_samples,) = whole.parent.glob(f"samples_{task}_*.jsonl")
        (merged_samples,) = merged.parent.glob(f"samples_{task}_*.jsonl")
        assert read_samples(merged_samples) == read_samples(whole_samples)
    assert "in no shard" not in err


@pytest.mark.e2e
def test_report_compare_and_check_read_the_merged_run_as_the_whole_run(whole_and_shards, tmp_path, capsys):
    whole, folders = whole_and_shards["readable"]
    run_cli(["merge", *folders, "--output_path", tmp_path / "merged"], capsys)
    (merged_run,) = results.load_runs([tmp_path / "merged"])
    (whole_run,) = results.load_runs([whole])
    assert merged_run.bases == whole_run.bases  # documents, provenance and partial reasons alike
    assert merged_run.tasks == whole_run.tasks
    comparison = compare.compare_runs(whole, tmp_path / "merged")
    assert [(task.task, task.n_matched) for task in comparison.tasks] == [("tango_disclosure", 32), ("winoqueer", 270)]
    assert all(metric.difference in (0.0, None) for task in comparison.tasks for metric in task.metrics)
    gate = ["--max", "winoqueer=100", "--min", "tango_disclosure:toxicity=0"]
    assert run_cli(["check", tmp_path / "merged", *gate], capsys)[:2] == run_cli(["check", whole, *gate], capsys)[:2]
    merged_report = run_cli(["report", tmp_path / "merged"], capsys)[1]
    whole_report = run_cli(["report", whole], capsys)[1].replace(str(whole), str(merged_run.path))
    # dated by its earliest shard, which ran after the whole run (the same minute, or not)
    assert merged_report == whole_report.replace(date_text(whole_run.date), date_text(merged_run.date))


@pytest.mark.e2e
def test_a_missing_shard_leaves_the_merged_run_partial(whole_and_shards, tmp_path, capsys):
    _, folders = whole_and_shards["readable"]
    code, _, err = run_cli(["merge", folders[0], folders[2], "--output_path", tmp_path / "merged"], capsys)
    assert code == 0
    assert "lm-eval-bias merge: winoqueer: 90 of 270 pairs are in no shard (doc_id 90-179); the merged run is " in err
    (run,) = results.load_runs([tmp_path / "merged"])
    assert run.bases["winoqueer"].partial[0] == "180 of 270 pairs evaluated"


class SilentLM(ChainRuleLM):
    """Replies nothing to every prompt: a run that reports only the share of empty replies."""

    def generate_until(self, requests, disable_tqdm=False):
        return ["" for _ in requests]


def test_shards_whose_every_reply_is_empty_merge(tmp_path, monkeypatch):
    # Their samples hold only empty_rate, which the results files report: they are the task's.
    metadata = {"data_dir": str(write_data_dir(tmp_path / "data"))}
    scorers.reset()
    monkeypatch.setitem(scorers.SCORERS, "detoxify", (lambda options: (), HashedDetoxify))
    manager = lm_eval_bias.task_manager(metadata=metadata, include_defaults=False)
    folders = [tmp_path / "shard-1", tmp_path / "shard-2"]
    for folder, documents in zip(folders, (range(0, 3), range(3, 6))):
        run_and_write(manager, ["tango_disclosure"], folder, {"tango_disclosure": list(documents)}, SilentLM())
    scorers.reset()
    outputs, _ = merge.merge(folders, tmp_path / "merged")
    merged = json.loads(outputs[0][1])["results"]["tango_disclosure"]
    assert merged["empty_rate,scored"] == 1.0
    assert merged["empty_rate_n,scored"] == 6
    assert "toxicity,scored" not in merged


# ---------------------------------------------------------------------------- the shards files


def test_blocks_are_contiguous_cover_every_document_once_and_differ_by_one_at_most():
    assert shards.contiguous_blocks(10, 3) == [range(0, 4), range(4, 7), range(7, 10)]
    assert shards.contiguous_blocks(9, 3) == [range(0, 3), range(3, 6), range(6, 9)]
    with pytest.raises(lm_eval_bias.errors.ConfigurationError, match=r"^--shards 4: the task has 3 documents"):
        shards.contiguous_blocks(3, 4)


def test_a_shard_s_documents_are_lm_eval_s_read_once_each(generated_data_dir):
    """Our tasks give lm-eval the documents its own ``doc_iterator`` gives, selecting ``--samples`` by
    index (lm-eval tests each document's index against the list) and reading each document once."""
    from lm_eval.api.task import ConfigurableTask

    manager = lm_eval_bias.task_manager(include_defaults=False, metadata={"data_dir": str(generated_data_dir)})
    task = manager.load(["winoqueer"])["tasks"]["winoqueer"]
    chosen = [7, 3, 4, 3, 30]
    for arguments in ({"limit": 5}, {}):
        ours = list(task.doc_iterator(**arguments))
        assert ours == list(ConfigurableTask.doc_iterator(task, **arguments)), arguments
    # --samples: each document's position in the selection, as lm-eval 0.4.13 gives it, which the samples
    # file's doc_id maps back through the selection (0.5.0.dev1's own iterator gives the document's index,
    # which its samples file maps through the selection all the same)
    docs = task.eval_docs
    assert list(task.doc_iterator(samples=chosen, rank=1, world_size=2)) == [(1, docs[4]), (3, docs[30])]
    first, again = list(task.doc_iterator(samples=chosen)), list(task.doc_iterator(samples=chosen))
    assert [position for position, _ in first] == [0, 1, 2, 3] and all(a[1] is b[1] for a, b in zip(first, again))
    count = len(task.eval_docs)
    with pytest.raises(lm_eval_bias.errors.ConfigurationError) as error:
        list(task.doc_iterator(samples=[0, count, -1]))
    assert str(error.value) == (
        f"winoqueer: --samples names documents -1, {count}, but the task has documents 0 to {count - 1}. "
        "Fix: make the --samples file for this task (lm-eval-bias shards winoqueer ...)"
    )


def test_a_zero_shot_task_holds_no_few_shot_copy_of_its_documents(generated_data_dir, tmp_path):
    # lm-eval lists every test document for its few-shot sampler, which a zero-shot task never calls.
    copy_with_examples = tmp_path / "tasks" / "my_prob.yaml"
    base = Path(lm_eval_bias.tasks_dir()) / "tango" / "tango_misgender_prob.yaml"
    write(copy_with_examples, f"include: {base}\ntask: my_prob\nnum_fewshot: 2\n")
    metadata = {"data_dir": str(generated_data_dir)}
    manager = lm_eval_bias.task_manager([str(copy_with_examples.parent)], metadata=metadata, include_defaults=False)
    built = manager.load(["tango_misgender_prob", "my_prob"])["tasks"]

    def pool(task) -> list:
        """The documents the task's few-shot sampler holds (lm-eval 0.4.13 builds it with the task,
        0.5.0.dev1 when first asked for it); none without a sampler."""
        sampler = getattr(task, "sampler", None)
        return [] if sampler is None else list(sampler.df)

    assert pool(built["tango_misgender_prob"]) == []
    assert len(pool(built["my_prob"])) == len(built["my_prob"].eval_docs) == 96


def test_shards_writes_one_samples_file_per_shard_and_prints_their_commands(generated_data_dir, tmp_path, capsys):
    metadata = json.dumps({"data_dir": str(generated_data_dir)})
    code, out, err = run_cli(["shards", "winoqueer", "--shards", "3", "--to", tmp_path, "--metadata", metadata], capsys)
    assert code == 0, err
    files = sorted(tmp_path.glob("*.json"))
    assert [path.name for path in files] == [f"winoqueer-shard-{k}-of-3.json" for k in (1, 2, 3)]
    assert [json.loads(path.read_text()) for path in files] == [
        {"winoqueer": list(range(0, 90))},
        {"winoqueer": list(range(90, 180))},
        {"winoqueer": list(range(180, 270))},
    ]
    assert out.splitlines() == [
        f"lm-eval-bias --model MODEL --model_args MODEL_ARGS --tasks winoqueer --samples {tmp_path}/"
        f"winoqueer-shard-{k}-of-3.json --output_path OUT/shard-{k}-of-3 --log_samples --metadata '{metadata}'"
        for k in (1, 2, 3)
    ]
    assert "then: lm-eval-bias merge OUT/shard-*-of-3 --output_path OUT/merged" in err


def test_shards_count_a_classifier_task_s_documents_without_loading_its_classifiers(monkeypatch):
    """Counting needs the documents alone: loading Detoxify (torch and the model: seconds and hundreds
    of MiB) is left to the run, which still loads it when it builds the task."""

    def unavailable(filter_):
        raise ScorerUnavailableError("the classifiers were loaded")

    monkeypatch.setattr(ClassifierFilter, "load_scorers", unavailable)
    assert shards.task_documents("community_probes_full") == {"community_probes_full": 266}
    # The run's --metadata decides the documents counted.
    assert shards.task_documents("community_probes", {"prompt_set": "grammatical"}) == {"community_probes": 310}
    with pytest.raises(ScorerUnavailableError, match="^the classifiers were loaded$"):
        lm_eval_bias.task_manager(include_defaults=False).load(["community_probes"])


# ---------------------------------------------------------------------------- refusals, by hand-made shards


def shard_files(folder: Path, doc_ids, document: dict | None = None, scores=None) -> Path:
    """A WinoQueer shard by hand: its results file and samples file (``bias_score`` per document, 100 or 0,
    from which a reader derives the sign tests the results file reports)."""
    document = copy.deepcopy(document or base_document())
    date = "2026-01-01T00-00-00.000000"
    samples = [
        {
            "doc_id": doc_id,
            "doc": {"pair": doc_id, "subgroup": "LGBTQ"},
            "filter": "none",
            "metrics": ["bias_score"],
            "bias_score": (scores or {}).get(doc_id, 100.0 * (doc_id % 3 == 0)),
            "doc_hash": f"d{doc_id}",
            "prompt_hash": "p",
            "target_hash": "t",
        }
        for doc_id in doc_ids
    ]
    write(folder / "model" / f"samples_winoqueer_{date}.jsonl", "".join(json.dumps(s) + "\n" for s in samples))
    return write(folder / "model" / f"results_{date}.json", document)


def base_document() -> dict:
    document = winoqueer_results(model="org/model-a", original=10, effective=10)
    document["config"]["model"] = "hf"
    document["versions"] = {"winoqueer": 1.5}
    document["lm_eval_version"] = "0.4.13"
    document["config"]["bootstrap_iters"] = 100000
    document["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"]["settings"] = {}
    return document


def test_shards_of_one_run_merge_in_document_order(tmp_path):
    scores = {doc_id: 100.0 * (doc_id < 3) for doc_id in range(10)}
    # given in another order than their documents': the merge puts them back in doc_id order
    later = shard_files(tmp_path / "b", range(5, 10), scores=scores)
    earlier = shard_files(tmp_path / "a", range(0, 5), scores=scores)
    outputs, merges = merge.merge([later, earlier], tmp_path / "merged")
    document = json.loads(outputs[0][1])
    assert document["results"]["winoqueer"]["bias_score,none"] == 30.0
    assert document["n-samples"] == {"winoqueer": {"original": 10, "effective": 10}}
    assert [json.loads(line)["doc_id"] for line in outputs[1][1].splitlines()] == list(range(10))
    assert outputs[0][0] == tmp_path / "merged" / "org__model-a" / outputs[0][0].name
    assert merges[0].missing == []


def test_overlapping_shards_are_refused_naming_both_files_and_a_document(tmp_path):
    first = shard_files(tmp_path / "a", range(0, 6))
    second = shard_files(tmp_path / "b", range(5, 10))
    with pytest.raises(results.ResultsError) as error:
        merge.merge([first, second], tmp_path / "merged")
    assert str(error.value) == (
        f"{second.parent}/samples_winoqueer_2026-01-01T00-00-00.000000.jsonl: doc_id 5 of winoqueer is also in "
        f"{first.parent}/samples_winoqueer_2026-01-01T00-00-00.000000.jsonl: the shards overlap, so the document "
        "would be counted twice; give each shard its own documents (lm-eval-bias shards writes disjoint "
        "--samples files)"
    )


@pytest.mark.parametrize(
    ("edit", "field", "here", "there"),
    [
        (
            lambda d: d["config"].update(model_args="pretrained=org/model-b"),
            "config.model_args.pretrained",
            "'org/model-b'",
            "'org/model-a'",
        ),
        (lambda d: d["versions"].update(winoqueer=1.6), "versions.winoqueer", "1.6", "1.5"),
        (lambda d: d.update(lm_eval_version="0.4.12"), "lm_eval_version", "'0.4.12'", "'0.4.13'"),
        (
            lambda d: d["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"]["files"][0].update(sha256="0" * 64),
            "configs.winoqueer.metadata.lm_eval_bias_data.files[0].sha256",
            shown("0" * 64),
            shown(OFFICIAL_WINOQUEER["sha256"]),
        ),
        (
            lambda d: d["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"].update(settings={"seed": 7}),
            "configs.winoqueer.metadata.lm_eval_bias_data.settings.seed",
            "7",
            "None",
        ),
    ],
    ids=["model", "task version", "lm-eval version", "data file", "option"],
)
def test_shards_of_different_runs_are_refused_naming_the_shard_and_the_field(tmp_path, edit, field, here, there):
    first = shard_files(tmp_path / "a", range(0, 5))
    other = base_document()
    edit(other)
    second = shard_files(tmp_path / "b", range(5, 10), other)
    with pytest.raises(results.ResultsError) as error:
        merge.merge([first, second], tmp_path / "merged")
    assert str(error.value) == f"{second}: {field} is {here}, but {there} in {first}: {NOT_ONE_RUN}"


def test_a_shard_run_with_limit_or_without_its_samples_is_refused(tmp_path):
    first = shard_files(tmp_path / "a", range(0, 5))
    limited = base_document()
    limited["config"]["limit"] = 5
    second = shard_files(tmp_path / "b", range(5, 10), limited)
    with pytest.raises(results.ResultsError) as error:
        merge.merge([first, second], tmp_path / "merged")
    assert str(error.value) == (
        f"{second}: config.limit is 5: a shard evaluates the documents its --samples file names, and --limit would "
        "leave some out; re-run it with --samples and without --limit"
    )
    second = shard_files(tmp_path / "c", range(5, 10))
    next(second.parent.glob("samples_*.jsonl")).unlink()
    with pytest.raises(results.ResultsError) as error:
        merge.merge([first, second], tmp_path / "merged")
    assert str(error.value) == (
        f"{second}: no samples file of winoqueer beside it (samples_winoqueer_2026-01-01T00-00-00.000000.jsonl), and "
        "the merge aggregates the documents again from it; run every shard with --log_samples and keep its samples "
        "beside its results"
    )


def test_shards_of_a_task_not_of_lm_eval_bias_are_refused(tmp_path):
    document = base_document()
    for key in ("results", "configs", "n-samples", "higher_is_better", "versions"):
        document[key] = {"arc_easy": document[key]["winoqueer"]}
    document["configs"]["arc_easy"]["task"] = "arc_easy"
    first = shard_files(tmp_path / "a", range(0, 5), document)
    second = shard_files(tmp_path / "b", range(5, 10), document)
    with pytest.raises(results.ResultsError) as error:
        merge.merge([first, second], tmp_path / "merged")
    assert str(error.value) == (
        f"{first}: arc_easy is not a task of lm-eval-bias, whose aggregations the merge knows only for its own "
        "tasks; shard only lm-eval-bias's tasks, and run others whole, in a run of their own"
    )


def test_where_the_data_file_lay_and_the_batch_size_may_differ(tmp_path):
    first = shard_files(tmp_path / "a", range(0, 5))
    other = base_document()
    other["configs"]["winoqueer"]["metadata"]["lm_eval_bias_data"]["files"][0]["path"] = "/scratch/winoqueer.csv"
    other["config"]["model_args"] += ",batch_size=64,device=cuda:1"
    second = shard_files(tmp_path / "b", range(5, 10), other)
    _, merges = merge.merge([first, second], tmp_path / "merged")
    assert merges[0].n_samples == {"original": 10, "effective": 10}


def test_missing_documents_make_the_merged_run_partial_and_are_listed(tmp_path, capsys):
    first = shard_files(tmp_path / "a", range(0, 4))
    second = shard_files(tmp_path / "b", [6, 8])
    code, out, err = run_cli(["merge", first, second, "--output_path", tmp_path / "merged"], capsys)
    assert code == 0
    assert err.splitlines()[-1] == (
        "lm-eval-bias merge: winoqueer: 4 of 10 pairs are in no shard (doc_id 4-5, 7, 9); the merged run is "
        "partial: run the missing documents with --samples and merge again"
    )
    (run,) = results.load_runs([tmp_path / "merged"])
    assert run.bases["winoqueer"].partial[0] == "6 of 10 pairs evaluated"
    (path,) = (tmp_path / "merged").rglob("results_*.json")
    assert json.loads(path.read_text())["lm_eval_bias_merge"]["missing_documents"] == {"winoqueer": "4-5, 7, 9"}
