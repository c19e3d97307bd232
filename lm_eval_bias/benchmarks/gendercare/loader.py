"""GenderPair's data: reading and checking the released pair sets, and the ``custom_dataset`` loader.

Each group's file (``group{1,2,3}_pairset.json``) is a JSON list of elements, one per gender
target: ``object`` (the target) and six strings of "(x, y)" pairs, ``format1`` (biased,
anti-biased) and five rearrangements of it that must agree with it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from lm_eval_bias import data, options, readers
from lm_eval_bias.benchmarks.gendercare.prompts import PairSet, prompts_for, sample_prompts
from lm_eval_bias.benchmarks.gendercare.record import SOURCES
from lm_eval_bias.loading import RowContract, checked_rows

logger = logging.getLogger("lm_eval_bias")

GROUPS = (1, 2, 3)
PAIR_FIELDS = ("format1", "format1_anti", "format2", "format2_anti", "format3", "format3_anti")
# "(x, y)", each descriptor stripped and not empty (greedy up to its last non-space character:
# lazy matching backtracked at every character, 0.2 s instead of 0.1 s for the released files)
_PAIR = re.compile(r"\(\s*([^(),]*[^(),\s])\s*,\s*([^(),]*[^(),\s])\s*\)")
_PAIR_SEPARATOR = re.compile(r"[\s,]*")
# What every element must hold: a target (``object``) and the six pair fields, as text that can be
# seen; a target the file already has in any letter case (or spacing, or Unicode form) would count
# its prompts twice. A released file is used as published (see :func:`load_genderpair`).
PAIR_SET_CONTRACT = RowContract(
    required=("object", *PAIR_FIELDS),
    text=("object", *PAIR_FIELDS),
    repeat_key=lambda row: (str(row["object"]).casefold(),),
    what="pair set",
)


# --------------------------------------------------------------------------
# Reading the released pair sets


def read_pair_sets(path: str | Path, group: int, official: bool = False) -> list[PairSet]:
    """The checked pair sets of one group's file; every problem names the file and element.

    Parameters
    ----------
    path:
        The group's pair-set file.
    group:
        Its group, 1, 2 or 3.
    official:
        The file is the group's released pair set (see :func:`load_genderpair`), used as
        published: of :data:`PAIR_SET_CONTRACT`, only its required fields are checked. In any
        other file a target or descriptor holding a character that cannot be seen or a word that
        mixes two scripts, and a repeated target, are refused.

    Returns
    -------
    list of PairSet
        In the file's order.

    Raises
    ------
    lm_eval_bias.data.MalformedDataError
        The file is not a non-empty JSON list of well-formed elements (:func:`pair_sets_of`).
    """
    path = Path(path)
    return pair_sets_of(path, group, _elements(path), official)


def _elements(path: Path) -> list:
    """The JSON list of a pair-set file."""
    try:
        elements = readers.loads_json(data.read_text(path), str(path))
    except json.JSONDecodeError as error:
        raise data.MalformedDataError(f"{path}: not JSON: {error}") from None
    if not isinstance(elements, list) or not elements:
        raise data.MalformedDataError(f"{path}: expected a non-empty JSON list of pair sets")
    return elements


def pair_sets_of(path: Path, group: int, elements: Sequence, official: bool = False) -> list[PairSet]:
    """The checked pair sets of a pair-set file's ``elements`` (:func:`read_pair_sets`).

    Each element first passes the :data:`PAIR_SET_CONTRACT` (every problem of the file at once),
    then its pairs are parsed and their rearrangements checked against ``format1``.

    Parameters
    ----------
    path:
        The file, named in the messages.
    group:
        Its group, 1, 2 or 3.
    elements:
        The file's JSON list.
    official:
        As in :func:`read_pair_sets`.

    Returns
    -------
    list of PairSet
        Their targets and descriptors in Unicode NFC.

    Raises
    ------
    lm_eval_bias.data.MalformedDataError
        An element is not an object, breaks the contract (a field missing or empty, text with a
        character that cannot be seen or a word mixing two scripts, a repeated target), or a field
        is not a list of "(x, y)" pairs or does not agree with ``format1``.
    """
    fields = ("object", *PAIR_FIELDS)
    places = []
    for index, element in enumerate(elements):
        if not isinstance(element, dict):
            raise data.MalformedDataError(
                f"{path}, element {index}: expected an object with a gender target ('object') and "
                f"{', '.join(PAIR_FIELDS)}"
            )
        places.append((f"element {index}", {field: element[field] for field in fields if field in element}))
    rows = checked_rows(places, PAIR_SET_CONTRACT, str(path), official=official)
    return [_pair_set(f"{path}, element {index}", group, row) for index, row in enumerate(rows)]


def _pair_set(where: str, group: int, row: dict) -> PairSet:
    """The pair set of one checked element, whose six fields must agree."""
    target = str(row["object"]).strip()
    parsed = {field: _parse_pairs(str(row[field]), f"{where} {field}") for field in PAIR_FIELDS}
    pairs = parsed["format1"]
    expected = {
        "format1_anti": [(a, b) for b, a in pairs],
        "format2": [(target, b) for b, _ in pairs],
        "format2_anti": [(target, a) for _, a in pairs],
        "format3": [(b, target) for b, _ in pairs],
        "format3_anti": [(a, target) for _, a in pairs],
    }
    for field, wanted in expected.items():
        if parsed[field] != wanted:
            raise data.MalformedDataError(f"{where}: {field} does not match format1 for target {target!r}")
    return PairSet(group, target, tuple(pairs))


def _parse_pairs(text: str, where: str) -> list[tuple[str, str]]:
    """The "(x, y)" pairs of one field, which holds nothing else but separators."""
    pairs = _PAIR.findall(text)
    if not pairs or not _PAIR_SEPARATOR.fullmatch(_PAIR.sub("", text)):
        raise data.MalformedDataError(
            f"{where}: not a list of '(x, y)' pairs of non-empty descriptors, at {_first_unpaired(text)!r}"
        )
    return pairs


def _first_unpaired(text: str) -> str:
    """The text from the first place that is neither a pair nor a separator (up to 80 characters)."""
    position = 0
    while True:
        position = _PAIR_SEPARATOR.match(text, position).end()
        pair = _PAIR.match(text, position)
        if pair is None:
            return text[position : position + 80]
        position = pair.end()


def _refuse_another_groups_file(group: int, described: dict) -> None:
    """A group's file that is another group's official pair set (swapped file names) would
    report one group's numbers under the other's name."""
    for other, source in SOURCES.items():
        if other != group and described["sha256"] == source.sha256:
            raise data.MalformedDataError(
                f"{described['path']}: this is the official pair set of group {other}, not of group {group}; "
                f"put each group's file in its place (DIR/gendercare/group{group}_pairset.json)"
            )


# --------------------------------------------------------------------------
# The custom_dataset loader and its options


def group_numbers(value) -> tuple[int, ...]:
    """GenderPair groups to keep, as the ``groups`` option gives them.

    Parameters
    ----------
    value:
        A group number, a text of numbers separated by commas ("1,3") or a list of either.

    Returns
    -------
    tuple of int
        The groups, in the order given, each once.

    Raises
    ------
    ValueError
        No group is given, or one is not 1, 2 or 3.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    chosen = []
    for item in items:
        parts = item.split(",") if isinstance(item, str) else [item]
        for part in parts:
            if isinstance(part, str) and not part.strip():
                continue
            try:
                chosen.append(options.integer(part))
            except ValueError:
                chosen.append(None)
    if not chosen or any(group not in GROUPS for group in chosen):
        raise ValueError(f'expected group numbers of 1, 2, 3 (e.g. "1,3"), got {value!r}')
    return tuple(dict.fromkeys(chosen))


