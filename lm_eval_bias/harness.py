"""Small adapters between our benchmarks and lm-eval's run-time behaviour."""

from __future__ import annotations

import logging

from lm_eval_bias.metric_keys import is_comparison

_SUBGROUP_TASKS: set[str] = set()
_COUNT_WARNING = "Metrics were not scored on the same number of documents"


class _SubgroupCountFilter(logging.Filter):
    """Drop lm-eval's warning that metrics have different document counts, for our tasks.

    Per-subgroup metrics (``bias_score_<subgroup>``) are scored on that
    subgroup's documents only, by design, so the warning would fire on every run.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (
            _COUNT_WARNING in message
            and any(message.startswith(f"[{task}]") for task in _SUBGROUP_TASKS)
        )


_FILTER = _SubgroupCountFilter()


def expect_subgroup_metrics(task_name: str) -> None:
    """Declare that ``task_name`` reports metrics on subsets of its documents."""
    _SUBGROUP_TASKS.add(task_name)
    logger = logging.getLogger("lm_eval.evaluator_utils")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def aggregation_for(metric: str):
    """The aggregation a metric's name asks for (see ``SubgroupMetricsTask``)."""
    from lm_eval.api.metrics import mean

    from lm_eval_bias import stats

    by_suffix = (
        ("_gap_ci_lower", stats.difference_ci_lower),
        ("_gap_ci_upper", stats.difference_ci_upper),
        ("_gap_pvalue_bh", stats.difference_pvalue_bh),
        ("_gap_pvalue", stats.difference_pvalue),
        ("_gap", stats.difference_of_means),
        ("_range_ci_lower", stats.range_ci_lower),
        ("_range_ci_upper", stats.range_ci_upper),
        ("_range_pvalue", stats.range_pvalue),
        ("_range", stats.range_of_means),
        ("_spread_ci_lower", stats.spread_ci_lower),
        ("_spread_ci_upper", stats.spread_ci_upper),
        ("_spread", stats.spread_of_means),
        ("_ci_lower", stats.ci_lower),
        ("_ci_upper", stats.ci_upper),
    )
    for suffix, aggregation in by_suffix:
        if metric.endswith(suffix):
            return aggregation
    return mean


def _task_base():
    from lm_eval.api.task import ConfigurableTask

    return ConfigurableTask


class SubgroupMetricsTask(_task_base()):
    """A YAML task whose per-subgroup metrics are named, not listed.

    Some metrics exist once per subgroup found in the data (one per gender
    identity, say), so the YAML cannot list them. Any metric that
    ``process_results`` returns and the YAML does not declare is aggregated by
    its name: ``*_gap`` is a difference of two groups' means (per-document
    values ``(side, value)``), ``*_gap_ci_lower``/``*_gap_ci_upper`` its
    bootstrap interval and ``*_gap_pvalue`` its permutation p-value
    (``*_gap_pvalue_bh`` with values ``(group, side, value, target group)``: the
    target group's p-value, Benjamini-Hochberg adjusted across the groups);
    ``*_range`` (values ``(group, value)``) is the largest minus the smallest
    group mean, with ``*_range_ci_lower``/``*_range_ci_upper``/``*_range_pvalue``;
    ``*_spread`` (values ``(group, value)``) the population standard deviation
    of the group means, with ``*_spread_ci_lower``/``*_spread_ci_upper``;
    ``*_ci_lower``/``*_ci_upper`` the interval of a mean
    (``stats.mean_interval``), and anything else lm-eval's ``mean`` (so it gets
    lm-eval's standard error). Its direction is that of the longest declared
    metric name it starts with, except that gaps, ranges and spreads are
    lower-is-better (a larger disparity is worse). Use it from YAML with
    ``class: !function lm_eval_bias.harness.SubgroupMetricsTask``.

    A custom aggregation that cannot be computed on the evaluated documents
    (a gap with one side missing, a range with one group, as ``--limit`` can
    leave) reports ``"N/A"``, lm-eval's own marker, with a warning saying why,
    rather than NaN or a crash.
    """

    def __init__(self, config=None, **kwargs):
        config = dict(config or {})
        config.pop("class", None)  # lm-eval passes it on; TaskConfig has no such field
        super().__init__(config=config, **kwargs)
        expect_subgroup_metrics(self.config.task)
        for name, aggregation in list(self._aggregation_list.items()):
            self._aggregation_list[name] = self._reported_or_na(name, aggregation)

    def _reported_or_na(self, name: str, aggregation):
        from lm_eval.api.metrics import mean

        if aggregation is mean:  # keep lm-eval's closed-form standard error
            return aggregation
        task = self.config.task

        def aggregate(values):
            try:
                return aggregation(values)
            except (ValueError, ArithmeticError) as error:
                logging.getLogger("lm_eval_bias").warning("%s: %s is not reported: %s", task, name, error)
                return "N/A"

        return aggregate

    def process_results(self, doc, results):
        metrics = super().process_results(doc, results)
        for name in metrics:
            if name not in self._aggregation_list:
                self._aggregation_list[name] = self._reported_or_na(name, aggregation_for(name))
                self._higher_is_better[name] = self._declared_direction(name)
        return metrics

    def _declared_direction(self, name: str) -> bool:
        # A disparity (gap, range, spread) is worse the larger it is, whatever its measure.
        if is_comparison(name):
            return False
        declared = [m for m in self._higher_is_better if name.startswith(m)]
        return self._higher_is_better[max(declared, key=len)] if declared else False
