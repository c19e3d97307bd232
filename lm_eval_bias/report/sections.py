"""The report's per-benchmark sections: which figure each task gets, with its caption.

A task's section is chosen by the ``benchmark`` its YAML metadata declares (which lm-eval copies
into the results file; see :mod:`lm_eval_bias.task_metadata`), and its variant by ``figure``, so a
renamed copy of one of our tasks gets the same figure. :data:`DRAWERS` holds, per figure kind, the
function that draws it; the section's title and description come from the benchmark's record
(:mod:`lm_eval_bias.benchmark_records`); :mod:`lm_eval_bias.report.html` assembles the page around them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lm_eval_bias.metric_keys import is_comparison, slug
from lm_eval_bias.report import figures
from lm_eval_bias.report.figures import Estimate, Point, Reference, Series
from lm_eval_bias.report.results import Metric, TaskBase
from lm_eval_bias.task_metadata import PaperRow

# More categories than this are drawn as horizontal bars, so that long names stay readable.
HORIZONTAL_FROM = 12


@dataclass(frozen=True)
class Entry:
    """One run's metrics for one task, with the label and colour it has throughout the report."""

    label: str
    colour: str
    metrics: dict[str, Metric]
    base: TaskBase  # what the run's numbers of this task rest on, and whether it is partial
    paper: PaperRow | None = None  # the paper's published row for this run's model, where there is one


@dataclass(frozen=True)
class Figure:
    svg: str
    caption: str


@dataclass
class Section:
    """Everything the report shows for one task."""

    task: str
    title: str
    about: str
    entries: list[Entry]
    figures: list[Figure] = field(default_factory=list)
    plotted: list[str] = field(default_factory=list)  # metric names in figure order
    note: str = ""  # said instead of a figure, e.g. why there is none
    figure: str = ""  # the figure kind the task's metadata names (its benchmark record's figures)
    headline: str | None = None  # the task's headline metric
    paper_source: str = ""  # the paper and table the entries' published values come from
    unit_note: str = ""  # what the documents were built from, and which intervals account for it

    @property
    def anchor(self) -> str:
        return "task-" + re.sub(r"[^a-z0-9]+", "-", self.task.lower()).strip("-")


# --------------------------------------------------------------------------
# Shared by the figures


def estimate(metric: Metric | None) -> Estimate | None:
    """A figure's view of a metric: None when absent, no value (with the reason) when not a number."""
    if metric is None:
        return None
    if not isinstance(metric.value, float) or not math.isfinite(metric.value):
        return Estimate(None, note=str(metric.value) or "N/A")
    return Estimate(metric.value, metric.ci_lower, metric.ci_upper)


def suffixes(
    entries: Sequence[Entry], prefix: str, known: Sequence[str] = (), exclude: Callable[[str], bool] = lambda s: False
) -> list[str]:
    """The ``<x>`` of every metric ``<prefix>_<x>`` in any entry: ``known`` ones in their order, then the rest sorted.

    Derived statistics (gaps, ranges, spreads) are left out: they compare subgroups.
    """
    found = {
        name[len(prefix) + 1 :]
        for entry in entries
        for name in entry.metrics
        if name.startswith(prefix + "_") and not is_comparison(name)
    }
    found = {s for s in found if s and not exclude(s)}
    ordered = [s for s in known if s in found]
    return ordered + sorted(found - set(ordered))


def pretty(slug: str) -> str:
    return slug.replace("_", " ")


def bar_series(entries: Sequence[Entry], names: Sequence[str]) -> list[Series]:
    """One series per run: its estimate of each named metric."""
    return [Series(e.label, e.colour, tuple(estimate(e.metrics.get(n)) for n in names)) for e in entries]


def upper_values(series: Sequence[Series]) -> list[float]:
    """Every drawn number (values and interval ends), to fit an automatic scale."""
    values = []
    for one in series:
        for est in one.estimates:
            if est is not None and est.value is not None:
                values += [v for v in (est.value, est.lower, est.upper) if v is not None]
    return values


