"""A shard of the results browser: one scored dataset (a dataset file; a ParaRel relation; a CALUM task's variant)
with every run's answers as columns of arrays, the bytes the page reads (``preds.bin``), its rows (``rows.json``)
and its runs' accuracies with their 95% bootstrap intervals.

``preds.bin`` holds one block per run (little-endian): ``int32 pred[n]`` (the chosen choice's position, or for an
open answer its position in the shard's ``vocab``; -1: no answer), ``float32 margin[n]`` (NaN: none), ``uint8
correct[n]`` (1, 0; 255: no answer), padding to 4 bytes, then ``float32 scores[n * k]`` (per choice, NaN padded)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from evaluators.predictions import Answer, Dataset, PredictionFile
from evaluators.browse.pairs import resampled_groups
from probekit.data.units import fact_unit


@dataclass
class Shard:
    """One dataset's rows (those some run answered, in file order) and its runs' answers as arrays."""

    id: str
    dataset: Dataset
    rows: list[dict]
    runs: list[str]
    files: list[PredictionFile]
    pred: np.ndarray          # int32 [M, n]
    margin: np.ndarray        # float32 [M, n]
    correct: np.ndarray       # bool [M, n]
    answered: np.ndarray      # bool [M, n]
    scores: np.ndarray        # float32 [M, n, k]
    vocab: list[str] = field(default_factory=list)

    @property
    def units(self) -> list[str]:
        """The unit each row's intervals resample (:mod:`evaluators.shared.bootstrap`): a ParaRel tuple under all its
        patterns, a CALUM pair (``group``), an oLMpics fact (:func:`probekit.data.units.fact_unit`: one fact under
        several templates, and its control rows, one unit)."""
        return [str(r.get("group") or fact_unit(r)) for r in self.rows]

    @property
    def k(self) -> int:
        return self.scores.shape[2]

    @property
    def block(self) -> int:
        n = len(self.rows)
        return 8 * n + _pad4(n) + 4 * n * self.k

    def block_bytes(self, r: int) -> bytes:
        n = len(self.rows)
        correct = np.where(self.answered[r], self.correct[r].astype(np.uint8), 255).astype(np.uint8)
        parts = [self.pred[r].astype("<i4").tobytes(), self.margin[r].astype("<f4").tobytes(), correct.tobytes(),
                 b"\0" * (_pad4(n) - n), self.scores[r].astype("<f4").tobytes()]
        return b"".join(parts)


def _pad4(n: int) -> int:
    return (n + 3) // 4 * 4


def make_shard(id_: str, ds: Dataset, rows: list[dict], runs: dict[str, tuple[PredictionFile, dict[str, Answer]]]
               ) -> Shard:
    """The shard of ``ds``: ``rows`` (all of the dataset's) cut to those some run answered."""
    answered_ids = set().union(*(answers.keys() for _, answers in runs.values()))
    rows = [r for r in rows if r["id"] in answered_ids]
    ids = [r["id"] for r in rows]
    labels = list(runs)
    m, n = len(labels), len(rows)
    k = max((len(r["choices"]) for r in rows if r["choices"]), default=0)
    has_scores = any(a.scores is not None for _, answers in runs.values() for a in answers.values())
    k = k if has_scores else 0
    pred = np.full((m, n), -1, np.int32)
    margin = np.full((m, n), np.nan, np.float32)
    correct = np.zeros((m, n), bool)
    answered = np.zeros((m, n), bool)
    scores = np.full((m, n, k), np.nan, np.float32)
    gold = np.array([r["gold"] if r["gold"] is not None else -1 for r in rows], np.int64)
    vocab: dict[str, int] = {}
    open_answers = ds.family != "mc"
    blank = [math.nan] * k
    for r, label in enumerate(labels):
        _, answers = runs[label]
        got = [answers.get(i) for i in ids]
        answered[r] = [a is not None for a in got]
        correct[r] = [a is not None and bool(a.correct) for a in got]
        margin[r] = [a.margin if a is not None and a.margin is not None else math.nan for a in got]
        if open_answers:
            pred[r] = [vocab.setdefault(a.predicted, len(vocab)) if a is not None and a.predicted is not None
                       else -1 for a in got]
        else:
            pred[r] = [a.index if a is not None and a.index is not None else -1 for a in got]
        if k:
            scores[r] = [(a.scores + blank)[:k] if a is not None and a.scores else blank for a in got]
            margin[r] = np.where(np.isnan(margin[r]), margins(scores[r], gold), margin[r])
    return Shard(id_, ds, rows, labels, [runs[label][0] for label in labels], pred, margin, correct, answered,
                 scores, list(vocab))


def margins(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Per row, the gold choice's score minus the best other choice's (:func:`evaluators.predictions.records.margin`
    for a ``[n, k]`` array, NaN padded); NaN where a row has no gold, no score for it, or fewer than two scores."""
    n, k = scores.shape
    ok = (gold >= 0) & (gold < k)
    at = np.where(ok, gold, 0)
    own = scores[np.arange(n), at]
    others = scores.copy()
    others[np.arange(n), at] = np.nan
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a row of NaNs: no other choice
        best = np.nanmax(others, axis=1) if k else np.full(n, np.nan)
    return np.where(ok, own - best, np.nan).astype(np.float32)


def run_summaries(shard: Shard, *, resamples: int = 1000, seed: int = 0, level: float = 0.95,
                  groups: list | None = None) -> list[dict]:
    """Per run: ``n`` (examples answered), ``correct``, ``accuracy`` and its percentile bootstrap interval ``low``,
    ``high`` (:mod:`evaluators.shared.bootstrap`, the resamples the reports draw, on the examples the run answered,
    resampling :attr:`Shard.units`),
    ``constant`` (one answer text for every example: a constant predictor, whatever its accuracy). ``groups``:
    :func:`evaluators.browse.pairs.resampled_groups` of the shard, when drawn already."""
    if groups is None:
        groups = resampled_groups(shard.correct, shard.answered, resamples=resamples, seed=seed, units=shard.units)
    bounds = {}
    for members, acc in groups:
        if acc is not None:
            lo, hi = np.quantile(acc, [(1 - level) / 2, (1 + level) / 2], axis=0)
            bounds.update({a: (float(lo[j]), float(hi[j])) for j, a in enumerate(members)})
    out = []
    for r, label in enumerate(shard.runs):
        got = shard.answered[r]
        n = int(got.sum())
        c = int((shard.correct[r] & got).sum())
        low, high = bounds.get(r, (math.nan, math.nan))
        out.append({"label": label, "n": n, "correct": c, "accuracy": c / n if n else None,
                    "low": _num(low), "high": _num(high), "constant": _constant(shard, r)})
    return out


def _constant(shard: Shard, r: int) -> bool:
    """Whether run ``r`` gave one answer text to every example it answered (two or more of them)."""
    got = np.flatnonzero(shard.answered[r])
    if len(got) < 2:
        return False
    if shard.dataset.family != "mc":
        return len(set(shard.pred[r, got].tolist())) == 1
    texts = {shard.rows[i]["choices"][p] if 0 <= p < len(shard.rows[i]["choices"]) else None
             for i, p in zip(got.tolist(), shard.pred[r, got].tolist())}
    return len(texts) == 1


def _num(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)
