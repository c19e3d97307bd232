"""Paired comparison of two runs over the same documents: the difference of a metric between a
baseline and a candidate, its paired 95% interval and the p-value of a paired test."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lm_eval_bias.stats.intervals import CONFIDENCE


@dataclass(frozen=True)
class PairedDifference:
    """A paired comparison of one metric between a baseline and a candidate run.

    Attributes
    ----------
    difference : float
        ``statistic(candidate) - statistic(baseline)``, in the metric's units.
    ci_lower, ci_upper : float
        The paired interval of the difference.
    pvalue : float
        Two-sided p-value of the paired test named in ``test``.
    n : int
        The matched documents it rests on.
    test : str
        The test and the interval, e.g. ``"exact McNemar; Newcombe paired interval"``.
    note : str
        What the reader must know to read the numbers, e.g. ``"no discordant pairs: p = 1"``.
    """

    difference: float
    ci_lower: float
    ci_upper: float
    pvalue: float
    n: int
    test: str
    note: str = ""


def paired_proportions(
    baseline: Sequence[float], candidate: Sequence[float], *, scale: float = 1.0, confidence: float = CONFIDENCE
) -> PairedDifference:
    """Per-document yes/no outcomes: exact McNemar test and Newcombe's paired interval."""
    raise NotImplementedError


def paired_means(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 9999,
    random_state: int = 0,
) -> PairedDifference:
    """Continuous per-document values: paired bootstrap interval and sign-flip permutation test."""
    raise NotImplementedError


def paired_statistic(
    baseline: Sequence,
    candidate: Sequence,
    statistic: Callable[[list], float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 2000,
    random_state: int = 0,
) -> PairedDifference:
    """Any statistic of per-document values: paired bootstrap interval and permutation test."""
    raise NotImplementedError


def adjust_bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values, in the input order."""
    raise NotImplementedError


def detectable_difference(n: int, *, discordant_share: float = 0.2, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference of paired proportions that McNemar's test detects."""
    raise NotImplementedError
