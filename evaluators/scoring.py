"""The one scorer interface of the MC-MLM evaluators: logits of candidate tokens at the mask.

``MaskedLMScorer.score(requests)`` takes texts that contain the model's mask token once, each with its
candidate token ids, and returns the raw MLM logit of each candidate at the mask, in input order. Requests
are sorted longest first, batched with dynamic padding, and put back in order. The LM head runs only at
the mask position and only for the candidate ids (checked once per scorer against the full head).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from probekit.errors import DataError

log = logging.getLogger("probekit")


@dataclass(frozen=True)
class MaskRequest:
    text: str                  # contains the tokenizer's mask token exactly once
    candidates: Sequence[int]  # token ids to score at the mask


class _HeadInput(Exception):
    """Raised inside the decoder's pre-hook to stop the forward pass once its input is known."""

    def __init__(self, hidden: torch.Tensor):
        self.hidden = hidden


class MaskedLMScorer:
    """Scores candidate tokens at the mask with a masked LM, batched and sorted by length."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, batch_size: int = 32,
                 progress: bool = False):
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.progress = batch_size, progress
        self.device = next(model.parameters()).device
        self._fast_path_ok: bool | None = None  # verified on the first batch

    def score(self, requests: Sequence[MaskRequest]) -> list[list[float]]:
        """Raw MLM logits of each request's candidates at its mask, in input order."""
        enc = self.tokenizer([r.text for r in requests], truncation=True)
        order = sorted(range(len(requests)), key=lambda i: -len(enc["input_ids"][i]))
        results: list[list[float]] = [[] for _ in requests]
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="scoring", unit="batch", disable=not self.progress):
            inputs = self.tokenizer.pad([{k: enc[k][i] for k in enc.keys()} for i in batch], return_tensors="pt")
            inputs = inputs.to(self.device)
            rows, cols = self._mask_positions(inputs["input_ids"], [requests[i].text for i in batch])
            width = max(len(requests[i].candidates) for i in batch)
            cand = torch.tensor([list(requests[i].candidates) + [0] * (width - len(requests[i].candidates))
                                 for i in batch], device=self.device)
            logits = self._candidate_logits(inputs, rows, cols, cand)
            for j, i in enumerate(batch):
                results[i] = logits[j, :len(requests[i].candidates)].tolist()
        return results

    def _mask_positions(self, input_ids: torch.Tensor, texts: Sequence[str]):
        is_mask = input_ids == self.tokenizer.mask_token_id
        counts = is_mask.sum(dim=1)
        if (counts != 1).any():
            bad = int((counts != 1).nonzero()[0, 0])
            raise DataError(f"expected one mask token after tokenization, found {int(counts[bad])} in "
                             f"{texts[bad]!r}")
        return is_mask.nonzero(as_tuple=True)

    @torch.inference_mode()
    def _candidate_logits(self, inputs, rows, cols, cand: torch.Tensor) -> torch.Tensor:
        if self._fast_path_ok is False:
            return self._full_head(inputs, rows, cols).gather(1, cand)
        hidden = self._head_input(inputs, rows, cols)
        if hidden is None:  # the head does not end in a called output-embedding module
            self._fast_path_ok = False
            return self._full_head(inputs, rows, cols).gather(1, cand)
        decoder = self.model.get_output_embeddings()
        logits = torch.einsum("bh,bkh->bk", hidden, decoder.weight[cand])
        if decoder.bias is not None:
            logits = logits + decoder.bias[cand]
        if self._fast_path_ok is None:
            reference = self._full_head(inputs, rows, cols).gather(1, cand)
            self._fast_path_ok = torch.allclose(logits, reference, rtol=1e-4, atol=1e-4)
            if not self._fast_path_ok:
                log.warning("candidate-only LM head disagrees with the full head; using the full head")
                return reference
        return logits

    def _gather_mask(self, rows, cols):
        """A forward hook on the encoder that keeps only the hidden state at each row's mask."""

        def hook(_module, _args, output):
            gathered = output[0][rows, cols].unsqueeze(1)
            if isinstance(output, tuple):
                return (gathered,) + output[1:]
            output.last_hidden_state = gathered
            return output

        return self.model.base_model.register_forward_hook(hook)

    def _full_head(self, inputs, rows, cols) -> torch.Tensor:
        """The model's own head at the mask positions only: ``[batch, vocab]`` logits."""
        handle = self._gather_mask(rows, cols)
        try:
            return self.model(**inputs).logits[:, 0, :]
        finally:
            handle.remove()

    def _head_input(self, inputs, rows, cols) -> torch.Tensor | None:
        """The input of the output-embedding (decoder) layer at the mask positions, or None."""
        decoder = self.model.get_output_embeddings()

        def stop(_module, args):
            raise _HeadInput(args[0])

        handles = [self._gather_mask(rows, cols), decoder.register_forward_pre_hook(stop)]
        try:
            self.model(**inputs)
        except _HeadInput as captured:
            return captured.hidden[:, 0, :]
        finally:
            for h in handles:
                h.remove()
        return None
