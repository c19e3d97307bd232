"""The report's per-benchmark sections: the figures each task gets, with their captions.

A task's section is chosen by the ``benchmark`` its YAML metadata declares (which lm-eval copies
into the results file; see :mod:`lm_eval_bias.task_metadata`), and its figures by ``figure``, so a
renamed copy of one of our tasks gets the same figures. A figure kind is data
(:mod:`lm_eval_bias.figure_specs`) in the benchmark's record, found by
:func:`lm_eval_bias.benchmarks.figure_kind`; :func:`draw`
draws it: bars per group (:class:`~lm_eval_bias.figure_specs.GroupBars`) or groups on a plane
(:class:`~lm_eval_bias.figure_specs.GroupPlane`). The section's title and description come from the
benchmark's record (:mod:`lm_eval_bias.benchmark_records`); :mod:`lm_eval_bias.report.html`
assembles the page around them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lm_eval_bias.benchmarks import figure_kind
from lm_eval_bias.figure_specs import RUN, AutoRange, GroupBars, GroupPlane, Groups, Line
from lm_eval_bias.metric_keys import is_comparison
from lm_eval_bias.report import figures
from lm_eval_bias.report.figures import Estimate, Point, Reference, Series
from lm_eval_bias.report.results import Metric, TaskBase
from lm_eval_bias.task_metadata import PaperRow


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


def draw(section: Section) -> None:
    """Draw the figures of the section's figure kind into it, with the metrics they plot, in order.

    Parameters
    ----------
    section : Section
        A task's section; its ``figure`` names the kind. Its ``figures`` and ``plotted`` grow; its
        ``note`` says why there is no figure when none is drawn.

    Raises
    ------
    KeyError
        When no benchmark has the section's figure kind.
    """
    kind = figure_kind(section.figure)
    for spec in kind.figures:
        if isinstance(spec, GroupPlane):
            section.plotted += _draw_plane(section, spec)
        else:
            section.plotted += _draw_bars(section, spec)
    if not section.figures:
        section.note = kind.none_drawn


# --------------------------------------------------------------------------
# Metrics and groups


def estimate(metric: Metric | None) -> Estimate | None:
    """A figure's view of a metric: None when absent, no value (with the reason) when not a number."""
    if metric is None:
        return None
    if not isinstance(metric.value, float) or not math.isfinite(metric.value):
        return Estimate(None, note=str(metric.value) or "N/A")
    return Estimate(metric.value, metric.ci_lower, metric.ci_upper)


def pretty(name: str) -> str:
    return name.replace("_", " ")


def group_names(entries: Sequence[Entry], metric: str, groups: Groups) -> list[str]:
    """The groups of ``metric``: the ``<x>`` of every ``<metric>_<x>`` in any entry that ``groups`` takes.

    Comparisons between groups (gaps, ranges, spreads) are left out.

    Parameters
    ----------
    entries : sequence of Entry
        The runs' metrics.
    metric : str
        The metric the groups are of.
    groups : Groups
        Which ``<x>`` are groups, and their order.

    Returns
    -------
    list of str
        The groups: those ``groups`` orders (or its dimensions hold) in that order, then the rest sorted.
    """
    found = {
        name[len(metric) + 1 :]
        for entry in entries
        for name in entry.metrics
        if name.startswith(metric + "_") and not is_comparison(name)
    }
    found = {x for x in found if x and _is_group(x, groups)}
    known = [*groups.order, *(g for members in groups.dimensions.values() for g in members)]
    ordered = list(dict.fromkeys(g for g in known if g in found))
    return ordered + sorted(found - set(ordered))


def _is_group(name: str, groups: Groups) -> bool:
    if groups.only is not None and name not in groups.only:
        return False
    if groups.starting and not name.startswith(groups.starting):
        return False
    return name not in groups.excluded and not name.startswith(groups.excluded_starting)


def group_label(group: str, groups: Groups) -> str:
    """A group as figures show it: its label, else ``"<group> (<dimension>)"``, else its name with spaces."""
    if group in groups.labels:
        return groups.labels[group]
    dimension = next((d for d, members in groups.dimensions.items() if group in members), None)
    return f"{pretty(group)} ({dimension})" if dimension is not None else pretty(group)


def _by_mean(groups: list[str], entries: Sequence[Entry], metric: str) -> list[str]:
    """Groups by their mean value over the runs, highest first (no value last)."""

    def mean(group):
        name = f"{metric}_{group}"
        values = [e.metrics[name].value for e in entries if name in e.metrics]
        values = [v for v in values if isinstance(v, float)]
        return -sum(values) / len(values) if values else math.inf

    return sorted(groups, key=mean)


def _references(lines: Sequence[Line]) -> list[Reference]:
    return [Reference(line.value, line.label) for line in lines]


def _fitted(value_range: tuple[float, float] | AutoRange, values: list[float | None]) -> tuple[float, float]:
    """A fixed range as it is; an automatic one fitted to the values (None ignored)."""
    if not isinstance(value_range, AutoRange):
        return value_range
    return figures.auto_range(values, include=value_range.include, floor=value_range.floor, ceiling=value_range.ceiling)


