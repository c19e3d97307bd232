"""Figures as inline SVG, drawn here so that a report needs no plotting library.

Each function returns one ``<svg>`` element as a string, ready to be pasted into
an HTML page: no script, no external resource, every piece of text escaped.
Two kinds of figure cover the benchmarks' papers:

- :func:`bar_chart`: grouped bars (one colour per series) with 95% interval
  whiskers and dashed reference lines, vertical or horizontal;
- :func:`plane`: a two-dimensional scatter (e.g. warmth x competence) with each
  point's two intervals drawn as a cross.

A missing estimate (``"N/A"`` in the results, or a subgroup a run lacks) is
drawn as a small "N/A" mark or not at all, never as a bar of height 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lm_eval_bias.report import svg
from lm_eval_bias.report.outputs import html_text as escape
from lm_eval_bias.report.svg import (
    AXIS_COLOUR,
    GRID_COLOUR,
    MISSING_COLOUR,
    PALETTE,
    SMALL_FONT_SIZE,
    auto_range,
    format_number,
    ticks,
)

# Importable from here as well: what the report's sections and tables use beside the figures.
__all__ = [
    "AXIS_COLOUR",
    "PALETTE",
    "Estimate",
    "Point",
    "Reference",
    "Series",
    "auto_range",
    "bar_chart",
    "describe",
    "format_number",
    "plane",
    "ticks",
]


@dataclass(frozen=True)
class Estimate:
    """A number with its 95% interval; ``value`` None means not available (``note`` says why)."""

    value: float | None
    lower: float | None = None
    upper: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Series:
    """One colour of bars: an estimate (or None, absent) per category."""

    label: str
    colour: str
    estimates: tuple[Estimate | None, ...]


@dataclass(frozen=True)
class Reference:
    """A dashed line across the plot at ``value``, labelled."""

    value: float
    label: str
    colour: str = AXIS_COLOUR


@dataclass(frozen=True)
class Point:
    """A labelled point of a plane, each coordinate with its interval."""

    label: str
    x: Estimate
    y: Estimate


# --------------------------------------------------------------------------


def describe(estimate: Estimate | None) -> str:
    """An estimate as tooltips show it.

    Parameters
    ----------
    estimate : Estimate or None
        The estimate; None for a category a run lacks.

    Returns
    -------
    str
        ``0.42 [0.38, 0.46]``, or the reason there is no value (``"absent"``, ``"N/A"``, its note).
    """
    if estimate is None:
        return "absent"
    if estimate.value is None:
        return estimate.note or "N/A"
    text = format_number(estimate.value)
    if estimate.lower is not None and estimate.upper is not None:
        text += f" [{format_number(estimate.lower)}, {format_number(estimate.upper)}]"
    return text


# --------------------------------------------------------------------------
# Grouped bars


@dataclass(frozen=True)
class _Frame:
    """Where a bar chart's plot area lies, and which way its value axis runs."""

    horizontal: bool
    low: float
    high: float
    left: float
    right: float  # x of the plot's right edge
    top: float
    bottom: float  # y of the plot's bottom edge

    def value_at(self, value: float) -> float:
        """Pixel position of a value along the value axis (clipped to the range)."""
        share = (min(max(value, self.low), self.high) - self.low) / (self.high - self.low)
        if self.horizontal:
            return self.left + share * (self.right - self.left)
        return self.bottom - share * (self.bottom - self.top)


def _title(title: str) -> tuple[list[str], float]:
    """A figure's title, when it has one; returns the pieces and the y below them."""
    if not title:
        return [], 12.0
    return [svg.text(12, 24.0, title, weight="bold", size=13)], 34.0


def _heading(title: str, series: Sequence[Series], width: float) -> tuple[list[str], float]:
    """Title and (for more than one series) the colour legend; returns the pieces and the y below them."""
    pieces, top = _title(title)
    if len(series) > 1:
        legend_pieces, legend_height = svg.legend([(s.label, s.colour) for s in series], 12, top, width - 24)
        pieces += legend_pieces
        top += legend_height + 6
    return pieces, top + 10


