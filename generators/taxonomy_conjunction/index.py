"""The IsA relation of TAXONOMY CONJUNCTION (:mod:`generators.taxonomy_conjunction`), indexed: the
:class:`Taxonomy` built from the ``wordnet`` hypernyms table and the ``conceptnet`` IsA edges holds the
concepts of each split, the positive facts (:class:`Fact`, each keeping its source) and everything the tables
put above a concept; :func:`taxonomy` keeps the last index built for the variants of one run."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Mapping

import pandas as pd

from generators.shared.single_token import OneToken
from generators.taxonomy_conjunction.params import PROBE, TaxonomyParams
from probekit.data.examples import SPLITS
from probekit.errors import DataError
from probekit.probes.lexicon import zipf

TOPS = "noun.Tops"  # WordNet's top categories (animal, food, person, plant, substance, ...)
CONCEPT = re.compile(r"[a-z]{2,}(?: [a-z]+)*")  # letters and single spaces; no one-letter word first ("l")
ONE_WORD = re.compile(r"[a-z]{3,}")  # a single-word choice
PLAIN = re.compile(r"[a-z]+")
VOWEL = re.compile(r"[aeiouy]")


@dataclass(frozen=True)
class Fact:
    concept: str
    hypernym: str
    source: str  # wordnet | conceptnet
    via: str  # "beagle.n.01 > dog.n.01 (depth 2)" | the ConceptNet subset ("cn100k")

    def as_dict(self) -> dict:
        return {"concept": self.concept, "hypernym": self.hypernym, "source": self.source, "via": self.via}


def _col(df: pd.DataFrame, name: str) -> list:
    return df[name].tolist()  # plain Python values (iterating an Arrow-backed column is slow)


# --- the IsA relation --------------------------------------------------------------------------

class Taxonomy:
    """The positive IsA facts per split, and everything the tables say is above a concept."""

    def __init__(self, tables: Mapping, params: TaxonomyParams):
        hyper, edges = _tables(tables, params)
        self.params = params
        self._stop = frozenset(params.stop_hypernyms)
        if params.single_token is None:
            raise ValueError(f"{PROBE}.single_token is null: resolve it against the params' models first "
                             f"(TaxonomyParams.with_models, as generators.shared.build.build_probe does)")
        self._one_token = OneToken(params.single_token, f"{PROBE}.single_token", params._models)
        dev_lex = set(params.dev_lexnames)
        self.counts: Counter = Counter()
        # the synset graph: every (synset, ancestor synset) pair of the table is an edge, so that the closure
        # is the whole hierarchy above a synset whatever the table's depth
        pairs = hyper[["concept_synset", "hypernym_synset"]].drop_duplicates()
        self._up: dict[str, list[str]] = defaultdict(list)
        for s, h in zip(_col(pairs, "concept_synset"), _col(pairs, "hypernym_synset")):
            self._up[s].append(h)
        self._lemmas: dict[str, set[str]] = defaultdict(set)
        self._synsets: dict[str, set[str]] = defaultdict(set)
        for col, scol in (("concept", "concept_synset"), ("hypernym", "hypernym_synset")):
            lemmas = hyper[[col, scol]].drop_duplicates()
            for w, s in zip(_col(lemmas, col), _col(lemmas, scol)):
                self._lemmas[s].add(w)
                self._synsets[w].add(s)
        lex = hyper[["concept_synset", "lexname"]].drop_duplicates()
        synset_lex = dict(zip(_col(lex, "concept_synset"), _col(lex, "lexname")))
        self.word_lex: dict[str, set[str]] = {w: {synset_lex.get(s, TOPS) for s in ss}
                                              for w, ss in self._synsets.items()}
        concept_lex: dict[str, set[str]] = defaultdict(set)
        for c, s in zip(_col(lemmas := hyper[["concept", "concept_synset"]].drop_duplicates(), "concept"),
                        _col(lemmas, "concept_synset")):
            concept_lex[c].add(synset_lex[s])
        self.concepts: dict[str, set[str]] = {s: set() for s in SPLITS}
        for c, lx in concept_lex.items():
            if self._good_concept(c):
                self.concepts["dev" if lx & dev_lex else "train"].add(c)
        self.counts["concepts_dev"] = len(self.concepts["dev"])
        self.counts["concepts_train"] = len(self.concepts["train"])
        split_of = {c: s for s, cs in self.concepts.items() for c in cs}
        # WordNet facts name an ancestor synset by one word: its headword (the synset's name, dog.n.01 -> dog);
        # none when that is a stop word (act.n.02 = act, deed, human action: too generic whatever its name);
        # when the headword is no usable choice (two words, rare), the synset's most frequent usable lemma
        heads: dict[str, str] = {}
        for s, ws in self._lemmas.items():
            name = s.rsplit(".", 2)[0].replace("_", " ").lower()
            if name in self._stop:
                continue
            if name in ws and self._good_hypernym(name):
                heads[s] = name
                continue
            usable = sorted((-zipf(w), w) for w in ws if self._good_hypernym(w))
            if usable:
                heads[s] = usable[0][1]
        self.positive: dict[str, dict[str, list[Fact]]] = defaultdict(lambda: defaultdict(list))
        wn = hyper[(hyper["depth"] <= params.max_depth) & hyper["concept"].isin(split_of)]
        wn = wn[["concept", "concept_synset", "hypernym_synset", "depth", "lexname"]].drop_duplicates()
        for c, cs, hs, d, lx in zip(*(_col(wn, k) for k in wn.columns)):
            head = heads.get(hs)
            if head is None or head == c or head in c.split():
                continue
            if split_of[c] == "dev" and lx not in dev_lex:
                self.counts["wordnet_facts_other_sense_of_dev_concept"] += 1
                continue
            self.positive[c][head].append(Fact(c, head, "wordnet", f"{cs} > {hs} (depth {int(d)})"))
            self.counts["wordnet_facts"] += 1
        dev_memo: dict[str, set[str]] = {}

        def dev_above(c: str) -> set[str]:
            if c not in dev_memo:
                dev_memo[c] = {w for s in self._synsets[c] if synset_lex.get(s) in dev_lex
                               for a in self._synset_ancestors(s) for w in self._lemmas[a]}
            return dev_memo[c]

        self._cn_tails: dict[str, set[str]] = defaultdict(set)
        isa = edges[edges["relation"] == "IsA"] if edges is not None else None
        for c, t, src in ([] if isa is None else zip(_col(isa, "head"), _col(isa, "tail"), _col(isa, "source"))):
            self._cn_tails[c].add(t)
            split = split_of.get(c)
            if split is None or not params.conceptnet or t == c or t in c.split() or not self._good_hypernym(t):
                continue
            if split == "dev" and t not in dev_above(c):  # dev: a word above the food / animal senses
                self.counts["conceptnet_facts_outside_the_dev_senses_hierarchy"] += 1
                continue
            if split == "train" and not (self.word_lex.get(t, set()) & (concept_lex[c] | {TOPS})):
                self.counts["conceptnet_facts_no_shared_lexname"] += 1
                continue
            self.positive[c][t].append(Fact(c, t, "conceptnet", str(src)))
            self.counts["conceptnet_facts"] += 1
        self._above: dict[str, frozenset[str]] = {}

    def _plural(self, w: str) -> bool:
        """``cows``, ``organs``: a plural whose singular is a WordNet noun at least as frequent."""
        for end, repl in (("ies", "y"), ("es", ""), ("s", "")):
            if w.endswith(end) and (sing := w[: -len(end)] + repl) in self._synsets and zipf(sing) >= zipf(w):
                return True
        return False

    def _good_concept(self, c: str) -> bool:
        words = c.split()
        return (CONCEPT.fullmatch(c) is not None and len(words) <= self.params.max_concept_words
                and all(VOWEL.search(w) for w in words)  # no abbreviation ("thd", "tv")
                and zipf(c) - (len(words) - 1) >= self.params.min_zipf.concept and not self._plural(words[-1]))

    def _good_hypernym(self, h: str) -> bool:
        """A usable choice: one word (``single_word_hypernyms``), frequent, not generic, a WordNet noun."""
        p = self.params
        return ((ONE_WORD if p.single_word_hypernyms else CONCEPT).fullmatch(h) is not None
                and h not in self._stop and h in self._synsets and zipf(h) >= p.min_zipf.hypernym
                and not self._plural(h.split()[-1]) and self._one_token(h))

    def _synset_ancestors(self, synset: str) -> frozenset[str]:
        """Every synset above ``synset`` (iterative depth-first, memoised)."""
        memo = self.__dict__.setdefault("_ancestors", {})
        if synset in memo:
            return memo[synset]
        stack, seen = [synset], {synset}
        while stack:  # post-order over the synsets not memoised yet
            s = stack[-1]
            todo = [h for h in self._up.get(s, ()) if h not in memo and h not in seen]
            if todo:
                seen.update(todo)
                stack.extend(todo)
                continue
            stack.pop()
            out = set()
            for h in self._up.get(s, ()):
                out.add(h)
                out |= memo.get(h, frozenset())
            memo[s] = frozenset(out)
        return memo[synset]

    def words_above(self, word: str) -> frozenset[str]:
        """Lemmas of every WordNet synset above any sense of ``word``."""
        out = set()
        for s in self._synsets.get(word, ()):
            for a in self._synset_ancestors(s):
                out |= self._lemmas[a]
        return frozenset(out)

    def above(self, concept: str) -> frozenset[str]:
        """Everything the tables put above ``concept``: the WordNet hierarchy over all its senses (any depth),
        its ConceptNet IsA tails (unfiltered) and the WordNet hierarchy above those."""
        if concept not in self._above:
            out = set(self.words_above(concept))
            for t in self._cn_tails.get(concept, ()):
                out.add(t)
                out |= self.words_above(t)
            out.discard(concept)
            self._above[concept] = frozenset(out)
        return self._above[concept]


def _tables(tables: Mapping, params: TaxonomyParams) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    wordnet = tables.get("wordnet") if isinstance(tables, Mapping) else None
    if not wordnet or "hypernyms" not in wordnet:
        raise DataError(f"{PROBE} reads the wordnet table set (table hypernyms): run "
                        f"`probes tables wordnet --out data/tables/wordnet` first")
    hyper = wordnet["hypernyms"]
    cols = ["concept", "hypernym", "concept_synset", "hypernym_synset", "depth", "lexname"]
    missing = [c for c in cols if c not in hyper.columns]
    if missing:
        raise DataError(f"wordnet/hypernyms: missing column(s) {missing} (have: {list(hyper.columns)})")
    deepest = int(hyper["depth"].max()) if len(hyper) else 0
    if params.max_depth > deepest:
        raise DataError(f"{PROBE}.max_depth is {params.max_depth} but the wordnet hypernyms table goes only "
                        f"{deepest} steps up: rebuild it with tables.wordnet.max_depth >= {params.max_depth}")
    conceptnet = tables.get("conceptnet") if isinstance(tables, Mapping) else None
    edges = None
    if conceptnet is not None:
        if "edges" not in conceptnet:
            raise DataError("conceptnet: no table edges")
        edges = conceptnet["edges"]
        missing = [c for c in ("relation", "head", "tail", "source") if c not in edges.columns]
        if missing:
            raise DataError(f"conceptnet/edges: missing column(s) {missing} (have: {list(edges.columns)})")
    elif params.conceptnet:
        raise DataError(f"{PROBE} reads the conceptnet table set (table edges) unless {PROBE}.conceptnet is "
                        f"false: run `probes tables conceptnet --out data/tables/conceptnet` first")
    return hyper, edges


_LAST: list = []  # [(hypernyms table, edges table, params key, Taxonomy)]: the last index built
_INDEX_PARAMS = {"max_depth", "min_zipf", "single_word_hypernyms", "max_concept_words", "conceptnet",
                 "dev_lexnames", "stop_hypernyms", "single_token"}


def taxonomy(tables: Mapping, params: TaxonomyParams) -> Taxonomy:
    """The index of ``tables`` under ``params``; the last one is kept for a build of the same tables with other
    seeds or sizes (the same table objects: a run reads its tables once)."""
    hyper, edges = _tables(tables, params)
    key = params.model_dump_json(include=_INDEX_PARAMS)
    if _LAST and _LAST[0][0] is hyper and _LAST[0][1] is edges and _LAST[0][2] == key:
        return _LAST[0][3]
    tax = Taxonomy(tables, params)
    _LAST[:] = [(hyper, edges, key, tax)]
    return tax
