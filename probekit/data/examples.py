"""The example schema: the oLMpics layout plus ``probe``, ``variant``, ``template_id`` and ``args``."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from probekit.errors import DataError, shown

MASK = "[MASK]"
"""The blank of an MC-MLM stem: the one token a choice fills."""

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
        raise ValueError(f"answer {shown(answer)} is not among the choices {list(choices)}")
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


def check_unique_ids(splits: Mapping[str, list[dict]]) -> None:
    """Refuse duplicate ids within a split."""
    for split, rows in splits.items():
        dups = [i for i, n in Counter(r["id"] for r in rows).items() if n > 1]
        if dups:
            raise ValueError(f"split {shown(split)}: {len(dups)} duplicate example id(s), e.g. {dups[0]}")


def example_problem(row: Any) -> str | None:
    """What makes ``row`` unusable as a multiple-choice example, or None (the fields the evaluators read)."""
    if not isinstance(row, Mapping):
        return "not a JSON object"
    for key in ("id", "question", "answerKey"):
        if key not in row:
            return f"missing field {shown(key)}"
    question = row["question"]
    if not isinstance(question, Mapping) or not isinstance(question.get("stem"), str):
        return "field 'question.stem' missing or not a string"
    choices = question.get("choices")
    if not isinstance(choices, list) or len(choices) < 2 or not all(
            isinstance(c, Mapping) and isinstance(c.get("label"), str) and isinstance(c.get("text"), str)
            for c in choices):
        return "field 'question.choices' must be a list of at least two {label, text} objects"
    labels = [c["label"] for c in choices]
    if len(set(labels)) != len(labels):
        return f"repeated choice labels {labels}"
    if row["answerKey"] not in labels:
        return f"answerKey {shown(row['answerKey'])} is not one of the choice labels {labels}"
    return None


def check_examples(rows: Sequence[Mapping], lines: Sequence[int], path: Any) -> None:
    """Raise ``DataError`` naming ``path`` and the line of the first unusable row, or of an empty file."""
    if not rows:
        raise DataError(f"{path}: no examples in the file")
    for row, line in zip(rows, lines):
        problem = example_problem(row)
        if problem:
            raise DataError(f"{path}:{line}: {problem}")
