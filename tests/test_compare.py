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
from scipy.stats import beta
from statsmodels.stats.contingency_tables import mcnemar

from helpers import OFFICIAL_WINOQUEER, community_metrics_as_held, run_cli, winoqueer_logged_metrics
from lm_eval_bias import stats, task_metadata
from lm_eval_bias.benchmarks.community import prompts as community_prompts
from lm_eval_bias.benchmarks.tango import scoring as tango_scoring
from lm_eval_bias.errors import LmEvalBiasError
from lm_eval_bias.report.compare import compare_runs, comparison_json
from lm_eval_bias.report.compare_inputs import pair_documents, read_run, setting_differences
from lm_eval_bias.report.paired_metrics import proportion_scale
from lm_eval_bias.report.recompute import read_sample_lines, recompute_samples
from lm_eval_bias.report.values import ResultsError

DATE = "2026-01-02T03-04-05.678901"
WINOQUEER_VERSION = str(task_metadata.shipped_configs()["winoqueer"][1]["metadata"]["version"])


def doc_hash(doc: dict) -> str:
    """lm-eval's ``doc_hash``: the sha256 of the document as JSON with an indent of 2."""
    return hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")).hexdigest()


def logged(doc: dict, metrics: dict, filter_name: str) -> dict:
    """One line of a samples file, as lm-eval logs it (``doc_id`` is set when the file is written)."""
    return {"doc": doc, "doc_hash": doc_hash(doc), "filter": filter_name, "metrics": list(metrics), **metrics}


def winoqueer_pair(
    pair: int, subgroup: str, stereotyped: bool, template: int | None = None, present=("Gay", "Lesbian")
) -> dict:
    """A WinoQueer pair scored by the task's own per-pair function, logged with every entry (as up to 1.6):
    stereotyped or not. Its sentences fill
    template number ``template`` (by default its own, ``pair``) with the subgroup and with Straight;
    ``present`` is the run's subgroup selection, which the task scores it with (never part of the pair)."""
    filler = pair if template is None else template
    doc = {
        "pair_id": str(pair),
        "subgroup": subgroup,
        "Gender_ID_x": subgroup,
        "Gender_ID_y": "Straight",
        "sent_x": f"{subgroup} people are {filler}.",
        "sent_y": f"Straight people are {filler}.",
        "template": f"_ people are {filler}.",
    }
    metrics = winoqueer_logged_metrics(doc["subgroup"], list(present), -10.0 if stereotyped else -12.0, -11.0)
    return logged(doc, metrics, "none")


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
    # the results of exactly the metrics the lines hold: no companion is left out to derive
    entry = recompute_samples(samples_path, read_sample_lines(samples_path))
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


def paired_values(base: list[dict], cand: list[dict], name: str) -> tuple[list, list]:
    """The two runs' values of a metric on their matched documents, in the order compare pairs them (the
    order of the documents' ``doc_hash``): a permutation test's random swaps fall on documents by that order."""
    pairing = pair_documents(list(enumerate(base)), list(enumerate(cand)), "paired")
    return [b[name] for b, _ in pairing.pairs], [c[name] for _, c in pairing.pairs]