# --------------------------------------------------------------------------
# Benchmarks: which figure each task gets


def winoqueer_section(section: Section) -> None:
    from lm_eval_bias.benchmarks import winoqueer

    display = {winoqueer.subgroup_slug(g): g for g in winoqueer.SUBGROUPS}
    subgroups = suffixes(section.entries, "bias_score", known=list(display))
    names = ["bias_score"] + [f"bias_score_{s}" for s in subgroups]
    categories = ["all pairs"] + [display.get(s, pretty(s)) for s in subgroups]
    svg = figures.bar_chart(
        categories,
        bar_series(section.entries, names),
        value_range=(0, 100),
        value_label="bias score (% of pairs)",
        references=[Reference(50, "50: no preference (ideal)")],
        horizontal=len(categories) > HORIZONTAL_FROM,
        title="WinoQueer bias score by subgroup",
    )
    section.figures.append(
        Figure(
            svg,
            (
                "Bias score per subgroup: the % of sentence pairs in which the model gives the shared words a higher "
                "likelihood in the sentence about the LGBTQ+ group than in the counterfactual one. Whiskers: 95% "
                "Clopper-Pearson intervals, each template one unit. Dashed line at 50: no preference between the two "
                "sentences, the ideal. Above 50 is "
                "anti-LGBTQ+ bias; the paper leaves values below 50 undefined; 100 means every pair is stereotyped."
            ),
        )
    )
    section.plotted = names


def misgendering_section(section: Section) -> None:
    from lm_eval_bias import pronouns
    from lm_eval_bias.benchmarks import tango

    antecedents = list(tango.ANTECEDENT_TYPES.values())
    families = suffixes(
        section.entries, "consistency", known=pronouns.FAMILIES, exclude=lambda s: s not in pronouns.FAMILIES
    )
    if not families:
        section.plotted = ["consistency"]
        section.note = "No per-family consistency metrics in these results: no figure."
        return
    # One colour per antecedent type; each run has its own figure, titled with its name.
    colours = ["#56B4E9", "#E69F00", "#009E73", "#CC79A7"]
    # tango_misgender_prob asks the model's probabilities instead of generating.
    by_probability = section.figure == "consistency_of_next_pronoun"
    measured = (
        "prompts whose most likely next-sentence pronoun" if by_probability else "continuations whose first pronoun"
    )
    for entry in section.entries:
        series = [
            Series(
                "all antecedents", "#7f7f7f", tuple(estimate(entry.metrics.get(f"consistency_{f}")) for f in families)
            )
        ]
        for antecedent, colour in zip(antecedents, colours):
            cells = tuple(estimate(entry.metrics.get(f"consistency_{f}_{antecedent}")) for f in families)
            if any(cell is not None for cell in cells):
                series.append(Series(pretty(antecedent), colour, cells))
        svg = figures.bar_chart(
            families,
            series,
            value_range=(0, 1),
            value_label="pronoun consistency",
            references=[Reference(1, "1: always consistent (ideal)")],
            title=f"Pronoun consistency by family and antecedent type: {entry.label}",
        )
        section.figures.append(
            Figure(
                svg,
                (
                    f"{entry.label}. Share of {measured} belongs to the prompt's pronoun family (x axis), by "
                    "antecedent type (colour; grey: all antecedent types together)."
                    + ("" if by_probability else " Continuations without a pronoun are left out.")
                    + " Whiskers: 95% intervals. Dashed line at 1: the pronoun family is always kept, the ideal; "
                    "0: always misgendered."
                ),
            )
        )
    section.plotted = ["consistency"] + [f"consistency_{f}" for f in families]
    section.plotted += [f"consistency_{f}_{a}" for f in families for a in antecedents]


def _sorted_by_mean(categories: list[str], entries: Sequence[Entry], name_of: Callable[[str], str]) -> list[str]:
    """Categories by their mean value over the runs, highest first (no value last)."""

    def mean(category):
        values = [
            e.metrics[name_of(category)].value
            for e in entries
            if name_of(category) in e.metrics and isinstance(e.metrics[name_of(category)].value, float)
        ]
        return -sum(values) / len(values) if values else math.inf

    return sorted(categories, key=mean)


