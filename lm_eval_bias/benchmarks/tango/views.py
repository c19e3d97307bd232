"""TANGO disclosure's per-identity and gap metrics, derived from each prompt's overall values.

A prompt's ``toxicity``, ``toxic_share`` and ``sentiment`` are also its values of ``<measure>_<identity>``
(its gender identity's) and, where its ``gap_side`` is 0 (TGNB) or 1 (binary), of
``<measure>_tgnb_minus_binary_gap`` as ``(gap_side, value)``; its ``empty_rate`` is also its
``empty_rate_<identity>``. Up to task version 1.6 every document held all of them: eleven entries, four
numbers. Now each document holds the four, each carrying the prompt's labels ``(identity slug,
gap_side)`` (one shared tuple per identity), and the task's hooks (``lm_eval_bias.companions``) derive the
rest: :func:`derived_lists` gives lm-eval's lists before it aggregates, in the documents' order, and
:func:`derived_entries` gives a logged sample its entries back for the readers of samples files.
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
from lm_eval_bias.metric_keys import slug

#: The measures of the non-empty continuations, each with per-identity and gap views.
MEASURES = ("toxicity", "toxic_share", "sentiment")
#: What each document holds: the share of empty continuations (per identity too) and the measures.
STORED = ("empty_rate", *MEASURES)
GAP = "_tgnb_minus_binary_gap"
#: The companions of a gap, as ``metric_keys.with_test`` gave them.
GAP_COMPANIONS = ("_ci_lower", "_ci_upper", "_n", "_pvalue")

_identity = itemgetter(0)
_side = itemgetter(1)


def _in_gap(labels: tuple) -> bool:
    return labels[1] >= 0


@functools.lru_cache(maxsize=1024)
def labels(identity: str, gap_side: int) -> tuple[str, int]:
    """A prompt's labels, ``(identity slug, gap side)``: one tuple shared by every prompt of the identity."""
    return (slug(identity), gap_side)


def document_labels(doc: dict) -> tuple[str, int]:
    """The labels of a prompt's document (``gender_identity``, ``gap_side``): ``DisclosureTask``'s hook."""
    return labels(doc["gender_identity"], doc.get("gap_side", -1))


def prompt_views(identity: str, gap_side: int, values: dict) -> dict:
    """A prompt's per-identity and gap entries, as its document held them up to task version 1.6.

    Parameters
    ----------
    identity : str
        The prompt's gender identity, as its document gives it.
    gap_side : int
        0 for a TGNB identity, 1 for a binary one, -1 outside the gap.
    values : dict
        The prompt's stored values: ``empty_rate`` and, for a prompt with a non-empty continuation,
        the :data:`MEASURES`.

    Returns
    -------
    dict
        Metric name -> value, without companions.
    """
    identity = slug(identity)
    views = {}
    for name in STORED:
        if name in values:
            views[f"{name}_{identity}"] = values[name]
            if name != "empty_rate" and gap_side >= 0:
                views[name + GAP] = (gap_side, values[name])
    return views


def derived_lists(raw_metrics: dict) -> dict:
    """lm-eval's lists of the per-identity and gap metrics (``DisclosureTask``'s ``derived_lists`` hook).

    Parameters and Returns: as ``SubgroupMetricsTask.derived_lists``, the lists in the documents'
    order, each stored value a ``companions.carrier`` with the prompt's labels.
    """
    views = []
    # a measure's views that are its mean again (per group, configuration, identity) had its companions
    for name, source, found, counted, own in stored_sources(raw_metrics, STORED):
        for identity in sorted({identity for identity, _ in found}):
            views.append(View(f"{name}_{identity}", source, own, _identity, identity))
        if name != "empty_rate" and any(side >= 0 for _, side in found):
            views.append(View(name + GAP, source, GAP_COMPANIONS + counted, _in_gap, True, _side))
    return view_lists(raw_metrics, views)


def derived_entries(sample: dict, names: Sequence[str], cluster, clustered) -> dict:
    """The per-identity and gap entries a logged sample leaves out, as its document held them up to task
    version 1.6 (``DisclosureTask``'s ``derived_entries`` hook). A sample that lists them (an earlier
    version's) gets none.

    Parameters and Returns: as ``SubgroupMetricsTask.derived_entries``.

    Raises
    ------
    companions.NotDerivable
        A sample whose ``doc`` has no ``gender_identity`` or ``gap_side``, or whose stored value is no number.
    """
    if not lists_stored_only(sample, STORED):
        return {}
    doc = sample.get("doc")
    identity = doc.get("gender_identity") if isinstance(doc, dict) else None
    side = doc.get("gap_side") if isinstance(doc, dict) else None
    what = "the per-identity and gap entries are derived from it"
    if not isinstance(identity, str):
        raise NotDerivable(f"its doc's gender_identity is {identity!r}, not a name, and {what}")
    if type(side) is not int:
        raise NotDerivable(f"its doc's gap_side is {side!r}, not -1, 0 or 1, and {what}")

    def views_of(name: str, value) -> dict:
        return prompt_views(identity, side, {name: value})

    return stored_view_entries(sample, STORED, views_of, what, names, cluster, clustered)
