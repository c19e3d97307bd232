"""JSON and YAML readers that refuse a key given twice in one object.

``json.loads`` and ``yaml.safe_load`` keep the last of two equal keys, so a policy file with
``rules:`` twice, or a results file with a metric twice, would silently be read as its last
(perhaps looser) value. Every JSON or YAML file a user hands us is read through these two
functions, which refuse such a file naming the key and both lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yaml

from lm_eval_bias.errors import DataError


class DuplicateKeyError(DataError):
    """A JSON or YAML object gives one key twice; the message names the key and both lines."""


def _duplicate_message(source: str, key: str, first_line: int, line: int) -> str:
    return (
        f"{source}, line {line}: the key {key!r} is given twice in one object (first on line {first_line}); "
        "a plain reader would silently keep only the last. Fix: keep one of them"
    )


def _unique_pairs(pairs: list) -> dict:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Duplicate
    return result


class _Duplicate(Exception):
    pass


def _first_duplicate(text: str) -> tuple[str, int, int]:
    """(key, first index, repeated index) of the first key repeated in one object of valid JSON ``text``."""
    scanstring = json.decoder.scanstring
    keys_of_open_objects: list[dict | None] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            value, end = scanstring(text, index + 1)
            after = end
            while after < length and text[after] in " \t\r\n":
                after += 1
            keys = keys_of_open_objects[-1] if keys_of_open_objects else None
            if keys is not None and after < length and text[after] == ":":
                if value in keys:
                    return value, keys[value], index
                keys[value] = index
            index = end
            continue
        if char == "{":
            keys_of_open_objects.append({})
        elif char == "[":
            keys_of_open_objects.append(None)
        elif char in "]}":
            keys_of_open_objects.pop()
        index += 1
    raise AssertionError("no repeated key in text the hook found one in")


def loads_json(text: str, source: str, parse_constant: Callable[[str], Any] | None = None, first_line: int = 1) -> Any:
    """Parse JSON ``text``, refusing an object that gives a key twice.

    Parameters
    ----------
    text : str
        The JSON document (or one line of a JSON Lines file).
    source : str
        The file it came from, as messages name it.
    parse_constant : callable, optional
        As :func:`json.loads`'s (how ``NaN`` and ``Infinity`` are read).
    first_line : int, default 1
        The line of the file on which ``text`` starts, for messages about a JSON Lines line.

    Returns
    -------
    The parsed value. Invalid JSON raises :class:`ValueError`, as :func:`json.loads` does; a
    repeated key raises :class:`DuplicateKeyError` naming the key and both lines.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=parse_constant)
    except _Duplicate:
        key, first, repeated = _first_duplicate(text)
        line_of = lambda index: first_line + text.count("\n", 0, index)  # noqa: E731
        raise DuplicateKeyError(_duplicate_message(source, key, line_of(first), line_of(repeated))) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives a key twice."""

    source = "YAML"
    merge_keys = True  # whether "<<: *anchor" may merge a mapping's keys into another

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            self._check_merge_keys(node)
            seen = {}
            # Keys merged in with "<<: *anchor" may be overridden, as YAML allows; written keys may not.
            for key_node, _ in (pair for pair in node.value if pair[0].tag != _MERGE_TAG):
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise DuplicateKeyError(_duplicate_message(self.source, str(key), seen[key], line))
                    seen[key] = line
                except TypeError:  # an unhashable key: SafeLoader's own error follows
                    break
        return super().construct_mapping(node, deep=deep)

    def _check_merge_keys(self, node) -> None:
        """``<<`` given twice in one mapping is a key given twice (PyYAML would let the later merge's keys
        win); where merge keys are not allowed, any ``<<`` is refused."""
        lines = [key.start_mark.line + 1 for key, _ in node.value if key.tag == _MERGE_TAG]
        if len(lines) > 1:
            raise DuplicateKeyError(_duplicate_message(self.source, "<<", lines[0], lines[1]))
        if lines and not self.merge_keys:
            raise DuplicateKeyError(
                f"{self.source}, line {lines[0]}: a merge key ('<<') is not allowed here: a key written beside it "
                "would silently override the merged one. Fix: write the keys out instead of merging them"
            )


_MERGE_TAG = "tag:yaml.org,2002:merge"


def loads_yaml(text: str, source: str, merge_keys: bool = True) -> Any:
    """Parse YAML ``text`` safely (``yaml.safe_load``), refusing a mapping that gives a key twice.

    Parameters
    ----------
    text : str
        The YAML document.
    source : str
        The file it came from, as messages name it.
    merge_keys : bool, default True
        Whether a mapping may merge another's keys (``<<: *anchor``); False refuses any ``<<``, for
        files (a ``check`` policy) in which a written key overriding a merged one would loosen a gate.

    Returns
    -------
    The parsed value. Invalid YAML raises :class:`yaml.YAMLError`; a repeated key (``<<`` given twice
    in one mapping among them) raises :class:`DuplicateKeyError` naming the key and both lines, and
    so does a ``<<`` where ``merge_keys`` is False, naming its line.
    """
    loader = _UniqueKeyLoader(text)
    loader.source = source
    loader.merge_keys = merge_keys
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
