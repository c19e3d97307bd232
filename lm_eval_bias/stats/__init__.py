"""Intervals, tests and corrections shared by every benchmark, on scipy, whose public functions
are all importable from here: per run, the intervals of shares of yes/no outcomes
(:mod:`.proportions`), of means of other values (:mod:`.means`), of the difference of two
groups' means (:mod:`.group_differences`) and of the range and spread of several groups' means
(:mod:`.group_ranges`), the betting intervals of values of a known range (:mod:`.bounded_means`),
the tests those intervals invert (:mod:`.significance`) and Pearson's r (:mod:`.correlation`);
between two runs over the same documents, :mod:`.paired` (on the resampling of
:mod:`.paired_resampling`).

Pure functions: numbers in, numbers out. Most are lm-eval aggregations (``aggregation:
!function ...`` in a task's ``metric_list``, or chosen by a metric's name in
``aggregations.aggregation_for``): lm-eval calls them with the list of per-document values of
one metric.

Each per-run interval holds its 95% level at the documents it is shown for. Every one was
checked by simulation (``tests/test_interval_coverage.py``: skewed and symmetric values in
[0, 1], shares of several samples, yes/no outcomes at p = 0.1 to 0.9, two to five groups, 2 to
100 documents per group): it covers the true value in at least 93% of draws wherever it is
returned. Below the documents an interval needs (its module's ``MIN_DOCUMENTS_*``, with the
figures that set them), it and its p-value raise ``ValueError("too few documents (n = N): ...")``
(the task reports ``N/A`` with it). A gap's or range's p-value is the test its interval inverts,
so the two never disagree about 0.

Documents built from one template are not independent: the aggregations in
:data:`CLUSTER_AWARE` also take each document's cluster id appended to its value
(:mod:`.clusters`), and then treat the cluster as the unit (``mean_design_effect`` says how much
the clustering inflates the variance of a mean), raising ``ValueError("too few clusters (G = g):
...")`` below the clusters an interval needs: the fewest from which the simulation held 93% in
every setting at and above them (cluster sizes 2 to 20, unequal; intra-cluster correlation 0.1 to
0.3; G = 2 to 100). The documents' own intervals on the same clustered draws covered 0.55 to 0.85
(means, gaps with separate clusters). When every cluster holds one document the independent
method applies, and its result is returned unchanged.

Every metric of ours has a known range (``metric_keys.MEASURE_RANGES``). The aggregations in
:data:`VALUE_RANGE_AWARE` take it as ``value_range`` (the harness binds it; the range ONE
document's value can take; for a gap, range or spread, that of the values compared): where the
intervals above cannot be shown (too few documents or clusters, or values that do not vary),
they give the betting interval of :mod:`.bounded_means` instead (Waudby-Smith & Ramdas 2024;
documents or clusters as units), which holds its level at every number of documents and
clusters, and as p-value the test that interval inverts; without it, they raise as above. Which
interval is shown where:

============================  ==========================================  =====================
statistic                     shown                                       where
============================  ==========================================  =====================
mean of yes/no outcomes       Clopper-Pearson                             from 1 document
  in clusters                 Korn-Graubard                               from 30 clusters
                              betting, clusters as units                  2 to 29 clusters
mean of other values          bootstrap-t                                 from 30 documents
                              betting, documents as units                 1 to 29 documents
  in clusters                 cluster bootstrap-t                         from 30 clusters
                              betting, clusters as units                  2 to 29 clusters
gap of yes/no outcomes        Agresti-Caffo                               from 3 a side
                              Bonferroni of the sides' betting bounds     1 or 2 on a side
  in clusters                 clustered Agresti-Caffo                     from 20 a side
                              Bonferroni of the sides' betting bounds,    under 20 on a side
                              each side's clusters as its units
gap of other values           Welch                                       from 2 a side
                              Bonferroni of the sides' betting bounds     1 on a side
  in clusters                 cluster-robust t                            from 30 a side
                              Bonferroni of the sides' betting bounds,    under 30 on a side
                              each side's clusters as its units
range, spread of group means  Bonferroni over the pairs' gaps, each       as each gap; every
                              shown as above                              pair betting where
                                                                          yes/no groups have
                                                                          under 30 documents
============================  ==========================================  =====================

scipy does the statistics where it has them: the exact binomial test (``binomtest``; the
Clopper-Pearson interval is its ``proportion_ci(method="exact")``, from the beta quantiles,
``proportions.clopper_pearson_interval``), Benjamini-Hochberg (``false_discovery_control``),
Pearson's r and its Fisher-z interval (``pearsonr``), Student's t and the normal law. The
bootstrap is ours: lm-eval asks for each bound of each metric in a separate call, and the
resamples are seeded, so that both bounds come from the same resamples (``scipy.stats.bootstrap``
would draw others for each); they are a matrix product of resampling counts with the values.

lm-eval computes a standard error itself only for its built-in ``mean`` aggregation, so
each proportion is reported as three metrics: the ``mean`` (with lm-eval's closed-form
standard error) and the two interval bounds below. Every statistic that the documents
cannot support raises ``ValueError`` (``harness`` reports it as ``N/A``, with the message).
"""

from lm_eval_bias.stats.bounded_means import (
    betting_gap_bounds,
    betting_mean_bounds,
    betting_mean_pvalue,
    betting_units,
)
from lm_eval_bias.stats.choices import top_choices
from lm_eval_bias.stats.confidence import CONFIDENCE
from lm_eval_bias.stats.correlation import pearson_interval
from lm_eval_bias.stats.group_differences import (
    difference_ci_lower,
    difference_ci_upper,
    difference_interval,
    difference_of_means,
)
from lm_eval_bias.stats.group_ranges import (
    range_ci_lower,
    range_ci_upper,
    range_interval,
    range_of_means,
    spread_ci_lower,
    spread_ci_upper,
    spread_interval,
    spread_of_means,
)
from lm_eval_bias.stats.means import (
    BOOTSTRAP_RESAMPLES,
    SEED,
    bootstrap_mean_interval,
    ci_lower,
    ci_upper,
    mean_design_effect,
    mean_interval,
)
from lm_eval_bias.stats.paired import (
    PairedDifference,
    adjust_bh,
    detectable_difference,
    paired_means,
    paired_proportions,
    paired_statistic,
)
from lm_eval_bias.stats.proportions import (
    clopper_pearson_interval,
    exact_lower_pct,
    exact_upper_pct,
    korn_graubard_counts,
    percent_interval,
    yes_no_interval,
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

# Each bound's aggregation, and the interval it is a bound of with the bound's place in it
# (``ci_lower(values, **kw) == mean_interval(values, **kw)[0]``): lm-eval asks for each bound apart,
# and the harness computes the interval once for both (``harness.SubgroupMetricsTask``).
BOUND_OF = {
    ci_lower: (mean_interval, 0),
    ci_upper: (mean_interval, 1),
    exact_lower_pct: (percent_interval, 0),
    exact_upper_pct: (percent_interval, 1),
    difference_ci_lower: (difference_interval, 0),
    difference_ci_upper: (difference_interval, 1),
    range_ci_lower: (range_interval, 0),
    range_ci_upper: (range_interval, 1),
    spread_ci_lower: (spread_interval, 0),
    spread_ci_upper: (spread_interval, 1),
}

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOUND_OF",
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
