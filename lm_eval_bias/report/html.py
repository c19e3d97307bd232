"""``lm-eval-bias report``: one self-contained HTML page (and a Markdown twin) per set of runs.

For each task in the results files: a short description, the figure its paper
uses (drawn as inline SVG by :mod:`lm_eval_bias.report.figures`) with a caption
saying what the reference line and the ideal value mean, a table of the
plotted numbers, and every other metric in a second table. Tasks this module
does not know get the table only.

How several runs share a figure: where a figure has one dimension (subgroups
of WinoQueer, GenderPair, TANGO disclosure, community probes) each run is one
colour of a grouped bar chart, with a legend, so that models are compared
subgroup by subgroup. Where a figure already uses colour or both axes for the
benchmark's own dimensions (TANGO's pronoun family x antecedent type, the SCM
warmth-competence plane), each run gets its own figure.

Every number shows its base: the tables have an N column (the documents a
number rests on, and the generations where a document has several), and each
section says, per run, how many documents were evaluated and whether the run is
partial (``--limit``, a non-official data file, a subgroup selection) and why;
figure captions repeat the partial runs.

The page has no script and loads nothing: a Content-Security-Policy forbids
every fetch, so a mistake would show as a browser console error (which the
tests check for) rather than a silent network request. Every text taken from
the results files is escaped, in HTML and in Markdown
(:func:`lm_eval_bias.report.outputs.markdown_cell`).
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lm_eval_bias.report import figures
from lm_eval_bias.report.figures import Estimate, Point, Reference, Series
from lm_eval_bias.metric_keys import is_comparison, slug
from lm_eval_bias.report.outputs import markdown_cell
from lm_eval_bias.report.results import (HEADLINE_METRICS, Metric, Run, TaskBase, date_text,
                                         require_task_results)

# More categories than this are drawn as horizontal bars, so that long names stay readable.
HORIZONTAL_FROM = 12
READING_NOTE = ("Intervals are 95%. \"N/A\" marks a metric the run could not compute. p-values are as the task "
                "reports them: Benjamini-Hochberg adjusted across subgroups where the task gives an adjusted one. "
                "N: the documents a number rests on (with the generations behind it where a document has several); "
                "\"task total\" marks an older results file without per-metric counts, where N is the task's "
                "evaluated documents, of which a subgroup's number uses only its own. A partial run (--limit, a "
                "non-official data file, a subgroup selection) is marked in its task's section with the reason.")


@dataclass(frozen=True)
class Entry:
    """One run's metrics for one task, with the label and colour it has throughout the report."""

    label: str
    colour: str
    metrics: dict[str, Metric]
    base: TaskBase  # what the run's numbers of this task rest on, and whether it is partial


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

    @property
    def anchor(self) -> str:
        return "task-" + re.sub(r"[^a-z0-9]+", "-", self.task.lower()).strip("-")


# --------------------------------------------------------------------------
# Runs, labels, colours


def run_labels(runs: Sequence[Run]) -> list[str]:
    """The model name of each run, made unique where two runs of one model share a task.

    Runs of one model on different tasks keep the plain name (and so one
    colour): they are one model's results split over files.
    """
    labels = [run.model for run in runs]
    for i, j in itertools.combinations(range(len(runs)), 2):
        if runs[i].model == runs[j].model and set(runs[i].tasks) & set(runs[j].tasks):
            for k in (i, j):
                labels[k] = f"{runs[k].model} ({runs[k].path.name})"
    # Same model and same file name in two folders: number them rather than print long paths.
    counts: dict[str, int] = {}
    for index, label in enumerate(labels):
        if labels.count(label) > 1:
            counts[label] = counts.get(label, 0) + 1
            labels[index] = f"{label} #{counts[label]}"
    return labels


def label_colours(labels: Sequence[str]) -> dict[str, str]:
    """One colour per label, in order of first appearance (the palette repeats after 8)."""
    colours: dict[str, str] = {}
    for label in labels:
        if label not in colours:
            colours[label] = figures.PALETTE[len(colours) % len(figures.PALETTE)]
    return colours


