"""Reading TANGO's released prompt files: misgendering prompts and gender disclosures.

Each file is a CSV or a JSON Lines file. Every row is validated, and every problem names the file
and line: a missing column, a label the release does not have, a pronoun family that disagrees
with the template's own pronouns, a repeated row or prompt, a flag that is not a boolean.
"""

from __future__ import annotations

import collections
import csv
import json
import logging
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from lm_eval_bias import data, options, pronouns, readers
from lm_eval_bias.text import comparable, nfc

logger = logging.getLogger("lm_eval_bias")

MISGENDERING_COLUMNS = ("template_idx", "ante", "ante_type", "pronoun_family", "template")
# Antecedent types of the release, with the names metrics use for them.
ANTECEDENT_TYPES = {
    "ante_nongendered": "nongendered_name",
    "ante_gendered_female": "feminine_name",
    "ante_gendered_male": "masculine_name",
    "distal": "distal",
}
PROMPTS_PER_FAMILY = 480
PROMPTS_PER_ANTECEDENT_TYPE = 720


# --------------------------------------------------------------------------
# Rows of either file


def file_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, row) from a CSV or JSON-lines file."""
    if path.suffix.lower() in {".jsonl", ".json"}:
        for line_number, line in enumerate(data.open_text(path), start=1):
            if not line.strip():
                continue
            try:
                row = readers.loads_json(line, str(path), first_line=line_number)
            except json.JSONDecodeError as error:
                raise data.MalformedDataError(f"{path}, line {line_number}: not JSON: {error}") from None
            if not isinstance(row, dict):
                raise data.MalformedDataError(f"{path}, line {line_number}: not a JSON object")
            yield line_number, row
        return
    reader = csv.DictReader(data.open_text(path))
    for row in reader:
        if None in row:
            raise data.MalformedDataError(f"{path}, line {reader.line_num}: too many fields")
        yield reader.line_num, row


def _whole_number(path: Path, line: int, row: dict, column: str) -> int:
    try:
        return options.integer(row[column])
    except ValueError:
        raise data.MalformedDataError(
            f"{path}, line {line}: {column} must be a whole number, got {row[column]!r}"
        ) from None


def _require_columns(path: Path, line: int, row: dict, columns: Sequence[str]) -> None:
    missing = [column for column in columns if row.get(column) is None]
    if missing:
        raise data.MalformedDataError(
            f"{path}, line {line}: missing column(s) {', '.join(missing)}; the file needs {', '.join(columns)}"
        )


# --------------------------------------------------------------------------
# Misgendering prompts


def sentence_case(text: str) -> str:
    """Upper-case the first letter: the release's prompts are all lower case."""
    stripped = text.lstrip()
    return text[: len(text) - len(stripped)] + stripped[:1].upper() + stripped[1:]


def read_misgendering(path: str | Path, official: bool = False) -> list[dict]:
    """Validated misgendering prompts, each with its sentence-cased ``prompt``.

    ``official``: the file is the release itself (see
    :func:`~lm_eval_bias.benchmarks.tango.load_misgendering`), whose text is used as published;
    any other file is refused where a field holds a character that cannot be seen (a zero-width
    or no-break space: another prompt that looks the same).
    """
    path = Path(path)
    return misgendering_prompts(path, list(file_rows(path)), official)


def misgendering_prompts(path: Path, rows: Sequence[tuple[int, dict]], official: bool = False) -> list[dict]:
    """The validated prompts of the (line, row) pairs of ``path`` (:func:`read_misgendering`)."""
    prompts = []
    repeats = _Repeats(path)
    for line, row in rows:
        _require_columns(path, line, row, MISGENDERING_COLUMNS)
        if not official:
            for column in MISGENDERING_COLUMNS:
                data.refuse_invisible(f"{path}, line {line}", column, str(row[column]))
        prompt = _misgendering_prompt(path, line, row)
        repeats.check(line, prompt)
        prompts.append(prompt)
    if not prompts:
        raise data.MalformedDataError(f"{path}: no prompts (is the file empty?)")
    return prompts


def _misgendering_prompt(path: Path, line: int, row: dict) -> dict:
    """One row's prompt, its labels checked against the release's and its template's pronouns."""
    family, ante_type = str(row["pronoun_family"]).strip(), str(row["ante_type"]).strip()
    if family not in pronouns.FAMILIES:
        raise data.MalformedDataError(
            f"{path}, line {line}: unknown pronoun_family {family!r}; expected one of {', '.join(pronouns.FAMILIES)}"
        )
    if ante_type not in ANTECEDENT_TYPES:
        raise data.MalformedDataError(
            f"{path}, line {line}: unknown ante_type {ante_type!r}; expected one of {', '.join(ANTECEDENT_TYPES)}"
        )
    template = str(row["template"])
    if not template.strip():
        raise data.MalformedDataError(f"{path}, line {line}: template is empty")
    # A label that disagrees with the template's own pronouns would score a consistent model
    # as misgendering (true of no row of the release).
    # Only the families' own pronouns count: "it" for a thing is no claim about the person.
    others = sorted(
        {match.family for match in pronouns.find_pronouns(template) if match.family in pronouns.FAMILIES} - {family}
    )
    if others:
        raise data.MalformedDataError(
            f"{path}, line {line}: pronoun_family is {family!r} but the template uses {', '.join(others)} "
            f"pronouns ({template.strip()[:80]!r}); the family must be the template's own. Fix: correct the "
            "pronoun_family label or the template"
        )
    return {
        "template_idx": _template_index(path, line, row["template_idx"]),
        "ante": str(row["ante"]),
        "ante_type": ante_type,
        "pronoun_family": family,
        "template": template,
        "prompt": sentence_case(template),
    }


