"""The tables of every report command, in one model: a :class:`Table` written as HTML, Markdown or
plain text.

A table holds its cells as the results give them (nothing escaped) and says how each column is
aligned; each renderer escapes every cell once, by its format's rule
(:mod:`lm_eval_bias.report.outputs`): :func:`to_html` with :func:`~.outputs.html_text`,
:func:`to_markdown` with :func:`~.outputs.markdown_cell` and :func:`to_text` with
:func:`~.outputs.text_line`. Where the outputs differ by format (HTML row groups, Markdown's
alignment row), the renderer takes it as an argument or reads it from the column's alignment, so that
each output stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lm_eval_bias.report.outputs import html_text, markdown_cell, text_line

# A column of words: left-aligned in every format (in HTML by the style sheets' ``name`` class).
LEFT = "left"
# A column of numbers: right-aligned in every format, marked ``---:`` in Markdown's alignment row.
RIGHT = "right"
# A column whose alignment is left to the format: the style sheet's in HTML (the pages right-align
# every cell but a ``name``), plain ``---`` in Markdown, left in plain text.
UNSTATED = ""
ALIGNMENTS = (LEFT, RIGHT, UNSTATED)


@dataclass(frozen=True)
class Table:
    """A table's header and rows, as text, with each column's alignment.

    Parameters
    ----------
    header : sequence of str
        The column names.
    rows : sequence of sequence of str
        The rows, each with a cell per column (anything else is shown as ``str`` shows it).
    align : sequence of str
        Per column :data:`LEFT`, :data:`RIGHT` or :data:`UNSTATED`; empty: every column unstated.
    first_column_is_heading : bool
        Whether each row's first cell names the row (an HTML ``<th>``).

    Raises
    ------
    ValueError
        A row whose number of cells is not the header's, an alignment per column of another number of
        columns, or an alignment that is not one of :data:`ALIGNMENTS`.
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: tuple[str, ...] = ()
    first_column_is_heading: bool = False

    def __post_init__(self) -> None:
        header = tuple(str(name) for name in self.header)
        rows = tuple(tuple(str(cell) for cell in row) for row in self.rows)
        align = tuple(self.align) or (UNSTATED,) * len(header)
        for index, row in enumerate(rows):
            if len(row) != len(header):
                raise ValueError(f"row {index} has {len(row)} cells, the header {len(header)}")
        if len(align) != len(header):
            raise ValueError(f"{len(align)} alignments for {len(header)} columns")
        unknown = [value for value in align if value not in ALIGNMENTS]
        if unknown:
            raise ValueError(f"alignment {unknown[0]!r} is none of {', '.join(map(repr, ALIGNMENTS))}")
        # Frozen: the normalised fields are set once, here.
        object.__setattr__(self, "header", header)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "align", align)


def to_html(table: Table, row_groups: bool = True) -> str:
    """The table as one HTML ``<table>`` element, every cell escaped.

    Parameters
    ----------
    table : Table
        The table.
    row_groups : bool
        Whether the header and the rows sit in ``<thead>`` and ``<tbody>``.

    Returns
    -------
    str
        The element; a cell of a :data:`LEFT` column has ``class=name``, each row's first cell is a
        ``<th>`` where the first column is a heading.
    """
    classes = [" class=name" if align == LEFT else "" for align in table.align]
    head = "".join(f"<th{css}>{html_text(name)}</th>" for name, css in zip(table.header, classes))
    body = "".join(
        "<tr>"
        + "".join(
            f"<th{css}>{html_text(cell)}</th>"
            if table.first_column_is_heading and column == 0
            else f"<td{css}>{html_text(cell)}</td>"
            for column, (cell, css) in enumerate(zip(row, classes))
        )
        + "</tr>"
        for row in table.rows
    )
    if row_groups:
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<table><tr>{head}</tr>{body}</table>"


def _markdown_line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(map(markdown_cell, cells)) + " |"


def to_markdown(table: Table) -> str:
    """The table in Markdown, every cell escaped.

    Parameters
    ----------
    table : Table
        The table.

    Returns
    -------
    str
        The header, the alignment row (``---:`` for a :data:`RIGHT` column, ``---`` for any other) and
        a line per row, joined by line breaks, with none at the end.
    """
    rule = "|" + "".join("---:|" if align == RIGHT else "---|" for align in table.align)
    return "\n".join([_markdown_line(table.header), rule, *map(_markdown_line, table.rows)])


def to_text(table: Table, indent: str = "") -> str:
    """The table as fixed-width lines of plain text, every cell on its line.

    Parameters
    ----------
    table : Table
        The table.
    indent : str
        What starts each line.

    Returns
    -------
    str
        The header and a line per row, joined by line breaks, with none at the end: columns two spaces
        apart, a :data:`RIGHT` column right-aligned and any other left-aligned, no space at a line's end.
    """
    lines = [[text_line(cell) for cell in row] for row in (table.header, *table.rows)]
    widths = [max(len(line[column]) for line in lines) for column in range(len(table.header))]
    return "\n".join(
        indent
        + "  ".join(
            cell.rjust(width) if align == RIGHT else cell.ljust(width)
            for cell, width, align in zip(line, widths, table.align)
        ).rstrip()
        for line in lines
    )
