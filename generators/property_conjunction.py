"""PROPERTY CONJUNCTION (oLMpics §4.4): which concept has both properties? MC-QA over ConceptNet edges.

A *property* is a (predicate, object) pair; a concept *has* it when the ``conceptnet`` table set holds the
edge (concept, predicate, object) (any source: the sources are merged), and *lacks* it when it holds neither
that edge nor, for a predicate in params ``symmetric`` (RelatedTo, Antonym...), the edge read backwards
(object, predicate, concept). "Lacks" is ConceptNet's closed world: no edge, no property.

A question is an answer concept ``A`` with two properties ``P1 = (r1, o1)`` and ``P2 = (r2, o2)`` (both
predicates among params ``predicates``; neither object's words all among the other's, so not "desk" and
"your desk"), a first distractor ``D1`` that has ``P1`` and lacks
``P2``, and a second ``D2`` that has ``P2`` and lacks ``P1``: three distinct concepts, none of them ``o1``
or ``o2``. A base variant's ``gold`` says which choice the question asks for:

* ``both`` (``original``, template ``and``): ``A``, the only choice with both properties;
* ``first_only`` (``but_not``, template ``but_not``, the paper's parallel version built from the very same
  questions): ``D1``, the only choice with ``P1`` and without ``P2`` (``A`` has ``P2``, ``D2`` lacks ``P1``).

Terms: every answer, distractor and object reaches params ``min_zipf`` (wordfreq, English), is not made of
``function_words`` only ("a", "of", "on to": the TWC subgraph relates them to everything) and holds no
number in digits ("9 planet"). The absence checks read every edge of the predicate, usable or not.

Splits: every concept is a train or a dev concept, by a hash of the concept (``dev_share`` of them in dev;
neither the seed nor the other params move a concept), and a question of a split takes its answer *and*
its distractors from that split's concepts only, so no concept appears in both splits (objects may: the
release shares 194 objects between its splits, and none of its 3,285 concepts).

Sampling (seeded, per split ``seed:probe:split``): the answer concepts with at least two usable properties
are shuffled and visited round-robin, each round giving every answer one more question (a random pair of
its properties, in random order, with distractors; a pair is asked at most once per answer, in either
order) until ``size`` is reached, an answer has ``max_per_answer`` questions or no pair left. So most
answers appear once; ``size`` is capped by what the edges allow (logged). ``original`` and ``but_not``
share the questions; choice order is shuffled per row.

Rows: the oLMpics layout + ``probe``, ``variant``, ``template_id``, ``args`` (the slot values: the phrases
``p1``, ``p2`` and the objects ``o1``, ``o2``) and ``facts``: ``gold`` (both / first_only), ``properties``
([[r1, o1], [r2, o2]]), ``has`` (the edges [concept, predicate, object] the choices have) and ``lacks``
(the absences checked: [D1, r2, o2], [D2, r1, o1]). :func:`rule` checks from the row alone that the gold
satisfies the question and no other choice does; the tests check ``has`` and ``lacks`` against the table.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Mapping

from pydantic import Field, PositiveInt, ValidationInfo, field_validator

from generators import register
from probekit.errors import DataError
from probekit.examples import SPLITS, answer_text, example_problem, make_example
from probekit.lexicon import zipf
from probekit.loaders.conceptnet import canonical_relation
from probekit.params import ProbeParams, SplitSizes
from probekit.templates import ProbeSpec, TemplateError, Variant

if TYPE_CHECKING:
    import pandas as pd

PROBE = "property_conjunction"
log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]
Prop = tuple[str, str]  # (predicate, object)
SLOTS = ("p1", "o1", "p2", "o2")
GOLDS = ("both", "first_only")
ENUMERATE_BELOW = 40  # answers with fewer properties try every pair; others sample pairs at random
RANDOM_TRIES = 400  # pairs tried per question for an answer with many properties


class ConjunctionParams(ProbeParams):
    """``size.<split>``: questions per split (capped by the edges); ``phrases``: predicate -> question phrase;
    ``predicates``: those the questions use; ``symmetric``: predicates read both ways when checking an
    absence; ``min_zipf``: the frequency every concept and object must reach; ``function_words``: a term
    made of these only is no concept; ``dev_share``: share of the concepts in dev; ``max_per_answer``:
    questions per answer concept."""

    size: SplitSizes
    phrases: dict[str, str]
    predicates: list[str] = Field(min_length=1)
    symmetric: list[str] = Field(default_factory=list)
    min_zipf: float = Field(3.5, ge=0, le=8)
    function_words: list[str] = Field(default_factory=list)
    dev_share: float = Field(0.25, ge=0, le=1)
    max_per_answer: PositiveInt = 5

    @field_validator("phrases")
    @classmethod
    def _phrases(cls, phrases):
        _conceptnet_names(phrases)
        empty = [r for r, p in phrases.items() if not isinstance(p, str) or not p.strip() or p != " ".join(p.split())]
        if empty:
            raise ValueError(f"empty phrase, or stray spaces in it, for {empty}")
        return phrases

    @field_validator("predicates")
    @classmethod
    def _predicates(cls, predicates, info: ValidationInfo):
        phrases = info.data.get("phrases") or {}
        missing = [r for r in predicates if r not in phrases]
        if missing:
            raise ValueError(f"{missing} have no question phrase in `phrases` (have: {', '.join(phrases)})")
        if len(set(predicates)) != len(predicates):
            raise ValueError(f"repeated predicate(s) {sorted(r for r, n in Counter(predicates).items() if n > 1)}")
        return predicates

    @field_validator("symmetric")
    @classmethod
    def _symmetric(cls, symmetric):
        _conceptnet_names(symmetric)
        return symmetric


def _conceptnet_names(relations) -> None:
    """Refuse relation names not spelt as ConceptNet spells them (AtLocation, not atlocation)."""
    bad = [r for r in relations if canonical_relation(r) != r]
    if bad:
        raise ValueError(f"not ConceptNet relation names (as spelt in ConceptNet, e.g. AtLocation): {bad}")


# --- the edges, indexed --------------------------------------------------------------------------------

DIGITS = re.compile(r"\b\d+\b")


def usable_term(term: str, min_zipf: float, function_words: frozenset[str]) -> bool:
    """Frequent enough, not made of function words only, no number in digits."""
    return (not DIGITS.search(term) and not all(w in function_words for w in term.split())
            and zipf(term) >= min_zipf)


def concept_split(concept: str, dev_share: float) -> str:
    """dev with probability ``dev_share``, by a hash of the concept (stable: no seed, no other param)."""
    digest = hashlib.sha256(f"{PROBE}:{concept}".encode("utf-8")).hexdigest()
    return "dev" if int(digest[:12], 16) / 16 ** 12 < dev_share else "train"


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


# --- questions -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Question:
    answer: str  # has P1 and P2
    first: str  # D1: has P1, lacks P2
    second: str  # D2: has P2, lacks P1
    p1: Prop
    p2: Prop

    def facts(self, gold: str) -> dict:
        (r1, o1), (r2, o2) = self.p1, self.p2
        return {"gold": gold, "properties": [[r1, o1], [r2, o2]],
                "has": [[self.answer, r1, o1], [self.answer, r2, o2], [self.first, r1, o1], [self.second, r2, o2]],
                "lacks": [[self.first, r2, o2], [self.second, r1, o1]]}


def _pool(ix: Index, split: str, has: Prop, lacks: Prop, exclude: set[str]) -> list[str]:
    """The split's concepts with the edge ``has`` that lack ``lacks`` (sorted), less ``exclude``."""
    r, o = lacks
    return [c for c in ix.by_prop[split].get(has, ()) if (c, r, o) not in ix.holds and c not in exclude]


