"""What every learning-curve protocol (MC-MLM heads, MC-QA, the baselines) shares: seeded training subsets, the
curve's statistics (WS, MAX, language sensitivity of the seed-averaged curve), and its result files.

Subsets (params ``curve.subsets``, ``mcqa.subsets``; :func:`draw_subsets`) are ``nested`` by default: for one
seed, the training examples are one seeded permutation of the training split, and the subset of size N is its
first N, so the 62 examples are inside the 125, a curve measures more data, not different data, and its seeds'
curves compare the sizes on shared rows. ``original`` draws as the original code: each (N, seed) run reads its
own ``random.sample(rows, N)`` of the train file's rows in order, Python's ``random`` seeded by the run's seed
(AllenNLP's ``prepare_environment`` seeds it with ``random_seed``), as every oLMpics dataset reader does
(alontalmor/oLMpics ``allennlp_models/dataset_readers/``: ``transformer_masked_lm_reader.py`` lines 67-68,
``transformer_mc_qa_reader.py`` lines 66-67, ``mlm_baseline_reader.py`` lines 62-63, ``esim_baseline_reader.py``
lines 61-62, ``baseline_reader.py`` lines 60-61). Such draws are mostly nested too, not independent: with one
seed, ``random.sample`` of N rows is the first N of a larger sample while both take the same branch of its
algorithm (a pool for a sample large against the population, a set of picks otherwise), and where the branch
changes between two sizes the rows differ (at 5,000 training rows, between N = 1000 and 2000). A control variant
(NO-LANG, PERTURBED-LANG) trains on the rows derived from the same original examples (``source_id``), so the
control curve differs from the full one only in its language.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Literal, Mapping, Sequence

import numpy as np

from evaluators.olmpics.pairing import pair_rows
from evaluators.olmpics.metrics import WS_WEIGHTS, max_summary, sensitivity_summary, summary, ws_summary, ws_weights
from probekit.data.units import fact_unit
from probekit.outputs import atomic
from probekit.errors import DataError, UsageError

log = logging.getLogger("probekit")
CONTROLS = ("nolang", "perturbed")
"""The control variants a curve is compared with, when the probe has them (probekit/probes/controls.py)."""


def check_curve(sizes: Sequence[int], seeds: Sequence[int]) -> None:
    """Sizes positive and increasing, at most as many as WS has weights; seeds distinct: checked before any
    model is loaded."""
    if not sizes or any(n < 1 for n in sizes) or list(sizes) != sorted(set(sizes)):
        raise UsageError(f"curve sizes must be positive and increasing, got {list(sizes)}")
    if len(sizes) > len(WS_WEIGHTS):
        raise UsageError(f"WS is defined for at most {len(WS_WEIGHTS)} curve sizes, got {len(sizes)}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise UsageError(f"seeds must be distinct and at least one, got {list(seeds)}")


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


SUBSETS = ("nested", "original")
"""How each (N, seed) run's training rows are drawn (:func:`draw_subsets`)."""
Draws = dict[int, dict[int, np.ndarray]]
"""Each seed's training rows (positions in the train split, in training order) for each size N."""


def nested_subsets(train_ids: Sequence[str], sizes: Sequence[int], seeds: Sequence[int]) -> tuple[dict, dict]:
    """Each seed's training rows in nested order (its first max(sizes)), and the record ``subsets.json`` keeps:
    ``{"sizes": [...], "seeds": {seed: [train ids in order]}}``."""
    orders = {seed: nested_order(len(train_ids), seed)[:max(sizes)] for seed in seeds}
    return orders, {"sizes": list(sizes),
                    "seeds": {str(seed): [train_ids[i] for i in order] for seed, order in orders.items()}}


def original_sample(n_train: int, n: int, seed: int) -> np.ndarray:
    """The original readers' draw of a run: ``random.seed(seed); random.sample(rows, n)`` over the train split's
    rows in file order, as positions (in the sample's order)."""
    return np.asarray(random.Random(seed).sample(range(n_train), n), np.int64)


