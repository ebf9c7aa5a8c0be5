"""ANTONYM NEGATION (oLMpics §4.3): "It was [MASK] hot, it was really cold ." -> not; with synonyms -> really.

Pairs: WordNet lemma antonyms and synonyms (table ``wordnet.lemma_pairs``) and ConceptNet ``Antonym`` /
``Synonym`` edges (table ``conceptnet.edges``, any of its sources), as unordered word pairs; params
``sources`` picks which. A pair is kept when

* both words are one alphabetic word of two letters or more (``[a-z]{2,}``: no phrases, hyphens, digits);
* its edges agree on the relation: a pair that one used source calls antonyms and another (or another
  sense) synonyms is dropped;
* both words reach params ``min_zipf`` (wordfreq's zipf frequency, English; the paper used Google Books);
* it has a part of speech with a template in the variant: a pair with WordNet edges takes their senses'
  (n -> noun, v -> verb, a/s -> adjective; adverbs have no template and are left out, where the release
  put them in the noun template, "It was [MASK] a finally, ..."); a pair with ConceptNet edges only takes
  the parts of speech in which *both* words are WordNet lemmas (words of ``wordnet.lemma_pairs`` in that
  part of speech, nouns of ``wordnet.hypernyms``). Several: the first of params ``pos_priority``.
  ``facts.pos_from`` says which (``wordnet`` or ``lexicon``).

Splits, no word in both (the release's vocabularies are disjoint too): every word gets a fixed number
``u`` in [0, 1) from a hash of (seed, word). dev takes, per relation and part of speech, the pairs with the
smallest ``max(u(x), u(y))`` (pairs among a random set of words, so few pairs are lost to train), passing
over a pair whose word is already in params ``dev_word_limit`` dev rows while other pairs remain; every
word of a dev pair is a dev word, and train draws from the pairs without a dev word (shuffled, seeded).

Sizes: params ``size`` (default the release's 4,779 / 500), half antonyms and half synonyms *within each
template's part of speech* (an odd size gives antonyms one more row), so neither the template nor the
part of speech hints at the answer (in the release 75% of the adjective rows are antonyms, 36% of the
noun rows). Parts of speech share a split in proportion to their pairs (the fewer of antonyms and
synonyms). Each pair appears once, in a random direction (a hash of the pair); when a group has too few
pairs, ``reverse_to_fill`` adds pairs the other way round (the release has 1,224 pairs in both directions
in train), and beyond that the size is capped (both relations alike) and logged.

Templates: a variant's option ``pos`` maps noun / adjective / verb to its templates; with ``articles:
rule`` a noun pair takes the template whose articles (the word written before each slot) are the rule's:
"an" before a word starting with a vowel letter (a, e, i, o, u), else "a" (letters, not sounds: "an
university", "a hour"). ``articles: as_written`` (``release_phrasing``) fills the one template as it is.
Base variants serving the same parts of speech hold the same pairs in the same order and choice order.

Rows: the oLMpics layout + ``probe``, ``variant``, ``template_id``, ``args`` ({x, y}: the words in stem
order) and ``facts``: ``relation``, ``pos``, ``pos_from`` and ``edges``, every table row of the pair
({table, source, relation, word1, word2, pos, synset1, synset2}; ConceptNet's word1/word2 are head/tail,
its pos and synsets empty). :func:`rule` checks from the row that the edges support the gold.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Literal, Mapping

from pydantic import Field, PositiveInt, field_validator

from generators import register
from probekit.errors import DataError
from probekit.examples import SPLITS, answer_text, make_example
from probekit.lexicon import article, at_least
from probekit.params import ProbeParams, SplitSizes
from probekit.templates import ProbeSpec, Template, TemplateError, Variant

PROBE = "antonym_negation"
log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]
PartOfSpeech = Literal["noun", "adjective", "verb"]
POS = ("noun", "adjective", "verb")
RELATIONS = ("antonym", "synonym")  # the templates' outcomes; with an odd size antonyms get the extra row
WORDNET_POS = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective"}  # r (adverb): no template
CONCEPTNET_RELATIONS = {"Antonym": "antonym", "Synonym": "synonym"}
WORDNET_TABLE, CONCEPTNET_TABLE = "wordnet.lemma_pairs", "conceptnet.edges"
EDGE_KEYS = ("table", "source", "relation", "word1", "word2", "pos", "synset1", "synset2")
WORD = re.compile(r"[a-z]{2,}")
ARTICLES = ("a", "an")
OPTIONS = ("pos", "articles")


class AntonymParams(ProbeParams):
    """Sizes, the frequency filter, the pair sources, and how ambiguous or scarce pairs are handled."""

    size: SplitSizes
    min_zipf: float = Field(ge=0, le=8)
    sources: list[Literal["wordnet", "conceptnet"]] = Field(min_length=1)
    pos_priority: list[PartOfSpeech]
    reverse_to_fill: bool = True
    dev_word_limit: PositiveInt = 3

    @field_validator("sources")
    @classmethod
    def _distinct(cls, sources):
        if len(set(sources)) != len(sources):
            raise ValueError(f"repeated source in {sources}")
        return sources

    @field_validator("pos_priority")
    @classmethod
    def _permutation(cls, order):
        if sorted(order) != sorted(POS):
            raise ValueError(f"must list each of {list(POS)} once, got {order}")
        return order


# --- templates per part of speech ----------------------------------------------------------------------


def template_articles(template: Template) -> tuple[str | None, ...]:
    """Per slot, the article written just before it (``a`` / ``an``, lower case) or None."""
    return _articles(template.text, tuple(template.slots))


@functools.lru_cache(maxsize=None)
def _articles(text: str, slots: tuple[str, ...]) -> tuple[str | None, ...]:
    out = []
    for slot in slots:
        m = re.search(r"(?<![\w{])(an?)\s+\{" + re.escape(slot) + r"\}", text, flags=re.IGNORECASE)
        out.append(m.group(1).lower() if m else None)
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    """A base variant's templates by part of speech and its article mode."""

    by_pos: Mapping[str, tuple[str, ...]]
    articles: str  # rule | as_written

    def template_for(self, spec: ProbeSpec, pos: str, x: str, y: str) -> Template:
        ids = self.by_pos[pos]
        if self.articles == "as_written":
            return spec.template(ids[0])
        for tid in ids:
            template = spec.template(tid)
            words = dict(zip(template.slots, (x, y)))
            want = tuple(None if a is None else article(words[s])
                         for s, a in zip(template.slots, template_articles(template)))
            if template_articles(template) == want:
                return template
        raise TemplateError(f"{spec.path}: no {pos} template with the articles of {x!r}, {y!r}")  # layout() forbids