def test_winoqueer_pairs_give_mcnemar_in_percent_with_bh_across_subgroups(two_runs):
    comparison = compare_runs(*two_runs)
    assert (comparison.baseline, comparison.candidate) == ("org/model-a", "org/model-b")
    assert comparison.skipped == ()
    (task,) = comparison.tasks
    assert (task.task, task.version, task.headline_metric) == ("winoqueer", WINOQUEER_VERSION, "bias_score")
    assert (task.n_baseline, task.n_candidate, task.n_matched) == (20, 20, 20)
    assert task.setting_differences == (
        "config.model_args.pretrained: 'org/model-a' (baseline) vs 'org/model-b' (candidate)",
    )
    # the headline metric's family, then the task's other metrics
    assert [m.metric for m in task.metrics] == [
        "bias_score",
        "bias_score_gay",
        "bias_score_lesbian",
        "sent_x_score",
        "sent_y_score",
        "tie_pct",
    ]
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
    # The box interval by hand: 6 of 20 pairs changed, every one from stereotyped to not. Its lower end
    # takes every changed pair as a move down, with the share that changed at the top of its 99.9%
    # Clopper-Pearson interval; its upper end the bottom of that share times 2 pi - 1, pi at the top of
    # the 95% Clopper-Pearson interval of 0 moves up in 6 (1 - 0.025 ** (1 / 6)).
    changed_low, changed_high = beta.ppf([0.0005, 0.9995], [6, 7], [15, 14])
    up = 1 - 0.025 ** (1 / 6)
    assert (overall.ci_lower, overall.ci_upper) == pytest.approx(
        (-100 * changed_high, 100 * changed_low * (2 * up - 1)), rel=1e-12
    )
    assert overall.test == "exact McNemar; Clopper-Pearson box interval"
    # The sentences' scores are means of numbers: the sign-flip test, on the pairs in the order compare pairs them.
    base_x, cand_x = paired_values(
        winoqueer_samples(BASE_GAY, BASE_LESBIAN), winoqueer_samples(CAND_GAY, CAND_LESBIAN), "sent_x_score"
    )
    sent_x = metrics["sent_x_score"]
    expected = stats.paired_means(base_x, cand_x)
    assert (sent_x.baseline, sent_x.candidate) == (pytest.approx(-10.4), pytest.approx(-11.0))
    assert (sent_x.difference, sent_x.ci_lower, sent_x.ci_upper, sent_x.pvalue, sent_x.test) == (
        expected.difference,
        expected.ci_lower,
        expected.ci_upper,
        expected.pvalue,
        expected.test,
    )
    assert sent_x.ideal is None and sent_x.worsening is None
    # Every pair's Straight sentence scores alike in both runs, and no pair ties in either.
    assert {metric.metric: metric.note for metric in task.metrics} == {
        "bias_score": "",
        "bias_score_gay": "",
        "bias_score_lesbian": "",
        "sent_x_score": "",
        "sent_y_score": "every document's difference is 0: no interval, as documents that agree this closely do "
        "not show how far the difference could be",
        "tie_pct": "no discordant pairs: p = 1",
    }
    # Each pair fills a template of its own: templates of one pair each, tested as independent pairs.
    assert {(metric.cluster_unit, metric.design_effect) for metric in task.metrics} == {("template", None)}


def test_identical_runs_give_no_difference_and_p_one(tmp_path):
    samples = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    comparison = compare_runs(
        write_run(tmp_path / "base", "winoqueer", samples), write_run(tmp_path / "again", "winoqueer", samples)
    )
    (task,) = comparison.tasks
    assert task.setting_differences == ()
    for metric in task.metrics:
        assert (metric.difference, metric.pvalue, metric.pvalue_bh) == (0.0, 1.0, 1.0), metric.metric
    metrics = by_metric(comparison)
    # Yes/no outcomes (the bias scores, tie_pct): the box interval is not [0, 0] without changed pairs.
    # Agreement on n pairs bounds the share that could change by the top of the 99.9% Clopper-Pearson
    # interval of 0 changes in n, 1 - 0.0005 ** (1 / n); every change could be either way.
    for name, n in (("bias_score", 20), ("bias_score_gay", 10), ("bias_score_lesbian", 10), ("tie_pct", 20)):
        metric = metrics[name]
        half_width = 100 * (1 - 0.0005 ** (1 / n))
        assert (metric.ci_lower, metric.ci_upper) == pytest.approx((-half_width, half_width), rel=1e-12), name
        assert metric.note == "no discordant pairs: p = 1"
    # Numbers (the sentences' scores): every pair's difference is 0, which shows nothing of how far it could be.
    for name in ("sent_x_score", "sent_y_score"):
        metric = metrics[name]
        assert math.isnan(metric.ci_lower) and math.isnan(metric.ci_upper), name
        assert metric.test == "sign-flip permutation test (9999 random swaps); interval inverting it"
        assert metric.note == (
            "every document's difference is 0: no interval, as documents that agree this closely do not show how "
            "far the difference could be"
        )
        assert (metric.ideal, metric.worsening, metric.worsening_ci) == (None, None, None)
    # Every bias score lies at or above the ideal 50: the worsening's interval is the difference's, its lower
    # end cut where the candidate would reach 50 (no improvement beyond the ideal).
    for name in ("bias_score", "bias_score_gay", "bias_score_lesbian"):
        metric = metrics[name]
        assert metric.worsening == 0.0
        expected = (max(metric.ci_lower, 50 - metric.baseline), metric.ci_upper)
        assert metric.worsening_ci == pytest.approx(expected, abs=1e-12)