def _score_figure(
    section: Section,
    measure: str,
    categories: list[str],
    display: dict[str, str],
    *,
    title: str,
    caption: str,
    sort: bool,
) -> list[str]:
    """Bars of ``<measure>_<category>`` per run, for toxicity-like (0 ideal) or sentiment-like measures.

    Returns the plotted metric names. Toxicity-like scales start at 0 and
    stretch to the data, since Detoxify means are often far below 1; sentiment
    keeps 0 (neutral) in view. Each run's mean over all prompts is a dashed
    line in its colour.
    """
    if sort:
        categories = _sorted_by_mean(categories, section.entries, lambda c: f"{measure}_{c}")
    names = [f"{measure}_{c}" for c in categories]
    series = bar_series(section.entries, names)
    overall = [(e, e.metrics.get(measure)) for e in section.entries]
    means = [(e, m.value) for e, m in overall if m is not None and isinstance(m.value, float)]
    # The means are drawn as lines, so the scale must hold them too.
    shown = upper_values(series) + [v for _, v in means]
    if measure == "sentiment":
        value_range = figures.auto_range(shown, include=[0.0], floor=-1.0, ceiling=1.0)
    else:
        value_range = figures.auto_range(shown, include=[0.0], floor=0.0, ceiling=1.0)
    references = [
        Reference(
            v, f"mean{'' if len(means) == 1 else ' ' + e.label}", e.colour if len(means) > 1 else figures.AXIS_COLOUR
        )
        for e, v in means
    ]
    if measure == "sentiment":
        references.append(Reference(0.0, "0: neutral"))
    svg = figures.bar_chart(
        [display.get(c, pretty(c)) for c in categories],
        series,
        value_range=value_range,
        value_label=measure.replace("_", " "),
        references=references,
        horizontal=len(categories) > HORIZONTAL_FROM or len(section.entries) > 3,
        title=title,
    )
    section.figures.append(Figure(svg, caption))
    return [measure] + names


TOXICITY_CAPTION = (
    "Whiskers: 95% intervals. Toxicity is Detoxify's probability that a text is toxic (0-1); "
    "0 is ideal (nothing toxic), and the scale is stretched to the data. Dashed line: the run's "
    "mean over all prompts, so a bar beyond it marks a group whose prompts draw more toxic "
    "continuations than average; the fair outcome is equal bars."
)
SENTIMENT_CAPTION = (
    "Whiskers: 95% intervals. Sentiment is VADER's compound score, -1 (most negative) to 1 (most "
    "positive); the dashed line at 0 is neutral. Other dashed lines: the run's mean over all "
    "prompts. The fair outcome is equal bars; below 0 means the continuations are negative."
)


def disclosure_section(section: Section) -> None:
    plotted: list[str] = []
    for measure, caption in (("toxicity", TOXICITY_CAPTION), ("sentiment", SENTIMENT_CAPTION)):
        identities = suffixes(section.entries, measure)
        if not identities:
            continue
        plotted += _score_figure(
            section,
            measure,
            identities,
            {},
            sort=True,
            title=f"{measure.capitalize()} of continuations by disclosed gender identity",
            caption=f"Mean {measure} of the model's continuations of disclosure prompts (\"<name> came out "
            f'as <identity>") per gender identity, most {"toxic" if measure == "toxicity" else "positive"} '
            f"first. {caption}",
        )
    section.plotted = plotted
    if not plotted:
        section.note = "No per-identity metrics in these results: no figure."


GENDERPAIR_GROUPS = {
    "group1": "group 1 (male)",
    "group2": "group 2 (female)",
    "group3": "group 3 (non-binary, neutral)",
}


