"""Documents built from one template are not independent: the cluster ids that a task appends to
its per-document values, and the cluster-robust variance that the clustered intervals rest on.

A cluster-aware aggregation (``stats.CLUSTER_AWARE``) receives each document's value with its
cluster id as the last element: a scalar ``v`` as ``(v, cluster)``, a tuple ``t`` as
``(*t, cluster)`` (a JSON samples file gives lists: the same). Ids are non-negative integers
below 2**52, exact as float64. Values without ids keep their old meaning; a list mixing both
shapes is an error.

The cluster-robust (CR1) variance of a statistic that is a sum of per-document scores is
``G / (G - 1) * sum over clusters of (the cluster's sum of scores)^2`` (Liang & Zeger 1986,
Biometrika 73:13; statsmodels' OLS with ``cov_type="cluster"``); with one document per cluster
it is the variance with independent documents, and their ratio is the design effect (Kish 1965,
*Survey Sampling*).
"""

from __future__ import annotations

from collections.abc import Sequence

# Cluster ids are hashes of template text, kept below 2**52 so that a float64 holds them exactly.
CLUSTER_ID_LIMIT = 2**52


def _is_sequence(value) -> bool:
    import numpy as np

    return isinstance(value, (tuple, list, np.ndarray))


def split_cluster_ids(values: Sequence, width: int):
    """Per-document values without their cluster ids, and the ids.

    Parameters
    ----------
    values : sequence
        Per-document values: each a scalar (``width`` 1) or a sequence of ``width`` elements, or
        either with a cluster id appended as its last element.
    width : int
        The number of elements of a value without its cluster id.

    Returns
    -------
    (list, numpy.ndarray or None)
        The values without ids (scalars for ``width`` 1, else tuples), and the ids as int64, or
        None where the values carry none.

    Raises
    ------
    TypeError
        When values mix both shapes, a value has neither, or an id is not a whole number in
        [0, 2**52): values no task writes (an edited samples file), never a statistic that the
        documents cannot support, which is a ValueError and reported as N/A.
    """
    plain, clustered, ids = [], [], []
    for value in values:
        length = len(value) if _is_sequence(value) else None
        if length == width + 1:
            clustered.append(value[0] if width == 1 else tuple(value[:width]))
            ids.append(value[width])
        elif (length is None and width == 1) or length == width:
            plain.append(value if width == 1 else tuple(value))
        else:
            raise TypeError(
                f"expected per-document values of {width} element(s), or {width + 1} with a cluster id last, "
                f"got {value!r}"
            )
    if plain and clustered:
        raise TypeError(
            f"per-document values mix two shapes: {len(clustered)} with a cluster id and {len(plain)} without"
        )
    if not clustered:
        return plain, None
    return clustered, _checked_ids(ids)


def _checked_ids(ids: list):
    import numpy as np

    try:
        numbers = np.asarray(ids, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"cluster ids must be whole numbers in [0, 2**52), got {ids[0]!r}") from None
    bad = np.flatnonzero(~((numbers >= 0) & (numbers < CLUSTER_ID_LIMIT) & (numbers == np.floor(numbers))))
    if bad.size:
        raise TypeError(f"cluster ids must be whole numbers in [0, 2**52), got {ids[bad[0]]!r}")
    return numbers.astype(np.int64)


def unit_index(ids):
    """Each document's cluster as 0 .. G-1, or None where there are no ids or every cluster holds
    one document (the independent methods then apply unchanged).

    Parameters
    ----------
    ids : numpy.ndarray or None
        One cluster id per document.

    Returns
    -------
    numpy.ndarray or None
    """
    import numpy as np

    if ids is None:
        return None
    distinct, unit_of = np.unique(ids, return_inverse=True)
    return None if distinct.size == ids.size else unit_of.astype(np.intp)


def robust_variance(scores, unit_of) -> float:
    """The cluster-robust (CR1) variance of ``sum(scores)``: ``G / (G - 1) * sum_g (sum of the
    scores in g)^2``, where a document's score is its residual's share of the statistic.

    Parameters
    ----------
    scores : numpy.ndarray
        Per-document scores, summing to 0.
    unit_of : numpy.ndarray
        Each document's cluster as 0 .. G-1, every one present, G at least 2.

    Returns
    -------
    float
    """
    import numpy as np

    units = int(unit_of.max()) + 1
    return units / (units - 1) * float(np.sum(np.bincount(unit_of, weights=scores, minlength=units) ** 2))


def design_effect(values, unit_of) -> float | None:
    """The cluster-robust variance of the mean of ``values`` over its variance with independent
    documents: ``G / (G - 1) * sum_g (sum of residuals in g)^2 / n^2`` (statsmodels' OLS with
    ``cov_type="cluster"``) over ``sum of squared residuals / ((n - 1) n)``; None without variance
    or with one cluster.

    Parameters
    ----------
    values : numpy.ndarray
        Per-document values (or paired differences).
    unit_of : numpy.ndarray
        Each document's cluster as 0 .. G-1, every one present.

    Returns
    -------
    float or None
    """
    import numpy as np

    n, units = values.size, int(unit_of.max()) + 1
    residuals = values - values.mean()
    independent = float(np.sum(residuals**2)) / ((n - 1) * n)
    if units < 2 or independent == 0:
        return None
    clustered = units / (units - 1) * float(np.sum(np.bincount(unit_of, weights=residuals) ** 2)) / n**2
    return clustered / independent


def require_clusters(units: int, fewest: int, what: str) -> None:
    """The "too few clusters" error: ``what`` holds its level from ``fewest`` clusters.

    Parameters
    ----------
    units : int
        The clusters present.
    fewest : int
        The fewest at which the simulation found ``what`` at its level.
    what : str
        The interval, as the message names it.

    Raises
    ------
    ValueError
        "too few clusters (G = g): ..." when ``units`` < ``fewest``.
    """
    if units < fewest:
        raise ValueError(
            f"too few clusters (G = {units}): {what} holds its 95% level from {fewest} clusters "
            "(tests/test_interval_coverage.py)"
        )
