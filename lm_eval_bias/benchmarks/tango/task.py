"""TANGO's task hooks: what the YAMLs in ``tasks/tango/`` name besides the loaders.

``tango_misgender`` continues each of the 2,880 misgendering prompts and
checks whether the first pronoun of the continuation belongs to the prompt's
pronoun family (the paper's automatic tool). ``tango_misgender_prob`` asks the
same question without generation: which family's nominative pronoun the model
finds most likely to start the next sentence. ``tango_disclosure``
(:class:`DisclosureTask`) scores continuations of gender-disclosure prompts for
toxicity and sentiment.
The loaders are in :mod:`~lm_eval_bias.benchmarks.tango.loader`, the metrics in
:mod:`~lm_eval_bias.benchmarks.tango.scoring`.
"""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval_bias import pronouns
from lm_eval_bias.benchmarks.tango import (
    loader,  # noqa: F401 - the registry imports this module so that the loaders declare their options
    views,
)
from lm_eval_bias.benchmarks.tango.scoring import (
    consistency_metrics,
    determiner_metrics,
    disclosure_metrics,
    predicted_family,
    pronoun_consistency_metrics,
)
from lm_eval_bias.harness import SubgroupMetricsTask
from lm_eval_bias.metric_keys import with_empty_rate, with_interval


def process_misgendering(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``tango_misgender``.

    Empty continuations count in ``empty_rate`` (overall and per family) and nowhere else: they
    have no pronoun because they have no text.

    Parameters
    ----------
    doc:
        The prompt's document.
    results:
        One item: the continuation, or the list of the prompt's repeats (lm-eval 0.4.13); or the
        repeats themselves (lm-eval 0.5.0.dev1 flattens them). ``None`` from a server is empty.

    Returns
    -------
    dict
        ``empty_rate``, then :func:`consistency_metrics` and :func:`determiner_metrics` of the
        non-empty continuations.
    """
    from lm_eval_bias.scorers import generation_texts, is_empty_text

    everything = generation_texts(results[0] if len(results) == 1 else list(results))
    continuations = [text for text in everything if not is_empty_text(text)]
    metrics = {}
    with_empty_rate(metrics, len(everything) - len(continuations), len(everything), [doc["pronoun_family"]])
    if not continuations:
        return metrics
    first = [pronouns.first_pronoun(text) for text in continuations]
    metrics.update(consistency_metrics(doc, [m.family if m else None for m in first]))
    metrics.update(determiner_metrics(continuations))
    return metrics


# --------------------------------------------------------------------------
# The probability-based companion


def next_pronoun_choices(doc: dict) -> list[str]:
    """lm-eval ``doc_to_choice`` for ``tango_misgender_prob``.

    Parameters
    ----------
    doc:
        The prompt's document (unused: every prompt has the same choices).

    Returns
    -------
    list of str
        Each family's nominative pronoun starting the next sentence (" He", " She", ...), in
        the order of ``pronouns.FAMILIES``.
    """
    return [" " + pronouns.FAMILY_FORMS[family][0].capitalize() for family in pronouns.FAMILIES]


def family_index(doc: dict) -> int:
    """lm-eval ``doc_to_target`` for ``tango_misgender_prob``.

    Parameters
    ----------
    doc:
        The prompt's document.

    Returns
    -------
    int
        The index of the prompt's family among :func:`next_pronoun_choices`.
    """
    return pronouns.FAMILIES.index(doc["pronoun_family"])


def process_misgendering_prob(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``tango_misgender_prob``.

    The most likely family is the model's first pronoun.

    Parameters
    ----------
    doc:
        The prompt's document.
    results:
        ``(log-likelihood, is_greedy)`` of each family's pronoun, in the order of
        :func:`next_pronoun_choices`.

    Returns
    -------
    dict
        ``tie_rate`` and, when one family is most likely, :func:`pronoun_consistency_metrics` of it.
    """
    family = predicted_family([loglik for loglik, _ in results])
    metrics = {}
    with_interval(metrics, "tie_rate", float(family is None))
    if family is None:  # several families equally likely: no verdict
        return metrics
    metrics.update(pronoun_consistency_metrics(doc, [family]))  # a verdict always names a pronoun
    return metrics


# --------------------------------------------------------------------------
# Gender disclosure


def process_disclosure(doc: dict, results: Sequence) -> dict:
    """lm-eval ``process_results`` for ``tango_disclosure``: :func:`disclosure_metrics`."""
    from lm_eval_bias import scorers

    return disclosure_metrics(doc, scorers.scored_generations(results))


class DisclosureTask(SubgroupMetricsTask):
    """``tango_disclosure``: each prompt's document holds its overall values, each carrying the prompt's
    identity and gap side (:meth:`document_labels`), from which :mod:`.views` derives the per-identity
    and gap metrics."""

    derived_entries = staticmethod(views.derived_entries)

    def document_labels(self, doc: dict) -> tuple[str, int]:
        """The prompt's ``(identity slug, gap side)`` (``views.document_labels``)."""
        return views.document_labels(doc)

    def derived_lists(self, raw_metrics: dict) -> dict:
        """The per-identity and gap metrics' lists (``views.derived_lists``)."""
        return views.derived_lists(raw_metrics)
