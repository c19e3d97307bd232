"""Agreement with the survey: lm-eval aggregations that correlate a model's group means with the
thesis's survey means (Pearson r with a Fisher-z interval).

Each document contributes ``(group, axis, value)`` under every name of :data:`SURVEY_METRICS`;
the aggregation averages them per group and axis and correlates the means with the survey's.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

from lm_eval_bias import stats
from lm_eval_bias.benchmarks.scm.constants import AXES, GROUPS, SURVEY_MEANS

# Every survey aggregation: a rating document gives each of them its (group, axis, rating).
SURVEY_METRICS = tuple(
    f"{base}{suffix}"
    for base in ("survey_r", "survey_r_warmth", "survey_r_competence", "survey_r_gap")
    for suffix in ("", "_ci_lower", "_ci_upper")
)
# The ones a warmth share can feed (multiple choice, probability ratio): it measures warmth
# relative to competence, so only the gap is compared.
RELATIVE_SURVEY_METRICS = tuple(f"survey_r_gap{suffix}" for suffix in ("", "_ci_lower", "_ci_upper"))


def _group_axis_means(values: Iterable[tuple]) -> dict[tuple[str, str], float]:
    """The mean value of each (group, axis)."""
    sums: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for group, axis, value in values:
        sums[(str(group), str(axis))].append(float(value))
    return {key: sum(v) / len(v) for key, v in sums.items()}


def survey_pairs(values: Iterable[tuple], which: str) -> tuple[list[float], list[float], list[str]]:
    """The model's and the survey's numbers to correlate, with their labels.

    A group enters only with every number it needs.

    Parameters
    ----------
    values:
        Every document's ``(group, axis, value)``: axis ``warmth`` or ``competence`` (a rating), or
        ``warmth_share`` (a warmth share).
    which:
        ``warmth`` or ``competence`` (the 7 group means of that axis), ``all`` (the 14 group x axis
        means) or ``gap`` (per group: warmth minus competence rating, or the warmth share, against
        the survey's warmth minus competence).

    Returns
    -------
    model, survey : list of float
        The paired numbers, in the order of ``GROUPS`` (then ``AXES``).
    labels : list of str
        ``group:axis``, or ``group`` for ``gap``.
    """
    means = _group_axis_means(values)
    model, survey, labels = [], [], []
    axes = AXES if which in ("all", "gap") else (which,)
    for group in GROUPS:
        if which == "gap":
            if (group, "warmth_share") in means:
                model.append(means[(group, "warmth_share")])
            elif (group, "warmth") in means and (group, "competence") in means:
                model.append(means[(group, "warmth")] - means[(group, "competence")])
            else:
                continue
            survey.append(SURVEY_MEANS["warmth"][group] - SURVEY_MEANS["competence"][group])
            labels.append(group)
            continue
        for axis in axes:
            if (group, axis) in means:
                model.append(means[(group, axis)])
                survey.append(SURVEY_MEANS[axis][group])
                labels.append(f"{group}:{axis}")
    return model, survey, labels


def survey_correlation(values: Iterable[tuple], which: str) -> tuple[float, float, float]:
    """Pearson r of the model's numbers with the survey's, and its 95% Fisher-z interval.

    Parameters
    ----------
    values:
        Every document's ``(group, axis, value)`` (see :func:`survey_pairs`).
    which:
        ``all``, ``warmth``, ``competence`` or ``gap`` (see :func:`survey_pairs`).

    Returns
    -------
    r, ci_lower, ci_upper : float
        The correlation and its interval bounds.

    Raises
    ------
    ValueError
        With fewer than 4 points, or when the model gives every group the same value.
    """
    model, survey, _ = survey_pairs(values, which)
    # Equal group values that differ only by rounding noise must not give a correlation.
    if model and max(model) - min(model) <= 1e-9 * max(1.0, max(abs(v) for v in model)):
        raise ValueError("a correlation is undefined when the model gives every group the same value")
    return stats.pearson_interval(model, survey)


class SurveyAggregation:
    """An lm-eval aggregation that reports one number of :func:`survey_correlation`.

    Parameters
    ----------
    which:
        ``all``, ``warmth``, ``competence`` or ``gap`` (see :func:`survey_pairs`).
    part:
        ``r``, ``ci_lower`` or ``ci_upper``.
    """

    PARTS = ("r", "ci_lower", "ci_upper")

    def __init__(self, which: str, part: str):
        self.which, self.part = which, part
        self._index = self.PARTS.index(part)

    def __call__(self, values: Iterable[tuple]) -> float:
        """The number, from every document's value.

        Parameters
        ----------
        values:
            Every document's ``(group, axis, value)`` (see :func:`survey_pairs`).

        Returns
        -------
        float
            The correlation or one of its interval bounds.
        """
        return survey_correlation(values, self.which)[self._index]

    def __repr__(self) -> str:
        return f"SurveyAggregation({self.which!r}, {self.part!r})"


# The aggregations the task YAMLs name, one per metric of SURVEY_METRICS: the Pearson r (and its
# interval) of the 14 group x axis means, of the 7 groups' warmth means, of their competence means,
# and of their warmth minus competence (or warmth share) against the survey's.
survey_r = SurveyAggregation("all", "r")
survey_r_ci_lower = SurveyAggregation("all", "ci_lower")
survey_r_ci_upper = SurveyAggregation("all", "ci_upper")
survey_r_warmth = SurveyAggregation("warmth", "r")
survey_r_warmth_ci_lower = SurveyAggregation("warmth", "ci_lower")
survey_r_warmth_ci_upper = SurveyAggregation("warmth", "ci_upper")
survey_r_competence = SurveyAggregation("competence", "r")
survey_r_competence_ci_lower = SurveyAggregation("competence", "ci_lower")
survey_r_competence_ci_upper = SurveyAggregation("competence", "ci_upper")
survey_r_gap = SurveyAggregation("gap", "r")
survey_r_gap_ci_lower = SurveyAggregation("gap", "ci_lower")
survey_r_gap_ci_upper = SurveyAggregation("gap", "ci_upper")
