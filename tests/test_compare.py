"""Two runs compared document by document: documents paired by content, the paired test that fits each
metric, and refusals of runs that cannot be compared.

The runs are written here: invented documents scored by the tasks' own per-document functions (or in
their logged form), each results file recomputed from its samples file as lm-eval would write it.
"""

import copy
import hashlib
import json
import math

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from helpers import OFFICIAL_WINOQUEER
from lm_eval_bias import stats, task_metadata
from lm_eval_bias.benchmarks import winoqueer
from lm_eval_bias.errors import LmEvalBiasError
from lm_eval_bias.report.compare import compare_runs, comparison_json, proportion_scale
from lm_eval_bias.report.compare_inputs import pair_documents, read_run, setting_differences
from lm_eval_bias.report.recompute import recompute
from lm_eval_bias.report.values import ResultsError

DATE = "2026-01-02T03-04-05.678901"


def doc_hash(doc: dict) -> str:
    """lm-eval's ``doc_hash``: the sha256 of the document as JSON with an indent of 2."""
    return hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")).hexdigest()


def logged(doc: dict, metrics: dict, filter_name: str) -> dict:
    """One line of a samples file, as lm-eval logs it (``doc_id`` is set when the file is written)."""
    return {"doc": doc, "doc_hash": doc_hash(doc), "filter": filter_name, "metrics": list(metrics), **metrics}


def winoqueer_pair(pair: int, subgroup: str, stereotyped: bool) -> dict:
    """A WinoQueer pair scored by the task's own per-pair function: stereotyped or not."""
    doc = {
        "pair_id": str(pair),
        "subgroup": subgroup,
        "Gender_ID_x": subgroup,
        "Gender_ID_y": "Straight",
        "sent_x": f"{subgroup} people are {pair}.",
        "sent_y": f"Straight people are {pair}.",
        "subgroups_present": ["Gay", "Lesbian"],
    }
    return logged(doc, winoqueer.pair_metrics(doc, -10.0 if stereotyped else -12.0, -11.0), "none")


def winoqueer_samples(gay, lesbian, first_pair=0) -> list[dict]:
    """Pairs of two subgroups, ``gay`` and ``lesbian`` each a list of 0/1 outcomes (1: stereotyped)."""
    outcomes = [("Gay", outcome) for outcome in gay] + [("Lesbian", outcome) for outcome in lesbian]
    return [winoqueer_pair(first_pair + i, group, bool(o)) for i, (group, o) in enumerate(outcomes)]


def write_run(folder, task, samples, *, model="org/model-a", version=None, files=None, config=None):
    """A run's output folder: its samples file and the results file lm-eval would write from it."""
    folder.mkdir(parents=True, exist_ok=True)
    samples_path = folder / f"samples_{task}_{DATE}.jsonl"
    lines = [json.dumps({"doc_id": index, **sample}) for index, sample in enumerate(samples)]
    samples_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entry = recompute(samples_path)
    _, shipped = task_metadata.shipped_configs()[task]
    metadata = {key: value for key, value in shipped["metadata"].items() if key != "paper_values"}
    metadata["version"] = version if version is not None else metadata["version"]
    if files is not None:
        metadata["lm_eval_bias_data"] = {"official": all(f["official"] for f in files), "files": files}
    document = {
        "results": {task: {"alias": task, **entry}},
        "n-samples": {task: {"original": len(samples), "effective": len(samples)}},
        "config": {"model": "hf", "model_args": f"pretrained={model}", "limit": None, **(config or {})},
        "configs": {task: {"task": task, "metadata": metadata}},
        "versions": {task: metadata["version"]},
        "model_name": model,
    }
    results_path = folder / f"results_{DATE}.json"
    results_path.write_text(json.dumps(document), encoding="utf-8")
    return results_path


