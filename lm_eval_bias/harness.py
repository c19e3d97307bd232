"""Small adapters between our benchmarks and lm-eval's run-time behaviour."""

from __future__ import annotations

import logging

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
        ("_gap", stats.difference_of_means),
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
    bootstrap interval, ``*_ci_lower``/``*_ci_upper`` the interval of a mean
    (``stats.mean_interval``), and anything else lm-eval's ``mean`` (so it gets
    lm-eval's standard error). Its direction is that of the longest declared
    metric name it starts with. Use it from YAML with
    ``class: !function lm_eval_bias.harness.SubgroupMetricsTask``.

    Gap metrics need documents on both sides (``doc["gap_side"]`` 0 and 1)
    among those actually evaluated (``--limit`` may leave one side out); when
    one side is missing the gap is left out of the results, with a warning,
    rather than reported as NaN.
    """

    def __init__(self, config=None, **kwargs):
        config = dict(config or {})
        config.pop("class", None)  # lm-eval passes it on; TaskConfig has no such field
        super().__init__(config=config, **kwargs)
        expect_subgroup_metrics(self.config.task)
        self._gaps_available = True

    def build_all_requests(self, **kwargs):
        super().build_all_requests(**kwargs)
        sides = {instance.doc.get("gap_side", -1) for instance in self.instances}
        self._gaps_available = {0, 1} <= sides
        if not self._gaps_available and any(side >= 0 for side in sides):
            logging.getLogger("lm_eval_bias").warning(
                "%s: the evaluated documents cover only one side of its gap metrics, "
                "which are therefore not reported", self.config.task)

    def process_results(self, doc, results):
        metrics = super().process_results(doc, results)
        if not self._gaps_available:
            metrics = {k: v for k, v in metrics.items() if "_gap" not in k}
        for name in metrics:
            if name not in self._aggregation_list:
                self._aggregation_list[name] = aggregation_for(name)
                self._higher_is_better[name] = self._declared_direction(name)
        return metrics

    def _declared_direction(self, name: str) -> bool:
        declared = [m for m in self._higher_is_better if name.startswith(m)]
        return self._higher_is_better[max(declared, key=len)] if declared else False
