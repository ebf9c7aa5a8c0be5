"""Constant predictors in the oLMpics curves: a run (one training size and seed, or the untrained head's zero-shot
point) whose model gave one answer to every dev example of a variant, the same word (MiniLM's `younger` on all
500 age examples, whose choice order is shuffled) or the same position (always the first choice, as ties give).
Its accuracy is the share of examples whose gold is that answer, not knowledge, so the report flags it, as CALUM's
report flags a constant predictor.

Read from the predictions a curve writes (:func:`evaluators.olmpics.learning_curve.prediction_rows`): per example
``choices`` (the texts in order), ``predicted`` (``{N: [position chosen, per seed]}``) and ``zero_shot_predicted``.
Predictions written before they were recorded have none: nothing can be told, and nothing is flagged."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from evaluators.shared.report import constant_choice
from probekit.errors import DataError


@dataclass
class Answers:
    """What a variant's model chose on each dev example."""

    predicted: np.ndarray          # [seeds, sizes, n] the chosen choice's position
    words: list[list[str]]         # each example's choice texts, in order
    zero_shot: list[int] | None    # the untrained head's choices (None: no zero-shot point)


def read(rows: Sequence[dict], sizes: Sequence[int], seeds: Sequence, path: Path) -> Answers | None:
    """The :class:`Answers` of a predictions file's parsed ``rows``, or None when it records none."""
    if not rows or "predicted" not in rows[0]:
        return None
    try:
        predicted = np.asarray([[row["predicted"][str(n)] for n in sizes] for row in rows], np.int64)
        words = [list(row["choices"]) for row in rows]
        zero = [row.get("zero_shot_predicted") for row in rows]
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: `predicted` needs one position per size and seed, and `choices` ({exc})") from None
    if predicted.shape != (len(rows), len(sizes), len(seeds)):
        raise DataError(f"{path}: `predicted` needs one position per seed ({len(seeds)}) and size ({len(sizes)})")
    if any(not 0 <= p < len(w) for row, w in zip(predicted, words) for p in row.ravel()):
        raise DataError(f"{path}: a `predicted` position is not one of its row's choices")
    return Answers(predicted.transpose(2, 1, 0), words, None if None in zero else [int(z) for z in zero])


def _answer(positions: Sequence[int], words: list[list[str]]) -> str | None:
    return constant_choice(list(positions), [w[p] for w, p in zip(words, positions)])


def runs(answers: Answers | None, sizes: Sequence[int], seeds: Sequence) -> dict:
    """``{zero_shot: answer or None, runs: [(N, seed, answer)], of: runs in all}``: the points of the curve whose
    model answered one choice throughout (:func:`evaluators.shared.report.constant_choice` says which)."""
    if answers is None:
        return {"zero_shot": None, "runs": [], "of": len(sizes) * len(seeds)}
    found = [(n, seed, what) for s, seed in enumerate(seeds) for k, n in enumerate(sizes)
             if (what := _answer(answers.predicted[s, k], answers.words))]
    zero = None if answers.zero_shot is None else _answer(answers.zero_shot, answers.words)
    return {"zero_shot": zero, "runs": found, "of": len(sizes) * len(seeds)}


def described(found: dict) -> str:
    """One variant's constant points in words: ``zero-shot (`younger`); 2 of 2 runs (N = 62 seed 1: `younger`, ...)``."""
    parts = [f"zero-shot ({found['zero_shot']})"] if found["zero_shot"] else []
    if found["runs"]:
        parts.append(f"{len(found['runs'])} of {found['of']} runs (" + ", ".join(
            f"N = {n} seed {seed}: {what}" for n, seed, what in found["runs"]) + ")")
    return "; ".join(parts)
