"""The one scorer interface of the MC-MLM evaluators: logits of candidate tokens at the mask.

``MaskedLMScorer.score(requests)`` takes texts that contain the model's mask token once, each with its
candidate token ids, and returns the raw MLM logit of each candidate at the mask, in input order. Requests
are sorted longest first, padded on the right, batched, and put back in order. The model's own MLM head
runs on the mask positions only (a hook keeps just those rows of the encoder's output), which removes
nearly all of the head's cost and is exact for every MLM family (BERT, RoBERTa, ALBERT, DistilBERT,
ELECTRA, DeBERTa-v2...): no shortcut through the output embeddings, nothing to verify or fall back from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from probekit.errors import DataError



@dataclass(frozen=True)
class MaskRequest:
    text: str                  # contains the tokenizer's mask token exactly once
    candidates: Sequence[int]  # token ids to score at the mask


class MaskedLMScorer:
    """Scores candidate tokens at the mask with a masked LM, batched and sorted by length."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, batch_size: int = 32,
                 progress: bool = False):
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.progress = batch_size, progress
        self.device = next(model.parameters()).device
        self.max_length = max_length(model, tokenizer)

    def score(self, requests: Sequence[MaskRequest]) -> list[list[float]]:
        """Raw MLM logits of each request's candidates at its mask, in input order."""
        texts = [r.text for r in requests]
        enc = self.tokenizer(texts, truncation=True, max_length=self.max_length)
        self._check_masks(enc["input_ids"], texts)
        order = sorted(range(len(requests)), key=lambda i: -len(enc["input_ids"][i]))
        results: list[list[float]] = [[] for _ in requests]
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="scoring", unit="batch", disable=not self.progress):
            inputs = self.tokenizer.pad([{k: enc[k][i] for k in enc.keys()} for i in batch], return_tensors="pt",
                                        padding_side="right")  # left padding would shift BERT's positions
            inputs = inputs.to(self.device)
            rows, cols = (inputs["input_ids"] == self.tokenizer.mask_token_id).nonzero(as_tuple=True)
            width = max(len(requests[i].candidates) for i in batch)
            cand = torch.tensor([list(requests[i].candidates) + [0] * (width - len(requests[i].candidates))
                                 for i in batch], device=self.device)
            logits = self._candidate_logits(inputs, rows, cols, cand)
            for j, i in enumerate(batch):
                results[i] = logits[j, :len(requests[i].candidates)].tolist()
        return results

    def _check_masks(self, input_ids: Sequence[Sequence[int]], texts: Sequence[str]) -> None:
        """Exactly one mask token per encoded text; a mask cut off by truncation says so."""
        mask = self.tokenizer.mask_token_id
        for ids, text in zip(input_ids, texts):
            n = ids.count(mask)
            if n == 1:
                continue
            if n == 0 and text.count(self.tokenizer.mask_token) == 1:
                raise DataError(f"the mask was truncated away: the model reads at most {self.max_length} tokens "
                                f"and the mask comes later in {text!r}")
            raise DataError(f"expected one mask token after tokenization, found {n} in {text!r}")

    @torch.inference_mode()
    def _candidate_logits(self, inputs, rows, cols, cand: torch.Tensor) -> torch.Tensor:
        """The model's own head at the mask positions: ``[batch, vocab]`` logits, gathered at ``cand``."""
        handle = self._gather_mask(rows, cols)
        try:
            return self.model(**inputs).logits[:, 0, :].gather(1, cand).float()
        finally:
            handle.remove()

    def _gather_mask(self, rows, cols):
        """A forward hook on the encoder that keeps only the hidden state at each row's mask."""

        def hook(_module, _args, output):
            gathered = output[0][rows, cols].unsqueeze(1)
            if isinstance(output, tuple):
                return (gathered,) + output[1:]
            output.last_hidden_state = gathered
            return output

        return self.model.base_model.register_forward_hook(hook)


def max_length(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int:
    """Tokens the model can read: the tokenizer's limit, capped by the position embeddings (RoBERTa-style
    models start positions after the padding index); a tokenizer without a limit gets the model's."""
    config = model.config
    positions = getattr(config, "max_position_embeddings", None) or 10**9
    if config.model_type in ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"):
        positions -= (config.pad_token_id or 0) + 1
    return min(tokenizer.model_max_length or positions, positions)
