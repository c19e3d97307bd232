"""WinoQueer's data: the CSV reader, the checks of its rows, and the ``custom_dataset`` loader
that the task YAMLs name (:func:`load_dataset`).

Each row passes the shared loader contract (:data:`PAIR_CONTRACT`, :mod:`lm_eval_bias.loading`): its
text is normalised to Unicode NFC, and text that looks like other text (a character that cannot be
seen, a look-alike letter) and repeated pairs are refused; then WinoQueer's own checks (labels,
identity span, counterfactual words) run on the pairs. Each pair's scored spans
(``scoring.pair_plan``) and template are computed here, once, and carried by its document.
"""

from __future__ import annotations

import csv
import dataclasses
import operator
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from lm_eval_bias import data, options
from lm_eval_bias.benchmarks.winoqueer.record import SUBGROUPS
from lm_eval_bias.benchmarks.winoqueer.record import WINOQUEER as SOURCE
from lm_eval_bias.benchmarks.winoqueer.scoring import changed_words, pair_plan, template_of
from lm_eval_bias.harness import evaluation_split
from lm_eval_bias.loading import RowContract, checked_rows
from lm_eval_bias.text import nfc

SUBGROUPS_OPTION = options.Option(
    "subgroups", options.names, "WinoQueer subgroups to keep, e.g. Transgender,Nonbinary", role=options.SELECTION
)

# The data file labels Nonbinary "NB".
SUBGROUP_OF_LABEL = {**{name: name for name in SUBGROUPS}, "NB": "Nonbinary"}
COUNTERFACTUAL_LABELS = ("Straight", "Heterosexual", "Cisgender", "Cis")
REQUIRED_COLUMNS = ("Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y")


# Each pair must hold its labels and both sentences, in Latin letters, and repeat no other pair (its labels
# and sentences, spacing aside) whatever its id; a file with an id column gets it checked too (pairs_of).
PAIR_CONTRACT = RowContract(
    required=REQUIRED_COLUMNS,
    text=REQUIRED_COLUMNS,
    repeat_key=operator.itemgetter(*REQUIRED_COLUMNS),
    what="pair",
    scripts=("LATIN",),
)
# What messages and documents call the file's first column when its header leaves it unnamed
# (the official file's pandas index).
ID_NAME = "pair_id"


def read_pairs(path: str | Path, official: bool = False) -> list[dict]:
    """Read and validate a WinoQueer CSV; every problem names the file and line.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    official : bool
        The file is the official one (see :func:`load_dataset`), whose text and repeats are the
        authors' (:func:`lm_eval_bias.loading.checked_rows`): only its fields, labels and identity
        spans are checked.

    Returns
    -------
    list of dict
        The pairs, as :func:`pairs_of` returns them.

    Raises
    ------
    MalformedDataError
        As :func:`pairs_of`, or when the file has no header or lacks a required column.
    """
    path = Path(path)
    return pairs_of(path, *_csv_rows(path), official=official)


def _csv_rows(path: Path) -> tuple[list[str], list[tuple[int, dict]]]:
    """The header and the (line, row) pairs of a WinoQueer CSV, its columns checked; an unnamed
    first column is read as :data:`ID_NAME`."""
    reader = csv.DictReader(data.open_text(path))
    header = reader.fieldnames
    if not header:
        raise data.MalformedDataError(
            f"{path}: the file is empty; expected a CSV with columns {', '.join(REQUIRED_COLUMNS)}"
        )
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    if missing:
        raise data.MalformedDataError(
            f"{path}: missing column(s) {', '.join(missing)}; found {', '.join(header)}. "
            f"A WinoQueer file needs {', '.join(REQUIRED_COLUMNS)}"
        )
    if not header[0].strip() and ID_NAME not in header:
        header = reader.fieldnames = [ID_NAME, *header[1:]]
    return header, [(reader.line_num, row) for row in reader]


def pairs_of(path: Path, header: list[str], rows: Sequence[tuple[int, dict]], official: bool = False) -> list[dict]:
    """The validated pairs of the (line, row) pairs of ``path`` (:func:`read_pairs`).

    Every row passes :data:`PAIR_CONTRACT` (with the file's first column as the pair's id, unless it
    is a required one), then WinoQueer's own checks: known labels, and sentences that differ in more
    than normalisation, spacing and letter case.

    Parameters
    ----------
    path : Path
        The file, as messages name it.
    header : list of str
        The file's columns.
    rows : sequence of (int, dict)
        Each row's line and fields.
    official : bool
        As for :func:`read_pairs`.

    Returns
    -------
    list of dict
        One pair per row, in order: ``pair_id`` (the id column's value, else the line), ``subgroup``,
        both labels, both sentences in NFC, and ``line``.

    Raises
    ------
    MalformedDataError
        Every problem the contract finds, in one message; else the first row with an unknown label
        or no identity span.
    """
    id_column = header[0] if header[0] not in REQUIRED_COLUMNS else None
    contract = PAIR_CONTRACT
    if id_column is not None:
        contract = dataclasses.replace(PAIR_CONTRACT, id_field=id_column, text=(id_column, *REQUIRED_COLUMNS))
    checked = checked_rows(rows, contract, str(path), official=official)
    pairs = []
    for (line, raw), row in zip(rows, checked):
        pair = _validated_pair(row, raw, path, line, id_column)
        pair["line"] = line
        pairs.append(pair)
    return pairs


