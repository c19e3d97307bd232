"""One contract that every row of every benchmark's data file passes through.

A benchmark's loader reads its file into ``(line number, fields)`` rows and hands them to
:func:`checked_rows` (or, for a file too large to hold, :func:`iter_checked_rows`) with its
:class:`RowContract`. The contract holds, for every benchmark alike:

- every required field is there and not blank;
- text fields are compared, scored and returned in Unicode NFC (:func:`text.nfc`);
- no text field holds a character that cannot be seen (:func:`text.invisible_characters`): a name
  with a zero-width space would be a second name that looks like the first;
- no word mixes letters of two scripts (:func:`mixed_script_words`): "lаzy" with a Cyrillic "а"
  looks like "lazy" and is another word, so a pair that differs in it differs where no one sees;
- optionally, every letter is of the benchmark's own scripts (``RowContract.scripts``);
- no row id is used twice, and no row repeats another's content (its ``repeat_key``, compared in
  :func:`text.comparable` form), whatever ids the two rows carry: a repeat would count twice.

Every problem of the file is reported at once, in one :class:`~lm_eval_bias.errors.MalformedDataError`
whose lines each name the file, the line, the field and the fix. A benchmark's own checks (its labels,
its pair structure) stay in its loader and run on the rows this module returns.
"""

from __future__ import annotations

import collections
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from lm_eval_bias.errors import MalformedDataError
from lm_eval_bias.text import comparable, invisible_characters, is_invisible, is_plain_ascii, nfc

# The problems a message lists before "and N more": enough to see the pattern, few enough to read.
SHOWN_PROBLEMS = 5

# Letters whose Unicode name does not begin with their script: ª and º are Latin, µ is Greek.
_SCRIPT_OF_NAME = {"FEMININE": "LATIN", "MASCULINE": "LATIN", "MICRO": "GREEK"}
# Chinese, Japanese and Korean text mixes these scripts inside one word ("東京タワー", "Ｔシャツ");
# they count as one script here.
_EAST_ASIAN = frozenset(
    {"CJK", "IDEOGRAPHIC", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL", "BOPOMOFO", "HALFWIDTH", "FULLWIDTH"}
)
_SCRIPT_LABEL = {"CJK": "CJK"}
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]")


@dataclass(frozen=True)
class RowContract:
    """What each row of one benchmark's file must hold.

    Attributes
    ----------
    required : tuple of str
        Fields every row must have, not blank once stripped ("line N: sent_x is empty").
    text : tuple of str
        Text fields (a field may hold a list of texts): returned in NFC, and refused when they hold a
        character that cannot be seen or a word that mixes letters of two scripts (a look-alike
        letter), the message naming the word, the character (``U+0430 CYRILLIC SMALL LETTER A``) and
        the fix. A word wholly in another script is allowed, unless ``scripts`` says otherwise.
    id_field : str or None
        The row's id: an id that two rows share is refused, naming both lines (a blank id is not
        compared; make the field required where every row needs one).
    repeat_key : callable or None
        The row's content identity, from its (NFC) fields: two rows whose keys are equal once each
        text in them is in :func:`~lm_eval_bias.text.comparable` form (case kept, spacing set aside)
        are refused as a repeat naming both lines, whatever their ids.
    what : str
        How messages name one row ("pair", "prompt", "keyword").
    scripts : tuple of str
        The scripts, as Unicode names begin (``"LATIN"``, ``"CYRILLIC"``), that the text fields'
        letters must be in; empty for any. An English benchmark gives ``("LATIN",)``, so that a word
        typed wholly in Cyrillic look-alikes ("ѕіnful") is refused too.
    """

    required: tuple[str, ...]
    text: tuple[str, ...] = ()
    id_field: str | None = None
    repeat_key: Callable[[dict], tuple] | None = None
    what: str = "row"
    scripts: tuple[str, ...] = ()


