"""Model backends lm-eval lacks (``hf-mlm``)."""

# The name lm-eval knows the masked-LM backend by (``--model hf-mlm``).
MASKED_LM_BACKEND = "hf-mlm"


def register() -> None:
    """Make ``--model hf-mlm`` known to lm-eval.

    Registered as a lazy placeholder, so nothing heavy is imported until the
    model is used, and only once, so calling this again (or importing this
    package under another name) is harmless. lm-eval's own models are imported
    first: registering into an empty registry would stop lm-eval from loading them.
    """
    import lm_eval.models  # noqa: F401
    from lm_eval.api.registry import model_registry

    if MASKED_LM_BACKEND not in model_registry:
        model_registry.register(MASKED_LM_BACKEND, target="lm_eval_bias.models.hf_mlm:HFMaskedLM")