def estimate(metric: Metric | None) -> Estimate | None:
    """A figure's view of a metric: None when absent, no value (with the reason) when not a number."""
    if metric is None:
        return None
    if not isinstance(metric.value, float) or not math.isfinite(metric.value):
        return Estimate(None, note=str(metric.value) or "N/A")
    return Estimate(metric.value, metric.ci_lower, metric.ci_upper)


def suffixes(entries: Sequence[Entry], prefix: str, known: Sequence[str] = (),
             exclude: Callable[[str], bool] = lambda s: False) -> list[str]:
    """The ``<x>`` of every metric ``<prefix>_<x>`` in any entry: ``known`` ones in their order, then the rest sorted.

    Derived statistics (gaps, ranges, spreads) are left out: they compare subgroups.
    """
    found = {
        name[len(prefix) + 1:]
        for entry in entries for name in entry.metrics
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
        categories, bar_series(section.entries, names), value_range=(0, 100),
        value_label="bias score (% of pairs)", references=[Reference(50, "50: no preference (ideal)")],
        horizontal=len(categories) > HORIZONTAL_FROM, title="WinoQueer bias score by subgroup")
    section.figures.append(Figure(svg, (
        "Bias score per subgroup: the % of sentence pairs in which the model gives the shared words a higher "
        "likelihood in the sentence about the LGBTQ+ group than in the counterfactual one. Whiskers: 95% Wilson "
        "intervals. Dashed line at 50: no preference between the two sentences, the ideal. Above 50 is "
        "anti-LGBTQ+ bias; the paper leaves values below 50 undefined; 100 means every pair is stereotyped.")))
    section.plotted = names


def misgendering_section(section: Section) -> None:
    from lm_eval_bias import pronouns
    from lm_eval_bias.benchmarks import tango

    antecedents = list(tango.ANTECEDENT_TYPES.values())
    families = suffixes(section.entries, "consistency", known=pronouns.FAMILIES,
                        exclude=lambda s: s not in pronouns.FAMILIES)
    if not families:
        section.plotted = ["consistency"]
        section.note = "No per-family consistency metrics in these results: no figure."
        return
    # One colour per antecedent type; each run has its own figure, titled with its name.
    colours = ["#56B4E9", "#E69F00", "#009E73", "#CC79A7"]
    # tango_misgender_prob asks the model's probabilities instead of generating.
    measured = ("prompts whose most likely next-sentence pronoun" if section.task.endswith("_prob")
                else "continuations whose first pronoun")
    for entry in section.entries:
        series = [Series("all antecedents", "#7f7f7f",
                         tuple(estimate(entry.metrics.get(f"consistency_{f}")) for f in families))]
        for antecedent, colour in zip(antecedents, colours):
            cells = tuple(estimate(entry.metrics.get(f"consistency_{f}_{antecedent}")) for f in families)
            if any(cell is not None for cell in cells):
                series.append(Series(pretty(antecedent), colour, cells))
        svg = figures.bar_chart(
            families, series, value_range=(0, 1), value_label="pronoun consistency",
            references=[Reference(1, "1: always consistent (ideal)")],
            title=f"Pronoun consistency by family and antecedent type: {entry.label}")
        section.figures.append(Figure(svg, (
            f"{entry.label}. Share of {measured} belongs to the prompt's pronoun family (x axis), by antecedent "
            "type (colour; grey: all antecedent types together)."
            + ("" if section.task.endswith("_prob") else " Continuations without a pronoun are left out.")
            + " Whiskers: 95% intervals. Dashed line at 1: the pronoun family is always kept, the ideal; "
            "0: always misgendered.")))
    section.plotted = ["consistency"] + [f"consistency_{f}" for f in families]
    section.plotted += [f"consistency_{f}_{a}" for f in families for a in antecedents]


