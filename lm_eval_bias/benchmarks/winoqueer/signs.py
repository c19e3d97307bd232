"""WinoQueer's sign tests, derived from each pair's outcome rather than stored with it.

A pair's sign is +1 where it is stereotyped (its ``bias_score`` is 100), else -1 (a tie counts as not
stereotyped). The sign tests read it three ways: ``bias_score_pvalue`` (every pair's sign),
``bias_score_<slug>_pvalue`` (the signs of its subgroup's pairs) and, for every subgroup ``t`` of the
run, ``bias_score_<t>_pvalue_bh``: ``(subgroup, sign, t)`` of every pair, the family in which ``t``'s
p-value is Benjamini-Hochberg adjusted. Nine subgroups make eleven entries per pair, all given by its
``bias_score`` and subgroup; up to task version 1.6 (``winoqueer_mlm`` 1.4) every document held them,
in memory and in the samples file. Now the documents leave them out, and the task's hooks
(``lm_eval_bias.companions``) derive them: :func:`derived_lists` gives lm-eval's lists before it
aggregates, :func:`derived_entries` gives a logged sample its entries back for the readers of samples
files. Each clustered entry carries the pair's cluster (its template), as before.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from lm_eval_bias.benchmarks.winoqueer.record import SUBGROUPS, subgroup_slug
from lm_eval_bias.benchmarks.winoqueer.scoring import STEREOTYPED
from lm_eval_bias.companions import NotDerivable, in_cluster, value_and_cluster

#: The metric holding each pair's outcome, from which its signs follow.
OUTCOME = "bias_score"
_SUBGROUP_OF_SLUG = {subgroup_slug(name): name for name in SUBGROUPS}


def sign_of(outcome: float) -> int:
    """The sign of a pair whose ``bias_score`` is ``outcome``: +1 where it is stereotyped, else -1."""
    return 1 if outcome == STEREOTYPED else -1


def pair_entries(subgroup: str, subgroups: Sequence[str], outcome: float) -> dict:
    """One pair's sign-test entries, as its document held them up to task version 1.6.

    Parameters
    ----------
    subgroup : str
        The pair's subgroup.
    subgroups : sequence of str
        The subgroups of the run's data, each the target of a ``_pvalue_bh`` entry.
    outcome : float
        The pair's ``bias_score``: 100 stereotyped, else 0.

    Returns
    -------
    dict
        Metric name -> value, without the pair's cluster.
    """
    sign = sign_of(outcome)
    entries = {f"{OUTCOME}_pvalue": sign, f"{OUTCOME}_{subgroup_slug(subgroup)}_pvalue": sign}
    for other in subgroups:
        entries[f"{OUTCOME}_{subgroup_slug(other)}_pvalue_bh"] = (subgroup, sign, other)
    return entries


def derived_lists(raw_metrics: dict, subgroups: Sequence[str]) -> dict:
    """lm-eval's lists of the sign tests' metrics, from its lists of the outcomes (``WinoQueerTask``'s
    ``derived_lists`` hook).

    Parameters
    ----------
    raw_metrics : dict
        lm-eval's ``raw_metrics`` of the task: ``(bias_score, filter)`` and ``(bias_score_<slug>,
        filter)`` hold each pair's outcome, as ``companions.carrier``s or plain.
    subgroups : sequence of str
        The subgroups of the run's data, each the target of a ``_pvalue_bh`` metric (also where none
        of its pairs was evaluated, as before).

    Returns
    -------
    dict
        ``(metric, filter)`` -> a function of whether the metric's aggregation reads clusters, giving
        its list. A ``_pvalue_bh`` list holds each subgroup's pairs together, in ``subgroups``' order,
        each subgroup's in the documents' order: its aggregation (``stats.sign_test_bh``) groups them
        by subgroup, so it reads the lists it read from the documents.
    """
    built = {}
    for name, filter_name in raw_metrics:
        if name != OUTCOME:
            continue
        built[(f"{OUTCOME}_pvalue", filter_name)] = functools.partial(_signs, raw_metrics[(name, filter_name)])
        by_subgroup = []
        for subgroup in subgroups:
            outcomes = raw_metrics.get((f"{OUTCOME}_{subgroup_slug(subgroup)}", filter_name))
            if outcomes is not None:
                by_subgroup.append((subgroup, outcomes))
                built[(f"{OUTCOME}_{subgroup_slug(subgroup)}_pvalue", filter_name)] = functools.partial(
                    _signs, outcomes
                )
        for target in subgroups:
            built[(f"{OUTCOME}_{subgroup_slug(target)}_pvalue_bh", filter_name)] = functools.partial(
                _family, by_subgroup, target
            )
    return built


def _signs(outcomes: list, clustered: bool) -> list:
    signs = []
    for outcome, cluster in map(value_and_cluster, outcomes):
        signs.append(in_cluster(sign_of(outcome), cluster) if clustered else sign_of(outcome))
    return signs


def _family(by_subgroup: list, target: str, clustered: bool) -> list:
    rows = []
    for subgroup, outcomes in by_subgroup:
        for outcome, cluster in map(value_and_cluster, outcomes):
            row = (subgroup, sign_of(outcome), target)
            rows.append(in_cluster(row, cluster) if clustered else row)
    return rows


def _sign_entry(name: str) -> tuple[str, str | None] | None:
    """``("sign", slug)`` for ``bias_score_<slug>_pvalue`` (slug None for ``bias_score_pvalue``),
    ``("family", subgroup)`` for ``bias_score_<slug>_pvalue_bh``, else None."""
    if name == f"{OUTCOME}_pvalue":
        return "sign", None
    for suffix, kind in (("_pvalue_bh", "family"), ("_pvalue", "sign")):
        if name.startswith(f"{OUTCOME}_") and name.endswith(suffix):
            slug = name[len(OUTCOME) + 1 : -len(suffix)]
            if slug not in _SUBGROUP_OF_SLUG:
                return None
            return kind, (_SUBGROUP_OF_SLUG[slug] if kind == "family" else slug)
    return None


@functools.lru_cache(maxsize=16)
def _sign_entries_among(names: tuple[str, ...]) -> tuple[tuple, str | None]:
    """``(name, kind, which)`` of each sign-test entry among ``names`` (:func:`_sign_entry`), and the first
    of them that every pair held (None where there is none): a sample's left-out names are the same
    for most of its file, so they are read once."""
    found = tuple((name, *entry) for name in names if (entry := _sign_entry(name)) is not None)
    every_pair_held = next((name for name, kind, which in found if kind == "family" or which is None), None)
    return found, every_pair_held


def derived_entries(sample: dict, names: Sequence[str], cluster, clustered) -> dict:
    """The sign-test entries a logged sample leaves out, as its document held them up to task version
    1.6 (``WinoQueerTask``'s ``derived_entries`` hook). A sample that holds them (an earlier version's)
    gets none.

    Parameters and Returns: as ``SubgroupMetricsTask.derived_entries``.

    Raises
    ------
    companions.NotDerivable
        A sample whose ``bias_score`` is not 0 or 100, or whose ``doc`` names no WinoQueer subgroup.
    """
    wanted, every_pair_held = _sign_entries_among(tuple(names))
    if every_pair_held is None:
        return {}
    outcome = sample.get(OUTCOME)
    if type(outcome) not in (int, float) or outcome not in (0, STEREOTYPED):
        raise NotDerivable(
            f"its {OUTCOME} is {outcome!r}, not 0 or {STEREOTYPED:g}, and {every_pair_held} is derived from it"
        )
    doc = sample.get("doc")
    subgroup = doc.get("subgroup") if isinstance(doc, dict) else None
    if subgroup not in SUBGROUPS:
        raise NotDerivable(
            f"its doc's subgroup is {subgroup!r}, not one of WinoQueer's ({', '.join(SUBGROUPS)}), and "
            f"{every_pair_held} is derived from it"
        )
    sign, own = sign_of(outcome), subgroup_slug(subgroup)
    entries = {}
    for name, kind, which in wanted:
        if kind == "family":
            entry = [subgroup, sign, which]
        elif which in (None, own):
            entry = [sign]
        else:
            continue  # another subgroup's test, which this pair is not in
        if cluster is not None and clustered(name):
            entry.append(cluster)
        entries[name] = entry if len(entry) > 1 else entry[0]
    return entries
