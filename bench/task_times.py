"""Real-model time of every task: each task run in turn with one loaded SmolLM2-135M-Instruct.

Loads SmolLM2-135M-Instruct in fp32 (``bench/models.py``) once with lm-eval's ``hf`` backend on
``--device``, then runs ``lm_eval_bias.simple_evaluate`` on each task's first N documents (``TASK``
or ``TASK:N``; ``--limit`` otherwise) and prints, per task: the documents and requests run, the
wall time (task building, requests, classifiers, metrics and aggregation; the model's load
excluded), the seconds per document, the documents of the whole task and the time the whole task
would take at that rate (a straight extrapolation: generation tasks whose documents differ in
length, and bootstraps that do not grow with documents, make it a rough one). Tasks with
classifiers read Detoxify from the ``LM_EVAL_BIAS_DETOXIFY_*`` variables; data from
``LM_EVAL_BIAS_DATA_DIR`` (``--winoqueer-file`` for WinoQueer's data file).

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/task_times.py --device cuda \\
        winoqueer:1000 tango_misgender:256 scm_story:32
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import load_average, smollm2_dir  # noqa: E402  bench/models.py


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="+", metavar="TASK[:N]", help="tasks, each with its own limit N")
    parser.add_argument("--limit", type=int, default=64, help="documents per task without :N (default %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device of the model, e.g. cuda (default cpu)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--winoqueer-file", type=Path, help="data_file of winoqueer (e.g. the shared gender subset)")
    return parser.parse_args(argv)


def task_size(name: str, manager) -> int:
    """Documents of the whole task, as lm-eval builds it."""
    return len(manager.load([name])["tasks"][name].eval_docs)


def time_task(lm, name: str, limit: int, metadata: dict) -> dict:
    """One task's run on ``lm``: documents, requests and seconds."""
    import lm_eval_bias

    manager = lm_eval_bias.task_manager(metadata=metadata)
    start = time.perf_counter()
    output = lm_eval_bias.simple_evaluate(
        model=lm, tasks=[name], task_manager=manager, metadata=metadata, limit=limit, log_samples=True
    )
    wall = time.perf_counter() - start
    samples = output["samples"][name]
    return {
        "task": name,
        "documents": len(samples),
        "requests": sum(len(sample["arguments"]) for sample in samples),
        "wall_s": wall,
        "whole": task_size(name, manager),
    }


def main(argv=None) -> None:
    args = parse_args(argv)
    import torch
    from lm_eval.models.huggingface import HFLM

    started = time.perf_counter()
    lm = HFLM(pretrained=str(smollm2_dir()), batch_size=args.batch_size, device=args.device)
    print(f"SmolLM2-135M-Instruct fp32 (hf) on {args.device}, loaded in {time.perf_counter() - started:.1f} s")
    if args.device.startswith("cuda"):
        print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print(f"load average before: {load_average()}")
    print("| task | documents | requests | wall s | s / document | whole task | whole task, extrapolated |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.tasks:
        name, _, limit = spec.partition(":")
        metadata = {"data_file": str(args.winoqueer_file)} if name == "winoqueer" and args.winoqueer_file else {}
        try:
            row = time_task(lm, name, int(limit or args.limit), metadata)
        except Exception as error:  # one task's failure must not lose the others' figures
            print(f"| {name} | failed: {type(error).__name__}: {str(error)[:300]} |", flush=True)
            continue
        per_document = row["wall_s"] / row["documents"]
        print(
            f"| {name} | {row['documents']:,} | {row['requests']:,} | {row['wall_s']:.1f} | {per_document:.3f} "
            f"| {row['whole']:,} | {per_document * row['whole'] / 60:,.1f} min |",
            flush=True,
        )
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