def _value_axis(frame: _Frame, value_label: str) -> list[str]:
    """Gridlines, tick labels, the axis line and the axis title."""
    pieces = []
    for tick in ticks(frame.low, frame.high):
        p = frame.value_at(tick)
        if frame.horizontal:
            pieces.append(svg.line(p, frame.top, p, frame.bottom, GRID_COLOUR))
            pieces.append(svg.text(p, frame.bottom + 16, format_number(tick), anchor="middle", size=SMALL_FONT_SIZE))
        else:
            pieces.append(svg.line(frame.left, p, frame.right, p, GRID_COLOUR))
            pieces.append(svg.text(frame.left - 6, p + 4, format_number(tick), anchor="end", size=SMALL_FONT_SIZE))
    if frame.horizontal:
        pieces.append(svg.text((frame.left + frame.right) / 2, frame.bottom + 36, value_label, anchor="middle"))
        pieces.append(svg.line(frame.left, frame.top, frame.left, frame.bottom))
    else:
        pieces.append(svg.text(16, (frame.top + frame.bottom) / 2, value_label, anchor="middle", rotate=-90))
        pieces.append(svg.line(frame.left, frame.bottom, frame.right, frame.bottom))
    return pieces


def _category_label(frame: _Frame, category: str, band_start: float, band: float, rotate: bool) -> str:
    if frame.horizontal:
        return svg.text(frame.left - 8, band_start + band / 2 + 4, category, anchor="end")
    if rotate:
        return svg.text(band_start + band / 2 + 4, frame.bottom + 14, category, anchor="end", rotate=-40)
    return svg.text(band_start + band / 2, frame.bottom + 18, category, anchor="middle")


def _reference_lines(frame: _Frame, references: Sequence[Reference], rows: Sequence[int]) -> list[str]:
    """Dashed lines with their labels outside the plot: above it (horizontal bars, one row per
    ``rows`` entry) or right of it, moved apart where two lines are close."""
    pieces = []
    if frame.horizontal:
        for reference, row in zip(references, rows):
            p = frame.value_at(reference.value)
            label_y = frame.top - 8 - 14 * row
            pieces.append(svg.reference_line(p, label_y + 3, p, frame.bottom, reference.colour))
            pieces.append(
                svg.text(p, label_y, reference.label, anchor="middle", size=SMALL_FONT_SIZE, colour=reference.colour)
            )
        return pieces
    label_ys = _spread([frame.value_at(r.value) + 4 for r in references], 12)
    for reference, label_y in zip(references, label_ys):
        p = frame.value_at(reference.value)
        pieces.append(svg.reference_line(frame.left, p, frame.right, p, reference.colour))
        pieces.append(
            svg.text(frame.right + 5, label_y, reference.label, size=SMALL_FONT_SIZE, colour=reference.colour)
        )
    return pieces


def bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    value_range: tuple[float, float],
    value_label: str,
    references: Sequence[Reference] = (),
    horizontal: bool = False,
    baseline: float = 0.0,
    title: str = "",
    width: float = 960,
) -> str:
    """Grouped bars, one group per category and one bar per series, with interval whiskers.

    Bars start at ``baseline`` (kept inside ``value_range``). ``horizontal``
    puts categories down the side, for many categories or long names.
    Reference labels sit outside the plot (right of it, or above it when
    horizontal), so that no bar can hide them.

    Parameters
    ----------
    categories : sequence of str
        One group of bars each, in order.
    series : sequence of Series
        One colour each, with an estimate (or None, absent) per category.
    value_range : (float, float)
        The value axis; bars and whiskers beyond it are clipped.
    value_label : str
        The value axis's title.
    references : sequence of Reference
        Dashed lines; those outside ``value_range`` are left out.
    horizontal, baseline, title, width
        Bars along x, where bars start, the figure's title, its width in pixels.

    Returns
    -------
    str
        One ``<svg>`` element.
    """
    low, high = value_range
    baseline = min(max(baseline, low), high)
    n_series = max(len(series), 1)
    references = [r for r in references if low <= r.value <= high]
    pieces, top = _heading(title, series, width)
    label_width = max((svg.text_width(c) for c in categories), default=0.0)
    rows: list[int] = []
    rotate = False
    if horizontal:
        band = n_series * 13 + 9
        left = min(label_width + 20, width * 0.4)
        rows = _label_rows(references, _Frame(True, low, high, left, width - 24, 0, 0).value_at)
        top += 14 * (max(rows, default=-1) + 1)
        frame = _Frame(True, low, high, left, width - 24, top, top + band * len(categories))
        height = frame.bottom + 48
    else:
        reference_width = max((svg.text_width(r.label, SMALL_FONT_SIZE) for r in references), default=0.0)
        frame = _Frame(False, low, high, 64.0, width - max(24.0, min(reference_width + 14, 220.0)), top, top + 300)
        band = (frame.right - frame.left) / max(len(categories), 1)
        rotate = label_width > band - 6
        height = frame.bottom + ((label_width * 0.72 + 26) if rotate else 34.0)
    pieces += _value_axis(frame, value_label)

    # Bars are at most 56 px thick: wider ones read as blocks rather than bars.
    slot = min((band - (9 if horizontal else band * 0.2)) / n_series, 56.0)
    for c, category in enumerate(categories):
        band_start = (frame.top if horizontal else frame.left) + c * band
        pieces.append(_category_label(frame, category, band_start, band, rotate))
        first_centre = band_start + (band - slot * n_series) / 2 + slot / 2
        for s, one in enumerate(series):
            estimate = one.estimates[c] if c < len(one.estimates) else None
            if estimate is not None:
                pieces.append(
                    _bar(estimate, one, category, first_centre + s * slot, max(slot * 0.86, 1.0), frame, baseline)
                )
    pieces += _reference_lines(frame, references, rows)
    return svg.document(width, height, pieces, title or value_label)


