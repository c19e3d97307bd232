"""The Stereotype Content Model's record: what the package's registries and the report know about it."""

from __future__ import annotations

from lm_eval_bias.benchmark_records import BenchmarkRecord
from lm_eval_bias.benchmarks.scm.constants import GROUPS, SURVEY_MEANS  # noqa: F401 (the report's plane)
from lm_eval_bias.figure_specs import (
    RUN,
    AutoRange,
    FigureKind,
    GroupBars,
    GroupPlane,
    Groups,
    Line,
)

# The report's figures of each figure kind the tasks' metadata may name.
SCM_PLANE_TITLE = f"Stereotype content: warmth x competence, {RUN}"
# warmth_<share>_<group> and warmth_minus_... also start with warmth_: they are no plane's groups.
SCM_PLANE_GROUPS = Groups(order=GROUPS, excluded_starting=("pick", "mass", "ratio", "word_share", "minus"))

# scm_score*: ratings on the thesis's 1-5 scale, beside the survey's.
SCM_RATINGS_PLANE = GroupPlane(
    x_metric="warmth",
    y_metric="competence",
    title=SCM_PLANE_TITLE,
    caption=(
        f"{RUN}. Each filled point is a group at its mean warmth (x) and competence (y) rating on "
        "the thesis's 1-5 scale (1: not at all, 5: extremely), averaged over the 11 key terms of each "
        "axis; the cross shows both 95% intervals. Hollow grey points, joined to the group's point by a "
        "dotted line: the thesis's survey of 97 people (how society is seen to view each group). Dashed "
        "lines at 3: the scale midpoint. There is no single ideal point: the "
        "closer to the survey, the more the model reproduces society's stereotypes; groups spread apart "
        "mean the model rates them differently."
    ),
    x_range=(1.0, 5.0),
    y_range=(1.0, 5.0),
    groups=SCM_PLANE_GROUPS,
    x_references=(Line(3, "3: scale midpoint"),),
    y_references=(Line(3, "3: scale midpoint"),),
    comparison_x=SURVEY_MEANS.get("warmth", {}),
    comparison_y=SURVEY_MEANS.get("competence", {}),
    comparison_label="survey (97 people)",
)

SCM_VALUES_PLANE = GroupPlane(
    x_metric="warmth",
    y_metric="competence",
    title=SCM_PLANE_TITLE,
    caption=f"{RUN}. Each point is a group at its warmth (x) and competence (y) value; the cross shows both 95% "
    "intervals.",
    x_range=AutoRange(),
    y_range=AutoRange(),
    groups=SCM_PLANE_GROUPS,
)


def _warmth_share(share: str) -> GroupBars:
    """Bars of one warmth share per group, at 0.5 where warmth and competence are alike."""
    shown = share.replace("_", " ")
    return GroupBars(
        metric=share,
        title=f"{shown.capitalize()} by group",
        caption=(
            f"{shown.capitalize()} per group: the share of warmth (rather than competence) "
            "in the model's choices among the thesis's 22 key terms. Whiskers: 95% intervals where the task "
            "has them. Dashed line at 0.5: warmth and competence terms equally likely. Above 0.5 the group is "
            "seen more as warm than competent (the stereotype of, e.g., women in the survey), below as more "
            "competent than warm."
        ),
        value_label=shown,
        value_range=(0, 1),
        # warmth_pick_norm_<group> also starts with warmth_pick_: it is its own share.
        groups=Groups(order=GROUPS, excluded=("norm",), excluded_starting=("norm_",)),
        references=(Line(0.5, "0.5: warmth and competence alike"),),
        overall_label="all groups",
    )


WARMTH_SHARES = tuple(_warmth_share(s) for s in ("warmth_pick", "warmth_pick_norm", "warmth_mass", "warmth_ratio"))
NO_WARMTH_COMPETENCE = "No per-group warmth/competence metrics in these results: no figure."
SCM_FIGURES = {
    "ratings_plane": FigureKind((SCM_RATINGS_PLANE, *WARMTH_SHARES), NO_WARMTH_COMPETENCE),
    "shares_and_plane": FigureKind((SCM_VALUES_PLANE, *WARMTH_SHARES), NO_WARMTH_COMPETENCE),
}


RECORDS = (
    BenchmarkRecord(
        name="scm",
        title="Stereotype Content Model",
        about=(
            "Ostrow, MSc thesis, Edinburgh 2024. How warm and how competent the model says society sees gender "
            "and sexuality groups, compared with a survey."
        ),
        figures=SCM_FIGURES,
        package="scm",
        option_prefixes=("scm_",),
    ),
)
