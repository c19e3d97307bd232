"""One number of an lm-eval results file, as lm-eval writes it.

A value is a finite number or lm-eval's ``"N/A"``; lm-eval also writes a bare ``NaN`` or
``Infinity`` for a number it could not compute and a numpy number as its text (``"0.25"``), which
are read here as ``"N/A"`` and as the number. Beside each metric stand its companions
(``_stderr``, ``_ci_lower``/``_ci_upper``, ``_design_effect``, ``_pvalue``/``_pvalue_bh``) and its counts (``_n``,
``_n_samples``). Every problem is a :class:`ResultsError` naming the file, the task, the key and
the fix.
"""

from __future__ import annotations

import math
from pathlib import Path

from lm_eval_bias.errors import DataError
from lm_eval_bias.metric_keys import COMPANION_RANGES, metric_range

NOT_AVAILABLE = "N/A"  # lm-eval's own marker for a number it could not compute

# Suffixes of companion numbers; a metric is any key without one of them.
COMPANIONS = ("_stderr", "_ci_lower", "_ci_upper", "_design_effect", "_pvalue", "_pvalue_bh")
# Counts are companions only beside the metric they count, so that a metric that merely
# ends in "_n" (a subgroup slug, say) is not taken for one.
COUNTS = ("_n_samples", "_n")


class ResultsError(DataError):
    """A results, samples or policy file is missing, malformed, or lacks what was asked for."""


def shown(value) -> str:
    """A value as messages show it.

    Parameters
    ----------
    value : object
        Any value read from a file.

    Returns
    -------
    str
        Its ``repr``, cut to 60 characters.
    """
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(value) -> bool:
    """Whether a JSON value is a number.

    Parameters
    ----------
    value : object
        A value from a parsed JSON document.

    Returns
    -------
    bool
        True for an int or a float; False for anything else, a bool included.
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_value(path: Path, task: str, key: str, raw) -> float | str:
    """One value of a results entry, read.

    Parameters
    ----------
    path : Path
        The results file, for messages.
    task, key : str
        The task and the ``"<metric>,<filter>"`` key, for messages.
    raw : object
        The value as parsed from JSON.

    Returns
    -------
    float or str
        A finite number, or ``"N/A"`` for lm-eval's marker and for a non-finite number (a bare
        ``NaN``); a number written as text (``"0.25"``) is read as the number.

    Raises
    ------
    ResultsError
        A value that is neither a number nor ``"N/A"``.
    """
    if isinstance(raw, str) and raw != NOT_AVAILABLE:
        # lm-eval writes a numpy number it cannot serialise as its text ("0.25", "nan").
        try:
            raw = float(raw)
        except ValueError:
            pass
    if is_number(raw):
        return float(raw) if math.isfinite(raw) else NOT_AVAILABLE
    if raw == NOT_AVAILABLE:
        return NOT_AVAILABLE
    raise ResultsError(
        f'{path}: task {task}, {key}: {shown(raw)} is neither a number nor "N/A"; '
        "correct the value or re-run the evaluation"
    )


def is_infinite(raw) -> bool:
    """Whether a value is infinite.

    Parameters
    ----------
    raw : object
        A value as parsed from JSON.

    Returns
    -------
    bool
        True for a bare ``Infinity`` or ``-Infinity``, or one written as text (``"inf"``).
    """
    if isinstance(raw, str):
        try:
            raw = float(raw)
        except ValueError:
            return False
    return is_number(raw) and math.isinf(raw)


def read_count(path: Path, task: str, key: str, raw) -> int | None:
    """A document or sample count of a results entry, read.

    Parameters
    ----------
    path, task, key, raw
        As for :func:`read_value`.

    Returns
    -------
    int or None
        The count, a whole number >= 0; None for ``"N/A"``.

    Raises
    ------
    ResultsError
        A value that is not a whole number >= 0 or ``"N/A"``.
    """
    value = read_value(path, task, key, raw)
    if value == NOT_AVAILABLE:
        return None
    if value < 0 or value != int(value):
        raise ResultsError(
            f"{path}: task {task}, {key}: {shown(raw)} is not a count (a whole number >= 0); "
            "correct the value or re-run the evaluation"
        )
    return int(value)


def filter_text(filter_name: str) -> str:
    """A filter's name as messages show it.

    Parameters
    ----------
    filter_name : str
        The name, as the results file writes it.

    Returns
    -------
    str
        The name with every character that is not printable ASCII escaped, so that a look-alike
        (``n\\u03bfne``, a Greek omicron) or an invisible character cannot pass for ``none``.
    """
    if filter_name.isascii() and filter_name.isprintable():
        return filter_name
    return filter_name.encode("ascii", "backslashreplace").decode("ascii")


def value_range(name: str) -> tuple[float, float] | None:
    """The range of a number of one of our tasks.

    Parameters
    ----------
    name : str
        The number as :meth:`.run.Run.metric` names it: a metric, or a companion of one
        (``bias_score_gay_pvalue_bh``, ``bias_score_ci_upper``, ``bias_score_n``).

    Returns
    -------
    tuple of (float, float) or None
        Its lowest and highest value; None for a number that is not ours.
    """
    for suffix in sorted(COMPANIONS + COUNTS, key=len, reverse=True):
        owner = name[: -len(suffix)] if name.endswith(suffix) else None
        if owner and metric_range(owner) is not None:
            return COMPANION_RANGES.get(suffix) or metric_range(owner)
    return metric_range(name)
