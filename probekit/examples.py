"""The example schema: the oLMpics layout plus ``probe``, ``variant``, ``template_id`` and ``args``."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from datasets import Dataset, DatasetDict

LABELS = "ABCDEFGHIJ"
SPLITS = ("train", "dev")


def example_id(probe: str, variant: str, template_id: str, stem: str, choices: Sequence[str], answer: str) -> str:
    """A stable id derived from content only (32 hex digits, like the release's)."""
    key = json.dumps([probe, variant, template_id, stem, list(choices), answer], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def make_example(*, probe: str, variant: str, template_id: str, stem: str, choices: Sequence[str],
                 answer: str, args: Mapping[str, Any], rng: random.Random | None = None) -> dict:
    """Build one multiple-choice example; ``rng`` shuffles the choice order (``None`` keeps it)."""
    if answer not in choices:
        raise ValueError(f"answer {answer!r} is not among the choices {list(choices)}")
    order = list(choices)
    if rng is not None:
        rng.shuffle(order)
    labelled = [{"label": LABELS[i], "text": text} for i, text in enumerate(order)]
    return {
        "id": example_id(probe, variant, template_id, stem, order, answer),
        "question": {"stem": stem, "choices": labelled},
        "answerKey": LABELS[order.index(answer)],
        "probe": probe,
        "variant": variant,
        "template_id": template_id,
        "args": dict(args),
    }


def answer_text(example: Mapping) -> str:
    """The text of the gold choice."""
    return next(c["text"] for c in example["question"]["choices"] if c["label"] == example["answerKey"])


def label_distribution(rows: Iterable[Mapping]) -> dict[str, int]:
    """Counts of gold answer texts, key-sorted."""
    return dict(sorted(Counter(answer_text(r) for r in rows).items()))


def to_dataset_dict(splits: Mapping[str, list[dict]]) -> DatasetDict:
    """Rows per split -> ``DatasetDict``; refuses duplicate ids within a split."""
    for split, rows in splits.items():
        ids = Counter(r["id"] for r in rows)
        dups = [i for i, n in ids.items() if n > 1]
        if dups:
            raise ValueError(f"split {split!r}: {len(dups)} duplicate example id(s), e.g. {dups[0]}")
    return DatasetDict({split: Dataset.from_list(rows) for split, rows in splits.items()})