def _label_rows(references: Sequence[Reference], position) -> list[int]:
    """A row above the plot for each reference label, so that labels of nearby lines do not overlap."""
    rows: list[int] = []
    extents: list[tuple[float, float, int]] = []
    for reference in references:
        half = svg.text_width(reference.label, SMALL_FONT_SIZE) / 2 + 4
        centre = position(reference.value)
        row = 0
        while any(r == row and a < centre + half and centre - half < b for a, b, r in extents):
            row += 1
        extents.append((centre - half, centre + half, row))
        rows.append(row)
    return rows


def _spread(positions: Sequence[float], gap: float) -> list[float]:
    """The positions, moved apart (in their order on the axis) to be at least ``gap`` apart."""
    order = sorted(range(len(positions)), key=positions.__getitem__)
    placed = list(positions)
    for before, index in zip(order, order[1:]):
        placed[index] = max(placed[index], placed[before] + gap)
    return placed


def _bar(
    estimate: Estimate, series: Series, category: str, centre: float, thickness: float, frame: _Frame, baseline: float
) -> str:
    """One bar with its whisker and a hover tooltip, or an "N/A" mark."""
    tooltip = f"<title>{escape(f'{series.label}, {category}: {describe(estimate)}')}</title>"
    base = frame.value_at(baseline)
    if estimate.value is None:
        size = SMALL_FONT_SIZE - 1
        if frame.horizontal:
            mark = svg.text(base + 4, centre + 3, estimate.note or "N/A", size=size, colour=MISSING_COLOUR)
        else:
            mark = svg.text(centre + 3, base - 4, estimate.note or "N/A", size=size, colour=MISSING_COLOUR, rotate=-90)
        return f'<g class="na">{tooltip}{mark}</g>'
    end = frame.value_at(estimate.value)
    # (position along the value axis, position across it) -> (x, y)
    xy = (lambda along, across: (along, across)) if frame.horizontal else (lambda along, across: (across, along))
    x, y = xy(min(base, end), centre - thickness / 2)
    w, h = xy(abs(end - base), thickness)
    rect = (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{series.colour}" fill-opacity="0.85"/>'
    )
    whisker = ""
    if estimate.lower is not None and estimate.upper is not None:
        lo, hi = frame.value_at(estimate.lower), frame.value_at(estimate.upper)
        cap = min(thickness * 0.6, 8) / 2
        for a, b in (
            ((lo, centre), (hi, centre)),
            ((lo, centre - cap), (lo, centre + cap)),
            ((hi, centre - cap), (hi, centre + cap)),
        ):
            whisker += svg.line(*xy(*a), *xy(*b), "#222222")
    return f'<g class="bar">{tooltip}{rect}{whisker}</g>'


# --------------------------------------------------------------------------
# A plane of points with interval crosses


