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

import random
from typing import Literal, Mapping

from generators.shared.build import register
from generators.property_conjunction.params import PROBE, ConjunctionParams
from generators.property_conjunction.questions import cached_plan, make_plan
from probekit.data.examples import answer_text, example_problem, make_example
from probekit.errors import shown
from probekit.probes.templates import ProbeSpec, TemplateError, Variant

Split = Literal["train", "dev"]
SLOTS = ("p1", "o1", "p2", "o2")
GOLDS = ("both", "first_only")


def availability(tables: Mapping, params: ConjunctionParams | None = None) -> dict:
    """Counts (JSON-able): edges, frequent terms, concepts and answer candidates per split, questions asked
    and built per split, distinct answers, predicate uses per split. ``params``: the YAML defaults."""
    if params is None:
        from generators.shared.registry import get

        params = ConjunctionParams.model_validate(get(PROBE).probe_spec().params)
    return make_plan(tables, params).counts


# --- rows --------------------------------------------------------------------------------------------

def check_variant(spec: ProbeSpec, variant: Variant) -> str:
    """The variant's ``gold`` (both / first_only), after checking its template's slots and its options."""
    gold = variant.options.get("gold")
    if gold not in GOLDS:
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: gold must be one of {list(GOLDS)} (both: the "
                            f"concept with both properties; first_only: the first property and not the second), "
                            f"got {shown(gold)}")
    ids = tuple(getattr(variant, "templates", None) or (variant.template,))
    if len(ids) != 1:
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: fills exactly one template (its gold is one "
                            f"question's), got {shown(list(ids))}")
    template = spec.template(ids[0])
    if sorted(template.slots) != sorted(SLOTS):
        raise TemplateError(f"{spec.path}: template {shown(template.id)}: needs the slots {list(SLOTS)}, "
                            f"has {list(template.slots)}")
    return gold


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register(PROBE, version="2", params=ConjunctionParams, tables=("conceptnet",), options=("gold",))
def generate(spec: ProbeSpec, variant: Variant, params: ConjunctionParams, tables: Mapping) -> dict[str, list[dict]]:
    """The planned questions, worded by the variant's template, with the variant's gold."""
    gold = check_variant(spec, variant)
    template = spec.template(variant.template)
    plan = cached_plan(tables, params)
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
        return f"facts.gold must be one of {list(GOLDS)}, got {shown(gold)}"
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
        return f"the objects {shown(o1)} and {shown(o2)} are not both in the stem"
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
                return f"{shown(text)}: neither has nor lacks ({r}, {o})"
        if satisfies(gold, *status) != (text == gold_text):
            return (f"{shown(text)} ({'gold' if text == gold_text else 'distractor'}) has {r1}/{o1}: {status[0]}, "
                    f"{r2}/{o2}: {status[1]}, so it {'does not answer' if text == gold_text else 'also answers'} "
                    f"the {gold} question")
    return None
