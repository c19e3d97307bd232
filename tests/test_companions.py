"""Each per-document value is stored once: the companions a document leaves out are derived from its
metric's value, by lm-eval's aggregation (through the adapter) and by the readers of samples files."""

import json

import pytest

from lm_eval_bias.companions import (
    NotDerivable,
    Slimmer,
    View,
    carrier,
    completed_samples,
    labels_in,
    plain_samples,
    view_entries,
    view_lists,
    with_companions,
)
from lm_eval_bias.errors import ConfigurationError

CLUSTERED = {"x_ci_lower", "x_ci_upper", "x_a_minus_b_gap_ci_lower", "x_a_minus_b_gap_pvalue"}


def full_metrics(value: float, side: int, samples: int) -> dict:
    """One document's metrics as a task scores them (``metric_keys.with_interval``/``with_test``)."""
    gap = (side, value)
    return {
        "x": value,
        "x_ci_lower": value,
        "x_ci_upper": value,
        "x_n": 1,
        "x_n_samples": samples,
        "x_a_minus_b_gap": gap,
        "x_a_minus_b_gap_ci_lower": gap,
        "x_a_minus_b_gap_n": 1,
        "x_a_minus_b_gap_pvalue": gap,
        "x_b": None,  # no value: nothing to derive, nothing left out
    }


def cluster_of(index: int) -> int:
    return 100 + index % 2


def slimmed_run(documents):
    """Each document's metrics as the task returns them, lm-eval's lists of them, and the samples as
    lm-eval writes them (their carriers made plain, as ``adapters.companions_derived`` does)."""
    slimmer, raw, logged = Slimmer("task"), {}, []
    for index, (value, side, samples_count) in enumerate(documents):
        metrics = slimmer.slimmed(full_metrics(value, side, samples_count), cluster_of(index), CLUSTERED)
        logged.append({"doc_id": index, "doc": {"unit": index}, "filter": "none", "metrics": list(metrics), **metrics})
        for name, item in metrics.items():
            raw.setdefault((name, "none"), []).append(item)
    plain_samples(logged)
    return raw, [json.loads(json.dumps(sample)) for sample in logged]


DOCUMENTS = [(0.25, 0, 3), (0.5, 1, 2), (1.0, 0, 1)]
REPORTED = {"none": set(full_metrics(0.0, 0, 1))}


def test_every_document_holds_each_value_once():
    _, samples = slimmed_run(DOCUMENTS)
    for sample in samples:
        assert sample["metrics"] == ["x", "x_n_samples", "x_a_minus_b_gap", "x_b"]
    assert samples[1]["x"] == 0.5 and samples[1]["x_a_minus_b_gap"] == [1, 0.5] and samples[1]["x_n_samples"] == 2


def test_lm_evals_lists_are_rebuilt_in_the_documents_order():
    raw, _ = slimmed_run(DOCUMENTS)
    lists = with_companions(raw, CLUSTERED)
    assert lists[("x", "none")] == [0.25, 0.5, 1.0]  # the metric's own: plain values
    assert lists[("x_ci_lower", "none")] == [(0.25, 100), (0.5, 101), (1.0, 100)]
    assert lists[("x_ci_upper", "none")] is lists[("x_ci_lower", "none")]  # the interval's bounds share one list
    assert lists[("x_n", "none")] == [1, 1, 1]
    assert lists[("x_n_samples", "none")] == [3, 2, 1]
    assert lists[("x_a_minus_b_gap_pvalue", "none")] == [(0, 0.25, 100), (1, 0.5, 101), (0, 1.0, 100)]
    assert lists[("x_a_minus_b_gap_n", "none")] == [1, 1, 1]
    assert lists[("x_b", "none")] == [None, None, None]
    assert sorted(name for name, _ in lists) == sorted(full_metrics(0.0, 0, 1))


def old_samples() -> list[dict]:
    """The same documents as a task wrote them when every document held every companion."""
    old = []
    for index, (value, side, count) in enumerate(DOCUMENTS):
        metrics = full_metrics(value, side, count)
        for name in CLUSTERED:
            metrics[name] = [
                *(metrics[name] if isinstance(metrics[name], tuple) else [metrics[name]]),
                cluster_of(index),
            ]
        sample = {"doc_id": index, "doc": {"unit": index}, "filter": "none", "metrics": list(metrics), **metrics}
        old.append(json.loads(json.dumps(sample)))
    return old


def complete(samples: list[dict]) -> None:
    completed_samples(samples, REPORTED, lambda doc: cluster_of(doc["unit"]), CLUSTERED.__contains__)


def test_a_reader_derives_what_the_samples_leave_out_from_the_results_and_the_documents():
    _, samples = slimmed_run(DOCUMENTS)
    samples = samples[1:]  # a file cut short loses nothing: each line is completed on its own
    complete(samples)
    for sample, before in zip(samples, old_samples()[1:]):
        assert sorted(sample["metrics"]) == sorted(before["metrics"])
        assert sample == {**before, "metrics": sample["metrics"]}


