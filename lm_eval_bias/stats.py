"""Confidence intervals shared by every benchmark.

Pure functions: numbers in, numbers out. The ``*_pct`` aggregations are meant
for lm-eval ``metric_list`` entries (``aggregation: !function ...``): lm-eval
calls them with the list of per-document values of one metric.

lm-eval computes a standard error itself only for its built-in ``mean``
aggregation, so each proportion is reported as three metrics: the ``mean``
(with lm-eval's closed-form standard error) and the two Wilson bounds below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

CONFIDENCE = 0.95


def z_value(confidence: float = CONFIDENCE) -> float:
    """Two-sided standard-normal quantile, e.g. 1.959964 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(
    successes: float, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Preferred over the normal (Wald) interval because it stays inside [0, 1]
    and keeps its coverage for proportions near 0 or 1 and for small
    subgroups, which WinoQueer has (a model scoring 100 on a subgroup still
    gets an interval of non-zero width).

    Returns ``(lower, upper)`` as proportions in [0, 1].
    """
    if n <= 0:
        raise ValueError(f"a proportion needs at least one observation, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}], got {successes!r}")
    z = z_value(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _count_percent_outcomes(values: Sequence[float]) -> tuple[int, int]:
    """(successes, n) from per-document outcomes coded 100 (yes) or 0 (no)."""
    successes = 0
    for value in values:
        if value == 100:
            successes += 1
        elif value != 0:
            raise ValueError(
                f"expected per-document outcomes of 0 or 100, got {value!r}"
            )
    return successes, len(values)


def wilson_lower_pct(values: Sequence[float]) -> float:
    """Lower 95% Wilson bound, in percent, of outcomes coded 0/100."""
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[0]


def wilson_upper_pct(values: Sequence[float]) -> float:
    """Upper 95% Wilson bound, in percent, of outcomes coded 0/100."""
    return 100.0 * wilson_interval(*_count_percent_outcomes(values))[1]