# Baseline: 6 of 10 Gay pairs and all 10 Lesbian pairs stereotyped. The candidate is no longer
# stereotyped on Gay pairs 0-3 and Lesbian pairs 18-19, and on no other pair changes.
BASE_GAY, BASE_LESBIAN = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0], [1] * 10
CAND_GAY, CAND_LESBIAN = [0, 0, 0, 0, 1, 1, 0, 0, 0, 0], [1] * 8 + [0, 0]


@pytest.fixture
def two_runs(tmp_path):
    baseline = write_run(tmp_path / "base", "winoqueer", winoqueer_samples(BASE_GAY, BASE_LESBIAN))
    candidate = write_run(
        tmp_path / "cand", "winoqueer", winoqueer_samples(CAND_GAY, CAND_LESBIAN), model="org/model-b"
    )
    return baseline, candidate


def by_metric(comparison):
    (task,) = comparison.tasks
    return {metric.metric: metric for metric in task.metrics}


def exact_mcnemar(base, cand) -> float:
    """statsmodels' exact McNemar p-value of two runs' 0/1 outcomes, an independent implementation."""
    table = [[0, 0], [0, 0]]
    for b, c in zip(base, cand):
        table[b][c] += 1
    return mcnemar(table, exact=True).pvalue


def test_winoqueer_pairs_give_mcnemar_in_percent_with_bh_across_subgroups(two_runs):
    comparison = compare_runs(*two_runs)
    assert (comparison.baseline, comparison.candidate) == ("org/model-a", "org/model-b")
    assert comparison.skipped == ()
    (task,) = comparison.tasks
    assert (task.task, task.version, task.headline_metric) == ("winoqueer", "1.2", "bias_score")
    assert (task.n_baseline, task.n_candidate, task.n_matched) == (20, 20, 20)
    assert task.setting_differences == (
        "config.model_args.pretrained: 'org/model-a' (baseline) vs 'org/model-b' (candidate)",
    )
    assert [m.metric for m in task.metrics] == ["bias_score", "bias_score_gay", "bias_score_lesbian"]
    metrics = by_metric(comparison)
    overall, gay, lesbian = metrics["bias_score"], metrics["bias_score_gay"], metrics["bias_score_lesbian"]
    assert (overall.subgroup, gay.subgroup, lesbian.subgroup) == (None, "gay", "lesbian")
    # 6 pairs went from stereotyped to not, none the other way: two-sided binomial, 2 * 0.5**6.
    assert (overall.baseline, overall.candidate, overall.n) == (80.0, 50.0, 20)
    assert overall.difference == pytest.approx(-30.0, abs=1e-12)
    assert overall.pvalue == overall.pvalue_bh == pytest.approx(0.03125, abs=1e-12)
    assert overall.pvalue == pytest.approx(exact_mcnemar(BASE_GAY + BASE_LESBIAN, CAND_GAY + CAND_LESBIAN))
    assert (gay.baseline, gay.candidate, gay.n) == (60.0, 20.0, 10)
    assert gay.difference == pytest.approx(-40.0, abs=1e-12)
    assert gay.pvalue == pytest.approx(0.125, abs=1e-12) == exact_mcnemar(BASE_GAY, CAND_GAY)
    assert (lesbian.baseline, lesbian.candidate) == (100.0, 80.0)
    assert lesbian.difference == pytest.approx(-20.0, abs=1e-12)
    assert lesbian.pvalue == pytest.approx(0.5, abs=1e-12) == exact_mcnemar(BASE_LESBIAN, CAND_LESBIAN)
    # Benjamini-Hochberg across the two subgroups: 0.125 * 2 / 1, 0.5 * 2 / 2.
    assert (gay.pvalue_bh, lesbian.pvalue_bh) == (pytest.approx(0.25), pytest.approx(0.5))
    # The interval is the paired one of the 0/1 outcomes, in percent.
    order = sorted(range(10), key=lambda i: winoqueer_pair(i, "Gay", True)["doc_hash"])
    expected = stats.paired_proportions([BASE_GAY[i] for i in order], [CAND_GAY[i] for i in order], scale=100.0)
    assert (gay.ci_lower, gay.ci_upper, gay.test) == (expected.ci_lower, expected.ci_upper, expected.test)
    assert gay.ci_lower < -40.0 < gay.ci_upper
    # Ideal 50: overall from 30 above to on it; Gay from 10 above to 30 below; Lesbian 50 to 30 above.
    assert overall.ideal == 50.0
    assert (overall.worsening, gay.worsening, lesbian.worsening) == pytest.approx((-30.0, 20.0, -20.0), abs=1e-12)
    assert gay.worsening_ci[0] <= 20.0 <= gay.worsening_ci[1]
    assert all(metric.note == "" for metric in task.metrics)


