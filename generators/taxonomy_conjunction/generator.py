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
with a multi-token choice); null (default): the tokenizers of every masked LM of the params' ``models`` that runs
oLMpics (``evaluated_models("olmpics")``), so a profile with roberta-large checks RoBERTa's ``Ġword`` too.

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
import random
import re
from collections import defaultdict
from typing import Literal, Mapping

from generators.shared.build import register
from generators.taxonomy_conjunction.draw import Pick, log_counts, make_plan, same_sense
from generators.taxonomy_conjunction.index import Taxonomy
from generators.taxonomy_conjunction.params import PROBE, Articles, TaxonomyParams
from probekit.data.examples import SPLITS, answer_text, example_problem, make_example
from probekit.errors import shown
from probekit.probes import lexicon
from probekit.probes.templates import ProbeSpec, TemplateError, Variant

Split = Literal["train", "dev"]
SOURCES = ("wordnet", "conceptnet")
ARTICLE = re.compile(r"(?<![\w{])([Aa]n?) \{([A-Za-z_][A-Za-z0-9_]*)\}")
SLOTS = ("x", "y")


def availability(tables: Mapping, params: TaxonomyParams | None = None) -> dict:
    """Facts kept and dropped, and per split the concepts, golds, rows asked and built, pairs rejected and why
    (JSON-able). ``params``: the YAML defaults (``single_token`` read with the built-in models)."""
    if params is None:
        from generators.shared.registry import get
        from probekit.params import ParamsFile

        params = TaxonomyParams.model_validate(get(PROBE).probe_spec().params)
        params = params.with_models(ParamsFile(None), PROBE)
    return make_plan(tables, params).counts


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
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: articles must be a_an or fixed, "
                            f"got {shown(mode)}")
    ids = list(variant.templates)
    for t in ids:
        template = spec.template(t)
        if sorted(template.slots) != sorted(SLOTS):
            raise TemplateError(f"{spec.path}: template {shown(t)}: needs the slots {list(SLOTS)}, has "
                                f"{list(template.slots)}")
    if mode == "a_an":
        have = {tuple(template_articles(spec.template(t).text).get(s) for s in SLOTS) for t in ids}
        lacking = [combo for combo in itertools.product(("a", "an"), repeat=2) if combo not in have]
        if lacking:
            raise TemplateError(f"{spec.path}: variant {shown(variant.name)} (articles: a_an): no template writes "
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


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register(PROBE, version="2", params=TaxonomyParams, tables=("wordnet", "conceptnet"), options=("articles",))
def generate(spec: ProbeSpec, variant: Variant, params: TaxonomyParams, tables: Mapping) -> dict[str, list[dict]]:
    """The planned (x, y, gold, distractors) of each split in the variant's templates."""
    mode, ids = variant_templates(spec, variant)
    plan = make_plan(tables, params)
    log_counts(plan.counts)
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
            return f"the facts make distractor {shown(c['text'])} a hypernym of {len(owner)} of the concepts, not one"
        owners += owner
    if sorted(owners) != sorted((x, y)):
        return "the distractors are not one hypernym of x only and one of y only"
    return None
