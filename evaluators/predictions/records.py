"""A prediction file's answers, one shape for every protocol: per dataset it scored (a :class:`Dataset`) and per run
(a curve's file holds a run per training size and seed, CALUM's one per seed), each example's :class:`Answer`.

The margin of an answer is the score of the gold choice minus the best score of the other choices: positive when the
model is right, its size how far the gold answer is ahead (or behind). It needs every choice's score; a protocol
that writes none (the curves, MC-QA, CALUM) has no margin (NaN). For ParaRel the scores are the top k of the
candidate set: the margin is known when the gold object is among them (then the best other candidate is too)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from evaluators.predictions.files import PredictionFile
from probekit.data.jsonl import lines, loads
from probekit.errors import UsageError


@dataclass(frozen=True)
class Dataset:
    """What a set of answers scored: ``family`` (``mc``, ``pararel``, ``calum``), ``collection`` (``probes``,
    ``grids``, ``release``, ``pararel``, ``calum``), ``probe`` (ParaRel: ``pararel``; CALUM: the task), ``variant``
    (ParaRel: the relation; CALUM: ``original``/``reverse``/``signal``...), ``split`` and ``path`` (the file or
    folder its rows are read from)."""

    family: str
    collection: str
    probe: str
    variant: str
    split: str
    path: str


@dataclass(slots=True)
class Answer:
    """One run's answer to one example: ``predicted`` (the answer text), ``index`` (its choice's position in the
    row's choices; None for an open answer), ``correct``, ``margin`` (see the module: ParaRel's from its top k; a
    multiple-choice answer's from ``scores`` and the row's gold, :func:`margin`, where it is read beside its row) and
    ``scores`` (per choice, in the row's choice order; None when the protocol writes none)."""

    predicted: str | None
    index: int | None
    correct: bool
    margin: float = math.nan
    scores: list[float] | None = None


def _lines(path: Path) -> list[dict]:
    out = []
    try:
        for n, line in lines(path, error=UsageError):
            try:
                row = loads(line, f"{path}:{n}", UsageError)
            except json.JSONDecodeError:
                raise UsageError(f"{path}:{n}: not JSON (a predictions file has one JSON object per line)") from None
            if not isinstance(row, dict):
                raise UsageError(f"{path}:{n}: not a JSON object")
            out.append(row)
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc.__class__.__name__})") from None
    return out


def _need(row: dict, keys: tuple[str, ...], path: Path, n: int) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise UsageError(f"{path}:{n}: no {', '.join(repr(k) for k in missing)} (a {path.parent.name} prediction "
                         f"has {', '.join(keys)})")


def margin(scores, gold: int) -> float:
    """``scores[gold]`` minus the best other score; NaN without scores or with one choice."""
    if not scores or gold is None or not 0 <= gold < len(scores) or len(scores) < 2:
        return math.nan
    others = [s for i, s in enumerate(scores) if i != gold]
    return float(scores[gold]) - float(max(others))


def collection_of(path: str | None) -> str:
    """The collection a dataset file belongs to, by its folder: ``data/probes/...`` is ``probes``,
    ``data/grids/...`` ``grids``, anything else (an original release file) ``release``."""
    parts = Path(path).parts if path else ()
    for name in ("probes", "grids", "pararel", "calum"):
        if name in parts[:-1]:
            return name
    return "release"


def read_answers(pf: PredictionFile) -> dict[tuple[Dataset, str], dict[str, Answer]]:
    """``{(dataset, run label): {example id: answer}}`` of one prediction file (ids as the dataset's rows have
    them; ParaRel: ``<tuple_id>/<pattern_id>``)."""
    rows = _lines(pf.path)
    return {"mc": _mc, "pararel": _pararel, "calum": _calum}[pf.family](pf, rows)


