"""A scored dataset's rows in one shape for every family, as the predictions are read beside them:
``id``, ``stem`` (the text the model read), ``choices`` (a multiple-choice row's answer texts in file order; None for
ParaRel's open answers), ``gold`` (the gold choice's position; None for an open answer), ``answer`` (the gold text),
``template`` (the template id; ParaRel: ``pattern <id>``), ``group`` (ParaRel: the tuple, one fact under every
pattern; CALUM: the pair), ``source_id`` (a control's base row), ``args`` and ``facts`` (what the row was built
from)."""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache
from pathlib import Path

from evaluators.predictions.records import Dataset
from probekit.data.cloze import fill
from probekit.data.jsonl import read_jsonl
from probekit.errors import UsageError


def _path(text: str, root: Path) -> Path:
    p = Path(text)
    return p if p.is_absolute() else root / p


def dataset_rows(ds: Dataset, *, root: str | Path = ".", ids: Collection[str] | None = None) -> list[dict]:
    """The rows of ``ds`` (its ``path`` relative to ``root``, the project's folder), in file order; ``ids``: only
    the rows with these ids (ParaRel: its queries of the tuples named, not the relation's whole cross product)."""
    path = _path(ds.path, Path(root))
    if not path.exists():
        raise UsageError(f"{path}: the dataset of {ds.probe}/{ds.variant}/{ds.split} is missing (run its generate "
                         f"stage, or give --data)")
    rows = _pararel(ds, path, ids) if ds.family == "pararel" else {"mc": _mc, "calum": _calum}[ds.family](ds, path)
    return rows if ids is None else [r for r in rows if r["id"] in ids]


def _mc(ds: Dataset, path: Path) -> list[dict]:
    out = []
    for row in read_jsonl(path):
        q = row.get("question") or {}
        choices = [c.get("text") for c in q.get("choices") or []]
        labels = [c.get("label") for c in q.get("choices") or []]
        gold = labels.index(row.get("answerKey")) if row.get("answerKey") in labels else None
        out.append({"id": row.get("id"), "stem": q.get("stem", ""), "choices": choices, "gold": gold,
                    "answer": choices[gold] if gold is not None else None, "template": row.get("template_id"),
                    "group": None, "source_id": row.get("source_id"), "args": row.get("args") or {},
                    "facts": row.get("facts")})
    return out


@lru_cache(maxsize=4)
def _by_relation(path: str, mtime_ns: int) -> dict[str, list[dict]]:
    """A ParaRel table's rows by relation, read once per file version (every relation's shard reads it)."""
    out: dict[str, list[dict]] = {}
    for row in read_jsonl(path):
        out.setdefault(row["relation"], []).append(row)
    return out


def _relation(path: Path, relation: str) -> list[dict]:
    return _by_relation(str(path), path.stat().st_mtime_ns).get(relation, [])


def _pararel(ds: Dataset, path: Path, ids: Collection[str] | None) -> list[dict]:
    patterns = _relation(path / "patterns.jsonl", ds.variant)
    tuples = _relation(path / "tuples.jsonl", ds.variant)
    if ids is not None:
        wanted = {i.rsplit("/", 1)[0] for i in ids}
        tuples = [t for t in tuples if t["tuple_id"] in wanted]
    return [{"id": f"{t['tuple_id']}/{p['pattern_id']}", "stem": fill(p["pattern"], t["subject"]), "choices": None,
             "gold": None, "answer": t["object"], "template": f"pattern {p['pattern_id']}", "group": t["tuple_id"],
             "source_id": None, "args": {"subject": t["subject"], "object": t["object"]},
             "facts": {"relation": ds.variant, "tuple": t["tuple_id"], "pattern": p["pattern"]}}
            for p in patterns for t in tuples]


def _calum(ds: Dataset, path: Path) -> list[dict]:
    out = []
    for row in read_jsonl(path):
        out.append({"id": row.get("pair_id"), "stem": f"{row.get('sentence1', '')} ‖ {row.get('sentence2', '')}",
                    "choices": None, "gold": None, "answer": row.get("label"), "template": row.get("variant"),
                    "group": row.get("pair_id"), "source_id": None,
                    "args": {k: row[k] for k in ("idx",) if k in row}, "facts": row.get("segments")})
    return out
