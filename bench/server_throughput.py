"""One generation task through the ``hf`` backend and through a llama.cpp server, on the same weights.

The server is ``llama-cpp-python[server]`` (tests/llama_server.py starts and stops it) serving
SmolLM2-135M-Instruct's dequantized weights as an F32 GGUF (``models.smollm2_f32_gguf``), and
``hf`` loads the same weights in fp32 (``models.smollm2_dir``), so both compute the same model in
fp32 on the CPU (the server without its default repetition penalty of 1.1, which hf does not
apply). Prints, per backend, the wall time of ``lm_eval_bias.simple_evaluate``, requests
per second and generated tokens per second, and how many greedy generations are identical.

    python bench/server_throughput.py [--task tango_misgender] [--limit 48] [--max-gen-toks 32]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))


def run(model: str, model_args: str, args, data_dir: Path, gen_kwargs: str = "") -> tuple[float, list[str]]:
    import lm_eval_bias

    start = time.perf_counter()
    output = lm_eval_bias.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=[args.task],
        limit=args.limit,
        log_samples=True,
        gen_kwargs=f"max_gen_toks={args.max_gen_toks}{gen_kwargs}",
        metadata={"data_dir": str(data_dir)},
        bootstrap_iters=0,
    )
    seconds = time.perf_counter() - start
    samples = sorted(output["samples"][args.task], key=lambda sample: sample["doc_id"])
    return seconds, [answer for sample in samples for answer in sample["resps"][0]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="tango_misgender", help="a generation task (default tango_misgender)")
    parser.add_argument("--limit", type=int, default=48, help="documents (default 48)")
    parser.add_argument("--max-gen-toks", type=int, default=32, help="new tokens per generation (default 32)")
    parser.add_argument("--batch-size", type=int, default=16, help="hf batch size (default 16)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=HERE.parent.parent / "shared" / "data",
        help="the benchmark data (default ../shared/data)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    from transformers import AutoTokenizer

    import models
    from llama_server import completions_model_args, llama_server

    hf_dir, gguf = models.smollm2_dir(), models.smollm2_f32_gguf()
    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    results = {}
    results["hf"] = run(
        "hf", f"pretrained={hf_dir},dtype=float32,device=cpu,batch_size={args.batch_size}", args, args.data_dir
    )
    with (
        tempfile.TemporaryDirectory() as scratch,
        llama_server(gguf, Path(scratch) / "server.log", f32_kv_cache=True) as base_url,
    ):
        # llama-cpp-python's server applies a repetition penalty of 1.1 unless told otherwise, which
        # changes greedy generations; hf applies none.
        results["llama.cpp server"] = run(
            "local-completions", completions_model_args(base_url, hf_dir), args, args.data_dir, ",repeat_penalty=1.0"
        )
    print(
        f"{args.task}, {args.limit} documents, max_gen_toks={args.max_gen_toks}, SmolLM2-135M-Instruct fp32 "
        f"weights, {os.cpu_count()} CPU cores, load {models.load_average()}"
    )
    for backend, (seconds, answers) in results.items():
        tokens = sum(len(tokenizer(answer, add_special_tokens=False)["input_ids"]) for answer in answers)
        print(
            f"  {backend:17s} {seconds:7.1f} s  {len(answers) / seconds:6.2f} requests/s  "
            f"{tokens / seconds:7.1f} generated tokens/s  ({len(answers)} requests, {tokens} tokens)"
        )
    same = sum(a == b for a, b in zip(results["hf"][1], results["llama.cpp server"][1], strict=True))
    print(f"  identical greedy generations: {same} of {len(results['hf'][1])}")


if __name__ == "__main__":
    main()