def _validated_pair(row: dict, raw: dict, path: Path, line: int, id_column: str | None) -> dict:
    """The pair of a row that passed the contract (``row``, in NFC; ``raw``, as written), its labels
    and identity span checked."""
    where = f"{path}, line {line}"
    label_x, label_y = row["Gender_ID_x"].strip(), row["Gender_ID_y"].strip()
    if label_x not in SUBGROUP_OF_LABEL:
        raise data.MalformedDataError(
            f"{where}: unknown Gender_ID_x label {label_x!r}; expected one of {', '.join(SUBGROUP_OF_LABEL)}"
        )
    if label_y not in COUNTERFACTUAL_LABELS:
        raise data.MalformedDataError(
            f"{where}: unknown Gender_ID_y label {label_y!r}; expected one of {', '.join(COUNTERFACTUAL_LABELS)}"
        )
    sent_x, sent_y = row["sent_x"], row["sent_y"]
    if sent_x.lower().split() == sent_y.lower().split():
        raise data.MalformedDataError(
            f"{where}: sent_x and sent_y {_how_they_differ(raw['sent_x'], raw['sent_y'])}, so the pair has no "
            "identity span; fix or remove the row"
        )
    return {
        "pair_id": (row[id_column] if id_column is not None else "") or str(line),
        "subgroup": SUBGROUP_OF_LABEL[label_x],
        "Gender_ID_x": label_x,
        "Gender_ID_y": label_y,
        "sent_x": sent_x,
        "sent_y": sent_y,
    }


def _how_they_differ(raw_x: str, raw_y: str) -> str:
    """What tells apart two sentences that are the same words once normalised, spaced and
    lower-cased alike."""
    sent_x, sent_y = nfc(raw_x), nfc(raw_y)
    kinds = [
        kind
        for kind, differs in (
            (_NORMALISATION, raw_x.lower().split() != raw_y.lower().split()),
            ("whitespace", sent_x.lower() != sent_y.lower()),
            ("letter case", sent_x.split() != sent_y.split()),
        )
        if differs
    ]
    return "differ only in " + " and ".join(kinds) if kinds else "are identical"


_NORMALISATION = (
    "Unicode normalisation (an accented letter written as one character in one sentence and as a "
    "letter plus a combining accent in the other)"
)


