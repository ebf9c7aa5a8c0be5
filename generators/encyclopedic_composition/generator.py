"""ENCYCLOPEDIC COMPOSITION (oLMpics §4.5): two-hop questions over Wikidata facts, MC-QA with hard distractors.

Chains come from the ``wikidata`` table set (:func:`probekit.sources.loaders.wikidata.composition_chains`); each
subject (the entity in the question: a person, or a film) gives at most one question per template:

========================  ===============================  ==============================================
template                  chain (Wikidata direction)        distractors (never an answer of the subject)
========================  ===============================  ==============================================
``band_year``             P463 person->band, P571 band->y   other years within +-``year_window`` of the gold
``actor_spouse``          P161 film->actor, P26 actor->sp   spouses of other actors (see below)
``founder_hq``            P112 company->person, P159 ->city  other cities of the gold city's country
========================  ===============================  ==============================================

*Another valid answer is never a distractor*: every chain from the subject counts (all the person's bands
and all their years; all the film's cast and all their spouses, marriage read both ways whatever
``symmetric_spouse`` says; all the person's companies and all their headquarters); when a subject has
several chains, the gold is one of them (drawn with the seeded generator among those with enough
distractors) and the others' answers are left out of the choices.

Distractor rules, with the ``rng`` of the subject (``seed:probe:template:subject``), ``choices - 1`` each:

* ``band_year``: years ``gold +- 1 .. year_window`` (the release uses +-1 and +-2), not an answer.
* ``actor_spouse``: first *spouses of co-stars*: spouses of actors who played in another film with one of
  the film's cast (same circle, not in this film); then spouses from the whole pool of chain spouses (the
  release's style: spouses of other actors). Never a cast member of the film married to one of its actors:
  any spouse of any actor of the film is an answer, so it is excluded.
* ``founder_hq``: cities (``cities`` table) of the gold city's country. A label with several countries
  that is the capital (``via`` P36^-1 or P1376) of some of them is read as that capital (``Berlin``: Germany,
  Nazi Germany, German Empire, not the Berlin in the USA; ``Moscow``: Russia, Soviet Union) and its
  distractors come from any of those; a gold city with no country, or with several and the capital of
  none (``Durham``), skips the subject.

Subjects without enough distractors are skipped and counted per reason.

Splits: ``size.<split>`` is shared evenly by the variant's templates (a template short of subjects leaves
its share to the others). When the facts cannot fill both splits, each template's subjects are divided in
the ratio dev / (train + dev), so that both splits get some. Subjects are disjoint between train and dev
(across templates too: a person is in one split only). Everything is seeded by ``seed``.

``single_hop`` holds the one-hop questions each two-hop question needs (``which band did X play in?`` /
``when did Y first form?``, ...), in the split of the question they support (the paper fine-tunes on all
of them first): the second hop reuses the two-hop question's distractors (they are not answers of the
one-hop question either); the first hop draws other bands / actors / companies of the chains (all
entities of the relation when the chains have too few), never one of the subject's own.

Rows: the oLMpics layout + ``probe``, ``variant``, ``template_id``, ``args`` (slot values) and ``facts``: the
single-hop triples ``[relation, subject, object]`` (Wikidata's direction) whose composition is the gold;
:func:`rule` checks that from the row alone. :func:`availability` gives the counts per template (chains,
subjects, usable, skipped and why, built per split); every build logs them.

Offline (the KAMEL / EntityQuestions mirror) there are ~5 band chains, so ``band_year`` is almost empty; the
counts say so. The SPARQL tables fill it.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass
from typing import Literal, Mapping

from generators.shared.build import register
from generators.encyclopedic_composition.facts import KINDS, PROBE, ROLES, SHAPES, Triple, index
from generators.encyclopedic_composition.questions import CompositionParams, Question, questions
from probekit.data.examples import SPLITS, answer_text, example_problem, make_example
from probekit.errors import shown
from probekit.probes.templates import ProbeSpec, TemplateError, Variant

log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]


# --- sizes and splits --------------------------------------------------------------------------

def waterfill(total: int, caps: list[int]) -> list[int]:
    """``total`` shared as evenly as ``caps`` allow (the earlier entries take the remainders)."""
    alloc, remaining = [0] * len(caps), total
    active = [i for i, c in enumerate(caps) if c > 0]
    while remaining > 0 and active:
        share, extra = divmod(remaining, len(active))
        for k, i in enumerate(active):
            give = min(share + (k < extra), caps[i] - alloc[i])
            alloc[i] += give
            remaining -= give
        active = [i for i in active if alloc[i] < caps[i]]
    return alloc


def allocate(size: Mapping[str, int], available: list[int]) -> tuple[list[int], list[int]]:
    """(train, dev) questions per template: ``size`` shared evenly over the templates, capped by ``available``;
    when short, each template's subjects split in the ratio dev / (train + dev) (both splits get some)."""
    asked = size["train"] + size["dev"]
    totals = waterfill(asked, available)
    frac = size["dev"] / asked
    dev_total = size["dev"] if sum(totals) >= asked else round(sum(totals) * frac)
    dev = waterfill(dev_total, [math.ceil(t * frac) if t else 0 for t in totals])
    return [t - d for t, d in zip(totals, dev)], dev


