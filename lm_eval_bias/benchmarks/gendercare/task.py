"""lm-eval's hooks for the GenderPair tasks that the YAMLs in ``tasks/gendercare/`` name, and their task
class, :class:`GenderPairTask`."""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.benchmarks.gendercare import (
    loader,  # noqa: F401 - imported for its options: import_all() imports this module, the loader declares them
    views,
)
from lm_eval_bias.benchmarks.gendercare.scoring import genderpair_metrics
from lm_eval_bias.harness import SubgroupMetricsTask


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


class GenderPairTask(SubgroupMetricsTask):
    """``gendercare_genderpair``: each prompt's document holds its overall values, each carrying the
    prompt's group and configuration (:meth:`document_labels`), from which :mod:`.views` derives the
    per-group, spread, gap and configuration metrics."""

    derived_entries = staticmethod(views.derived_entries)

    def document_labels(self, doc: dict) -> tuple[int, int]:
        """The prompt's ``(group, configuration)`` (``views.document_labels``)."""
        return views.document_labels(doc)

    def derived_lists(self, raw_metrics: dict) -> dict:
        """The per-group, spread, gap and configuration metrics' lists (``views.derived_lists``)."""
        return views.derived_lists(raw_metrics)