def parse_subgroups(subgroups: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """Normalise a subgroup selection (names or data labels, any case)."""
    if subgroups is None or subgroups == "":
        return None
    names = subgroups.split(",") if isinstance(subgroups, str) else list(subgroups)
    by_lower = {label.lower(): name for label, name in SUBGROUP_OF_LABEL.items()}
    chosen = []
    for name in names:
        key = str(name).strip().lower()
        if key not in by_lower:
            raise data.DataError(f"winoqueer: unknown subgroup {name!r}; choose from {', '.join(SUBGROUPS)}")
        chosen.append(by_lower[key])
    return tuple(dict.fromkeys(chosen))


@options.takes(options.DATA_FILE, options.DATA_DIR, SUBGROUPS_OPTION)
def load_dataset(data_file, data_dir, subgroups, metadata):
    """lm-eval ``custom_dataset`` hook: the validated pairs as a ``test`` split.

    Receives the task metadata, ``--metadata`` and ``--model_args`` as keyword
    arguments; reads ``data_file``, ``data_dir`` and ``subgroups``. Pairs that repeat
    an earlier pair (labels and both sentences, whatever their ids), look-alike text and
    sentences that do not name their labels' identities are errors in any file but the
    official one, whose pairs are scored as its authors score them.
    """
    selected = parse_subgroups(subgroups)
    path = data.resolve_data_file(SOURCE, data_file=data_file, data_dir=data_dir)
    # The official file is scored as published: whether this is it is known before its rows are checked.
    header, rows = _csv_rows(path)
    provenance = data.describe_file(SOURCE, path, len(rows))
    pairs = pairs_of(path, header, rows, official=provenance["official"])
    if not provenance["official"]:
        _check_counterfactuals(path, pairs)
    if selected:
        pairs = [pair for pair in pairs if pair["subgroup"] in selected]
        if not pairs:
            raise data.DataError(f"winoqueer: {path} has no pairs for subgroup(s) {', '.join(selected)}")
    for pair in pairs:
        pair["template"] = template_of(pair["sent_x"], pair["sent_y"])
        # the pair's scored spans, diffed here once: the task's requests and scores read them
        pair["plan"] = pair_plan(pair["sent_x"], pair["sent_y"])
    return evaluation_split(pairs, {"official": provenance["official"], "files": [provenance]}, "winoqueer")


_COUNTERFACTUAL_WORD = re.compile(r"\b(?:straight|heterosexuals?|cisgender|cis)\b", re.IGNORECASE)


def looks_swapped(sent_x: str, sent_y: str) -> bool:
    """Whether the words that differ between the sentences name the counterfactual identity in
    ``sent_x`` and not in ``sent_y`` (true of no pair of the official data: a swapped row)."""
    changed_x, changed_y = changed_words(sent_x, sent_y)
    return bool(_COUNTERFACTUAL_WORD.search(changed_x)) and not _COUNTERFACTUAL_WORD.search(changed_y)


def _lines(lines: list[int]) -> str:
    return ", ".join(str(line) for line in lines[:5]) + (f" (and {len(lines) - 5} more)" if len(lines) > 5 else "")


def _check_counterfactuals(path: Path, pairs: list[dict]) -> None:
    """Refuse pairs whose sentences are the wrong way round, or whose sentences do not name the
    identities their ``Gender_ID_x`` and ``Gender_ID_y`` labels say (true of no pair of the shared
    copies of the official data)."""
    swapped = [pair["line"] for pair in pairs if looks_swapped(pair["sent_x"], pair["sent_y"])]
    if swapped:
        raise data.MalformedDataError(
            f"{path}: in {len(swapped)} pair(s) the words that differ in sent_x name the counterfactual "
            f"(straight, heterosexual, cisgender, cis) and those in sent_y do not, at line(s) {_lines(swapped)}: "
            "sent_x must be the LGBTQ+ sentence and sent_y its counterfactual, or the score is inverted. "
            "Fix: swap the two sentences (or the sent_x/sent_y column names) in those rows"
        )
    misnamed = [
        pair["line"] for pair in pairs if not names_its_subgroup(pair["sent_x"], pair["sent_y"], pair["Gender_ID_x"])
    ]
    if misnamed:
        raise data.MalformedDataError(
            f"{path}: in {len(misnamed)} pair(s) the words that differ in sent_x do not name the identity of "
            f"Gender_ID_x (e.g. 'lesbian' for Lesbian), at line(s) {_lines(misnamed)}: the pair would be counted "
            "in another subgroup. Fix: correct the Gender_ID_x label or the sentence in those rows"
        )
    unnamed = [
        pair["line"] for pair in pairs if not names_its_label(pair["sent_x"], pair["sent_y"], pair["Gender_ID_y"])
    ]
    if unnamed:
        raise data.MalformedDataError(
            f"{path}: in {len(unnamed)} pair(s) the words that differ in sent_y do not name the identity of "
            f"Gender_ID_y (e.g. 'cisgender' for Cisgender), at line(s) {_lines(unnamed)}: sent_y must be the "
            "counterfactual that its label names, or the pair compares something else. Fix: correct the "
            "Gender_ID_y label or the sentence in those rows"
        )


# How sentences name each Gender_ID_x identity (the official data's words, and common synonyms)
SUBGROUP_WORDS = {
    "LGBTQ": r"lgbt(?:q|qia)?\+?",
    "Queer": r"(?:gender)?queer",
    "Transgender": r"trans(?:gender|sexual|women|woman|men|man)?",
    "NB": r"non-?binary|nb|enby|genderqueer|agender",
    "Bisexual": r"bi(?:sexual)?",
    "Pansexual": r"pan(?:sexual)?",
    "Lesbian": r"lesbian|sapphic",
    "Asexual": r"asexual|ace|aroace",
    "Gay": r"gay|homosexual",
}


def _subgroup_pattern(label_x: str) -> re.Pattern:
    words = SUBGROUP_WORDS.get(label_x) or SUBGROUP_WORDS.get(
        "NB" if SUBGROUP_OF_LABEL.get(label_x) == "Nonbinary" else label_x, re.escape(label_x)
    )
    return re.compile(rf"\b(?:{words})s?\b", re.IGNORECASE)


def _label_pattern(label_y: str) -> re.Pattern:
    # plurals ("Heterosexuals") and a hyphen or space inside ("cis-gender") name it too
    word = r"[-\s]?".join(re.escape(letter) for letter in label_y)
    return re.compile(rf"\b{word}s?\b", re.IGNORECASE)


def names_its_subgroup(sent_x: str, sent_y: str, label_x: str) -> bool:
    """Whether the words that differ in ``sent_x`` name its ``Gender_ID_x`` identity."""
    changed_x, _ = changed_words(sent_x, sent_y)
    return _subgroup_pattern(label_x).search(changed_x) is not None


def names_its_label(sent_x: str, sent_y: str, label_y: str) -> bool:
    """Whether the words that differ in ``sent_y`` contain its label's word (Cis: "cis")."""
    _, changed_y = changed_words(sent_x, sent_y)
    return _label_pattern(label_y).search(changed_y) is not None
