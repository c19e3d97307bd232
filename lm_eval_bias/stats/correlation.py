"""Pearson's r with its Fisher-z interval (SCM's correlation of a model's ratings with a survey's)."""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.stats.confidence import CONFIDENCE


def pearson_interval(
    x: Sequence[float], y: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """Pearson's r with its Fisher-z confidence interval (``scipy.stats.pearsonr``).

    Parameters
    ----------
    x, y : sequence of float
        Equally long, at least 4 numbers each (the interval's standard error is 1/sqrt(n - 3)),
        neither constant.
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    (float, float, float)
        ``(r, lower, upper)``.
    """
    import numpy as np
    from scipy.stats import pearsonr

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 4:
        raise ValueError("a correlation interval needs two equally long lists of at least 4 numbers")
    if a.std() <= 1e-12 * max(1.0, abs(a).max()) or b.std() <= 1e-12 * max(1.0, abs(b).max()):
        raise ValueError("a correlation is undefined when one list is constant")
    result = pearsonr(a, b)
    interval = result.confidence_interval(confidence_level=confidence)
    return float(result.statistic), float(interval.low), float(interval.high)
