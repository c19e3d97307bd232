"""TANGO disclosure's, GenderPair's and the community probes' views (task versions 1.7, 2.8 and 1.8): each
document holds its overall values once, and the per-identity (per-group, per-demographic), spread (range), gap
and configuration entries, the same numbers, are derived from them and the document's labels, by the run
(``derived_lists``) and by the readers of samples files (``derived_entries``), exactly as the documents held
them before."""

import functools
import json
from pathlib import Path

import pytest

from lm_eval_bias import companions, harness, stats, task_metadata
from lm_eval_bias.aggregations import aggregation_for
from lm_eval_bias.benchmarks.community import scoring as community_scoring
from lm_eval_bias.benchmarks.community import views as community_views
from lm_eval_bias.benchmarks.gendercare import scoring as genderpair_scoring
from lm_eval_bias.benchmarks.gendercare import views as genderpair_views
from lm_eval_bias.benchmarks.tango import scoring as tango_scoring
from lm_eval_bias.benchmarks.tango import views as tango_views
from lm_eval_bias.errors import ConfigurationError
from lm_eval_bias.metric_keys import with_interval, with_test
from lm_eval_bias.report.recompute import declared_aggregations, read_sample_lines, recompute, reported_metrics
from lm_eval_bias.report.values import ResultsError

DATE = "2026-01-01T00-00-00.000000"
TANGO_IDENTITIES = (("nonbinary", 0), ("woman", 1), ("two-spirit", -1), ("Gender Fluid", 0), ("man", 1))


def tango_documents() -> list[tuple[dict, dict]]:
    """Prompts of five identities (one outside the gap), two continuations each, some empty: each prompt's
    document and the metrics the task scores it with."""
    documents = []
    for index in range(12):
        identity, side = TANGO_IDENTITIES[index % len(TANGO_IDENTITIES)]
        doc = {"gender_prompt_idx": index % 4, "gender_identity": identity, "gap_side": side}
        scored = {"text": "x", "toxicity": (index * 37 % 100) / 100, "sentiment": (index * 13 % 21 - 10) / 10}
        empty = {"text": "", "empty": True}
        generations = [empty, empty] if index == 7 else [scored, empty if index % 3 == 0 else scored]
        documents.append((doc, tango_scoring.disclosure_metrics(doc, generations)))
    return documents


def genderpair_documents() -> list[tuple[dict, dict]]:
    """Prompts of the three groups in several configurations, some undecided and one empty: each prompt's
    document and the metrics the task scores it with."""
    documents = []
    for index in range(14):
        doc = {
            "group": 1 + index % 3,
            "target": f"target {index % 5}",
            "biased": "ashamed",
            "anti_biased": "proud",
            "configuration": 1 + index % 4,
        }
        text = ("A {proud} person.", "An {ashamed} person.", "Nothing.")[index % 3 if index % 2 else 1]
        scored = {"text": text, "toxicity": (index * 29 % 100) / 100, "sentiment": (index * 7 % 9 - 4) / 4}
        if index == 5:
            scored = {"text": "", "empty": True}
        documents.append((doc, genderpair_scoring.genderpair_metrics(doc, scored)))
    return documents


COMMUNITY_DEMOGRAPHICS = (("woman", "gender"), ("man", "gender"), ("poor", "class"), ("transgender", "gender"))
COMMUNITY_MEMBERS = {"gender": ["woman", "man", "transgender"], "class": ["poor"]}


def community_documents() -> list[tuple[dict, dict]]:
    """Prompts of four demographics in two dimensions (one of a single demographic), three continuations
    each, some empty and one wholly empty: each prompt's document and the metrics the task scores it with."""
    documents = []
    for index in range(13):
        demographic, dimension = COMMUNITY_DEMOGRAPHICS[index % len(COMMUNITY_DEMOGRAPHICS)]
        doc = {
            "prompt": f"prompt {index}",
            "template_id": f"T{1 + index % 3}",
            "demographic_key": demographic,
            "dimension_key": dimension,
            "dimension_demographics": COMMUNITY_MEMBERS[dimension],
        }
        generations = [
            {
                "empty": False,
                "sentiment": (index * 7 + j) % 9 / 4 - 1,
                "toxicity": (index * 3 + j) % 10 / 10,
                "identity_attack": (index + j) % 5 / 5,
            }
            for j in range(3)
        ]
        if index % 4 == 1:
            generations[2] = {"empty": True}
        if index == 6:
            generations = [{"empty": True}] * 3
        documents.append((doc, community_scoring.probe_values(doc, generations)))
    return documents


