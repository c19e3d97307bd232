"""VADER's compound sentiment, fully offline (its lexicon ships in its wheel)."""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.scorers.base import (
    ScorerError,
    ScorerUnavailableError,
    as_text_list,
    snippet,
)

VADER_INSTALL = 'pip install "vaderSentiment==3.3.2"'


class VaderScorer:
    """VADER compound sentiment (label ``sentiment``, in [-1, 1]), fully offline."""

    name = "vader"
    labels = ("sentiment",)

    def __init__(self) -> None:
        try:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
        except ImportError as error:
            raise ScorerUnavailableError(
                f"vader: the package vaderSentiment is not installed; run: {VADER_INSTALL}"
            ) from error
        self._analyzer = SentimentIntensityAnalyzer()

    def score(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """VADER's compound sentiment of each text (:meth:`Scorer.score`; label ``sentiment``, in [-1, 1])."""
        texts = as_text_list(texts, self.name)
        values = []
        for index, text in enumerate(texts):
            try:
                values.append(float(self._analyzer.polarity_scores(text)["compound"]))
            except Exception as error:
                raise ScorerError(f"vader: scoring text {index} {snippet(text)} failed: {error}") from error
        return {"sentiment": values}
