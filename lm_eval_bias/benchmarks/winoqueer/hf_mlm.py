"""``hf-mlm``: Hugging Face masked language models in lm-eval, for WinoQueer's Eq. 1.

lm-eval has no masked-LM backend. This one answers ``loglikelihood`` requests
with the pseudo-log-likelihood WinoQueer defines for masked models (the
paper's Eq. 1), following the authors' code: a request ``(other, sentence)``
scores ``sentence`` on the tokens it shares with ``other`` (its counterfactual),
found by a diff of the two token-id sequences; each shared token is masked
one at a time with everything else visible (the identity span included) and
the log-probabilities of the true tokens are summed. [CLS]/[SEP] are never
scored; input is lower-cased for uncased tokenizers. Unlike the authors' code,
which runs one forward pass per masked token, all masked copies of all
requests are batched.

That reading of a request is only meaningful for ``winoqueer_mlm``-style pair
requests, so everything else is refused with a :class:`ConfigurationError`
before any forward pass, as are sentences longer than the model can take
(never truncated) and unknown or malformed model arguments.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Sequence

from lm_eval.api.model import LM

from lm_eval_bias.errors import ConfigurationError

logger = logging.getLogger("lm_eval_bias")

# The model arguments hf-mlm understands (--model_args key=value,...).
ACCEPTED_MODEL_ARGS = ("pretrained", "device", "batch_size", "dtype", "revision", "trust_remote_code")
# lm-eval's own batch size when none is fixed (lm-eval's CLI passes "auto" through as is).
AUTO_BATCH_SIZE = 64
# Tokenizers without a length limit report a huge placeholder (transformers' int(1e30)).
UNSET_MODEL_MAX_LENGTH = 10**9
# How many offending pairs a too-long-sentence message lists before "and N more".
PAIRS_NAMED = 5
# What every refusal of a task tells the user to do instead.
TASK_FIX = (
    "Fix: run {tasks} with --model hf and a causal LM (e.g. --model hf --model_args pretrained=gpt2); "
    "run masked models with --tasks winoqueer_mlm."
)


def shared_positions(ids: list[int], other_ids: list[int], special: set[int]) -> list[int]:
    """Positions of ``ids`` in the ``equal`` blocks of a diff against ``other_ids``,
    special tokens ([CLS], [SEP], padding) left out."""
    matcher = difflib.SequenceMatcher(None, ids, other_ids, autojunk=False)
    return [
        position
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag == "equal"
        for position in range(i1, i2)
        if ids[position] not in special
    ]


# ---------------------------------------------------------------------- refusals


def is_winoqueer_pair_request(request) -> bool:
    """Whether ``request`` is one of the two requests ``winoqueer_mlm`` sends per pair:
    its doc has string ``sent_x`` and ``sent_y`` and its arguments are exactly
    ``(sent_y, sent_x)`` or ``(sent_x, sent_y)``. Checked on the doc rather than the
    task name, so a renamed copy of winoqueer_mlm still runs."""
    doc = request.doc
    if not isinstance(doc, dict):
        return False
    sent_x, sent_y = doc.get("sent_x"), doc.get("sent_y")
    if not (isinstance(sent_x, str) and isinstance(sent_y, str)):
        return False
    return tuple(request.args) in ((sent_y, sent_x), (sent_x, sent_y))


def task_names(requests: Iterable) -> list[str]:
    """The distinct task names of ``requests``, sorted (lm-eval's request order is its own)."""
    return sorted({request.task_name or "(unnamed task)" for request in requests})


def unsupported_tasks_error(requests: Sequence, one_asks: str, several_ask: str) -> ConfigurationError:
    """The refusal of ``requests`` hf-mlm cannot answer: which tasks, what they ask for
    (``one_asks`` for one task, ``several_ask`` for several), and what to run instead."""
    names = task_names(requests)
    listed = ", ".join(names)
    what = f"task {listed}: {one_asks}" if len(names) == 1 else f"tasks {listed}: {several_ask}"
    return ConfigurationError(
        f"hf-mlm cannot run {what}. hf-mlm scores only winoqueer_mlm-style "
        f"pair requests (WinoQueer's Eq. 1: a loglikelihood request (sent_y, sent_x) or (sent_x, sent_y) "
        f"whose doc has sent_x and sent_y). " + TASK_FIX.format(tasks=listed)
    )


def shorten(text: str, length: int = 60) -> str:
    """``text`` cut to ``length`` characters for a message, marked with "..." when cut."""
    return text if len(text) <= length else text[: length - 3] + "..."


def refuse_non_pair_requests(requests: Sequence) -> None:
    """Raise one :class:`ConfigurationError` naming every task whose loglikelihood
    requests are not WinoQueer pairs (scoring them would silently give 0 or nonsense)."""
    refused = [request for request in requests if not is_winoqueer_pair_request(request)]
    if refused:
        example = ", ".join(repr(shorten(str(argument))) for argument in refused[0].args)
        not_pairs = f"loglikelihood requests that are not WinoQueer sentence pairs (e.g. ({example}))"
        raise unsupported_tasks_error(refused, f"it sends {not_pairs}", f"they send {not_pairs}")


def pair_label(request) -> str:
    """``pair <pair_id> (<subgroup>) of <task>`` for a message, with what the doc has."""
    doc = request.doc
    pair_id = doc.get("pair_id", f"doc {request.doc_id}")
    subgroup = f" ({doc['subgroup']})" if doc.get("subgroup") else ""
    return f"pair {pair_id}{subgroup} of {request.task_name or '(unnamed task)'}"


# ---------------------------------------------------------------------- model arguments


def parse_batch_size(batch_size) -> int:
    """The batch size to run with: a positive whole number, or ``auto``/``auto:N``
    (lm-eval's automatic sizing, which hf-mlm answers with a fixed size)."""
    if isinstance(batch_size, str):
        text = batch_size.strip()
        head, _, tail = text.partition(":")
        if head == "auto" and (not tail or (tail.isdigit() and int(tail) > 0)):
            return AUTO_BATCH_SIZE
        if text.isdigit() and int(text) > 0:
            return int(text)
    elif isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size > 0:
        return batch_size
    raise ConfigurationError(
        f'hf-mlm: batch_size must be a positive whole number, "auto" or "auto:N" (got {batch_size!r}, '
        "from --batch_size or batch_size= in --model_args). Fix: e.g. --batch_size 64."
    )


def parse_dtype(dtype):
    """The torch dtype named by ``dtype`` (``float32``, ``bfloat16``...), or None for the
    checkpoint's own (``dtype`` unset or ``auto``)."""
    import torch

    if dtype is None or dtype == "auto":
        return None
    named = getattr(torch, dtype, None) if isinstance(dtype, str) else None
    if not isinstance(named, torch.dtype) or not named.is_floating_point:
        raise ConfigurationError(
            f"hf-mlm: dtype={dtype!r} in --model_args is not a torch floating-point type. "
            "Fix: use float32, float16, bfloat16 or auto."
        )
    return named


def position_limit(model, tokenizer) -> tuple[int | None, str]:
    """How many tokens (special ones included) ``model`` can take, and where that
    number comes from (for messages); ``(None, "")`` when neither says."""
    limit, source = None, ""
    positions = getattr(model.config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        limit, source = positions, f"the config's max_position_embeddings {positions}"
        embeddings = getattr(getattr(model, "base_model", None), "embeddings", None)
        padding_idx = getattr(getattr(embeddings, "position_embeddings", None), "padding_idx", None)
        if isinstance(padding_idx, int) and padding_idx >= 0:
            # RoBERTa family: position ids start at padding_idx + 1, so the first
            # padding_idx + 1 embeddings are never used for tokens.
            limit -= padding_idx + 1
            source += f" minus the padding offset {padding_idx + 1}"
    model_max_length = getattr(tokenizer, "model_max_length", None)
    if (
        isinstance(model_max_length, int)
        and 0 < model_max_length < UNSET_MODEL_MAX_LENGTH
        and (limit is None or model_max_length < limit)
    ):
        limit, source = model_max_length, f"the tokenizer's model_max_length {model_max_length}"
    return limit, source


class HFMaskedLM(LM):
    """lm-eval model ``hf-mlm``: ``--model hf-mlm --model_args pretrained=bert-base-uncased``."""

    # The kind of model, as lm-eval's HFLM names its own ("causal", "seq2seq"), so that
    # checks reading that attribute do not take this backend for a causal one.
    backend = "masked"
    #: What the backend scores, and the tasks that send it such requests (``checks.check_backend``'s messages).
    SCORES = "WinoQueer pairs with a masked LM"
    TASKS = ("winoqueer_mlm",)

    def __init__(
        self,
        pretrained: str | None = None,
        device: str | None = None,
        batch_size: int | str = AUTO_BATCH_SIZE,
        dtype: str | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        max_batch_size: int | None = None,
        **unknown,
    ):
        # max_batch_size is accepted because lm-eval's CLI and simple_evaluate pass it
        # to every model; it only caps lm-eval's automatic batch sizing, which hf-mlm
        # does not do ("auto" is a fixed size here), so it is ignored.
        del max_batch_size
        super().__init__()
        if unknown:
            raise ConfigurationError(
                f"hf-mlm: unknown model argument(s) {', '.join(sorted(unknown))} in --model_args. "
                f"Accepted: {', '.join(ACCEPTED_MODEL_ARGS)}. Fix: remove or correct them "
                "(e.g. --model_args pretrained=bert-base-uncased,dtype=float32)."
            )
        if not pretrained:
            raise ConfigurationError(
                "hf-mlm: no model given. Fix: --model_args pretrained=NAME_OR_PATH (e.g. pretrained=bert-base-uncased)."
            )
        # Cheap checks first, so a typo is reported before the model is loaded.
        self.batch_size = parse_batch_size(batch_size)
        torch_dtype = parse_dtype(dtype)

        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.device_name = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.device_name.startswith("cuda") and not torch.cuda.is_available():
            # lm-eval's CLI asks for cuda by default; its own hf backend falls back likewise.
            logger.warning("hf-mlm: %s is not available, using the CPU", self.device_name)
            self.device_name = "cpu"
        self._join_processes()
        self._device = torch.device(self.device_name)
        self.tokenizer = AutoTokenizer.from_pretrained(
            pretrained, revision=revision, trust_remote_code=trust_remote_code
        )
        if self.tokenizer.mask_token_id is None:
            raise ConfigurationError(
                f"hf-mlm: {pretrained} has no mask token; it is not a masked language model. "
                "Fix: use --model hf for causal models (with --tasks winoqueer for WinoQueer)."
            )
        self.model = (
            AutoModelForMaskedLM.from_pretrained(
                pretrained,
                revision=revision,
                trust_remote_code=trust_remote_code,
                dtype=torch_dtype,
            )
            .to(self.device_name)
            .eval()
        )
        self.pretrained = pretrained
        self.max_tokens, self.max_tokens_source = position_limit(self.model, self.tokenizer)
        self.lowercase = bool(getattr(self.tokenizer, "do_lower_case", False))
        self.forward_rows = 0  # masked copies run, for benchmarks

    def _join_processes(self) -> None:
        """Under ``accelerate launch`` (or ``torchrun``: ``WORLD_SIZE`` > 1) this process is one
        rank of a data-parallel run, as with lm-eval's ``hf`` model: lm-eval gives it every
        ``world_size``-th pair and gathers the results to rank 0 through the methods below; the
        model runs on the rank's own device (its ``Accelerator``'s), whatever ``device`` says."""
        import os

        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return
        from datetime import timedelta

        from accelerate import Accelerator, InitProcessGroupKwargs

        # lm-eval's hf model waits as long: rank 0 aggregates while the others wait at a barrier
        accelerator = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(weeks=52))])
        if accelerator.num_processes <= 1:
            return
        self.accelerator = accelerator
        self._rank, self._world_size = accelerator.process_index, accelerator.num_processes
        if str(accelerator.device) != self.device_name:
            logger.info("hf-mlm: process %d of %d runs on %s", self._rank, self._world_size, accelerator.device)
        self.device_name = str(accelerator.device)

    def all_gather(self, tensor):
        return tensor if self.world_size <= 1 else self.accelerator.gather(tensor)

    def gather_object(self, obj, dst=0):
        if self.world_size <= 1:
            return [obj]
        import torch.distributed

        result = [None] * self.world_size if self.rank == dst else None
        torch.distributed.gather_object(obj=obj, object_gather_list=result, dst=dst)
        return result

    def barrier(self) -> None:
        if self.world_size > 1:
            self.accelerator.wait_for_everyone()

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        from lm_eval.utils import simple_parse_args_string

        return cls.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        """``--model_args`` plus what lm-eval adds from its own options (batch_size,
        max_batch_size, device). lm-eval's merge raises a bare TypeError when a key is
        in both, and its CLI always sends batch_size (1 unless --batch_size is given), so
        here the value typed in ``--model_args`` wins, with a note when the two differ."""
        merged = dict(arg_dict)
        for key, value in (additional_config or {}).items():
            if value is None:
                continue
            if key not in merged:
                merged[key] = value
            elif str(merged[key]) != str(value):
                logger.info(
                    "hf-mlm: using %s=%s from --model_args, not %r from lm-eval's --%s", key, merged[key], value, key
                )
        return cls(**merged)

    # ------------------------------------------------------------------ requests

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text.lower() if self.lowercase else text, add_special_tokens=True)

    def masked_copies(self, ids: list[int], other_ids: list[int]) -> list[tuple[list[int], int, int]]:
        """One ``(masked ids, position, true id)`` per token of ``ids`` shared with ``other_ids``."""
        special = set(self.tokenizer.all_special_ids)
        copies = []
        for position in shared_positions(ids, other_ids, special):
            masked = list(ids)
            masked[position] = self.tokenizer.mask_token_id
            copies.append((masked, position, ids[position]))
        return copies

    def refuse_too_long_sentences(self, requests: Sequence, encoded: dict[str, list[int]]) -> None:
        """Raise one :class:`ConfigurationError` naming the pairs with a sentence longer than
        the model can take: truncating would score other tokens than the counterfactual's,
        and running it would fail inside the model with a tensor-size error."""
        if self.max_tokens is None:
            return
        too_long = {}  # pair label -> its longest sentence's token count
        for request in requests:
            longest = max(len(encoded[sentence]) for sentence in request.args)
            if longest > self.max_tokens:
                label = pair_label(request)
                too_long[label] = max(longest, too_long.get(label, 0))
        if not too_long:
            return
        named = [f"{label}: {count} tokens" for label, count in list(too_long.items())[:PAIRS_NAMED]]
        more = len(too_long) - len(named)
        listing = "; ".join(named) + (f"; and {more} more" if more else "")
        pairs = "1 pair has" if len(too_long) == 1 else f"{len(too_long)} pairs have"
        raise ConfigurationError(
            f"hf-mlm: {pairs} a sentence longer than {self.pretrained} can take "
            f"({self.max_tokens} tokens with special tokens, from {self.max_tokens_source}): {listing}. "
            "hf-mlm never truncates (a cut sentence is no longer the pair). Fix: remove those pairs "
            "from the data file, or use a model with a longer context."
        )

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        """``(context, continuation)`` = (counterfactual, sentence): the sentence's Eq. 1 score.

        Every request is checked (pair requests only, no sentence too long) before the
        first forward pass, so a bad run stops at once with one message."""
        refuse_non_pair_requests(requests)
        unique = list(dict.fromkeys(tuple(request.args) for request in requests))
        encoded = {sentence: self.encode(sentence) for pair in unique for sentence in pair}
        self.refuse_too_long_sentences(requests, encoded)
        copies = [
            (index, copy)
            for index, (other, sentence) in enumerate(unique)
            for copy in self.masked_copies(encoded[sentence], encoded[other])
        ]
        totals = [0.0] * len(unique)
        for index, value in zip([i for i, _ in copies], self._score_copies([c for _, c in copies])):
            totals[index] += value
        by_request = dict(zip(unique, totals))
        return [(by_request[tuple(request.args)], False) for request in requests]

    def _score_copies(self, copies) -> list[float]:
        """log P(true token at its masked position), batched, longest first to pad little."""
        import torch

        order = sorted(range(len(copies)), key=lambda i: -len(copies[i][0]))
        scores = [0.0] * len(copies)
        pad = self.tokenizer.pad_token_id or 0
        with torch.no_grad():
            for start in range(0, len(order), self.batch_size):
                batch = [copies[i] for i in order[start : start + self.batch_size]]
                width = max(len(ids) for ids, _, _ in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (ids, _, _) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids)
                    attention[row, : len(ids)] = 1
                logits = self.model(
                    input_ids=input_ids.to(self.device_name), attention_mask=attention.to(self.device_name)
                ).logits
                rows = torch.arange(len(batch), device=logits.device)
                positions = torch.tensor([position for _, position, _ in batch], device=logits.device)
                targets = torch.tensor([target for _, _, target in batch], device=logits.device)
                picked = torch.log_softmax(logits[rows, positions].float(), dim=-1)
                values = picked.gather(1, targets.unsqueeze(1)).squeeze(1).tolist()
                for offset, value in enumerate(values):
                    scores[order[start + offset]] = value
                self.forward_rows += len(batch)
        return scores

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        if not requests:
            return []
        whole_texts = "whole-text log-likelihoods (loglikelihood_rolling requests, e.g. perplexity)"
        raise unsupported_tasks_error(requests, f"it asks for {whole_texts}", f"they ask for {whole_texts}")

    def generate_until(self, requests, disable_tqdm: bool = False):
        if not requests:
            return []
        generation = "generated text (generate_until requests)"
        raise unsupported_tasks_error(requests, f"it asks for {generation}", f"they ask for {generation}")