def community_labels(doc: dict) -> tuple:
    return (doc["demographic_key"], doc["dimension_key"], doc["dimension_demographics"])


BENCHMARKS = {
    "community_probes": (community_views, community_documents, community_labels),
    "tango_disclosure": (tango_views, tango_documents, lambda doc: (doc["gender_identity"], doc["gap_side"])),
    "gendercare_genderpair": (genderpair_views, genderpair_documents, lambda doc: (doc["group"], doc["configuration"])),
}


@functools.cache
def aggregations(task: str) -> dict:
    return declared_aggregations(task)


def aggregation_of(task: str, name: str):
    return aggregation_for(name, aggregations(task))


def is_clustered(task: str, name: str) -> bool:
    aggregation = aggregation_of(task, name)
    return getattr(aggregation, "func", aggregation) in stats.CLUSTER_AWARE


def held_views(views, labels: tuple, metrics: dict) -> dict:
    """A document's views with their companions, as the task scored them up to 1.6 (2.7)."""
    held = {}
    for name, value in views.prompt_views(*labels, metrics).items():
        source = max((stored for stored in views.STORED if name.startswith(stored + "_")), key=len)
        write = with_test if name.endswith(("_gap", "_range")) else with_interval
        write(held, name, value, metrics.get(source + "_n_samples"))
    return held


def scored_run(task: str, held: bool) -> tuple[dict, list[dict]]:
    """lm-eval's ``raw_metrics`` and logged samples (as JSON gives them) of the task's documents, scored
    as the task scores them, with the views in every document (``held``, as before) or carried labels."""
    views, documents, labels_of = BENCHMARKS[task]
    identity = task_metadata.shipped_identity(task)
    slimmer, raw, logged = companions.Slimmer(task), {}, []
    for index, (doc, scored) in enumerate(documents()):
        metrics = dict(scored)
        if held:
            metrics.update(held_views(views, labels_of(doc), scored))
        lower = {name for name in metrics if aggregation_of(task, name) in (stats.ci_lower, stats.exact_lower_pct)}
        metrics.update(harness.design_effect_companions(metrics, lower))
        clustered = {name for name in metrics if is_clustered(task, name)}
        labels = None if held else views.document_labels(doc)
        slim = slimmer.slimmed(metrics, identity.cluster_id(doc), clustered, labels)
        for name, value in slim.items():
            raw.setdefault((name, "scored"), []).append(value)
        logged.append({"doc_id": index, "doc": doc, "filter": "scored", "metrics": list(slim), **slim})
    companions.plain_samples(logged)
    return raw, json.loads(json.dumps(logged))


def run_lists(task: str, raw: dict, derived: dict | None = None) -> dict:
    """What lm-eval aggregates, as ``SubgroupMetricsTask.with_companions`` gives it."""
    names = {name for name, _ in [*raw, *(derived or {})]}
    names |= {name + suffix for name, _ in raw for suffix in companions.DERIVED}
    clustered = {name for name in names if is_clustered(task, name)}
    return dict(companions.with_companions(raw, clustered, derived).items())


@pytest.mark.parametrize("task", BENCHMARKS)
def test_the_derived_lists_are_those_every_document_held_in_their_order(task):
    views = BENCHMARKS[task][0]
    held = run_lists(task, scored_run(task, held=True)[0])
    raw, _ = scored_run(task, held=False)
    assert {name for name, _ in raw} <= {f"{name}{suffix}" for name in views.STORED for suffix in ("", "_n_samples")}
    derived = run_lists(task, raw, views.derived_lists(raw))
    assert set(derived) == set(held)
    for key, values in held.items():
        assert derived[key] == values, key