def genderpair_section(section: Section) -> None:
    groups = suffixes(
        section.entries, "bias_pair_ratio", known=list(GENDERPAIR_GROUPS), exclude=lambda s: not s.startswith("group")
    )
    names = ["bias_pair_ratio"] + [f"bias_pair_ratio_{g}" for g in groups]
    categories = ["all groups"] + [GENDERPAIR_GROUPS.get(g, pretty(g)) for g in groups]
    svg = figures.bar_chart(
        categories,
        bar_series(section.entries, names),
        value_range=(0, 1),
        value_label="bias pair ratio",
        references=[Reference(0.5, "0.5: no preference")],
        title="GenderPair bias pair ratio by gender group",
    )
    section.figures.append(
        Figure(
            svg,
            (
                "Share of decided responses that use the biased descriptor of the offered (biased, anti-biased) pair, "
                "per gender group of the target. Whiskers: 95% intervals. Dashed line at 0.5: the model prefers "
                "neither descriptor. Lower is better (0: the biased descriptor is never chosen); equal bars across "
                "groups mean no difference between genders."
            ),
        )
    )
    section.plotted = names


def _community_order(demographics: list[str]) -> tuple[list[str], dict[str, str]]:
    """Demographics grouped by the paper's dimensions (as its figures are), with display labels."""
    from lm_eval_bias.benchmarks import community

    dimension_of = {}
    for dimension, members in community.PAPER_KEYWORDS.items():
        for demographic in members:
            dimension_of[slug(demographic)] = dimension
    known = [d for d in dimension_of if d in demographics]
    ordered = known + sorted(set(demographics) - set(known))
    display = {d: f"{pretty(d)} ({dimension_of[d]})" if d in dimension_of else pretty(d) for d in ordered}
    return ordered, display


def community_section(section: Section) -> None:
    plotted: list[str] = []
    measures = (
        ("sentiment", SENTIMENT_CAPTION),
        ("toxicity", TOXICITY_CAPTION),
        (
            "identity_attack",
            TOXICITY_CAPTION.replace(
                "Toxicity is Detoxify's probability that a text is toxic",
                "Identity attack is Detoxify's probability that a text attacks an identity",
            ),
        ),
    )
    for measure, caption in measures:
        demographics = suffixes(section.entries, measure)
        if not demographics:
            continue
        ordered, display = _community_order(demographics)
        plotted += _score_figure(
            section,
            measure,
            ordered,
            display,
            sort=False,
            title=f"{measure.replace('_', ' ').capitalize()} by demographic",
            caption=f"Mean {measure.replace('_', ' ')} of the model's continuations of the placeholder prompts, per "
            f"demographic, grouped by dimension (in brackets). {caption}",
        )
    section.plotted = plotted
    if not plotted:
        section.note = "No per-demographic metrics in these results: no figure."


SCM_SHARES = ("warmth_pick", "warmth_pick_norm", "warmth_mass", "warmth_ratio")


def scm_section(section: Section) -> None:
    """The warmth-competence plane for ratings; bars at 0.5 for the warmth-share tasks."""
    from lm_eval_bias.benchmarks import scm

    not_a_group = ("pick", "mass", "ratio", "word_share", "minus")
    groups = [
        g
        for g in suffixes(section.entries, "warmth", known=scm.GROUPS, exclude=lambda s: s.startswith(not_a_group))
        if any(f"competence_{g}" in e.metrics for e in section.entries)
    ]
    plotted: list[str] = []
    if groups:
        plotted = ["warmth", "competence"] + [f"{axis}_{g}" for g in groups for axis in ("warmth", "competence")]
        _scm_planes(section, groups, scm.SURVEY_MEANS)
    for share in SCM_SHARES:
        # warmth_pick_norm_<group> also starts with warmth_pick_: it is its own share.
        share_groups = suffixes(
            section.entries, share, known=scm.GROUPS, exclude=lambda s: s == "norm" or s.startswith("norm_")
        )
        if not share_groups:
            continue
        names = [share] + [f"{share}_{g}" for g in share_groups]
        svg = figures.bar_chart(
            ["all groups"] + [pretty(g) for g in share_groups],
            bar_series(section.entries, names),
            value_range=(0, 1),
            value_label=share.replace("_", " "),
            references=[Reference(0.5, "0.5: warmth and competence alike")],
            title=f"{share.replace('_', ' ').capitalize()} by group",
        )
        section.figures.append(
            Figure(
                svg,
                (
                    f"{share.replace('_', ' ').capitalize()} per group: the share of warmth (rather than competence) "
                    "in the model's choices among the thesis's 22 key terms. Whiskers: 95% intervals where the task "
                    "has them. Dashed line at 0.5: warmth and competence terms equally likely. Above 0.5 the group is "
                    "seen more as warm than competent (the stereotype of, e.g., women in the survey), below as more "
                    "competent than warm."
                ),
            )
        )
        plotted += names
    section.plotted = plotted
    if not plotted:
        section.note = "No per-group warmth/competence metrics in these results: no figure."


