"""Intervals, tests and corrections shared by every benchmark, on scipy: :mod:`.intervals`,
:mod:`.significance` and :mod:`.paired` (two runs over the same documents, on the resampling of
:mod:`.paired_resampling`), whose public functions are all importable from here.

Pure functions: numbers in, numbers out. Most are lm-eval aggregations (``aggregation:
!function ...`` in a task's ``metric_list``, or chosen by a metric's name in
``harness.aggregation_for``): lm-eval calls them with the list of per-document values of
one metric.

Each per-run interval is one that holds its 95% level at the documents it is shown for,
checked by simulation in ``tests/test_interval_coverage.py`` (the table of methods and the
fewest documents each needs is in :mod:`.intervals`): Clopper-Pearson for yes/no outcomes,
the studentized bootstrap for other means, Welch or Agresti-Caffo for gaps, Bonferroni-combined
pairwise intervals for ranges and spreads. A gap's or range's p-value is the test its interval
inverts, so the two never disagree about 0. Below the documents an interval needs, it and its
p-value raise ``ValueError("too few documents (n = N): ...")``.

Documents built from one template are not independent: the aggregations in
:data:`CLUSTER_AWARE` also take each document's cluster id appended to its value
(:mod:`.clusters`), and then treat the cluster as the unit (Korn-Graubard, the cluster
bootstrap-t, cluster-robust gaps; ``mean_design_effect`` says how much the clustering inflates
the variance of a mean), raising ``ValueError("too few clusters (G = g): ...")`` below the
clusters an interval needs.

Every metric of ours has a known range (``metric_keys.MEASURE_RANGES``). The aggregations in
:data:`VALUE_RANGE_AWARE` take it as ``value_range`` (the harness binds it): where the intervals
above cannot be shown (too few documents or clusters, or values that do not vary), they give the
betting interval of :mod:`.bounded_means` instead (Waudby-Smith & Ramdas 2024; documents or
clusters as units), which holds its level at every number of documents and clusters, and as
p-value the test that interval inverts; without it, they raise as above (``intervals``'s tables).

scipy does the statistics where it has them: the exact binomial test (``binomtest``; the
Clopper-Pearson interval is its ``proportion_ci(method="exact")``, from the beta quantiles,
``intervals.clopper_pearson_interval``), Benjamini-Hochberg (``false_discovery_control``), Pearson's r and its
Fisher-z interval (``pearsonr``), Student's t and the normal law. The bootstrap is ours: lm-eval
asks for each bound of each metric in a separate call, and the resamples are seeded, so that
both bounds come from the same resamples (``scipy.stats.bootstrap`` would draw others for
each); they are a matrix product of resampling counts with the values.

lm-eval computes a standard error itself only for its built-in ``mean`` aggregation, so
each proportion is reported as three metrics: the ``mean`` (with lm-eval's closed-form
standard error) and the two interval bounds below. Every statistic that the documents
cannot support raises ``ValueError`` (``harness`` reports it as ``N/A``, with the message).
"""

from lm_eval_bias.stats.intervals import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    SEED,
    betting_gap_bounds,
    betting_mean_bounds,
    betting_mean_pvalue,
    betting_units,
    bootstrap_mean_interval,
    ci_lower,
    ci_upper,
    clopper_pearson_interval,
    difference_ci_lower,
    difference_ci_upper,
    difference_interval,
    difference_of_means,
    exact_lower_pct,
    exact_upper_pct,
    korn_graubard_counts,
    mean_design_effect,
    mean_interval,
    pearson_interval,
    percent_interval,
    range_ci_lower,
    range_ci_upper,
    range_interval,
    range_of_means,
    spread_ci_lower,
    spread_ci_upper,
    spread_interval,
    spread_of_means,
    top_choices,
    yes_no_interval,
)
from lm_eval_bias.stats.paired import (
    PairedDifference,
    adjust_bh,
    detectable_difference,
    paired_means,
    paired_proportions,
    paired_statistic,
)
from lm_eval_bias.stats.significance import (
    benjamini_hochberg,
    difference_pvalue,
    difference_pvalue_bh,
    range_pvalue,
    sign_test_bh,
    sign_test_pvalue,
)

# The intervals and tests that read each document's cluster id appended to its value (``(v, cluster)``,
# ``(*t, cluster)``): the harness appends it to the per-document values of the metrics they
# aggregate. The point estimates (difference_of_means, range_of_means, spread_of_means) accept it
# too but need none, so a metric's own per-document value stays as the task wrote it.
CLUSTER_AWARE = frozenset(
    {
        ci_lower,
        ci_upper,
        exact_lower_pct,
        exact_upper_pct,
        difference_ci_lower,
        difference_ci_upper,
        difference_pvalue,
        difference_pvalue_bh,
        range_ci_lower,
        range_ci_upper,
        range_pvalue,
        spread_ci_lower,
        spread_ci_upper,
        sign_test_pvalue,
        sign_test_bh,
        mean_design_effect,
    }
)

# The intervals and tests that take ``value_range``, the range one document's value can take (for a
# gap, range or spread: of the values compared; a sign test's: (-1, 1)): with it, below the
# documents or clusters of the interval otherwise shown, they give the betting interval
# (:mod:`.bounded_means`), which holds at every n. ``mean_design_effect`` is no interval.
VALUE_RANGE_AWARE = CLUSTER_AWARE - {mean_design_effect}

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "CLUSTER_AWARE",
    "VALUE_RANGE_AWARE",
    "CONFIDENCE",
    "PairedDifference",
    "SEED",
    "adjust_bh",
    "benjamini_hochberg",
    "betting_gap_bounds",
    "betting_mean_bounds",
    "betting_mean_pvalue",
    "betting_units",
    "bootstrap_mean_interval",
    "ci_lower",
    "clopper_pearson_interval",
    "ci_upper",
    "difference_ci_lower",
    "difference_ci_upper",
    "difference_interval",
    "difference_of_means",
    "difference_pvalue",
    "detectable_difference",
    "difference_pvalue_bh",
    "korn_graubard_counts",
    "mean_design_effect",
    "mean_interval",
    "paired_means",
    "paired_proportions",
    "paired_statistic",
    "pearson_interval",
    "percent_interval",
    "range_ci_lower",
    "range_ci_upper",
    "range_interval",
    "range_of_means",
    "range_pvalue",
    "sign_test_bh",
    "sign_test_pvalue",
    "spread_ci_lower",
    "spread_ci_upper",
    "spread_interval",
    "spread_of_means",
    "top_choices",
    "exact_lower_pct",
    "exact_upper_pct",
    "yes_no_interval",
]
