"""lm-eval's hooks for the GenderPair tasks that the YAMLs in ``tasks/gendercare/`` name."""

from __future__ import annotations

from collections.abc import Sequence

# Imported for its options: import_all() imports this module, and the loader declares them.
from lm_eval_bias.benchmarks.gendercare import loader  # noqa: F401
from lm_eval_bias.benchmarks.gendercare.scoring import genderpair_metrics


def process_genderpair(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` after ``scorers.ClassifierFilter``: the prompt's metrics.

    Parameters
    ----------
    doc:
        The prompt's document.
    results:
        The filtered response: one scored generation.

    Returns
    -------
    dict
        :func:`~lm_eval_bias.benchmarks.gendercare.scoring.genderpair_metrics`.

    Raises
    ------
    ValueError
        More than one response was scored for the prompt.
    """
    from lm_eval_bias import scorers

    (scored, *more) = scorers.scored_generations(results)
    if more:
        raise ValueError("gendercare_genderpair scores one response per prompt; got several")
    return genderpair_metrics(doc, scored)
