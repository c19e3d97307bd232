"""Every metric our tasks emit has one declared range (metric_keys.MEASURE_RANGES), the one the
results reader holds each number to."""

import math

import pytest

from lm_eval_bias import metric_keys, task_metadata

INF = math.inf


def test_every_metric_of_every_shipped_task_s_metric_list_has_a_range():
    declared = {
        metric["metric"]
        for _, config in task_metadata.shipped_configs().values()
        for metric in config.get("metric_list") or []
    }
    assert len(declared) == 59  # so that a change to how tasks are read cannot empty this test
    companions = ("_ci_lower", "_ci_upper", "_pvalue_bh", "_pvalue")
    for name in declared:
        suffix = next((s for s in companions if name.endswith(s)), "")
        owner = name[: len(name) - len(suffix)]
        bounds = metric_keys.COMPANION_RANGES.get(suffix) or metric_keys.metric_range(owner)
        assert bounds is not None, name
        assert bounds[0] < bounds[1], name


@pytest.mark.parametrize(
    "name, bounds",
    [
        # metrics of the metric lists, and the per-group and comparison metrics the tasks add to them
        ("bias_score", (0, 100)),
        ("bias_score_gay", (0, 100)),
        ("tie_pct", (0, 100)),
        ("sent_x_score", (-INF, 0)),
        ("sent_y_score", (-INF, 0)),
        ("consistency", (0, 1)),
        ("consistency_xe_distal", (0, 1)),
        ("consistency_binary_minus_tgnb_gap", (-1, 1)),
        ("distal_minus_nongendered_gap", (-1, 1)),
        ("he_default_rate", (0, 1)),
        ("neo_determiner_rate_fae", (0, 1)),
        ("no_pronoun_rate", (0, 1)),
        ("empty_rate_xe", (0, 1)),
        ("tie_rate", (0, 1)),
        ("tie_rate_norm", (0, 1)),
        ("toxicity_genderqueer", (0, 1)),
        ("toxic_share", (0, 1)),
        ("toxicity_tgnb_minus_binary_gap", (-1, 1)),
        ("sentiment_tgnb_minus_binary_gap", (-2, 2)),
        ("bias_pair_ratio_group2", (0, 1)),
        ("bias_pair_ratio_configuration6", (0, 1)),
        ("bias_pair_ratio_group_spread", (0, 0.5)),
        ("sentiment_group_spread", (0, 1)),
        ("bias_pair_ratio_group1_minus_group3_gap", (-1, 1)),
        ("undecided_rate", (0, 1)),
        ("warmth", (1, 5)),
        ("competence_gay_men", (1, 5)),
        ("warmth_minus_competence_women_gap", (-4, 4)),
        ("survey_r", (-1, 1)),
        ("survey_r_warmth", (-1, 1)),
        ("survey_r_gap", (-1, 1)),
        ("refusal_rate_lesbians", (0, 1)),
        ("explicit_refusal_rate", (0, 1)),
        ("warmth_pick_women", (0, 1)),
        ("warmth_pick_norm_men", (0, 1)),
        ("warmth_mass_bisexual", (0, 1)),
        ("warmth_ratio_heterosexual", (0, 1)),
        ("warmth_word_share_nonbinary", (0, 1)),
        ("competence_word_share_women", (0, 1)),
        ("sentiment_poor", (-1, 1)),
        ("negative_share_muslim", (0, 1)),
        ("identity_attack_rich", (0, 1)),
        ("sentiment_class_range", (0, 2)),
        ("toxicity_class_range", (0, 1)),
        ("sentiment_class_poor_minus_rich_gap", (-2, 2)),
        ("toxicity_sexual_orientation_bisexual_minus_homosexual_gap", (-1, 1)),
        # not ours: no range to hold it to
        ("acc", None),
        ("likelihood_diff", None),
        ("warmthiness", None),
    ],
)
def test_the_range_of_each_kind_of_metric(name, bounds):
    assert metric_keys.metric_range(name) == bounds


@pytest.mark.parametrize(
    "bounds, text",
    [((0, 100), "0 to 100"), ((-INF, 0), "at most 0"), ((0, INF), "at least 0"), ((-INF, INF), "any number")],
)
def test_range_text(bounds, text):
    assert metric_keys.range_text(bounds) == text


# ---------------------------------------------------------------- per-group metric_list entries


@pytest.mark.parametrize(
    "pattern, name, fills",
    [
        ("bias_score_<group>", "bias_score_gay", True),
        ("bias_score_<group>", "bias_score_gender_fluid", True),
        ("bias_score_<group>", "bias_score_gay_n", False),  # the count of bias_score_gay
        ("bias_score_<group>", "bias_score_gay_ci_lower", False),
        ("bias_score_<group>", "bias_score_", False),  # no group
        ("bias_score_<group>_ci_lower", "bias_score_gay_ci_lower", True),
        ("bias_score_<group>_pvalue", "bias_score_gay_pvalue_bh", False),
        ("bias_score_<group>_pvalue_bh", "bias_score_gay_pvalue_bh", True),
        ("bias_score", "bias_score", True),
        ("bias_score", "bias_score_gay", False),
    ],
)
def test_a_group_entry_declares_the_same_statistic_of_every_group(pattern, name, fills):
    assert metric_keys.fills(pattern, name) is fills


def test_a_metric_takes_its_declared_aggregation_else_the_one_its_name_asks_for():
    from lm_eval.api.metrics import mean

    from lm_eval_bias import aggregations, stats

    declared = {"bias_score_<group>_ci_lower": stats.exact_lower_pct, "bias_score": mean}
    assert aggregations.aggregation_for("bias_score_gay_ci_lower", declared).func is stats.exact_lower_pct
    assert aggregations.aggregation_for("bias_score_gay_ci_lower").func is stats.ci_lower
    assert aggregations.aggregation_for("bias_score_gay_n", declared) is aggregations.count


def test_lm_eval_sees_each_groups_metric_and_no_group_entry(tmp_path):
    """The winoqueer task as built: its <group> entries are no metric of lm-eval's; each
    subgroup's metric gets its entry's aggregation and direction when first returned."""
    import lm_eval_bias
    from benchmark_data import write_data_dir

    data_dir = write_data_dir(tmp_path)
    manager = lm_eval_bias.task_manager(metadata={"data_dir": str(data_dir)}, include_defaults=False)
    task = manager.load(["winoqueer"])["tasks"]["winoqueer"]
    assert not [name for name in task.aggregation() if "<group>" in name]
    assert "bias_score_gay_pvalue" not in task.higher_is_better()
    task.declare_metrics(["bias_score_gay_pvalue", "bias_score_gay_ci_upper", "bias_score_gay_n"])
    directions = task.higher_is_better()
    assert [directions[name] for name in ("bias_score_gay_pvalue", "bias_score_gay_ci_upper", "bias_score_gay_n")] == [
        True,
        False,
        False,
    ]


def test_a_group_entry_without_its_aggregation_is_refused():
    from lm_eval_bias import harness
    from lm_eval_bias.errors import ConfigurationError

    config = {"task": "mine", "metric_list": [{"metric": "score_<group>", "higher_is_better": True}]}
    with pytest.raises(ConfigurationError) as error:
        harness.per_group_entries(config)
    assert str(error.value) == (
        "mine: metric_list entry 'score_<group>' needs an aggregation and higher_is_better (an entry with "
        "<group> declares the metric of every group)"
    )
