"""Readers of Wikidata facts: KAMEL and EntityQuestions files, and cached WDQS SPARQL answers.

Each reader yields the (subject, object) facts of one relation from one file (or one SPARQL answer),
cleaned (:func:`normalise_year` for year relations; empty labels and bare Q-ids dropped) and counted per
file in a :class:`_FileStats`; :func:`sparql_query` is the SELECT whose answer :func:`read_sparql` reads.
The sets' formats, what is dropped and why: the docstring of :mod:`probekit.sources.loaders.wikidata`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator

from probekit.data import jsonl
from probekit.errors import DataError, shown

RELATIONS = {
    "P463": "member of", "P571": "inception", "P161": "cast member", "P26": "spouse", "P112": "founded by",
    "P159": "headquarters location", "P17": "country", "P131": "located in the administrative territorial entity",
    "P36": "capital", "P1376": "capital of",
}
EQ_TEMPLATES = "eq_relation_query_templates.json"
YEAR_RELATIONS = ("P571",)
_QID = re.compile(r"Q\d+")
_YEAR = re.compile(r"([+-]?)(\d+)(?:-\d\d-\d\d(?:T\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?)?)?")


# --- values ------------------------------------------------------------------------------------

def normalise_year(value: str) -> str | None:
    """``"1959"``, ``"1959-01-01T00:00:00Z"``, ``"+1959-..."`` -> ``"1959"``; None for BCE or years outside 1000-9999."""
    m = _YEAR.fullmatch(value.strip())
    if not m or m.group(1) == "-":
        return None
    year = int(m.group(2))
    return str(year) if 1000 <= year <= 9999 else None


def _clean(relation: str, subject, obj) -> tuple[tuple[str, str] | None, str | None]:
    """The cleaned (subject, object) of one fact, or None and the reason it is dropped."""
    s, o = str(subject).strip(), str(obj).strip()
    if not s or not o:
        return None, "empty label"
    if _QID.fullmatch(s) or _QID.fullmatch(o):
        return None, "no English label (bare Q-id)"
    if relation in YEAR_RELATIONS:
        o = normalise_year(o)
        if o is None:
            return None, f"{relation} value not a year in 1000-9999"
    return (s, o), None


class _FileStats:
    def __init__(self):
        self.lines = self.facts = 0
        self.dropped: Counter = Counter()

    def as_dict(self) -> dict:
        return {"lines": self.lines, "facts": self.facts, "dropped": dict(sorted(self.dropped.items()))}


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a ``DataError`` naming file and line otherwise."""
    if not path.is_file():
        raise DataError(f"{path}: missing (run: probes sources fetch {path.parent.name})")
    for n, text in jsonl.lines(path):
        try:
            obj = jsonl.loads(text, f"{path}:{n}")
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{n}: not a JSON line: {e}") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{n}: expected a JSON object, got {type(obj).__name__}")
        yield n, obj


def _emit(relation: str, pairs: Iterable[tuple], stats: _FileStats) -> Iterator[tuple[str, str]]:
    for s, o in pairs:
        fact, why = _clean(relation, s, o)
        if fact is None:
            stats.dropped[why] += 1
        else:
            stats.facts += 1
            yield fact


def read_kamel(path: Path, relation: str, stats: _FileStats | None = None) -> list[tuple[str, str]]:
    """(subject, object) facts of one KAMEL file (train/dev: label strings; test: ``{"chosen", "rdf"}`` dicts)."""
    stats = stats if stats is not None else _FileStats()
    out = []
    for n, row in _json_lines(path):
        stats.lines += 1
        sub, objs = row.get("sub_label"), row.get("obj_label")
        if not isinstance(sub, str) or not isinstance(objs, list):
            raise DataError(f"{path}:{n}: expected \"sub_label\" (string) and \"obj_label\" (list)")
        labels = []
        for o in objs:
            if isinstance(o, dict):
                o = o.get("chosen") if o.get("chosen") is not None else o.get("rdf")
            if not isinstance(o, str):
                raise DataError(f"{path}:{n}: an \"obj_label\" item is neither a string nor a "
                                f"{{\"chosen\": string}} object")
            labels.append(o)
        if not labels:
            stats.dropped["no objects"] += 1
        out.extend(_emit(relation, ((sub, o) for o in labels), stats))
    return out


