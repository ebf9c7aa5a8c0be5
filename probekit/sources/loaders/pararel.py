"""ParaRel's source files -> tables: the pattern graphs (through the restricted unpickler of
:mod:`probekit.sources.pattern_graphs`), the T-REx tuples and LAMA's relation list.

Tables:

- ``patterns``: ``relation``, ``pattern_id`` (the node's position in its graph), ``pattern`` (the cloze
  pattern, ``lm_pattern``), ``lemma``, ``extended_lemma``, ``tense``, ``spike_pattern``, ``example``.
- ``edges``: ``relation``, ``source``, ``target`` (pattern ids), ``syntactic_change``, ``lexical_change``,
  ``determiner_change``: every annotated ordered pair.
- ``tuples``: ``relation``, ``tuple_id`` (``<relation>-<line>``), ``subject``, ``object``, ``uuid``,
  ``line``. Every row is kept, repeated subjects too (the original code kept the last one silently); the
  report counts them per relation.
- ``relations``: ``relation``, ``label``, ``template`` (LAMA's), ``lama_type`` (LAMA's 1-1 / N-1 / N-M),
  ``description``, for the relations with a graph.

A tuple line that is not JSON or lacks a field is an error naming file and line; an unsafe or malformed
graph is an error naming the file.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from probekit.data import jsonl
from probekit.errors import DataError
from probekit.sources.loaders import Loaded, register
from probekit.sources.pattern_graphs import EDGE_FLAGS, NODE_FIELDS, read_pickle

RELATIONS_FILE = "LAMA_relations.jsonl"


def _read_jsonl(path: Path, fields: tuple[str, ...]) -> list[dict]:
    if not path.is_file():
        raise DataError(f"{path}: missing (run: probes sources fetch pararel)")
    rows = []
    for n, line in jsonl.lines(path):
        try:
            row = jsonl.loads(line, f"{path}:{n}")
            rows.append({k: row[k] for k in fields} | {"line": n})
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{path}:{n}: not a row with {', '.join(fields)} ({type(exc).__name__}: {exc})") \
                from None
    return rows


@register("pararel")
def load(raw: Path, params) -> Loaded:
    """The four tables from ``raw/pararel`` (see the module docstring)."""
    folder = Path(raw) / "pararel"
    graphs = sorted(folder.glob("P*.graph"), key=lambda p: int(p.stem[1:]))
    if not graphs:
        raise DataError(f"{folder}: no P*.graph files (run: probes sources fetch pararel)")
    patterns, edges, tuples, report = [], [], [], {"relations": {}}
    for path in graphs:
        graph = read_pickle(path)
        rel = graph.relation
        patterns += [{"relation": rel, "pattern_id": i, "pattern": p["lm_pattern"],
                      **{f: p[f] for f in NODE_FIELDS if f != "lm_pattern"}} for i, p in enumerate(graph.patterns)]
        edges += [{"relation": rel, "source": s, "target": t, **flags} for s, t, flags in graph.edges]
        rows = _read_jsonl(folder / f"{rel}.jsonl", ("sub_label", "obj_label", "uuid"))
        tuples += [{"relation": rel, "tuple_id": f"{rel}-{r['line']}", "subject": r["sub_label"],
                    "object": r["obj_label"], "uuid": r["uuid"], "line": r["line"]} for r in rows]
        subjects = Counter(r["sub_label"] for r in rows)
        report["relations"][rel] = {
            "patterns": len(graph.patterns), "edges": len(graph.edges), "tuples": len(rows),
            "subjects": len(subjects), "repeated_subjects": sum(1 for c in subjects.values() if c > 1),
            "rows_with_repeated_subject": sum(c for c in subjects.values() if c > 1),
            "objects": len({r["obj_label"] for r in rows})}
    lama = {r["relation"]: r for r in _read_jsonl(folder / RELATIONS_FILE,
                                                  ("relation", "template", "label", "description", "type"))}
    missing = [g.stem for g in graphs if g.stem not in lama]
    if missing:
        raise DataError(f"{folder / RELATIONS_FILE}: no entry for {missing}")
    relations = [{"relation": g.stem, "label": lama[g.stem]["label"], "template": lama[g.stem]["template"],
                  "lama_type": lama[g.stem]["type"], "description": lama[g.stem]["description"]} for g in graphs]
    report |= {"patterns": len(patterns), "edges": len(edges), "tuples": len(tuples)}
    return Loaded({"patterns": pd.DataFrame(patterns), "relations": pd.DataFrame(relations),
                   "tuples": pd.DataFrame(tuples),
                   "edges": pd.DataFrame(edges, columns=["relation", "source", "target", *EDGE_FLAGS])}, report)
