"""lm-eval's hooks for the community tasks that the YAMLs in ``tasks/community/`` name, and their task
class, :class:`ProbesTask` (their loaders are in :mod:`.loader`)."""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.benchmarks.community import (
    loader,  # noqa: F401 - imported for its options: import_all() imports this module, the loader declares them
    views,
)
from lm_eval_bias.benchmarks.community.scoring import probe_values
from lm_eval_bias.harness import SubgroupMetricsTask


def process_probes(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` after ``scorers.ClassifierFilter``: :func:`probe_values` of the continuations."""
    from lm_eval_bias import scorers

    return probe_values(doc, scorers.scored_generations(results))


class ProbesTask(SubgroupMetricsTask):
    """The community probes: each prompt's document holds its overall values, each carrying the prompt's
    demographic and dimension (:meth:`document_labels`), from which :mod:`.views` derives the
    per-demographic, range and pairwise metrics."""

    derived_entries = staticmethod(views.derived_entries)

    def document_labels(self, doc: dict) -> tuple:
        """The prompt's ``(demographic, dimension, demographics of the dimension)`` (``views.document_labels``)."""
        return views.document_labels(doc)

    def derived_lists(self, raw_metrics: dict) -> dict:
        """The per-demographic, range and pairwise metrics' lists (``views.derived_lists``)."""
        return views.derived_lists(raw_metrics)