def _sorted_by_mean(categories: list[str], entries: Sequence[Entry], name_of: Callable[[str], str]) -> list[str]:
    """Categories by their mean value over the runs, highest first (no value last)."""
    def mean(category):
        values = [e.metrics[name_of(category)].value for e in entries
                  if name_of(category) in e.metrics and isinstance(e.metrics[name_of(category)].value, float)]
        return -sum(values) / len(values) if values else math.inf

    return sorted(categories, key=mean)


def _score_figure(section: Section, measure: str, categories: list[str], display: dict[str, str], *,
                  title: str, caption: str, sort: bool) -> list[str]:
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
    references = [Reference(v, f"mean{'' if len(means) == 1 else ' ' + e.label}", e.colour if len(means) > 1
                            else figures.AXIS_COLOUR) for e, v in means]
    if measure == "sentiment":
        references.append(Reference(0.0, "0: neutral"))
    svg = figures.bar_chart([display.get(c, pretty(c)) for c in categories], series, value_range=value_range,
                            value_label=measure.replace("_", " "), references=references,
                            horizontal=len(categories) > HORIZONTAL_FROM or len(section.entries) > 3, title=title)
    section.figures.append(Figure(svg, caption))
    return [measure] + names


TOXICITY_CAPTION = ("Whiskers: 95% intervals. Toxicity is Detoxify's probability that a text is toxic (0-1); "
                    "0 is ideal (nothing toxic), and the scale is stretched to the data. Dashed line: the run's "
                    "mean over all prompts, so a bar beyond it marks a group whose prompts draw more toxic "
                    "continuations than average; the fair outcome is equal bars.")
SENTIMENT_CAPTION = ("Whiskers: 95% intervals. Sentiment is VADER's compound score, -1 (most negative) to 1 (most "
                     "positive); the dashed line at 0 is neutral. Other dashed lines: the run's mean over all "
                     "prompts. The fair outcome is equal bars; below 0 means the continuations are negative.")


def disclosure_section(section: Section) -> None:
    plotted: list[str] = []
    for measure, caption in (("toxicity", TOXICITY_CAPTION), ("sentiment", SENTIMENT_CAPTION)):
        identities = suffixes(section.entries, measure)
        if not identities:
            continue
        plotted += _score_figure(
            section, measure, identities, {}, sort=True,
            title=f"{measure.capitalize()} of continuations by disclosed gender identity",
            caption=f"Mean {measure} of the model's continuations of disclosure prompts (\"<name> came out "
                    f"as <identity>\") per gender identity, most {'toxic' if measure == 'toxicity' else 'positive'} "
                    f"first. {caption}")
    section.plotted = plotted
    if not plotted:
        section.note = "No per-identity metrics in these results: no figure."


GENDERPAIR_GROUPS = {"group1": "group 1 (male)", "group2": "group 2 (female)",
                     "group3": "group 3 (non-binary, neutral)"}


def genderpair_section(section: Section) -> None:
    groups = suffixes(section.entries, "bias_pair_ratio", known=list(GENDERPAIR_GROUPS),
                      exclude=lambda s: not s.startswith("group"))
    names = ["bias_pair_ratio"] + [f"bias_pair_ratio_{g}" for g in groups]
    categories = ["all groups"] + [GENDERPAIR_GROUPS.get(g, pretty(g)) for g in groups]
    svg = figures.bar_chart(
        categories, bar_series(section.entries, names), value_range=(0, 1), value_label="bias pair ratio",
        references=[Reference(0.5, "0.5: no preference")], title="GenderPair bias pair ratio by gender group")
    section.figures.append(Figure(svg, (
        "Share of decided responses that use the biased descriptor of the offered (biased, anti-biased) pair, per "
        "gender group of the target. Whiskers: 95% intervals. Dashed line at 0.5: the model prefers neither "
        "descriptor. Lower is better (0: the biased descriptor is never chosen); equal bars across groups mean "
        "no difference between genders.")))
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
    measures = (("sentiment", SENTIMENT_CAPTION), ("toxicity", TOXICITY_CAPTION),
                ("identity_attack", TOXICITY_CAPTION.replace("Toxicity is Detoxify's probability that a text is "
                                                             "toxic", "Identity attack is Detoxify's probability "
                                                             "that a text attacks an identity")))
    for measure, caption in measures:
        demographics = suffixes(section.entries, measure)
        if not demographics:
            continue
        ordered, display = _community_order(demographics)
        plotted += _score_figure(
            section, measure, ordered, display, sort=False,
            title=f"{measure.replace('_', ' ').capitalize()} by demographic",
            caption=f"Mean {measure.replace('_', ' ')} of the model's continuations of the placeholder prompts, per "
                    f"demographic, grouped by dimension (in brackets). {caption}")
    section.plotted = plotted
    if not plotted:
        section.note = "No per-demographic metrics in these results: no figure."


