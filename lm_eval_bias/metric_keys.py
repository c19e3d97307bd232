"""How a benchmark's ``process_results`` names and fills its per-document metrics.

The suffixes are the contract with ``harness.SubgroupMetricsTask``, which picks
each metric's aggregation from its name (see ``harness.aggregation_for``).
"""

from __future__ import annotations

import re


def slug(name: str) -> str:
    """A metric-name form of a group's name: ``"Gender Fluid"`` -> ``"gender_fluid"``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def with_interval(metrics: dict, name: str, value) -> None:
    """``name`` and its ``_ci_lower``/``_ci_upper`` companions, all from one per-document value."""
    metrics[name] = metrics[f"{name}_ci_lower"] = metrics[f"{name}_ci_upper"] = value


def with_test(metrics: dict, name: str, value) -> None:
    """A group comparison (``_gap``/``_range``) with its interval and permutation p-value."""
    with_interval(metrics, name, value)
    metrics[f"{name}_pvalue"] = value


# Metrics that compare groups (a difference, a range, a spread) rather than describe one group,
# with or without an interval/p-value companion suffix.
_COMPARISON = re.compile(r"_(gap|range|spread)(_ci_lower|_ci_upper|_pvalue|_pvalue_bh)?$")


def is_comparison(name: str) -> bool:
    """``toxicity_group3_minus_group1_gap`` (or its ``_ci_lower`` ...) compares groups."""
    return _COMPARISON.search(name) is not None
