"""The batch loop every rule shares: ready batches moved to the device before the loop, one ``step`` per batch
under ``inference_mode``, outputs kept on the device and copied to the host once; and the log-probability
of target tokens that the likelihood rules sum."""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from evaluators.engine.collator import Collator, Device, batch_ids, pad_right

log = logging.getLogger("probekit")
CPU_BATCH_SIZE = 64
"""``--batch-size auto`` on a CPU: throughput is flat from 32 to 256 rows there (bench/zeroshot.py)."""
CUDA_START_BATCH_SIZE = 1024
"""``--batch-size auto`` on CUDA starts here and halves on out-of-memory."""


class Runner:
    def __init__(self, model, tokenizer, *, batch_size: int | str = "auto", progress: bool = False):
        self.model, self.tokenizer, self.progress = model, tokenizer, progress
        self.device = next(model.parameters()).device
        self.auto = batch_size == "auto"
        self.batch_size = (CPU_BATCH_SIZE if self.device.type == "cpu" else CUDA_START_BATCH_SIZE) if self.auto \
            else int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"batch size must be positive, got {batch_size}")
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)  # padding is masked anyway
        self.to_device = Device(self.device)

    @torch.inference_mode()
    def run(self, batches: Sequence[tuple[np.ndarray, ...]], step: Callable[..., torch.Tensor],
            desc: str) -> np.ndarray:
        """``step(*tensors)`` per batch, in order; the outputs concatenated along the first axis."""
        moved = [tuple(self.to_device(array) for array in batch) for batch in batches]
        outputs = [step(*batch) for batch in tqdm(moved, desc=desc, unit="batch", disable=not self.progress)]
        return torch.cat(outputs).cpu().numpy() if outputs else np.zeros((0,), np.float32)

    def over_sequences(self, sequences: Sequence[Sequence[int]], step: Callable[..., torch.Tensor], desc: str, *,
                       padded: Sequence[np.ndarray] = (), per_item: Sequence[np.ndarray] = ()) -> np.ndarray:
        """``step(input_ids, attention_mask, *padded, *per_item)`` over ``sequences`` padded on the right and
        batched longest first; outputs in input order. ``padded``: more ``[N, longest]`` arrays, cut to each
        batch's width like the ids (segment ids); ``per_item``: arrays with one entry per sequence."""
        ids, lengths = pad_right(sequences, self.pad_id)
        collator = Collator(lengths, self.batch_size)
        batches = []
        for b in collator:
            input_ids, mask = batch_ids(ids, lengths, b)
            width = input_ids.shape[1]
            batches.append((input_ids, mask, *(p[b, :width] for p in padded), *(c[b] for c in per_item)))
        return collator.restore(self.run(batches, step, desc))

    def fitting(self, work: Callable[[], np.ndarray]) -> np.ndarray:
        """``work()``; with ``--batch-size auto`` on a GPU, the batch size halves until it fits in memory
        (the first batch holds the longest items, so it fails first)."""
        while True:
            try:
                return work()
            except torch.OutOfMemoryError:
                if not self.auto or self.batch_size == 1:
                    raise
                self.batch_size //= 2
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
                log.info("batch size auto: out of memory, trying %d", self.batch_size)


def token_log_probs(logits: torch.Tensor, targets: torch.Tensor, chunk: int = 1 << 24) -> torch.Tensor:
    """log p(target) at each position, in float32, without materialising a second vocabulary-wide tensor: a
    reduced-precision (bf16, fp16) tensor is upcast about ``chunk`` elements (whole entries of its first
    dimension) at a time, never all at once."""
    if logits.dtype == torch.float32:
        return logits.gather(-1, targets[..., None])[..., 0] - logits.logsumexp(-1)
    picked = logits.gather(-1, targets[..., None])[..., 0].float()
    per_item = max(1, logits[:1].numel())  # elements of one entry of the first dimension
    norm = [part.float().logsumexp(-1) for part in logits.split(max(1, chunk // per_item))]
    return picked - (torch.cat(norm) if norm else picked)
