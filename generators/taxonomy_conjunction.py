"""TAXONOMY CONJUNCTION (oLMpics §4.4, Table 9): the hypernym two concepts share, MC-MLM with three choices.

``A beagle and a poodle are both a type of [MASK] .`` -- gold ``dog``; the two distractors are hypernyms of
only one of the two concepts (the paper: "hypernyms of ENT-1 but not ENT-2, or vice versa"; its example
``A beer and a ricotta``: food, distractors ``alcohol`` and ``cheese``). The choices come from the data.

**One IsA relation** from the ``wordnet`` table set (``hypernyms``) and the ``conceptnet`` table set
(``edges``, relation ``IsA``), every fact keeping its source:

* WordNet: a row ``(concept, hypernym, depth <= max_depth)`` of the ``hypernyms`` table, the ancestor synset
  named by one word: its headword (the synset's name, ``dog.n.01`` -> ``dog``), or, when that is no usable
  choice (two words, rare), its most frequent usable lemma; a synset whose headword is a stop word gives no
  fact (``act.n.02`` = act, deed, human action: too generic under any of its names).
* ConceptNet: an ``IsA`` edge ``head -> tail`` whose head is a concept (below) and whose tail is a usable
  choice that is a WordNet noun sharing a lexicographer file with the head, or a ``noun.Tops`` word such as
  ``animal``, ``person``. The subsets are noisy (``lot IsA river``, ``sun IsA magazine``); this drops most of
  the noise and keeps ``basketball IsA game``. In dev the tail must even be above one of the concept's food /
  animal senses in WordNet (at any depth: ``beagle IsA animal`` is six steps up), so that a dev fact never
  comes from another sense (``kid IsA person``, ``snowflake IsA ice``).

Concepts (``x``, ``y``) are WordNet noun lemmas: letters and spaces, at most ``max_concept_words`` words,
each with a vowel (no abbreviation: ``thd``), wordfreq Zipf frequency ``>= min_zipf.concept`` (for a phrase
wordfreq's estimate, about its rarer word's, less one per extra word), no plural whose singular is the more
frequent noun (``cows``). Choices are one word of 3+ letters when ``single_word_hypernyms`` (zero-shot
MC-MLM scores one token per choice), a WordNet noun, Zipf ``>= min_zipf.hypernym``, not in
``stop_hypernyms`` (entity, object, thing, ...), no such plural, never a word of ``x`` or ``y``; with
``single_token``, one token at the mask for each tokenizer listed (the zero-shot evaluator refuses a row
with a multi-token choice).

**Construction** of a row (``x``, ``y``, gold ``g``, distractors ``dx``, ``dy``):

* ``g`` is a hypernym of ``x`` and of ``y`` (the facts above); when WordNet gives it for both, the same
  synset (``meal`` above ``oatmeal`` is ground grain, above ``refreshment`` a meal: no conjunction);
* ``dx`` is a hypernym of ``x`` and not of ``y``, ``dy`` of ``y`` and not of ``x`` -- one distractor per
  concept, as in the paper (a pair without both is skipped, counted). *Not a hypernym* is checked against
  everything the tables say, not only the facts above: the whole WordNet hierarchy above every sense of the
  other concept (rebuilt from the table's synset columns, so deeper than ``max_depth`` and than the table's
  own depth), every ConceptNet ``IsA`` tail of it (unfiltered), and the WordNet hierarchy above those;
* neither concept is a hypernym of the other (in that same wide sense): ``A beagle and a dog`` is left out;
* each unordered pair is used once, each concept in at most ``max_concept_uses`` rows;
* golds are hypernyms of at least ``min_gold_concepts`` concepts of the split (categories, not one-off
  senses) and are balanced: they take turns (round robin in a seeded order), each drawing its next valid
  pair (all pairs in a seeded order for a small gold, random pairs for a large one), until ``size`` rows are
  built or no gold has a pair left (then the split is smaller than asked: logged, and in
  :func:`availability`). The distractors are drawn uniformly among the valid ones; x and y in random order.

**Splits**: dev holds the concepts with a WordNet sense in ``dev_lexnames`` (``noun.food``,
``noun.animal``: the paper's food and animal taxonomies), and its WordNet facts come from those senses only
(``chicken`` is food or a bird in dev, never a coward). Train holds every other concept. So the concepts of
the two splits are disjoint; dev is built first, and train then uses none of the words of the dev rows,
neither as concept nor as choice (the release's choice sets are disjoint too).

**Articles**: the release writes ``A x and a y`` whatever the noun (``a elk``). Here a variant lists the
four article combinations as templates and each row takes the one the a/an rule asks for (variant option
``articles: a_an``; the rule: ``an`` before a vowel letter, with the exception lists of params
``articles``); ``articles: fixed`` writes every row with the variant's first template, as the release.
The article never precedes the mask, so it gives no hint of the answer. The controls (NO-LANG, PERTURBED)
refill the row's own template, so they keep its articles.

Rows: the oLMpics layout + ``probe``, ``variant``, ``template_id``, ``args`` ``{x, y}`` and ``facts``: every
fact of the relation above linking ``x`` or ``y`` to one of the row's choices, as ``{concept, hypernym,
source, via}`` (``source`` ``wordnet`` with ``via`` ``synset > synset (depth d)``, a row of the hypernyms
table; or ``conceptnet`` with the subset of the edge). :func:`rule` checks the construction from the row.

Known limit: WordNet *instances* (``dali``, ``samuel pepys``: the hypernyms table climbs
``instance_hypernyms()`` unless ``tables.wordnet.instance_hypernyms`` is false) are concepts like any other:
the table does not mark them, and lower-cased they look like common nouns.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterator, Literal, Mapping

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator

from generators import register
from probekit.errors import DataError
from probekit.examples import SPLITS, answer_text, example_problem, make_example
from probekit import lexicon
from probekit.lexicon import zipf
from probekit.params import ProbeParams, SplitSizes
from probekit.templates import ProbeSpec, TemplateError, Variant

PROBE = "taxonomy_conjunction"
log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]
SOURCES = ("wordnet", "conceptnet")
TOPS = "noun.Tops"  # WordNet's top categories (animal, food, person, plant, substance, ...)
CONCEPT = re.compile(r"[a-z]{2,}(?: [a-z]+)*")  # letters and single spaces; no one-letter word first ("l")
ONE_WORD = re.compile(r"[a-z]{3,}")  # a single-word choice
PLAIN = re.compile(r"[a-z]+")
VOWEL = re.compile(r"[aeiouy]")
ARTICLE = re.compile(r"(?<![\w{])([Aa]n?) \{([A-Za-z_][A-Za-z0-9_]*)\}")
SLOTS = ("x", "y")
PAIR_ENUMERATION = 60  # a gold with at most this many concepts tries all their pairs; above, random pairs
MAX_MISSES = 300  # consecutive invalid random pairs after which a gold counts as exhausted


class Zipf(BaseModel):
    """wordfreq Zipf thresholds (log10 of frequency per billion words; 3 = once per million)."""

    model_config = ConfigDict(extra="forbid")
    concept: float = Field(ge=0, le=8)
    hypernym: float = Field(ge=0, le=8)


class Articles(BaseModel):
    """The a/an rule: ``an`` before a vowel letter, except after these word beginnings."""

    model_config = ConfigDict(extra="forbid")
    vowel_but_a: list[str] = []  # "a unicorn", "a european", "a one"
    consonant_but_an: list[str] = []  # "an hour", "an heir"


class TaxonomyParams(ProbeParams):
    """``size.<split>``: rows per split (capped by the data); the rest filters concepts and hypernyms (see the
    module docstring and the probe YAML)."""

    size: SplitSizes
    max_depth: int = Field(3, ge=1)
    min_zipf: Zipf
    single_word_hypernyms: bool = True
    max_concept_words: PositiveInt = 2
    max_concept_uses: PositiveInt = 4
    min_gold_concepts: int = Field(2, ge=2)
    single_token: list[str] = []  # model specs whose tokenizer must see every choice as one token at the mask
    conceptnet: bool = True
    dev_lexnames: list[str] = Field(min_length=1)
    stop_hypernyms: list[str] = []
    articles: Articles = Articles()

    @field_validator("dev_lexnames")
    @classmethod
    def _nouns(cls, names):
        bad = [n for n in names if not re.fullmatch(r"noun\.[A-Za-z]+", n)]
        if bad:
            raise ValueError(f"must be WordNet noun lexicographer files like noun.food, got {bad}")
        return names


@dataclass(frozen=True)
class Fact:
    concept: str
    hypernym: str
    source: str  # wordnet | conceptnet
    via: str  # "beagle.n.01 > dog.n.01 (depth 2)" | the ConceptNet subset ("cn100k")

    def as_dict(self) -> dict:
        return {"concept": self.concept, "hypernym": self.hypernym, "source": self.source, "via": self.via}


class OneToken:
    """``word -> bool``: one token, at the mask, for every tokenizer of ``specs`` (``pkg:<module>``, a model
    folder, or a Hub id in the local cache), as the zero-shot evaluator tokenizes a candidate (in context,
    after a space: RoBERTa's ``Ġword``); always true without specs."""

    STEM = "A thing and a thing are both a type of [MASK] ."

    def __init__(self, specs: list[str]):
        self.specs, self._tokenizers, self._memo = list(specs), None, {}

    def _load(self) -> list:
        from transformers import AutoTokenizer

        from evaluators.models import resolve_model
        from probekit.errors import UsageError

        tokenizers = []
        for spec in self.specs:
            try:
                location = resolve_model(spec, {}, f"{PROBE}.single_token").location
            except UsageError as e:
                raise DataError(f"{PROBE}.single_token: {e} (or leave {spec!r} out of the list)") from None
            tokenizers.append(AutoTokenizer.from_pretrained(location))
        return tokenizers

    def __call__(self, word: str) -> bool:
        if not self.specs:
            return True
        if word not in self._memo:
            from evaluators.statements import encode_statements

            if self._tokenizers is None:
                self._tokenizers = self._load()
            self._memo[word] = all(encode_statements(tokenizer, [self.STEM], [[word]], [word]).single[0]
                                   for tokenizer in self._tokenizers)
        return self._memo[word]


def _col(df: pd.DataFrame, name: str) -> list:
    return df[name].tolist()  # plain Python values (iterating an Arrow-backed column is slow)


# --- the IsA relation --------------------------------------------------------------------------

class Taxonomy:
    """The positive IsA facts per split, and everything the tables say is above a concept."""

    def __init__(self, tables: Mapping, params: TaxonomyParams):
        hyper, edges = _tables(tables, params)
        self.params = params
        self._stop = frozenset(params.stop_hypernyms)
        self._one_token = OneToken(params.single_token)
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


# --- drawing the rows --------------------------------------------------------------------------

@dataclass(frozen=True)
class Pick:
    x: str
    y: str
    gold: str
    dx: str  # hypernym of x only
    dy: str  # hypernym of y only


def same_sense(facts_x: list[Fact], facts_y: list[Fact]) -> bool:
    """When WordNet puts the gold above both concepts, it is the same synset above both (``meal`` above
    ``oatmeal`` is ground grain, above ``refreshment`` an occasion of eating: no conjunction). A gold that one
    concept has from ConceptNet only (no sense) passes."""
    sx, sy = _wordnet_synsets(facts_x), _wordnet_synsets(facts_y)
    return not sx or not sy or bool(sx & sy)


def _wordnet_synsets(facts) -> set[str]:
    """The hypernym synsets of WordNet facts (``via`` ``a.n.01 > b.n.02 (depth 2)`` -> ``b.n.02``)."""
    out = set()
    for f in facts:
        if (f.source if isinstance(f, Fact) else f["source"]) == "wordnet":
            via = f.via if isinstance(f, Fact) else f["via"]
            out.add(via.split(" > ", 1)[1].split(" ", 1)[0])
    return out


def _pairs(members: list[str], rng: random.Random) -> Iterator[tuple[str, str]]:
    """Every pair of a small gold in a seeded order; random pairs (endless) for a large one."""
    if len(members) <= PAIR_ENUMERATION:
        pairs = list(itertools.combinations(members, 2))
        rng.shuffle(pairs)
        yield from pairs
        return
    while True:
        x, y = rng.sample(members, 2)
        yield x, y


def draw(tax: Taxonomy, p: TaxonomyParams, split: str, banned: set[str], counts: dict) -> list[Pick]:
    """``size.<split>`` picks (fewer when the data run out), golds balanced by round robin."""
    size, seed = p.size[split], p.seed
    concepts = sorted(c for c in tax.concepts[split] if c not in banned)
    hypers = {c: {h: f for h, f in tax.positive.get(c, {}).items() if h not in banned} for c in concepts}
    members: dict[str, list[str]] = defaultdict(list)
    for c in concepts:
        for h in hypers[c]:
            members[h].append(c)
    golds = sorted(g for g, m in members.items() if len(m) >= p.min_gold_concepts)
    rng = random.Random(f"{seed}:{PROBE}:{split}:golds")
    rng.shuffle(golds)
    streams = {g: (_pairs(members[g], random.Random(f"{seed}:{PROBE}:{split}:{g}")),
                   random.Random(f"{seed}:{PROBE}:{split}:{g}:draw")) for g in golds}
    uses: Counter = Counter()
    used_pairs: set[frozenset] = set()
    skipped: Counter = Counter()
    picks: list[Pick] = []
    per_gold: Counter = Counter()

    def valid(g: str, x: str, y: str, r: random.Random) -> Pick | None:
        if uses[x] >= p.max_concept_uses or uses[y] >= p.max_concept_uses:
            skipped["concept used max_concept_uses times"] += 1
            return None
        if frozenset((x, y)) in used_pairs:
            skipped["pair already used"] += 1
            return None
        ax, ay = tax.above(x), tax.above(y)
        if x in ay or y in ax:
            skipped["one concept is a hypernym of the other"] += 1
            return None
        words = set(x.split()) | set(y.split())
        if g in words:
            skipped["gold is a word of a concept"] += 1
            return None
        if not same_sense(hypers[x][g], hypers[y][g]):
            skipped["gold names different WordNet synsets for the two concepts"] += 1
            return None

        def only(c: str, other: str, above_other: frozenset[str]) -> list[str]:
            return sorted(h for h in hypers[c] if h != g and h != other and h not in above_other
                          and h not in words)

        dxs, dys = only(x, y, ay), only(y, x, ax)
        if not dxs or not dys:
            skipped["no distractor for " + ("either concept" if not dxs and not dys else "one concept")] += 1
            return None
        if r.random() < 0.5:  # which concept comes first in the stem
            x, y, dxs, dys = y, x, dys, dxs
        return Pick(x, y, g, r.choice(dxs), r.choice(dys))

    active = list(golds)
    while active and len(picks) < size:
        still = []
        for g in active:
            if len(picks) >= size:
                still.append(g)
                continue
            pairs, r = streams[g]
            misses, found = 0, None
            for x, y in pairs:
                found = valid(g, x, y, r)
                if found:
                    break
                misses += 1
                if len(members[g]) > PAIR_ENUMERATION and misses >= MAX_MISSES:
                    break
            if found is None:
                continue  # exhausted
            picks.append(found)
            per_gold[g] += 1
            uses[found.x] += 1
            uses[found.y] += 1
            used_pairs.add(frozenset((found.x, found.y)))
            still.append(g)
        active = still
    random.Random(f"{seed}:{PROBE}:{split}:order").shuffle(picks)
    counts.update({
        "asked": size, "built": len(picks), "concepts": len(concepts),
        "concepts_with_a_hypernym": sum(1 for c in concepts if hypers[c]),
        "golds_with_enough_concepts": len(golds), "golds_used": len(per_gold),
        "rows_per_gold": {"max": max(per_gold.values(), default=0), "min": min(per_gold.values(), default=0)},
        "concepts_used": len(uses), "pairs_rejected": dict(sorted(skipped.items())),
    })
    return picks


@dataclass(frozen=True)
class Plan:
    splits: dict[str, list[Pick]]
    taxonomy: Taxonomy
    counts: dict


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


def make_plan(tables: Mapping, params: TaxonomyParams) -> Plan:
    """Dev first (food and animal concepts), then train without any word of the dev rows."""
    tax = taxonomy(tables, params)
    counts: dict = {"facts": dict(sorted(tax.counts.items())), "splits": {}}
    dev = draw(tax, params, "dev", set(), counts["splits"].setdefault("dev", {}))
    dev_words = {w for pk in dev for w in (pk.x, pk.y, pk.gold, pk.dx, pk.dy)}
    train = draw(tax, params, "train", dev_words, counts["splits"].setdefault("train", {}))
    return Plan({"train": train, "dev": dev}, tax, counts)


def availability(tables: Mapping, params: TaxonomyParams | None = None) -> dict:
    """Facts kept and dropped, and per split the concepts, golds, rows asked and built, pairs rejected and why
    (JSON-able). ``params``: the YAML defaults."""
    if params is None:
        from generators import get
        from probekit.templates import load_probe_spec

        params = TaxonomyParams.model_validate(load_probe_spec(get(PROBE).template_path).params)
    return make_plan(tables, params).counts


def _log(counts: dict) -> None:
    log.info("%s: facts %s", PROBE, ", ".join(f"{k}: {v}" for k, v in counts["facts"].items()))
    for split, c in counts["splits"].items():
        log.info("%s/%s: %d rows of %d asked; %d concepts (%d with a hypernym), %d golds with min_gold_concepts, "
                 "%d used (rows per gold %d..%d); pairs rejected: %s", PROBE, split, c["built"], c["asked"],
                 c["concepts"], c["concepts_with_a_hypernym"], c["golds_with_enough_concepts"], c["golds_used"],
                 c["rows_per_gold"]["min"], c["rows_per_gold"]["max"],
                 ", ".join(f"{k}: {v}" for k, v in c["pairs_rejected"].items()) or "none")
        if c["built"] < c["asked"]:
            log.warning("%s/%s: the tables give %d rows, fewer than the %d asked", PROBE, split, c["built"],
                        c["asked"])


# --- articles and rows -------------------------------------------------------------------------

def article(word: str, rules: Articles) -> str:
    """``a`` or ``an`` before ``word`` by the shared rule, with the YAML's exceptions."""
    return lexicon.article(word, rules.vowel_but_a, rules.consonant_but_an)


def template_articles(text: str) -> dict[str, str]:
    """slot -> the article written before it (``A {x} and an {y}`` -> {x: a, y: an})."""
    return {slot: art.lower() for art, slot in ARTICLE.findall(text)}


def variant_templates(spec: ProbeSpec, variant: Variant) -> tuple[str, list[str]]:
    """(articles mode, template ids) of a base variant, checked: slots x and y; for ``a_an``, one template
    per article combination the rule may ask for."""
    mode = variant.options.get("articles", "a_an")
    if mode not in ("a_an", "fixed"):
        raise TemplateError(f"{spec.path}: variant {variant.name!r}: articles must be a_an or fixed, got {mode!r}")
    ids = list(variant.templates)
    for t in ids:
        template = spec.template(t)
        if sorted(template.slots) != sorted(SLOTS):
            raise TemplateError(f"{spec.path}: template {t!r}: needs the slots {list(SLOTS)}, has "
                                f"{list(template.slots)}")
    if mode == "a_an":
        have = {tuple(template_articles(spec.template(t).text).get(s) for s in SLOTS) for t in ids}
        lacking = [combo for combo in itertools.product(("a", "an"), repeat=2) if combo not in have]
        if lacking:
            raise TemplateError(f"{spec.path}: variant {variant.name!r} (articles: a_an): no template writes "
                                f"{' / '.join(f'{a} {{x}} ... {b} {{y}}' for a, b in lacking)}; list one "
                                f"template per article combination, or set articles: fixed")
    return mode, ids


def pick_template(spec: ProbeSpec, mode: str, ids: list[str], values: Mapping[str, str],
                  rules: Articles) -> str:
    """The first template whose articles fit ``values`` (``fixed``: the first template)."""
    if mode == "fixed":
        return ids[0]
    want = {s: article(values[s], rules) for s in SLOTS}
    for t in ids:
        arts = template_articles(spec.template(t).text)
        if all(arts.get(s, want[s]) == want[s] for s in SLOTS):
            return t
    raise TemplateError(f"{spec.path}: no template of {ids} fits the articles {want}")  # checked before


def facts_of(tax: Taxonomy, pick: Pick) -> list[dict]:
    """Every positive fact linking x or y to one of the choices, sorted."""
    choices = {pick.gold, pick.dx, pick.dy}
    facts = [f for c in (pick.x, pick.y) for h, fs in tax.positive.get(c, {}).items() if h in choices for f in fs]
    return [f.as_dict() for f in sorted(facts, key=lambda f: (f.concept != pick.x, f.hypernym, f.source, f.via))]


@register(PROBE, version="1", params=TaxonomyParams, tables=("wordnet", "conceptnet"))
def generate(spec: ProbeSpec, variant: Variant, params: TaxonomyParams, tables: Mapping) -> dict[str, list[dict]]:
    """The planned (x, y, gold, distractors) of each split in the variant's templates."""
    mode, ids = variant_templates(spec, variant)
    plan = make_plan(tables, params)
    _log(plan.counts)
    out = {}
    for split in SPLITS:
        rows = []
        for pk in plan.splits[split]:
            args = {"x": pk.x, "y": pk.y}
            tid = pick_template(spec, mode, ids, args, params.articles)
            rng = random.Random(f"{params.seed}:{PROBE}:{variant.name}:{pk.x}:{pk.y}")
            row = make_example(probe=spec.probe, variant=variant.name, template_id=tid,
                               stem=spec.template(tid).fill(args), choices=[pk.gold, pk.dx, pk.dy],
                               answer=pk.gold, args=args, rng=rng)
            row["facts"] = facts_of(plan.taxonomy, pk)
            rows.append(row)
        out[split] = rows
    return out


# --- the probe's own construction rule (fidelity report) ---------------------------------------

def rule(row: Mapping) -> str | None:
    """A problem of one of our rows, from the row alone: its ``facts`` (IsA facts of x and y, each with its
    source) must make the gold a hypernym of both concepts (the same WordNet synset when WordNet gives it for
    both) and each distractor of exactly one, one distractor per concept."""
    if example_problem(row):
        return None  # counted by the generic rules
    args = row.get("args") or {}
    x, y = args.get("x"), args.get("y")
    if not (isinstance(x, str) and isinstance(y, str) and x and y and x != y):
        return "args must hold two distinct concepts x and y"
    stem = row["question"]["stem"]
    if x not in stem or y not in stem:
        return "args.x or args.y is not in the stem"
    facts = row.get("facts")
    if not isinstance(facts, list) or not facts or not all(
            isinstance(f, Mapping) and all(isinstance(f.get(k), str) and f.get(k) for k in
                                           ("concept", "hypernym", "source", "via")) for f in facts):
        return "no facts: a list of {concept, hypernym, source, via}"
    if any(f["source"] not in SOURCES for f in facts):
        return f"a fact's source is not one of {list(SOURCES)}"
    if any(f["concept"] not in (x, y) for f in facts):
        return "a fact is about neither x nor y"
    of: dict[str, set[str]] = defaultdict(set)
    for f in facts:
        of[f["hypernym"]].add(f["concept"])
    gold = answer_text(row)
    if of.get(gold, set()) != {x, y}:
        return "the facts do not make the gold a hypernym of both concepts"
    if not same_sense(*([f for f in facts if f["hypernym"] == gold and f["concept"] == c] for c in (x, y))):
        return "the gold names different WordNet synsets above the two concepts"
    owners = []
    for c in row["question"]["choices"]:
        if c["label"] == row["answerKey"]:
            continue
        owner = of.get(c["text"], set())
        if len(owner) != 1:
            return f"the facts make distractor {c['text']!r} a hypernym of {len(owner)} of the concepts, not one"
        owners += owner
    if sorted(owners) != sorted((x, y)):
        return "the distractors are not one hypernym of x only and one of y only"
    return None
