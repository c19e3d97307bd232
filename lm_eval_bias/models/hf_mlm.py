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
"""

from __future__ import annotations

import difflib
import logging

from lm_eval.api.model import LM

logger = logging.getLogger("lm_eval_bias")


def shared_positions(ids: list[int], other_ids: list[int], special: set[int]) -> list[int]:
    """Positions of ``ids`` in the ``equal`` blocks of a diff against ``other_ids``,
    special tokens ([CLS], [SEP], padding) left out."""
    matcher = difflib.SequenceMatcher(None, ids, other_ids, autojunk=False)
    return [
        position
        for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal"
        for position in range(i1, i2)
        if ids[position] not in special
    ]


class HFMaskedLM(LM):
    """lm-eval model ``hf-mlm``: ``--model hf-mlm --model_args pretrained=bert-base-uncased``."""

    def __init__(self, pretrained: str, device: str | None = None, batch_size: int | str = 64,
                 dtype: str | None = None, revision: str | None = None, trust_remote_code: bool = False,
                 **unused):
        super().__init__()
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        if unused:
            logger.warning("hf-mlm: ignoring model arguments %s", ", ".join(sorted(unused)))
        self.device_name = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.device_name.startswith("cuda") and not torch.cuda.is_available():
            # lm-eval's CLI asks for cuda by default; its own hf backend falls back likewise.
            logger.warning("hf-mlm: %s is not available, using the CPU", self.device_name)
            self.device_name = "cpu"
        self.tokenizer = AutoTokenizer.from_pretrained(pretrained, revision=revision,
                                                       trust_remote_code=trust_remote_code)
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"hf-mlm: {pretrained} has no mask token; it is not a masked language model "
                             "(use --model hf for causal models)")
        torch_dtype = getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else None
        self.model = AutoModelForMaskedLM.from_pretrained(
            pretrained, revision=revision, trust_remote_code=trust_remote_code, dtype=torch_dtype,
        ).to(self.device_name).eval()
        # "auto" means lm-eval's CLI default; a fixed size is used as given.
        self.batch_size = 64 if str(batch_size).startswith("auto") else int(batch_size)
        self.lowercase = bool(getattr(self.tokenizer, "do_lower_case", False))
        self.forward_rows = 0  # masked copies run, for benchmarks

    # ------------------------------------------------------------------ requests

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text.lower() if self.lowercase else text, add_special_tokens=True)

    def masked_copies(self, sentence: str, other: str) -> list[tuple[list[int], int, int]]:
        """One ``(masked ids, position, true id)`` per shared token of ``sentence``."""
        ids, other_ids = self.encode(sentence), self.encode(other)
        special = set(self.tokenizer.all_special_ids)
        copies = []
        for position in shared_positions(ids, other_ids, special):
            masked = list(ids)
            masked[position] = self.tokenizer.mask_token_id
            copies.append((masked, position, ids[position]))
        return copies

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        """``(context, continuation)`` = (counterfactual, sentence): the sentence's Eq. 1 score."""
        unique = list(dict.fromkeys(request.args[:2] for request in requests))
        for other, sentence in unique:
            if not other.strip():
                # Any other task's requests would silently score 0 here.
                raise ValueError(
                    "hf-mlm scores WinoQueer pairs only: run it with --tasks winoqueer_mlm "
                    f"(got a request with an empty context for {sentence[:60]!r})")
        copies = [(index, copy) for index, (other, sentence) in enumerate(unique)
                  for copy in self.masked_copies(sentence, other)]
        totals = [0.0] * len(unique)
        for index, value in zip([i for i, _ in copies], self._score_copies([c for _, c in copies])):
            totals[index] += value
        by_request = dict(zip(unique, totals))
        return [(by_request[request.args[:2]], False) for request in requests]

    def _score_copies(self, copies) -> list[float]:
        """log P(true token at its masked position), batched, longest first to pad little."""
        import torch

        order = sorted(range(len(copies)), key=lambda i: -len(copies[i][0]))
        scores = [0.0] * len(copies)
        pad = self.tokenizer.pad_token_id or 0
        with torch.no_grad():
            for start in range(0, len(order), self.batch_size):
                batch = [copies[i] for i in order[start:start + self.batch_size]]
                width = max(len(ids) for ids, _, _ in batch)
                input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (ids, _, _) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids)
                    attention[row, : len(ids)] = 1
                logits = self.model(input_ids=input_ids.to(self.device_name),
                                    attention_mask=attention.to(self.device_name)).logits
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
        raise NotImplementedError("hf-mlm scores WinoQueer-style pairs only (loglikelihood requests)")

    def generate_until(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("hf-mlm cannot generate text; use --model hf for generation tasks")
