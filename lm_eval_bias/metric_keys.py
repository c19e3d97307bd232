"""How a benchmark's ``process_results`` names and fills its per-document metrics.

The suffixes are the contract with ``harness.SubgroupMetricsTask``, which picks
each metric's aggregation from its name (see ``harness.aggregation_for``).
"""

from __future__ import annotations

import re


def slug(name: str) -> str:
    """A metric-name form of a group's name: ``"Gender Fluid"`` -> ``"gender_fluid"``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def with_interval(metrics: dict, name: str, value, samples: int | None = None) -> None:
    """``name`` and its companions from one per-document value: ``_ci_lower``/``_ci_upper`` (its
    interval), ``_n`` (counts the documents) and, when a document's value comes from several
    generations, ``_n_samples`` (how many)."""
    metrics[name] = metrics[f"{name}_ci_lower"] = metrics[f"{name}_ci_upper"] = value
    metrics[f"{name}_n"] = 1
    if samples is not None:
        metrics[f"{name}_n_samples"] = samples


def with_test(metrics: dict, name: str, value, samples: int | None = None) -> None:
    """A group comparison (``_gap``/``_range``) with its interval and permutation p-value."""
    with_interval(metrics, name, value, samples)
    metrics[f"{name}_pvalue"] = value


def with_empty_rate(metrics: dict, empty: int, total: int, groups=()) -> None:
    """``empty_rate`` (and ``empty_rate_<group>`` for each group) of one document: the share of
    its ``total`` generations that are empty. Empty generations count here only, and are left
    out of every other metric of the document."""
    if total < 1:
        raise ValueError("a document needs at least one generation")
    samples = total if total > 1 else None
    for name in ("empty_rate", *(f"empty_rate_{group}" for group in groups)):
        with_interval(metrics, name, empty / total, samples)


# Metrics that compare groups (a difference, a range, a spread) rather than describe one group,
# with or without an interval/p-value companion suffix.
_COMPARISON = re.compile(r"_(gap|range|spread)(_ci_lower|_ci_upper|_pvalue|_pvalue_bh|_n|_n_samples)?$")


def is_comparison(name: str) -> bool:
    """``toxicity_group3_minus_group1_gap`` (or its ``_ci_lower`` ...) compares groups."""
    return _COMPARISON.search(name) is not None