def test_identical_runs_give_no_difference_and_p_one(tmp_path):
    samples = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    comparison = compare_runs(
        write_run(tmp_path / "base", "winoqueer", samples), write_run(tmp_path / "again", "winoqueer", samples)
    )
    (task,) = comparison.tasks
    assert task.setting_differences == ()
    # Newcombe's interval is not [0, 0] without changed pairs: agreement on n pairs bounds the share that
    # could change only so far (wider for fewer pairs and for shares near 0 or 1).
    half_widths = {"bias_score": 13.191789819185837, "bias_score_gay": 17.559686268916728}
    half_widths["bias_score_lesbian"] = 27.753279986288916
    for metric in task.metrics:
        assert (metric.difference, metric.pvalue, metric.pvalue_bh) == (0.0, 1.0, 1.0), metric.metric
        assert (metric.ci_lower, metric.ci_upper) == pytest.approx(
            (-half_widths[metric.metric], half_widths[metric.metric]), rel=1e-12
        )
        assert metric.note == "no discordant pairs: p = 1"
        assert (metric.worsening, metric.worsening_ci) == (0.0, (0.0, 0.0))


def test_swapping_the_runs_negates_every_difference_and_keeps_every_p(two_runs):
    forward, backward = by_metric(compare_runs(*two_runs)), by_metric(compare_runs(*reversed(two_runs)))
    assert forward.keys() == backward.keys()
    for name, ahead in forward.items():
        behind = backward[name]
        assert (behind.baseline, behind.candidate) == (ahead.candidate, ahead.baseline)
        assert (behind.difference, behind.ci_lower, behind.ci_upper) == (
            -ahead.difference,
            -ahead.ci_upper,
            -ahead.ci_lower,
        ), name
        assert (behind.pvalue, behind.pvalue_bh, behind.n) == (ahead.pvalue, ahead.pvalue_bh, ahead.n), name
        assert behind.worsening == -ahead.worsening
        assert behind.worsening_ci == (-ahead.worsening_ci[1], -ahead.worsening_ci[0])


def test_reordered_and_partly_overlapping_runs_pair_by_content(tmp_path):
    baseline = write_run(tmp_path / "base", "winoqueer", winoqueer_samples(BASE_GAY, BASE_LESBIAN))
    # The candidate lacks Gay pairs 8 and 9, has three pairs the baseline lacks, and logs them in reverse.
    candidate_samples = winoqueer_samples(CAND_GAY, CAND_LESBIAN)
    candidate_samples = [s for s in candidate_samples if s["doc"]["pair_id"] not in ("8", "9")]
    candidate_samples += winoqueer_samples([1, 1, 1], [], first_pair=20)
    candidate = write_run(tmp_path / "cand", "winoqueer", candidate_samples[::-1])
    (task,) = compare_runs(baseline, candidate).tasks
    assert (task.n_baseline, task.n_candidate, task.n_matched) == (20, 21, 18)
    metrics = {metric.metric: metric for metric in task.metrics}
    assert (metrics["bias_score_gay"].baseline, metrics["bias_score_gay"].candidate) == (75.0, 25.0)
    assert metrics["bias_score_gay"].n == 8
    assert metrics["bias_score_gay"].pvalue == pytest.approx(0.125, abs=1e-12)
    assert metrics["bias_score"].n == 18
    assert metrics["bias_score"].difference == pytest.approx(100 * 10 / 18 - 100 * 16 / 18)


