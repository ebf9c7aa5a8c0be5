"""What every learning-curve protocol (MC-MLM heads, MC-QA, the baselines) shares: nested seeded training
subsets, the curve's statistics (WS, MAX, language sensitivity, mean ± std over seeds), and its result files.

Subsets are nested: for one seed, the training examples are one seeded permutation of the training split,
and the subset of size N is its first N, so the 62 examples are inside the 125 and a curve measures more
data, not different data. A control variant (NO-LANG, PERTURBED-LANG) trains on the rows derived from the
same original examples (``source_id``), so the control curve differs from the full one only in its language.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from probekit import atomic
from probekit.errors import DataError

from .metrics import max_score, sensitivity, summary, weighted_score, ws_weights

log = logging.getLogger("probekit")
CONTROLS = ("nolang", "perturbed")
"""The control variants a curve is compared with, when the probe has them (probekit/controls.py)."""


def sizes_that_fit(sizes: Sequence[int], n_train: int, where: str) -> tuple[list[int], list[int]]:
    """The curve's sizes the training split can fill, and those dropped (logged, and recorded by the caller)."""
    kept = [n for n in sizes if n <= n_train]
    dropped = [n for n in sizes if n > n_train]
    if not kept:
        raise DataError(f"{where}: the training split has {n_train} examples, fewer than every curve size "
                        f"{list(sizes)}")
    if dropped:
        log.warning("%s: %d training examples: curve sizes %s dropped", where, n_train, dropped)
    return kept, dropped


def nested_order(n_train: int, seed: int) -> np.ndarray:
    """The seed's permutation of the training split: the subset of size N is its first N indices."""
    return np.random.default_rng(seed).permutation(n_train)


def control_rows(original_ids: Sequence[str], control: Sequence[Mapping]) -> np.ndarray:
    """For each original row, the index of the control row derived from it (``source_id``), or -1."""
    position = {row.get("source_id", row["id"]): i for i, row in enumerate(control)}
    return np.asarray([position.get(i, -1) for i in original_ids], np.int64)


def curve_statistics(accuracy: np.ndarray, sizes: Sequence[int]) -> dict:
    """``curve`` ({N: mean, std, per_seed}), ``WS`` and ``MAX`` (each per seed, then mean ± std) of an
    accuracy array ``[sizes, seeds]``."""
    return {
        "curve": {str(n): summary(row) for n, row in zip(sizes, accuracy)},
        "WS": summary([weighted_score(col) for col in accuracy.T]),
        "MAX": summary([max_score(col) for col in accuracy.T]),
    }


def sensitivity_statistics(full: np.ndarray, control: np.ndarray) -> dict:
    """Language sensitivity per seed (accuracy arrays ``[sizes, seeds]``), then mean ± std."""
    return summary([sensitivity(f, c) for f, c in zip(full.T, control.T)])


def prediction_rows(rows: Sequence[Mapping], correct: np.ndarray, sizes: Sequence[int],
                    zero_shot: np.ndarray | None) -> list[dict]:
    """One row per dev example: its ids, gold label, zero-shot correctness and, per size, one bool per seed
    (``correct`` is ``[sizes, seeds, examples]``): what the report's bootstrap resamples."""
    out = []
    for i, row in enumerate(rows):
        record = {"id": row["id"]}
        if "source_id" in row:
            record["source_id"] = row["source_id"]
        record["gold"] = row["answerKey"]
        record["zero_shot"] = None if zero_shot is None else bool(zero_shot[i])
        record["correct"] = {str(n): correct[k, :, i].tolist() for k, n in enumerate(sizes)}
        out.append(record)
    return out


def variant_result(correct: np.ndarray, sizes: Sequence[int], zero_shot: np.ndarray | None) -> dict:
    """A variant's curve statistics from its correctness ``[sizes, seeds, examples]``."""
    result = curve_statistics(correct.mean(axis=2), sizes)
    result["zero_shot"] = None if zero_shot is None else {"accuracy": float(np.mean(zero_shot))}
    return result


def write(out: Path, metrics: dict, predictions: Mapping[str, list[dict]], subsets: dict) -> None:
    """``metrics.json``, ``subsets.json`` and ``<variant>/predictions.jsonl``, placed atomically."""
    with atomic.atomic_path(out) as tmp:
        for variant, rows in predictions.items():
            atomic.write_jsonl(tmp / variant / "predictions.jsonl", rows)
        atomic.write_json(tmp / "subsets.json", subsets)
        atomic.write_json(tmp / "metrics.json", metrics)


def curve_metrics(full: dict, controls: Mapping[str, dict], full_correct: np.ndarray,
                  control_correct: Mapping[str, np.ndarray], aligned: Mapping[str, np.ndarray],
                  sizes: Sequence[int], dropped: Sequence[int], seeds: Sequence[int]) -> dict:
    """The curve block of ``metrics.json``: the full variant's statistics, each control's, and the language
    sensitivity against each control, computed on the original examples that have a control row."""
    metrics = {"sizes": list(sizes), "sizes_dropped": list(dropped), "seeds": list(seeds),
               "ws_weights": ws_weights(len(sizes)).round(6).tolist(), **full, "controls": dict(controls)}
    sens = {}
    for name, correct in control_correct.items():
        keep = aligned[name] >= 0
        full_acc = full_correct[:, :, keep].mean(axis=2)
        control_acc = correct[:, :, aligned[name][keep]].mean(axis=2)
        sens[name] = sensitivity_statistics(full_acc, control_acc)
    metrics["sensitivity"] = sens
    return metrics


def read_variants(data: Path, split: str) -> dict[str, dict]:
    """``{variant: {"train": rows, "dev": rows, "path": dev file}}`` for a curve: the full variant (a probe
    folder's ``original``, or the variant folder given) first, then the probe's controls that exist."""
    from probekit.probe_dataset import read_split

    train, dev = read_split(data, "train"), read_split(data, split)
    if "" in dev:
        names = [""]
    elif "original" in dev:
        names = ["original", *(c for c in CONTROLS if c in dev)]
    else:
        raise DataError(f"{data}: no `original` variant folder (give a probe folder or one variant's folder)")
    missing = [v or str(data) for v in names if v not in train]
    if missing:
        raise DataError(f"{data}: no train.jsonl for {missing}: a learning curve trains on it")
    return {v: {"train": train[v][1], "dev": dev[v][1], "path": dev[v][0]} for v in names}
