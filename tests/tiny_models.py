"""Tiny random models built offline for tests and benchmarks (no hub access)."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

from tokenizers import ByteLevelBPETokenizer

from benchmark_data import shared_data_path, winoqueer_corpus

# The released WinoQueer files, for the tests that need them (benchmark_data.shared_data_dir skips without).
WINOQUEER_DIR = shared_data_path() / "winoqueer"


def winoqueer_sentences(limit: int | None = None) -> list[str]:
    """The sentences the tiny tokenizers are trained on: both sentences of every released WinoQueer
    pair where the released files are present (the end-to-end tests score released prompts, which
    must fit the tiny models' context), else of every generated pair (``benchmark_data``)."""
    if (WINOQUEER_DIR / "winoqueer_gender_subset.csv").is_file():
        sentences = []
        for name in ("winoqueer_gender_subset.csv", "winoqueer_head_sample.csv"):
            with open(WINOQUEER_DIR / name, encoding="utf-8-sig", newline="") as handle:
                for row in csv.DictReader(handle):
                    sentences += [row["sent_x"], row["sent_y"]]
    else:
        sentences = winoqueer_corpus()
    return sentences[:limit] if limit else sentences


BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Endings that real BERT vocabularies keep as pieces of identity words ("trans" + "##gender").
SPLIT_ENDINGS = ("gender", "sexual")


def wordpiece_vocab(corpus: list[str], vocab_size: int, min_frequency: int = 1) -> dict[str, int]:
    """An uncased WordPiece vocabulary of ``corpus`` that is the same in every process.

    The ``tokenizers`` WordPiece trainer breaks ties between equally frequent merges differently from
    one process to the next, so models built on its vocabulary score differently each run. Here: the
    special tokens, every character alone and as a ``##`` continuation, the words that end in one of
    ``SPLIT_ENDINGS`` as their beginning and that ending ("trans" + "##gender", as real BERT splits
    them), then whole words by frequency, ties alphabetical, up to ``vocab_size``.

    Parameters
    ----------
    corpus : list of str
        The texts the vocabulary must cover.
    vocab_size : int
        The most tokens to keep (the characters are always kept).
    min_frequency : int
        How often a whole word must occur to be a token of its own.

    Returns
    -------
    vocab : dict
        Token -> id, ids in order from 0.
    """
    words = Counter(word for text in corpus for word in re.findall(r"\w+|[^\w\s]", text.lower()))
    characters = sorted({character for word in words for character in word})
    tokens = list(BERT_SPECIAL_TOKENS) + characters + [f"##{character}" for character in characters]
    split = {}
    for word in sorted(words):
        ending = next((e for e in SPLIT_ENDINGS if word.endswith(e) and len(word) > len(e)), None)
        if ending:
            split[word] = (word[: -len(ending)], f"##{ending}")
    pieces = sorted({piece for pair in split.values() for piece in pair})
    tokens += [piece for piece in pieces if piece not in tokens]
    for word, count in sorted(words.items(), key=lambda item: (-item[1], item[0])):
        if count >= min_frequency and word not in split and word not in tokens:
            tokens.append(word)
    tokens = tokens[: max(vocab_size, len(BERT_SPECIAL_TOKENS) + 2 * len(characters))]
    return {token: index for index, token in enumerate(tokens)}


def build_tiny_gpt2(
    out_dir: str | Path, corpus: list[str], vocab_size: int = 600, seed: int = 0, n_positions: int = 128
) -> Path:
    """A 2-layer random GPT-2 with a byte-level BPE trained on ``corpus``.

    The tokenizer has GPT-2's pre-tokenization, so identity words split into
    realistic sub-word pieces (e.g. "Cis" + "gender").
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus, vocab_size=vocab_size, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


# --------------------------------------------------------------------------
# Detoxify checkpoints in Detoxify's own .ckpt format, randomly initialised

# The Jigsaw class names as stored inside Detoxify's released checkpoints (Detoxify
# renames toxic/severe_toxic/identity_hate when loading); "unbiased" checkpoints have
# 16 outputs but list only the 7 main classes, the 9 identity outputs apart.
DETOXIFY_FORMATS = {
    "original": {
        "base": "bert-base-uncased",
        "model_name": "BertForSequenceClassification",
        "tokenizer_name": "BertTokenizer",
        "num_classes": 6,
        "classes": ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"],
    },
    "unbiased": {
        "base": "roberta-base",
        "model_name": "RobertaForSequenceClassification",
        "tokenizer_name": "RobertaTokenizer",
        "num_classes": 16,
        "classes": ["toxicity", "severe_toxicity", "obscene", "identity_attack", "insult", "threat", "sexual_explicit"],
        "identity_classes": [
            "male",
            "female",
            "homosexual_gay_or_lesbian",
            "christian",
            "jewish",
            "muslim",
            "black",
            "white",
            "psychiatric_or_mental_illness",
        ],
    },
}

DETOXIFY_CORPUS = [
    "The nurse was kind and very helpful.",
    "The engineer is a terrible, lazy person.",
    "He went to the store.",
    "She is a brilliant scientist who loves her work.",
    "They said that queer people are wonderful neighbours.",
    "You are a stupid idiot and I hate you.",
    "My sister is a trans woman and a great teacher.",
    "Nonbinary people deserve respect at work and at home.",
]


def build_detoxify_checkpoint(
    out_dir: str | Path, flavour: str, tokenizer, config_kwargs: dict, seed: int = 0
) -> tuple[Path, Path]:
    """Save ``out_dir/config`` (config.json + tokenizer, as ``save_pretrained`` of the
    base model would) and ``out_dir/detoxify-<flavour>.ckpt``; return both paths.

    The checkpoint names the hub id of the base model, as the released ones do, so
    loading it offline needs the config-folder workaround. config.json carries no
    label count, like the hub's base-model config, so the classifier head's size
    comes from the checkpoint alone.
    """
    import torch
    import transformers

    spec = DETOXIFY_FORMATS[flavour]
    out_dir = Path(out_dir)
    config_dir = out_dir / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(config_dir)
    model_class = getattr(transformers, spec["model_name"])
    model_class.config_class(**config_kwargs).save_pretrained(config_dir)
    torch.manual_seed(seed)
    model = model_class(model_class.config_class(**config_kwargs, num_labels=spec["num_classes"]))
    dataset_args = {"classes": spec["classes"]}
    if "identity_classes" in spec:
        dataset_args["identity_classes"] = spec["identity_classes"]
    checkpoint = out_dir / f"detoxify-{flavour}.ckpt"
    torch.save(
        {
            "config": {
                "arch": {
                    "args": {
                        "model_type": spec["base"],
                        "model_name": spec["model_name"],
                        "tokenizer_name": spec["tokenizer_name"],
                        "num_classes": spec["num_classes"],
                    }
                },
                "dataset": {"args": dataset_args},
            },
            "state_dict": model.state_dict(),
        },
        checkpoint,
    )
    return checkpoint, config_dir


def build_tiny_detoxify(
    out_dir: str | Path,
    flavour: str = "original",
    seed: int = 0,
    max_positions: int = 512,
    model_max_length: int | None = 512,
) -> tuple[Path, Path]:
    """A 2-layer, hidden-32 random Detoxify checkpoint (BERT for ``original``, RoBERTa
    for ``unbiased``) with a tokenizer trained on ``DETOXIFY_CORPUS``.

    ``model_max_length=None`` saves a tokenizer without a length limit (as one built
    by hand would be), to test that long texts are still truncated to ``max_positions``.
    """
    import json

    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizer, RobertaTokenizer

    limit = {} if model_max_length is None else {"model_max_length": model_max_length}
    # A wide initialisation spreads the random logits, so that different texts get
    # clearly different scores (with the default 0.02 every score is about 0.50).
    sizes = dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, initializer_range=0.5
    )
    if flavour == "original":
        wordpiece = BertWordPieceTokenizer(lowercase=True)
        wordpiece.train_from_iterator(DETOXIFY_CORPUS, vocab_size=300, min_frequency=1, show_progress=False)
        # transformers 5 ignores BertTokenizer(vocab_file=...); vocab= takes the mapping.
        tokenizer = BertTokenizer(vocab=wordpiece.get_vocab(), do_lower_case=True, **limit)
        config = dict(vocab_size=len(tokenizer), max_position_embeddings=max_positions, **sizes)
    elif flavour == "unbiased":
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(
            DETOXIFY_CORPUS,
            vocab_size=400,
            min_frequency=1,
            show_progress=False,
            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        )
        merges = [tuple(pair) for pair in json.loads(bpe._tokenizer.to_str())["model"]["merges"]]
        tokenizer = RobertaTokenizer(vocab=bpe.get_vocab(), merges=merges, **limit)
        # RoBERTa's positions start after the padding index (1), hence the + 2.
        config = dict(
            vocab_size=len(tokenizer),
            max_position_embeddings=max_positions + 2,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **sizes,
        )
    else:
        raise ValueError(f"unknown Detoxify flavour {flavour!r}")
    return build_detoxify_checkpoint(out_dir, flavour, tokenizer, config, seed=seed)


def build_tiny_bert(out_dir: str | Path, corpus: list[str], vocab_size: int = 800, seed: int = 0) -> Path:
    """A 2-layer random BertForMaskedLM with an uncased WordPiece vocabulary trained on ``corpus``
    (so "transgender" and "cisgender" can share a "##gender" piece, as with real BERT)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = wordpiece_vocab(corpus, vocab_size, min_frequency=2)
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=vocab["[PAD]"],
    )
    BertForMaskedLM(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