def _mc(pf: PredictionFile, rows: list[dict]):
    data = str(pf.data) if pf.data else ""
    ds = Dataset("mc", collection_of(data), pf.probe or "?", pf.variant or ("release" if pf.protocol == "release"
                                                                            else "?"), pf.split or "dev", data)
    out: dict[tuple[Dataset, str], dict[str, Answer]] = {}
    if pf.protocol in ("curve", "mcqa"):
        seeds = pf.meta.get("seeds") or [None]
        name = {"mlp": "MLP", "linear": "LINEAR", "mcqa": "MC-QA"}.get(pf.setting or "", pf.setting or "")
        for n, row in enumerate(rows, 1):
            _need(row, ("id", "gold", "choices", "predicted"), pf.path, n)
            gold = _label_index(row["gold"])
            for size, picks in sorted(row["predicted"].items(), key=lambda kv: int(kv[0])):
                for s, pick in enumerate(picks):
                    seed = seeds[s] if s < len(seeds) else s + 1
                    label = f"{pf.label} {name} N={size} seed {seed}"
                    idx = int(pick) if pick is not None else None
                    text = row["choices"][idx] if idx is not None and 0 <= idx < len(row["choices"]) else None
                    out.setdefault((ds, label), {})[row["id"]] = Answer(text, idx, idx is not None and idx == gold)
        return out
    answers = {}
    labels = LABELS
    for n, row in enumerate(rows, 1):
        if "id" not in row or "prediction" not in row:
            _need(row, ("id", "prediction"), pf.path, n)
        idx = labels.get(row["prediction"])
        correct = row.get("correct")
        if correct is not True and correct is not False:
            correct = idx is not None and idx == labels.get(row.get("gold"))
        scores = row.get("scores")
        answers[row["id"]] = Answer(row.get("choice"), idx, correct, math.nan,
                                    scores if isinstance(scores, list) else None)
    out[(ds, pf.label)] = answers
    return out


LABELS = {chr(ord("A") + i): i for i in range(26)}
"""A choice label (``A``, ``B``...) and its position."""


def _label_index(label) -> int | None:
    """A choice label's position; None for anything else."""
    return LABELS.get(label) if isinstance(label, str) else None


def _pararel(pf: PredictionFile, rows: list[dict]):
    data = str(pf.data) if pf.data else ""
    out: dict[tuple[Dataset, str], dict[str, Answer]] = {}
    for n, row in enumerate(rows, 1):
        _need(row, ("relation", "tuple_id", "pattern_id", "prediction", "gold"), pf.path, n)
        ds = Dataset("pararel", "pararel", "pararel", row["relation"], pf.split or "all", data)
        top = [(str(t), float(s)) for t, s in row.get("top_k") or []]
        scores = dict(top)
        m = math.nan
        if row["gold"] in scores and len(top) > 1:
            m = scores[row["gold"]] - max(s for t, s in top if t != row["gold"])
        correct = bool(row["correct"]) if isinstance(row.get("correct"), bool) else row["prediction"] == row["gold"]
        out.setdefault((ds, pf.label), {})[f"{row['tuple_id']}/{row['pattern_id']}"] = Answer(
            row["prediction"], None, correct, m)
    return out


def _calum(pf: PredictionFile, rows: list[dict]):
    folders = {t: (d or {}).get("folder") for t, d in (pf.meta.get("data") or {}).items()}
    labels = list(pf.meta.get("labels") or [])
    out: dict[tuple[Dataset, str], dict[str, Answer]] = {}
    for n, row in enumerate(rows, 1):
        _need(row, ("task", "pair_id", "variant", "prediction", "label"), pf.path, n)
        task, split = row["task"], pf.split or "dev"
        folder = folders.get(task) or f"data/calum/{task}"
        ds = Dataset("calum", "calum", task, row["variant"], split, f"{folder}/{row['variant']}/{split}.jsonl")
        label = f"{pf.label} seed {row['seed']}" if row.get("seed") is not None else pf.label
        idx = labels.index(row["prediction"]) if row["prediction"] in labels else None
        out.setdefault((ds, label), {})[row["pair_id"]] = Answer(row["prediction"], idx,
                                                                 row["prediction"] == row["label"])
    return out