def test_a_document_given_twice_is_paired_by_its_order_among_identical_ones():
    first, second = winoqueer_pair(0, "Gay", True), winoqueer_pair(1, "Gay", False)
    again = dict(first, bias_score=0.0)  # the same document, logged a second time with another outcome
    pairing = pair_documents(
        [(1, first), (2, second), (3, again)], [(1, again), (2, first), (3, second)], "task winoqueer"
    )
    assert pairing.repeated == 2
    assert pairing.note == (
        "2 documents appear more than once in a run: paired by their order among the identical documents"
    )
    pairs = sorted((b["doc"]["pair_id"], b["bias_score"], c["bias_score"]) for b, c in pairing.pairs)
    assert pairs == [("0", 0.0, 100.0), ("0", 100.0, 0.0), ("1", 0.0, 0.0)]


def test_a_doc_hash_naming_two_documents_is_refused():
    first = winoqueer_pair(0, "Gay", True)
    edited = copy.deepcopy(first)
    edited["doc"]["sent_x"] = "Gay people are edited."
    with pytest.raises(ResultsError) as error:
        pair_documents([(1, first)], [(4, edited)], "task winoqueer (a, b)")
    assert str(error.value) == (
        f"task winoqueer (a, b): doc_hash {first['doc_hash'][:16]}... names another document in the baseline "
        "(line 1) than in the candidate (line 4); a file was edited: use the samples files --log_samples wrote"
    )


def test_runs_of_two_versions_are_refused_naming_both(tmp_path):
    samples = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    baseline = write_run(tmp_path / "base", "winoqueer", samples)
    candidate = write_run(tmp_path / "cand", "winoqueer", samples, version=1.3)
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate)
    assert str(error.value) == (
        f"task winoqueer: the baseline ({baseline}) ran version 1.2, the candidate ({candidate}) version 1.3; "
        "numbers of two versions of a task are not comparable: re-run the older one with the lm-eval-bias of "
        "the newer"
    )
    assert isinstance(error.value, LmEvalBiasError)  # the command exits 2


def test_runs_of_two_data_files_are_refused_naming_both(tmp_path):
    samples = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    mine = {"name": "winoqueer", "path": "/data/mine.csv", "sha256": "b" * 64, "rows": 20, "official": False}
    baseline = write_run(tmp_path / "base", "winoqueer", samples, files=[OFFICIAL_WINOQUEER])
    candidate = write_run(tmp_path / "cand", "winoqueer", samples, files=[mine])
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate)
    official = OFFICIAL_WINOQUEER["sha256"][:12]
    assert str(error.value) == (
        f"task winoqueer: the baseline ({baseline}) read winoqueer (sha256 {official}, official), the candidate "
        f"({candidate}) read winoqueer (sha256 bbbbbbbbbbbb, not official); the runs scored different data, so "
        "their documents are not one benchmark's: re-run one of them on the other's data file (--metadata "
        "data_file=... or data_dir=...)"
    )


def test_samples_that_are_not_of_their_results_file_are_refused(two_runs):
    baseline, candidate = two_runs
    samples = candidate.parent / f"samples_winoqueer_{DATE}.jsonl"
    lines = [json.dumps({"doc_id": i, **s}) for i, s in enumerate(winoqueer_samples(BASE_GAY, BASE_LESBIAN))]
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate)
    assert str(error.value) == (
        f"{samples}: bias_score on its 20 documents is 80.0, but the candidate ({candidate}) says 50.0, so the "
        "samples are not of that results file: pass the samples file written with it"
    )


