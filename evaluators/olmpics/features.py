"""Mask features: the frozen encoder's hidden state at each example's mask, computed once and cached, so that
every (N, seed) point of a learning curve trains only the head (oLMpics §3.2 keeps the encoder frozen).

A cache folder holds ``<variant>/<split>.npy`` (``[examples, hidden]`` float32, in file order) and a
``meta.json`` keyed by what the features depend on: the model (id and revision), its dtype, and each
variant's data fingerprint. A curve trains on the first max(N) rows of each seed's permutation only, so the
training split may be cached for those rows alone (``train_rows``: their positions, in order; the key records
how many and their digest): at the smoke scale's sizes that is a few hundred rows instead of thousands. A cache
whose key differs from the request is recomputed, never silently used.
The MLM-BASELINE's GloVe features (``glove.py``) are cached the same way.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Mapping

import numpy as np

from probekit.outputs import atomic

SPLITS = ("train", "dev")


def key(*, model: str, model_id: str, revision: str | None, dtype: str, fingerprints: Mapping[str, str],
        split: str, train_rows: Mapping[str, np.ndarray] | None = None, inputs: Mapping | None = None) -> dict:
    """What a cache must match to be used. ``train_rows``: the training rows cached per variant (None: all);
    ``inputs``: how the texts were read, where that is a choice (MLM-BASELINE's ``glove_tokens``)."""
    expected = {"model": model, "model_id": model_id, "model_revision": revision, "dtype": dtype,
                "data_fingerprints": dict(sorted(fingerprints.items())), "eval_split": split}
    if inputs is not None:
        expected["inputs"] = dict(inputs)
    if train_rows is not None:
        expected["train_rows"] = {name: {"n": len(rows), "sha256": hashlib.sha256(
            np.ascontiguousarray(rows, np.int64).tobytes()).hexdigest()} for name, rows in sorted(train_rows.items())}
    return expected


def read(folder: Path | None, expected: dict) -> dict[str, dict[str, np.ndarray]] | None:
    """``{variant: {split: features}}`` from ``folder`` if its key is ``expected``, else None."""
    if folder is None or not (folder / "meta.json").is_file():
        return None
    if json.loads((folder / "meta.json").read_text(encoding="utf-8")).get("key") != expected:
        return None
    return {variant: {split: np.load(folder / variant / f"{split}.npy") for split in SPLITS}
            for variant in expected["data_fingerprints"]}


def write(folder: Path, expected: dict, features: Mapping[str, Mapping[str, np.ndarray]]) -> None:
    """The cache, placed atomically (``np.save`` output is byte-identical for identical arrays)."""
    with atomic.atomic_path(folder, kind="results") as tmp:
        shape = None
        for variant, splits in features.items():
            (tmp / variant).mkdir(parents=True, exist_ok=True)
            for split, array in splits.items():
                np.save(tmp / variant / f"{split}.npy", np.ascontiguousarray(array, np.float32))
                shape = array.shape[1:]
        atomic.write_json(tmp / "meta.json", {"key": expected, "feature_shape": list(shape or ())})
