"""``winoqueer_mlm``: WinoQueer's masked-LM metric (the paper's Eq. 1) for ``--model hf-mlm``.

Eq. 1 scores every token the two sentences share, also those before the
identity span (for a masked model they do not cancel: the identity span is
visible when they are masked). So each pair sends two whole sentences, each with
its counterfactual as context: ``(sent_y, sent_x)`` and ``(sent_x, sent_y)``;
the ``hf-mlm`` backend finds the shared tokens and returns each sentence's score.
"""

from __future__ import annotations

from lm_eval.api.instance import Instance

from lm_eval_bias.benchmarks.winoqueer import WinoQueerTask


class WinoQueerMLMTask(WinoQueerTask):
    """``winoqueer``'s task (no prompt: ``fewshot_context``) with the masked-LM requests."""

    # Its requests mean something only to the hf-mlm backend (checks.check_backend).
    MASKED_LM_PAIRS = True

    def construct_requests(self, doc, ctx, **kwargs):
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        return [
            Instance(request_type="loglikelihood", doc=doc, arguments=(doc["sent_y"], doc["sent_x"]), idx=0, **kwargs),
            Instance(request_type="loglikelihood", doc=doc, arguments=(doc["sent_x"], doc["sent_y"]), idx=1, **kwargs),
        ]