def test_a_run_without_samples_is_refused_and_a_task_of_one_run_skipped(two_runs, tmp_path):
    baseline, candidate = two_runs
    (candidate.parent / f"samples_winoqueer_{DATE}.jsonl").unlink()
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate.parent)
    assert str(error.value) == (
        f"the candidate ({candidate}): no samples file of winoqueer beside it (samples_winoqueer_<date>.jsonl), so "
        "its documents cannot be paired; re-run the evaluation with --log_samples, or leave the task out of the "
        "comparison"
    )
    other = write_run(tmp_path / "other", "winoqueer_mlm", winoqueer_samples(BASE_GAY, BASE_LESBIAN))
    comparison = compare_runs(baseline, other)
    assert comparison.tasks == ()
    assert comparison.skipped == (
        f"winoqueer: only in the baseline ({baseline})",
        f"winoqueer_mlm: only in the candidate ({other})",
    )


def test_generation_settings_that_differ_are_named(tmp_path):
    samples = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    baseline = write_run(tmp_path / "base", "winoqueer", samples, config={"gen_kwargs": {"temperature": 0.7}})
    candidate = write_run(tmp_path / "cand", "winoqueer", samples, config={"gen_kwargs": {"temperature": 1.0}})
    differences = setting_differences(read_run(baseline, "baseline"), read_run(candidate, "candidate"), "winoqueer")
    assert differences == ("config.gen_kwargs.temperature: 0.7 (baseline) vs 1.0 (candidate)",)


def genderpair_document(index: int, choice) -> dict:
    """A GenderPair response in its logged form: biased (1.0), anti-biased (0.0) or undecided (None)."""
    doc = {"target": f"person {index}", "group": 1, "configuration": 1}
    metrics = {"undecided_rate": 1.0 if choice is None else 0.0}
    if choice is not None:
        metrics["bias_pair_ratio"] = choice
    return logged(doc, metrics, "scored")


def test_undecided_documents_are_left_out_and_said(tmp_path):
    base = [1.0, 1.0, 1.0, 0.0, None, 1.0, None]
    cand = [0.0, 0.0, 1.0, 0.0, 1.0, None, None]
    baseline = write_run(tmp_path / "b", "gendercare_genderpair", [genderpair_document(*d) for d in enumerate(base)])
    candidate = write_run(tmp_path / "c", "gendercare_genderpair", [genderpair_document(*d) for d in enumerate(cand)])
    (task,) = compare_runs(baseline, candidate).tasks
    (ratio,) = task.metrics
    assert (ratio.metric, ratio.n, ratio.baseline, ratio.candidate, ratio.difference) == (
        "bias_pair_ratio",
        4,
        0.75,
        0.25,
        -0.5,
    )
    assert ratio.pvalue == pytest.approx(0.5, abs=1e-12)  # two discordant pairs, both 1 -> 0
    # Ideal 0: the candidate's ratio is 0.5 closer to it.
    assert (ratio.ideal, ratio.worsening) == (0.0, -0.5)
    assert ratio.note == (
        "2 matched documents have a value in one run only (1 in the baseline, 1 in the candidate; undecided or "
        "empty in the other) and are left out; 1 matched document has no value in either run (undecided or empty "
        "in both)"
    )


def disclosure_document(index: int, toxicity: float) -> dict:
    """A TANGO disclosure prompt in its logged form: even prompts disclose a TGNB identity, odd a binary one."""
    tgnb = index % 2 == 0
    doc = {"template_idx": index, "identity": "nonbinary" if tgnb else "woman", "prompt": f"prompt {index}"}
    metrics = {"toxicity": toxicity, "toxicity_tgnb_minus_binary_gap": [0 if tgnb else 1, toxicity]}
    return logged(doc, metrics, "scored")


