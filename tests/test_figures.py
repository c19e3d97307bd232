"""The report's figures, drawn from their declarative specs (:mod:`lm_eval_bias.figure_specs`, in the records).

Every figure kind is drawn on fixed sections built here, and each section's figures (SVG and
caption), plotted metrics and note are pinned by a digest: the digests were taken from the
per-benchmark drawers these specs replaced, so the report draws every figure byte for byte as it did.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json

import pytest

from lm_eval_bias import figure_specs
from lm_eval_bias.benchmarks import figure_kind, records
from lm_eval_bias.report import sections
from lm_eval_bias.report.results import Metric, TaskBase
from lm_eval_bias.report.sections import Entry, Section

COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7")


def metric(name: str, value: float | str, half_width: float | None = 0.05) -> Metric:
    """A metric with a symmetric interval (none where ``half_width`` is None or the value is N/A)."""
    bounded = isinstance(value, float) and half_width is not None
    return Metric(
        "task",
        name,
        "none",
        value,
        None,
        value - half_width if bounded else None,
        value + half_width if bounded else None,
    )


def run(label: str, index: int, values: dict[str, float | str]) -> Entry:
    """One run's entry: every named metric with its value."""
    return Entry(label, COLOURS[index], {n: metric(n, v) for n, v in values.items()}, TaskBase("task"))


def section(kind: str, *entries: Entry) -> Section:
    return Section("task", "title", "about", list(entries), figure=kind)


def winoqueer_runs() -> list[Entry]:
    first = {"bias_score": 61.5, "bias_score_lgbtq": 70.25, "bias_score_gay": 44.0, "bias_score_two_spirit": 55.0}
    first |= {"bias_score_queer": "N/A", "bias_score_gay_minus_lgbtq_gap": 3.0}
    second = {"bias_score": 48.0, "bias_score_lgbtq": 52.5, "bias_score_transgender": 81.0}
    return [run("model a", 0, first), run("model <b>", 1, second)]


def many_subgroups_run() -> Entry:
    names = ["lgbtq", "queer", "transgender", "nonbinary", "bisexual", "pansexual", "lesbian", "asexual", "gay"]
    names += ["demisexual", "two_spirit", "intersex", "aromantic"]
    return run("model a", 0, {f"bias_score_{n}": 40.0 + i for i, n in enumerate(names)})


def tango_runs() -> list[Entry]:
    first = {"consistency": 0.7, "consistency_he": 0.9, "consistency_she": 0.85, "consistency_xe": 0.2}
    first |= {f"consistency_{f}_nongendered_name": 0.5 + i / 10 for i, f in enumerate(("he", "she", "xe"))}
    first |= {"consistency_he_distal": 0.95, "consistency_they_masculine_name": "N/A", "consistency_other": 0.1}
    second = {"consistency": 0.6, "consistency_he": 0.8, "consistency_they": 0.4}
    return [run("model a", 0, first), run("model b", 1, second)]


def disclosure_run(label: str, index: int, shift: float) -> Entry:
    values = {"toxicity": 0.02 + shift, "sentiment": 0.1 - shift}
    for i, identity in enumerate(("trans_woman", "nonbinary", "genderfluid", "cisgender_man")):
        values[f"toxicity_{identity}"] = 0.01 + 0.013 * i + shift
        values[f"sentiment_{identity}"] = 0.3 - 0.21 * i + shift
    values["toxicity_nonbinary_minus_trans_woman_gap"] = 0.02
    return run(label, index, values)


def genderpair_runs() -> list[Entry]:
    first = {"bias_pair_ratio": 0.42, "bias_pair_ratio_group1": 0.5, "bias_pair_ratio_group2": 0.35}
    first |= {"bias_pair_ratio_group3": 0.61, "bias_pair_ratio_undecided": 0.1, "bias_pair_ratio_group9": 0.2}
    second = {"bias_pair_ratio": 0.52, "bias_pair_ratio_group2": "N/A"}
    return [run("model a", 0, first), run("model b", 1, second)]


def scm_run(label: str, index: int, scale: float) -> Entry:
    values = {"warmth": 3.1 * scale, "competence": 3.4 * scale}
    for i, group in enumerate(("women", "men", "gay_men", "lesbians", "robots")):
        values[f"warmth_{group}"] = (2.0 + 0.5 * i) * scale
        values[f"competence_{group}"] = (4.0 - 0.4 * i) * scale
    values["competence_lesbians"] = "N/A"
    for share in ("warmth_pick", "warmth_pick_norm", "warmth_ratio"):
        values[share] = 0.48
        values |= {f"{share}_{g}": 0.4 + 0.05 * i for i, g in enumerate(("men", "women", "robots"))}
    values["warmth_word_share_women"] = 0.3
    values["warmth_minus_competence_women"] = 0.2
    return run(label, index, values)


def community_run(label: str, index: int, shift: float) -> Entry:
    values = {"sentiment": 0.05 + shift, "toxicity": 0.03 + shift, "identity_attack": 0.002}
    for i, demographic in enumerate(("rich", "woman", "aliens", "muslim", "trans")):
        values[f"sentiment_{demographic}"] = -0.2 + 0.1 * i + shift
        values[f"toxicity_{demographic}"] = 0.01 * (i + 1) + shift
    values["identity_attack_woman"] = 0.004
    return run(label, index, values)


