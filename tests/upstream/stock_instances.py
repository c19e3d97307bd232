"""lm-eval's own request objects, built as the installed lm-eval's evaluator builds them, so that
each reproduction here runs on lm-eval 0.4.13 and on 0.5.0.dev1 (whose ``Instance`` takes
``task_name=`` and ``doc_id=`` in place of 0.4.13's ``metadata`` tuple)."""

from lm_eval_bias import lm_eval_features


def instance(request_type: str, arguments: tuple, idx: int, doc_id: int = 0, repeats: int = 1, task: str = "repro"):
    """An ``Instance`` of ``task``'s document ``doc_id``, its ``idx``-th request."""
    from lm_eval.api.instance import Instance

    if lm_eval_features.instance_requires("doc_id"):
        identity = {"task_name": task, "doc_id": doc_id, "repeats": repeats}
    else:
        identity = {"metadata": (task, doc_id, repeats)}
    return Instance(request_type=request_type, doc={}, arguments=arguments, idx=idx, **identity)
