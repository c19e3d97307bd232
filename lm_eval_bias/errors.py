"""The errors lm-eval-bias raises for problems a user can fix.

Every one of them carries one readable message that says what is wrong, where
(a file and line, an option, a task, a backend) and how to fix it. The
``lm-eval-bias`` command prints that message alone (no traceback) and exits
with :data:`EXIT_BAD_INPUT`; a Python caller catches :class:`LmEvalBiasError`. A message
shows the text it quotes with :func:`visible`, as every output does.

Exit codes of every ``lm-eval-bias`` subcommand: 0 everything went well; 1 a gate
rule failed (``check``); 2 bad input or configuration (nothing was evaluated or
written).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

EXIT_OK = 0
EXIT_GATE_FAILED = 1  # `lm-eval-bias check`: a rule does not hold
EXIT_BAD_INPUT = 2  # bad input or configuration: nothing was evaluated or written


# Whitespace every output shows as whitespace; each format decides what a line break becomes.
_SEEN_AS_WHITESPACE = frozenset("\t\n\r")
# Unicode's control, format, surrogate, private-use and unassigned characters (C*), and the line and
# paragraph separators, which terminals and browsers treat as line breaks.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text) -> str:
    r"""``text`` with every character that cannot be seen, or that reorders the text around it, shown
    as its escape: a right-to-left override (U+202E) after ``gpt2`` is shown as ``gpt2\u202e``.
    Every output applies it to text from its inputs, so that a model name cannot pass for another
    (a right-to-left override turning ``evil`` into ``live``, a zero-width space splitting one name
    into two rows).

    Parameters
    ----------
    text : object
        The text (anything else is shown as ``str(text)``).

    Returns
    -------
    str
        The text, with tabs and line breaks kept (each format decides what they become) and every
        other Unicode control, format, surrogate, private-use or unassigned character, and the line
        and paragraph separators, written as ``\uXXXX`` (``\UXXXXXXXX`` beyond U+FFFF).
    """
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        _escape(char)
        if char not in _SEEN_AS_WHITESPACE and unicodedata.category(char) in _INVISIBLE_CATEGORIES
        else char
        for char in text
    )


class LmEvalBiasError(RuntimeError):
    """A problem the user can fix; the message says what, where and how. The message shows the
    text it quotes (a path, a model name) with :func:`visible`: a name cannot hide in it."""

    def __str__(self) -> str:
        return visible(super().__str__())


class DataError(LmEvalBiasError):
    """A benchmark's data could not be used."""


class DataNotFoundError(DataError, FileNotFoundError):
    """The data file is missing everywhere it was looked for."""


class MalformedDataError(DataError, ValueError):
    """The data file exists but its content is not what the benchmark needs."""


class ConfigurationError(LmEvalBiasError, ValueError):
    """An option, a task or a backend is set up wrongly (a misspelt or mistyped option,
    a task the chosen model backend cannot score, ``--limit 0``)."""


class PreflightError(LmEvalBiasError):
    """Several problems found before the model ran, reported together."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        count = len(self.problems)
        heading = "1 problem" if count == 1 else f"{count} problems"
        super().__init__(
            f"{heading} found before the evaluation started:\n" + "\n".join(f"- {problem}" for problem in self.problems)
        )