def plane(
    points: Sequence[Point],
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    x_label: str,
    y_label: str,
    x_references: Sequence[Reference] = (),
    y_references: Sequence[Reference] = (),
    colour: str = PALETTE[0],
    title: str = "",
    comparison: Sequence[Point] = (),
    comparison_label: str = "",
    point_label: str = "model",
    width: float = 720,
    plot_height: float = 480,
) -> str:
    """Each point at (x, y) with a horizontal and a vertical 95% interval, labelled beside it.

    ``comparison`` points (e.g. a survey's means) are drawn hollow and joined
    to the point of the same label, so the distance between them is visible.
    Points without both coordinates are listed under the plot instead.

    Parameters
    ----------
    points : sequence of Point
        The points, filled, in ``colour``.
    x_range, y_range : (float, float)
        The axes; a point or interval beyond them is clipped.
    x_label, y_label : str
        The axes' titles.
    x_references, y_references : sequence of Reference
        Dashed lines across the plot at an x or a y; those outside the ranges are left out.
    colour, title : str
        The points' colour and the figure's title.
    comparison : sequence of Point
        Hollow points, each joined to the filled point of the same label.
    comparison_label, point_label : str
        What hollow and filled points are, for the key (shown when there are comparison points).
    width, plot_height : float
        The figure's width and the plot area's height, in pixels.

    Returns
    -------
    str
        One ``<svg>`` element.
    """
    pieces, top = _plane_heading(title, colour, point_label, comparison_label if comparison else "")
    left = 70.0
    box = (left, top, width - 30.0, top + plot_height)  # the plot area: x0, y0, x1, y1

    def px(v: float) -> float:
        share = (min(max(v, x_range[0]), x_range[1]) - x_range[0]) / (x_range[1] - x_range[0])
        return box[0] + share * (box[2] - box[0])

    def py(v: float) -> float:
        return box[3] - (min(max(v, y_range[0]), y_range[1]) - y_range[0]) / (y_range[1] - y_range[0]) * plot_height

    pieces += _plane_axes(box, x_range, y_range, px, py, x_label, y_label)
    for reference in x_references:
        if x_range[0] <= reference.value <= x_range[1]:
            p = px(reference.value)
            pieces.append(svg.reference_line(p, box[1], p, box[3], reference.colour))
            pieces.append(svg.text(p + 4, box[1] + 12, reference.label, size=SMALL_FONT_SIZE, colour=reference.colour))
    for reference in y_references:
        if y_range[0] <= reference.value <= y_range[1]:
            p = py(reference.value)
            pieces.append(svg.reference_line(box[0], p, box[2], p, reference.colour))
            pieces.append(
                svg.text(
                    box[2] - 4, p - 5, reference.label, anchor="end", size=SMALL_FONT_SIZE, colour=reference.colour
                )
            )

    drawable = [p for p in points if p.x.value is not None and p.y.value is not None]
    markers = [(px(p.x.value), py(p.y.value)) for p in drawable]
    mine = {p.label: xy for p, xy in zip(drawable, markers)}
    # Every marker is placed before any label, so that labels avoid all of them.
    placed = [(x - 5, y - 5, x + 5, y + 5) for x, y in markers]
    for other in comparison:
        if other.x.value is not None and other.y.value is not None:
            ox, oy = px(other.x.value), py(other.y.value)
            pieces.append(
                _comparison_marker(other, (ox, oy), mine.get(other.label), comparison_label, x_label, y_label)
            )
            placed.append((ox - 5, oy - 5, ox + 5, oy + 5))
    labels = _shared_labels([p.label for p in drawable], markers)
    for index, (point, (x, y)) in enumerate(zip(drawable, markers)):
        numbers = f"{point.label}: {x_label} {describe(point.x)}; {y_label} {describe(point.y)}"
        tooltip = f"<title>{escape(numbers)}</title>"
        cross = ""
        if point.x.lower is not None and point.x.upper is not None:
            cross += svg.line(px(point.x.lower), y, px(point.x.upper), y, colour, 1.2)
        if point.y.lower is not None and point.y.upper is not None:
            cross += svg.line(x, py(point.y.lower), x, py(point.y.upper), colour, 1.2)
        marker = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{colour}" stroke="#ffffff"/>'
        label = _place_label(labels[index], x, y, placed, box) if index in labels else ""
        pieces.append(f'<g class="point">{tooltip}{cross}{marker}{label}</g>')

    height = box[3] + 52
    missing = [p.label for p in points if p.x.value is None or p.y.value is None]
    if missing:
        pieces.append(
            svg.text(
                left,
                height,
                "not plotted (no value): " + ", ".join(missing),
                size=SMALL_FONT_SIZE,
                colour=MISSING_COLOUR,
            )
        )
        height += 14
    return svg.document(width, height, pieces, title or f"{y_label} by {x_label}")


def _plane_heading(title: str, colour: str, point_label: str, comparison_label: str) -> tuple[list[str], float]:
    """Title and, when there are comparison points, a key telling filled from hollow points."""
    pieces, top = _title(title)
    if comparison_label:
        pieces.append(f'<circle cx="18" cy="{top + 6:.1f}" r="4.5" fill="{colour}"/>')
        pieces.append(svg.text(28, top + 10, point_label))
        offset = 28 + svg.text_width(point_label) + 24
        pieces.append(
            f'<circle cx="{offset:.1f}" cy="{top + 6:.1f}" r="4.5" fill="#ffffff" stroke="{MISSING_COLOUR}"'
            ' stroke-width="1.5"/>'
        )
        pieces.append(svg.text(offset + 10, top + 10, comparison_label))
        top += 18
    return pieces, top + 14


