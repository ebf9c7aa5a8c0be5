"""Sentence-pair datasets on disk (CALUM): ``<out>/<variant>/<split>.jsonl`` (one row per example and variant,
variants paired by ``pair_id``), ``meta.json`` (params, segment order, counts, fingerprint) and a card."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from probekit.data.jsonl import read_json, read_jsonl
from probekit.data.writer import Dataset, Part, write_dataset
from probekit.errors import DataError

ROW_FIELDS = ("pair_id", "variant", "sentence1", "sentence2", "label")


def write_pair_dataset(out: str | Path, variants: Mapping[str, Mapping[str, list[dict]]], meta: dict,
                       card: Callable[[dict], str]) -> Path:
    """Every variant's splits as ``<variant>/<split>.jsonl``, by the one writer (``card(meta)``: the README; the
    licence and sources from ``meta``, else ``other`` and none)."""
    part = Part("", {f"{variant}/{split}.jsonl": rows for variant, splits in variants.items()
                     for split, rows in splits.items()}, meta, card)
    return write_dataset(out, Dataset((part,), meta.get("license") or "other"), meta.get("sources"))


def read_pairs(folder: str | Path, variant: str, split: str, limit: int | None = None) -> list[dict]:
    """One variant's split, each row checked for the fields every pair row has (file and line on error); ``limit``:
    its first N rows only, the rest never read."""
    path = Path(folder) / variant / f"{split}.jsonl"
    if not path.is_file():
        have = sorted(p.name for p in Path(folder).iterdir() if p.is_dir()) if Path(folder).is_dir() else []
        raise DataError(f"{path}: missing (variants here: {', '.join(have) or 'none'})")
    rows, lines = read_jsonl(path, with_lines=True, limit=limit)
    for row, n in zip(rows, lines):
        missing = [f for f in ROW_FIELDS if f not in row]
        if missing:
            raise DataError(f"{path}:{n}: missing field(s) {missing}")
    return rows


def read_meta(folder: str | Path) -> dict:
    path = Path(folder) / "meta.json"
    if not path.is_file():
        raise DataError(f"{folder}: no meta.json (run: probes generate calum --task TASK --out {folder})")
    return read_json(path)
