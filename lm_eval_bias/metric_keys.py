"""How a benchmark's ``process_results`` names and fills its per-document metrics.

The suffixes are the contract with ``harness.SubgroupMetricsTask``, which picks
each metric's aggregation from its name (see ``aggregations.aggregation_for``), or from a
``metric_list`` entry named with :data:`GROUP` that the name fills (:func:`fills`). The range of
every metric is declared here once (``MEASURE_RANGES``): the results reader refuses a number
of one of our tasks outside it.
"""

from __future__ import annotations

import functools
import math
import re
import sys


def slug(name: str) -> str:
    """A metric-name form of a group's name: ``"Gender Fluid"`` -> ``"gender_fluid"``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


@functools.lru_cache(maxsize=2**16)
def companion_names(name: str) -> tuple[str, str, str, str, str, str]:
    """``name`` and the names of its per-document companions: ``_ci_lower``, ``_ci_upper``, ``_n``,
    ``_n_samples``, ``_pvalue``.

    Each name is one string object shared by every document (interned): lm-eval keeps every
    document's metric names in its logged samples until the run ends, and a name built afresh for
    each of a million documents would cost a copy each.
    """
    return tuple(sys.intern(name + suffix) for suffix in ("", "_ci_lower", "_ci_upper", "_n", "_n_samples", "_pvalue"))


def with_interval(metrics: dict, name: str, value, samples: int | None = None) -> None:
    """``name`` and its companions from one per-document value: ``_ci_lower``/``_ci_upper`` (its
    interval), ``_n`` (counts the documents) and, when a document's value comes from several
    generations, ``_n_samples`` (how many)."""
    name, lower, upper, count, n_samples, _pvalue = companion_names(name)
    metrics[name] = metrics[lower] = metrics[upper] = value
    metrics[count] = 1
    if samples is not None:
        metrics[n_samples] = samples


def with_test(metrics: dict, name: str, value, samples: int | None = None) -> None:
    """A group comparison (``_gap``/``_range``) with its interval and permutation p-value."""
    with_interval(metrics, name, value, samples)
    metrics[companion_names(name)[5]] = value


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


# In a task's ``metric_list``, a metric named with this placeholder exists once per group the data
# has (``bias_score_<group>_ci_lower``): one entry declares its aggregation and direction for every
# group. lm-eval never sees such an entry (``harness.SubgroupMetricsTask`` keeps it apart).
GROUP = "<group>"
# What a metric's name may end with to say which statistic of the metric it is.
COMPANION_SUFFIXES = ("_ci_lower", "_ci_upper", "_design_effect", "_pvalue_bh", "_pvalue", "_n_samples", "_n")


def companion_suffix(name: str) -> str:
    """The statistic suffix that ends ``name`` (``"_ci_lower"`` ...), or ``""`` for the metric itself."""
    return next((suffix for suffix in COMPANION_SUFFIXES if name.endswith(suffix)), "")


def fills(pattern: str, name: str) -> bool:
    """Whether ``name`` is ``pattern`` with its :data:`GROUP` replaced by a group's name, as the
    same statistic: ``bias_score_gay_ci_lower`` fills ``bias_score_<group>_ci_lower``, while
    ``bias_score_gay_n`` (the count of ``bias_score_gay``) does not fill ``bias_score_<group>``.

    Parameters
    ----------
    pattern : str
        A metric name, with or without the placeholder.
    name : str
        A metric's name as ``process_results`` returns it.

    Returns
    -------
    bool
    """
    head, placeholder, tail = pattern.partition(GROUP)
    if not placeholder:
        return pattern == name
    return (
        len(name) > len(head) + len(tail)
        and name.startswith(head)
        and name.endswith(tail)
        and companion_suffix(name) == companion_suffix(tail)
    )


def declared_for(name: str, declared: dict):
    """What a ``metric_list`` declares for ``name`` (``declared``: metric name or pattern -> value):
    its own entry, else that of the longest pattern it :func:`fills`; None when it declares none."""
    if name in declared:
        return declared[name]
    patterns = sorted((pattern for pattern in declared if GROUP in pattern), key=len, reverse=True)
    return next((declared[pattern] for pattern in patterns if fills(pattern, name)), None)


# --------------------------------------------------------------------------
# The range of every metric our tasks emit, declared once (the metric cards in tasks/*/METRICS.md
# state them). A metric is named by its measure, then a group, a dimension or a comparison:
# ``bias_score_gay``, ``sentiment_class_poor_minus_rich_gap``, ``toxicity_group_spread``. The key
# is the measure (the longest one that starts the name); -inf or inf is an end without a bound.
UNBOUNDED = math.inf
MEASURE_RANGES: dict[str, tuple[float, float]] = {
    # WinoQueer: percentages of pairs; the mean summed log-probability of a sentence's shared words
    "bias_score": (0.0, 100.0),
    "tie_pct": (0.0, 100.0),
    "sent_x_score": (-UNBOUNDED, 0.0),
    "sent_y_score": (-UNBOUNDED, 0.0),
    # shares of documents or generations (TANGO, GenderPair, SCM, community probes)
    "consistency": (0.0, 1.0),
    "empty_rate": (0.0, 1.0),
    "no_pronoun_rate": (0.0, 1.0),
    "he_default_rate": (0.0, 1.0),
    "neo_determiner_rate": (0.0, 1.0),
    "tie_rate": (0.0, 1.0),
    "undecided_rate": (0.0, 1.0),
    "refusal_rate": (0.0, 1.0),
    "explicit_refusal_rate": (0.0, 1.0),
    "bias_pair_ratio": (0.0, 1.0),
    "toxic_share": (0.0, 1.0),
    "negative_share": (0.0, 1.0),
    "positive_share": (0.0, 1.0),
    "warmth_pick": (0.0, 1.0),
    "warmth_mass": (0.0, 1.0),
    "warmth_ratio": (0.0, 1.0),
    "warmth_word_share": (0.0, 1.0),
    "competence_word_share": (0.0, 1.0),
    # a TANGO difference of two consistencies, named without its measure
    "distal_minus_nongendered_gap": (-1.0, 1.0),
    # classifier scores: Detoxify's probabilities, VADER's compound
    "toxicity": (0.0, 1.0),
    "identity_attack": (0.0, 1.0),
    "sentiment": (-1.0, 1.0),
    # SCM: mean ratings on the 1-5 scale; Pearson correlations (survey_r_gap is one too, not a difference)
    "warmth": (1.0, 5.0),
    "competence": (1.0, 5.0),
    "survey_r": (-1.0, 1.0),
    "survey_r_gap": (-1.0, 1.0),
}
# Measures whose documents' values have another range than the measure: a gap named as its own
# measure, whose documents give (side, consistency).
DOCUMENT_RANGES: dict[str, tuple[float, float]] = {"distal_minus_nongendered_gap": (0.0, 1.0)}
# Companions of a metric whose range is not the metric's own.
COMPANION_RANGES: dict[str, tuple[float, float]] = {
    "_pvalue": (0.0, 1.0),
    "_pvalue_bh": (0.0, 1.0),
    "_stderr": (0.0, UNBOUNDED),
    "_design_effect": (0.0, UNBOUNDED),
    "_n": (0.0, UNBOUNDED),
    "_n_samples": (0.0, UNBOUNDED),
}


def _measure_of(name: str) -> str | None:
    """The longest declared measure that is ``name`` or starts it before a ``_``."""
    for end in sorted({len(name), *(i for i, char in enumerate(name) if char == "_")}, reverse=True):
        if name[:end] in MEASURE_RANGES:
            return name[:end]
    return None


def metric_range(name: str) -> tuple[float, float] | None:
    """The range of the values of a metric of our tasks (its ``_ci_lower``/``_ci_upper`` too).

    Parameters
    ----------
    name : str
        A metric's name as the results file has it, without a companion suffix
        (``bias_score_gay``, ``toxicity_tgnb_minus_binary_gap``).

    Returns
    -------
    (low, high), each end included, ``-inf``/``inf`` where the metric has no bound; None when no
    declared measure starts the name (a metric that is not ours). A difference of two means
    (``_gap``) spans the measure's width either way, a range of means (``_range``) up to its
    width, and a population standard deviation of means (``_spread``) up to half of it.
    """
    measure = _measure_of(name)
    if measure is None:
        return None
    low, high = MEASURE_RANGES[measure]
    width = high - low
    comparison = name[len(measure) :]
    if comparison.endswith("_gap"):
        return (-width, width)
    if comparison.endswith("_range"):
        return (0.0, width)
    if comparison.endswith("_spread"):
        return (0.0, width / 2)
    return (low, high)


def document_range(name: str) -> tuple[float, float] | None:
    """The range of one document's value of a metric of our tasks, or of what its companions read
    (a gap's ``(side, value)``: the value's): its measure's range, whatever the statistic (a gap
    named as its own measure, :data:`DOCUMENT_RANGES`, compares values of another range).

    Parameters
    ----------
    name : str
        A metric's name, with or without a companion suffix (``toxicity_a_minus_b_gap_ci_lower``).

    Returns
    -------
    (low, high), or None when no declared measure starts the name.
    """
    measure = _measure_of(name[: len(name) - len(companion_suffix(name))])
    return None if measure is None else DOCUMENT_RANGES.get(measure, MEASURE_RANGES[measure])


def range_text(bounds: tuple[float, float]) -> str:
    """A range as messages show it.

    Parameters
    ----------
    bounds : (float, float)
        (low, high) as :func:`metric_range` gives it.

    Returns
    -------
    ``"0 to 100"``, ``"at most 0"``, ``"at least 0"``, or ``"any number"``.
    """
    low, high = bounds
    if math.isinf(low) and math.isinf(high):
        return "any number"
    if math.isinf(low):
        return f"at most {high:g}"
    if math.isinf(high):
        return f"at least {low:g}"
    return f"{low:g} to {high:g}"
