"""The community probes' per-demographic, range and pairwise metrics, derived from each prompt's overall values.

A prompt's value of each measure is also its value of ``<measure>_<demographic>`` and, for the paper's three
scores in a dimension of two or more demographics, of ``<measure>_<dimension>_range`` as ``(demographic,
value)`` and of each pairwise difference its demographic is in as ``(side, value)``
(``scoring.prompt_views``). Up to task version 1.7 every document held all of them. Now each document holds
the overall values (``scoring.probe_values``), each carrying the prompt's labels ``(demographic, dimension,
demographics of the dimension)`` (one shared tuple per demographic), and the task's hooks
(``lm_eval_bias.companions``) derive the rest: :func:`derived_lists` gives lm-eval's lists before it
aggregates, in the documents' order, and :func:`derived_entries` gives a logged sample its entries back for
the readers of samples files.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from itertools import combinations
from operator import itemgetter

from lm_eval_bias.benchmarks.community.scoring import SCORES, STORED, pair_metric, prompt_views
from lm_eval_bias.companions import (
    NotDerivable,
    View,
    lists_stored_only,
    stored_sources,
    stored_view_entries,
    view_lists,
)
from lm_eval_bias.errors import ConfigurationError

#: The companions of a range and of a pairwise difference, as ``metric_keys.with_test`` gave them.
TEST_COMPANIONS = ("_ci_lower", "_ci_upper", "_n", "_pvalue")

_demographic = itemgetter(0)
_dimension = itemgetter(1)


class _Pair:
    """One pairwise difference's documents (``part``: the prompt's demographic is one of the two) and
    their side (``tag``)."""

    def __init__(self, dimension: str, first: str, second: str):
        self.dimension, self.first, self.second = dimension, first, second

    def part(self, labels: tuple) -> bool:
        return labels[1] == self.dimension and labels[0] in (self.first, self.second)

    def tag(self, labels: tuple) -> int:
        return 0 if labels[0] == self.first else 1


@functools.lru_cache(maxsize=1024)
def labels(demographic: str, dimension: str, members: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]]:
    """A prompt's labels, ``(demographic, dimension, demographics of the dimension)``: one tuple shared by
    every prompt of the demographic."""
    return (demographic, dimension, members)


def document_labels(doc: dict) -> tuple[str, str, tuple[str, ...]]:
    """The labels of a prompt's document (``demographic_key``, ``dimension_key``,
    ``dimension_demographics``): the community task class's hook."""
    return labels(doc["demographic_key"], doc["dimension_key"], tuple(doc["dimension_demographics"]))


def compared_dimensions(found: set) -> list[tuple[str, tuple[str, ...]]]:
    """The dimensions of two or more demographics among the labels, each with its demographics.

    Raises
    ------
    ConfigurationError
        Two prompts of one dimension that list its demographics differently.
    """
    members: dict[str, tuple] = {}
    for _, dimension, listed in sorted(found):
        if members.setdefault(dimension, listed) != listed:
            raise ConfigurationError(
                f"the prompts of dimension {dimension!r} list its demographics differently ({list(members[dimension])} "
                f"and {list(listed)}); every prompt of a dimension must list the same (dimension_demographics)"
            )
    return [(dimension, listed) for dimension, listed in sorted(members.items()) if len(listed) >= 2]


def derived_lists(raw_metrics: dict) -> dict:
    """lm-eval's lists of the per-demographic, range and pairwise metrics (the task class's
    ``derived_lists`` hook).

    Parameters and Returns: as ``SubgroupMetricsTask.derived_lists``, the lists in the documents'
    order, each stored value a ``companions.carrier`` with the prompt's labels.
    """
    views = []
    # a measure's views that are its mean again (per group, configuration, identity) had its companions
    for name, source, found, counted, own in stored_sources(raw_metrics, STORED):
        for demographic in sorted({labels[0] for labels in found}):
            views.append(View(f"{name}_{demographic}", source, own, _demographic, demographic))
        if name not in SCORES:
            continue
        tested = TEST_COMPANIONS + counted
        for dimension, members in compared_dimensions(found):
            views.append(View(f"{name}_{dimension}_range", source, tested, _dimension, dimension, _demographic))
            for first, second in combinations(members, 2):
                pair = _Pair(dimension, first, second)
                if any(pair.part(labels) for labels in found):
                    gap = pair_metric(name, dimension, first, second)
                    views.append(View(gap, source, tested, pair.part, True, pair.tag))
    return view_lists(raw_metrics, views)


def derived_entries(sample: dict, names: Sequence[str], cluster, clustered) -> dict:
    """The per-demographic, range and pairwise entries a logged sample leaves out, as its document held
    them up to task version 1.7 (the task class's ``derived_entries`` hook). A sample that lists them (an
    earlier version's) gets none.

    Parameters and Returns: as ``SubgroupMetricsTask.derived_entries``.

    Raises
    ------
    companions.NotDerivable
        A sample whose ``doc`` has no demographic, dimension or list of the dimension's demographics, or
        whose stored value is no number.
    """
    if not lists_stored_only(sample, STORED):
        return {}
    doc = sample.get("doc") if isinstance(sample.get("doc"), dict) else {}
    what = "the per-demographic, range and pairwise entries are derived from it"
    for field in ("demographic_key", "dimension_key"):
        if not isinstance(doc.get(field), str):
            raise NotDerivable(f"its doc's {field} is {doc.get(field)!r}, not a name, and {what}")
    members = doc.get("dimension_demographics")
    if not isinstance(members, list) or not all(isinstance(member, str) for member in members):
        raise NotDerivable(f"its doc's dimension_demographics is {members!r}, not a list of names, and {what}")

    def views_of(name: str, value) -> dict:
        return prompt_views(doc["demographic_key"], doc["dimension_key"], members, {name: value})

    return stored_view_entries(sample, STORED, views_of, what, names, cluster, clustered)