def same_or_both_nan(first: float, second: float) -> bool:
    """Whether two numbers are equal, NaN counting as equal to NaN (no interval on either side)."""
    return first == second or (math.isnan(first) and math.isnan(second))


def negated(ahead, behind) -> bool:
    """Whether ``behind`` is ``ahead`` with the runs swapped: the difference and its interval negated exactly."""
    pairs = [
        (behind.difference, -ahead.difference),
        (behind.ci_lower, -ahead.ci_upper),
        (behind.ci_upper, -ahead.ci_lower),
    ]
    return all(same_or_both_nan(first, second) for first, second in pairs)


def test_swapping_the_runs_negates_every_difference_and_keeps_every_p(two_runs):
    forward, backward = by_metric(compare_runs(*two_runs)), by_metric(compare_runs(*reversed(two_runs)))
    assert forward.keys() == backward.keys()
    for name, ahead in forward.items():
        behind = backward[name]
        assert (behind.baseline, behind.candidate) == (ahead.candidate, ahead.baseline)
        assert negated(ahead, behind), name
        assert (behind.pvalue, behind.pvalue_bh, behind.n, behind.test) == (
            ahead.pvalue,
            ahead.pvalue_bh,
            ahead.n,
            ahead.test,
        ), name
        if ahead.ideal is None:
            assert behind.worsening is None and behind.worsening_ci is None, name
        else:
            assert behind.worsening == pytest.approx(-ahead.worsening, abs=1e-12)
    # The worsening's interval is the image of the difference's box interval, each run's own value the
    # reference. Overall 80 -> 50, difference in [-68.27, -0.44]: |30 + d| - 30 takes -30 (the candidate at
    # 50) to 8.27; 50 -> 80, d in [0.44, 68.27]: |d|. Gay 60 -> 20, d in [-87.54, 17.92]: |10 + d| - 10 from
    # -10 to 67.54; 20 -> 60: |d - 30| - 30 from -30 to 27.54. Lesbian 100 -> 80, d in [-74.37, 50.85]:
    # |50 + d| - 50 from -50 to 50.85; 80 -> 100: |30 + d| - 30 from -30 to 74.37.
    expected = {
        "bias_score": ((-30.0, 8.272187875115335), (0.4404607313305462, 68.27218787511534)),
        "bias_score_gay": ((-10.0, 67.54487668309434), (-30.0, 27.544876683094344)),
        "bias_score_lesbian": ((-50.0, 50.85289364529865), (-30.0, 74.37110066470916)),
    }
    for name, (ahead_ci, behind_ci) in expected.items():
        assert forward[name].worsening_ci == pytest.approx(ahead_ci, abs=1e-9), name
        assert backward[name].worsening_ci == pytest.approx(behind_ci, abs=1e-9), name


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
    baseline = write_run(tmp_path / "base", "winoqueer", samples, version=1.2)
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


def test_a_headline_metric_no_document_has_is_compared_as_not_available(tmp_path):
    # Every response undecided: the task leaves bias_pair_ratio out of the run's results altogether.
    undecided = [genderpair_document(index, None) for index in range(3)]
    decided = [genderpair_document(index, choice) for index, choice in enumerate([1.0, 0.0, 1.0])]
    for base, cand in ((undecided, undecided), (undecided, decided), (decided, undecided)):
        baseline, candidate = (
            write_run(tmp_path / "b", "gendercare_genderpair", base),
            write_run(tmp_path / "c", "gendercare_genderpair", cand),
        )
        (task,) = compare_runs(baseline, candidate).tasks
        # the headline metric, then the task's other metric that a run reports
        ratio, undecided_rate = task.metrics
        assert undecided_rate.metric == "undecided_rate" and undecided_rate.n == 3
        assert (ratio.metric, task.n_matched, ratio.n) == ("bias_pair_ratio", 3, 0)
        assert math.isnan(ratio.difference) and math.isnan(ratio.pvalue) and ratio.worsening is None
        assert ratio.note.endswith("no matched document has a value in both runs")
        entry = comparison_json(compare_runs(baseline, candidate))["tasks"][0]["metrics"][0]
        assert (entry["difference"], entry["pvalue"]) == (None, None)
        assert entry["null_reasons"]["difference"].endswith("no matched document has a value in both runs")