def test_a_gap_is_compared_by_the_task_s_own_aggregation(tmp_path):
    base = [0.9, 0.1, 0.8, 0.2, 0.7, 0.3]
    cand = [0.5, 0.1, 0.4, 0.2, 0.6, 0.3]
    baseline = write_run(tmp_path / "b", "tango_disclosure", [disclosure_document(i, t) for i, t in enumerate(base)])
    candidate = write_run(tmp_path / "c", "tango_disclosure", [disclosure_document(i, t) for i, t in enumerate(cand)])
    metrics = by_metric(compare_runs(baseline, candidate))
    toxicity, gap = metrics["toxicity"], metrics["toxicity_tgnb_minus_binary_gap"]
    # The documents are paired in the order of their hashes, whichever run lists them first.
    order = sorted(range(len(base)), key=lambda i: disclosure_document(i, 0.0)["doc_hash"])
    means = stats.paired_means([base[i] for i in order], [cand[i] for i in order])
    assert (toxicity.difference, toxicity.pvalue, toxicity.test) == (means.difference, means.pvalue, means.test)
    base_gap = [[i % 2, base[i]] for i in order]
    cand_gap = [[i % 2, cand[i]] for i in order]
    expected = stats.paired_statistic(base_gap, cand_gap, stats.difference_of_means)
    assert gap.subgroup == "tgnb_minus_binary_gap"
    assert gap.baseline == pytest.approx(0.6) and gap.candidate == pytest.approx(0.3)
    assert (gap.difference, gap.ci_lower, gap.ci_upper, gap.pvalue, gap.test) == (
        expected.difference,
        expected.ci_lower,
        expected.ci_upper,
        expected.pvalue,
        expected.test,
    )
    assert gap.pvalue_bh == gap.pvalue  # the only subgroup metric
    assert gap.ideal == 0.0 and gap.worsening == pytest.approx(-0.3)


def test_a_comparison_that_cannot_be_computed_is_null_with_its_reason_in_json(tmp_path):
    base = [0.9, 0.1, 0.8, 0.2]
    baseline = write_run(tmp_path / "b", "tango_disclosure", [disclosure_document(i, t) for i, t in enumerate(base)])
    # The candidate has the TGNB prompts only: no gap in either run's matched documents.
    candidate = write_run(tmp_path / "c", "tango_disclosure", [disclosure_document(i, 0.5) for i in (0, 2)])
    document = comparison_json(compare_runs(baseline, candidate))
    json.dumps(document, allow_nan=False)
    (task,) = document["tasks"]
    gap = next(metric for metric in task["metrics"] if metric["metric"] == "toxicity_tgnb_minus_binary_gap")
    assert gap["difference"] is None and gap["pvalue"] is None and gap["worsening"] is None
    assert gap["null_reasons"]["difference"] == gap["note"]
    assert gap["note"].startswith("not computable on these documents: ")
    toxicity = task["metrics"][0]
    assert (toxicity["metric"], toxicity["n"], toxicity["baseline"], toxicity["candidate"]) == (
        "toxicity",
        2,
        pytest.approx(0.85),
        0.5,
    )
    assert set(toxicity) == {
        "task",
        "metric",
        "subgroup",
        "baseline",
        "candidate",
        "difference",
        "ci_lower",
        "ci_upper",
        "pvalue",
        "pvalue_bh",
        "n",
        "test",
        "ideal",
        "worsening",
        "worsening_ci",
        "note",
        "null_reasons",
    }
    assert (task["n_baseline"], task["n_candidate"], task["n_matched"]) == (4, 2, 2)


def test_one_matched_document_gives_the_two_values_but_no_interval(tmp_path):
    baseline = write_run(
        tmp_path / "b", "tango_disclosure", [disclosure_document(i, t) for i, t in enumerate([0.9, 0.2])]
    )
    candidate = write_run(tmp_path / "c", "tango_disclosure", [disclosure_document(0, 0.5)])
    toxicity = by_metric(compare_runs(baseline, candidate))["toxicity"]
    assert (toxicity.baseline, toxicity.candidate, toxicity.difference, toxicity.n) == (0.9, 0.5, 0.5 - 0.9, 1)
    assert (toxicity.worsening, toxicity.worsening_ci) == (0.5 - 0.9, None)
    assert [toxicity.ci_lower, toxicity.ci_upper, toxicity.pvalue, toxicity.pvalue_bh] == [
        pytest.approx(math.nan, nan_ok=True)
    ] * 4
    assert toxicity.note == (
        "not computable on these documents: a paired bootstrap needs at least two matched documents, got n = 1"
    )


