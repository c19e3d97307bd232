"""Intervals, tests and corrections shared by every benchmark, on scipy: :mod:`.intervals`,
:mod:`.significance` and :mod:`.paired` (two runs over the same documents, on the resampling of
:mod:`.paired_resampling`), whose public functions are all importable from here.

Pure functions: numbers in, numbers out. Most are lm-eval aggregations (``aggregation:
!function ...`` in a task's ``metric_list``, or chosen by a metric's name in
``harness.aggregation_for``): lm-eval calls them with the list of per-document values of
one metric.

scipy does the statistics where it has them: the exact sign test (``binomtest``; the Wilson
interval is its formula written out, see ``_wilson``), Benjamini-Hochberg
(``false_discovery_control``), Pearson's r and its Fisher-z interval (``pearsonr``), exact
permutation tests (``permutation_test``, which enumerates every relabelling; ``hypergeom`` for
two groups of yes/no outcomes). Monte Carlo permutation tests draw their relabellings as one
matrix, with scipy's definitions (scipy draws one permutation at a time). The percentile
bootstrap is ours: lm-eval asks for each bound of each metric in a separate call, and the
resamples are seeded by the number of documents and the group's position, so that both bounds
come from the same resamples (``scipy.stats.bootstrap`` would draw others for each); they are a
matrix product of resampling counts with the values.

lm-eval computes a standard error itself only for its built-in ``mean`` aggregation, so
each proportion is reported as three metrics: the ``mean`` (with lm-eval's closed-form
standard error) and the two interval bounds below. Every statistic that the documents
cannot support raises ``ValueError`` (``harness`` reports it as ``N/A``).
"""

from lm_eval_bias.stats.intervals import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    SEED,
    bootstrap_mean_interval,
    ci_lower,
    ci_upper,
    difference_ci_lower,
    difference_ci_upper,
    difference_interval,
    difference_of_means,
    mean_interval,
    pearson_interval,
    range_ci_lower,
    range_ci_upper,
    range_interval,
    range_of_means,
    spread_ci_lower,
    spread_ci_upper,
    spread_interval,
    spread_of_means,
    top_choices,
    wilson_interval,
    wilson_lower_pct,
    wilson_upper_pct,
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
    PERMUTATIONS,
    benjamini_hochberg,
    binary_difference_pvalue,
    difference_pvalue,
    difference_pvalue_bh,
    range_pvalue,
    sign_test_bh,
    sign_test_pvalue,
)

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "CONFIDENCE",
    "PERMUTATIONS",
    "PairedDifference",
    "SEED",
    "adjust_bh",
    "benjamini_hochberg",
    "binary_difference_pvalue",
    "bootstrap_mean_interval",
    "ci_lower",
    "ci_upper",
    "difference_ci_lower",
    "difference_ci_upper",
    "difference_interval",
    "difference_of_means",
    "difference_pvalue",
    "detectable_difference",
    "difference_pvalue_bh",
    "mean_interval",
    "paired_means",
    "paired_proportions",
    "paired_statistic",
    "pearson_interval",
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
    "wilson_interval",
    "wilson_lower_pct",
    "wilson_upper_pct",
]
