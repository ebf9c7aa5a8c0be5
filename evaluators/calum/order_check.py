"""The sign of a swapped segment order in a CALUM run: REVERSE scored above ``original`` by more than its interval.

A model scores best on the order it was trained on. With accuracy A on ``original`` and agreement C_R, at least
(1 − C_R) − (1 − A) of the rows are right on ``original`` and wrong on REVERSE, so REVERSE scores at most
1 − A + C_R: in the paper (CALUM Table 2) well under A for every NLI cell (RoBERTa-base MNLI: A 87.2, C_R 60.3,
REVERSE ≤ 73.1). A run whose REVERSE accuracy is clearly above its ``original`` accuracy was most likely scored
in the order it was not trained on (``calum.eval_order: original_code_swapped``, or a dataset generated with
another ``calum.order`` / ``calum.train_order`` than the model was trained on): docs/limits.md.

The check reads a run's ``predictions.jsonl`` (``probes evaluate calum``): the main task's labelled rows of the
validation split, each example's correctness averaged over the seeds, and the percentile interval (95%, 1,000
resamples, seed 0: :func:`evaluators.shared.bootstrap.streamed_means`) of REVERSE − ``original`` over examples,
an example's two variants resampled together. ``swapped``: the interval lies above 0."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from evaluators.shared.bootstrap import streamed_means
from probekit.data.jsonl import read_jsonl

LEVEL, RESAMPLES, SEED = 0.95, 1000, 0


def reverse_gap(rows: Iterable[Mapping], task: str) -> dict | None:
    """``{accuracy_original, accuracy_reverse, diff, low, high, level, n}`` (shares; ``diff`` REVERSE −
    ``original`` and its interval) and ``swapped`` (``low > 0``) over ``task``'s labelled validation rows (those
    without a ``split``: :mod:`evaluators.calum.finetune`) that have both variants; None where none has."""
    right: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("task", task) == task and "split" not in r and r.get("label") is not None \
                and r["variant"] in ("original", "reverse"):
            right[r["pair_id"]][r["variant"]].append(r["prediction"] == r["label"])
    pairs = [v for v in right.values() if v["original"] and v["reverse"]]
    if not pairs:
        return None
    original = np.array([np.mean(v["original"]) for v in pairs])
    reverse = np.array([np.mean(v["reverse"]) for v in pairs])
    diffs = streamed_means(reverse - original, RESAMPLES, SEED)
    low, high = (float(q) for q in np.quantile(diffs, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]))
    return {"accuracy_original": float(original.mean()), "accuracy_reverse": float(reverse.mean()),
            "diff": float((reverse - original).mean()), "low": low, "high": high, "level": LEVEL, "n": len(pairs),
            "swapped": low > 0}


def check_runs(folder: Path, results: Mapping[str, Mapping]) -> dict[str, dict]:
    """:func:`reverse_gap` of every run of ``results`` whose folder under ``folder`` holds a
    ``predictions.jsonl`` (a run's test row, ``<run>:<split>``, is not checked)."""
    checks = {}
    for run, m in sorted(results.items()):
        path = Path(folder) / run / "predictions.jsonl"
        if ":" not in run and path.is_file():
            gap = reverse_gap(read_jsonl(path), m["task"])
            if gap is not None:
                checks[run] = gap
    return checks


def flag_line(checks: Mapping[str, Mapping], results: Mapping[str, Mapping]) -> str | None:
    """The report's warning naming every run whose check says ``swapped``, or None."""
    flagged = [(run, c) for run, c in sorted(checks.items()) if c["swapped"]]
    if not flagged:
        return None
    def told(run: str, c: Mapping) -> str:
        data = (results.get(run) or {}).get("data", {}).get((results.get(run) or {}).get("task"), {})
        swap = f"; its dataset evaluates {data['eval_order']}, trained {data.get('order')}" if (
            "eval_order" in data and data["eval_order"] != data.get("order")) else ""
        return (f"{run} (REVERSE {100 * c['accuracy_reverse']:.1f} vs original {100 * c['accuracy_original']:.1f}: "
                f"{100 * c['diff']:+.1f}, {100 * c['level']:.0f}% interval [{100 * c['low']:+.1f}, "
                f"{100 * c['high']:+.1f}] over {c['n']} examples{swap})")
    return ("**⚠ REVERSE above original**: " + "; ".join(told(r, c) for r, c in flagged) + ". A model scores best "
            "in the order it was trained on: these were most likely scored as `original` in the other order "
            "(`calum.eval_order: original_code_swapped`, or data generated with another `calum.order` / "
            "`calum.train_order` than the training's): their Acc_val and C_S are not the paper's (docs/limits.md).")