def _plane_axes(box, x_range, y_range, px, py, x_label: str, y_label: str) -> list[str]:
    """Gridlines and ticks on both axes, the frame, and the axis titles."""
    pieces = []
    for tick in ticks(*x_range):
        pieces.append(svg.line(px(tick), box[1], px(tick), box[3], GRID_COLOUR))
        pieces.append(svg.text(px(tick), box[3] + 16, format_number(tick), anchor="middle", size=SMALL_FONT_SIZE))
    for tick in ticks(*y_range):
        pieces.append(svg.line(box[0], py(tick), box[2], py(tick), GRID_COLOUR))
        pieces.append(svg.text(box[0] - 6, py(tick) + 4, format_number(tick), anchor="end", size=SMALL_FONT_SIZE))
    pieces.append(
        f'<rect x="{box[0]:.1f}" y="{box[1]:.1f}" width="{box[2] - box[0]:.1f}"'
        f' height="{box[3] - box[1]:.1f}" fill="none" stroke="{AXIS_COLOUR}"/>'
    )
    pieces.append(svg.text((box[0] + box[2]) / 2, box[3] + 38, x_label, anchor="middle"))
    pieces.append(svg.text(18, (box[1] + box[3]) / 2, y_label, anchor="middle", rotate=-90))
    return pieces


def _comparison_marker(
    point: Point, at: tuple[float, float], partner: tuple[float, float] | None, what: str, x_label: str, y_label: str
) -> str:
    """A hollow point, dotted to its partner (the filled point of the same label) when there is one."""
    numbers = f"{what}, {point.label}: {x_label} {describe(point.x)}; {y_label} {describe(point.y)}"
    tooltip = f"<title>{escape(numbers)}</title>"
    link = svg.line(*at, *partner, MISSING_COLOUR, 1, "2 3") if partner else ""
    return (
        f'<g class="comparison">{tooltip}{link}<circle cx="{at[0]:.1f}" cy="{at[1]:.1f}" r="4.5"'
        f' fill="#ffffff" stroke="{MISSING_COLOUR}" stroke-width="1.5"/></g>'
    )


def _shared_labels(labels: Sequence[str], markers: Sequence[tuple[float, float]]) -> dict[int, str]:
    """Index of the first point of each spot -> the labels of every point drawn there.

    Points on top of each other share one label ("lesbians, bisexual") rather
    than printing their labels over each other.
    """
    shared: dict[int, str] = {}
    for index, (x, y) in enumerate(markers):
        first = next(i for i, (ox, oy) in enumerate(markers) if abs(ox - x) < 4 and abs(oy - y) < 4)
        shared[first] = f"{shared[first]}, {labels[index]}" if first != index else labels[index]
    return shared


def _place_label(label: str, x: float, y: float, placed: list, bounds: tuple) -> str:
    """The label at the first spot beside (x, y) that overlaps no earlier label or marker."""
    w, h = svg.text_width(label, SMALL_FONT_SIZE + 1), SMALL_FONT_SIZE + 2
    candidates = [
        (x + 7, y - 6, "start"),
        (x - 7, y - 6, "end"),
        (x + 7, y + 14, "start"),
        (x - 7, y + 14, "end"),
        (x, y - 10, "middle"),
        (x, y + 20, "middle"),
    ]

    def box(cx, cy, anchor):
        start = {"start": cx, "end": cx - w, "middle": cx - w / 2}[anchor]
        return (start, cy - h + 2, start + w, cy + 2)

    def overlaps(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    def inside(b):
        return b[0] >= bounds[0] and b[2] <= bounds[2] + 20 and b[1] >= bounds[1] - 10 and b[3] <= bounds[3] + 10

    chosen = None
    for cx, cy, anchor in candidates:
        b = box(cx, cy, anchor)
        if inside(b) and not any(overlaps(b, other) for other in placed):
            chosen = (cx, cy, anchor, b)
            break
    if chosen is None:  # crowded: fall back to the right, overlapping rather than dropping the label
        cx, cy, anchor = candidates[0] if x + w < bounds[2] else candidates[1]
        chosen = (cx, cy, anchor, box(cx, cy, anchor))
    cx, cy, anchor, b = chosen
    placed.append(b)
    return svg.text(cx, cy, label, anchor=anchor, size=SMALL_FONT_SIZE + 1, colour="#222222")
