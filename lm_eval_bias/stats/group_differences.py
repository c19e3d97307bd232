"""Intervals of the difference of two groups' means (a gap), each with the test it inverts: one
estimate, standard error and reference law for both (:class:`Contrast`), so an interval excludes
0 exactly when ``significance.difference_pvalue`` is below 0.05, with clusters as without.

Yes/no outcomes on both sides get Agresti-Caffo, from :data:`MIN_DOCUMENTS_AGRESTI_CAFFO`
documents a side, other values Welch, from :data:`MIN_DOCUMENTS_WELCH`. With clusters the
variance is cluster-robust (CR1, :mod:`.clusters`) and the law Student's t with G_s - 1 degrees of
freedom: Agresti-Caffo's standard error times sqrt(max(1, design effect)), from
:data:`MIN_CLUSTERS_BINARY_GAP` clusters a side, and the cluster-robust t, from
:data:`MIN_CLUSTERS_GAP`. Where a ``value_range`` is given and these are not shown, the
Bonferroni combination of the two sides' betting bounds (:class:`BettingContrast`).

G_s is the number of clusters holding documents of the side that has fewer (a cluster may hold
both sides): where each side has its own clusters the variance of the gap is the sum of two
sides' cluster variances, and t(G - 1) over all G clusters under-covered (0.83 to 0.91 at 3 to
5 clusters a side, 0.92 at 15); Welch's lower bound on its degrees of freedom, min(G_0, G_1) - 1,
restored it. In simulation:

- Cluster-robust t of a gap of skewed values, each side its own clusters: 0.923, 0.925, 0.929
  and 0.936 at 5, 10, 20 and 30 clusters a side (2,000 draws; other settings 0.93 or more from 3).
- Clustered Agresti-Caffo: 0.955, 0.924, 0.940, 0.943 at 5, 10, 20, 30 clusters a side with
  correlation 0.3 (2,000 draws).

References: Welch (1947), Biometrika 34:28; Agresti & Caffo (2000), Am. Stat. 54:280; Cameron,
Gelbach & Miller (2008), Rev. Econ. Stat. 90:414 (t(G - 1) with few clusters).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

from lm_eval_bias.stats.bounded_means import betting_gap_bounds, betting_units, gap_pvalues, sharp_or_betting
from lm_eval_bias.stats.clusters import require_clusters, robust_variance, split_cluster_ids, unit_index
from lm_eval_bias.stats.confidence import CONFIDENCE, check_confidence, require_documents
from lm_eval_bias.stats.means import varies
from lm_eval_bias.stats.proportions import all_zero_or_one

# The fewest documents a side from which each interval held at least 93% coverage of its 95% level.
MIN_DOCUMENTS_WELCH = 2
MIN_DOCUMENTS_AGRESTI_CAFFO = 3
# The fewest clusters on each side from which each clustered interval held at least 93% coverage
# of its 95% level, at every number of clusters simulated above it.
MIN_CLUSTERS_GAP = 30
MIN_CLUSTERS_BINARY_GAP = 20


def split_sides(values: Sequence):
    """Side 0's and side 1's values, and the clusters of their documents (side 0's first) or None.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last.

    Returns
    -------
    first, second : numpy.ndarray
        Each side's values.
    unit_of : numpy.ndarray or None
        Each document's cluster as 0 .. G-1 (:func:`clusters.unit_index`), side 0's documents
        first; None without cluster ids.

    Raises
    ------
    ValueError
        A side without documents, or a value that is not finite.
    """
    import numpy as np

    pairs, ids = split_cluster_ids(values, 2)
    pairs = np.asarray(pairs, dtype=float).reshape(-1, 2)
    on_first, on_second = pairs[:, 0] == 0, pairs[:, 0] == 1
    first, second = pairs[on_first, 1], pairs[on_second, 1]
    if first.size == 0 or second.size == 0:
        raise ValueError("a difference of means needs documents on both sides")
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise ValueError("per-document values must be finite numbers")
    unit_of = None if ids is None else unit_index(np.concatenate([ids[on_first], ids[on_second]]))
    return first, second, unit_of


class Contrast:
    """A difference of two groups' means as its interval and its test both see it: an estimate,
    its standard error and the reference law of (estimate - difference) / standard error
    (Student's t with ``df`` degrees of freedom, or the normal where ``df`` is None).

    Yes/no outcomes on both sides: Agresti & Caffo (2000), one yes and one no added to each
    side, then the normal law (their Wald interval holds from 3 documents a side; the plain
    one does not). Otherwise Welch (1947): unequal variances, Welch-Satterthwaite degrees of
    freedom (holds from 2 documents a side, skewed values included).

    With clusters (``unit_of``: each document's cluster, side 0's documents first; a cluster
    may hold documents of both sides) the variance is cluster-robust and the law Student's t
    with G - 1 degrees of freedom (G clusters): :meth:`_clustered`.
    """

    def __init__(self, first, second, unit_of=None):
        binary = all_zero_or_one(first) and all_zero_or_one(second)
        if binary:
            fewest, what = MIN_DOCUMENTS_AGRESTI_CAFFO, "the Agresti-Caffo interval of a gap of yes/no outcomes"
        else:
            fewest, what = MIN_DOCUMENTS_WELCH, "the Welch interval of a gap"
        if unit_of is not None:
            self._require_clusters(first, unit_of, binary)
        require_documents(min(first.size, second.size), fewest, what)
        if unit_of is not None:
            self._clustered_estimate(first, second, unit_of, binary)
            return
        if binary:
            self.estimate, self.se = self._agresti_caffo(first, second)
            self.df = None
            return
        if not (varies(first) or varies(second)):
            raise ValueError("every document on each side has one value: a Welch interval needs them to vary")
        parts = [side.var(ddof=1) / side.size for side in (first, second)]
        self.estimate = float(first.mean() - second.mean())
        self.se = math.sqrt(parts[0] + parts[1])
        sides = (first, second)
        self.df = float((parts[0] + parts[1]) ** 2 / sum(part**2 / (side.size - 1) for part, side in zip(parts, sides)))

    @staticmethod
    def _agresti_caffo(first, second) -> tuple[float, float]:
        shares = [(side.sum() + 1.0) / (side.size + 2.0) for side in (first, second)]
        se = math.sqrt(sum(p * (1.0 - p) / (side.size + 2.0) for p, side in zip(shares, (first, second))))
        return float(shares[0] - shares[1]), se

    @staticmethod
    def _sparser_side_clusters(first, unit_of) -> int:
        """The clusters holding documents of the side that has fewer of them."""
        import numpy as np

        return min(np.unique(unit_of[: first.size]).size, np.unique(unit_of[first.size :]).size)

    def _require_clusters(self, first, unit_of, binary: bool) -> None:
        units = self._sparser_side_clusters(first, unit_of)
        if binary:
            what = "the clustered Agresti-Caffo interval of a gap of yes/no outcomes (clusters on each side)"
            require_clusters(units, MIN_CLUSTERS_BINARY_GAP, what)
        else:
            what = "the cluster-robust t interval of a gap (clusters on each side)"
            require_clusters(units, MIN_CLUSTERS_GAP, what)

    def _clustered_estimate(self, first, second, unit_of, binary: bool) -> None:
        """Each document's score is its residual (from its side's mean) over its side's documents,
        negated on side 1, so a cluster's score u_c = sum of side-0 residuals / n0 - sum of side-1
        residuals / n1 and the CR1 variance of the gap is G / (G - 1) * sum u_c^2. Yes/no outcomes
        keep Agresti-Caffo's estimate and standard error, times the square root of the design
        effect of the gap (at least 1): that variance over its value with one document a
        cluster."""
        import numpy as np

        scores = np.concatenate([(first - first.mean()) / first.size, (second.mean() - second) / second.size])
        clustered = robust_variance(scores, unit_of)
        self.df = float(self._sparser_side_clusters(first, unit_of) - 1)
        if binary:
            self.estimate, se = self._agresti_caffo(first, second)
            independent = robust_variance(scores, np.arange(scores.size))
            effect = clustered / independent if independent > 0 else 1.0
            self.se = se * math.sqrt(max(1.0, effect))
            return
        if not (varies(first) or varies(second)):
            raise ValueError("every document on each side has one value: a cluster-robust interval needs them to vary")
        if clustered <= 0:
            raise ValueError("the clusters' residuals cancel: a cluster-robust interval of a gap needs them to vary")
        self.estimate = float(first.mean() - second.mean())
        self.se = math.sqrt(clustered)

    def _law(self):
        from scipy.stats import norm, t

        return norm if self.df is None else t(self.df)

    def interval(self, confidence: float) -> tuple[float, float]:
        half = float(self._law().ppf(0.5 + 0.5 * confidence)) * self.se
        return self.estimate - half, self.estimate + half

    def pvalue(self) -> float:
        """Two-sided p-value of "the means are equal": below 1 - confidence exactly when
        :meth:`interval` excludes 0."""
        return float(min(1.0, 2.0 * self._law().sf(abs(self.estimate) / self.se)))


class BettingContrast:
    """A difference of two groups' means of values of a known range, as the Bonferroni
    combination of each side's betting bounds (:func:`bounded_means.betting_gap_bounds`): its interval at
    confidence c is ``[L0 - U1, U0 - L1]``, each side's bounds one-sided at (1 - c) / 4, which
    all hold together with probability at least c at every number of documents or clusters.
    Bonferroni's inequality needs no independence, so it holds where clusters hold documents of
    both sides; but the units are formed per side (each side's documents of a cluster are one
    unit of that side), since a cluster is a unit of both.

    Its test (:meth:`pvalue`) is the one the interval inverts (:func:`bounded_means.gap_pvalues`).
    """

    def __init__(self, first, second, unit_of, value_range):
        self.value_range = value_range
        self.sides = [
            (side, None if unit_of is None else _reindexed(unit_of[where]))
            for side, where in ((first, slice(None, first.size)), (second, slice(first.size, None)))
        ]
        self.units = [betting_units(side, value_range, side_unit_of) for side, side_unit_of in self.sides]

    def interval(self, confidence: float) -> tuple[float, float]:
        (first, first_unit_of), (second, second_unit_of) = self.sides
        lower, upper = betting_gap_bounds(
            first, second, self.value_range, first_unit_of, second_unit_of, (1.0 - confidence) / 2.0
        )
        return float(lower[0]), float(upper[0])

    def pvalue(self) -> float:
        """Two-sided p-value of "the means are equal": below 1 - confidence exactly when
        :meth:`interval` excludes 0."""
        (first, first_bound), (second, second_bound) = self.units
        return float(gap_pvalues(first, first_bound, second, second_bound)[0])


def _reindexed(unit_of):
    """Clusters numbered 0 .. G-1 as they appear among some documents."""
    import numpy as np

    return np.unique(unit_of, return_inverse=True)[1].astype(np.intp)


def contrast_of(first, second, unit_of=None, value_range=None):
    """The :class:`Contrast` of two sides, or below its documents or clusters (or where it needs
    values that vary) with a ``value_range``, the :class:`BettingContrast`.

    Parameters
    ----------
    first, second : numpy.ndarray
        Each side's per-document values.
    unit_of : numpy.ndarray, optional
        Each document's cluster as 0 .. G-1, side 0's documents first; None: independent documents.
    value_range : (float, float), optional
        The range one document's value can take.

    Returns
    -------
    Contrast or BettingContrast
        Either has ``interval(confidence)`` and ``pvalue()``.

    Raises
    ------
    ValueError
        As :class:`Contrast`, without a ``value_range``.
    TypeError
        As :func:`bounded_means.betting_units`, where the betting contrast is given.
    """
    return sharp_or_betting(
        partial(Contrast, first, second, unit_of),
        value_range,
        partial(BettingContrast, first, second, unit_of, value_range),
    )


def difference_of_means(values: Sequence[tuple[int, float]]) -> float:
    """lm-eval aggregation: mean(side 0) - mean(side 1).

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last (left
        out: a point estimate); each side needs a document.

    Returns
    -------
    float
    """
    first, second, _ = split_sides(values)
    return float(first.mean() - second.mean())


def difference_interval(
    values: Sequence[tuple[int, float]],
    confidence: float = CONFIDENCE,
    value_range: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Interval of mean(side 0) - mean(side 1): Agresti-Caffo when both sides are yes/no
    outcomes, Welch otherwise (:class:`Contrast`); with cluster ids, their clustered forms. With
    a ``value_range``, where those are not shown, the Bonferroni combination of the two sides'
    betting bounds (:class:`BettingContrast`). It excludes 0 exactly when
    ``significance.difference_pvalue`` (given the same ``value_range``) is below 1 - confidence.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1: at least 3 documents a side for yes/no
        outcomes (:data:`MIN_DOCUMENTS_AGRESTI_CAFFO`), 2 otherwise (:data:`MIN_DOCUMENTS_WELCH`);
        or ``(side, value, cluster)``, with also :data:`MIN_CLUSTERS_BINARY_GAP` (20) or
        :data:`MIN_CLUSTERS_GAP` (30) clusters holding each side's documents. With a
        ``value_range``, at least one document a side.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).
    value_range : (float, float), optional
        The range one document's value can take (the values compared: (0, 1) for a toxicity gap).

    Returns
    -------
    (float, float)
        The lower and upper bound.

    Raises
    ------
    ValueError
        "too few documents (n = N) ..." (N: the smaller side) or "too few clusters (G = g) ..."
        (g: the side with fewer) below those numbers; or when neither side's values vary; each
        only without a ``value_range``.
    TypeError
        A value outside ``value_range`` (:func:`bounded_means.betting_units`), where the betting interval is
        given.
    """
    check_confidence(confidence)
    return contrast_of(*split_sides(values), value_range).interval(confidence)


def difference_ci_lower(values: Sequence[tuple[int, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the lower 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last.
    value_range : (float, float), optional
        The range one document's value can take (:func:`difference_interval`).

    Returns
    -------
    float
    """
    return difference_interval(values, value_range=value_range)[0]


def difference_ci_upper(values: Sequence[tuple[int, float]], value_range: tuple[float, float] | None = None) -> float:
    """lm-eval aggregation: the upper 95% bound of :func:`difference_interval`.

    Parameters
    ----------
    values : sequence of (int, float) or of (int, float, int)
        Per-document ``(side, value)``, side 0 or 1, optionally with its cluster id last.
    value_range : (float, float), optional
        The range one document's value can take (:func:`difference_interval`).

    Returns
    -------
    float
    """
    return difference_interval(values, value_range=value_range)[1]