def checked_rows(
    rows: Iterable[tuple[int | str, dict]], contract: RowContract, source: str, *, official: bool = False
) -> list[dict]:
    """Every row checked against the contract, its text fields in NFC.

    Parameters
    ----------
    rows : iterable of (int or str, dict)
        Each row's place and fields: its line number, or a place already named ("templates entry 3").
    contract : RowContract
        What each row must hold.
    source : str
        The file, as messages name it (its path).
    official : bool
        The file is the benchmark's own release, used as published: only its required fields are
        checked (its text is still returned in NFC); its text and its repeats are the authors'.

    Returns
    -------
    list of dict
        The rows, in order, each a new dict whose text fields are NFC; a file already in NFC comes
        back equal to its input.

    Raises
    ------
    MalformedDataError
        When the file has no row, or any row breaks the contract: one message listing every problem
        (the first :data:`SHOWN_PROBLEMS`, then how many more), each naming the file, line, field and fix.
    """
    return list(iter_checked_rows(rows, contract, source, official=official))


def iter_checked_rows(
    rows: Iterable[tuple[int | str, dict]], contract: RowContract, source: str, *, official: bool = False
) -> Iterator[dict]:
    """:func:`checked_rows`, streamed, for a file too large to hold twice (TANGO's 1.5 million disclosures).

    Each row is yielded once checked; the error for the whole file is raised when the rows run out,
    so a caller must read to the end (``list``, ``set``, a full ``for``) before it uses what it read.

    Parameters
    ----------
    rows, contract, source, official
        As for :func:`checked_rows`.

    Yields
    ------
    dict
        Each row, its text fields in NFC.

    Raises
    ------
    MalformedDataError
        As :func:`checked_rows`, once the last row has been read.
    """
    checker = _Checker(contract, source, official)
    for place, row in rows:
        yield checker.check(place, row)
    if checker.rows == 0:
        checker.problems.append(f"{source}: no {contract.what}s (is the file empty?)")
    if checker.problems:
        raise malformed(source, checker.problems)


def malformed(source: str, problems: Sequence[str]) -> MalformedDataError:
    """The error for a file's problems: one problem as it is, several listed under one heading.

    Parameters
    ----------
    source : str
        The file, as messages name it.
    problems : sequence of str
        Each problem, naming its file, line, field and fix.

    Returns
    -------
    MalformedDataError
        The error to raise; beyond :data:`SHOWN_PROBLEMS` problems it says how many more there are.
    """
    if len(problems) == 1:
        return MalformedDataError(problems[0])
    shown = [f"- {problem}" for problem in problems[:SHOWN_PROBLEMS]]
    if len(problems) > SHOWN_PROBLEMS:
        shown.append(f"- and {len(problems) - SHOWN_PROBLEMS} more")
    return MalformedDataError(f"{source}: {len(problems)} problems, so the file was not loaded:\n" + "\n".join(shown))


@functools.lru_cache(maxsize=4096)
def script_of(char: str) -> str | None:
    """The script of a letter, as its Unicode name begins.

    Parameters
    ----------
    char : str
        One character.

    Returns
    -------
    str or None
        ``"LATIN"``, ``"CYRILLIC"``, ``"GREEK"``, ``"CJK"`` ... for a letter (``str.isalpha``); None for
        anything else, and for a modifier letter (ʼ, ʻ), which belongs to no one script.
    """
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    if not name or name.startswith("MODIFIER LETTER"):
        return None
    first = name.split(maxsplit=1)[0]
    return _SCRIPT_OF_NAME.get(first, first)


def mixed_script_words(text: str) -> list[tuple[str, str]]:
    """The words of ``text`` that mix letters of two scripts: a look-alike letter ("lаzy", U+0430).

    A word is a run of letters (``str.isalpha``) and combining marks; marks and digits belong to no
    script, and a digit ends a word. The Chinese, Japanese and Korean scripts count as one, since
    their words mix them. A word wholly in one script, whichever, is not listed.

    Parameters
    ----------
    text : str
        Any text (compare it in NFC: a decomposed letter is a letter and a mark).

    Returns
    -------
    list of (str, str)
        Each such word with its first letter outside the word's main script (the script of most of
        its letters, the first one's on a tie), in order.
    """
    found = []
    for word, scripts in _words(text):
        mixed = _look_alike(scripts)
        if mixed is not None:
            found.append((word, mixed[1]))
    return found