def _scm_planes(section: Section, groups: list[str], survey: dict) -> None:
    """One warmth x competence plane per run, with the survey's means as hollow points on the 1-5 scale."""
    ratings = section.figure == "ratings_plane"  # scm_score*: ratings on the thesis's 1-5 scale
    for entry in section.entries:
        points = [
            Point(
                pretty(g),
                estimate(entry.metrics.get(f"warmth_{g}")) or Estimate(None),
                estimate(entry.metrics.get(f"competence_{g}")) or Estimate(None),
            )
            for g in groups
        ]
        if ratings:
            x_range = y_range = (1.0, 5.0)
        else:
            x_range = figures.auto_range([v for p in points for v in (p.x.value, p.x.lower, p.x.upper)])
            y_range = figures.auto_range([v for p in points for v in (p.y.value, p.y.lower, p.y.upper)])
        survey_points = [
            Point(pretty(g), Estimate(survey["warmth"][g]), Estimate(survey["competence"][g]))
            for g in groups
            if g in survey.get("warmth", {}) and g in survey.get("competence", {})
        ]
        svg = figures.plane(
            points,
            x_range=x_range,
            y_range=y_range,
            x_label="warmth",
            y_label="competence",
            x_references=[Reference(3, "3: scale midpoint")] if ratings else (),
            y_references=[Reference(3, "3: scale midpoint")] if ratings else (),
            colour=entry.colour,
            comparison=survey_points if ratings else (),
            comparison_label="survey (97 people)",
            point_label=entry.label,
            title=f"Stereotype content: warmth x competence, {entry.label}",
        )
        section.figures.append(
            Figure(
                svg,
                (
                    f"{entry.label}. Each filled point is a group at its mean warmth (x) and competence (y) rating on "
                    "the thesis's 1-5 scale (1: not at all, 5: extremely), averaged over the 11 key terms of each "
                    "axis; the cross shows both 95% intervals. Hollow grey points, joined to the group's point by a "
                    "dotted line: the thesis's survey of 97 people (how society is seen to view each group). Dashed "
                    "lines at 3: the scale midpoint. There is no single ideal point: the "
                    "closer to the survey, the more the model reproduces society's stereotypes; groups spread apart "
                    "mean the model rates them differently."
                    if ratings
                    else f"{entry.label}. Each point is a group at its warmth (x) and competence (y) value; the cross "
                    "shows both 95% intervals."
                ),
            )
        )


# Figure kind (a task's metadata.figure, one of its benchmark record's figures) -> the function that
# draws it. A benchmark's title, description and order come from lm_eval_bias.benchmark_records.
DRAWERS: dict[str, Callable[[Section], None]] = {
    "bias_score_by_subgroup": winoqueer_section,
    "consistency_of_generations": misgendering_section,
    "consistency_of_next_pronoun": misgendering_section,
    "scores_by_identity": disclosure_section,
    "bias_pair_ratio_by_group": genderpair_section,
    "ratings_plane": scm_section,
    "shares_and_plane": scm_section,
    "scores_by_demographic": community_section,
}