def fixture_sections() -> dict[str, Section]:
    """Sections of every figure kind, with what makes its drawing differ: missing, N/A and unknown
    groups, comparisons between groups, one run or several, many groups."""
    disclosure = [disclosure_run(f"model {i}", i, 0.01 * i) for i in range(4)]
    return {
        "winoqueer_two_runs": section("bias_score_by_subgroup", *winoqueer_runs()),
        "winoqueer_horizontal": section("bias_score_by_subgroup", many_subgroups_run()),
        "winoqueer_nothing": section("bias_score_by_subgroup", run("model a", 0, {})),
        "tango_generations": section("consistency_of_generations", *tango_runs()),
        "tango_next_pronoun": section("consistency_of_next_pronoun", tango_runs()[0]),
        "tango_no_family": section("consistency_of_generations", run("model a", 0, {"consistency": 0.5})),
        "disclosure_two_runs": section("scores_by_identity", *disclosure[:2]),
        "disclosure_four_runs": section("scores_by_identity", *disclosure),
        "disclosure_toxicity_only": section(
            "scores_by_identity", run("model a", 0, {"toxicity": 0.2, "toxicity_agender": 0.3})
        ),
        "disclosure_nothing": section("scores_by_identity", run("model a", 0, {"toxicity": 0.2})),
        "genderpair": section("bias_pair_ratio_by_group", *genderpair_runs()),
        "scm_ratings": section("ratings_plane", scm_run("model a", 0, 1.0), scm_run("model b", 1, 0.9)),
        "scm_shares": section("shares_and_plane", scm_run("model a", 0, 0.2)),
        "scm_nothing": section("shares_and_plane", run("model a", 0, {"warmth": 0.5})),
        "community_one_run": section("scores_by_demographic", community_run("model a", 0, 0.0)),
        "community_two_runs": section(
            "scores_by_demographic", community_run("model a", 0, 0.0), community_run("model b", 1, 0.02)
        ),
    }


def drawing(drawn: Section) -> str:
    """Everything the drawing put into a section, as one text."""
    shown = {
        "figures": [[figure.svg, figure.caption] for figure in drawn.figures],
        "plotted": drawn.plotted,
        "note": drawn.note,
    }
    return json.dumps(shown, ensure_ascii=False)


def digest(drawn: Section) -> str:
    return hashlib.sha256(drawing(drawn).encode()).hexdigest()[:16]


# Taken from the per-benchmark drawers (winoqueer_section, misgendering_section, ...) before the rewrite.
OLD_DIGESTS = {
    "winoqueer_two_runs": "6cef0c41a7218cc7",
    "winoqueer_horizontal": "bcadbcdde15536f0",
    "winoqueer_nothing": "096aee927c77c501",
    "tango_generations": "db0b3a981e73181d",
    "tango_next_pronoun": "40f501ba291eb067",
    "disclosure_two_runs": "3eeef2c3e7907252",
    "disclosure_four_runs": "4ddd4cbc9c98cc1f",
    "disclosure_toxicity_only": "b7eae5cb6aab986f",
    "disclosure_nothing": "85f7e3bab6b21951",
    "genderpair": "5214bd7171d744a7",
    "scm_ratings": "cdc119348e73ac6f",
    "scm_shares": "d1350bda9282eda3",
    "scm_nothing": "19d58f7db6237a88",
    "community_one_run": "e128926542d1f7e2",
    "community_two_runs": "389b5f3242d97266",
}


@pytest.mark.parametrize("name", list(OLD_DIGESTS))
def test_each_figure_is_drawn_as_the_old_drawers_drew_it(name):
    drawn = fixture_sections()[name]
    sections.draw(drawn)
    assert digest(drawn) == OLD_DIGESTS[name]


def test_every_figure_kind_is_pinned_by_a_section():
    assert {fixture_sections()[name].figure for name in OLD_DIGESTS} == {
        kind for record in records().values() for kind in record.figures
    }


def test_a_kind_without_families_draws_nothing_plots_nothing_and_says_why():
    # The old drawer listed "consistency" as plotted here although it drew no figure.
    drawn = fixture_sections()["tango_no_family"]
    sections.draw(drawn)
    assert (drawn.figures, drawn.plotted) == ([], [])
    assert drawn.note == "No per-family consistency metrics in these results: no figure."


def test_groups_are_taken_ordered_and_labelled_as_their_spec_says():
    entry = run("m", 0, {f"x_{g}": 0.5 for g in ("b", "a", "group2", "group1", "grouped_minus_group1_gap", "c_d")})
    groups = figure_specs.Groups(order=("group2", "zz"), labels={"group2": "two"}, starting=("group",))
    assert sections.group_names([entry], "x", groups) == ["group2", "group1"]
    assert [sections.group_label(g, groups) for g in ("group2", "group1")] == ["two", "group1"]
    excluding = figure_specs.Groups(only=("a", "b", "c_d", "group1"), excluded=("b",), excluded_starting=("group",))
    assert sections.group_names([entry], "x", excluding) == ["a", "c_d"]
    dimensions = figure_specs.Groups(dimensions={"letters": ("c_d", "b"), "numbers": ("group1",)})
    assert sections.group_names([entry], "x", dimensions) == ["c_d", "b", "group1", "a", "group2"]
    labels = [sections.group_label(g, dimensions) for g in ("c_d", "group1", "a")]
    assert labels == ["c d (letters)", "group1 (numbers)", "a"]


def test_a_figure_kind_no_benchmark_has_is_refused_by_name():
    with pytest.raises(KeyError, match="no benchmark has the figure kind 'pie_chart'; known: bias_score_by_subgroup,"):
        figure_kind("pie_chart")


def test_the_specs_module_is_pure_data_importing_nothing_of_the_package():
    tree = ast.parse(inspect.getsource(figure_specs))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert imported == ["__future__", "collections.abc", "dataclasses"]
