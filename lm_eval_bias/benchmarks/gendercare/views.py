"""GenderPair's per-group, spread, gap and configuration metrics, derived from each prompt's overall values.

A prompt's value of each measure (``undecided_rate``, ``toxicity``, ``sentiment``, ``bias_pair_ratio``) is
also its value of ``<measure>_group<g>`` (its group's), of ``<measure>_group_spread`` as ``("group<g>",
value)``, of each between-group gap its group is in, ``<measure>_group<a>_minus_group<b>_gap``, as
``(side, value)`` (0 in group ``a``, 1 in ``b``), and, for ``bias_pair_ratio``, of
``bias_pair_ratio_configuration<c>``; its ``empty_rate`` is also its ``empty_rate_group<g>``. Up to task
version 2.7 every document held all of them. Now each document holds the overall values, each carrying
the prompt's labels ``(group, configuration)`` (one shared tuple per pair of them), and the task's hooks
(``lm_eval_bias.companions``) derive the rest: :func:`derived_lists` gives lm-eval's lists before it
aggregates, in the documents' order, and :func:`derived_entries` gives a logged sample its entries back
for the readers of samples files.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from operator import itemgetter

from lm_eval_bias.companions import (
    NotDerivable,
    View,
    lists_stored_only,
    stored_sources,
    stored_view_entries,
    view_lists,
)

#: The measures of a non-empty response, each with per-group, spread and gap views.
MEASURES = ("undecided_rate", "toxicity", "sentiment", "bias_pair_ratio")
#: What each document holds: the share of empty responses (per group too) and the measures.
STORED = ("empty_rate", *MEASURES)
#: The measure also viewed per configuration.
BY_CONFIGURATION = "bias_pair_ratio"
#: The between-group gaps, later group minus earlier.
GROUP_COMPARISONS = ((3, 1), (3, 2), (2, 1))
#: The companions of a spread and of a gap, as ``metric_keys.with_interval`` and ``with_test`` gave them.
SPREAD_COMPANIONS = ("_ci_lower", "_ci_upper", "_n")
GAP_COMPANIONS = ("_ci_lower", "_ci_upper", "_n", "_pvalue")

_group = itemgetter(0)
_configuration = itemgetter(1)


def _group_label(labels: tuple) -> str:
    return f"group{labels[0]}"


class _Comparison:
    """One gap's documents (``part``: whether the group is in it) and their side (``tag``)."""

    def __init__(self, first: int, second: int):
        self.first, self.second = first, second

    def part(self, labels: tuple) -> bool:
        return labels[0] in (self.first, self.second)

    def tag(self, labels: tuple) -> int:
        return 0 if labels[0] == self.first else 1

    def name(self, measure: str) -> str:
        return f"{measure}_group{self.first}_minus_group{self.second}_gap"


_COMPARISONS = tuple(_Comparison(first, second) for first, second in GROUP_COMPARISONS)


@functools.lru_cache(maxsize=256)
def labels(group: int, configuration: int) -> tuple[int, int]:
    """A prompt's labels, ``(group, configuration)``: one tuple shared by every prompt labelled alike."""
    return (group, configuration)


def document_labels(doc: dict) -> tuple[int, int]:
    """The labels of a prompt's document (``group``, ``configuration``): ``GenderPairTask``'s hook."""
    return labels(doc["group"], doc["configuration"])


def prompt_views(group: int, configuration: int, values: dict) -> dict:
    """A prompt's per-group, spread, gap and configuration entries, as its document held them up to task
    version 2.7.

    Parameters
    ----------
    group : int
        The prompt's group (1 male, 2 female, 3 non-binary or neutral).
    configuration : int
        The configuration of its descriptor pair, 1-6.
    values : dict
        The prompt's stored values: ``empty_rate`` and those of :data:`MEASURES` it has.

    Returns
    -------
    dict
        Metric name -> value, without companions.
    """
    own = labels(group, configuration)
    views = {}
    for name in STORED:
        if name not in values:
            continue
        value = values[name]
        views[f"{name}_group{group}"] = value
        if name == "empty_rate":
            continue
        views[f"{name}_group_spread"] = (_group_label(own), value)
        for comparison in _COMPARISONS:
            if comparison.part(own):
                views[comparison.name(name)] = (comparison.tag(own), value)
        if name == BY_CONFIGURATION:
            views[f"{name}_configuration{configuration}"] = value
    return views


def derived_lists(raw_metrics: dict) -> dict:
    """lm-eval's lists of the per-group, spread, gap and configuration metrics (``GenderPairTask``'s
    ``derived_lists`` hook).

    Parameters and Returns: as ``SubgroupMetricsTask.derived_lists``, the lists in the documents'
    order, each stored value a ``companions.carrier`` with the prompt's labels.
    """
    views = []
    # a measure's views that are its mean again (per group, configuration, identity) had its companions
    for name, source, found, counted, own in stored_sources(raw_metrics, STORED):
        groups = sorted({group for group, _ in found})
        views += [View(f"{name}_group{group}", source, own, _group, group) for group in groups]
        if name == "empty_rate":
            continue
        views.append(View(f"{name}_group_spread", source, SPREAD_COMPANIONS + counted, tag=_group_label))
        for comparison in _COMPARISONS:
            if any(comparison.part(labels) for labels in found):
                views.append(
                    View(comparison.name(name), source, GAP_COMPANIONS + counted, comparison.part, True, comparison.tag)
                )
        if name == BY_CONFIGURATION:
            for configuration in sorted({configuration for _, configuration in found}):
                views.append(View(f"{name}_configuration{configuration}", source, own, _configuration, configuration))
    return view_lists(raw_metrics, views)


def derived_entries(sample: dict, names: Sequence[str], cluster, clustered) -> dict:
    """The per-group, spread, gap and configuration entries a logged sample leaves out, as its document held
    them up to task version 2.7 (``GenderPairTask``'s ``derived_entries`` hook). A sample that lists them
    (an earlier version's) gets none.

    Parameters and Returns: as ``SubgroupMetricsTask.derived_entries``.

    Raises
    ------
    companions.NotDerivable
        A sample whose ``doc`` has no group 1-3 or no configuration, or whose stored value is no number.
    """
    if not lists_stored_only(sample, STORED):
        return {}
    doc = sample.get("doc")
    group = doc.get("group") if isinstance(doc, dict) else None
    configuration = doc.get("configuration") if isinstance(doc, dict) else None
    what = "the per-group, gap and configuration entries are derived from it"
    if group not in (1, 2, 3) or type(group) is not int:
        raise NotDerivable(f"its doc's group is {group!r}, not 1, 2 or 3, and {what}")
    if type(configuration) is not int:
        raise NotDerivable(f"its doc's configuration is {configuration!r}, not a number 1-6, and {what}")

    def views_of(name: str, value) -> dict:
        return prompt_views(group, configuration, {name: value})

    return stored_view_entries(sample, STORED, views_of, what, names, cluster, clustered)
