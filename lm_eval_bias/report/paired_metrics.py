"""One metric of one task compared between two runs on their matched documents, with the paired test
that fits its per-document values (:func:`compare_metric`, giving a :class:`MetricComparison`).

- per-document outcomes of 0 or the metric's top (a 0/100 or 0/1 outcome) averaged by the task: exact
  McNemar with the interval built on its binomial law (``stats.paired_proportions``), in the metric's
  units (:data:`EXACT_TEST`);
- other numbers averaged by the task (toxicity, sentiment, ratings): a sign-flip permutation test and
  the interval that inverts it (``stats.paired_means``);
- any other aggregation of the task (a gap, range or spread between groups, a correlation): the same
  statistic on both runs' values, with a paired permutation test and the interval of the changes it
  would not reject (``stats.paired_statistic``).

Documents of one cluster unit (the task's YAML metadata ``cluster_unit``) are resampled and tested
together. ``worsening`` is ``|candidate - ideal| - |baseline - ideal|``, its interval the image of the
difference's paired interval (:func:`_worsening`); where the interval is not exact, ``strict_upper`` is
the bound of :func:`lm_eval_bias.report.strict_bounds.strict_bound`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from lm_eval_bias.metric_keys import metric_range
from lm_eval_bias.report.strict_bounds import strict_bound
from lm_eval_bias.report.values import NOT_AVAILABLE

# The one test whose interval is exact at every n; the strict gate reads its interval as it is.
EXACT_TEST = "exact McNemar; Clopper-Pearson box interval"


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one task in both runs, on their matched documents.

    ``metric`` is the metric's name without lm-eval's filter suffix (``bias_score``,
    ``bias_score_gay``); ``subgroup`` is None for the headline metric. ``difference`` is candidate
    minus baseline, in the metric's units, with its paired 95% interval (``ci_lower``,
    ``ci_upper``) and the p-value of the paired test named in ``test``; ``pvalue_bh`` is
    Benjamini-Hochberg adjusted across the subgroup metrics of the task. ``worsening`` is
    ``|candidate - ideal| - |baseline - ideal|`` (positive: further from the ideal) with its paired
    interval ``worsening_ci``; both are None where the metric has no ideal value. ``cluster_unit`` is
    the unit the interval and the test treated as independent (``document``, or the unit the task's
    documents were generated from, such as ``template``), and ``design_effect`` the variance of the
    difference with that unit over its variance with independent documents, as measured on these
    documents (None where documents are the unit or it is undefined). ``strict_upper`` is an upper
    bound of the worsening, one-sided at 97.5%, that holds at every n for values in the metric's
    range (the betting bound of :mod:`lm_eval_bias.stats.bounded_means`), for the strict gate of
    ``check`` where the interval is not exact (every test but :data:`EXACT_TEST`); None there, where
    the metric has no ideal value, or where no such bound can be built, the reason in
    ``strict_note``. Neither is in the comparison's JSON or text.
    """

    task: str
    metric: str
    subgroup: str | None
    baseline: float
    candidate: float
    difference: float
    ci_lower: float
    ci_upper: float
    pvalue: float
    pvalue_bh: float
    n: int
    test: str
    ideal: float | None
    worsening: float | None
    worsening_ci: tuple[float, float] | None
    note: str = ""
    cluster_unit: str = "document"
    design_effect: float | None = None
    strict_upper: float | None = None
    strict_note: str = ""


def has_value(sample: dict, name: str) -> bool:
    """Whether a document has a value of the metric (a task leaves an undecided or empty one out).

    Parameters
    ----------
    sample : dict
        One document's logged sample.
    name : str
        The metric.

    Returns
    -------
    bool
        True where the sample holds the metric with a value other than None.
    """
    return name in sample and sample[name] is not None


def aggregate(aggregation, values: list) -> float:
    """The task's aggregation of per-document values; NaN where it cannot be computed on them.

    Parameters
    ----------
    aggregation : callable
        The task's aggregation of the metric.
    values : list
        The per-document values.

    Returns
    -------
    float
        The aggregate; NaN for no values, a value the task reports as N/A, or one the aggregation
        cannot compute (a gap with one side missing).
    """
    if not values:
        return math.nan
    try:
        value = aggregation(values)
    except (ValueError, ArithmeticError):  # e.g. a gap with one side missing: the task reports N/A
        return math.nan
    if value == NOT_AVAILABLE or value is None:
        return math.nan
    return float(value)


