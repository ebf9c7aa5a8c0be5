"""Cloze-set datasets on disk (ParaRel): patterns x tuples, not one stem per row.

``<out>/``: ``relations.jsonl`` (one row per relation: class, candidate set, objects dropped per tokenizer),
``patterns.jsonl`` (relation, pattern_id, pattern with ``[X]`` and ``[Y]``, lemma, tense, ``original``),
``tuples.jsonl`` (relation, tuple_id, subject, object), ``edges.jsonl`` (every ordered pattern pair with
the three ParaRel flags), ``meta.json`` (params, counts, reports, fingerprint) and a dataset card. Each
query is a pattern with its subject in ``[X]`` and ``[MASK]`` at ``[Y]``; :func:`queries` spells them out
as the scoring engine takes every dataset: stems, choice lists and ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from probekit.data.examples import MASK
from probekit.data.jsonl import read_json, read_jsonl
from probekit.data.writer import Dataset, Part, write_dataset
from probekit.errors import DataError, shown

FILES = ("relations", "patterns", "tuples", "edges")
SUBJECT, OBJECT = "[X]", "[Y]"


@dataclass
class ClozeSet:
    folder: Path
    relations: list[dict]
    patterns: list[dict]
    tuples: list[dict]
    edges: list[dict]
    meta: dict

    def relation(self, name: str) -> dict:
        for row in self.relations:
            if row["relation"] == name:
                return row
        raise DataError(f"{self.folder}: no relation {shown(name)} "
                        f"(has: {', '.join(r['relation'] for r in self.relations)})")


@dataclass(frozen=True)
class Queries:
    """One relation's queries, pattern-major: ``stems[i]`` is pattern ``pattern_ids[i]`` on ``tuple_ids[i]``."""

    relation: str
    stems: list[str]
    candidates: tuple[str, ...]
    ids: list[str]
    tuple_ids: list[str]
    pattern_ids: list[int]
    gold: list[str]
    token_ids: Mapping[str, int] | None = None   # the candidates' tokens at the mask (None: in context)


def fill(pattern: str, subject: str) -> str:
    """The query of a pattern: the subject at ``[X]``, the mask at ``[Y]``."""
    return pattern.replace(SUBJECT, subject).replace(OBJECT, MASK)


def queries(data: ClozeSet, relation: str, limit: int | None = None, *,
            tuples: Sequence[dict] | None = None) -> Queries:
    """Every (pattern, tuple) query of ``relation`` over its candidate set; ``limit``: its first tuples;
    ``tuples``: these rows of the relation instead, in their order (a sample, repeats kept)."""
    candidates = tuple(data.relation(relation)["candidates"])
    if tuples is None:
        tuples = [t for t in data.tuples if t["relation"] == relation][:limit]
    stems, ids, tuple_ids, pattern_ids, gold = [], [], [], [], []
    for p in (p for p in data.patterns if p["relation"] == relation):
        for t in tuples:
            stems.append(fill(p["pattern"], t["subject"]))
            ids.append(f"{t['tuple_id']}/{p['pattern_id']}")
            tuple_ids.append(t["tuple_id"])
            pattern_ids.append(p["pattern_id"])
            gold.append(t["object"])
    return Queries(relation, stems, candidates, ids, tuple_ids, pattern_ids, gold)


def write_cloze_set(out: str | Path, rows: Mapping[str, Sequence[dict]], meta: dict, card) -> Path:
    """``rows``: every file of :data:`FILES`, written by the one writer (``card(meta)``: the README; the licence
    and sources from ``meta``, else ``other`` and none)."""
    part = Part("", {f"{name}.jsonl": rows[name] for name in FILES}, meta, card)
    return write_dataset(out, Dataset((part,), meta.get("license") or "other"), meta.get("sources"))


def read_cloze_set(folder: str | Path) -> ClozeSet:
    """A written cloze set; a missing file is an error naming it and the command that writes it."""
    folder = Path(folder)
    missing = [f for f in (*(f"{n}.jsonl" for n in FILES), "meta.json") if not (folder / f).is_file()]
    if missing:
        raise DataError(f"{folder}: not a cloze set, missing {', '.join(missing)} (run: probes generate pararel)")
    meta = read_json(folder / "meta.json")
    return ClozeSet(folder, *(read_jsonl(folder / f"{n}.jsonl") for n in FILES), meta)