def draw_subsets(train_ids: Sequence[str], sizes: Sequence[int], seeds: Sequence[int],
                 how: Literal["nested", "original"] = "nested") -> tuple[Draws, dict]:
    """Each (seed, N) run's training rows, ``{seed: {N: positions}}``, and the record ``subsets.json`` keeps.
    ``nested``: the first N of the seed's permutation (:func:`nested_subsets`, its record as before); ``original``:
    :func:`original_sample` per run, recorded as ``{"sizes", "draw": "original", "seeds": {seed: {N: [ids]}}}``."""
    if how not in SUBSETS:
        raise UsageError(f"subsets must be one of {', '.join(SUBSETS)}, got {how!r}")
    if how == "nested":
        orders, record = nested_subsets(train_ids, sizes, seeds)
        return {seed: {n: order[:n] for n in sizes} for seed, order in orders.items()}, record
    draws = {seed: {n: original_sample(len(train_ids), n, seed) for n in sizes} for seed in seeds}
    return draws, {"sizes": list(sizes), "draw": how,
                   "seeds": {str(seed): {str(n): [train_ids[i] for i in rows] for n, rows in by_n.items()}
                             for seed, by_n in draws.items()}}


def curve_train_rows(variants: Mapping[str, dict], sizes: Sequence[int], seeds: Sequence[int],
                     subsets: Literal["nested", "original"] = "nested") -> dict[str, np.ndarray]:
    """Each variant's training rows (sorted positions in its train split) that some (N, seed) subset of the curve
    trains on (drawn as ``subsets`` says): the rows whose features a curve needs. A control's rows are those derived
    from the full variant's."""
    full_name, full = next(iter(variants.items()))
    n_train = len(full["train"])
    if subsets == "nested":
        largest = max([n for n in sizes if n <= n_train], default=n_train)
        used = np.unique(np.concatenate([nested_order(n_train, seed)[:largest] for seed in seeds]))
    else:
        kept = [n for n in sizes if n <= n_train] or [n_train]
        draws, _ = draw_subsets(range(n_train), kept, seeds, subsets)
        used = np.unique(np.concatenate([rows for by_n in draws.values() for rows in by_n.values()]))
    original_ids = [r["id"] for r in full["train"]]
    rows = {full_name: used}
    for name, v in list(variants.items())[1:]:
        derived = control_rows(original_ids, v["train"])[used]
        rows[name] = np.unique(derived[derived >= 0])
    return rows


def control_rows(original_ids: Sequence[str], control: Sequence[Mapping]) -> np.ndarray:
    """For each original row, the index of the control row derived from it (``source_id``), or -1."""
    return pair_rows(original_ids, [row.get("source_id", row["id"]) for row in control])


def curve_statistics(accuracy: np.ndarray, sizes: Sequence[int]) -> dict:
    """``curve`` ({N: mean, std, per_seed}), and ``WS`` and ``MAX`` of the seed-averaged curve (``{value, ...}``,
    :func:`metrics.ws_summary`, :func:`metrics.max_summary`) of an accuracy array ``[sizes, seeds]``."""
    return {
        "curve": {str(n): summary(row) for n, row in zip(sizes, accuracy)},
        "WS": ws_summary(accuracy.T),
        "MAX": max_summary(accuracy.T, sizes),
    }


def sensitivity_statistics(full: np.ndarray, control: np.ndarray) -> dict:
    """Language sensitivity of the seed-averaged curves (accuracy arrays ``[sizes, seeds]``): ``{value,
    per_seed}``, :func:`metrics.sensitivity_summary`."""
    return sensitivity_summary(full.T, control.T)


def gold_positions(rows: Sequence[Mapping]) -> np.ndarray:
    """Each row's gold choice as its position among the row's choices."""
    return np.asarray([[c["label"] for c in r["question"]["choices"]].index(r["answerKey"]) for r in rows], np.int64)


