"""Each task declares the ideal value of its headline metric and of that metric's family (its YAML
``metadata: ideal_values``), which a comparison of two runs measures "worse" against."""

import pytest

from lm_eval_bias import task_metadata
from lm_eval_bias.errors import ConfigurationError


@pytest.mark.parametrize(
    "task, metric, ideal",
    [
        ("winoqueer", "bias_score", 50.0),
        ("winoqueer_mlm", "bias_score_nonbinary", 50.0),
        ("tango_misgender", "consistency_they", 1.0),
        ("tango_misgender_prob", "consistency_binary_minus_tgnb_gap", 0.0),
        ("tango_disclosure", "toxicity_genderqueer", 0.0),
        ("gendercare_genderpair", "bias_pair_ratio_group2", 0.0),
        ("gendercare_genderpair_full", "bias_pair_ratio_group_spread", 0.0),
        ("scm_story", "refusal_rate_women", 0.0),
        ("scm_score", "warmth_women", None),
        ("scm_mc", "warmth_pick", None),
        ("community_probes", "sentiment_class_poor_minus_rich_gap", 0.0),
        ("community_probes_custom", "sentiment_gender_identity_range", 0.0),
        ("community_probes_full", "sentiment_poor", None),
    ],
)
def test_every_task_declares_its_headline_metric_s_ideal(task, metric, ideal):
    assert task_metadata.shipped_identity(task).ideal(metric) == ideal


def test_every_shipped_task_has_ideal_values():
    for task in task_metadata.shipped_configs():
        found = task_metadata.shipped_identity(task)
        assert found.headline_metric in found.ideal_values, task


@pytest.mark.parametrize(
    "ideal_values, message",
    [
        (
            {"bias_score_gay": 50},
            "t: metadata ideal_values is {'bias_score_gay': 50}; expected an object {metric: value or null} with "
            "the headline metric bias_score in it",
        ),
        (
            {"bias_score": 50, "bias_score_ci_lower": 50},
            "t: metadata ideal_values names 'bias_score_ci_lower', which is not a metric (an interval bound, count "
            "or p-value has no ideal of its own); name the task's metrics and their subgroups",
        ),
        ({"bias_score": 150}, "t: metadata ideal_values.bias_score is 150; expected a number from 0 to 100 or null"),
        (
            {"bias_score": 50, "bias_score_<group>": "50"},
            "t: metadata ideal_values.bias_score_<group> is '50'; expected a number from 0 to 100 or null",
        ),
    ],
)
def test_wrong_ideal_values_are_one_message(ideal_values, message):
    metadata = {
        "benchmark": "winoqueer",
        "headline_metric": "bias_score",
        "figure": "bias_score_by_subgroup",
        "ideal_values": ideal_values,
    }
    with pytest.raises(ConfigurationError) as error:
        task_metadata.identity(metadata, "t")
    assert str(error.value) == message
