"""The report commands' table model: one small table, exactly, in HTML, Markdown and plain text, every
cell escaped by its format's rule, and the tables it refuses."""

import pytest

from lm_eval_bias.report import tables

# Cells that would break each format unescaped: a pipe (a Markdown column), markup, an entity, a quote
# and a line break (a Markdown or text row).
NUMBERS = tables.Table(
    ("name", "value"),
    [('a|b <x> & "y"', "1.5"), ("two\nlines", 10)],
    (tables.LEFT, tables.RIGHT),
)
MODELS = tables.Table(("model", "score"), [("m<1>", "2"), ("m\r\n2", "3")], first_column_is_heading=True)


def test_html_escapes_every_cell_and_marks_the_left_aligned_columns():
    assert tables.to_html(NUMBERS) == (
        "<table><thead><tr><th class=name>name</th><th>value</th></tr></thead><tbody>"
        "<tr><td class=name>a|b &lt;x&gt; &amp; &quot;y&quot;</td><td>1.5</td></tr>"
        "<tr><td class=name>two\nlines</td><td>10</td></tr></tbody></table>"
    )


def test_html_without_row_groups_and_with_each_rows_first_cell_a_heading():
    assert tables.to_html(MODELS, row_groups=False) == (
        "<table><tr><th>model</th><th>score</th></tr>"
        "<tr><th>m&lt;1&gt;</th><td>2</td></tr><tr><th>m\r\n2</th><td>3</td></tr></table>"
    )


def test_markdown_escapes_pipes_and_markup_and_keeps_each_row_on_its_line():
    assert tables.to_markdown(NUMBERS) == (
        '| name | value |\n|---|---:|\n| a\\|b &lt;x&gt; &amp; "y" | 1.5 |\n| two lines | 10 |'
    )


def test_markdown_marks_no_alignment_where_none_is_stated():
    assert tables.to_markdown(MODELS) == "| model | score |\n|---|---|\n| m&lt;1&gt; | 2 |\n| m 2 | 3 |"


def test_text_aligns_the_columns_and_keeps_each_row_on_its_line():
    assert tables.to_text(NUMBERS, indent="  ") == (
        '  name           value\n  a|b <x> & "y"    1.5\n  two lines         10'
    )
    assert tables.to_text(MODELS) == "model  score\nm<1>   2\nm 2    3"


def test_cells_are_held_as_text():
    assert NUMBERS.rows == (('a|b <x> & "y"', "1.5"), ("two\nlines", "10"))
    assert MODELS.align == (tables.UNSTATED, tables.UNSTATED)


@pytest.mark.parametrize(
    "rows, align, message",
    [
        ([("a", "b", "c")], (), "row 0 has 3 cells, the header 2"),
        ([("a", "b")], (tables.LEFT,), "1 alignments for 2 columns"),
        ([("a", "b")], (tables.LEFT, "centre"), "alignment 'centre' is none of 'left', 'right', ''"),
    ],
)
def test_a_table_that_does_not_fit_its_header_is_refused(rows, align, message):
    with pytest.raises(ValueError) as error:
        tables.Table(("name", "value"), rows, align)
    assert str(error.value) == message
