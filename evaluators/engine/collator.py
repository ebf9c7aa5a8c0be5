"""The one collator of every scoring rule: items sorted longest first, packed into batches by the forward
rows they cost, padded on the right from arrays, their results put back in input order.

lm-evaluation-harness's ``Collator`` does the same with Python lists per batch; here padding happens once, on
whole arrays, and a batch is a slice of them; the runner streams batches to the device a few at a time
(``Device``: ``non_blocking`` from pinned memory on CUDA).
"""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

import numpy as np
import torch


def pad_right(seqs: Sequence[Sequence[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """``[N, longest]`` int64 ids padded on the right with ``pad``, and the lengths; vectorised."""
    lengths = np.fromiter(map(len, seqs), np.int64, len(seqs))
    out = np.full((len(seqs), int(lengths.max(initial=0))), pad, dtype=np.int64)
    out[np.arange(out.shape[1]) < lengths[:, None]] = np.fromiter(itertools.chain.from_iterable(seqs), np.int64,
                                                                  int(lengths.sum()))
    return out, lengths


class Collator:
    """Batches of items in descending length, each at most ``batch_size`` rows (an item costing more rows
    than that is a batch of its own). ``len()`` is the number of batches."""

    def __init__(self, lengths: np.ndarray, batch_size: int, rows: np.ndarray | None = None):
        if batch_size < 1:
            raise ValueError(f"batch size must be positive, got {batch_size}")
        lengths = np.asarray(lengths)
        rows = np.ones(len(lengths), np.int64) if rows is None else np.asarray(rows)
        self.order = np.argsort(-lengths, kind="stable")  # ties keep input order: deterministic
        self.bounds, start, used = [], 0, 0
        for i, r in enumerate(rows[self.order].tolist()):
            if i > start and used + r > batch_size:
                self.bounds.append((start, i))
                start, used = i, 0
            used += r
        if len(lengths):
            self.bounds.append((start, len(lengths)))

    def __len__(self) -> int:
        return len(self.bounds)

    def __iter__(self) -> Iterator[np.ndarray]:
        """Each batch: the input positions of its items, longest first."""
        for start, stop in self.bounds:
            yield self.order[start:stop]

    def restore(self, values: np.ndarray) -> np.ndarray:
        """Values given per item in batch order (the batches concatenated) back in input order."""
        return put_back(values, [self.order])


def put_back(values: np.ndarray, batches: Sequence[np.ndarray]) -> np.ndarray:
    """``values`` given in batch order (the items of ``batches`` concatenated) back in input order."""
    out = np.empty_like(values)
    out[np.concatenate(batches) if len(batches) else np.zeros(0, np.int64)] = values
    return out


def capped_groups(keys: Sequence, cap: int) -> tuple[np.ndarray, list[int]]:
    """Rows with equal keys (a causal context, an encoder input) grouped, each group holding ``cap`` rows at
    most (a larger set of rows is split): every row's group, and each group's first row."""
    open_group: dict = {}
    sizes, first, group_of = [], [], []
    for row, key in enumerate(keys):
        group = open_group.get(key)
        if group is None or sizes[group] == cap:
            group = open_group[key] = len(first)
            first.append(row)
            sizes.append(0)
        sizes[group] += 1
        group_of.append(group)
    return np.asarray(group_of, np.int64), first


class Device:
    """Where batches go: pinned host memory and ``non_blocking`` copies on CUDA, plain tensors on CPU. The
    runner copies a batch only shortly before it runs (``Runner.in_flight``), so pinned and device memory hold
    a few batches, not a whole call's."""

    def __init__(self, device: torch.device):
        self.device = device
        self.pin = device.type == "cuda"

    def __call__(self, array: np.ndarray) -> torch.Tensor:
        tensor = torch.from_numpy(np.ascontiguousarray(array))
        if self.pin:
            tensor = tensor.pin_memory()
        return tensor.to(self.device, non_blocking=True)


def batch_ids(ids: np.ndarray, lengths: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One batch's ids cut to its longest item, and its attention mask."""
    width = int(lengths[index].max())
    return ids[index, :width], mask_of(lengths[index], width)


def grouped_batches(group_of: np.ndarray, group_lengths: np.ndarray,
                    batch_size: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Batches of groups, for rows that share a context (an encoder input, a causal prefix) run once per batch:
    ``(groups, rows, local)`` with ``rows`` the batch's rows group by group and ``local[i]`` the position in
    ``groups`` of row ``rows[i]``'s group. Groups sort by ``group_lengths``; a batch holds ``batch_size`` rows
    at most unless one group alone has more."""
    rows_of = np.argsort(group_of, kind="stable")
    bounds = np.searchsorted(group_of[rows_of], np.arange(len(group_lengths) + 1))
    sizes = np.diff(bounds)
    out = []
    for groups in Collator(group_lengths, batch_size, rows=sizes):
        rows = np.concatenate([rows_of[bounds[g]:bounds[g + 1]] for g in groups])
        out.append((groups, rows, np.repeat(np.arange(len(groups)), sizes[groups])))
    return out


def mask_of(lengths: np.ndarray, width: int) -> np.ndarray:
    """Attention mask ``[len(lengths), width]`` of right-padded rows."""
    return (np.arange(width) < lengths[:, None]).astype(np.int64)