def test_tango_s_lists_carry_each_prompt_s_identity_side_and_cluster():
    raw, _ = scored_run("tango_disclosure", held=False)
    lists = tango_views.derived_lists(raw)
    # prompts 1, 6 and 11 are of "woman" (binary, side 1); one of prompt 6's two continuations is empty
    assert lists[("toxicity_woman", "scored")](False) == [0.37, 0.22, 0.07]
    assert lists[("toxicity_woman_n_samples", "scored")](False) == [2, 1, 2]
    gap = lists[("toxicity_tgnb_minus_binary_gap_pvalue", "scored")](True)
    cluster = task_metadata.shipped_identity("tango_disclosure").cluster_id
    assert gap[:2] == [(0, 0.0, cluster({"gender_prompt_idx": 0})), (1, 0.37, cluster({"gender_prompt_idx": 1}))]
    # 11 prompts with a continuation; two-spirit's (prompt 2) is in no gap
    assert ("toxicity_two_spirit", "scored") in lists and len(gap) == 10
    # every prompt's empty_rate, the wholly empty prompt 7 ("two-spirit") among them
    assert lists[("empty_rate_two_spirit", "scored")](False) == [0.0, 1.0]


def test_the_labels_are_one_tuple_per_identity():
    assert tango_views.document_labels({"gender_identity": "Gender Fluid", "gap_side": 0}) is tango_views.labels(
        "Gender Fluid", 0
    )
    assert genderpair_views.document_labels({"group": 3, "configuration": 4}) == (3, 4)
    doc = {"demographic_key": "poor", "dimension_key": "class", "dimension_demographics": ["poor", "rich"]}
    assert community_views.document_labels(doc) is community_views.document_labels(dict(doc))
    assert community_views.document_labels(doc) == ("poor", "class", ("poor", "rich"))


def test_community_lists_carry_each_prompt_s_demographic_side_and_cluster():
    raw, _ = scored_run("community_probes", held=False)
    lists = community_views.derived_lists(raw)
    # prompts 1, 5 and 9 are of "man", each with its third continuation empty: toxicity (0.3 + 0.4) / 2 ...
    assert lists[("toxicity_man", "scored")](False) == [0.35, 0.55, 0.75]
    assert lists[("toxicity_man_n_samples", "scored")](False) == [2, 2, 2]
    # woman (prompts 0, 4, ...) is side 0, man side 1; prompt 0 is of template T1, prompts 1 and 4 of T2
    cluster = task_metadata.shipped_identity("community_probes").cluster_id
    gap = lists[("toxicity_gender_woman_minus_man_gap_pvalue", "scored")](True)
    assert gap[:3] == [
        (0, (0.0 + 0.1 + 0.2) / 3, cluster({"template_id": "T1"})),
        (1, 0.35, cluster({"template_id": "T2"})),
        (0, 0.3, cluster({"template_id": "T2"})),
    ]
    assert [side for side, *_ in lists[("sentiment_gender_range", "scored")](False)[:4]] == [
        "woman",
        "man",
        "transgender",
        "woman",
    ]
    # "class" has one demographic here: no range, no pairs; the wholly empty prompt 6 counts in its empty_rate
    assert not any(name.startswith(("sentiment_class", "toxicity_class")) for name, _ in lists)
    assert lists[("empty_rate_poor", "scored")](False) == [0.0, 1.0, 0.0]


def test_community_prompts_of_one_dimension_must_list_the_same_demographics():
    raw, _ = scored_run("community_probes", held=False)
    key = ("sentiment", "scored")
    first = raw[key][0]
    raw[key][0] = (*first[:3], ("woman", "gender", ("woman", "man")))
    with pytest.raises(ConfigurationError) as error:
        community_views.derived_lists(raw)
    assert str(error.value) == (
        "the prompts of dimension 'gender' list its demographics differently (['woman', 'man', 'transgender'] and "
        "['woman', 'man']); every prompt of a dimension must list the same (dimension_demographics)"
    )


def write_samples(folder: Path, task: str, samples: list[dict], results: dict) -> Path:
    """A samples file and the results file lm-eval writes beside it."""
    folder.mkdir()
    (folder / f"results_{DATE}.json").write_text(json.dumps({"results": {task: results}}), encoding="utf-8")
    path = folder / f"samples_{task}_{DATE}.jsonl"
    path.write_text("".join(json.dumps(sample) + "\n" for sample in samples), encoding="utf-8")
    return path


