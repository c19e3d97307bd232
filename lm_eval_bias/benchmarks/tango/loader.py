"""Loading TANGO's released prompt files: the ``custom_dataset`` loaders of the misgendering and
gender-disclosure tasks, and the readers that check every row of the files.

Each file is a CSV or a JSON Lines file. Every row passes through the package's row contract
(:mod:`lm_eval_bias.loading`: required fields, text in NFC without characters that cannot be seen,
repeated prompts), then TANGO's own checks; every problem names the file and line: a label the
release does not have, a pronoun family that disagrees with the template's own pronouns, two
prompts under the same labels, a flag that is not a boolean.
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
from lm_eval_bias.benchmarks.tango.record import ANTECEDENT_TYPES
from lm_eval_bias.benchmarks.tango.record import TANGO_DISCLOSURE as DISCLOSURE
from lm_eval_bias.benchmarks.tango.record import TANGO_MISGENDERING as MISGENDERING
from lm_eval_bias.loading import RowContract, checked_rows, iter_checked_rows

logger = logging.getLogger("lm_eval_bias")

MISGENDERING_COLUMNS = ("template_idx", "ante", "ante_type", "pronoun_family", "template")
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

    ``official``: the file is the release itself (see :func:`load_misgendering`), whose text is
    used as published; any other file is refused where a field holds a character that cannot be
    seen (a zero-width or no-break space: another prompt that looks the same).
    """
    path = Path(path)
    return misgendering_prompts(path, list(file_rows(path)), official)


def _repeat_of_prompt(row: dict) -> tuple[str]:
    # The model sees the prompt, not the labels: the same prompt under another template_idx, or
    # with an antecedent written in other letter case or spacing, is the same question twice.
    return (sentence_case(row["template"]),)


MISGENDERING_ROWS = RowContract(
    required=MISGENDERING_COLUMNS, text=MISGENDERING_COLUMNS, repeat_key=_repeat_of_prompt, what="prompt"
)


def misgendering_prompts(path: Path, rows: Sequence[tuple[int, dict]], official: bool = False) -> list[dict]:
    """The validated prompts of the (line, row) pairs of ``path`` (:func:`read_misgendering`).

    Raises
    ------
    MalformedDataError
        A row that breaks :data:`MISGENDERING_ROWS` (every such problem at once), then the first row
        whose labels are wrong or repeat another row's.
    """
    checked = checked_rows(rows, MISGENDERING_ROWS, str(path), official=official)
    prompts = []
    line_of_labels: dict[tuple, int] = {}  # (template_idx, ante, family) -> its line
    for (line, _), row in zip(rows, checked):
        prompt = _misgendering_prompt(path, line, row)
        labels = (prompt["template_idx"], prompt["ante"].strip(), prompt["pronoun_family"])
        if labels in line_of_labels:
            # The results and tango-agreement tell prompts apart by these three.
            raise data.MalformedDataError(
                f"{path}, line {line}: template_idx {labels[0]}, ante {labels[1]!r} and pronoun_family {labels[2]} "
                f"are also line {line_of_labels[labels]}'s, another prompt, so the two could not be told apart. "
                "Fix: give each template its own template_idx, or remove one of the two"
            )
        line_of_labels[labels] = line
        prompts.append(prompt)
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
# The misgendering tasks' loader

FAMILIES_OPTION = options.Option(
    "families", options.names, "pronoun families to keep, e.g. xe,ey,fae", role=options.SELECTION
)


def _choose(names: Sequence[str] | None, known: Sequence[str], what: str) -> tuple[str, ...] | None:
    if not names:
        return None
    unknown = [n for n in names if n not in known]
    if unknown:
        raise options.ConfigurationError(
            f"tango: unknown {what} {', '.join(map(repr, unknown))}; choose from {', '.join(known)}"
        )
    return tuple(names)


def mark_gap_sides(rows: list[dict], side_of, gap: str) -> None:
    """Set each row's ``gap_side``: 0 on the minuend's side, 1 on the subtrahend's, -1 outside the gap.

    A gap needs rows on both sides; without them every row gets -1 and the gap is left out of the
    results (with a warning) rather than reported as NaN.

    Parameters
    ----------
    rows:
        The documents, changed in place.
    side_of:
        A function of a row that returns its side (0, 1 or -1).
    gap:
        The gap's name, for the warning.
    """
    sides = [side_of(row) for row in rows]
    if not ({0, 1} <= set(sides)):
        logger.warning("%s: the data has no rows on one side, so this gap is not reported", gap)
        sides = [-1] * len(rows)
    for row, side in zip(rows, sides):
        row["gap_side"] = side


@options.takes(options.DATA_FILE, options.DATA_DIR, FAMILIES_OPTION)
def load_misgendering(data_file, data_dir, families, metadata):
    """lm-eval ``custom_dataset`` hook for the misgendering tasks (``families``: a subset)."""
    from lm_eval_bias.harness import evaluation_split

    selected = _choose(families, pronouns.FAMILIES, "pronoun family")
    path = data.resolve_data_file(MISGENDERING, data_file=data_file, data_dir=data_dir)
    # The release is used as published: whether this is it is known before its rows are checked.
    rows = list(file_rows(path))
    provenance = data.describe_file(MISGENDERING, path, len(rows))
    prompts = misgendering_prompts(path, rows, provenance["official"])
    check_misgendering_shape(prompts, path)
    if selected:
        prompts = [p for p in prompts if p["pronoun_family"] in selected]
    mark_gap_sides(
        prompts, lambda p: {"distal": 0, "ante_nongendered": 1}.get(p["ante_type"], -1), "distal_minus_nongendered_gap"
    )
    return evaluation_split(prompts, {"official": provenance["official"], "files": [provenance]}, "tango misgendering")


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