@dataclass(frozen=True)
class Plan:
    splits: dict[str, list[Question]]  # split -> questions, in row order
    counts: dict


def make_plan(tables: Mapping, params: CompositionParams, templates: list[str]) -> Plan:
    """The questions of ``templates`` (two-hop template ids) per split, and the counts."""
    ix = index(tables, params.symmetric_spouse)
    counts: dict = {"asked": dict(params.size), "templates": {}}
    found = {}
    for t in templates:
        counts["templates"][t] = {}
        found[t] = questions(ix, params, t, counts["templates"][t])
    train, dev = allocate(params.size, [len(found[t]) for t in templates])
    assigned: dict[str, str] = {}  # subject label -> split, across templates
    splits: dict[str, list[Question]] = {s: [] for s in SPLITS}
    for t, n_train, n_dev in zip(templates, train, dev):
        subjects = sorted(found[t])
        random.Random(f"{params.seed}:{PROBE}:{t}:subjects").shuffle(subjects)
        taken = {}
        for split, n in (("dev", n_dev), ("train", n_train)):
            free = [s for s in subjects if s not in taken and assigned.get(s, split) == split]
            for s in free[:n]:
                taken[s] = assigned[s] = split
                splits[split].append(found[t][s])
        c = counts["templates"][t]
        c.update({"asked": {"train": n_train, "dev": n_dev},
                  "built": {s: sum(v == s for v in taken.values()) for s in SPLITS}})
    for split, rows in splits.items():
        random.Random(f"{params.seed}:{PROBE}:order:{split}").shuffle(rows)
    counts["built"] = {s: len(r) for s, r in splits.items()}
    return Plan(splits, counts)


def availability(tables: Mapping, params: CompositionParams | None = None) -> dict:
    """Per two-hop template: chains in the tables, subjects, usable subjects, skipped subjects (per reason),
    distractor rules used, questions asked and built per split (JSON-able). ``params``: the YAML defaults."""
    if params is None:
        from generators.shared.registry import get

        params = CompositionParams.model_validate(get(PROBE).probe_spec().params)
    return make_plan(tables, params, list(KINDS)).counts


def _log(counts: dict) -> None:
    for t, c in counts["templates"].items():
        log.info("%s/%s: %d chains, %d subjects, %d usable (skipped: %s); train %d, dev %d (shares asked: "
                 "train %d, dev %d)", PROBE, t, c["chains"], c["subjects"], c["usable"],
                 ", ".join(f"{k}: {v}" for k, v in c["skipped"].items()) or "none", c["built"]["train"],
                 c["built"]["dev"], c["asked"]["train"], c["asked"]["dev"])
    short = [s for s in SPLITS if counts["built"][s] < counts["asked"][s]]
    if short:
        log.warning("%s: the facts give %s questions, fewer than size asks (%s)", PROBE,
                    ", ".join(f"{s} {counts['built'][s]}" for s in SPLITS),
                    ", ".join(f"{s} {counts['asked'][s]}" for s in SPLITS))


# --- rows --------------------------------------------------------------------------------------

def variant_templates(spec: ProbeSpec, variant: Variant) -> list[str]:
    """The template ids of a base variant (its ``templates``), each one this generator knows."""
    ids = list(getattr(variant, "templates", ()) or variant.options.get("templates") or [variant.template])
    if not ids or any(t not in spec.templates for t in ids):
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: templates must be a list of template ids of "
                            f"{list(spec.templates)}, got {shown(ids)}")
    unknown = [t for t in ids if t not in ROLES]
    if unknown:
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: template(s) {unknown} have no role in a "
                            f"chain; the generator knows the ids {list(ROLES)}")
    for t in ids:
        template, want = spec.template(t), SHAPES[t][1]
        if list(template.slots) != [want]:
            raise TemplateError(f"{spec.path}: template {shown(t)}: needs the one slot [{want}], "
                                f"has {list(template.slots)}")
    return ids


