"""MC-QA inputs every backend shares (the fine-tuned encoder of :mod:`evaluators.olmpics.mcqa`, the ESIM baseline of
:mod:`evaluators.olmpics.mcqa_esim`): one (stem, choice) pair per choice, and one split encoded once."""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


class Encoded(NamedTuple):
    """One split of one variant, encoded once: example i's pairs are rows ``starts[i]:starts[i + 1]``."""
    starts: np.ndarray   # [examples + 1]
    gold: np.ndarray     # [examples] index of the gold choice
    pairs: tuple         # the backend's per-pair arrays


def pair_texts(rows: Sequence[dict]) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Stems and choices, one entry per pair; ``starts`` and ``gold`` of :class:`Encoded`."""
    stems, choices, counts, gold = [], [], [], []
    for row in rows:
        labels = [c["label"] for c in row["question"]["choices"]]
        stems += [row["question"]["stem"]] * len(labels)
        choices += [c["text"] for c in row["question"]["choices"]]
        counts.append(len(labels))
        gold.append(labels.index(row["answerKey"]))
    return stems, choices, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), np.asarray(gold, np.int64)
