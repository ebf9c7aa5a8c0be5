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
import logging
import random
import re
from dataclasses import dataclass
from typing import Literal, Mapping

from generators.shared.build import register
from generators.antonym_negation.pairs import (
    CONCEPTNET_TABLE,
    EDGE_KEYS,
    WORD,
    WORDNET_POS,
    WORDNET_TABLE,
    candidate_pairs,
    relation_of,
)
from generators.antonym_negation.params import POS, PROBE, RELATIONS, AntonymParams
from generators.antonym_negation.splits import split_pairs
from probekit.data.examples import SPLITS, answer_text, make_example
from probekit.errors import shown
from probekit.probes.lexicon import article
from probekit.probes.templates import ProbeSpec, Template, TemplateError, Variant

log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]
ARTICLES = ("a", "an")
OPTIONS = ("pos", "articles")   # what a base variant sets besides its templates (the YAML's schema)


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
        # layout() forbids
        raise TemplateError(f"{spec.path}: no {pos} template with the articles of {shown(x)}, {shown(y)}")


def layout(spec: ProbeSpec, variant: Variant) -> Layout:
    """The variant's ``pos`` / ``articles`` options, checked against its templates; errors name the YAML."""
    where = f"{spec.path}: variant {shown(variant.name)}"
    by_pos = variant.options.get("pos")
    if not isinstance(by_pos, Mapping) or not by_pos:
        raise TemplateError(f"{where}: needs `pos`, a mapping of part of speech ({', '.join(POS)}) -> template ids")
    bad = sorted(set(by_pos) - set(POS))
    if bad:
        raise TemplateError(f"{where}: pos: unknown part(s) of speech {bad} (known: {', '.join(POS)})")
    mode = variant.options.get("articles", "rule")
    if mode not in ("rule", "as_written"):
        raise TemplateError(f"{where}: articles must be rule or as_written, got {shown(mode)}")
    listed: list[str] = []
    for pos, ids in by_pos.items():
        if not isinstance(ids, list) or not ids or not all(isinstance(t, str) for t in ids):
            raise TemplateError(f"{where}: pos.{pos} must be a non-empty list of template ids, got {shown(ids)}")
        listed += ids
        for tid in ids:
            template = spec.template(tid)
            if tuple(template.slots) != ("x", "y"):   # its answers: the declared outcomes (RELATIONS)
                raise TemplateError(f"{where}: template {shown(tid)} needs slots [x, y]")
        if mode == "as_written" and len(ids) != 1:
            raise TemplateError(f"{where}: with articles: as_written, pos.{pos} takes one template, got {shown(ids)}")
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


# --- the generator -------------------------------------------------------------------------------------


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register(PROBE, version="2", params=AntonymParams, tables=("conceptnet", "wordnet"), outcomes=RELATIONS,
          options=OPTIONS)
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
    from generators.shared import registry

    return registry.get(PROBE).probe_spec()


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
        return f"unknown template {shown(row.get('template_id'))}"
    args = row.get("args") or {}
    x, y = args.get("x"), args.get("y")
    if set(args) != {"x", "y"} or not all(isinstance(w, str) and WORD.fullmatch(w) for w in (x, y)) or x == y:
        return f"args must be two different single words x, y; got {shown(dict(args))}"
    variant = spec.variants.get(row.get("variant"))
    if variant is None:
        return f"unknown variant {shown(row.get('variant'))}"
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
        return f"edge {shown(stray[0]['word1'])}-{shown(stray[0]['word2'])} is not the pair {shown(x)}-{shown(y)}"
    tables = {e["table"] for e in edges} - {WORDNET_TABLE, CONCEPTNET_TABLE}
    if tables:
        return f"edges from unknown table(s) {sorted(tables)}"
    relations = {relation_of(e) for e in edges}
    if None in relations or len(relations) != 1:
        return f"the edges give relations {sorted(map(str, relations))}, not one of {list(RELATIONS)}"
    relation = relations.pop()
    if facts.get("relation") != relation:
        return f"facts.relation {shown(facts.get('relation'))}, but the edges say {shown(relation)}"
    expected = template.answers[relation]
    if variant.control == "nolang":
        expected = spec.nolang_answers.get(expected, expected)
    gold = answer_text(row)
    if gold != expected:
        return f"gold {shown(gold)}, but {shown(x)}-{shown(y)} is a {relation} pair: {shown(expected)}"
    if variant.control:
        return None
    lay = _layout(variant.name)
    pos = facts.get("pos")
    if template.id not in lay.by_pos.get(pos, ()):
        return f"template {shown(template.id)} does not serve facts.pos {shown(pos)} in variant {shown(variant.name)}"
    senses = {WORDNET_POS.get(e["pos"]) for e in edges if e["table"] == WORDNET_TABLE}
    if senses and pos not in senses:
        return f"part of speech {shown(pos)}, but the pair's WordNet senses are {sorted(map(str, senses))}"
    if facts.get("pos_from") != ("wordnet" if senses else "lexicon"):
        return f"facts.pos_from {shown(facts.get('pos_from'))} with {'' if senses else 'no '}WordNet edges"
    if row["question"]["stem"] != template.fill(args):
        return "stem is not the template filled with args"
    if lay.articles == "rule" and lay.template_for(spec, pos, x, y).id != template.id:
        return f"articles of {shown(template.id)} are not the rule's for {shown(x)}, {shown(y)}"
    return None
