"""The batch loop every rule shares: batches streamed to the device a few at a time (``IN_FLIGHT``), one ``step``
per batch under ``inference_mode``, each output copied to the host as it comes, so the device holds O(1)
batches whatever the call's size; the out-of-memory retry of ``--batch-size auto``; and the log-probability
of target tokens that the likelihood rules sum."""

from __future__ import annotations

import logging
from collections import deque
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from evaluators.engine.collator import Collator, Device, batch_ids, pad_right

log = logging.getLogger("probekit")
CPU_BATCH_SIZE = 64
"""``--batch-size auto`` on a CPU: throughput is flat from 32 to 256 rows there (bench/zeroshot.py)."""
CUDA_START_BATCH_SIZE = 1024
"""``--batch-size auto`` on CUDA starts here and halves on out-of-memory."""
IN_FLIGHT = 2
"""Batches on the device at once: the one running and the next, already copied (``non_blocking``, pinned)."""


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
        self.in_flight = IN_FLIGHT
        self.retry_oom = self.auto and self.device.type != "cpu"

    @torch.inference_mode()
    def run(self, batches: Iterable[tuple[np.ndarray, ...]], step: Callable[..., torch.Tensor], desc: str, *,
            total: int | None = None) -> np.ndarray:
        """``step(*tensors)`` per batch, in order; the outputs concatenated along the first axis. Batches are
        copied ahead of the one running, ``in_flight`` on the device at most (the running one included), and
        each output goes to the host as it comes. ``total``: the number of batches, for the progress bar
        (``len(batches)`` when it has one)."""
        source, pending, outputs = iter(batches), deque(), []

        def fill() -> None:
            while len(pending) < self.in_flight and (batch := next(source, None)) is not None:
                pending.append(tuple(self.to_device(array) for array in batch))

        fill()
        with tqdm(total=len(batches) if total is None else total, desc=desc, unit="batch",
                  disable=not self.progress) as bar:
            while pending:
                batch = pending.popleft()
                out = step(*batch)
                del batch  # released before the next copy: in_flight batches on the device, not one more
                fill()  # on CUDA queued behind this step's kernels, pinned on the host while they run
                outputs.append(out.cpu())
                bar.update()
        return torch.cat(outputs).numpy() if outputs else np.zeros((0,), np.float32)

    def over_sequences(self, sequences: Sequence[Sequence[int]], step: Callable[..., torch.Tensor], desc: str, *,
                       padded: Sequence[np.ndarray] = (), per_item: Sequence[np.ndarray] = ()) -> np.ndarray:
        """``step(input_ids, attention_mask, *padded, *per_item)`` over ``sequences`` padded on the right and
        batched longest first; outputs in input order. ``padded``: more ``[N, longest]`` arrays, cut to each
        batch's width like the ids (segment ids); ``per_item``: arrays with one entry per sequence."""
        ids, lengths = pad_right(sequences, self.pad_id)
        collator = Collator(lengths, self.batch_size)

        def batches() -> Iterator[tuple[np.ndarray, ...]]:  # cut as the loop reaches them, not all at once
            for b in collator:
                input_ids, mask = batch_ids(ids, lengths, b)
                width = input_ids.shape[1]
                yield input_ids, mask, *(p[b, :width] for p in padded), *(c[b] for c in per_item)

        return collator.restore(self.run(batches(), step, desc, total=len(collator)))

    def fitting(self, work: Callable[[], np.ndarray]) -> np.ndarray:
        """``work()``, which reads ``self.batch_size`` (its collator is built inside it). With
        ``--batch-size auto`` on a GPU (``retry_oom``), accelerate's ``find_executable_batch_size`` reruns it
        with the batch size halved on out-of-memory (the first batch holds the longest items, so it fails
        first) until it fits, and the size that fit is kept for the next call; at 1 the error is raised. Not on
        a CPU: a CPU out of memory is the kernel's OOM killer rather than an exception, and the wrapper runs
        ``gc.collect()`` on every call (0.1-0.5 s in a process holding a model)."""
        if not self.retry_oom:
            return work()
        from accelerate.utils import find_executable_batch_size  # 0.3-0.6 s of imports: only when it retries

        def attempt(batch_size: int) -> np.ndarray:
            self.batch_size = batch_size
            return work()

        def halve() -> int:  # called while accelerate handles the out-of-memory error
            if self.batch_size == 1:
                raise  # that error, as without the retry
            log.info("batch size auto: out of memory, trying %d", self.batch_size // 2)
            return self.batch_size // 2

        return find_executable_batch_size(attempt, self.batch_size, reduce_batch_size_fn=halve)()


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
