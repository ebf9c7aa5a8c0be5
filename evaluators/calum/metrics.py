"""CALUM's consistency metrics (papers/004 §4): C_R and C_S, the share of examples whose prediction on the
REVERSE (SIGNAL) variant equals the prediction on the original; no labels needed, so unlabelled test splits
count. Also accuracy on the labelled originals, BECEL's symmetric consistency, the same per gold class, and
mean ± std over seeds.

Per gold class: every class, the first one included (BECEL's code tested ``if condition:`` on a label id,
which skipped class 0).

A constant predictor (one label for every example of every variant) has C_R = C_S = C_sym = 1 and the majority
class's accuracy at best: a perfect consistency that measures nothing. Each seed records its prediction
distribution (``predicted``) and ``constant_predictor``; :func:`over_seeds` counts the seeds that were.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Iterable, Mapping, Sequence

KEYS = {"reverse": "C_R", "signal": "C_S", "symmetric": "C_sym"}


def consistency(predictions: Iterable[Mapping]) -> dict:
    """``predictions``: rows with ``pair_id``, ``variant``, ``prediction`` and (originals) ``label``. Returns
    ``accuracy`` (labelled originals), ``C_R``/``C_S``/``C_sym`` for the variants present (over the pair ids
    that have both the original and the variant), ``by_class`` (each key per gold class), counts, ``predicted``
    (how many rows, every variant together, got each predicted label) and ``constant_predictor`` (one label for
    all of them: its consistency is 1 by construction)."""
    by_variant: dict[str, dict[str, Mapping]] = {}
    predicted: Counter = Counter()
    for row in predictions:
        predicted[str(row["prediction"])] += 1
        rows = by_variant.setdefault(row["variant"], {})
        if row["pair_id"] in rows:
            raise ValueError(f"pair {row['pair_id']!r}: two {row['variant']} predictions")
        rows[row["pair_id"]] = row
    original = by_variant.get("original")
    if not original:
        raise ValueError("no predictions on the original variant: consistency compares against them")
    labelled = [r for r in original.values() if r.get("label") is not None]
    out: dict = {"accuracy": _share(r["prediction"] == r["label"] for r in labelled), "n": len(original),
                 "n_labelled": len(labelled), "by_class": {}, "predicted": dict(sorted(predicted.items())),
                 "constant_predictor": len(predicted) == 1}
    for variant, key in KEYS.items():
        if variant not in by_variant:
            continue
        pairs = [(original[p], r) for p, r in by_variant[variant].items() if p in original]
        out[key] = _share(o["prediction"] == r["prediction"] for o, r in pairs)
        out[f"n_{key}"] = len(pairs)
        for label in sorted({o.get("label") for o, _ in pairs if o.get("label") is not None}):
            same = [o["prediction"] == r["prediction"] for o, r in pairs if o.get("label") == label]
            out["by_class"].setdefault(str(label), {})[key] = _share(same)
    return out


def over_seeds(per_seed: Sequence[Mapping], keys: Sequence[str] = ("accuracy", "C_R", "C_S", "C_sym")) -> dict:
    """``{key: {mean, std, n, per_seed}}`` over the seeds' results (sample std; None with one seed), and
    ``constant_predictor: {seeds, of}`` (how many of the seeds that recorded it predicted one label throughout)."""
    out: dict = {}
    for key in keys:
        values = [m[key] for m in per_seed if m.get(key) is not None]
        if values:
            out[key] = {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else None,
                        "n": len(values), "per_seed": values}
    flags = [bool(m["constant_predictor"]) for m in per_seed if "constant_predictor" in m]
    if flags:
        out["constant_predictor"] = {"seeds": sum(flags), "of": len(flags)}
    return out


def _share(flags: Iterable[bool]) -> float | None:
    flags = list(flags)
    return sum(flags) / len(flags) if flags else None