DISCLOSURE_ROWS = RowContract(
    required=("filled_gender_prompt", "gender_identity", "name"),
    text=("gender_prompt", "filled_gender_prompt", "gender_identity", "name"),
    what="prompt",
)


def iter_disclosure(path: str | Path) -> Iterator[dict]:
    """Validated disclosure prompts, streamed (the release has 1.5 million).

    Every row passes :data:`DISCLOSURE_ROWS`: a name or identity with a character that cannot be
    seen would be a group of its own that looks like another. Its problems are raised once the
    last row is read, so read to the end before using the rows.

    Parameters
    ----------
    path : str or Path
        The disclosure file (JSON Lines or CSV).

    Yields
    ------
    dict
        Each prompt: ``gender_prompt_idx``, ``gender_prompt``, ``prompt``, ``gender_identity``,
        ``name``, ``is_english_name``, ``is_western_nb_gender``.

    Raises
    ------
    MalformedDataError
        A missing column, a flag or index that is not one (at its row); the contract's problems (at
        the end).
    """
    path = Path(path)
    line = 0

    def with_columns() -> Iterator[tuple[int, dict]]:
        nonlocal line
        for line, row in file_rows(path):
            _require_columns(path, line, row, DISCLOSURE_COLUMNS)
            yield line, row

    # iter_checked_rows yields each row as soon as it has read it, so ``line`` is this row's.
    for row in iter_checked_rows(with_columns(), DISCLOSURE_ROWS, str(path)):
        try:
            english, western = _flag(row["is_english_name"]), _flag(row["is_western_nb_gender"])
        except ValueError as error:
            raise data.MalformedDataError(f"{path}, line {line}: {error}") from None
        yield {
            "gender_prompt_idx": _whole_number(path, line, row, "gender_prompt_idx"),
            "gender_prompt": str(row["gender_prompt"]),
            "prompt": str(row["filled_gender_prompt"]),
            "gender_identity": str(row["gender_identity"]).strip(),
            "name": str(row["name"]),
            "is_english_name": english,
            "is_western_nb_gender": western,
        }


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


BINARY_IDENTITIES = ("woman", "man")

NAMES_PER_GROUP = options.Option(
    "names_per_group", options.count, "English (and as many non-English) names in the default sample", 2
)
BINARY_IDENTITIES_OPTION = options.Option(
    "binary_identities", options.names, "identities on the binary side of the TGNB-minus-binary gaps", BINARY_IDENTITIES
)


@options.takes(
    options.DATA_FILE,
    options.DATA_DIR,
    NAMES_PER_GROUP,
    options.SEED,
    options.FULL,
    BINARY_IDENTITIES_OPTION,
    *options.DETOXIFY_OPTIONS,
)
def load_disclosure(data_file, data_dir, names_per_group, seed, full, binary_identities, metadata, **classifier):
    """lm-eval ``custom_dataset`` hook for the disclosure tasks.

    The default sample keeps every gender identity and every disclosure form
    for the same few names (``names_per_group`` English and as many
    non-English names, drawn with ``seed``), so identities are compared on
    identical sentences; ``full=True`` keeps all 1.5 million prompts. The
    TGNB-minus-binary gaps compare ``binary_identities`` with all others.
    The task passes the ``detoxify_*`` options to its classifier filter.
    """
    from lm_eval_bias.harness import evaluation_split

    path = data.resolve_data_file(DISCLOSURE, data_file=data_file, data_dir=data_dir)
    binary = tuple(identity.lower() for identity in binary_identities)
    n_rows = 0

    def counted(rows):
        nonlocal n_rows
        for row in rows:
            n_rows += 1
            yield row

    if full:
        rows = list(counted(iter_disclosure(path)))
    else:
        names = set(sample_names(counted(iter_disclosure(path)), names_per_group, seed))
        logger.info("tango_disclosure: sampled names %s (seed %s)", ", ".join(sorted(names)), seed)
        rows = [r for r in iter_disclosure(path) if r["name"] in names]
    provenance = data.describe_file(DISCLOSURE, path, n_rows)
    identities = sorted({row["gender_identity"].lower() for row in rows})
    unknown = [identity for identity in binary if identity not in identities]
    # The default pair may be absent from a subset of the data (then the gap is left out, with a
    # warning); names given on purpose must be right, or the gap would compare other groups.
    if unknown and tuple(binary_identities) != BINARY_IDENTITIES:
        raise options.ConfigurationError(
            f"tango_disclosure: binary_identities {', '.join(map(repr, unknown))} are not gender identities of "
            f"{path}; choose from {', '.join(identities)}"
        )
    mark_gap_sides(
        rows,
        lambda r: 1 if r["gender_identity"].lower() in binary else 0,
        f"tgnb_minus_binary_gap (binary identities: {', '.join(binary)})",
    )
    logger.info("tango_disclosure: %d prompts from %s", len(rows), path)
    return evaluation_split(rows, {"official": provenance["official"], "files": [provenance]}, "tango_disclosure")