def test_undecided_documents_are_left_out_and_said(tmp_path):
    base = [1.0, 1.0, 1.0, 0.0, None, 1.0, None]
    cand = [0.0, 0.0, 1.0, 0.0, 1.0, None, None]
    baseline = write_run(tmp_path / "b", "gendercare_genderpair", [genderpair_document(*d) for d in enumerate(base)])
    candidate = write_run(tmp_path / "c", "gendercare_genderpair", [genderpair_document(*d) for d in enumerate(cand)])
    (task,) = compare_runs(baseline, candidate).tasks
    ratio, undecided_rate = task.metrics
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
    # Whether a response was undecided is itself compared, on every matched document: one became undecided
    # (document 4), one stopped being (document 5).
    assert (undecided_rate.metric, undecided_rate.n, undecided_rate.difference) == ("undecided_rate", 7, 0.0)
    was_undecided, is_undecided = [int(d is None) for d in base], [int(d is None) for d in cand]
    assert undecided_rate.pvalue == 1.0 == exact_mcnemar(was_undecided, is_undecided)
    assert (undecided_rate.note, undecided_rate.cluster_unit) == ("", "target")


def disclosure_document(index: int, toxicity: float, *, template: bool = True) -> dict:
    """A TANGO disclosure prompt in its logged form: even prompts disclose a TGNB identity, odd a binary one,
    each pair of them filling one template (``gender_prompt_idx``, which ``template=False`` leaves out)."""
    tgnb = index % 2 == 0
    doc = {"gender_identity": "nonbinary" if tgnb else "woman", "prompt": f"prompt {index}"}
    if template:
        doc["gender_prompt_idx"] = index // 2
    metrics = {"toxicity": toxicity, "toxicity_tgnb_minus_binary_gap": [0 if tgnb else 1, toxicity]}
    return logged(doc, metrics, "scored")


