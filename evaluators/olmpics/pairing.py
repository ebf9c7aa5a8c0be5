"""Which row of one file is which row of another: the pairing the curves' controls and the report's paired
bootstrap share (a module of its own, so the report reads it without the curves' training code)."""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Sequence

import numpy as np


def pair_rows(ids: Sequence[str], keys: Sequence[str]) -> np.ndarray:
    """For each of ``ids``, the position in ``keys`` of its partner, or -1: the k-th occurrence of an id pairs
    with its k-th occurrence in ``keys`` (release files repeat ids)."""
    queues: dict[str, deque] = defaultdict(deque)
    for j, key in enumerate(keys):
        queues[key].append(j)
    return np.asarray([queues[i].popleft() if queues[i] else -1 for i in ids], np.int64)