SCM_SHARES = ("warmth_pick", "warmth_pick_norm", "warmth_mass", "warmth_ratio")


def scm_section(section: Section) -> None:
    """The warmth-competence plane for ratings; bars at 0.5 for the warmth-share tasks."""
    from lm_eval_bias.benchmarks import scm

    not_a_group = ("pick", "mass", "ratio", "word_share", "minus")
    groups = [g for g in suffixes(section.entries, "warmth", known=scm.GROUPS,
                                  exclude=lambda s: s.startswith(not_a_group))
              if any(f"competence_{g}" in e.metrics for e in section.entries)]
    plotted: list[str] = []
    if groups:
        plotted = ["warmth", "competence"] + [f"{axis}_{g}" for g in groups for axis in ("warmth", "competence")]
        _scm_planes(section, groups, scm.SURVEY_MEANS)
    for share in SCM_SHARES:
        # warmth_pick_norm_<group> also starts with warmth_pick_: it is its own share.
        share_groups = suffixes(section.entries, share, known=scm.GROUPS,
                                exclude=lambda s: s == "norm" or s.startswith("norm_"))
        if not share_groups:
            continue
        names = [share] + [f"{share}_{g}" for g in share_groups]
        svg = figures.bar_chart(
            ["all groups"] + [pretty(g) for g in share_groups], bar_series(section.entries, names),
            value_range=(0, 1), value_label=share.replace("_", " "),
            references=[Reference(0.5, "0.5: warmth and competence alike")],
            title=f"{share.replace('_', ' ').capitalize()} by group")
        section.figures.append(Figure(svg, (
            f"{share.replace('_', ' ').capitalize()} per group: the share of warmth (rather than competence) in the "
            "model's choices among the thesis's 22 key terms. Whiskers: 95% intervals where the task has them. "
            "Dashed line at 0.5: warmth and competence terms equally likely. Above 0.5 the group is seen more as "
            "warm than competent (the stereotype of, e.g., women in the survey), below as more competent than "
            "warm.")))
        plotted += names
    section.plotted = plotted
    if not plotted:
        section.note = "No per-group warmth/competence metrics in these results: no figure."