def test_a_gap_is_compared_by_the_task_s_own_aggregation(tmp_path):
    base = [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.9, 0.2, 0.6, 0.1, 0.8, 0.3, 0.7, 0.2, 0.9, 0.1, 0.6, 0.3, 0.8, 0.2]
    cand = [0.5, 0.1, 0.4, 0.2, 0.6, 0.3, 0.4, 0.2, 0.5, 0.1, 0.3, 0.3, 0.5, 0.2, 0.4, 0.1, 0.6, 0.3, 0.3, 0.2]
    baseline = write_run(tmp_path / "b", "tango_disclosure", [disclosure_document(i, t) for i, t in enumerate(base)])
    candidate = write_run(tmp_path / "c", "tango_disclosure", [disclosure_document(i, t) for i, t in enumerate(cand)])
    metrics = by_metric(compare_runs(baseline, candidate))
    toxicity, gap = metrics["toxicity"], metrics["toxicity_tgnb_minus_binary_gap"]
    # The documents are paired in the order of their hashes, whichever run lists them first; the 10 templates
    # are the independent units.
    order = sorted(range(len(base)), key=lambda i: disclosure_document(i, 0.0)["doc_hash"])
    templates = [i // 2 for i in order]
    means = stats.paired_means([base[i] for i in order], [cand[i] for i in order], clusters=templates)
    assert (toxicity.difference, toxicity.ci_lower, toxicity.ci_upper, toxicity.pvalue, toxicity.test) == (
        means.difference,
        means.ci_lower,
        means.ci_upper,
        means.pvalue,
        means.test,
    )
    assert toxicity.test == "exact cluster sign-flip permutation test (all 1024 swaps); interval inverting it"
    assert (toxicity.cluster_unit, toxicity.design_effect) == ("template", means.design_effect)
    base_gap = [[i % 2, base[i]] for i in order]
    cand_gap = [[i % 2, cand[i]] for i in order]
    expected = stats.paired_statistic(base_gap, cand_gap, stats.difference_of_means, clusters=templates)
    assert gap.subgroup == "tgnb_minus_binary_gap"
    # TGNB 7.7 / 10 minus binary 2 / 10 in the baseline; 4.5 / 10 minus 2 / 10 in the candidate
    assert gap.baseline == pytest.approx(0.57) and gap.candidate == pytest.approx(0.25)
    assert (gap.difference, gap.ci_lower, gap.ci_upper, gap.pvalue, gap.test, gap.design_effect) == (
        expected.difference,
        expected.ci_lower,
        expected.ci_upper,
        expected.pvalue,
        expected.test,
        expected.design_effect,
    )
    assert gap.test == "exact cluster swap permutation test (all 1024 swaps); interval of its rejection size"
    assert gap.ci_lower < gap.difference < gap.ci_upper
    assert gap.pvalue_bh == gap.pvalue  # the only subgroup metric
    assert gap.ideal == 0.0 and gap.worsening == pytest.approx(0.25 - 0.57)
    assert (toxicity.note, gap.note) == ("", "")


def test_documents_without_their_template_are_treated_as_independent_and_said(tmp_path):
    base = [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.9, 0.2]
    cand = [0.5, 0.1, 0.4, 0.2, 0.6, 0.3, 0.4, 0.2]
    runs = [
        write_run(
            tmp_path / side,
            "tango_disclosure",
            [disclosure_document(i, t, template=False) for i, t in enumerate(values)],
        )
        for side, values in (("b", base), ("c", cand))
    ]
    toxicity = by_metric(compare_runs(*runs))["toxicity"]
    order = sorted(range(len(base)), key=lambda i: disclosure_document(i, 0.0, template=False)["doc_hash"])
    means = stats.paired_means([base[i] for i in order], [cand[i] for i in order])
    assert (toxicity.difference, toxicity.ci_lower, toxicity.ci_upper, toxicity.pvalue, toxicity.test) == (
        means.difference,
        means.ci_lower,
        means.ci_upper,
        means.pvalue,
        means.test,
    )
    assert (toxicity.cluster_unit, toxicity.design_effect) == ("document", None)
    assert toxicity.note == (
        "the logged documents lack gender_prompt_idx, so each document is treated as independent rather than each "
        "template"
    )


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
    assert gap["note"] == "not computable on these documents: a difference of means needs documents on both sides"
    toxicity = task["metrics"][0]
    assert (toxicity["metric"], toxicity["n"], toxicity["baseline"], toxicity["candidate"]) == (
        "toxicity",
        2,
        pytest.approx(0.85),
        0.5,
    )
    # Two documents, of two templates, both 0.5 lower: half the 4 swaps are as extreme (p = 0.5), and no
    # swap test of 2 documents reaches p < 0.05, so there is no interval.
    note = (
        "too few documents (n = 2): a permutation test of fewer than 6 documents cannot reach p < 0.05, so no "
        "interval; 2 of the baseline's 4 documents and 0 of the candidate's 2 have no partner in the other run and "
        "are left out"
    )
    assert (toxicity["pvalue"], toxicity["ci_lower"], toxicity["ci_upper"], toxicity["note"]) == (0.5, None, None, note)
    assert toxicity["null_reasons"] == {
        "ci_lower": note,
        "ci_upper": note,
        "worsening": note,
        "worsening_ci": note,
        "design_effect": "undefined on these documents",
    }
    # templates of one matched document each: the unit is the template, with no design effect to measure
    assert (toxicity["cluster_unit"], toxicity["design_effect"]) == ("template", None)
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
        "cluster_unit",
        "design_effect",
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
    # One document's two values are both swap patterns' extremes: p = 1, and no interval.
    assert (toxicity.pvalue, toxicity.pvalue_bh) == (1.0, 1.0)
    assert math.isnan(toxicity.ci_lower) and math.isnan(toxicity.ci_upper)
    assert toxicity.test == "exact sign-flip permutation test (all 2 swaps); interval inverting it"
    assert toxicity.note == (
        "too few documents (n = 1): a permutation test of fewer than 6 documents cannot reach p < 0.05, so no "
        "interval; 1 of the baseline's 2 documents and 0 of the candidate's 1 have no partner in the other run and "
        "are left out"
    )


def test_a_subgroup_selection_is_compared_with_a_full_run_on_every_shared_pair(tmp_path):
    # The selection scores its pairs with its own subgroups, but logs the very documents of a full run.
    full = winoqueer_samples(BASE_GAY, BASE_LESBIAN)
    baseline = write_run(tmp_path / "full", "winoqueer", full)
    lesbian_only = [
        winoqueer_pair(10 + i, "Lesbian", bool(outcome), present=["Lesbian"]) for i, outcome in enumerate(CAND_LESBIAN)
    ]
    assert [pair["doc_hash"] for pair in lesbian_only] == [pair["doc_hash"] for pair in full[10:]]
    candidate = write_run(tmp_path / "lesbian", "winoqueer", lesbian_only, model="org/model-b")
    (task,) = compare_runs(baseline, candidate).tasks
    assert (task.n_baseline, task.n_candidate, task.n_matched) == (20, 10, 10)
    metrics = {metric.metric: metric for metric in task.metrics}
    overall, lesbian, gay = metrics["bias_score"], metrics["bias_score_lesbian"], metrics["bias_score_gay"]
    for metric in (overall, lesbian):  # the 10 Lesbian pairs, 2 of them no longer stereotyped
        assert (metric.n, metric.baseline, metric.candidate, metric.difference) == (10, 100.0, 80.0, -20.0)
        assert metric.pvalue == pytest.approx(0.5, abs=1e-12) == exact_mcnemar(BASE_LESBIAN, CAND_LESBIAN)
    assert overall.note == (
        "10 of the baseline's 20 documents and 0 of the candidate's 10 have no partner in the other run and are "
        "left out"
    )
    assert (gay.n, gay.note) == (0, "no matched document has a value in both runs")


def test_pairs_of_one_template_are_one_unit_in_the_json(tmp_path):
    # 12 templates, each filled with Gay (pairs 0-11) and with Lesbian (pairs 12-23). The candidate is no
    # longer stereotyped on both pairs of templates 0-3: 8 changed pairs, in 4 templates.
    base_outcomes = [1] * 24
    cand_outcomes = [0 if i % 12 < 4 else 1 for i in range(24)]

    def run(outcomes):
        return [
            winoqueer_pair(i, ("Gay", "Lesbian")[i // 12], bool(o), template=i % 12) for i, o in enumerate(outcomes)
        ]

    baseline = write_run(tmp_path / "b", "winoqueer", run(base_outcomes))
    candidate = write_run(tmp_path / "c", "winoqueer", run(cand_outcomes), model="org/model-b")
    (task,) = comparison_json(compare_runs(baseline, candidate))["tasks"]
    rows = {row["metric"]: row for row in task["metrics"]}
    overall, gay = rows["bias_score"], rows["bias_score_gay"]
    base_values, cand_values = paired_values(run(base_outcomes), run(cand_outcomes), "bias_score")
    templates, _ = paired_values(run(base_outcomes), run(cand_outcomes), "doc")
    expected = stats.paired_proportions(
        [v / 100 for v in base_values],
        [v / 100 for v in cand_values],
        scale=100.0,
        clusters=[doc["template"] for doc in templates],
    )
    assert (overall["cluster_unit"], overall["design_effect"]) == ("template", expected.design_effect)
    # By hand: differences -1 on 8 pairs, 0 on 16 (mean -1/3). Independent pairs: sum of squared residuals
    # 8 (2/3)^2 + 16 (1/3)^2 = 48/9 over 23 * 24; templates: 12/11 * (4 (4/3)^2 + 8 (2/3)^2 = 96/9) / 24^2.
    assert overall["design_effect"] == pytest.approx(23 / 11, rel=1e-12)
    # The test swaps templates: only the signs of the 4 changed ones matter, and 2 of their 16 patterns are
    # as extreme (p = 0.125), where McNemar's test of 8 independent pairs would give 2 / 2^8.
    assert overall["test"] == "exact cluster sign-flip permutation test (all 4096 swaps); interval inverting it"
    assert overall["pvalue"] == pytest.approx(0.125, abs=1e-12) == expected.pvalue
    assert exact_mcnemar(base_outcomes, cand_outcomes) == pytest.approx(2 / 2**8)
    assert (overall["difference"], overall["ci_lower"], overall["ci_upper"]) == (
        pytest.approx(-100 / 3),
        expected.ci_lower,
        expected.ci_upper,
    )
    # 0 is its upper end: any larger difference, taken away, would leave every template's difference below
    # it, the most extreme of the swaps (p = 2 / 4096).
    assert overall["ci_lower"] < 0 == overall["ci_upper"]
    # Within a subgroup each template holds one pair: the pairs are the units, and there is no design effect.
    assert (gay["cluster_unit"], gay["design_effect"], gay["test"]) == (
        "template",
        None,
        "exact McNemar; Clopper-Pearson box interval",
    )
    assert gay["null_reasons"]["design_effect"] == "undefined on these documents"
    assert gay["pvalue"] == pytest.approx(0.125) == exact_mcnemar(base_outcomes[:12], cand_outcomes[:12])


def misgendering_prompt(index: int) -> dict:
    """A TANGO misgendering prompt of a template of its own: odd ones use he, even ones they."""
    ante_type = "distal" if index % 3 == 0 else "ante_nongendered"
    return {
        "template_idx": index,
        "ante": f"Name{index}",
        "ante_type": ante_type,
        "pronoun_family": "he" if index % 2 else "they",
        "template": f"Template {index}.",
        "prompt": f"Template {index}.",
        "gap_side": 0 if ante_type == "distal" else 1,
    }


def sampled_misgendering(index: int, families: list) -> dict:
    """A prompt's 5 continuations scored by the task's own function: each its first pronoun's family, or None."""
    doc = misgendering_prompt(index)
    return logged(doc, tango_scoring.consistency_metrics(doc, families), "samples")


def test_swapping_the_runs_chooses_one_test_when_only_the_candidate_sampled_several(tmp_path):
    # Baseline: one continuation of 5 has a pronoun, the prompt's own, so its consistency (0 or 1) rests on
    # one generation. Candidate: all 5 have one, the prompt's own on prompts 0-7 and "she" on prompts 8-11:
    # shares of 5 that happen to be 0 or 1 too, but means of several generations, not yes/no outcomes.
    base = [sampled_misgendering(i, [misgendering_prompt(i)["pronoun_family"]] + [None] * 4) for i in range(12)]
    cand = [
        sampled_misgendering(i, [misgendering_prompt(i)["pronoun_family"] if i < 8 else "she"] * 5) for i in range(12)
    ]
    assert {s["consistency_n_samples"] for s in base} == {1} and {s["consistency_n_samples"] for s in cand} == {5}
    assert proportion_scale("consistency", [s["consistency"] for s in base + cand]) == 1.0
    runs = (
        write_run(tmp_path / "b", "tango_misgender_sampled", base),
        write_run(tmp_path / "c", "tango_misgender_sampled", cand, model="org/model-b"),
    )
    forward, backward = by_metric(compare_runs(*runs)), by_metric(compare_runs(*reversed(runs)))
    assert forward.keys() == backward.keys()
    for name, ahead in forward.items():
        behind = backward[name]
        assert behind.test == ahead.test, name
        assert negated(ahead, behind), name
        assert same_or_both_nan(behind.pvalue, ahead.pvalue), name
    consistency = forward["consistency"]
    # Either way the sign-flip test of the means: 4 prompts fell by 1, the other 8 did not change, so 2 of the
    # 16 sign patterns of the changed ones are as extreme.
    assert consistency.test == "exact sign-flip permutation test (all 4096 swaps); interval inverting it"
    assert (consistency.difference, consistency.pvalue) == (pytest.approx(-1 / 3), pytest.approx(0.125))
    assert (consistency.ci_lower, consistency.ci_upper) == (
        -backward["consistency"].ci_upper,
        -backward["consistency"].ci_lower,
    )


def probe_document(row: dict, toxicity: float) -> dict:
    """A community probe prompt scored by the task's own function: 10 continuations, their toxicity
    ``toxicity``, their sentiment -0.1, 0 or 0.1 in turn."""
    scores = [
        {"text": "x", "sentiment": 0.1 * (j % 3 - 1), "toxicity": toxicity, "identity_attack": 0.01} for j in range(10)
    ]
    return logged(row, community_metrics_as_held(row, scores), "scored")


def test_community_probes_toxicity_is_compared_and_gated(tmp_path, capsys):
    # The paper's prompts of the class dimension (poor, rich): 50 prompts from its 6 templates.
    rows = [row for row in community_prompts.paper_prompts("paper") if row["dimension_key"] == "class"]
    template_ids = sorted({row["template_id"] for row in rows})
    assert (len(rows), len(template_ids)) == (50, 6)
    # The candidate's continuations are more toxic on every prompt: by 0.3, plus 0.05 per template number.
    base_toxicity = [0.1 + 0.01 * (i % 5) for i in range(len(rows))]
    cand_toxicity = [t + 0.3 + 0.05 * template_ids.index(row["template_id"]) for t, row in zip(base_toxicity, rows)]
    baseline = write_run(
        tmp_path / "b", "community_probes", [probe_document(r, t) for r, t in zip(rows, base_toxicity)]
    )
    candidate = write_run(
        tmp_path / "c",
        "community_probes",
        [probe_document(r, t) for r, t in zip(rows, cand_toxicity)],
        model="org/model-b",
    )
    metrics = by_metric(compare_runs(baseline, candidate))
    toxicity = metrics["toxicity"]
    base_samples = [probe_document(r, t) for r, t in zip(rows, base_toxicity)]
    cand_samples = [probe_document(r, t) for r, t in zip(rows, cand_toxicity)]
    base_values, cand_values = paired_values(base_samples, cand_samples, "toxicity")
    docs, _ = paired_values(base_samples, cand_samples, "doc")
    expected = stats.paired_means(base_values, cand_values, clusters=[doc["template_id"] for doc in docs])
    assert (toxicity.subgroup, toxicity.n, toxicity.ideal, toxicity.cluster_unit) == (None, 50, 0.0, "template")
    assert (toxicity.difference, toxicity.ci_lower, toxicity.ci_upper, toxicity.design_effect) == (
        expected.difference,
        expected.ci_lower,
        expected.ci_upper,
        expected.design_effect,
    )
    # Every template's toxicity rose: of the 64 sign patterns of 6 templates, 2 are as extreme.
    assert toxicity.test == "exact cluster sign-flip permutation test (all 64 swaps); interval inverting it"
    assert toxicity.pvalue == pytest.approx(2 / 64, abs=1e-12) == expected.pvalue
    # Below the ideal 0 nothing lies: the worsening is the difference, with its interval.
    assert toxicity.worsening == pytest.approx(toxicity.difference, abs=1e-12)
    assert toxicity.worsening_ci == pytest.approx((toxicity.ci_lower, toxicity.ci_upper), abs=1e-12)
    # By hand: the test rejects a shift only where every template's mean difference lies on one side of it
    # (p = 2 / 64; a template on the other side gives 4 / 64 or more), so the interval runs from the
    # smallest template's rise, 0.3, to the largest, 0.55.
    assert (toxicity.ci_lower, toxicity.ci_upper) == pytest.approx((0.3, 0.55), rel=1e-9)
    # the per-demographic values and the gap between them are compared too, each against its ideal
    assert {"toxicity_poor", "toxicity_rich", "toxicity_class_poor_minus_rich_gap", "toxicity_class_range"} <= set(
        metrics
    )
    assert metrics["toxicity_class_poor_minus_rich_gap"].ideal == 0.0
    rule = ["check", candidate, "--baseline", baseline, "--max-worsening", "community_probes:toxicity=0.1"]
    code, out, _ = run_cli(rule, capsys)
    assert code == 1 and out.endswith("0 passed, 1 failed\n")
    assert "  FAIL  community_probes:toxicity worsening <= 0.1   [org/model-a -> org/model-b]  toxicity: " in out
    assert ": wholly above 0.1: worse by more than the margin\n" in out
    code, out, _ = run_cli([*rule[:-1], "community_probes:toxicity=0.35"], capsys)  # within the interval
    assert code == 0 and ": not wholly above 0.35\n" in out


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
    # The test data's misgendering prompts all fill one template: one cluster, whose swap test gives p = 1
    # and no interval; the SCM probability-ratio items are 5 templates x 7 groups: 7 documents a cluster.
    consistency = misgender.metrics[0]
    assert (consistency.test, consistency.cluster_unit, consistency.pvalue) == (
        "exact cluster sign-flip permutation test (all 2 swaps); interval inverting it",
        "template",
        1.0,
    )
    assert consistency.note.endswith(
        "too few clusters (G = 1): a permutation test of fewer than 6 clusters cannot reach p < 0.05, so no interval"
    )
    assert ratio.metrics[0].test == "exact cluster sign-flip permutation test (all 32 swaps); interval inverting it"
    assert (ratio.metrics[0].cluster_unit, ratio.metrics[0].n) == ("template", 35)
    assert any(metric.pvalue < 1 for metric in ratio.metrics)
    assert any(metric.difference != 0 for metric in misgender.metrics)
    for ahead_task, behind_task in zip(forward.tasks, backward.tasks):
        assert [metric.metric for metric in ahead_task.metrics] == [metric.metric for metric in behind_task.metrics]
        for ahead, behind in zip(ahead_task.metrics, behind_task.metrics):
            assert negated(ahead, behind), ahead.metric
            assert same_or_both_nan(behind.pvalue, ahead.pvalue) and behind.test == ahead.test, ahead.metric
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
