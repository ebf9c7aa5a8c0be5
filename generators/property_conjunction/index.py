"""The ConceptNet edges of PROPERTY CONJUNCTION (:mod:`generators.property_conjunction`), indexed
(:class:`Index`): which (concept, predicate, object) hold, read both ways for a symmetric predicate (for the
absence checks), the usable terms, each usable concept's properties and its split (by a hash of the
concept), and the concepts with each property per split."""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from generators.shared.hashed_split import hashed_split
from generators.property_conjunction.params import PROBE, ConjunctionParams
from probekit.data.examples import SPLITS
from probekit.errors import DataError
from probekit.probes.lexicon import zipf

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(f"probekit.{PROBE}")
Prop = tuple[str, str]  # (predicate, object)


# --- the edges, indexed --------------------------------------------------------------------------------

DIGITS = re.compile(r"\b\d+\b")


def usable_term(term: str, min_zipf: float, function_words: frozenset[str]) -> bool:
    """Frequent enough, not made of function words only, no number in digits."""
    return (not DIGITS.search(term) and not all(w in function_words for w in term.split())
            and zipf(term) >= min_zipf)


def concept_split(concept: str, dev_share: float) -> str:
    """dev with probability ``dev_share``, by a hash of the concept (stable: no seed, no other param)."""
    return hashed_split(f"{PROBE}:{concept}", dev_share)


@dataclass
class Index:
    holds: set[tuple[str, str, str]]  # (concept, predicate, object) that hold: the edges, symmetric ones both ways
    props: dict[str, list[Prop]]  # usable concept -> its usable properties (sorted)
    by_prop: dict[str, dict[Prop, list[str]]]  # split -> property -> the split's usable concepts with the edge
    split_of: dict[str, str]  # usable concept -> split
    counts: dict


def edges_of(tables: Mapping) -> "pd.DataFrame":
    """The ``conceptnet`` set's ``edges`` table (relation, head, tail), or a DataError saying how to build it."""
    conceptnet = tables.get("conceptnet") if isinstance(tables, Mapping) else None
    if not conceptnet or "edges" not in conceptnet:
        raise DataError(f"{PROBE} reads the conceptnet table set (table edges): run `probes tables conceptnet`")
    edges = conceptnet["edges"]
    missing = [c for c in ("relation", "head", "tail") if c not in edges.columns]
    if missing:
        raise DataError(f"conceptnet/edges: missing column(s) {missing} (have: {list(edges.columns)})")
    return edges


def index(tables: Mapping, params: ConjunctionParams) -> Index:
    """What holds (for the absence checks) and the usable concepts and properties per split."""
    edges = edges_of(tables)
    wanted = set(params.predicates)
    symmetric = set(params.symmetric)
    rows = edges.loc[edges["relation"].isin(wanted), ["relation", "head", "tail"]].drop_duplicates()
    relations, heads, tails = (rows[c].astype(object).tolist() for c in ("relation", "head", "tail"))
    present = set(relations)
    absent = sorted(wanted - present)
    if absent:
        log.warning("%s: no conceptnet edge with predicate(s) %s (build the table with them: tables.conceptnet."
                    "relations)", PROBE, absent)
    holds = set(zip(heads, relations, tails))  # (concept, predicate, object): the concept has the property
    holds.update((t, r, h) for r, h, t in zip(relations, heads, tails) if r in symmetric)
    terms = set(heads) | set(tails)
    function_words = frozenset(params.function_words)
    ok = {term for term in terms if usable_term(term, params.min_zipf, function_words)}
    props: dict[str, list[Prop]] = defaultdict(list)
    for r, h, t in zip(relations, heads, tails):
        if h in ok and t in ok and h != t:
            props[h].append((r, t))
    split_of = {c: concept_split(c, params.dev_share) for c in props}
    by_prop: dict[str, dict[Prop, list[str]]] = {s: defaultdict(list) for s in SPLITS}
    for c in sorted(props):
        props[c].sort()
        for prop in props[c]:
            by_prop[split_of[c]][prop].append(c)
    counts = {"edges": len(relations), "terms": len(terms), "frequent_terms": len(ok),
              "concepts": {s: sum(v == s for v in split_of.values()) for s in SPLITS},
              "answer_candidates": {s: sum(len(props[c]) >= 2 and split_of[c] == s for c in props) for s in SPLITS}}
    return Index(holds, dict(props), by_prop, split_of, counts)