def layout(spec: ProbeSpec, variant: Variant) -> Layout:
    """The variant's ``pos`` / ``articles`` options, checked against its templates; errors name the YAML."""
    where = f"{spec.path}: variant {variant.name!r}"
    unknown = sorted(set(variant.options) - set(OPTIONS))
    if unknown:
        raise TemplateError(f"{where}: unknown option(s) {unknown} (known: {', '.join(OPTIONS)})")
    by_pos = variant.options.get("pos")
    if not isinstance(by_pos, Mapping) or not by_pos:
        raise TemplateError(f"{where}: needs `pos`, a mapping of part of speech ({', '.join(POS)}) -> template ids")
    bad = sorted(set(by_pos) - set(POS))
    if bad:
        raise TemplateError(f"{where}: pos: unknown part(s) of speech {bad} (known: {', '.join(POS)})")
    mode = variant.options.get("articles", "rule")
    if mode not in ("rule", "as_written"):
        raise TemplateError(f"{where}: articles must be rule or as_written, got {mode!r}")
    listed: list[str] = []
    for pos, ids in by_pos.items():
        if not isinstance(ids, list) or not ids or not all(isinstance(t, str) for t in ids):
            raise TemplateError(f"{where}: pos.{pos} must be a non-empty list of template ids, got {ids!r}")
        listed += ids
        for tid in ids:
            template = spec.template(tid)
            if tuple(template.slots) != ("x", "y") or set(template.answers) != set(RELATIONS):
                raise TemplateError(f"{where}: template {tid!r} needs slots [x, y] and answers for "
                                    f"{' and '.join(RELATIONS)}")
        if mode == "as_written" and len(ids) != 1:
            raise TemplateError(f"{where}: with articles: as_written, pos.{pos} takes one template, got {ids}")
        if mode == "rule":
            signatures = [template_articles(spec.template(t)) for t in ids]
            slots = {tuple(a is not None for a in s) for s in signatures}
            need = len(ARTICLES) ** sum(next(iter(slots))) if len(slots) == 1 else None
            if need is None or len(set(signatures)) != len(signatures) or len(signatures) != need:
                raise TemplateError(f"{where}: with articles: rule, pos.{pos} needs one template per article form "
                                    f"(a/an before the same slots), got {dict(zip(ids, signatures))}")
    if sorted(listed) != sorted(variant.templates) or len(set(listed)) != len(listed):
        raise TemplateError(f"{where}: `templates` {list(variant.templates)} must list exactly the ids of `pos` "
                            f"({listed}), each once")
    return Layout({p: tuple(ids) for p, ids in by_pos.items()}, mode)


