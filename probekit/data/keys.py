"""The stable key of an example, derived from what the example *is*, never from its text or its row order, and the
fields a diff compares, for each dataset family (a Hub config's rows, as :mod:`probekit.hub.export` publishes them).

=============  ========================================================  =============================================
family         key (within a config = dataset and variant, and a split)  compared fields
=============  ========================================================  =============================================
MC-MLM, MC-QA  ``args`` and ``facts``: the slot fills and the facts the  ``stem``, ``choices`` (texts, in order),
               row was built from                                        ``answer`` (text), ``template`` (template_id),
                                                                         ``source`` (a control row's source row),
                                                                         ``other`` (any further field)
ParaRel        relation, subject, object (the fact) and ``pattern_id``   ``stem`` (the query), ``choices`` (the
               (a ParaRel config is one relation)                        candidates), ``template`` (the pattern text)
pair sets      ``pair_id``: task, split and ``idx`` (the config is the   ``stem`` (both segments as read), ``answer``
               task's variant)                                           (the label), ``template`` (the style)
=============  ========================================================  =============================================

So a template's wording change keeps every key and changes the ``stem``; a new age range, another ConceptNet edge
or another T-REx object gives another example (one key removed, one added). ``id`` (a content hash of the row)
and a control row's ``source_id`` change with the text; the ``source`` field says when a control row points at
another source row. Two rows of one split with the same key (a dataset built outside probekit may have them)
are told apart by their order of appearance: the second is ``<key>#2``."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Callable, Iterable

import pandas as pd

FIELDS = ("stem", "choices", "answer", "template", "source", "other")
"""The compared fields, in the order reports list them."""

FAMILIES = {"mc_mlm": "mc", "mc_qa": "mc", "cloze_set": "cloze", "pair_cls": "pairs"}

_MC_KNOWN = {"id", "question", "answerKey", "probe", "variant", "template_id", "args", "facts", "source_id"}
_CLOZE_KNOWN = {"id", "relation", "pattern_id", "tuple_id", "sub_label", "obj_label", "pattern", "query",
                "candidates"}
_PAIRS_KNOWN = {"pair_id", "task", "split", "idx", "label", "variant", "sentence1", "sentence2", "segments", "style"}


def canonical(value) -> str:
    """One JSON text per value: keys sorted, no spaces, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _rest(row: dict, known: set, extra: bool) -> str:
    """The row's fields outside ``known`` (``extra``: whether any row of its split has such a field)."""
    if not extra:
        return ""
    rest = {k: v for k, v in row.items() if k not in known and v is not None}
    return canonical(rest) if rest else ""


def mc_key(row: dict) -> str:
    """An MC-MLM or MC-QA row's key: a digest of its ``args`` and ``facts`` (what the example is about, never its
    text). A control row has its base row's key; PERTURBED-LANG seeds its draws with it
    (:func:`probekit.probes.controls.perturbed_lang`)."""
    return _digest(canonical([row.get("args"), row.get("facts")]))


def _mc(row: dict, _lists: dict, extra: bool) -> tuple:
    q = row.get("question") or {}
    choices = [c.get("text") for c in q.get("choices") or []]
    answer = next((c.get("text") for c in q.get("choices") or [] if c.get("label") == row.get("answerKey")), None)
    args, facts = row.get("args"), row.get("facts")
    what = canonical(args) if args is not None else canonical(facts)
    return (mc_key(row), what, q.get("stem"), canonical(choices), answer,
            row.get("answerKey"), row.get("template_id"), row.get("source_id"), _rest(row, _MC_KNOWN, extra), row.get("id"))


_SEP = "\x1f"   # between a ParaRel key's parts (a character no subject, object or relation holds)


def _cloze(row: dict, lists: dict, extra: bool) -> tuple:
    sub, obj, pattern = row.get("sub_label"), row.get("obj_label"), row.get("pattern_id")
    candidates = tuple(row.get("candidates") or ())
    if candidates not in lists:   # a relation's candidates: one list, encoded once
        lists[candidates] = canonical(list(candidates))
    return (f"{row.get('relation')}{_SEP}{sub}{_SEP}{obj}{_SEP}{pattern}", f"{sub} -> {obj}, pattern {pattern}",
            row.get("query"), lists[candidates], obj, None, row.get("pattern"), None, _rest(row, _CLOZE_KNOWN, extra),
            row.get("id"))


def _pairs(row: dict, _lists: dict, extra: bool) -> tuple:
    pair = row.get("pair_id") or canonical([row.get("task"), row.get("split"), row.get("idx")])
    stem = f"{row.get('sentence1')}\n{row.get('sentence2')}"
    label = row.get("label")
    return (pair, pair, stem, None, None if label is None else str(label), None, row.get("style"), None,
            _rest(row, _PAIRS_KNOWN, extra), pair)


_ROW: dict[str, Callable[[dict, dict, bool], tuple]] = {"mc": _mc, "cloze": _cloze, "pairs": _pairs}
_KNOWN = {"mc": _MC_KNOWN, "cloze": _CLOZE_KNOWN, "pairs": _PAIRS_KNOWN}
COLUMNS = ("key", "what", "stem", "choices", "answer", "position", "template", "source", "other", "id")


def family(fmt: str) -> str:
    """``mc``, ``cloze`` or ``pairs`` for a dataset format (``mc_mlm``, ``mc_qa``, ``cloze_set``, ``pair_cls``)."""
    try:
        return FAMILIES[fmt]
    except KeyError:
        raise ValueError(f"no example key for the format {fmt!r} (known: {', '.join(FAMILIES)})") from None


def frame(fmt: str, rows: Iterable[dict]) -> pd.DataFrame:
    """One row per example: its ``key``, ``what`` (the key in words), the compared fields, ``position`` (the gold
    label of an MC row) and ``id``; ``row`` is the example's index in ``rows``."""
    fam = family(fmt)
    make, lists = _ROW[fam], {}
    rows = rows if isinstance(rows, list) else list(rows)
    columns: set = set()
    for r in rows:
        columns.update(r.keys())
    extra = bool(columns - _KNOWN[fam])
    df = pd.DataFrame([make(r, lists, extra) for r in rows], columns=list(COLUMNS), dtype=object)
    df["row"] = range(len(df))
    if not df["key"].is_unique:
        seen: Counter = Counter()
        keys = []
        for k in df["key"]:
            seen[k] += 1
            keys.append(k if seen[k] == 1 else f"{k}#{seen[k]}")
        df["key"] = keys
    return df