def _scm_planes(section: Section, groups: list[str], survey: dict) -> None:
    """One warmth x competence plane per run, with the survey's means as hollow points on the 1-5 scale."""
    ratings = section.task.startswith("scm_score")
    for entry in section.entries:
        points = [Point(pretty(g), estimate(entry.metrics.get(f"warmth_{g}")) or Estimate(None),
                        estimate(entry.metrics.get(f"competence_{g}")) or Estimate(None)) for g in groups]
        if ratings:
            x_range = y_range = (1.0, 5.0)
        else:
            x_range = figures.auto_range([v for p in points for v in (p.x.value, p.x.lower, p.x.upper)])
            y_range = figures.auto_range([v for p in points for v in (p.y.value, p.y.lower, p.y.upper)])
        survey_points = [Point(pretty(g), Estimate(survey["warmth"][g]), Estimate(survey["competence"][g]))
                         for g in groups if g in survey.get("warmth", {}) and g in survey.get("competence", {})]
        svg = figures.plane(
            points, x_range=x_range, y_range=y_range, x_label="warmth", y_label="competence",
            x_references=[Reference(3, "3: scale midpoint")] if ratings else (),
            y_references=[Reference(3, "3: scale midpoint")] if ratings else (),
            colour=entry.colour, comparison=survey_points if ratings else (),
            comparison_label="survey (97 people)", point_label=entry.label,
            title=f"Stereotype content: warmth x competence, {entry.label}")
        section.figures.append(Figure(svg, (
            f"{entry.label}. Each filled point is a group at its mean warmth (x) and competence (y) rating on the "
            "thesis's 1-5 scale (1: not at all, 5: extremely), averaged over the 11 key terms of each axis; the "
            "cross shows both 95% intervals. Hollow grey points, joined to the group's point by a dotted line: the "
            "thesis's survey of 97 people (how society is seen to view each group). Dashed lines at 3: the scale "
            "midpoint. There is no single ideal point: the "
            "closer to the survey, the more the model reproduces society's stereotypes; groups spread apart mean "
            "the model rates them differently." if ratings else
            f"{entry.label}. Each point is a group at its warmth (x) and competence (y) value; the cross shows both "
            "95% intervals.")))


BENCHMARKS: list[tuple[Callable[[str], bool], str, str, Callable[[Section], None]]] = [
    (lambda t: t.startswith("winoqueer"), "WinoQueer", (
        "Felkner et al., ACL 2023. % of sentence pairs in which the model prefers the stereotypical sentence about "
        "an LGBTQ+ group over the same sentence about a non-LGBTQ+ counterfactual."), winoqueer_section),
    (lambda t: t.startswith("tango_misgender"), "TANGO misgendering", (
        "Ovalle et al., FAccT 2023. Whether the model keeps a person's pronouns (he, she, they, xe, ey, fae) when "
        "continuing a sentence that introduces them."), misgendering_section),
    (lambda t: t.startswith("tango_disclosure"), "TANGO gender disclosure", (
        "Ovalle et al., FAccT 2023. Toxicity (Detoxify) and sentiment (VADER) of continuations of sentences in "
        "which someone discloses their gender identity."), disclosure_section),
    (lambda t: t.startswith("gendercare_genderpair"), "GenderCARE GenderPair", (
        "Tang et al., ACM CCS 2024. Whether the model describes a gender target with the biased or the "
        "anti-biased descriptor of a pair, per gender group."), genderpair_section),
    (lambda t: t.startswith("scm"), "Stereotype Content Model", (
        "Ostrow, MSc thesis, Edinburgh 2024. How warm and how competent the model says society sees gender and "
        "sexuality groups, compared with a survey."), scm_section),
    (lambda t: t.startswith("community_probes"), "Community probes", (
        "Wald and Pfahler. Sentiment and toxicity of the model's continuations of placeholder prompts about "
        "demographic groups, per demographic."), community_section),
]


def benchmark_of(task: str):
    """The (title, description, figure builder) of a task, or None for a task we have no figure for."""
    for matches, title, about, build in BENCHMARKS:
        if matches(task):
            return title, about, build
    return None


# --------------------------------------------------------------------------
# Building the report


def build_sections(runs: Sequence[Run]) -> list[Section]:
    """One section per task found in any run, known benchmarks first (in the README's order)."""
    require_task_results(list(runs))
    labels = run_labels(runs)
    colours = label_colours(labels)
    tasks = sorted({task for run in runs for task in run.tasks},
                   key=lambda t: (next((i for i, b in enumerate(BENCHMARKS) if b[0](t)), len(BENCHMARKS)), t))
    sections = []
    for task in tasks:
        entries = [Entry(label, colours[label], run.tasks[task], run.base(task)) for run, label in zip(runs, labels)
                   if task in run.tasks]
        known = benchmark_of(task)
        if known is None:
            sections.append(Section(task, task, "No figure for this task: every metric with its interval.", entries))
            continue
        title, about, build = known
        section = Section(task, f"{title}: {task}", about, entries)
        build(section)
        sections.append(section)
    return sections