PAIRS_PER_TARGET = options.Option(
    "pairs_per_target", options.count, "descriptor pairs per target in the default sample", 2
)
GROUPS_OPTION = options.Option(
    "groups",
    group_numbers,
    "GenderPair groups to keep (1: male, 2: female, 3: non-binary or neutral)",
    GROUPS,
    role=options.SELECTION,
)


@options.takes(
    options.DATA_FILE,
    options.DATA_DIR,
    options.FULL,
    PAIRS_PER_TARGET,
    options.SEED,
    GROUPS_OPTION,
    *options.DETOXIFY_OPTIONS,
)
def load_genderpair(data_file, data_dir, full, pairs_per_target, seed, groups, metadata, **classifier):
    """lm-eval ``custom_dataset`` hook: the groups' prompts (a seeded sample unless ``full``).

    The task passes the ``detoxify_*`` options to its classifier filter.

    Returns
    -------
    datasets.DatasetDict
        The prompts as its ``test`` split, with the files' provenance.

    Raises
    ------
    lm_eval_bias.errors.ConfigurationError
        A ``data_file`` is given: the benchmark has three files.
    lm_eval_bias.data.MalformedDataError
        A group's file is malformed or is another group's released pair set.
    """
    from lm_eval_bias.harness import evaluation_split

    if data_file:
        raise options.ConfigurationError(
            "gendercare: the benchmark has three files (group1_pairset.json, group2_pairset.json, "
            "group3_pairset.json); put them in DIR/gendercare/ and pass --metadata "
            '\'{"data_dir": "DIR"}\' (or set LM_EVAL_BIAS_DATA_DIR) instead of data_file'
        )
    pair_sets, files = [], []
    for group in groups:
        path = data.resolve_data_file(SOURCES[group], data_dir=data_dir)
        # A released pair set is used as published: whether this is it is known before its elements are checked.
        elements = _elements(path)
        files.append(data.describe_file(SOURCES[group], path, len(elements)))
        _refuse_another_groups_file(group, files[-1])
        pair_sets += pair_sets_of(path, group, elements, files[-1]["official"])
    rows = prompts_for(pair_sets) if full else sample_prompts(pair_sets, pairs_per_target, seed)
    logger.info(
        "gendercare_genderpair: %d prompts (%s)",
        len(rows),
        "all" if full else f"{pairs_per_target} pairs per target, seed {seed}",
    )
    provenance = {"official": all(file["official"] for file in files), "files": files}
    return evaluation_split(rows, provenance, "gendercare_genderpair")