def _drawn_values(series: Sequence[Series]) -> list[float]:
    """Every drawn number (values and interval ends), to fit an automatic scale."""
    return [
        v
        for one in series
        for est in one.estimates
        if est is not None and est.value is not None
        for v in (est.value, est.lower, est.upper)
        if v is not None
    ]


# --------------------------------------------------------------------------
# Bars per group


def _draw_bars(section: Section, spec: GroupBars) -> list[str]:
    """Draw a :class:`GroupBars` into the section (nothing without a group, unless always); returns what it plots."""
    groups = group_names(section.entries, spec.metric, spec.groups)
    if spec.sort_by_mean:
        groups = _by_mean(groups, section.entries, spec.metric)
    if not groups and not spec.always:
        return []
    categories = ([spec.overall_label] if spec.overall_label else []) + [group_label(g, spec.groups) for g in groups]
    names = [spec.metric] + [f"{spec.metric}_{g}" for g in groups]
    if spec.per_run_series:
        for entry in section.entries:
            series = _run_series(entry, spec, groups)
            svg = _bar_chart(spec, categories, series, section.entries, run=entry.label)
            section.figures.append(Figure(svg, spec.caption.replace(RUN, entry.label)))
        split = [s.suffix for s in spec.per_run_series if s.suffix]
        return names + [f"{spec.metric}_{g}{suffix}" for g in groups for suffix in split]
    bars = names if spec.overall_label else names[1:]
    series = [Series(e.label, e.colour, tuple(estimate(e.metrics.get(n)) for n in bars)) for e in section.entries]
    section.figures.append(Figure(_bar_chart(spec, categories, series, section.entries), spec.caption))
    return names


def _run_series(entry: Entry, spec: GroupBars, groups: list[str]) -> list[Series]:
    """One run's series of a per-run figure: the group's own metric, and each split the run has."""
    series = []
    for one in spec.per_run_series:
        cells = tuple(estimate(entry.metrics.get(f"{spec.metric}_{g}{one.suffix}")) for g in groups)
        if not one.suffix or any(cell is not None for cell in cells):
            series.append(Series(one.label, one.colour, cells))
    return series


def _bar_chart(
    spec: GroupBars, categories: list[str], series: list[Series], entries: Sequence[Entry], run: str = ""
) -> str:
    """The SVG of one bar figure; ``run``: the run a per-run figure is of."""
    references = _mean_lines(entries, spec.metric) if spec.mean_lines else []
    # The means are drawn as lines, so the scale must hold them too.
    value_range = _fitted(spec.value_range, _drawn_values(series) + [r.value for r in references])
    horizontal = (spec.horizontal_above is not None and len(categories) > spec.horizontal_above) or (
        spec.horizontal_above_runs is not None and len(entries) > spec.horizontal_above_runs
    )
    return figures.bar_chart(
        categories,
        series,
        value_range=value_range,
        value_label=spec.value_label,
        references=references + _references(spec.references),
        horizontal=horizontal,
        title=spec.title.replace(RUN, run),
    )


def _mean_lines(entries: Sequence[Entry], metric: str) -> list[Reference]:
    """Each run's ``metric`` as a line: in the run's colour where there are several, else the axis's."""
    means = [(e, e.metrics[metric].value) for e in entries if metric in e.metrics]
    means = [(e, value) for e, value in means if isinstance(value, float)]
    several = len(means) > 1
    return [
        Reference(value, f"mean {e.label}" if several else "mean", e.colour if several else figures.AXIS_COLOUR)
        for e, value in means
    ]


# --------------------------------------------------------------------------
# Groups on a plane


def _draw_plane(section: Section, spec: GroupPlane) -> list[str]:
    """Draw a :class:`GroupPlane` per run into the section (nothing without a group); returns the metrics it plots."""
    x, y = spec.x_metric, spec.y_metric
    groups = [
        g for g in group_names(section.entries, x, spec.groups) if any(f"{y}_{g}" in e.metrics for e in section.entries)
    ]
    if not groups:
        return []
    labels = [group_label(g, spec.groups) for g in groups]
    comparison = [
        Point(label, Estimate(spec.comparison_x[g]), Estimate(spec.comparison_y[g]))
        for g, label in zip(groups, labels)
        if g in spec.comparison_x and g in spec.comparison_y
    ]
    for entry in section.entries:
        points = [
            Point(
                label,
                estimate(entry.metrics.get(f"{x}_{g}")) or Estimate(None),
                estimate(entry.metrics.get(f"{y}_{g}")) or Estimate(None),
            )
            for g, label in zip(groups, labels)
        ]
        svg = figures.plane(
            points,
            x_range=_fitted(spec.x_range, [v for p in points for v in (p.x.value, p.x.lower, p.x.upper)]),
            y_range=_fitted(spec.y_range, [v for p in points for v in (p.y.value, p.y.lower, p.y.upper)]),
            x_label=pretty(x),
            y_label=pretty(y),
            x_references=_references(spec.x_references),
            y_references=_references(spec.y_references),
            colour=entry.colour,
            comparison=comparison,
            comparison_label=spec.comparison_label,
            point_label=entry.label,
            title=spec.title.replace(RUN, entry.label),
        )
        section.figures.append(Figure(svg, spec.caption.replace(RUN, entry.label)))
    return [x, y] + [f"{axis}_{g}" for g in groups for axis in (x, y)]