def test_proportions_are_recognised_on_the_metric_s_own_scale():
    assert proportion_scale("bias_score_gay", [0.0, 100.0, 100.0]) == 100.0
    assert proportion_scale("consistency_they", [0.0, 1.0]) == 1.0
    assert proportion_scale("consistency_they", [0.0, 0.4, 1.0]) is None
    assert proportion_scale("bias_score", [0.0, 1.0]) is None  # 1 is no outcome of a percentage
    assert proportion_scale("toxicity", [True, False]) is None


# --------------------------------------------------------------------------
# Where a run's files are, and runs as lm-eval writes them


def test_a_folder_with_several_runs_or_samples_files_is_refused(two_runs, tmp_path):
    baseline, candidate = two_runs
    (baseline.parent / "results_2026-01-03T00-00-00.000000.json").write_text(baseline.read_text(), encoding="utf-8")
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline.parent, candidate)
    assert str(error.value) == (
        f"{baseline.parent}: 2 results files under this folder ({baseline}, "
        f"{baseline.parent / 'results_2026-01-03T00-00-00.000000.json'}); the baseline is one run: pass its "
        "results_<date>.json"
    )
    other = tmp_path / "other"
    other.mkdir()
    moved = other / "results_2026-01-04T00-00-00.000000.json"
    moved.write_text(candidate.read_text(), encoding="utf-8")
    samples = candidate.parent / f"samples_winoqueer_{DATE}.jsonl"
    for date in ("2026-01-05T00-00-00.000000", "2026-01-06T00-00-00.000000"):
        (other / f"samples_winoqueer_{date}.jsonl").write_text(samples.read_text(), encoding="utf-8")
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, moved)
    assert str(error.value) == (
        f"the candidate ({moved}): 2 samples files of winoqueer beside it "
        "(samples_winoqueer_2026-01-05T00-00-00.000000.jsonl, samples_winoqueer_2026-01-06T00-00-00.000000.jsonl) "
        "and none of the results file's date; keep each run in its own folder, with the samples it wrote"
    )


def test_tasks_are_chosen_by_name_and_only_the_package_s_are_compared(two_runs):
    baseline, candidate = two_runs
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate, tasks=["winoqueer", "tango_misgender"])
    assert str(error.value) == f"tango_misgender: in neither {baseline} nor {candidate}; they have winoqueer"
    for path in two_runs:
        document = json.loads(path.read_text())
        for key in ("results", "configs", "n-samples", "versions"):
            document[key]["my_winoqueer"] = document[key].pop("winoqueer")
        document["configs"]["my_winoqueer"]["task"] = "my_winoqueer"
        path.write_text(json.dumps(document), encoding="utf-8")
    comparison = compare_runs(baseline, candidate)
    assert comparison.skipped == (
        "my_winoqueer: not a task of lm-eval-bias, so how its per-document values aggregate is not known",
    )


