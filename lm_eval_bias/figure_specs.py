"""What a report figure shows, as data: the two figure kinds every benchmark's figures are made of.

- :class:`GroupBars`: a bar per group of one metric (``<metric>_<group>``), one colour per run, or
  one figure per run with a colour per series (``<metric>_<group><suffix>``);
- :class:`GroupPlane`: each group at its value of two metrics (x and y), one figure per run, with
  optional comparison points (e.g. a survey's means).

A task's figure kind (its metadata's ``figure``) names a :class:`FigureKind`: the figures drawn for
it, in order. Which metrics are groups is said by :class:`Groups`. Pure data: nothing here imports
the package, so a benchmark's record can hold its figures; :mod:`lm_eval_bias.report.sections`
draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# The text a title or caption template holds where the run's label goes (figures drawn per run).
RUN = "{run}"


@dataclass(frozen=True)
class Line:
    """A dashed reference line at ``value``, labelled (e.g. the ideal value)."""

    value: float
    label: str


@dataclass(frozen=True)
class AutoRange:
    """A value axis fitted to the drawn numbers: round ends holding them and ``include``, kept within
    [``floor``, ``ceiling``] (None: unbounded)."""

    include: tuple[float, ...] = ()
    floor: float | None = None
    ceiling: float | None = None


@dataclass(frozen=True)
class Groups:
    """Which ``<x>`` of the metrics ``<metric>_<x>`` are groups, in which order, with which labels.

    Comparisons between groups (gaps, ranges) are never groups. Groups in ``order`` come first in
    its order, then the others sorted; a group without a label is shown with its underscores as
    spaces.
    """

    order: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)  # group -> its label
    # Dimension -> its groups: order and labels (``"<group> (<dimension>)"``) follow the dimensions.
    dimensions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    only: tuple[str, ...] | None = None  # the groups there are (None: any <x>)
    starting: tuple[str, ...] = ()  # a group starts with one of these (empty: with anything)
    excluded: tuple[str, ...] = ()  # <x> that are not groups
    excluded_starting: tuple[str, ...] = ()  # <x> starting with one of these are not groups


@dataclass(frozen=True)
class RunSeries:
    """One colour of a per-run figure: ``<metric>_<group><suffix>`` for each group.

    The series of suffix ``""`` (the group's own metric) is always in the legend; another only where
    the run has one of its metrics.
    """

    label: str
    suffix: str
    colour: str


@dataclass(frozen=True)
class GroupBars:
    """Bars of ``<metric>_<group>`` per group (:class:`Groups`), one colour per run.

    Drawn where a run has a group, or always (``always``: the overall bar alone, when there is none).
    """

    metric: str
    title: str  # holds RUN where the figure is drawn per run
    caption: str  # likewise
    value_label: str
    value_range: tuple[float, float] | AutoRange
    groups: Groups = Groups()
    references: tuple[Line, ...] = ()
    overall_label: str = ""  # not empty: ``<metric>`` itself is the first bar group, so labelled
    always: bool = False  # drawn even without a group
    mean_lines: bool = False  # each run's ``<metric>`` is a dashed line in its colour
    sort_by_mean: bool = False  # groups by their mean over the runs, highest first
    horizontal_above: int | None = None  # more bar groups than this: bars along x (None: never)
    horizontal_above_runs: int | None = None  # likewise, for more runs than this
    # Not empty: one figure per run, one colour per series (and RUN in the title and caption).
    per_run_series: tuple[RunSeries, ...] = ()


@dataclass(frozen=True)
class GroupPlane:
    """Each group at its ``<x_metric>_<group>`` (x) and ``<y_metric>_<group>`` (y), one figure per run.

    A group is one of ``<x_metric>`` that some run also has a y metric of. Comparison points are
    drawn hollow, each joined to the group's point.
    """

    x_metric: str
    y_metric: str
    title: str  # holds RUN
    caption: str  # holds RUN
    x_range: tuple[float, float] | AutoRange
    y_range: tuple[float, float] | AutoRange
    groups: Groups = Groups()
    x_references: tuple[Line, ...] = ()
    y_references: tuple[Line, ...] = ()
    comparison_x: Mapping[str, float] = field(default_factory=dict)  # group -> the comparison's x
    comparison_y: Mapping[str, float] = field(default_factory=dict)  # group -> the comparison's y
    comparison_label: str = ""


@dataclass(frozen=True)
class FigureKind:
    """The figures of one figure kind, drawn in order, and what a section says when none is drawn."""

    figures: tuple[GroupBars | GroupPlane, ...]
    none_drawn: str = ""


# --------------------------------------------------------------------------
# Shared by several benchmarks' figures

# More bar groups than this are drawn as horizontal bars, so that long names stay readable.
HORIZONTAL_ABOVE = 12

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


def scores_by_group(measure: str, title: str, caption: str, groups: Groups, sort_by_mean: bool) -> GroupBars:
    """Bars of a toxicity-like (0 ideal) or a sentiment (``"sentiment"``) measure, each run's mean a line.

    Toxicity-like scales start at 0 and stretch to the data, since Detoxify means are often far
    below 1; sentiment keeps 0 (neutral) in view.

    Parameters
    ----------
    measure : str
        The metric: ``<measure>_<group>`` per group, ``<measure>`` the run's mean over all prompts.
    title, caption : str
        The figure's title and caption.
    groups : Groups
        Which of ``<measure>_<x>`` are groups.
    sort_by_mean : bool
        Whether groups are shown by their mean over the runs, highest first.

    Returns
    -------
    GroupBars
        The figure.
    """
    sentiment = measure == "sentiment"
    return GroupBars(
        metric=measure,
        title=title,
        caption=caption,
        value_label=measure.replace("_", " "),
        value_range=AutoRange(include=(0.0,), floor=-1.0 if sentiment else 0.0, ceiling=1.0),
        groups=groups,
        references=(Line(0.0, "0: neutral"),) if sentiment else (),
        mean_lines=True,
        sort_by_mean=sort_by_mean,
        horizontal_above=HORIZONTAL_ABOVE,
        horizontal_above_runs=3,
    )