# --- candidate pairs ------------------------------------------------------------------------------------


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


# --- splits ----------------------------------------------------------------------------------------------


def _unit(*key: object) -> float:
    """A number in [0, 1) fixed by ``key``."""
    digest = hashlib.sha256(":".join(map(str, key)).encode("utf-8")).hexdigest()
    return int(digest[:15], 16) / 16 ** 15


def largest_remainder(n: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``n`` split over the keys in proportion to ``weights`` (sums to ``n``; ties go to earlier keys)."""
    total = sum(weights.values())
    if n <= 0 or total <= 0:
        return {k: 0 for k in weights}
    quota = {k: n * w / total for k, w in weights.items()}
    out = {k: int(q) for k, q in quota.items()}
    keys = list(weights)
    for k in sorted(keys, key=lambda k: (-(quota[k] - out[k]), keys.index(k)))[: n - sum(out.values())]:
        out[k] += 1
    return out


def allocate(n: int, avail: Mapping[str, Mapping[str, int]], cap: Mapping[str, Mapping[str, int]]
             ) -> dict[str, dict[str, int]]:
    """Rows per part of speech and relation: ``n // 2`` synonyms, as many antonyms, each part of speech with
    as many of both (shares in proportion to ``min(avail)``, within ``cap``), and an odd ``n``'s extra row an
    antonym. A shortfall caps both relations alike."""
    weight = {p: min(avail[p][r] for r in RELATIONS) for p in avail}
    limit = {p: min(cap[p][r] for r in RELATIONS) for p in cap}
    take = {p: 0 for p in avail}
    while True:
        left = n // 2 - sum(take.values())
        room = {p: weight[p] or 1 for p in take if take[p] < limit[p]}
        if left <= 0 or not room:
            break
        for p, k in largest_remainder(left, room).items():
            take[p] = min(limit[p], take[p] + k)
    out = {p: {r: t for r in RELATIONS} for p, t in take.items()}
    if n % 2 and sum(take.values()) == n // 2:
        spare = [p for p in out if cap[p][RELATIONS[0]] > out[p][RELATIONS[0]]]
        if spare:
            out[max(spare, key=lambda p: weight[p])][RELATIONS[0]] += 1
    return out


def _pick(ordered: list[Pair], t: int, reverse: bool, seed: int) -> list[tuple[Pair, bool]]:
    """The first ``t`` pairs, each in its own direction (flipped or not by a hash of the pair); past the
    end, with ``reverse``, the same pairs again the other way round."""
    flips = [_unit(seed, PROBE, "direction", *p.words) < 0.5 for p in ordered]
    chosen = list(zip(ordered, flips))[:t]
    if reverse and t > len(ordered):
        chosen += [(p, not f) for p, f in zip(ordered, flips)][: t - len(ordered)]
    return chosen


def _spread(ordered: list[Pair], t: int, uses: Counter, limit: int) -> list[Pair]:
    """``ordered`` with the pairs whose words are still under ``limit`` uses (counted in ``uses`` as the first
    ``t`` are taken) moved to the front, in order; the others follow, so ``t`` is never cut short."""
    first, rest = [], []
    for p in ordered:
        if len(first) < t and all(uses[w] < limit for w in p.words):
            first.append(p)
            uses.update(p.words)
        else:
            rest.append(p)
    for p in rest[: max(0, t - len(first))]:
        uses.update(p.words)
    return first + rest


def split_pairs(pairs: list[Pair], params: AntonymParams) -> tuple[dict[str, list[tuple[Pair, str, bool]]], dict]:
    """{split: [(pair, pos, flipped)]} (dev first, then train from the pairs without a dev word) and a report."""
    groups: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for p in pairs:
        groups[p.relation, p.pos[0]].append(p)
    served = sorted({p.pos[0] for p in pairs}, key=POS.index)
    u = functools.lru_cache(maxsize=None)(lambda w: _unit(params.seed, PROBE, "word", w))
    factor = 2 if params.reverse_to_fill else 1
    out: dict[str, list[tuple[Pair, str, bool]]] = {}
    report: dict = {}
    dev_words: set[str] = set()
    uses: Counter = Counter()  # dev rows per word so far
    for split in ("dev", "train"):
        pool = {k: [p for p in g if not (dev_words & set(p.words))] for k, g in groups.items()}
        avail = {pos: {r: len(pool.get((r, pos), [])) for r in RELATIONS} for pos in served}
        cap = {pos: {r: factor * n for r, n in rel.items()} for pos, rel in avail.items()}
        counts = allocate(params.size[split], avail, cap)
        rows: list[tuple[Pair, str, bool]] = []
        reversed_ = 0
        for pos in served:
            for rel in RELATIONS:
                group = sorted(pool.get((rel, pos), []), key=lambda p: p.words)
                if split == "dev":
                    group.sort(key=lambda p: (max(u(w) for w in p.words), p.words))
                    group = _spread(group, counts[pos][rel], uses, params.dev_word_limit)
                else:
                    random.Random(f"{params.seed}:{PROBE}:{split}:{rel}:{pos}").shuffle(group)
                chosen = _pick(group, counts[pos][rel], params.reverse_to_fill, params.seed)
                reversed_ += max(0, len(chosen) - len(group))
                rows += [(p, pos, f) for p, f in chosen]
        random.Random(f"{params.seed}:{PROBE}:{split}:order").shuffle(rows)
        out[split] = rows
        words = {w for p, _, _ in rows for w in p.words}
        report[split] = {"asked": params.size[split], "rows": len(rows),
                         "rows_by_pos_relation": {f"{pos}/{r}": counts[pos][r] for pos in served for r in RELATIONS},
                         "pairs_available": {f"{pos}/{r}": n for pos, rel in avail.items() for r, n in rel.items()},
                         "reversed_rows": reversed_, "words": len(words)}
        if split == "dev":
            dev_words = words
            report["train_pairs_lost_to_dev_words"] = sum(
                1 for p in pairs if dev_words & set(p.words)) - len({p.words for p, _, _ in rows})
    return out, report


# --- the generator -------------------------------------------------------------------------------------


@register(PROBE, version="1", params=AntonymParams, tables=("conceptnet", "wordnet"))
def generate(spec: ProbeSpec, variant: Variant, params: AntonymParams, tables: Mapping) -> dict[str, list[dict]]:
    """The split pairs, each filled into the template of its part of speech (and articles)."""
    lay = layout(spec, variant)
    pairs, counts = candidate_pairs(tables, params, lay.by_pos)
    chosen, report = split_pairs(pairs, params)
    log.info("%s/%s: candidate pairs: %s", PROBE, variant.name, counts)
    for split in ("dev", "train"):
        r = report[split]
        log.info("%s/%s: %s: %d rows of %d asked (%s), %d rows reversed, %d words; pairs available %s", PROBE,
                 variant.name, split, r["rows"], r["asked"], r["rows_by_pos_relation"], r["reversed_rows"],
                 r["words"], r["pairs_available"])
        if r["rows"] < r["asked"]:
            log.warning("%s/%s: %s capped at %d rows (asked %d): too few pairs", PROBE, variant.name, split,
                        r["rows"], r["asked"])
    log.info("%s/%s: pairs left out of train for sharing a word with dev: %d", PROBE, variant.name,
             report["train_pairs_lost_to_dev_words"])
    splits: dict[str, list[dict]] = {}
    for split in SPLITS:
        rows = []
        for pair, pos, flipped in chosen[split]:
            x, y = pair.words[::-1] if flipped else pair.words
            template = lay.template_for(spec, pos, x, y)
            args = {"x": x, "y": y}
            row = make_example(probe=spec.probe, variant=variant.name, template_id=template.id,
                               stem=template.fill(args), choices=list(template.answers.values()),
                               answer=template.answers[pair.relation], args=args,
                               rng=random.Random(f"{params.seed}:{PROBE}:{split}:{x}:{y}"))
            row["facts"] = pair.facts(pos)
            rows.append(row)
        splits[split] = rows
    return splits


# --- the construction rule (fidelity report) ------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _spec() -> ProbeSpec:
    import generators
    from probekit.templates import load_probe_spec

    return load_probe_spec(generators.get(PROBE).template_path)


@functools.lru_cache(maxsize=None)
def _layout(name: str) -> Layout:
    spec = _spec()
    return layout(spec, spec.variants[name])


def rule(row: Mapping) -> str | None:
    """ANTONYM NEGATION's construction rule, from the row: its ``facts.edges`` name the pair {x, y} and all
    give one relation; the gold is ``not`` for an antonym pair, ``really`` for a synonym pair (the NO-LANG
    words in that control; a control's row without facts is not checked); in a base variant the stem is
    the template of the pair's part of speech (a WordNet pair's: one of its senses') filled with x and y,
    with the articles of the rule."""
    spec = _spec()
    template = spec.templates.get(row.get("template_id"))
    if template is None:
        return f"unknown template {row.get('template_id')!r}"
    args = row.get("args") or {}
    x, y = args.get("x"), args.get("y")
    if set(args) != {"x", "y"} or not all(isinstance(w, str) and WORD.fullmatch(w) for w in (x, y)) or x == y:
        return f"args must be two different single words x, y; got {dict(args)}"
    variant = spec.variants.get(row.get("variant"))
    if variant is None:
        return f"unknown variant {row.get('variant')!r}"
    facts = row.get("facts")
    if variant.control and facts is None:
        return None  # the controls' rows keep no facts (their source_id names the base row)
    if not isinstance(facts, Mapping) or not isinstance(facts.get("edges"), list) or not facts["edges"]:
        return "no facts.edges (the table rows of the pair)"
    edges = facts["edges"]
    if not all(isinstance(e, Mapping) and set(EDGE_KEYS) <= set(e) for e in edges):
        return f"every edge needs {', '.join(EDGE_KEYS)}"
    stray = [e for e in edges if {e["word1"], e["word2"]} != {x, y}]
    if stray:
        return f"edge {stray[0]['word1']!r}-{stray[0]['word2']!r} is not the pair {x!r}-{y!r}"
    tables = {e["table"] for e in edges} - {WORDNET_TABLE, CONCEPTNET_TABLE}
    if tables:
        return f"edges from unknown table(s) {sorted(tables)}"
    relations = {relation_of(e) for e in edges}
    if None in relations or len(relations) != 1:
        return f"the edges give relations {sorted(map(str, relations))}, not one of {list(RELATIONS)}"
    relation = relations.pop()
    if facts.get("relation") != relation:
        return f"facts.relation {facts.get('relation')!r}, but the edges say {relation!r}"
    expected = template.answers[relation]
    if variant.control == "nolang":
        expected = spec.nolang_answers.get(expected, expected)
    gold = answer_text(row)
    if gold != expected:
        return f"gold {gold!r}, but {x!r}-{y!r} is a {relation} pair: {expected!r}"
    if variant.control:
        return None
    lay = _layout(variant.name)
    pos = facts.get("pos")
    if template.id not in lay.by_pos.get(pos, ()):
        return f"template {template.id!r} does not serve facts.pos {pos!r} in variant {variant.name!r}"
    senses = {WORDNET_POS.get(e["pos"]) for e in edges if e["table"] == WORDNET_TABLE}
    if senses and pos not in senses:
        return f"part of speech {pos!r}, but the pair's WordNet senses are {sorted(map(str, senses))}"
    if facts.get("pos_from") != ("wordnet" if senses else "lexicon"):
        return f"facts.pos_from {facts.get('pos_from')!r} with {'' if senses else 'no '}WordNet edges"
    if row["question"]["stem"] != template.fill(args):
        return "stem is not the template filled with args"
    if lay.articles == "rule" and lay.template_for(spec, pos, x, y).id != template.id:
        return f"articles of {template.id!r} are not the rule's for {x!r}, {y!r}"
    return None