def _pairs(props: list[Prop], rng: random.Random):
    """Ordered pairs of distinct properties with distinct objects, in random order (all of them for few
    properties, else up to RANDOM_TRIES random draws)."""
    if len(props) < ENUMERATE_BELOW:
        pairs = [(a, b) for a in props for b in props if a != b]
        rng.shuffle(pairs)
        yield from pairs
        return
    for _ in range(RANDOM_TRIES):
        a, b = rng.sample(props, 2)
        yield a, b


def nested(o1: str, o2: str) -> bool:
    """One object's words all among the other's ("desk" / "your desk", or the same object): a pair that asks
    one thing twice."""
    w1, w2 = set(o1.split()), set(o2.split())
    return w1 <= w2 or w2 <= w1


def _question(ix: Index, split: str, answer: str, asked: set, rng: random.Random) -> Question | None:
    """A new question for ``answer`` (not an already ``asked`` pair, in either order), or None."""
    for p1, p2 in _pairs(ix.props[answer], rng):
        if frozenset((p1, p2)) in asked or nested(p1[1], p2[1]):
            continue
        exclude = {answer, p1[1], p2[1]}
        first = _pool(ix, split, p1, p2, exclude)
        if not first:
            continue
        second = _pool(ix, split, p2, p1, exclude)
        if not second:
            continue
        asked.add(frozenset((p1, p2)))
        return Question(answer, rng.choice(first), rng.choice(second), p1, p2)
    return None


