"""The candidate pairs of ANTONYM NEGATION: the antonym and synonym edges of WordNet's lemma pairs and
ConceptNet, grouped into unordered one-word pairs, kept when their edges agree on the relation, both words
are frequent enough and a part of speech with a template fits (counted per reason when left out).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping

from generators.antonym_negation.params import PROBE, RELATIONS, AntonymParams
from probekit.errors import DataError
from probekit.probes.lexicon import at_least

WORDNET_POS = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective"}  # r (adverb): no template
CONCEPTNET_RELATIONS = {"Antonym": "antonym", "Synonym": "synonym"}
WORDNET_TABLE, CONCEPTNET_TABLE = "wordnet.lemma_pairs", "conceptnet.edges"
EDGE_KEYS = ("table", "source", "relation", "word1", "word2", "pos", "synset1", "synset2")
WORD = re.compile(r"[a-z]{2,}")


@dataclass(frozen=True)
class Pair:
    relation: str
    words: tuple[str, str]  # sorted
    pos: tuple[str, ...]  # the parts of speech it fits, in params pos_priority order
    pos_from: str  # wordnet (its WordNet senses) | lexicon (both words WordNet lemmas of it)
    edges: tuple[tuple[str, ...], ...]  # EDGE_KEYS, sorted

    def facts(self, pos: str) -> dict:
        return {"relation": self.relation, "pos": pos, "pos_from": self.pos_from,
                "edges": [dict(zip(EDGE_KEYS, e)) for e in self.edges]}


def _table(tables: Mapping, table_set: str, name: str, columns: Iterable[str]):
    try:
        df = tables[table_set][name]
    except KeyError:
        raise DataError(f"{PROBE}: table {table_set}.{name} missing (build it: probes tables {table_set})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{PROBE}: table {table_set}.{name} has no column(s) {missing}")
    return df


def _edges(tables: Mapping, sources: list[str], counts: Counter) -> dict[tuple[str, str], list[tuple]]:
    """Every usable edge by its sorted word pair (single words only; the rest counted)."""
    by_pair: dict[tuple[str, str], list[tuple]] = defaultdict(list)

    def add(df, label: str, table: str, columns: list[str | None]) -> None:
        one_word = df[columns[2]].str.fullmatch(WORD.pattern) & df[columns[3]].str.fullmatch(WORD.pattern)
        counts[f"{label} edges: not one alphabetic word each"] += int((~one_word).sum())
        counts[f"{label} edges: used"] += int(one_word.sum())
        df = df[one_word]
        values = [df[c].tolist() if c else [""] * len(df) for c in columns]
        for edge in zip([table] * len(df), *values):
            by_pair[tuple(sorted((edge[3], edge[4])))].append(edge)

    if "wordnet" in sources:
        lp = _table(tables, "wordnet", "lemma_pairs", ("relation", "word1", "word2", "pos", "synset1", "synset2"))
        lp = lp[lp["relation"].isin(RELATIONS)].assign(source="wordnet")
        add(lp, "wordnet", WORDNET_TABLE, ["source", "relation", "word1", "word2", "pos", "synset1", "synset2"])
    if "conceptnet" in sources:
        ed = _table(tables, "conceptnet", "edges", ("relation", "head", "tail", "source"))
        ed = ed[ed["relation"].isin(list(CONCEPTNET_RELATIONS))]
        add(ed, "conceptnet", CONCEPTNET_TABLE, ["source", "relation", "head", "tail", None, None, None])
    return by_pair


def _lexicon(tables: Mapping, words: set[str]) -> dict[str, set[str]]:
    """The parts of speech each of ``words`` has as a WordNet lemma (as far as the wordnet tables show)."""
    lex: dict[str, set[str]] = defaultdict(set)
    lp = _table(tables, "wordnet", "lemma_pairs", ("word1", "word2", "pos"))
    for col in ("word1", "word2"):
        hit = lp[lp[col].isin(words)]
        for w, p in zip(hit[col], hit["pos"]):
            if p in WORDNET_POS:
                lex[w].add(WORDNET_POS[p])
    hy = _table(tables, "wordnet", "hypernyms", ("concept", "hypernym"))
    for col in ("concept", "hypernym"):
        for w in set(hy[col][hy[col].isin(words)]):
            lex[w].add("noun")
    return lex


def relation_of(edge: Mapping | tuple) -> str | None:
    """antonym / synonym of an edge (WordNet's or ConceptNet's spelling), else None."""
    rel = edge["relation"] if isinstance(edge, Mapping) else edge[2]
    return rel if rel in RELATIONS else CONCEPTNET_RELATIONS.get(rel)


_LAST: list = []  # the last (frames, key, result) of candidate_pairs: the base variants share one pool


def candidate_pairs(tables: Mapping, params: AntonymParams, served: Iterable[str]) -> tuple[list[Pair], dict]:
    """The usable pairs (sorted) and counts of what was left out and why (the same tables and params as the
    last call: its result again)."""
    frames = tuple(df for name in sorted(tables) for df in (tables[name] or {}).values())
    key = (params.min_zipf, tuple(params.sources), tuple(params.pos_priority), tuple(sorted(set(served))))
    if _LAST and _LAST[1] == key and len(_LAST[0]) == len(frames) and all(a is b for a, b in zip(_LAST[0], frames)):
        return _LAST[2]
    result = _candidate_pairs(tables, params, served)
    _LAST[:] = [frames, key, result]
    return result


def _candidate_pairs(tables: Mapping, params: AntonymParams, served: Iterable[str]) -> tuple[list[Pair], dict]:
    counts: Counter = Counter()
    by_pair = _edges(tables, params.sources, counts)
    order = [p for p in params.pos_priority if p in set(served)]
    cn_only = {w for words, edges in by_pair.items() if all(e[0] == CONCEPTNET_TABLE for e in edges) for w in words}
    lex = _lexicon(tables, cn_only) if cn_only else {}
    pairs = []
    for words in sorted(by_pair):
        edges = tuple(sorted(set(by_pair[words])))
        relations = {relation_of(e) for e in edges}
        if len(relations) > 1:
            counts["pairs: an antonym in one source, a synonym in another"] += 1
            continue
        if not all(at_least(w, params.min_zipf) for w in words):
            counts["pairs: a word below min_zipf"] += 1
            continue
        senses = {WORDNET_POS.get(e[5]) for e in edges if e[0] == WORDNET_TABLE}
        if senses:
            fits, pos_from = senses - {None}, "wordnet"
        else:
            fits, pos_from = lex.get(words[0], set()) & lex.get(words[1], set()), "lexicon"
        fits = tuple(p for p in order if p in fits)
        if not fits:
            counts["pairs: " + ("WordNet adverbs (or a part of speech without template)" if senses
                                else "no part of speech both words have in WordNet")] += 1
            continue
        pairs.append(Pair(relations.pop(), words, fits, pos_from, edges))
    counts.update(f"pairs: kept, {p.relation}" for p in pairs)
    return pairs, dict(sorted(counts.items()))