def test_a_file_that_holds_every_companion_is_read_as_it_is():
    old = old_samples()
    kept = json.loads(json.dumps(old))
    complete(kept)
    assert kept == old


def test_a_document_without_its_cluster_is_read_as_its_own_cluster_as_the_task_scored_it():
    slimmer = Slimmer("task")
    metrics = slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.5}, None, CLUSTERED)
    raw = {(name, "none"): [value] for name, value in metrics.items()}
    assert with_companions(raw, CLUSTERED)[("x_ci_lower", "none")] == [0.5]
    samples = [{"doc_id": 0, "doc": {}, "filter": "none", "metrics": ["x"], "x": 0.5}]
    completed_samples(samples, {"none": {"x", "x_ci_lower"}}, lambda doc: None, CLUSTERED.__contains__)
    assert samples[0]["x_ci_lower"] == 0.5


def test_a_carrier_holds_numbers_and_names_only_so_the_garbage_collector_stops_tracking_it():
    import gc

    value = carrier((0, 0.25), ("_ci_lower", "_n"), 7)
    gc.collect()
    assert value == ((0, 0.25), 7, ("_ci_lower", "_n")) and not gc.is_tracked(value)


def test_a_metric_whose_companions_differ_between_documents_is_refused():
    slimmer = Slimmer("task")
    slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.5, "x_n": 1}, None, set())
    with pytest.raises(ConfigurationError, match="x has the companions _ci_lower in one document"):
        slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.5}, None, set())


def test_a_companion_both_derived_and_held_is_refused():
    raw = {("x", "none"): [carrier(0.5, ("_ci_lower",), None)], ("x_ci_lower", "none"): [0.5]}
    with pytest.raises(ConfigurationError, match="x_ci_lower: some documents hold it and others leave it"):
        with_companions(raw, set())


def test_a_companion_that_stops_being_its_metric_s_value_is_refused():
    slimmer = Slimmer("task")
    slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.5}, None, set())
    with pytest.raises(ConfigurationError, match="task: x_ci_lower is not x's value in every document"):
        slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.25}, None, set())


# --------------------------------------------------------------------------
# A benchmark's own derived entries (the task's derived_lists and derived_entries hooks)


def signs_of(clustered: bool) -> list:
    """A benchmark's list of ``x_sign``: +1 where ``x`` is above 0.3, each with its document's cluster."""
    signs = [-1, 1, 1]
    return [(sign, cluster_of(index)) for index, sign in enumerate(signs)] if clustered else signs


def test_a_benchmark_s_own_list_is_built_when_read_and_told_whether_it_is_clustered():
    raw, _ = slimmed_run(DOCUMENTS)
    built = []

    def sign_list(clustered: bool) -> list:
        built.append(clustered)
        return signs_of(clustered)

    lists = with_companions(raw, CLUSTERED | {"x_sign"}, {("x_sign", "none"): sign_list, ("y_sign", "none"): sign_list})
    assert built == []
    assert list(lists)[-2:] == [("x_sign", "none"), ("y_sign", "none")] and len(lists) == len(list(lists))
    assert lists[("x_sign", "none")] == [(-1, 100), (1, 101), (1, 100)]
    assert lists[("y_sign", "none")] == [-1, 1, 1]
    assert built == [True, False]
    assert lists[("x_ci_lower", "none")] == [(0.25, 100), (0.5, 101), (1.0, 100)]  # the companions as before


@pytest.mark.parametrize(
    ("name", "why"),
    [("x_n_samples", "some documents hold it"), ("x_ci_lower", "it is a companion of another metric")],
)
def test_a_benchmark_s_list_that_is_also_held_or_a_companion_is_refused(name, why):
    raw, _ = slimmed_run(DOCUMENTS)
    with pytest.raises(ConfigurationError) as error:
        with_companions(raw, CLUSTERED, {(name, "none"): signs_of})
    assert str(error.value) == f"{name}: the task's derived_lists derives it, yet {why} (lm_eval_bias.companions)"


def test_a_reader_asks_the_benchmark_for_what_a_sample_leaves_out_beyond_its_companions():
    _, samples = slimmed_run(DOCUMENTS)
    asked = []

    def derived_entries(sample, names, cluster, clustered):
        asked.append((sample["doc_id"], names, cluster))
        sign = 1 if sample["x"] > 0.3 else -1
        return {"x_sign": [sign, cluster] if clustered("x_sign") else sign}

    reported = {"none": REPORTED["none"] | {"x_sign"}}
    clustered = (CLUSTERED | {"x_sign"}).__contains__
    completed_samples(samples, reported, lambda doc: cluster_of(doc["unit"]), clustered, derived_entries)
    left_out = tuple(sorted(reported["none"] - {"x", "x_n_samples", "x_a_minus_b_gap", "x_b"}))
    assert asked == [(0, left_out, 100), (1, left_out, 101), (2, left_out, 100)]
    assert [sample["x_sign"] for sample in samples] == [[-1, 100], [1, 101], [1, 100]]
    for sample, before in zip(samples, old_samples()):
        assert sample["metrics"][4] == "x_sign"  # listed after the sample's own, before the companions
        assert {**sample, "metrics": before["metrics"]} == {**before, "x_sign": sample["x_sign"]}


