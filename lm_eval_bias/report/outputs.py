"""Everything the report commands write is safe to open: one escaping rule per format, and files
written whole or not at all.

- CSV: a cell a spreadsheet would run as a formula (text starting with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading single quote,
  the OWASP rule; numbers stay numbers, negative ones included.
- Every format: a character that cannot be seen or that turns the direction of
  the text (zero-width and bidirectional controls such as U+200B and U+202E, any
  other Unicode control or format character, a line or paragraph separator) is
  shown as its escape (``\\u202e``), so that a name from a results file cannot
  look like another (:func:`visible`).
- Markdown: ``|``, backslashes, the ``]`` that ends a link or image
  (``[x](url)``, ``![x](url)``, ``[x][ref]``, ``[ref]: url``) and HTML (``<``,
  ``>``, ``&``) are escaped and line breaks become spaces, so that a name from a
  results file can neither break a table nor inject markup or a link.
- JSON: strict (no bare ``NaN``): a non-finite number is written as ``"N/A"``,
  lm-eval's own marker.
- HTML and SVG: :func:`html_text` wherever input text goes (in the renderers), and every page
  sets :data:`CONTENT_SECURITY_POLICY`, which lets it fetch nothing.
- Plain text (``check``'s summary, notes on stderr): a name from the input
  stays on its line, so that it cannot forge a line such as ``PASS ...``.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from lm_eval_bias.errors import LmEvalBiasError
from lm_eval_bias.report.values import NOT_AVAILABLE
from lm_eval_bias.text import visible

# Nothing may be fetched: inline styles only, no script, font or image; the pages are safe to open from
# a CI artefact, and a violation would surface as a console error.
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
# The report's and the comparison page's style sheet.
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
# What a spreadsheet reads as the start of a formula (OWASP, "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Markdown's links and images ([text](url), ![alt](url), [text][ref], a definition [ref]: url) all
# need a "]" directly followed by "(", "[" or ":"; escaping that "]" leaves plain text, and leaves an
# interval such as "[60, 64]" as it is.
_MARKDOWN_LINK_END = re.compile(r"\](?=[(\[:])")


class OutputError(LmEvalBiasError):
    """An output file cannot be written."""


def csv_cell(value):
    """A CSV cell: numbers as numbers, text that a spreadsheet would execute neutralised, characters that
    cannot be seen shown as escapes (:func:`visible`).

    Parameters
    ----------
    value : object
        A number, text, or None.

    Returns
    -------
    int, float or str
        The number (``"N/A"`` when not finite), ``""`` for None, or the text made safe.
    """
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value if math.isfinite(value) else NOT_AVAILABLE
    text = visible(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def markdown_cell(text) -> str:
    """Text for a Markdown table cell or heading: no markup, no link or image, no table break, one line,
    characters that cannot be seen shown as escapes (:func:`visible`).

    Parameters
    ----------
    text : object
        The text (anything else is shown as ``str`` shows it).

    Returns
    -------
    str
        The escaped text.
    """
    escaped = visible(text).replace("\\", "\\\\")
    escaped = html.escape(escaped, quote=False).replace("|", "\\|")
    escaped = _MARKDOWN_LINK_END.sub(r"\\]", escaped)
    return _LINE_BREAK.sub(" ", escaped)


def html_text(text) -> str:
    """Text for HTML or SVG (element content or a quoted attribute): markup escaped, characters that
    cannot be seen shown as escapes (:func:`visible`).

    Parameters
    ----------
    text : object
        The text.

    Returns
    -------
    str
        The escaped text.
    """
    return html.escape(visible(text))


def text_line(text) -> str:
    """Text for one line of plain-text output: line breaks become spaces, characters that cannot be
    seen are shown as escapes (:func:`visible`).

    Parameters
    ----------
    text : object
        The text.

    Returns
    -------
    str
        The text on one line.
    """
    return _LINE_BREAK.sub(" ", visible(text))


def json_safe(value):
    """A value that strict JSON can hold.

    Parameters
    ----------
    value : object
        Numbers, text, and lists, tuples and dicts of them.

    Returns
    -------
    object
        ``value`` with every non-finite number replaced by ``"N/A"`` (tuples become lists).
    """
    if isinstance(value, float) and not math.isfinite(value):
        return NOT_AVAILABLE
    if isinstance(value, Mapping):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def strict_json(value, **kwargs) -> str:
    """JSON that every parser accepts: never a bare NaN or Infinity.

    Parameters
    ----------
    value : object
        What to write; a non-finite number is written as ``"N/A"``.
    **kwargs
        Passed to :func:`json.dumps` (``indent``, ``sort_keys``...).

    Returns
    -------
    str
        The JSON text.
    """
    return json.dumps(json_safe(value), allow_nan=False, **kwargs)


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _cannot_write(target: Path, error: OSError) -> OutputError:
    """The operating system's reason, and what it means where that is not obvious."""
    folder = target.parent
    if not folder.exists():
        detail = f" (the folder {folder} does not exist)"
    elif not folder.is_dir():
        detail = f" ({folder} is a file, not a folder)"
    else:
        detail = ""
    return OutputError(f"cannot write {target}: {_reason(error)}{detail}")


def write_all(outputs: Sequence[tuple[str | Path, str]], inputs: Sequence[str | Path] = ()) -> None:
    """Write every (path, text) or none: each goes to a temporary file beside its path first, and
    only when all of them are written are they moved into place. An :class:`OutputError` names the
    path and the operating system's reason. A path that is one of the command's ``inputs``, or
    anything but a regular file (a device, a pipe, a symbolic link, which the move would replace),
    is refused before anything is written.

    Parameters
    ----------
    outputs : sequence of (str or Path, str)
        Each file's path and text (written as UTF-8).
    inputs : sequence of str or Path
        The files the command reads, which no output may replace.

    Raises
    ------
    OutputError
        A path given twice, a folder, an input, a link or special file, or one that cannot be written.
    """
    targets = [Path(target) for target, _ in outputs]
    read = {Path(path).resolve() for path in inputs}
    seen: set[Path] = set()
    for target in targets:
        resolved = target.resolve()
        if resolved in seen:
            raise OutputError(f"{target} is given for two outputs; give each its own file")
        seen.add(resolved)
        if target.is_dir():
            raise OutputError(f"cannot write {target}: it is a folder; give a file name")
        if resolved in read:
            raise OutputError(
                f"cannot write {target}: it is one of the files this command reads; give another file name"
            )
        if target.is_symlink() or (os.path.lexists(target) and not target.is_file()):
            kind = "a symbolic link" if target.is_symlink() else "not a regular file (a device or a pipe)"
            raise OutputError(
                f"cannot write {target}: it is {kind}, which writing would replace; give the path of a regular file"
            )
    written: list[tuple[str, Path]] = []
    try:
        for target, (_, text) in zip(targets, outputs):
            try:
                handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            except OSError as error:
                raise _cannot_write(target, error) from None
            written.append((temporary, target))
            try:
                with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                    out.write(text)
                os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's files are private; outputs are not
            except OSError as error:
                raise _cannot_write(target, error) from None
        for temporary, target in written:
            try:
                os.replace(temporary, target)
            except OSError as error:
                raise _cannot_write(target, error) from None
    finally:
        for temporary, _ in written:
            if os.path.exists(temporary):
                os.remove(temporary)
