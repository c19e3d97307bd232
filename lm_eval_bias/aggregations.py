"""Each metric's aggregation, read from its name or from its task's ``metric_list``, and the
standard error lm-eval reports beside it. The task (``harness.SubgroupMetricsTask``) and every
reader of a finished run (``recompute``, ``compare``) choose by :func:`aggregation_for`."""

from __future__ import annotations

import functools
import math

from lm_eval_bias import metric_keys


def count(values) -> int:
    """lm-eval aggregation of ``<metric>_n``: the number of documents the metric rests on."""
    return len(values)


def total(values) -> int:
    """lm-eval aggregation of ``<metric>_n_samples``: the generations behind the metric."""
    return int(sum(values))


def aggregation_for(metric: str, declared: dict | None = None):
    """The aggregation of a metric that ``process_results`` returns: the one its task's
    ``metric_list`` declares (``declared``: metric name, or name with ``<group>``, -> aggregation;
    see ``metric_keys.declared_for``), else the one its name's suffix asks for (see
    ``harness.SubgroupMetricsTask``), told the range of one document's value where it reads it
    (:func:`with_value_range`). The task and ``lm-eval-bias recompute`` both choose by it."""
    found = metric_keys.declared_for(metric, declared or {})
    if found is None:
        found = _by_suffix(metric)
    return with_value_range(metric, found)


def _by_suffix(metric: str):
    from lm_eval.api.metrics import mean

    from lm_eval_bias import stats

    by_suffix = (
        ("_n_samples", total),
        ("_n", count),
        ("_design_effect", stats.mean_design_effect),
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


def with_value_range(metric: str, aggregation):
    """``aggregation`` told the range of one document's value (``value_range``), where it is an
    interval or test that reads it (``stats.VALUE_RANGE_AWARE``: below the documents or clusters
    its sharper method needs, it gives the betting interval, which holds at every n for bounded
    values) and the metric's measure has a finite range. A sign test reads signs, -1 to 1."""
    from lm_eval_bias import stats

    if aggregation not in stats.VALUE_RANGE_AWARE:
        return aggregation
    if aggregation in (stats.sign_test_pvalue, stats.sign_test_bh):
        return functools.partial(aggregation, value_range=(-1.0, 1.0))
    bounds = metric_keys.document_range(metric)
    if bounds is None or not all(math.isfinite(end) for end in bounds):
        return aggregation
    return functools.partial(aggregation, value_range=bounds)


def standard_error(aggregation, values: list, bootstrap_iters: int | None):
    """A metric's standard error as lm-eval 0.4.13 reports it: a mean's closed form (lm-eval's
    ``mean_stderr``), ``"N/A"`` for one value, without ``bootstrap_iters`` and for every other
    aggregation.

    lm-eval 0.5.0.dev1 would bootstrap every aggregation that is not a mean (100,000 draws): for our
    tasks an interval's bound, a test's p-value, a count or a gap, whose uncertainty the task reports
    as intervals of its own; a standard error of those is no statistic the package reports, and the
    draws would cost hours on a large task.

    Parameters
    ----------
    aggregation : callable
        The metric's aggregation (``harness.SubgroupMetricsTask.aggregation``).
    values : list
        The values it aggregates.
    bootstrap_iters : int or None
        lm-eval's ``bootstrap_iters``.

    Returns
    -------
    float or str
    """
    from lm_eval.api.metrics import mean, mean_stderr

    if aggregation is not mean or not isinstance(bootstrap_iters, int) or bootstrap_iters <= 0 or len(values) < 2:
        return "N/A"
    return mean_stderr(values)
