"""Text as people see it: one Unicode form to compare in, and characters that cannot be seen.

Two strings can look the same and differ (an accented letter as one character or as a letter
plus a combining accent; a zero-width space; a no-break space for a space), and text can carry
characters that reorder what is around it (U+202E). Every comparison of benchmark text uses
:func:`nfc`, every check of input text :func:`invisible_characters`, and every output and message
:func:`visible`.
"""

from __future__ import annotations

import re
import unicodedata

# Whitespace every output shows as whitespace; each format decides what a line break becomes.
_SEEN_AS_WHITESPACE = frozenset("\t\n\r ")
# Unicode's control, format, surrogate, private-use and unassigned characters (C*), the line and
# paragraph separators (which terminals and browsers treat as line breaks), and every space other
# than U+0020 (a no-break or thin space makes "org/model a" another name that looks the same).
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
# Characters of other categories that render as nothing or as a blank: Unicode's default-ignorable
# code points outside Cf (combining grapheme joiner, Hangul fillers, Khmer inherent vowels,
# Mongolian and other variation selectors) and the blank Braille pattern.
_BLANK_OTHERWISE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2800, 0x3164, 0xFFA0]
    + list(range(0x180B, 0x1810))
    + list(range(0xFE00, 0xFE10))
    + list(range(0xE0100, 0xE01F0))
)
# The characters that may be invisible: all but printable ASCII, tab and line breaks (found at C speed
# in the long texts of a large file).
_BEYOND_PRINTABLE_ASCII = re.compile(r"[^\t\n\r\x20-\x7e]")
# The space a tokenised corpus writes before a closing mark or after an opening bracket, which
# no reader sees as another text.
_SPACE_BESIDE_PUNCTUATION = re.compile(r" (?=[.,;:!?)\]}\u2026])|(?<=[(\[{]) ")


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C, the one form benchmark text is compared and scored in.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    str
        ``text`` itself when it is already NFC (all official data is), else its NFC form.
    """
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def comparable(text: str) -> str:
    """The form in which two benchmark texts are compared for repeats: NFC, spacing set aside.

    Letter case is kept ("Gay" and "gay" may be different rows); spacing is not, because a reader
    (and, for the words, a model) sees one text: "Gay people are loud ." is "Gay people are loud.",
    as tokenised corpora write it.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    str
        :func:`nfc` of ``text`` with each run of whitespace a single space, none at either end, none
        before a closing mark (``. , ; : ! ? ) ] } …``) and none after an opening bracket
        (``( [ {``): "gay  men " is "gay men", "( gay men ) ." is "(gay men).".
    """
    return _SPACE_BESIDE_PUNCTUATION.sub("", " ".join(nfc(text).split()))


def is_invisible(char: str) -> bool:
    """Whether ``char`` cannot be seen, looks like another character (a space that is not
    U+0020) or reorders the text around it; tab and line breaks are not.

    Parameters
    ----------
    char : str
        One character.

    Returns
    -------
    bool
    """
    if char in _SEEN_AS_WHITESPACE:
        return False
    return unicodedata.category(char) in _INVISIBLE_CATEGORIES or ord(char) in _BLANK_OTHERWISE


def is_plain_ascii(text: str) -> bool:
    """Whether ``text`` is printable ASCII, tabs and line breaks allowed: NFC, visible, every letter
    Latin. Almost all benchmark text is, and needs no closer look.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    bool
    """
    return text.isascii() and (text.isprintable() or _BEYOND_PRINTABLE_ASCII.search(text) is None)


def invisible_characters(text: str) -> list[str]:
    """The characters of ``text`` that :func:`is_invisible`, named for a message.

    Parameters
    ----------
    text : str
        Input text (a data row's field, a name).

    Returns
    -------
    list of str
        ``"U+200B ZERO WIDTH SPACE"`` for each distinct such character, in order of appearance.
    """
    if text.isascii() and text.isprintable():
        return []
    found = dict.fromkeys(char for char in _BEYOND_PRINTABLE_ASCII.findall(text) if is_invisible(char))
    return [f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}" for char in found]


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text) -> str:
    r"""``text`` with every character that cannot be seen, or that reorders the text around it, shown
    as its escape: a right-to-left override (U+202E) after ``gpt2`` is shown as ``gpt2\u202e``.
    Every output and message applies it to text from its inputs, so that a model name cannot pass
    for another (a right-to-left override turning ``evil`` into ``live``, a zero-width space or a
    no-break space splitting one name into two rows that look alike).

    Parameters
    ----------
    text : object
        The text (anything else is shown as ``str(text)``).

    Returns
    -------
    str
        The text, with tabs and line breaks kept (each format decides what they become) and every
        character :func:`is_invisible` written as ``\uXXXX`` (``\UXXXXXXXX`` beyond U+FFFF).
    """
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(char) if is_invisible(char) else char for char in text)
