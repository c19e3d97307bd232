"""The confidence level of every per-run interval, and the checks each makes before it is
computed: a level in (0, 1), and enough documents for that level to hold.

Each interval module names the fewest documents its intervals need (``MIN_DOCUMENTS_*``: per
group for gaps, ranges and spreads), the fewest at which each held at least 93% coverage of its
95% level in ``tests/test_interval_coverage.py``; below them :func:`require_documents` raises.
"""

from __future__ import annotations

CONFIDENCE = 0.95


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level outside (0, 1).

    Parameters
    ----------
    confidence : float
        An interval's confidence level.

    Raises
    ------
    ValueError
        A level not in (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def require_documents(n: int, fewest: int, what: str) -> None:
    """The "too few documents" error: ``what`` holds its level from ``fewest`` documents.

    Parameters
    ----------
    n : int
        The documents there are (for gaps, ranges and spreads: the smallest group's).
    fewest : int
        The fewest documents from which the interval held its level in simulation.
    what : str
        The interval, as the error names it.

    Raises
    ------
    ValueError
        "too few documents (n = N): ..." when ``n`` is below ``fewest``.
    """
    if n < fewest:
        raise ValueError(
            f"too few documents (n = {n}): {what} holds its 95% level from {fewest} documents "
            "(tests/test_interval_coverage.py)"
        )