def test_a_sample_the_benchmark_cannot_complete_is_named_by_its_position():
    _, samples = slimmed_run(DOCUMENTS)

    def derived_entries(sample, names, cluster, clustered):
        if sample["doc_id"] == 1:
            raise NotDerivable("its doc has no sign")
        return {}

    with pytest.raises(NotDerivable) as error:
        completed_samples(samples, REPORTED, lambda doc: None, CLUSTERED.__contains__, derived_entries)
    assert (error.value.reason, error.value.position) == ("its doc has no sign", 1)


# --------------------------------------------------------------------------
# Views: metrics a task derives from a stored value and its document's labels


def labelled_run() -> dict:
    """lm-eval's lists of ``x``, each document's value carrying its labels ``(group, side)``."""
    slimmer, raw = Slimmer("task"), {}
    for index, (value, group, side) in enumerate([(0.25, "a", 0), (0.5, "b", 1), (1.0, "a", 0), (0.75, "c", -1)]):
        metrics = {"x": value, "x_ci_lower": value, "x_n": 1}
        for name, item in slimmer.slimmed(metrics, cluster_of(index), {"x_ci_lower"}, (group, side)).items():
            raw.setdefault((name, "none"), []).append(item)
    return raw


def test_a_document_s_labels_ride_on_its_values_carrier():
    raw = labelled_run()
    assert raw[("x", "none")][1] == carrier(0.5, ("_ci_lower", "_n"), 101, ("b", 1))
    assert labels_in(raw[("x", "none")], "x") == {("a", 0), ("b", 1), ("c", -1)}
    assert list(with_companions(raw, {"x_ci_lower"}).items()) == [
        (("x", "none"), [0.25, 0.5, 1.0, 0.75]),
        (("x_ci_lower", "none"), [(0.25, 100), (0.5, 101), (1.0, 100), (0.75, 101)]),
        (("x_n", "none"), [1, 1, 1, 1]),
    ]


def test_views_select_and_tag_the_documents_values_in_their_order():
    raw = labelled_run()
    views = [
        View("x_a", ("x", "none"), ("_ci_lower", "_n"), part=lambda labels: labels[0], which="a"),
        View("x_gap", ("x", "none"), ("_pvalue",), lambda labels: labels[1] >= 0, True, lambda labels: labels[1]),
        View("x_spread", ("x", "none"), (), tag=lambda labels: labels[0]),
    ]
    built = view_lists(raw, views)
    assert list(built) == [
        ("x_a", "none"),
        ("x_a_ci_lower", "none"),
        ("x_a_n", "none"),
        ("x_gap", "none"),
        ("x_gap_pvalue", "none"),
        ("x_spread", "none"),
    ]
    lists = with_companions(raw, {"x_ci_lower", "x_a_ci_lower", "x_gap_pvalue"}, built)
    assert lists[("x_a", "none")] == [0.25, 1.0]
    assert lists[("x_a_ci_lower", "none")] == [(0.25, 100), (1.0, 100)]
    assert lists[("x_a_n", "none")] == [1, 1]
    assert lists[("x_gap", "none")] == [(0, 0.25), (1, 0.5), (0, 1.0)]
    assert lists[("x_gap_pvalue", "none")] == [(0, 0.25, 100), (1, 0.5, 101), (0, 1.0, 100)]
    assert lists[("x_spread", "none")] == [("a", 0.25), ("b", 0.5), ("a", 1.0), ("c", 0.75)]


def test_a_value_without_labels_is_refused_where_views_read_them():
    raw, _ = slimmed_run(DOCUMENTS)
    with pytest.raises(ConfigurationError) as error:
        labels_in(raw[("x", "none")], "x")
    assert str(error.value) == (
        "x: a document's value carries no labels, and the task derives other metrics from them; its "
        "document_labels must label every document (lm_eval_bias.companions)"
    )


def test_a_reader_gets_a_sample_s_views_and_their_companions_among_the_names_asked():
    views = {"x_a": 0.25, "x_gap": [0, 0.25], "x_a_n_samples": 3}
    names = ("x_a", "x_a_ci_lower", "x_a_n", "x_a_n_samples", "x_b", "x_b_ci_lower", "x_gap_pvalue")
    clustered = {"x_a_ci_lower", "x_gap_pvalue"}.__contains__
    assert view_entries(views, names, 7, clustered) == {
        "x_a": 0.25,
        "x_a_ci_lower": [0.25, 7],
        "x_a_n": 1,
        "x_a_n_samples": 3,
        "x_gap_pvalue": [0, 0.25, 7],
    }