# A number written with a sign, decimals or an exponent ("+0", "0.0", "1e0"): refused with how to write it
_NUMBER_LIKE = re.compile(r"[+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?")


def _template_index(path: Path, line: int, value) -> int:
    """``template_idx`` as a number: "00" and "0" are one template (the repeat check compares
    numbers), and text that is not plainly one ("+0", "0.0", "seven") is refused."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value  # a JSON Lines number
    text = str(value).strip()
    if text.isascii() and text.isdigit():
        return int(text)
    raise data.MalformedDataError(
        f"{path}, line {line}: template_idx must be a whole number, got {value!r}"
        + ("; write it in digits alone (0, 1, 2, ...)" if _NUMBER_LIKE.fullmatch(text) else "")
    )


class _Repeats:
    """Refuses a row that repeats an earlier one, naming both lines: the release has each
    (template, antecedent, family) once and each prompt once, and a repeat would count twice."""

    def __init__(self, path: Path):
        self.path = path
        self.row_line: dict[tuple, tuple[int, str]] = {}  # (template_idx, NFC ante, family) -> (line, ante)
        self.prompt_line: dict[str, tuple[int, dict]] = {}  # the prompt as the model sees it -> (line, row)

    def check(self, line: int, prompt: dict) -> None:
        # Names compare in NFC: "Zoë" with one code point or with a combining accent is one name.
        ante, family = prompt["ante"].strip(), prompt["pronoun_family"]
        key = (prompt["template_idx"], nfc(ante), family)
        if key in self.row_line:
            first, written = self.row_line[key]
            raise data.MalformedDataError(
                f"{self.path}, line {line}: repeats line {first} (template_idx {key[0]}, ante {ante!r}"
                + ("" if written == ante else f", written {written!r} there: the same letters in another Unicode form")
                + f", pronoun_family {family}), so it would be counted twice; remove the repeated row"
            )
        self.row_line[key] = (line, ante)
        # The model sees the prompt, not the labels: the same prompt under another template_idx, or
        # with an antecedent written in other letter case or spacing, is the same question twice.
        seen = comparable(prompt["prompt"])
        if seen in self.prompt_line:
            first, other = self.prompt_line[seen]
            raise data.MalformedDataError(
                f"{self.path}, line {line}: its prompt {seen!r} is also line {first}'s (template_idx "
                f"{other['template_idx']}, ante {other['ante'].strip()!r} there; template_idx "
                f"{prompt['template_idx']}, ante {ante!r} here), so the model would be asked it twice and it would "
                "be counted twice; remove the repeated row"
            )
        self.prompt_line[seen] = (line, prompt)


def check_misgendering_shape(prompts: Sequence[dict], path: Path) -> list[str]:
    """Warn where the file departs from the release's 480 per family / 720 per antecedent type."""
    warnings = []
    by_family = collections.Counter(p["pronoun_family"] for p in prompts)
    by_type = collections.Counter(p["ante_type"] for p in prompts)
    for family in pronouns.FAMILIES:
        if by_family[family] != PROMPTS_PER_FAMILY:
            warnings.append(
                f"tango_misgendering: {path} has {by_family[family]} prompts for family "
                f"{family!r}, the release has {PROMPTS_PER_FAMILY}"
            )
    for ante_type in ANTECEDENT_TYPES:
        if by_type[ante_type] != PROMPTS_PER_ANTECEDENT_TYPE:
            warnings.append(
                f"tango_misgendering: {path} has {by_type[ante_type]} prompts with "
                f"ante_type {ante_type!r}, the release has {PROMPTS_PER_ANTECEDENT_TYPE}"
            )
    for message in warnings:
        logger.warning(message)
    return warnings


# --------------------------------------------------------------------------
# Gender disclosure

DISCLOSURE_COLUMNS = (
    "gender_prompt_idx",
    "gender_prompt",
    "filled_gender_prompt",
    "gender_identity",
    "name",
    "is_english_name",
    "is_western_nb_gender",
)


def _flag(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def iter_disclosure(path: str | Path) -> Iterator[dict]:
    """Validated disclosure prompts, streamed (the release has 1.5 million)."""
    path = Path(path)
    any_row = False
    for line, row in file_rows(path):
        _require_columns(path, line, row, DISCLOSURE_COLUMNS)
        prompt = str(row["filled_gender_prompt"])
        identity = str(row["gender_identity"]).strip()
        if not prompt.strip() or not identity:
            raise data.MalformedDataError(f"{path}, line {line}: empty filled_gender_prompt or gender_identity")
        try:
            english, western = _flag(row["is_english_name"]), _flag(row["is_western_nb_gender"])
        except ValueError as error:
            raise data.MalformedDataError(f"{path}, line {line}: {error}") from None
        any_row = True
        yield {
            "gender_prompt_idx": _whole_number(path, line, row, "gender_prompt_idx"),
            "gender_prompt": str(row["gender_prompt"]),
            "prompt": prompt,
            "gender_identity": identity,
            "name": str(row["name"]),
            "is_english_name": english,
            "is_western_nb_gender": western,
        }
    if not any_row:
        raise data.MalformedDataError(f"{path}: no prompts (is the file empty?)")


def sample_names(rows: Iterable[dict], per_group: int, seed: int) -> list[str]:
    """``per_group`` English and ``per_group`` non-English names of these rows, drawn with ``seed``."""
    english, other = set(), set()
    for row in rows:
        (english if row["is_english_name"] else other).add(row["name"])
    rng = random.Random(seed)
    chosen = []
    for names in (sorted(english), sorted(other)):
        chosen += rng.sample(names, min(per_group, len(names)))
    return chosen
