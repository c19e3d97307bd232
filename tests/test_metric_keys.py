"""How a document's metrics are named: the companions beside each value, and one name object for every document."""

from lm_eval_bias import metric_keys


def _built(*parts: str) -> str:
    """A name built at run time, as a benchmark builds ``toxicity_<identity>`` for each document."""
    return "".join(parts)


def test_a_comparison_carries_its_interval_count_samples_and_pvalue_in_order():
    metrics = {}
    metric_keys.with_test(metrics, _built("toxicity_", "tgnb_minus_binary_gap"), (0, 0.25), samples=3)
    assert metrics == {
        "toxicity_tgnb_minus_binary_gap": (0, 0.25),
        "toxicity_tgnb_minus_binary_gap_ci_lower": (0, 0.25),
        "toxicity_tgnb_minus_binary_gap_ci_upper": (0, 0.25),
        "toxicity_tgnb_minus_binary_gap_n": 1,
        "toxicity_tgnb_minus_binary_gap_n_samples": 3,
        "toxicity_tgnb_minus_binary_gap_pvalue": (0, 0.25),
    }
    assert list(metrics) == [
        "toxicity_tgnb_minus_binary_gap",
        "toxicity_tgnb_minus_binary_gap_ci_lower",
        "toxicity_tgnb_minus_binary_gap_ci_upper",
        "toxicity_tgnb_minus_binary_gap_n",
        "toxicity_tgnb_minus_binary_gap_n_samples",
        "toxicity_tgnb_minus_binary_gap_pvalue",
    ]


def test_every_document_shares_one_object_per_metric_name():
    # lm-eval keeps each document's metric names in its logged samples until the run ends: a
    # million documents must not hold a million copies of each name.
    first, second = {}, {}
    metric_keys.with_test(first, _built("sentiment_", "nonbinary"), 0.5)
    metric_keys.with_test(second, _built("sentiment_", "nonbinary"), -0.5)
    assert list(first) == list(second)
    assert all(mine is theirs for mine, theirs in zip(first, second, strict=True))
    first_rates, second_rates = {}, {}
    metric_keys.with_empty_rate(first_rates, 1, 4, groups=[_built("non", "binary")])
    metric_keys.with_empty_rate(second_rates, 0, 4, groups=[_built("non", "binary")])
    assert list(first_rates) == list(second_rates)
    assert all(mine is theirs for mine, theirs in zip(first_rates, second_rates, strict=True))
    assert first_rates["empty_rate_nonbinary"] == 0.25
    assert second_rates["empty_rate_nonbinary_n_samples"] == 4