@dataclass(frozen=True)
class Plan:
    splits: dict[str, list[Question]]
    counts: dict


def make_plan(tables: Mapping, params: ConjunctionParams) -> Plan:
    """The questions of each split (shared by every base variant) and the counts."""
    ix = index(tables, params)
    splits: dict[str, list[Question]] = {}
    counts = dict(ix.counts, asked=dict(params.size))
    for split in SPLITS:
        rng = random.Random(f"{params.seed}:{PROBE}:{split}")
        answers = sorted(c for c, p in ix.props.items() if ix.split_of[c] == split and len(p) >= 2)
        rng.shuffle(answers)
        asked: dict[str, set] = defaultdict(set)
        questions: list[Question] = []
        active = answers
        while active and len(questions) < params.size[split]:
            still = []
            for a in active:
                if len(questions) >= params.size[split]:
                    break
                q = _question(ix, split, a, asked[a], rng)
                if q is None:
                    continue
                questions.append(q)
                if len(asked[a]) < params.max_per_answer:
                    still.append(a)
            active = still
        splits[split] = questions
    counts["built"] = {s: len(q) for s, q in splits.items()}
    counts["answers"] = {s: len({q.answer for q in qs}) for s, qs in splits.items()}
    counts["predicates"] = {s: dict(Counter(r for q in qs for r in (q.p1[0], q.p2[0])).most_common())
                            for s, qs in splits.items()}
    return Plan(splits, counts)


def availability(tables: Mapping, params: ConjunctionParams | None = None) -> dict:
    """Counts (JSON-able): edges, frequent terms, concepts and answer candidates per split, questions asked
    and built per split, distinct answers, predicate uses per split. ``params``: the YAML defaults."""
    if params is None:
        from generators import get
        from probekit.templates import load_probe_spec

        params = ConjunctionParams.model_validate(load_probe_spec(get(PROBE).template_path).params)
    return make_plan(tables, params).counts


def _log(counts: dict) -> None:
    for s in SPLITS:
        log.info("%s/%s: %d concepts (%d with two properties or more); %d questions over %d answers; predicates: "
                 "%s", PROBE, s, counts["concepts"][s], counts["answer_candidates"][s], counts["built"][s],
                 counts["answers"][s], ", ".join(f"{r} {n}" for r, n in counts["predicates"][s].items()))
    short = [s for s in SPLITS if counts["built"][s] < counts["asked"][s]]
    if short:
        log.warning("%s: the edges give %s questions, fewer than size asks (%s)", PROBE,
                    ", ".join(f"{s} {counts['built'][s]}" for s in SPLITS),
                    ", ".join(f"{s} {counts['asked'][s]}" for s in SPLITS))


_LAST: list = []  # (tables, params, plan) of the last plan: the variants of one build share it


def _cached_plan(tables: Mapping, params: ConjunctionParams) -> Plan:
    if _LAST and _LAST[0] is tables and _LAST[1] == params:
        return _LAST[2]
    plan = make_plan(tables, params)
    _log(plan.counts)
    _LAST[:] = [tables, params.model_copy(deep=True), plan]
    return plan


# --- rows --------------------------------------------------------------------------------------------

def check_variant(spec: ProbeSpec, variant: Variant) -> str:
    """The variant's ``gold`` (both / first_only), after checking its template's slots and its options."""
    gold = variant.options.get("gold")
    if gold not in GOLDS:
        raise TemplateError(f"{spec.path}: variant {variant.name!r}: gold must be one of {list(GOLDS)} (both: the "
                            f"concept with both properties; first_only: the first property and not the second), "
                            f"got {gold!r}")
    unknown = sorted(set(variant.options) - {"gold"})
    if unknown:
        raise TemplateError(f"{spec.path}: variant {variant.name!r}: unknown option(s) {unknown} (known: gold)")
    ids = tuple(getattr(variant, "templates", None) or (variant.template,))
    if len(ids) != 1:
        raise TemplateError(f"{spec.path}: variant {variant.name!r}: fills exactly one template (its gold is one "
                            f"question's), got {list(ids)}")
    template = spec.template(ids[0])
    if sorted(template.slots) != sorted(SLOTS):
        raise TemplateError(f"{spec.path}: template {template.id!r}: needs the slots {list(SLOTS)}, "
                            f"has {list(template.slots)}")
    return gold