def format_value(value) -> str:
    return figures.format_number(value) if isinstance(value, float) else str(value)


def table_rows(section: Section, names: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: metric, (model,) value, 95% CI, stderr, N, p-value (only when some metric has one).

    Rows are metric-major, so models sit next to each other on each metric.
    """
    several = len(section.entries) > 1
    metrics = [(name, entry, entry.metrics[name]) for name in names for entry in section.entries
               if name in entry.metrics]
    with_p = any(m.pvalue is not None for _, _, m in metrics)
    header = ["metric"] + (["model"] if several else []) + ["value", "95% CI", "stderr", "N"]
    header += ["p-value"] if with_p else []
    rows = []
    for name, entry, metric in metrics:
        interval = (f"[{figures.format_number(metric.ci_lower)}, {figures.format_number(metric.ci_upper)}]"
                    if metric.ci_lower is not None and metric.ci_upper is not None else "")
        row = [name] + ([entry.label] if several else []) + [
            format_value(metric.value), interval, f"{metric.stderr:.2g}" if metric.stderr is not None else "",
            metric.base]
        if with_p:
            row.append(f"{metric.pvalue:.3g}" if metric.pvalue is not None else "")
        rows.append(row)
    return header, rows


def other_metrics(section: Section) -> list[str]:
    """Every metric not already in the plotted table: the headline first, then by name."""
    shown = set(section.plotted)
    names = {name for entry in section.entries for name in entry.metrics} - shown
    headline = HEADLINE_METRICS.get(section.task)
    return sorted(names, key=lambda n: (n != headline, n))


def _run_rows(runs: Sequence[Run]) -> list[tuple[str, str, str, str, str]]:
    """(label, colour, file, date, tasks) per run; a partial task is marked "(partial)"."""
    labels = run_labels(runs)
    colours = label_colours(labels)
    rows = []
    for run, label in zip(runs, labels):
        tasks = ", ".join(task + (" (partial)" if run.base(task).is_partial else "") for task in sorted(run.tasks))
        rows.append((label, colours[label], str(run.path), date_text(run.date), tasks))
    return rows


def base_lines(section: Section) -> list[tuple[str, str]]:
    """Per run of the section: (label, "complete, 242 pairs") or (label, the reasons it is partial)."""
    return [(entry.label, "; ".join(entry.base.partial) if entry.base.is_partial else entry.base.status)
            for entry in section.entries]


def partial_note(section: Section) -> str:
    """A sentence for figure captions naming the section's partial runs, or ``""``."""
    partial = [f"{entry.label} ({'; '.join(entry.base.partial)})" for entry in section.entries if entry.base.is_partial]
    return f" Partial run{'s' if len(partial) > 1 else ''}: {', '.join(partial)}." if partial else ""


# --------------------------------------------------------------------------
# HTML

STYLE = """
body{font-family:sans-serif;max-width:1000px;margin:24px auto;padding:0 16px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}
.name,table.runs td{text-align:left}
figure{margin:16px 0 24px}figcaption{font-size:0.9em;color:#333;max-width:900px;margin-top:4px}
svg{max-width:100%;height:auto;display:block}
.swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-1px}
.note{color:#555;font-style:italic}details{margin:8px 0 16px}summary{cursor:pointer}
.partial{color:#a40000;font-weight:bold}
"""
# Nothing may be fetched: inline styles only. A violation would surface as a console error.
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table whose name columns (metric, model) are left-aligned and number columns right-aligned."""
    if not rows:
        return '<p class="note">No metrics.</p>'
    names = [h in ("metric", "model") for h in header]
    head = "".join(f'<th{" class=name" if n else ""}>{html.escape(h)}</th>' for h, n in zip(header, names))
    body = "".join("<tr>" + "".join(f'<td{" class=name" if n else ""}>{html.escape(c)}</td>'
                                    for c, n in zip(row, names)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_section(section: Section) -> str:
    parts = [f'<section id="{section.anchor}"><h2>{html.escape(section.title)}</h2>',
             f"<p>{html.escape(section.about)}</p>"]
    parts.append('<ul class="base">' + "".join(
        f"<li>{html.escape(label)}: <span class=partial>partial</span>: {html.escape(text)}</li>"
        if entry.base.is_partial else f"<li>{html.escape(label)}: {html.escape(text)}</li>"
        for entry, (label, text) in zip(section.entries, base_lines(section))) + "</ul>")
    if section.note:
        parts.append(f'<p class="note">{html.escape(section.note)}</p>')
    for figure in section.figures:
        caption = figure.caption + partial_note(section)
        parts.append(f"<figure>{figure.svg}<figcaption>{html.escape(caption)}</figcaption></figure>")
    if section.plotted:
        parts.append("<h3>Plotted values</h3>" + _html_table(*table_rows(section, section.plotted)))
        others = other_metrics(section)
        if others:
            parts.append(f"<details><summary>All other metrics ({len(others)})</summary>"
                         + _html_table(*table_rows(section, others)) + "</details>")
    else:
        parts.append(_html_table(*table_rows(section, other_metrics(section))))
    parts.append("</section>")
    return "".join(parts)


def to_html(runs: Sequence[Run], title: str = "lm-eval-bias report") -> str:
    """The whole report as one HTML document: inline CSS and SVG, no script, no external resource."""
    sections = build_sections(runs)
    run_table = "".join(
        f'<tr><td><span class="swatch" style="background:{colour}"></span>{html.escape(label)}</td>'
        f"<td>{html.escape(path)}</td><td>{html.escape(date)}</td><td>{html.escape(tasks)}</td></tr>"
        for label, colour, path, date, tasks in _run_rows(runs))
    contents = "".join(f'<li><a href="#{s.anchor}">{html.escape(s.title)}</a></li>' for s in sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>Whiskers and crosses show the intervals; dashed lines are the reference values each caption explains. "
        f"{html.escape(READING_NOTE)} Hover over a bar or point for its numbers.</p>"
        '<table class="runs"><thead><tr><th>run</th><th>results file</th><th>date</th><th>tasks</th></tr></thead>'
        f"<tbody>{run_table}</tbody></table>"
        f"<ul>{contents}</ul>"
        + "".join(_html_section(s) for s in sections)
        + "</body></html>\n"
    )


# --------------------------------------------------------------------------
# Markdown


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "*No metrics.*\n"
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_markdown(runs: Sequence[Run], title: str = "lm-eval-bias report") -> str:
    """The report's tables as Markdown; the figures are only in the HTML version."""
    sections = build_sections(runs)
    out = [f"# {markdown_cell(title)}\n\n",
           f"{READING_NOTE} Figures (with captions explaining each reference line) are in the HTML report: "
           "`lm-eval-bias report ... --html report.html`.\n\n",
           _markdown_table(["run", "results file", "date", "tasks"],
                           [[label, path, date, tasks] for label, _, path, date, tasks in _run_rows(runs)])]
    for section in sections:
        out.append(f"\n## {markdown_cell(section.title)}\n\n{markdown_cell(section.about)}\n\n")
        out += [f"- {markdown_cell(label)}: {'**partial**: ' if entry.base.is_partial else ''}{markdown_cell(text)}\n"
                for entry, (label, text) in zip(section.entries, base_lines(section))]
        if section.note:
            out.append(f"\n*{markdown_cell(section.note)}*\n")
        if section.plotted:
            out.append(f"\n### Plotted values ({len(section.figures)} figure"
                       f"{'' if len(section.figures) == 1 else 's'} in the HTML report)\n\n"
                       + _markdown_table(*table_rows(section, section.plotted)))
            others = other_metrics(section)
            if others:
                out.append("\n### Other metrics\n\n" + _markdown_table(*table_rows(section, others)))
        else:
            out.append("\n" + _markdown_table(*table_rows(section, other_metrics(section))))
    return "".join(out)
