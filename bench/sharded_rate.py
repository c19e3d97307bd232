"""A full variant's time through shards: some of its shards run side by side, then merged.

Splits ``TASK`` into ``--shards N`` shards (``lm-eval-bias shards``), runs the first ``--run K`` of
them, ``--parallel P`` at a time, each an ordinary ``lm-eval-bias`` run in its own process (lm-eval's
``hf`` backend, SmolLM2-135M-Instruct fp32 from ``bench/models.py`` or ``--model-dir``, on
``--device``, ``--log_samples``), and merges the K shards (``lm-eval-bias merge``: a partial merge,
marked so). It prints each shard's documents and wall time (each process loads the model, the
classifiers and the task's whole data file, as each shard of a real run does), the K shards' wall
time side by side, their documents per second, and the whole task's time at that rate: an
extrapolation from K of N shards, said so, since generation lengths differ between documents.

Classifiers read Detoxify from the ``LM_EVAL_BIAS_DETOXIFY_*`` variables (a real-size random
checkpoint: ``bench/classifier_speed.py``); data from ``--metadata`` (``data_file`` / ``data_dir``).

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python bench/sharded_rate.py gendercare_genderpair_full \\
        --metadata '{"data_dir": "../shared/data"}' --shards 64 --run 8 --parallel 8 \\
        --device cuda --batch-size 256
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tiny_models, for --model tiny
sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import add_model_arguments, load_average, model_dir_for  # noqa: E402  bench/models.py


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="a task of lm-eval-bias, e.g. gendercare_genderpair_full")
    parser.add_argument("--shards", type=int, required=True, help="N: shards the whole task is cut into")
    parser.add_argument("--run", type=int, required=True, help="K: the first K shards are run")
    parser.add_argument("--parallel", type=int, default=1, help="P: shard processes at a time (default 1)")
    parser.add_argument("--batch-size", default="64", help="lm-eval's --batch_size of each shard (default 64)")
    parser.add_argument("--metadata", default="{}", help="the run's --metadata JSON (data_file, data_dir)")
    parser.add_argument("--gen-kwargs", help="lm-eval's --gen_kwargs of each shard (default: the task's)")
    parser.add_argument("--dtype", default="float32", help="the model's dtype (default float32)")
    parser.add_argument("--out", type=Path, help="folder for the shards' runs and logs (default: a new temporary one)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    add_model_arguments(parser, default="smollm2")
    return parser.parse_args(argv)


def lm_eval_bias_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lm_eval_bias", *args]


def run_shard(index: int, args: argparse.Namespace, model: Path, shard_file: Path, out: Path) -> dict:
    """One shard as its own ``lm-eval-bias`` process: its documents, wall time and exit status."""
    documents = len(next(iter(json.loads(shard_file.read_text()).values())))
    command = lm_eval_bias_command(
        "--model", "hf",
        "--model_args", f"pretrained={model},dtype={args.dtype}",
        "--device", args.device,
        "--batch_size", str(args.batch_size),
        "--tasks", args.task,
        "--metadata", args.metadata,
        "--samples", str(shard_file),
        "--log_samples",
        "--output_path", str(out / f"shard-{index}"),
        *(("--gen_kwargs", args.gen_kwargs) if args.gen_kwargs else ()),
    )  # fmt: skip
    started = time.perf_counter()
    with open(out / f"shard-{index}.log", "w") as log:
        status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    return {"shard": index, "documents": documents, "wall_s": time.perf_counter() - started, "rc": status}


def main(argv=None) -> None:
    args = parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix=f"{args.task}-shards-"))
    out.mkdir(parents=True, exist_ok=True)
    model, label = model_dir_for(args, out)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    started = time.perf_counter()
    subprocess.run(
        lm_eval_bias_command(
            "shards", args.task, "--shards", str(args.shards), "--to", str(out / "shards"),
            "--metadata", args.metadata,
        ),
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    split_s = time.perf_counter() - started
    files = [out / "shards" / f"{args.task}-shard-{k}-of-{args.shards}.json" for k in range(1, args.shards + 1)]
    whole = sum(len(next(iter(json.loads(path.read_text()).values()))) for path in files)
    print(f"{args.task}: {label}, hf on {args.device}, batch size {args.batch_size}, {args.dtype}")
    print(f"{args.shards} shards written in {split_s:.1f} s; running shards 1-{args.run}, {args.parallel} at a time")
    print(f"load average before: {load_average()}", flush=True)

    print("| shard | documents | wall s | exit |")
    print("|---|---|---|---|", flush=True)
    started = time.perf_counter()
    shards = []
    with ThreadPoolExecutor(args.parallel) as pool:
        running = [pool.submit(run_shard, k, args, model, files[k - 1], out) for k in range(1, args.run + 1)]
        for done in as_completed(running):  # each row as its shard ends: a run cut short keeps them
            shard = done.result()
            shards.append(shard)
            print(f"| {shard['shard']} of {args.shards} | {shard['documents']:,} | {shard['wall_s']:.1f} ", end="")
            print(f"| {shard['rc']} |", flush=True)
    wall = time.perf_counter() - started
    shards.sort(key=lambda shard: shard["shard"])
    print(f"load average after: {load_average()}")
    failed = [shard["shard"] for shard in shards if shard["rc"]]
    if failed:
        raise SystemExit(f"shards {failed} failed: see {out}/shard-N.log")

    started = time.perf_counter()
    merged = subprocess.run(
        lm_eval_bias_command("merge", *(str(out / f"shard-{k}") for k in range(1, args.run + 1)),
                             "--output_path", str(out / "merged")),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    merge_s = time.perf_counter() - started
    documents = sum(shard["documents"] for shard in shards)
    rate = documents / wall
    figures = {
        "task": args.task,
        "model": label,
        "device": args.device,
        "batch_size": args.batch_size,
        "dtype": args.dtype,
        "shards": args.shards,
        "run": args.run,
        "parallel": args.parallel,
        "documents": documents,
        "wall_s": wall,
        "documents_per_s": rate,
        "merge_s": merge_s,
        "merge_rc": merged.returncode,
        "whole_documents": whole,
        "whole_hours_extrapolated": whole / rate / 3600,
        "per_shard": shards,
    }
    print(
        f"{args.run} shards ({documents:,} documents), {args.parallel} at a time: {wall:.1f} s, "
        f"{rate:.2f} documents/s; merged in {merge_s:.1f} s (exit {merged.returncode})"
    )
    print(merged.stdout[-2000:] + merged.stderr[-2000:])
    print(
        f"whole task ({whole:,} documents) at that rate: {whole / rate / 3600:.2f} h "
        f"(extrapolated from {args.run} of {args.shards} shards)"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
