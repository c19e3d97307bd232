"""Each document's cluster travels beside its values into the aggregations that read it
(``companions.Slimmer``), and each mean with an interval gets its design effect."""

import pytest

from lm_eval_bias.companions import Slimmer
from lm_eval_bias.harness import design_effect_companions


def test_the_cluster_goes_with_the_values_of_the_named_metrics_only():
    gap_value, sign = (0, 0.25), (1,)
    metrics = {
        "toxicity": 0.5,
        "toxicity_ci_lower": 0.5,  # its own value: derived from toxicity's, left out
        "toxicity_n": 1,
        "toxicity_pvalue": sign,  # a value of its own (a sign test's), clustered where it is
        "toxicity_other": 0.75,
        "toxicity_a_minus_b_gap": gap_value,
        "toxicity_a_minus_b_gap_ci_lower": gap_value,
        "toxicity_a_minus_b_gap_pvalue": gap_value,
    }
    clustered = {
        "toxicity_ci_lower",
        "toxicity_pvalue",
        "toxicity_a_minus_b_gap_ci_lower",
        "toxicity_a_minus_b_gap_pvalue",
    }
    out = Slimmer("task").slimmed(metrics, 17, clustered)
    # a metric with derived companions carries them and the cluster; one without is stored as it is
    assert out == {
        "toxicity": (0.5, 17, ("_ci_lower", "_n")),
        "toxicity_pvalue": (1, 17),
        "toxicity_other": 0.75,
        "toxicity_a_minus_b_gap": ((0, 0.25), 17, ("_ci_lower", "_pvalue")),
    }
    assert metrics["toxicity_ci_lower"] == 0.5  # the document's own metrics are not changed


def test_each_mean_with_an_interval_gets_a_design_effect_and_other_statistics_none():
    metrics = {
        "bias_score": 100,
        "bias_score_ci_lower": 100,
        "bias_score_ci_upper": 100,
        "bias_score_gay_ci_lower": 0,
        "toxicity_a_minus_b_gap_ci_lower": (0, 0.25),
        "warmth_minus_competence_men_ci_lower": ("men", "warmth", 2.0),
    }
    means = {"bias_score_ci_lower", "bias_score_gay_ci_lower", "bias_score_ci_upper"}
    assert design_effect_companions(metrics, means) == {
        "bias_score_design_effect": 100,
        "bias_score_gay_design_effect": 0,
    }


def test_an_interval_or_test_is_told_the_range_of_one_document_s_value():
    from lm_eval_bias import stats
    from lm_eval_bias.aggregations import aggregation_for

    bound = aggregation_for("toxicity_a_minus_b_gap_ci_lower")
    assert (bound.func, bound.keywords) == (stats.difference_ci_lower, {"value_range": (0.0, 1.0)})
    bound = aggregation_for("warmth_men_ci_upper")
    assert (bound.func, bound.keywords) == (stats.ci_upper, {"value_range": (1.0, 5.0)})
    declared = {"bias_score_<group>_ci_lower": stats.exact_lower_pct, "bias_score_pvalue": stats.sign_test_pvalue}
    bound = aggregation_for("bias_score_gay_ci_lower", declared)
    assert (bound.func, bound.keywords) == (stats.exact_lower_pct, {"value_range": (0.0, 100.0)})
    # a sign test reads signs, not scores; a measure without bounds has no range to give
    bound = aggregation_for("bias_score_pvalue", declared)
    assert (bound.func, bound.keywords) == (stats.sign_test_pvalue, {"value_range": (-1.0, 1.0)})
    assert aggregation_for("bias_score_design_effect") is stats.mean_design_effect
    assert aggregation_for("sent_x_score_ci_lower") is stats.ci_lower
    # a point estimate reads no range
    assert aggregation_for("toxicity_a_minus_b_gap") is stats.difference_of_means


def test_the_range_of_one_document_s_value_is_its_measure_s():
    from lm_eval_bias.metric_keys import document_range

    assert document_range("toxicity_a_minus_b_gap_ci_lower") == (0.0, 1.0)
    assert document_range("toxicity_group_range_pvalue") == (0.0, 1.0)
    assert document_range("warmth_men_design_effect") == (1.0, 5.0)
    assert document_range("bias_score_gay") == (0.0, 100.0)
    assert document_range("perplexity") is None


def test_both_bounds_of_an_interval_come_from_one_computation():
    from lm_eval_bias.harness import SubgroupMetricsTask

    calls = []

    def interval(values, value_range=None):
        calls.append(value_range)
        if not values:
            raise ValueError("too few documents (n = 0)")
        return min(values), max(values)

    task = SubgroupMetricsTask.__new__(SubgroupMetricsTask)  # the method needs no built task
    task._intervals = {}
    lower = task._bound_of_shared_interval("toxicity_ci_lower", interval, 0, {"value_range": (0.0, 1.0)})
    upper = task._bound_of_shared_interval("toxicity_ci_upper", interval, 1, {"value_range": (0.0, 1.0)})
    values = [0.25, 0.75, 0.5]
    # lm-eval hands each bound its own list of the same values
    assert (lower(values), upper(list(values))) == (0.25, 0.75)
    assert calls == [(0.0, 1.0)]
    # other values are another interval; the computed one is not kept past its second bound
    assert upper([0.1, 0.2]) == 0.2 and len(calls) == 2
    assert lower([0.1, 0.2]) == 0.1 and len(calls) == 2 and task._intervals == {}
    # an interval the documents cannot support fails both bounds, computed once
    for bound in (lower, upper):
        with pytest.raises(ValueError, match=r"^too few documents \(n = 0\)$"):
            bound([])
    assert len(calls) == 3


def test_a_finished_run_s_tasks_are_freed_without_a_garbage_collection(generated_data_dir):
    # A reference cycle through a task would keep every Instance of the run until a full
    # collection, which lands while lm-eval writes the samples: the run's peak memory.
    # lm-eval's evaluate, as simple_evaluate calls it (simple_evaluate's own task logging makes a
    # cycle); no log records, which pytest keeps, with whatever their arguments hold.
    import gc
    import logging

    import lm_eval.evaluator as evaluator

    import lm_eval_bias
    from fake_models import HashedLM
    from lm_eval_bias import adapters
    from lm_eval_bias.harness import SubgroupMetricsTask

    adapters.install_request_gate()

    manager = lm_eval_bias.task_manager(metadata={"data_dir": str(generated_data_dir)}, include_defaults=False)
    gc.collect()
    gc.disable()
    logging.disable(logging.CRITICAL)
    try:
        output = evaluator.evaluate(HashedLM(), manager.load(["winoqueer", "tango_misgender_prob"]), log_samples=True)
        assert set(output["results"]) == {"winoqueer", "tango_misgender_prob"}
        del output
        alive = [type(task).__name__ for task in gc.get_objects() if isinstance(task, SubgroupMetricsTask)]
    finally:
        logging.disable(logging.NOTSET)
        gc.enable()
    assert alive == []