def the_run_s_results(task: str) -> dict:
    """The results the run reports (N/A where a statistic cannot be computed), from the lists it aggregates."""
    results = {}
    for (name, filter_name), values in run_lists(task, scored_run(task, held=True)[0]).items():
        try:
            results[f"{name},{filter_name}"] = aggregation_of(task, name)(values)
        except (ValueError, ArithmeticError):
            results[f"{name},{filter_name}"] = "N/A"
    return results


@pytest.mark.parametrize("task", BENCHMARKS)
def test_an_old_and_a_new_samples_file_give_the_same_samples_and_results(task, tmp_path):
    results = the_run_s_results(task)
    old = write_samples(tmp_path / "old", task, scored_run(task, held=True)[1], results)
    new_samples = scored_run(task, held=False)[1]
    new = write_samples(tmp_path / "new", task, new_samples, results)
    reported = reported_metrics({"results": {task: results}}, task)
    read_old, read_new = read_sample_lines(old, reported), read_sample_lines(new, reported)
    for (line, before), (_, after) in zip(read_old, read_new):
        assert sorted(after["metrics"]) == sorted(before["metrics"]), line
        assert {**after, "metrics": before["metrics"]} == before, line
    recomputed = recompute(new)
    assert recomputed == recompute(old)
    assert {key: value for key, value in recomputed.items() if "_stderr," not in key} == results


@pytest.mark.parametrize(
    ("task", "edit", "reason"),
    [
        (
            "tango_disclosure",
            lambda sample: sample["doc"].pop("gender_identity"),
            "its doc's gender_identity is None, not a name, and the per-identity and gap entries are derived from it",
        ),
        (
            "tango_disclosure",
            lambda sample: sample["doc"].update(gap_side="0"),
            "its doc's gap_side is '0', not -1, 0 or 1, and the per-identity and gap entries are derived from it",
        ),
        (
            "tango_disclosure",
            lambda sample: sample.update(toxicity="high"),
            "its toxicity is 'high', not a number, and the per-identity and gap entries are derived from it",
        ),
        (
            "gendercare_genderpair",
            lambda sample: sample["doc"].update(group=4),
            "its doc's group is 4, not 1, 2 or 3, and the per-group, gap and configuration entries are derived from it",
        ),
        (
            "gendercare_genderpair",
            lambda sample: sample["doc"].pop("configuration"),
            "its doc's configuration is None, not a number 1-6, and the per-group, gap and configuration entries "
            "are derived from it",
        ),
        (
            "community_probes",
            lambda sample: sample["doc"].pop("dimension_key"),
            "its doc's dimension_key is None, not a name, and the per-demographic, range and pairwise entries are "
            "derived from it",
        ),
        (
            "community_probes",
            lambda sample: sample["doc"].update(dimension_demographics="woman man"),
            "its doc's dimension_demographics is 'woman man', not a list of names, and the per-demographic, range "
            "and pairwise entries are derived from it",
        ),
    ],
    ids=["no identity", "no gap side", "no value", "no group", "no configuration", "no dimension", "no members"],
)
def test_a_sample_whose_views_cannot_be_derived_is_refused_naming_its_line(task, edit, reason, tmp_path):
    samples = scored_run(task, held=False)[1]
    edit(samples[1])
    path = write_samples(tmp_path / "new", task, samples, the_run_s_results(task))
    with pytest.raises(ResultsError) as error:
        recompute(path)
    assert str(error.value) == (
        f"{path}, line 2: {reason}; the line was edited or damaged: correct it, or use the file --log_samples wrote"
    )


@pytest.mark.parametrize(
    ("task", "field"),
    [
        ("tango_disclosure", "gap_side"),
        ("gendercare_genderpair", "configuration"),
        ("community_probes", "dimension_demographics"),
    ],
)
def test_an_old_sample_without_its_labels_is_read_as_it_is(task, field, tmp_path):
    samples = scored_run(task, held=True)[1]
    samples[1]["doc"].pop(field)  # it holds every view: nothing to derive from its labels
    results = the_run_s_results(task)
    path = write_samples(tmp_path / "old", task, samples, results)
    assert {key: value for key, value in recompute(path).items() if "_stderr," not in key} == results
