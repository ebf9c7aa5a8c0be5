"""The MC-MLM heads' learning rate: one value per model, selected on dev, where the original's is not known.

The original's lr is not in its code: ``transformer_masked_lm.jsonnet`` (alontalmor/oLMpics) reads ``#local
learning_rate = 5e-5;`` (commented out) and then ``local learning_rate = 0.0;``, and its README's MC-MLM command
sets none, so each run was given its lr on the command line. ``curve.training.lr`` is:

- a number: the heads train with it, nothing is selected (the smoke profile: 5e-5, the commented-out value);
- a list: the candidates. With the curve's own trainer, each candidate trains the curve of every MC-MLM probe's
  original variant, at the curve's sizes and its first seed, in each setting (MLP, LINEAR). The candidate with the
  highest mean WS over those (probe, setting) curves on the dev split is the model's lr for all its curves (a tie:
  the first listed). The curves are then reported on that same dev split.

:func:`evaluators.olmpics.mc_mlm.select_lr` runs the selection (``probes evaluate curve-lr``, the ``curve_lr`` stage)
and writes :func:`record` (:func:`ranked`), or :func:`fixed` for a fixed lr. :func:`chosen` reads the record back for a
curve and checks that it was made for the curve's params, :func:`head_lr` gives the heads' lr, :func:`summary` is
what a curve's metrics.json keeps of it, and :func:`describe` is the report's line."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from evaluators.shared.params import CurveTrainingParams, TrainingParams
from probekit.data.jsonl import read_json
from probekit.errors import DataError, UsageError
from probekit.tokens.refs import RANDOM

PROTOCOL = "MC-MLM lr selection"
SELECTED_BY = "WS"
"""The statistic a candidate is judged by: the curve's WS, the paper's summary of a learning curve."""


def candidates(hp: TrainingParams) -> list[float]:
    """The lr values of ``hp``: one (fixed) or the candidates a selection chooses among."""
    return hp.lrs() if isinstance(hp, CurveTrainingParams) else [hp.lr]


def fixed(model: str, lr: float, profile: str | None = None) -> dict:
    """The record of a fixed lr (a number in ``curve.training.lr``): nothing trained."""
    return {"protocol": PROTOCOL, "model": model, "lr": lr, "fixed": True, "profile": profile}


def ranked(lrs: Sequence[float], ws: Sequence[Mapping[str, Mapping[str, float]]]) -> tuple[int, list[float]]:
    """The candidate selected, by index, and each one's score: the mean of its WS over probes and settings
    (``ws[i]``: ``{probe: {setting: WS}}``); a tie keeps the first listed."""
    scores = [float(np.mean([v for by_setting in w.values() for v in by_setting.values()])) for w in ws]
    best = 0
    for i, score in enumerate(scores):
        if score > scores[best]:   # strictly
            best = i
    return best, scores


def record(*, model: str, model_id: str, lrs: Sequence[float], ws: Sequence[Mapping], probes: Mapping,
           settings: Sequence[str], sizes: Sequence[int], seed: int, split: str, hp: CurveTrainingParams,
           profile: str | None) -> dict:
    """The record of a selection among ``lrs`` (:func:`ranked`): the lr selected and each candidate's score and WS
    per probe and setting, with what it was selected on (``probes``: ``{probe: {"sizes", "n"}}``)."""
    best, scores = ranked(lrs, ws)
    return {"protocol": PROTOCOL, "model": model, "model_id": model_id, "lr": lrs[best], "fixed": False,
            "selected_by": SELECTED_BY, "split": split, "seed": seed, "sizes": list(sizes),
            "settings": list(settings), "probes": dict(probes), "at_edge": lrs[best] in (min(lrs), max(lrs)),
            "candidates": [{"lr": lr, "score": s, "WS": dict(w)} for lr, s, w in zip(lrs, scores, ws)],
            "training": hp.model_dump(mode="json"), "profile": profile}


def chosen(folder: Path, *, model: str, hp: TrainingParams, sizes: Sequence[int], seeds: Sequence[int],
           split: str) -> dict:
    """The record in ``folder`` (``metrics.json``: :func:`record` or :func:`fixed`), checked against the curve's
    params: the same model (or, for a random-init baseline ``random:<model>``, that model: the baseline's heads
    train with the lr selected for the model it stands beside, as everything else of it is the model's), and the
    same fixed lr, or the same candidates, trainer, sizes, first seed and split. A record made for other params is
    a :class:`UsageError` that says what differs."""
    path = Path(folder) / "metrics.json"
    if not path.is_file():
        raise UsageError(f"--lr-selection {folder}: no metrics.json in it (write it with `probes evaluate curve-lr`)")
    record = read_json(path)
    if record.get("protocol") != PROTOCOL:
        why = f" (skipped: {record['skipped']})" if record.get("skipped") else ""
        raise DataError(f"{path}: not an lr selection{why}")
    random = RANDOM.fullmatch(model)
    wanted, lrs = {"model": random.group("target") if random else model}, candidates(hp)
    if len(lrs) == 1 or record["fixed"]:
        wanted |= {"fixed": len(lrs) == 1, "lr": lrs[0]}
    else:
        wanted |= {"training": hp.model_dump(mode="json"), "sizes": list(sizes), "seed": seeds[0], "split": split}
    stale = [f"{key} {record.get(key)!r}, the curve's {value!r}" for key, value in wanted.items()
             if record.get(key) != value]
    if stale:
        raise UsageError(f"--lr-selection {folder}: made for other params ({'; '.join(stale)}): run `probes evaluate "
                         f"curve-lr` again")
    return record


def summary(record: Mapping) -> dict:
    """What a curve's metrics.json keeps of the record: the lr and how it was chosen."""
    if record["fixed"]:
        return {"lr": record["lr"], "fixed": True}
    keys = ("lr", "fixed", "selected_by", "split", "seed", "sizes", "settings", "at_edge")
    return {**{k: record[k] for k in keys}, "probes": sorted(record["probes"]),
            "candidates": [{"lr": c["lr"], "score": c["score"]} for c in record["candidates"]]}


def describe(chosen: Mapping) -> str:
    """The report's words for a curve's ``lr_selection`` (:func:`summary`)."""
    if chosen["fixed"]:
        return f"lr {chosen['lr']:g}, fixed (`curve.training.lr`: a number, not selected)"
    tried = ", ".join(f"{c['lr']:g} ({chosen['selected_by']} {100 * c['score']:.1f})" for c in chosen["candidates"])
    edge = "; ⚠ the smallest or largest candidate: a wider list may do better" if chosen["at_edge"] else ""
    return (f"lr {chosen['lr']:g}, selected on {chosen['split']} among {tried}: the highest mean "
            f"{chosen['selected_by']} of the original variant's {' and '.join(chosen['settings'])} curves over "
            f"{len(chosen['probes'])} MC-MLM probes (N = {', '.join(map(str, chosen['sizes']))}, seed "
            f"{chosen['seed']}; a tie: the first listed){edge}")


def head_lr(hp: TrainingParams, selected: Mapping | None) -> tuple[TrainingParams, dict]:
    """The heads' hyper-parameters with their one lr, and what metrics.json records of how it was chosen: the
    selection's (``selected``: :func:`chosen`), or the one lr ``hp`` gives (fixed)."""
    lrs = candidates(hp)
    if selected is None:
        if len(lrs) > 1:
            raise UsageError(f"curve.training.lr lists {len(lrs)} candidates: give the selection made among them "
                             f"(--lr-selection, in a grid spec `lr_selection: FOLDER`, written by `probes evaluate curve-lr`; "
                             f"or a number in curve.training.lr)")
        selected = fixed("", lrs[0])
    return TrainingParams(**{**hp.model_dump(), "lr": selected["lr"]}), summary(selected)
