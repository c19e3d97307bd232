"""The bound of a metric's worsening between two runs that the strict gate of ``check`` reads: one-sided
at 97.5%, holding at every n for values in the metric's range (the betting bounds of
:mod:`lm_eval_bias.stats.bounded_means`), where the paired interval is not exact.
"""

from __future__ import annotations

import math

from lm_eval_bias import metric_keys
from lm_eval_bias.metric_keys import metric_range


def strict_bound(
    name: str, aggregation, base_values: list, cand_values: list, clusters, base_value: float, ideal: float
) -> tuple[float | None, str]:
    """An upper bound of a metric's worsening, one-sided at 97.5%, that holds at every n
    (:func:`lm_eval_bias.stats.bounded_means.worsening_upper_bound`): of a mean, from the betting
    bounds of the mean difference; of a gap, a range or a spread of group means, from the bounds of
    each group's mean difference (Bonferroni). Other statistics (a correlation) have none.

    Parameters
    ----------
    name : str
        The metric; its range (:func:`lm_eval_bias.metric_keys.metric_range`) bounds each document's
        difference.
    aggregation : callable
        The task's aggregation of its per-document values.
    base_values, cand_values : list
        Each run's per-document values (numbers; ``(side, value)`` of a gap, ``(group, value)`` of a
        range or spread), in the same document order.
    clusters : list or None
        Each document's cluster; None: documents are independent.
    base_value : float
        The baseline's value of the metric.
    ideal : float
        Its ideal value.

    Returns
    -------
    (float or None, str)
        The bound, or None and why the strict gate has none ("strict gate: ...").
    """
    from lm_eval.api.metrics import mean

    from lm_eval_bias.stats import bounded_means
    from lm_eval_bias.stats.group_differences import difference_of_means
    from lm_eval_bias.stats.group_ranges import range_of_means, spread_of_means

    bounds = metric_range(name)
    if bounds is None or not all(math.isfinite(end) for end in bounds):
        return None, f"strict gate: {name} has no bounded range, so no bound holds at every n"
    low, high = metric_keys.document_range(name)  # a document's change spans its value's range either way
    width = high - low
    if aggregation is mean:
        rows = [(None, b, c) for b, c in zip(base_values, cand_values)]
    elif aggregation in (difference_of_means, range_of_means, spread_of_means):
        rows = [(b[0], b[1], c[1]) if b[0] == c[0] else None for b, c in zip(base_values, cand_values)]
        if None in rows:
            return None, "strict gate: a document is in another group in each run, so no bound holds at every n"
    else:
        return None, (
            "strict gate: no bound that holds at every n for this statistic (only means, gaps, ranges and spreads of "
            "group means have one)"
        )
    groups = [group for group, _, _ in rows]
    differences = [[float(c) - float(b) for _, b, c in rows]]
    if not all(abs(difference) <= width for difference in differences[0]):
        return None, f"strict gate: a document's change exceeds the width of {name}'s range, {width:g}"

    def change_bounds(level: float) -> tuple[float, float]:
        if aggregation is mean:
            lower, upper = bounded_means.mean_change_bounds(differences, width, clusters, level)
        elif aggregation is difference_of_means:
            lower, upper = bounded_means.gap_change_bounds(groups, differences, width, clusters, level)
        else:
            # A range or a spread has its ideal at 0, its lowest value: only its upper bound is read.
            spread = aggregation is spread_of_means
            upper = (bounded_means.spread_change_upper_bound if spread else bounded_means.range_change_upper_bound)(
                groups, differences, width, clusters, level
            )
            lower = [-math.inf]
        return float(lower[0]), float(upper[0])

    try:
        return float(bounded_means.worsening_upper_bound(change_bounds, base_value, ideal, bounds)), ""
    except ValueError as error:
        return None, f"strict gate: no bound on these documents: {error}"
