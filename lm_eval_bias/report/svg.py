"""The pieces every figure is drawn with: colours, font sizes, scales, text, lines, a legend.

Each piece is SVG markup as a string, every piece of text escaped (:func:`lm_eval_bias.report.outputs.html_text`);
:func:`document` wraps them into one ``<svg>`` element. :mod:`.figures` draws the benchmarks'
figures with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lm_eval_bias.report.outputs import html_text as escape

# Okabe-Ito colours: distinguishable under the common colour-vision deficiencies.
# Yellow comes last because it is hard to see on white.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
FONT_SIZE = 12
SMALL_FONT_SIZE = 10
# Average glyph width as a share of the font size: only used to reserve room for labels.
CHAR_WIDTH = 0.6
AXIS_COLOUR = "#444444"
GRID_COLOUR = "#e3e3e3"
MISSING_COLOUR = "#888888"


# --------------------------------------------------------------------------
# Scales


def nice_step(span: float, count: int = 5) -> float:
    """A round step for an axis.

    Parameters
    ----------
    span : float
        The axis's length in its own units.
    count : int
        About how many steps it should have.

    Returns
    -------
    float
        1, 2, 2.5, 5 or 10 times a power of ten.
    """
    raw = span / max(count, 1) if span > 0 else 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if raw <= multiple * magnitude * (1 + 1e-9):
            return multiple * magnitude
    return 10 * magnitude


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values along an axis.

    Parameters
    ----------
    low, high : float
        The axis's ends (included).
    count : int
        About how many steps between ticks.

    Returns
    -------
    list of float
        The ticks, multiples of :func:`nice_step`, rounded so that none prints as 0.30000000000000004.
    """
    step = nice_step(high - low, count)
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    # Multiplying (not adding) steps keeps float error from accumulating into labels like 0.30000000004.
    return [round(i * step, 10) for i in range(first, last + 1)]


def auto_range(
    values: Sequence[float], include: Sequence[float] = (), floor: float | None = None, ceiling: float | None = None
) -> tuple[float, float]:
    """A range with round ends holding ``values`` and ``include``, kept within [floor, ceiling].

    Used where a fixed scale would hide the data (Detoxify toxicities are often
    below 0.05 on a 0-1 scale); ``include`` keeps the meaningful zero in view.

    Parameters
    ----------
    values : sequence of float
        The data (None and non-finite values are ignored).
    include : sequence of float
        Values the range must hold besides the data.
    floor, ceiling : float or None
        Ends the range may not pass (the scale's own limits).

    Returns
    -------
    (float, float)
        The range; ``(floor, ceiling)`` (default 0 and 1) without any value.
    """
    numbers = [v for v in (*values, *include) if v is not None and math.isfinite(v)]
    if not numbers:
        low, high = (floor if floor is not None else 0.0), (ceiling if ceiling is not None else 1.0)
        return low, high
    low, high = min(numbers), max(numbers)
    if high - low < 1e-12:
        pad = abs(high) * 0.1 or 0.1
        low, high = low - pad, high + pad
    step = nice_step(high - low, 5)
    # Rounded so that the ends print as 0.3, not 0.30000000000000004.
    low = round(math.floor(low / step + 1e-9) * step, 10)
    high = round(math.ceil(high / step - 1e-9) * step, 10)
    if floor is not None:
        low = max(low, floor)
    if ceiling is not None:
        high = min(high, ceiling)
    return low, high


def format_number(value: float) -> str:
    """Short text for a tick or tooltip.

    Parameters
    ----------
    value : float
        The number.

    Returns
    -------
    str
        4 significant digits, no trailing zeros.
    """
    return f"{value:.4g}"


# --------------------------------------------------------------------------
# SVG pieces


def text(
    x: float,
    y: float,
    text: str,
    *,
    anchor: str = "start",
    size: int = FONT_SIZE,
    colour: str = AXIS_COLOUR,
    rotate: float = 0.0,
    weight: str = "normal",
) -> str:
    """A ``<text>`` element.

    Parameters
    ----------
    x, y : float
        Where the text is anchored, in pixels.
    text : str
        The text, escaped here.
    anchor, size, colour, rotate, weight
        SVG's ``text-anchor``, the font size, the fill, a rotation in degrees about (x, y), the
        font weight.

    Returns
    -------
    str
        The element's markup.
    """
    transform = f' transform="rotate({rotate:g} {x:.1f} {y:.1f})"' if rotate else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{colour}"'
        f' font-weight="{weight}"{transform}>{escape(text)}</text>'
    )


def line(
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    colour: str = AXIS_COLOUR,
    width: float = 1.0,
    dash: str = "",
    css_class: str = "",
) -> str:
    """A ``<line>`` element from (x1, y1) to (x2, y2).

    Parameters
    ----------
    x1, y1, x2, y2 : float
        Its ends, in pixels.
    colour, width, dash, css_class
        The stroke, its width, a ``stroke-dasharray`` (none when empty), a CSS class (none when empty).

    Returns
    -------
    str
        The element's markup.
    """
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    named = f' class="{css_class}"' if css_class else ""
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}"'
        f' stroke-width="{width:g}"{dashes}{named}/>'
    )


def reference_line(x1: float, y1: float, x2: float, y2: float, colour: str) -> str:
    """A dashed reference line (class ``reference``), as :func:`line` draws it."""
    return line(x1, y1, x2, y2, colour, 1.5, "6 4", "reference")


def text_width(text: str, size: int = FONT_SIZE) -> float:
    """Estimated width of a text, to reserve room for labels (no font metrics without a browser).

    Parameters
    ----------
    text : str
        The text.
    size : int
        Its font size.

    Returns
    -------
    float
        The width in pixels.
    """
    return len(text) * size * CHAR_WIDTH


def document(width: float, height: float, body: list[str], label: str) -> str:
    """One ``<svg>`` element holding ``body``.

    Parameters
    ----------
    width, height : float
        Its size in pixels.
    body : list of str
        The pieces, in drawing order.
    label : str
        What the figure shows, for screen readers (``aria-label``).

    Returns
    -------
    str
        The element's markup.
    """
    # No xmlns: inline SVG in HTML does not need one, and the page then holds no URL at all.
    return (
        f'<svg viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}"'
        f' role="img" aria-label="{escape(label)}" font-family="sans-serif">' + "".join(body) + "</svg>"
    )


def legend(items: Sequence[tuple[str, str]], x: float, y: float, max_width: float) -> tuple[list[str], float]:
    """Colour swatches with labels, wrapped into rows.

    Parameters
    ----------
    items : sequence of (str, str)
        (label, colour) pairs.
    x, y : float
        The top left corner.
    max_width : float
        The width a row may take before the next item wraps.

    Returns
    -------
    (list of str, float)
        The SVG pieces and their height (0 without items).
    """
    pieces, cursor, row_y = [], x, y
    for label, colour in items:
        width = 18 + text_width(label) + 18
        if cursor > x and cursor + width > x + max_width:
            cursor, row_y = x, row_y + 18
        pieces.append(f'<rect x="{cursor:.1f}" y="{row_y:.1f}" width="12" height="12" fill="{colour}"/>')
        pieces.append(text(cursor + 17, row_y + 10.5, label))
        cursor += width
    return pieces, (row_y - y + 18) if items else 0.0