def compare_metric(
    task: str, name: str, head: str, pairs, aggregation, ideal: float | None, identity=None, cluster_keys=None
) -> MetricComparison:
    """One metric of a task compared on the matched documents that have a value of it in both runs.

    Parameters
    ----------
    task, name, head : str
        The task, the metric and the metric whose family it is (the task's headline metric, or
        another metric of its ``metric_list``).
    pairs : sequence of (dict, dict)
        The matched documents' (baseline, candidate) samples.
    aggregation : callable
        The task's aggregation of the metric's per-document values.
    ideal : float or None
        The metric's ideal value, in its units; None where it has none.
    identity : TaskIdentity, optional
        The task's identity: its cluster unit (``TaskIdentity.cluster_of``); without it, documents are
        independent.
    cluster_keys : dict, optional
        ``id(baseline sample) -> its cluster``, filled as documents are met, shared by the metrics of
        one pairing so that each document's cluster is found once.

    Returns
    -------
    MetricComparison
        With ``pvalue_bh`` equal to ``pvalue`` (the task adjusts its metrics together); NaN numbers
        where the documents cannot support the comparison, the reason in ``note``.
    """
    matched = [(b, c) for b, c in pairs if has_value(b, name) and has_value(c, name)]
    both = [(b[name], c[name]) for b, c in matched]
    only_base = sum(1 for b, c in pairs if has_value(b, name) and not has_value(c, name))
    only_cand = sum(1 for b, c in pairs if has_value(c, name) and not has_value(b, name))
    notes = []
    if only_base or only_cand:
        count = only_base + only_cand
        notes.append(
            f"{count} matched document{'s have' if count > 1 else ' has'} a value in one run only ({only_base} in "
            f"the baseline, {only_cand} in the candidate; undecided or empty in the other) and "
            f"{'are' if count > 1 else 'is'} left out"
        )
    subgroup = None if name == head else name[len(head) + 1 :]
    neither = len(pairs) - len(both) - only_base - only_cand
    if subgroup is None and neither:
        # Of a subgroup's metric, the documents of the other subgroups have none: not worth saying.
        notes.append(
            f"{neither} matched document{'s have' if neither > 1 else ' has'} no value in either run (undecided or "
            "empty in both)"
        )
    clusters, unit = _clusters(identity, matched, {} if cluster_keys is None else cluster_keys)
    if clusters is None and identity is not None and identity.cluster_fields and matched:
        notes.append(
            f"the logged documents lack {', '.join(identity.cluster_fields)}, so each document is treated as "
            f"independent rather than each {identity.cluster_unit}"
        )
    empty = MetricComparison(
        task, name, subgroup, *([math.nan] * 7), len(both), "", ideal, None, None, "; ".join(notes), unit
    )
    if not both:
        return with_note(empty, "no matched document has a value in both runs")
    base_values, cand_values = [b for b, _ in both], [c for _, c in both]
    base_value, cand_value = aggregate(aggregation, base_values), aggregate(aggregation, cand_values)
    several = any((sample.get(f"{name}_n_samples") or 1) > 1 for pair in matched for sample in pair)
    try:
        result = _paired_test(name, aggregation, base_values, cand_values, several, clusters)
    except ValueError as error:
        # The two values (their difference, how much farther from the ideal) may stand where the paired
        # test cannot (one document); the interval and the p-value cannot.
        farther = None if ideal is None else abs(cand_value - ideal) - abs(base_value - ideal)
        stands = replace(
            empty, baseline=base_value, candidate=cand_value, difference=cand_value - base_value, worsening=farther
        )
        return with_note(stands, f"not computable on these documents: {error}")
    worsening, worsening_ci = None, None
    if ideal is not None:
        worsening, worsening_ci = _worsening(result, base_value, ideal)
    if result.note:
        notes.append(result.note)
    strict_upper, strict_note = None, ""
    if ideal is not None and result.test != EXACT_TEST:
        strict_upper, strict_note = strict_bound(
            name, aggregation, base_values, cand_values, clusters, base_value, ideal
        )
    return MetricComparison(
        task,
        name,
        subgroup,
        base_value,
        cand_value,
        float(result.difference),
        float(result.ci_lower),
        float(result.ci_upper),
        float(result.pvalue),
        float(result.pvalue),
        int(result.n),
        result.test,
        ideal,
        worsening,
        worsening_ci,
        "; ".join(notes),
        unit,
        getattr(result, "design_effect", None),
        strict_upper,
        strict_note,
    )


