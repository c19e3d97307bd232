"""Tiny random models built offline for tests and benchmarks (no hub access)."""

from __future__ import annotations

import csv
from pathlib import Path

from tokenizers import ByteLevelBPETokenizer

WINOQUEER_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "winoqueer"


def winoqueer_sentences(limit: int | None = None) -> list[str]:
    sentences = []
    for name in ("winoqueer_gender_subset.csv", "winoqueer_head_sample.csv"):
        with open(WINOQUEER_DIR / name, encoding="utf-8-sig", newline="") as handle:
            for row in csv.DictReader(handle):
                sentences += [row["sent_x"], row["sent_y"]]
    return sentences[:limit] if limit else sentences


def build_tiny_gpt2(out_dir: str | Path, corpus: list[str], vocab_size: int = 600, seed: int = 0) -> Path:
    """A 2-layer random GPT-2 with a byte-level BPE trained on ``corpus``.

    The tokenizer has GPT-2's pre-tokenization, so identity words split into
    realistic sub-word pieces (e.g. "Cis" + "gender").
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=vocab_size, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<|endoftext|>",
        eos_token="<|endoftext|>", unk_token="<|endoftext|>",
    )
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=128, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
