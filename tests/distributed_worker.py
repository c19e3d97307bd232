"""One process of a data-parallel lm-eval run on CPU, for tests/test_several_processes.py.

``python distributed_worker.py SPEC.json``: runs each evaluation of the spec in turn through
``lm_eval_bias.simple_evaluate`` and, on rank 0, writes ``{"runs": [lm-eval's output, ...]}``
to the spec's ``output`` path. With RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the
environment (as ``accelerate launch`` and ``torchrun`` set them) it is one rank of a
gloo process group; without them, a single process.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def data_parallel_hflm(**kwargs):
    """lm-eval's ``hf`` backend as ``accelerate launch`` makes it on GPUs: each process's rank and
    world size come from its ``Accelerator``, and lm-eval gathers through it (``all_gather``,
    ``gather_object``, ``barrier`` are HFLM's own). HFLM turns data parallelism on only when it
    sees more than one GPU, so on CPU the rank and world size are set here, as it would set them."""
    from lm_eval.models.huggingface import HFLM

    model = HFLM(**kwargs)
    accelerator = getattr(model, "accelerator", None)
    if accelerator is not None and accelerator.num_processes > 1:
        model._rank = accelerator.process_index
        model._world_size = accelerator.num_processes
    return model


def main(spec_path: str) -> None:
    import torch

    import lm_eval_bias

    started = time.perf_counter()
    torch.set_num_threads(1)
    spec = json.loads(open(spec_path, encoding="utf-8").read())
    if spec.get("classifier_batch_size"):
        from lm_eval_bias import scorers

        # A batch's padding moves a classifier's scores in their last bits: one text a batch
        # leaves only what the shards change.
        make_key, build = scorers.SCORERS["detoxify"]
        scorers.SCORERS["detoxify"] = (make_key, functools.partial(build, batch_size=spec["classifier_batch_size"]))
    models = {}
    outputs = []
    for run in spec["runs"]:
        key = (run["model"], run["pretrained"])
        if key not in models:
            if run["model"] == "hf":
                models[key] = data_parallel_hflm(
                    pretrained=run["pretrained"], dtype="float32", device="cpu", batch_size=1
                )
            else:
                from lm_eval_bias.benchmarks.winoqueer.hf_mlm import HFMaskedLM

                models[key] = HFMaskedLM(pretrained=run["pretrained"], device="cpu", batch_size=1)
        model = models[key]
        expected = (int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")))
        assert (model.rank, model.world_size) == expected, (model.rank, model.world_size)
        output = lm_eval_bias.simple_evaluate(
            model=model,
            tasks=run["tasks"],
            limit=run.get("limit"),
            gen_kwargs=run.get("gen_kwargs"),
            # lm-eval's own 14,000 tasks are not indexed: seconds a run
            task_manager=lm_eval_bias.task_manager(metadata=run.get("metadata", {}), include_defaults=False),
            log_samples=True,
        )
        assert (output is None) == (model.rank != 0), f"rank {model.rank} got {type(output).__name__}"
        print(f"worker: {run['tasks']} done at {time.perf_counter() - started:.1f} s", file=sys.stderr)
        outputs.append(output)
    if model.rank == 0:
        with open(spec["output"], "w", encoding="utf-8") as handle:
            json.dump({"runs": outputs}, handle, default=str)


if __name__ == "__main__":
    main(sys.argv[1])
