"""Where the pipeline's prediction files are and what each one scored: one :class:`PredictionFile` per
``predictions.jsonl`` under a results folder, with the run it belongs to and the dataset file it scored.

The layouts (each written by one protocol, its ``metrics.json`` beside it or one folder up):

| protocol | file | scored |
| --- | --- | --- |
| zeroshot | ``zeroshot/<model>/<probe>/<variant>/`` | ``metrics.json``'s ``data`` |
| zeroshot (a grid's data) | ``zeroshot_grid/<model>/<probe>/<variant>/`` | the same |
| release | ``release/<model>/<probe>/`` | an original release file (``raw/olmpics/...``) |
| curve | ``curve/<model>/<probe>/<mlp|linear|mcqa>/<variant>/`` | ``<data>/probes/<probe>/<variant>/<split>.jsonl`` |
| curve on the release | ``curve/<model>/<source>-<probe>/<setting>/original/`` | ``metrics.json``'s ``data`` (the release's file) |
| grid cell | ``grid/cells/<hash>/result/<variant>/`` | ``metrics.json``'s ``data`` |
| pararel | ``pararel/<model>/`` | ``metrics.json``'s ``data`` (the ParaRel folder) |
| calum | ``calum/<run>/`` | ``metrics.json``'s ``data`` (a task's folder per task) |
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from probekit.data.jsonl import loads
from probekit.errors import UsageError

NAME = "predictions.jsonl"


@dataclass(frozen=True)
class PredictionFile:
    """One ``predictions.jsonl``: ``protocol`` (the layout above), ``model`` (the params alias or model id),
    ``label`` (the run's name in a table: the model, with the setting or grid cell that tells two runs of it apart),
    ``family`` (``mc``, ``pararel``, ``calum``), ``data`` (the dataset file or folder scored, as a path that
    exists, or None), ``probe``/``variant``/``split`` (None where the file holds several), ``setting`` (a curve's
    ``mlp``/``linear``/``mcqa``) and ``meta`` (its ``metrics.json``)."""

    path: Path
    protocol: str
    model: str
    label: str
    family: str
    data: Path | None
    probe: str | None = None
    variant: str | None = None
    split: str | None = None
    setting: str | None = None
    meta: dict = field(default_factory=dict, compare=False, repr=False)


def _json(path: Path) -> dict:
    try:
        value = loads(path.read_bytes(), str(path))   # NaN or a key twice: refused, not passed over
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _resolve(text, root: Path, data: Path) -> Path | None:
    """A ``data`` path of a ``metrics.json`` (relative to the project it ran in) under this project: ``root``
    first, then ``data`` for a path starting with ``data/``."""
    if not isinstance(text, str) or not text:
        return None
    p = Path(text)
    if p.is_absolute():
        return p if p.exists() else None
    for candidate in (root / p, data / Path(*p.parts[1:]) if p.parts[:1] == ("data",) and len(p.parts) > 1 else None):
        if candidate is not None and candidate.exists():
            return candidate
    return None


def find_predictions(results: str | Path = "results", *, data: str | Path = "data",
                     root: str | Path | None = None) -> list[PredictionFile]:
    """Every prediction file under ``results`` whose layout is known (see the module), sorted by path. ``data``:
    the project's data folder; ``root``: the folder the paths of ``metrics.json`` are relative to (default: the
    parent of ``results``)."""
    results, data = Path(results), Path(data)
    if not results.is_dir():
        raise UsageError(f"{results}: no such results folder (give --results, the folder the pipeline writes)")
    root = Path(root) if root is not None else results.parent
    found = []
    for path in sorted(results.rglob(NAME)):
        rel = path.relative_to(results).parts
        f = _classify(path, rel, root, data)
        if f is not None:
            found.append(f)
    return found


def _classify(path: Path, rel: tuple[str, ...], root: Path, data: Path) -> PredictionFile | None:
    top, here = rel[0], path.parent
    if top in ("zeroshot", "zeroshot_grid", "release") or (top == "grid" and "result" in rel):
        meta = _json(here / "metrics.json")
        if not meta:
            return None
        model = str(meta.get("model") or rel[1])
        label = model
        if top == "grid":
            cell = rel[rel.index("cells") + 1] if "cells" in rel else "?"
            label = f"{model} · grid {cell[:6]}"
        return PredictionFile(path, "zeroshot" if top != "release" else "release", model, label, "mc",
                              _resolve(meta.get("data"), root, data), meta.get("probe"), meta.get("variant"),
                              meta.get("split") or "dev", None, meta)
    if top == "curve" and len(rel) == 6:
        _, model, probe, setting, variant, _ = rel
        meta = _json(here.parent / "metrics.json")
        split = meta.get("split") or "dev"
        release = meta.get("curve_data") == "release"   # evaluators/olmpics/release_curves.py
        scored = _resolve(meta.get("data"), root, data) if release else \
            _resolve(f"probes/{probe}/{variant}/{split}.jsonl", data, data)
        return PredictionFile(path, "mcqa" if setting == "mcqa" else "curve", str(meta.get("model") or model),
                              model, "mc", scored, meta.get("probe", probe) if release else probe,
                              "release" if release else variant, split, setting, meta)
    if top == "pararel" and len(rel) == 3:
        meta = _json(here / "metrics.json")
        model = str(meta.get("model") or rel[1])
        return PredictionFile(path, "pararel", model, model, "pararel", _resolve(meta.get("data"), root, data),
                              "pararel", None, meta.get("split") or "all", None, meta)
    if top == "calum" and len(rel) == 3:
        meta = _json(here / "metrics.json")
        if not meta:
            return None
        return PredictionFile(path, "calum", str(meta.get("model") or rel[1]), rel[1], "calum", None,
                              meta.get("task"), None, meta.get("split") or "dev", meta.get("setting"), meta)
    return None