def test_runs_written_by_lm_eval_pair_and_swap_exactly(tmp_path, monkeypatch):
    """Two runs of a generation and a log-likelihood task, saved by lm-eval's own tracker; the candidate
    answers some requests otherwise."""
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    import fake_models
    import lm_eval_bias
    from benchmark_data import write_data_dir

    tasks = ["scm_prob_ratio", "tango_misgender"]
    data_dir = str(write_data_dir(tmp_path / "data"))
    manager = lm_eval_bias.task_manager(metadata={"data_dir": data_dir}, include_defaults=False)
    hashed = fake_models._unit_interval

    def salted(*parts):
        return hashed(*parts) if hashed("keep", *parts) < 0.6 else hashed("salt", *parts)

    folders = []
    for name, unit_interval in (("base", hashed), ("cand", salted)):
        monkeypatch.setattr(fake_models, "_unit_interval", unit_interval)
        output = lm_eval.simple_evaluate(
            model=fake_models.HashedLM(), tasks=tasks, log_samples=True, task_manager=manager, limit=48
        )
        tracker = EvaluationTracker(output_path=str(tmp_path / name))
        tracker.general_config_tracker.log_experiment_args(
            model_source="hf",
            model_args=f"pretrained=org/{name}",
            system_instruction=None,
            chat_template=None,
            fewshot_as_multiturn=False,
        )
        samples = output.pop("samples")
        tracker.save_results_aggregated(results=output, samples=samples)
        for task in tasks:
            tracker.save_results_samples(task_name=task, samples=samples[task])
        folders.append(tmp_path / name)
    forward, backward = compare_runs(*folders), compare_runs(*reversed(folders))
    assert [task.task for task in forward.tasks] == tasks
    ratio, misgender = forward.tasks
    assert (misgender.n_baseline, misgender.n_candidate, misgender.n_matched) == (48, 48, 48)
    assert (ratio.n_baseline, ratio.n_candidate, ratio.n_matched) == (35, 35, 35)
    assert misgender.metrics[0].test == "exact McNemar; Newcombe paired interval"
    assert ratio.metrics[0].test.endswith("; paired BCa bootstrap interval")
    assert any(metric.pvalue < 1 for metric in misgender.metrics)
    for ahead_task, behind_task in zip(forward.tasks, backward.tasks):
        for ahead, behind in zip(ahead_task.metrics, behind_task.metrics):
            assert (behind.difference, behind.ci_lower, behind.ci_upper) == (
                -ahead.difference,
                -ahead.ci_upper,
                -ahead.ci_lower,
            ) or ahead.note.endswith("no matched document has a value in both runs"), ahead.metric
            assert behind.pvalue == ahead.pvalue or ahead.pvalue != ahead.pvalue, ahead.metric
    json.dumps(comparison_json(forward), allow_nan=False)


def test_data_recorded_by_one_run_only_is_named(tmp_path):
    samples = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    baseline = write_run(tmp_path / "base", "winoqueer", samples, files=[OFFICIAL_WINOQUEER])
    candidate = write_run(tmp_path / "cand", "winoqueer", samples)
    differences = setting_differences(read_run(baseline, "baseline"), read_run(candidate, "candidate"), "winoqueer")
    official = OFFICIAL_WINOQUEER["sha256"][:12]
    recorded = f"'winoqueer (sha256 {official}, official)'"
    assert differences == (f"winoqueer data: {recorded} (baseline) vs absent (candidate)",)


def test_runs_declaring_other_ideal_values_are_refused(two_runs):
    baseline, candidate = two_runs
    document = json.loads(candidate.read_text())
    document["configs"]["winoqueer"]["metadata"]["ideal_values"] = {"bias_score": 0}
    candidate.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ResultsError) as error:
        compare_runs(baseline, candidate)
    assert str(error.value) == (
        f"task winoqueer: the baseline ({baseline}) and the candidate ({candidate}) declare different ideal values "
        "({'bias_score': 50.0, 'bias_score_<group>': 50.0} and {'bias_score': 0.0}); compare runs of one task "
        "definition"
    )


def test_runs_written_before_tasks_declared_ideal_values_take_the_package_s(two_runs):
    for path in two_runs:
        document = json.loads(path.read_text())
        del document["configs"]["winoqueer"]["metadata"]["ideal_values"]
        path.write_text(json.dumps(document), encoding="utf-8")
    metrics = by_metric(compare_runs(*two_runs))
    assert (metrics["bias_score"].ideal, metrics["bias_score_gay"].ideal) == (50.0, 50.0)