def eq_subject_patterns(templates: dict, relation: str) -> list[re.Pattern]:
    """Regexes recovering ``[X]`` from the relation's question templates (``P159`` and ``P159_similar``)."""
    keys = [k for k in (relation, f"{relation}_similar") if isinstance(templates.get(k), str)]
    pats = []
    for k in keys:
        t = templates[k]
        if t.count("[X]") != 1:
            raise DataError(f"{EQ_TEMPLATES}: template {shown(k)} must hold [X] once: {shown(t)}")
        pre, post = t.split("[X]")
        pats.append(re.compile(re.escape(pre) + "(.+)" + re.escape(post)))
    return pats


def read_eq(path: Path, relation: str, templates: dict, stats: _FileStats | None = None) -> list[tuple[str, str]]:
    """(subject, object) facts of one EntityQuestions file; the subject is parsed out of the question."""
    stats = stats if stats is not None else _FileStats()
    patterns = eq_subject_patterns(templates, relation)
    if not patterns:
        raise DataError(f"{EQ_TEMPLATES}: no question template for {relation}")
    out = []
    for n, row in _json_lines(path):
        stats.lines += 1
        q, answers = row.get("question"), row.get("answers")
        if not isinstance(q, str) or not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise DataError(f"{path}:{n}: expected \"question\" (string) and \"answers\" (list of strings)")
        m = next((m for p in patterns if (m := p.fullmatch(q.strip()))), None)
        if m is None:
            stats.dropped["question does not match the relation's template"] += 1
            continue
        if not answers:
            stats.dropped["no objects"] += 1
        out.extend(_emit(relation, ((m.group(1), a) for a in answers), stats))
    return out


def read_eq_templates(path: Path) -> dict:
    if not path.is_file():
        raise DataError(f"{path}: missing (run: probes sources fetch {path.parent.name})")
    try:
        templates = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not a JSON file: {e}") from None
    if not isinstance(templates, dict):
        raise DataError(f"{path}: expected a JSON object of relation -> question template")
    return templates


# --- SPARQL ------------------------------------------------------------------------------------

def sparql_query(relation: str, limit: int, type_filter: str = "") -> str:
    """The SELECT for one relation: ?sLabel and ?oLabel (English), or ?o (a dateTime) for year relations."""
    head = f"# probekit wikidata loader: {relation} ({RELATIONS.get(relation, 'relation')})\n"
    label = 'SERVICE wikibase:label { bd:serviceParam wikibase:language "en". }'
    where = f"  {type_filter}\n" if type_filter.strip() else ""
    if relation in YEAR_RELATIONS:
        # only statements precise to the year (timePrecision >= 9), no deprecated ones
        return (head + "SELECT DISTINCT ?s ?sLabel ?o WHERE {\n" + where
                + f"  ?s p:{relation} ?st . ?st psv:{relation} ?v ; wikibase:rank ?rank .\n"
                + "  ?v wikibase:timeValue ?o ; wikibase:timePrecision ?prec .\n"
                + "  FILTER(?prec >= 9 && ?rank != wikibase:DeprecatedRank)\n"
                + f"  {label}\n}}\nLIMIT {limit}\n")
    return (head + "SELECT DISTINCT ?s ?sLabel ?o ?oLabel WHERE {\n" + where
            + f"  ?s wdt:{relation} ?o .\n  {label}\n}}\nLIMIT {limit}\n")


def read_sparql(response: dict, relation: str, where: str, stats: _FileStats | None = None) -> list[tuple[str, str]]:
    """(subject, object) facts of one cached SPARQL answer: ?sLabel with ?oLabel, or with ?o for year relations."""
    stats = stats if stats is not None else _FileStats()
    bindings = response.get("results", {}).get("bindings") if isinstance(response, dict) else None
    if not isinstance(bindings, list):
        raise DataError(f"{where}: no results.bindings list")
    okey = "o" if relation in YEAR_RELATIONS else "oLabel"
    pairs = []
    for i, b in enumerate(bindings):
        stats.lines += 1
        try:
            pairs.append((b["sLabel"]["value"], b[okey]["value"]))
        except (KeyError, TypeError):
            raise DataError(f"{where}: result {i}: expected ?sLabel and ?{okey} values") from None
    return list(_emit(relation, pairs, stats))
