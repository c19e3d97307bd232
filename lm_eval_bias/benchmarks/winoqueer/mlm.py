"""``winoqueer_mlm``: WinoQueer's masked-LM metric (the paper's Eq. 1) for ``--model hf-mlm``.

Eq. 1 scores every token the two sentences share, also those before the
identity span (for a masked model they do not cancel: the identity span is
visible when they are masked). So each pair sends two whole sentences, each with
its counterfactual as context: ``(sent_y, sent_x)`` and ``(sent_x, sent_y)``;
the ``hf-mlm`` backend finds the shared tokens and returns each sentence's score.
"""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval.api.instance import Instance

from lm_eval_bias import lm_eval_features
from lm_eval_bias.benchmarks.winoqueer import scoring
from lm_eval_bias.benchmarks.winoqueer.task import WinoQueerTask


class WinoQueerMLMTask(WinoQueerTask):
    """``winoqueer``'s task (no prompt: ``fewshot_context``) with the masked-LM requests."""

    # Its requests mean something only to the hf-mlm backend (checks.check_backend).
    MASKED_LM_PAIRS = True
    #: What another backend would make of its requests, and the tasks for causal LMs (``checks.check_backend``).
    OTHER_BACKENDS_SCORE = "each sentence as a continuation of its counterfactual, which is not WinoQueer's Eq. 1"
    CAUSAL_TASKS = ("winoqueer",)

    def construct_requests(self, doc, ctx, **kwargs):
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        kwargs = lm_eval_features.request_keywords(self, kwargs)
        return [
            Instance(request_type="loglikelihood", doc=doc, arguments=(doc["sent_y"], doc["sent_x"]), idx=0, **kwargs),
            Instance(request_type="loglikelihood", doc=doc, arguments=(doc["sent_x"], doc["sent_y"]), idx=1, **kwargs),
        ]

    def document_metrics(self, doc: dict, results: Sequence) -> dict:
        """The pair's metrics from the two Eq. 1 sentence scores the ``hf-mlm`` backend returns."""
        (score_x, _), (score_y, _) = results
        return scoring.pair_metrics(doc["subgroup"], score_x, score_y)
