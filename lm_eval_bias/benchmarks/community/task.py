"""lm-eval's ``process_results`` hook of the community tasks (their task class is
``harness.SubgroupMetricsTask``; their loaders are in :mod:`.loader`)."""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias.benchmarks.community import loader  # noqa: F401 (declares the loaders' options)
from lm_eval_bias.benchmarks.community.scoring import probe_metrics


def process_probes(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` after ``scorers.ClassifierFilter``: :func:`probe_metrics` of the continuations."""
    from lm_eval_bias import scorers

    return probe_metrics(doc, scorers.scored_generations(results))
