"""Each per-document value is stored once: the companions a document leaves out are derived from its
metric's value, by lm-eval's aggregation (through the adapter) and by the readers of samples files."""

import json

import pytest

from lm_eval_bias.companions import Slimmer, carrier, completed_samples, plain_samples, with_companions
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