@register(PROBE, version="1", params=ConjunctionParams, tables=("conceptnet",))
def generate(spec: ProbeSpec, variant: Variant, params: ConjunctionParams, tables: Mapping) -> dict[str, list[dict]]:
    """The planned questions, worded by the variant's template, with the variant's gold."""
    gold = check_variant(spec, variant)
    template = spec.template(variant.template)
    plan = _cached_plan(tables, params)
    out = {}
    for split, questions in plan.splits.items():
        rows = []
        for q in questions:
            (r1, o1), (r2, o2) = q.p1, q.p2
            args = {"p1": params.phrases[r1], "o1": o1, "p2": params.phrases[r2], "o2": o2}
            rng = random.Random(f"{params.seed}:{PROBE}:{variant.name}:{q.answer}:{r1}:{o1}:{r2}:{o2}")
            row = make_example(probe=spec.probe, variant=variant.name, template_id=template.id,
                               stem=template.fill(args), choices=[q.answer, q.first, q.second],
                               answer=q.answer if gold == "both" else q.first, args=args, rng=rng)
            row["facts"] = q.facts(gold)
            rows.append(row)
        out[split] = rows
    return out


# --- the probe's own construction rule (fidelity report) ---------------------------------------------

def satisfies(gold: str, has1: bool, has2: bool) -> bool:
    """Whether a concept with (has1, has2) answers the question ``gold`` asks."""
    return has1 and has2 if gold == "both" else has1 and not has2


def rule(row: Mapping) -> str | None:
    """From the row's ``facts``: every choice has or lacks each property (never both, never unknown), the
    gold satisfies the question and no other choice does; the objects are in the stem and no choice is one."""
    if example_problem(row):
        return None  # the generic rules count it
    facts = row.get("facts")
    if not isinstance(facts, Mapping):
        return "no facts"
    gold = facts.get("gold")
    if gold not in GOLDS:
        return f"facts.gold must be one of {list(GOLDS)}, got {gold!r}"
    try:
        (r1, o1), (r2, o2) = (tuple(p) for p in facts["properties"])
        has = {tuple(f) for f in facts["has"]}
        lacks = {tuple(f) for f in facts["lacks"]}
    except (KeyError, TypeError, ValueError):
        return "facts need properties [[r1, o1], [r2, o2]], has and lacks ([concept, predicate, object] each)"
    if (r1, o1) == (r2, o2) or o1 == o2:
        return "the two properties have the same object"
    if any(len(f) != 3 for f in has | lacks):
        return "a has/lacks fact is not [concept, predicate, object]"
    both = has & lacks
    if both:
        return f"{sorted(both)[0]} is both had and lacked"
    texts = [c["text"] for c in row["question"]["choices"]]
    if len(set(texts)) != 3:
        return f"needs three distinct choices, has {texts}"
    stem = row["question"]["stem"]
    if o1 not in stem or o2 not in stem:
        return f"the objects {o1!r} and {o2!r} are not both in the stem"
    if {o1, o2} & set(texts):
        return f"a choice is an object of the question: {sorted({o1, o2} & set(texts))}"
    gold_text = answer_text(row)
    for text in texts:
        status = []
        for r, o in ((r1, o1), (r2, o2)):
            if (text, r, o) in has:
                status.append(True)
            elif (text, r, o) in lacks:
                status.append(False)
            else:
                return f"{text!r}: neither has nor lacks ({r}, {o})"
        if satisfies(gold, *status) != (text == gold_text):
            return (f"{text!r} ({'gold' if text == gold_text else 'distractor'}) has {r1}/{o1}: {status[0]}, "
                    f"{r2}/{o2}: {status[1]}, so it {'does not answer' if text == gold_text else 'also answers'} "
                    f"the {gold} question")
    return None
