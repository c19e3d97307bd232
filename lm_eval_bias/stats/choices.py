"""Which of several choices a model's scores pick, ties kept (TANGO's and SCM's verdicts)."""

from __future__ import annotations

from collections.abc import Sequence


def top_choices(scores: Sequence[float]) -> list[int]:
    """The positions of the highest score, several when it is tied.

    A verdict from scores must not fall to whichever tied choice comes first (a backend that
    returns equal log-likelihoods would then always "choose" the first option).

    Parameters
    ----------
    scores : sequence of float
        One score per choice, at least one.

    Returns
    -------
    list of int
        The positions of the highest score, in order.
    """
    best = max(scores)
    return [index for index, score in enumerate(scores) if score == best]