def prediction_rows(rows: Sequence[Mapping], predicted: np.ndarray, sizes: Sequence[int],
                    zero_shot: np.ndarray | None) -> list[dict]:
    """One row per dev example: its ids, its ``unit`` (the fact, :func:`probekit.data.units.fact_unit`, which the
    report's intervals resample), gold label, its choices' texts, and, per size, one value per seed
    (``predicted`` is ``[sizes, seeds, examples]``, the chosen choice's position among the example's choices):
    ``correct``, what the report's bootstrap resamples, and ``predicted``, the position chosen, from which the
    report tells a constant predictor (the same choice, or the same word, on every example). ``zero_shot``: the
    untrained head's choices, or None."""
    gold = gold_positions(rows)
    out = []
    for i, row in enumerate(rows):
        record = {"id": row["id"]}
        if "source_id" in row:
            record["source_id"] = row["source_id"]
        record["unit"] = fact_unit(row)
        record["gold"] = row["answerKey"]
        record["choices"] = [c["text"] for c in row["question"]["choices"]]
        record["zero_shot"] = None if zero_shot is None else bool(zero_shot[i] == gold[i])
        record["zero_shot_predicted"] = None if zero_shot is None else int(zero_shot[i])
        record["correct"] = {str(n): (predicted[k, :, i] == gold[i]).tolist() for k, n in enumerate(sizes)}
        record["predicted"] = {str(n): predicted[k, :, i].tolist() for k, n in enumerate(sizes)}
        out.append(record)
    return out


def variant_result(correct: np.ndarray, sizes: Sequence[int], zero_shot: np.ndarray | None) -> dict:
    """A variant's curve statistics from its correctness ``[sizes, seeds, examples]``."""
    result = curve_statistics(correct.mean(axis=2), sizes)
    result["zero_shot"] = None if zero_shot is None else {"accuracy": float(np.mean(zero_shot))}
    return result


def write_results(out: Path, *, variants: Mapping[str, dict], predicted: Mapping[str, np.ndarray],
                  zero_shot: Mapping[str, np.ndarray | None], sizes: Sequence[int], dropped: Sequence[int],
                  seeds: Sequence[int], subsets: dict, header: Mapping) -> dict:
    """A curve's files, placed atomically: ``metrics.json`` (``header``, the full variant's data and chance,
    its statistics, each control's, and the language sensitivity against each control, computed on the
    original dev examples that have a control row), ``subsets.json`` and ``<variant>/predictions.jsonl``.
    ``variants``: ``{name: {"train", "dev", "path"}}``, the full variant first; ``predicted``: each variant's
    chosen choices ``[sizes, seeds, dev examples]`` (positions among each example's choices), ``zero_shot`` its
    untrained head's ``[dev examples]`` (or None). Returns the metrics."""
    from evaluators.olmpics.zeroshot import (  # here: the report reads pair_rows without importing torch
        chance_level,
        describe,
    )

    full_name = next(iter(variants))
    full = variants[full_name]
    gold = {name: gold_positions(v["dev"]) for name, v in variants.items()}
    correct = {name: predicted[name] == gold[name] for name in variants}
    zero = {name: None if zero_shot[name] is None else zero_shot[name] == gold[name] for name in variants}
    results = {name: variant_result(correct[name], sizes, zero[name]) for name in variants}
    controls, sens = {}, {}
    dev_ids = [r["id"] for r in full["dev"]]
    for name in list(variants)[1:]:
        controls[name] = {**results[name], "variant": name}
        aligned = control_rows(dev_ids, variants[name]["dev"])
        keep = aligned >= 0
        sens[name] = sensitivity_statistics(correct[full_name][:, :, keep].mean(axis=2),
                                            correct[name][:, :, aligned[keep]].mean(axis=2))
    metrics = {
        **header, **describe(full["path"], full.get("probe")), "n": len(full["dev"]),
        "chance": chance_level([len(r["question"]["choices"]) for r in full["dev"]]),
        "sizes": list(sizes), "sizes_dropped": list(dropped), "seeds": list(seeds),
        "ws_weights": ws_weights(len(sizes)).round(6).tolist(), **results[full_name], "controls": controls,
        "sensitivity": sens,
    }
    with atomic.atomic_path(out, kind="results") as tmp:
        for name, v in variants.items():
            atomic.write_jsonl(tmp / (name or full["path"].parent.name) / "predictions.jsonl",
                               prediction_rows(v["dev"], predicted[name], sizes, zero_shot[name]))
        atomic.write_json(tmp / "subsets.json", subsets)
        atomic.write_json(tmp / "metrics.json", metrics)
    return metrics


def read_variants(data: Path, split: str) -> dict[str, dict]:
    """``{variant: {"train": rows, "dev": rows, "path": dev file}}`` for a curve: the full variant (a probe
    folder's ``original``, or the variant folder given) first, then the probe's controls that exist."""
    from probekit.probes.dataset import read_split

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
