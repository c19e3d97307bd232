"""Model backends lm-eval lacks, as the benchmark records declare them (``hf-mlm``)."""

# The name lm-eval knows the masked-LM backend by (``--model hf-mlm``).
MASKED_LM_BACKEND = "hf-mlm"


def register() -> None:
    """Make every model backend a benchmark record declares (``--model hf-mlm``) known to lm-eval.

    Registered as a lazy placeholder, so nothing heavy is imported until the
    model is used, and only once, so calling this again (or importing this
    package under another name) is harmless. lm-eval's own models are imported
    first: registering into an empty registry would stop lm-eval from loading them.
    """
    import lm_eval.models  # noqa: F401
    from lm_eval.api.registry import model_registry

    from lm_eval_bias.benchmarks import records

    for record in records().values():
        for name, target in record.models:
            if name not in model_registry:
                model_registry.register(name, target=target)