def describe_char(char: str) -> str:
    """``U+0430 CYRILLIC SMALL LETTER A``: a character as a message names it."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def _look_alike(scripts: list[tuple[str, str]]) -> tuple[str, str, str] | None:
    """For a word's (letter, script) list that mixes scripts: its main script, and the first letter
    outside it with that letter's script; None for a word in one script."""
    families = [_family(script) for _, script in scripts]
    if len(set(families)) == 1:
        return None
    main = collections.Counter(families).most_common(1)[0][0]
    main_script = next(script for (_, script), family in zip(scripts, families) if family == main)
    char, script = next(letter for letter, family in zip(scripts, families) if family != main)
    return main_script, char, script


def _family(script: str) -> str:
    return "CJK" if script in _EAST_ASIAN else script


def _label(script: str) -> str:
    return _SCRIPT_LABEL.get(script, script.title())


def _words(text: str, ascii_too: bool = False) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Each word of ``text`` with its letters and their scripts (words without a scripted letter left out);
    unless ``ascii_too``, none where every letter is ASCII (so Latin), the case of almost all benchmark text."""
    if not ascii_too and (text.isascii() or not any(char.isalpha() for char in _BEYOND_ASCII.findall(text))):
        return
    start = None
    for index, char in enumerate(f"{text} "):
        in_word = char.isalpha() or (start is not None and unicodedata.category(char).startswith("M"))
        if in_word and start is None:
            start = index
        elif not in_word and start is not None:
            word = text[start:index]
            start = None
            if word.isascii() and not ascii_too:
                continue
            scripts = [(letter, script) for letter in word if (script := script_of(letter)) is not None]
            if scripts:
                yield word, scripts


class _Checker:
    """The contract applied row by row, with what the earlier rows hold (their ids and content)."""

    def __init__(self, contract: RowContract, source: str, official: bool):
        self.contract = contract
        self.source = source
        self.official = official
        self.problems: list[str] = []
        self.rows = 0
        self.allowed = {_family(script) for script in contract.scripts}
        # An ASCII text needs no check unless Latin letters are foreign to the file.
        self.ascii_is_clean = not self.allowed or "LATIN" in self.allowed
        self.id_place: dict[str, str] = {}  # the id as compared -> its place
        # the repeat key -> (place, id, the key as written where it is not the key itself)
        self.content_place: dict[tuple, tuple[str, object, tuple | None]] = {}

    def check(self, place: int | str, row: dict) -> dict:
        """The row with its text fields in NFC; its problems are added to :attr:`problems`."""
        self.rows += 1
        place = f"line {place}" if isinstance(place, int) else place
        where = f"{self.source}, {place}"
        row = dict(row)
        complete = self._check_shape(where, row)
        for field in self.contract.text:
            value = row.get(field)
            if value is None or (self.ascii_is_clean and isinstance(value, str) and is_plain_ascii(value)):
                continue  # nothing to normalise or refuse: the whole of almost every file
            row[field] = value = _in_nfc(value)
            if not self.official:
                self._check_text(where, field, value)
        if self.official or not complete:
            return row
        if self.contract.repeat_key is not None and self._repeats(where, place, row):
            return row  # a repeated row is one problem, whatever its id
        self._check_id(where, place, row)
        return row

    def _check_shape(self, where: str, row: dict) -> bool:
        """Whether the row has every required field; what it lacks (or has too many of) is a problem."""
        if None not in row and all(_filled_text(row.get(field)) for field in self.contract.required):
            return True  # every row of a good file
        what = self.contract.what
        complete = True
        extra = row.pop(None, None)  # csv.DictReader keeps the fields beyond the header under None
        if extra:
            self.problems.append(
                f"{where}: {len(extra)} more field(s) than the header names. Fix: quote a field that holds a "
                f"comma, or remove the extra field(s)"
            )
        for field in self.contract.required:
            value = row.get(field)
            if value is None:
                complete = False
                self.problems.append(
                    f"{where}: {field} is missing. Fix: give the {what} its {field} "
                    f"(each {what} needs {', '.join(self.contract.required)})"
                )
            elif not (value if isinstance(value, list) else str(value).strip()):
                complete = False
                self.problems.append(f"{where}: {field} is empty. Fix: fill it in, or remove the {what}")
        return complete

    def _check_text(self, where: str, field: str, value) -> None:
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            hidden = invisible_characters(text)
            if hidden:
                self.problems.append(
                    f"{where}: {field} {_around_invisible(text)!r} holds {', '.join(hidden)}, a character that "
                    "cannot be seen (or a space other than the plain one), so it would look like other text. Fix: "
                    "delete it, or type a plain space"
                )
            self._check_scripts(where, field, text)

    def _check_scripts(self, where: str, field: str, text: str) -> None:
        expected = " or ".join(_label(script) for script in self.contract.scripts)
        for word, scripts in _words(text, ascii_too=not self.ascii_is_clean):
            mixed = _look_alike(scripts)
            if mixed is not None:
                main, char, script = mixed
                own = [letter_script for letter_script in scripts if _family(letter_script[1]) in self.allowed]
                if own and _family(main) not in self.allowed:
                    # most letters are foreign to the file: name the first, and keep the file's script
                    main = own[0][1]
                    char, script = next(pair for pair in scripts if _family(pair[1]) not in self.allowed)
                self.problems.append(
                    f"{where}: {field}: the word {word!r} mixes {_label(main)} and {_label(script)} letters "
                    f"({describe_char(char)}): a look-alike letter makes it another word than the one it "
                    f"seems. Fix: retype the word in {_label(main)} letters"
                )
            elif self.allowed and _family(scripts[0][1]) not in self.allowed:
                self.problems.append(
                    f"{where}: {field}: the word {word!r} is written in {_label(scripts[0][1])} letters "
                    f"({describe_char(scripts[0][0])}), where this file's text is in {expected} letters: it "
                    f"looks like another word than it is. Fix: retype the word in {expected} letters"
                )

    def _repeats(self, where: str, place: str, row: dict) -> bool:
        """Whether the row repeats an earlier one's content (a problem, naming both places)."""
        written = tuple(self.contract.repeat_key(row))
        key = tuple([comparable(part) if isinstance(part, str) else part for part in written])
        id_field = self.contract.id_field
        row_id = row.get(id_field) if id_field else None
        if key not in self.content_place:
            self.content_place[key] = (place, row_id, None if written == key else written)
            return False
        first_place, first_id, first_written = self.content_place[key]
        notes = []
        if id_field and str(first_id or "").strip() != str(row_id or "").strip():
            notes.append(f"under {id_field} {first_id!r} there and {row_id!r} here")
        if (first_written or key) != written:  # text fields are NFC already: spacing is what differs
            notes.append("written with other spacing")
        self.problems.append(
            f"{where}: this {self.contract.what} repeats {first_place}"
            + (f" ({', '.join(notes)})" if notes else "")
            + ", so it would be counted twice. Fix: remove one of the two"
        )
        return True

    def _check_id(self, where: str, place: str, row: dict) -> None:
        id_field, what = self.contract.id_field, self.contract.what
        if id_field is None or not str(row.get(id_field) or "").strip():
            return
        written = str(row[id_field]).strip()
        same = nfc(written)
        if same in self.id_place:
            self.problems.append(
                f"{where}: {id_field} {written!r} is also {self.id_place[same]}'s, so two {what}s would share one "
                f"id. Fix: give each {what} its own {id_field}"
            )
        else:
            self.id_place[same] = place


def _filled_text(value) -> bool:
    """Whether ``value`` is text with something in it other than whitespace."""
    return isinstance(value, str) and value != "" and not value.isspace()


def _in_nfc(value):
    """A field's value with its text (or each text of a list) in NFC."""
    if isinstance(value, str):
        return nfc(value)
    if isinstance(value, list):
        return [nfc(item) if isinstance(item, str) else item for item in value]
    return value


def _around_invisible(text: str) -> str:
    """A field's text as a message quotes it: whole up to 80 characters, else the 60 around its first
    character that cannot be seen."""
    if len(text) <= 80:
        return text
    at = next(position for position, char in enumerate(text) if is_invisible(char))
    return text[max(0, at - 30) : at + 30]
