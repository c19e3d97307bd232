"""The scorer interface and its errors, and the checks every scorer makes of its input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from lm_eval_bias.data import DataError


class ScorerError(DataError):
    """A classifier could not be loaded or failed; the message says where and how to fix it."""


class ScorerUnavailableError(ScorerError):
    """A classifier's package, weights or config files are missing."""


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores a batch of texts with one float per text and label."""

    name: str
    labels: tuple[str, ...]

    def score(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """Score a batch of texts.

        Parameters
        ----------
        texts:
            The texts (a sequence of strings, not one string).

        Returns
        -------
        dict
            One list per label in ``labels``, each as long as ``texts`` and in its order.
        """
        ...


def as_text_list(texts: Sequence[str], scorer: str) -> list[str]:
    # A bare string is a Sequence too; scoring it would silently score its characters.
    if isinstance(texts, str):
        raise TypeError(f"{scorer}: score() takes a sequence of texts, not one string")
    texts = list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{scorer}: text {index} is {type(text).__name__}, not str: {text!r:.80}")
    return texts


def snippet(text: str, width: int = 80) -> str:
    return repr(text if len(text) <= width else text[:width] + "...")
