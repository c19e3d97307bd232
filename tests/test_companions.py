"""Each per-document value is stored once: the companions a document leaves out are derived from its
metric's value, by lm-eval's aggregation (through the adapter) and by the readers of samples files."""

import json
import pickle

import pytest

from lm_eval_bias.companions import CLUSTER, Carried, Slimmer, completed_samples, with_companions
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


def slimmed_run(documents, cluster_of=lambda index: 100 + index % 2):
    slimmer, raw, samples = Slimmer("task"), {}, []
    for index, (value, side, samples_count) in enumerate(documents):
        metrics = slimmer.slimmed(full_metrics(value, side, samples_count), cluster_of(index), CLUSTERED)
        samples.append(json.loads(json.dumps({"metrics": list(metrics), **metrics})))
        for name, item in metrics.items():
            raw.setdefault((name, "none"), []).append(item)
    return raw, samples


DOCUMENTS = [(0.25, 0, 3), (0.5, 1, 2), (1.0, 0, 1)]


def test_the_first_document_shows_every_companion_and_the_others_each_value_once():
    _, samples = slimmed_run(DOCUMENTS)
    first, second = samples[0], samples[1]
    assert first["x_ci_lower"] == [0.25, 100] and first["x_n"] == 1 and first[CLUSTER] == 100
    assert set(second["metrics"]) == {"x", "x_n_samples", "x_a_minus_b_gap", "x_b", CLUSTER}
    assert second["x"] == 0.5 and second["x_a_minus_b_gap"] == [1, 0.5] and second["x_n_samples"] == 2


def test_lm_evals_lists_are_rebuilt_in_the_documents_order_without_the_cluster():
    raw, _ = slimmed_run(DOCUMENTS)
    lists = with_companions(raw, CLUSTERED)
    assert (CLUSTER, "none") not in lists
    assert lists[("x_ci_lower", "none")] == [(0.25, 100), (0.5, 101), (1.0, 100)]
    assert lists[("x_ci_upper", "none")] is lists[("x_ci_lower", "none")]  # the interval's bounds share one list
    assert lists[("x_n", "none")] == [1, 1, 1]
    assert lists[("x_n_samples", "none")] == [3, 2, 1]
    assert lists[("x_a_minus_b_gap_pvalue", "none")] == [(0, 0.25, 100), (1, 0.5, 101), (0, 1.0, 100)]
    assert lists[("x_a_minus_b_gap_n", "none")] == [1, 1, 1]
    assert lists[("x_b", "none")] == [None, None, None]
    # every key at the place lm-eval met it, as if every document had held every companion
    assert [name for name, _ in lists] == list(full_metrics(0.0, 0, 1))


def test_a_reader_derives_what_the_samples_leave_out_and_reads_old_files_as_they_are():
    _, samples = slimmed_run(DOCUMENTS)
    completed_samples(samples)
    old = []
    for index, (value, side, count) in enumerate(DOCUMENTS):
        cluster = 100 + index % 2
        metrics = full_metrics(value, side, count)
        for name in CLUSTERED:
            metrics[name] = [*(metrics[name] if isinstance(metrics[name], tuple) else [metrics[name]]), cluster]
        old.append(json.loads(json.dumps({"metrics": list(metrics), **metrics})))
    for sample, before in zip(samples, old):
        assert sorted(sample["metrics"]) == sorted(before["metrics"])
        assert {name: sample[name] for name in before["metrics"]} == {name: before[name] for name in before["metrics"]}
    kept = json.loads(json.dumps(old))
    completed_samples(kept)
    assert kept == old


def test_a_carried_value_is_its_number_to_json_and_keeps_what_it_carries_through_pickle():
    value = Carried(0.1, ("_ci_lower", "_n"), 7)
    assert json.dumps({"x": value, "gap": (0, value)}) == '{"x": 0.1, "gap": [0, 0.1]}'
    again = pickle.loads(pickle.dumps(value))
    assert (type(again), float(again), again.companions, again.cluster) == (Carried, 0.1, ("_ci_lower", "_n"), 7)


def test_a_metric_whose_companions_differ_between_documents_is_refused():
    slimmer = Slimmer("task")
    slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.5, "x_n": 1}, None, set())
    with pytest.raises(ConfigurationError, match="x has the companions _ci_lower in one document"):
        slimmer.slimmed({"x": 0.5, "x_ci_lower": 0.5}, None, set())