_LAST: list = []  # (tables, params, kinds, plan) of the last plan: the variants of one build share it


def _cached_plan(tables: Mapping, params: CompositionParams, kinds: list[str]) -> Plan:
    """The plan, made (and its counts logged) once for the variants of one build."""
    if _LAST and _LAST[0] is tables and _LAST[1] == params and _LAST[2] == kinds:
        return _LAST[3]
    plan = make_plan(tables, params, kinds)
    _log(plan.counts)
    _LAST[:] = [tables, params.model_copy(deep=True), list(kinds), plan]
    return plan


def _row(spec: ProbeSpec, variant: Variant, template_id: str, slot_value: str, answer: str,
         distractors: tuple[str, ...], facts: list[Triple], seed: int) -> dict:
    template = spec.template(template_id)
    args = {template.slots[0]: slot_value}
    rng = random.Random(f"{seed}:{PROBE}:{variant.name}:{template_id}:{slot_value}:{answer}")
    row = make_example(probe=spec.probe, variant=variant.name, template_id=template_id, stem=template.fill(args),
                       choices=[answer, *distractors], answer=answer, args=args, rng=rng)
    row["facts"] = [list(f) for f in facts]
    return row


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register(PROBE, version="2", params=CompositionParams, tables=("wikidata",))
def generate(spec: ProbeSpec, variant: Variant, params: CompositionParams, tables: Mapping) -> dict[str, list[dict]]:
    """The variant's templates filled from the planned questions: the two-hop ones, or their one-hop facts."""
    ids = variant_templates(spec, variant)
    kinds = [k for k in KINDS if any(ROLES[t][0] == k for t in ids)]
    plan = _cached_plan(tables, params, kinds)
    out = {}
    for split, qs in plan.splits.items():
        rows, seen = [], set()
        for q in qs:
            for t in ids:
                owner, hop = ROLES[t]
                if owner != q.template:
                    continue
                if hop is None:
                    rows.append(_row(spec, variant, t, q.subject, q.answer, q.distractors, list(q.facts), params.seed))
                    continue
                key = (t, q.facts[hop])
                if key in seen:  # one row per fact: two questions may share their second hop
                    continue
                seen.add(key)
                if hop == 0:
                    rows.append(_row(spec, variant, t, q.subject, q.middle, q.hop_distractors, [q.facts[0]],
                                     params.seed))
                else:
                    rows.append(_row(spec, variant, t, q.middle, q.answer, q.distractors, [q.facts[1]], params.seed))
        out[split] = rows
    return out


# --- the probe's own construction rule (fidelity report) ---------------------------------------

def _step(relation: str, subject: str, obj: str, node: str) -> str | None:
    """Where the fact leads from ``node``: forward, P112 backwards (founder -> company), P26 both ways."""
    if relation == "P112":
        return subject if obj == node else None
    if relation == "P26" and obj == node:
        return subject
    return obj if subject == node else None


def rule(row: Mapping) -> str | None:
    """A problem of one of our rows, from the row alone: its ``facts`` must start at the slot value, chain
    through the template's relations and end at the gold; no distractor may be reached by them; year
    choices are years."""
    if example_problem(row):
        return None  # counted by the generic rules
    template = row.get("template_id")
    if template not in SHAPES:
        return f"template_id {shown(template)} is not a template of {PROBE}"
    relations, slot = SHAPES[template]
    facts = row.get("facts")
    if not isinstance(facts, list) or not all(
            isinstance(f, (list, tuple)) and len(f) == 3 and all(isinstance(v, str) and v for v in f) for f in facts):
        return "no facts: a list of [relation, subject, object] triples"
    if tuple(f[0] for f in facts) != relations:
        return f"facts are not the chain {' > '.join(relations)} of the template"
    start = (row.get("args") or {}).get(slot)
    if not isinstance(start, str) or start not in row["question"]["stem"]:
        return f"args.{slot} missing or not in the stem"
    node = start
    for f in facts:
        node = _step(*f, node)
        if node is None:
            return "the facts do not chain from the slot value"
    gold = answer_text(row)
    if node != gold:
        return "the gold is not what the facts lead to"
    distractors = [c["text"] for c in row["question"]["choices"] if c["label"] != row["answerKey"]]
    if node in distractors:
        return "a distractor is what the facts lead to"
    if relations[-1] == "P571" and not all(d.isdigit() and len(d) == 4 and d != gold for d in distractors):
        return "a year distractor is not another 4-digit year"
    return None