def _clusters(identity, matched: list, keys: dict) -> tuple[list | None, str]:
    """Each matched document's cluster (from the baseline's logged document; both runs logged the same
    document, ``keys`` remembering each) and the unit's name; (None, "document") where the task
    declares no unit or a logged document lacks one of its fields."""
    if identity is None or not identity.cluster_fields:
        return None, "document"
    clusters = []
    for base, _ in matched:
        if id(base) not in keys:
            keys[id(base)] = identity.cluster_of(base.get("doc") or {})
        clusters.append(keys[id(base)])
    if any(cluster is None for cluster in clusters):
        return None, "document"
    return clusters, identity.cluster_unit


def _worsening(result, base_value: float, ideal: float) -> tuple[float, tuple[float, float] | None]:
    """How much farther from ``ideal`` the candidate is than the baseline, with its interval.

    The worsening is ``w(d) = |baseline + d - ideal| - |baseline - ideal|`` of the paired difference
    ``d``, the baseline's value taken as the reference. ``w`` is a function of ``d`` alone, so the
    values it takes over the difference's paired interval are an interval of the worsening with at
    least the same coverage: where that interval lies on one side of the ideal it is the difference's
    own (negated below the ideal); where the candidate may lie on either side, its lower end is the
    largest improvement the interval allows. (A bootstrap of the distance from the ideal would be
    biased at the ideal, where the distance has its kink.)
    """

    def farther(difference: float) -> float:
        return abs(base_value + difference - ideal) - abs(base_value - ideal)

    point = farther(float(result.difference))
    lower, upper = float(result.ci_lower), float(result.ci_upper)
    if not (math.isfinite(lower) and math.isfinite(upper)):
        return point, None
    ends = (farther(lower), farther(upper))
    closest = farther(ideal - base_value) if lower <= ideal - base_value <= upper else min(ends)
    return point, (min(closest, *ends), max(ends))


def proportion_scale(name: str, values) -> float | None:
    """The top of a metric whose per-document values are all 0 or that top (WinoQueer's 100, a share's
    1), so that they are yes/no outcomes; None for any other values.

    Parameters
    ----------
    name : str
        The metric (its range gives the top: :func:`lm_eval_bias.metric_keys.metric_range`).
    values : iterable
        Its per-document values in both runs.

    Returns
    -------
    float or None
    """
    bounds = metric_range(name)
    top = bounds[1] if bounds is not None and bounds[0] == 0 and math.isfinite(bounds[1]) else 1.0
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return top if numbers and all(v in (0, top) for v in values) else None


def _paired_test(name: str, aggregation, base_values: list, cand_values: list, several: bool, clusters):
    """The paired test that fits the metric's per-document values and the task's aggregation: read from
    both runs' values alike, so that swapping the runs chooses the same test. ``several``: a document's
    value is a share of several generations (``_n_samples`` > 1 in either run), a number rather than a
    yes/no outcome."""
    from lm_eval.api.metrics import mean

    from lm_eval_bias import stats

    if aggregation is not mean:
        return stats.paired_statistic(base_values, cand_values, aggregation, clusters=clusters)
    scale = None if several else proportion_scale(name, base_values + cand_values)
    if scale is None:
        return stats.paired_means(base_values, cand_values, clusters=clusters)
    return stats.paired_proportions(
        [value / scale for value in base_values],
        [value / scale for value in cand_values],
        scale=scale,
        clusters=clusters,
    )


def with_note(metric: MetricComparison, note: str) -> MetricComparison:
    """The comparison with ``note`` added to its note.

    Parameters
    ----------
    metric : MetricComparison
        The comparison.
    note : str
        What to add ("" adds nothing).

    Returns
    -------
    MetricComparison
        A copy whose note is the old one and ``note``, joined by "; ".
    """
    return replace(metric, note="; ".join(part for part in (metric.note, note) if part))
