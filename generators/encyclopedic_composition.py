"""ENCYCLOPEDIC COMPOSITION (oLMpics §4.5): two-hop questions over Wikidata facts, MC-QA with hard distractors.

Chains come from the ``wikidata`` table set (:func:`probekit.loaders.wikidata.composition_chains`); each
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
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Literal, Mapping

from pydantic import Field, ValidationInfo, field_validator

from generators import register
from probekit.errors import DataError
from probekit.examples import SPLITS, answer_text, example_problem, make_example
from probekit.params import ProbeParams, SplitSizes
from probekit.templates import ProbeSpec, TemplateError, Variant

PROBE = "encyclopedic_composition"
log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]
Triple = tuple[str, str, str]
CAPITAL_WALKS = ("P36^-1", "P1376")  # `cities.via` of a city that is the capital of that very country


@dataclass(frozen=True)
class Kind:
    """One two-hop template: its chain table, its one-hop templates and their slots."""

    template: str
    chain: str  # table of composition_chains()
    hops: tuple[str, str]  # one-hop template ids: subject -> middle, middle -> answer
    relations: tuple[str, str]
    subject_slot: str
    middle_slot: str


KINDS = {
    "band_year": Kind("band_year", "person_band_year", ("person_band", "band_inception"), ("P463", "P571"),
                      "person", "band"),
    "actor_spouse": Kind("actor_spouse", "film_actor_spouse", ("film_cast", "spouse_of"), ("P161", "P26"),
                         "film", "actor"),
    "founder_hq": Kind("founder_hq", "person_company_city", ("founder_company", "company_hq"), ("P112", "P159"),
                       "person", "company"),
}
# template id -> (kind, hop): hop None for the two-hop template, 0 / 1 for its one-hop questions
ROLES = {k.template: (k.template, None) for k in KINDS.values()} | {
    h: (k.template, i) for k in KINDS.values() for i, h in enumerate(k.hops)}
# template id -> (relations of its facts, the slot the chain starts from)
SHAPES = {k.template: (k.relations, k.subject_slot) for k in KINDS.values()} | {
    k.hops[0]: ((k.relations[0],), k.subject_slot) for k in KINDS.values()} | {
    k.hops[1]: ((k.relations[1],), k.middle_slot) for k in KINDS.values()}


class CompositionParams(ProbeParams):
    """``size.<split>``: questions per split over the variant's templates (capped by the facts); ``choices``:
    gold + distractors; ``year_window``: the band-year distractors' distance; ``symmetric_spouse``: chains
    also read P26 backwards."""

    size: SplitSizes
    choices: int = Field(3, ge=2, le=10)
    year_window: int = Field(2, ge=1, le=100)
    symmetric_spouse: bool = True

    @field_validator("year_window")
    @classmethod
    def _enough_years(cls, window, info: ValidationInfo):
        choices = info.data.get("choices", 3)
        if 2 * window < choices - 1:
            raise ValueError(f"{window} gives {2 * window} years around the gold, fewer than the {choices - 1} "
                             f"distractors of {choices} choices")
        return window


# --- the facts, indexed ------------------------------------------------------------------------

class Pool:
    """Candidates in a fixed (sorted) order, sampled without the excluded ones in time independent of the
    pool's size (the SPARQL tables have thousands of spouses, companies, cities)."""

    def __init__(self, items):
        self.items = sorted(set(items))
        self.members = set(self.items)

    def excluded(self, exclude: set[str]) -> set[str]:
        return exclude & self.members  # walks the smaller set

    def available(self, exclude: set[str]) -> int:
        return len(self.items) - len(self.excluded(exclude))

    def sample(self, rng: random.Random, k: int, exclude: set[str]) -> list[str]:
        """``k`` items not in ``exclude`` (fewer when there are not so many), deterministic given ``rng``."""
        out = self.excluded(exclude)
        drawn = rng.sample(self.items, min(len(self.items), k + len(out)))
        return [x for x in drawn if x not in out][:k]


@dataclass
class Index:
    """Distinct facts of the ``wikidata`` tables as lookups, and the chains per template."""

    members: dict[str, set[str]]  # person -> bands (P463)
    years: dict[str, set[str]]  # band -> inception years (P571)
    cast: dict[str, set[str]]  # film -> actors (P161)
    films: dict[str, set[str]]  # actor -> films (P161 backwards)
    spouses: dict[str, set[str]]  # person -> spouses, P26 both ways
    p26: set[tuple[str, str]]  # P26 (subject, object) as given
    founded: dict[str, set[str]]  # person -> companies (P112 backwards)
    hq: dict[str, set[str]]  # company -> cities (P159)
    city_countries: dict[str, set[str]]  # city label -> its countries (a capital: the countries it is capital of)
    ambiguous_cities: set[str]  # labels in several countries, none as their capital (Durham, Burlington)
    country_cities: dict[str, Pool]
    middles: dict[str, Pool]  # template -> the middle entities of its chains (bands, actors, companies)
    other_middles: dict[str, Pool]  # template -> the other entities of its first relation (P463 / P161
    # objects, P112 subjects): the fallback of the first one-hop question
    spouse_pool: Pool  # every spouse of a film-actor-spouse chain
    chains: dict[str, list[tuple[str, str, str]]]  # template -> sorted (subject, middle, answer)


def index(tables: Mapping, symmetric_spouse: bool) -> Index:
    from probekit.loaders.wikidata import composition_chains

    wikidata = tables.get("wikidata") if isinstance(tables, Mapping) else None
    if not wikidata or "facts" not in wikidata or "cities" not in wikidata:
        raise DataError(f"{PROBE} reads the wikidata table set (tables facts and cities): run "
                        f"`probes tables wikidata --out data/tables/wikidata` first")
    facts, cities = wikidata["facts"], wikidata["cities"]
    for name, df, cols in (("facts", facts, ["relation", "subject", "object"]),
                           ("cities", cities, ["city", "country"])):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise DataError(f"wikidata/{name}: missing column(s) {missing} (have: {list(df.columns)})")
    f = facts[["relation", "subject", "object"]].drop_duplicates()
    pairs = {r: list(zip(g["subject"], g["object"])) for r, g in f.groupby("relation")}

    def forward(rel):
        out = defaultdict(set)
        for s, o in pairs.get(rel, ()):
            out[s].add(o)
        return out

    def backward(rel):
        out = defaultdict(set)
        for s, o in pairs.get(rel, ()):
            out[o].add(s)
        return out

    spouses = forward("P26")
    for s, o in pairs.get("P26", ()):
        spouses[o].add(s)
    rows = defaultdict(set)  # city label -> {(country, via)}
    vias = cities["via"] if "via" in cities.columns else [""] * len(cities)
    for city, country, via in zip(cities["city"], cities["country"], vias):
        rows[city].add((country, via))
    city_countries, ambiguous, country_cities = {}, set(), defaultdict(set)
    for city, found in rows.items():
        capital = {c for c, via in found if via in CAPITAL_WALKS}
        countries = capital if len(found) > 1 and capital else {c for c, _ in found}
        city_countries[city] = countries
        ambiguous |= {city} if len(countries) > 1 and not capital else set()
        for c in countries:
            country_cities[c].add(city)
    chains = composition_chains(facts, symmetric_spouse=symmetric_spouse)
    middles = {k.template: Pool(chains[k.chain].iloc[:, 1]) for k in KINDS.values()}
    relation_ends = {"P463": {o for _, o in pairs.get("P463", ())}, "P161": {o for _, o in pairs.get("P161", ())},
                     "P112": {s for s, _ in pairs.get("P112", ())}}
    return Index(
        members=forward("P463"), years=forward("P571"), cast=forward("P161"), films=backward("P161"),
        spouses=spouses, p26=set(pairs.get("P26", ())), founded=backward("P112"), hq=forward("P159"),
        city_countries=city_countries, ambiguous_cities=ambiguous,
        country_cities={c: Pool(v) for c, v in country_cities.items()},
        middles=middles, other_middles={t: Pool(relation_ends[KINDS[t].relations[0]] - m.members)
                                        for t, m in middles.items()},
        spouse_pool=Pool(chains["film_actor_spouse"]["spouse"]),
        chains={k.template: [tuple(r) for r in chains[k.chain].itertuples(index=False)] for k in KINDS.values()},
    )


# --- one question per subject ------------------------------------------------------------------

@dataclass(frozen=True)
class Question:
    template: str
    subject: str
    middle: str
    answer: str
    distractors: tuple[str, ...]
    facts: tuple[Triple, Triple]
    rule: str  # which distractor rule filled the choices (for the counts)
    hop_distractors: tuple[str, ...]  # of the first one-hop question (subject -> middle)


def answers_of(ix: Index, template: str, subject: str) -> set[str]:
    """Every answer of the two-hop question about ``subject``, over all its chains (both ways for P26)."""
    if template == "band_year":
        return {y for b in ix.members.get(subject, ()) for y in ix.years.get(b, ())}
    if template == "actor_spouse":
        return {s for a in ix.cast.get(subject, ()) for s in ix.spouses.get(a, ())}
    return {c for co in ix.founded.get(subject, ()) for c in ix.hq.get(co, ())}


Tier = tuple[str, Pool, set[str]]  # (rule name, candidates, excluded)


def distractor_tiers(ix: Index, params: CompositionParams, template: str, subject: str, answer: str,
                     answers: set[str]) -> tuple[list[Tier], str | None]:
    """The candidate distractors of one chain, in tiers of preference, or the reason why there are not enough."""
    need, exclude = params.choices - 1, answers | {answer}
    if template == "band_year":
        if not (answer.isdigit() and len(answer) == 4):
            return [], "gold year is not a 4-digit year"
        year, w = int(answer), params.year_window
        tiers = [(f"years within +-{w}", Pool(str(y) for d in range(1, w + 1) for y in (year - d, year + d)
                                              if 1000 <= y <= 9999), exclude)]
        why = f"fewer than {need} years within +-{w} of the gold that are not an answer"
    elif template == "actor_spouse":
        cast = ix.cast.get(subject, set())
        costars = {a for actor in cast for film in ix.films.get(actor, ()) if film != subject
                   for a in ix.cast.get(film, ())} - cast
        near = Pool({s for a in costars for s in ix.spouses.get(a, ())} - exclude)
        tiers = [("spouses of co-stars", near, set()),
                 ("spouses of other actors", ix.spouse_pool, exclude | near.members)]
        why = f"fewer than {need} spouses of other actors"
    else:
        countries = ix.city_countries.get(answer, set())
        if not countries:
            return [], "gold city has no country in the cities table"
        if answer in ix.ambiguous_cities:
            return [], "gold city label is in several countries, as the capital of none"
        (one, *more) = sorted(countries)
        pool = ix.country_cities[one] if not more else Pool(c for k in countries for c in ix.country_cities[k].items)
        tiers = [("cities of the gold's country", pool, exclude)]
        why = f"fewer than {need} other cities in the gold city's country"
    return (tiers, None) if sum(p.available(x) for _, p, x in tiers) >= need else ([], why)


def pick(rng: random.Random, tiers: list[Tier], need: int) -> tuple[list[str], str]:
    """``need`` candidates, the earlier tiers first; the rule names the tiers used."""
    chosen, used = [], []
    for name, pool, exclude in tiers:
        got = pool.sample(rng, need - len(chosen), exclude | set(chosen))
        if got:
            chosen += got
            used.append(name)
        if len(chosen) == need:
            break
    return chosen, " + ".join(used)


def first_hop_tiers(ix: Index, template: str, subject: str) -> list[Tier]:
    """Candidates of the first one-hop question: other middles of the chains, then of the whole relation."""
    own = {"band_year": ix.members, "actor_spouse": ix.cast, "founder_hq": ix.founded}[template].get(subject, set())
    return [("chains", ix.middles[template], set(own)), ("relation", ix.other_middles[template], set(own))]


def chain_facts(ix: Index, template: str, subject: str, middle: str, answer: str) -> tuple[Triple, Triple]:
    r1, r2 = KINDS[template].relations
    if template == "founder_hq":
        return (r1, middle, subject), (r2, middle, answer)
    second = (r2, middle, answer)
    if template == "actor_spouse" and (middle, answer) not in ix.p26:
        second = (r2, answer, middle)  # the P26 fact is given the other way round
    return (r1, subject, middle), second


def questions(ix: Index, params: CompositionParams, template: str, counts: dict) -> dict[str, Question]:
    """The question of every subject that has one (subject -> question); skipped subjects counted."""
    need = params.choices - 1
    by_subject: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for s, m, a in ix.chains[template]:
        by_subject[s].append((m, a))
    skipped, rules = Counter(), Counter()
    out = {}
    for subject in sorted(by_subject):
        rng = random.Random(f"{params.seed}:{PROBE}:{template}:{subject}")
        answers = answers_of(ix, template, subject)
        usable, reasons = [], []
        for middle, answer in sorted(by_subject[subject]):
            tiers, why = distractor_tiers(ix, params, template, subject, answer, answers)
            (usable.append((middle, answer, tiers)) if why is None else reasons.append(why))
        hop_tiers = first_hop_tiers(ix, template, subject)
        if not usable or sum(p.available(x) for _, p, x in hop_tiers) < need:
            skipped[min(reasons) if not usable else f"fewer than {need} other {KINDS[template].middle_slot}s "
                                                    f"for the one-hop question"] += 1
            continue
        middle, answer, tiers = rng.choice(usable)
        distractors, rule_used = pick(rng, tiers, need)
        rules[rule_used] += 1
        out[subject] = Question(template, subject, middle, answer, tuple(distractors),
                                chain_facts(ix, template, subject, middle, answer), rule_used,
                                tuple(pick(rng, hop_tiers, need)[0]))
    counts.update({"chains": len(ix.chains[template]), "subjects": len(by_subject), "usable": len(out),
                   "skipped": dict(sorted(skipped.items())), "distractor_rules": dict(sorted(rules.items()))})
    return out


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
        from generators import get
        from probekit.templates import load_probe_spec

        params = CompositionParams.model_validate(load_probe_spec(get(PROBE).template_path).params)
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
        raise TemplateError(f"{spec.path}: variant {variant.name!r}: templates must be a list of template ids of "
                            f"{list(spec.templates)}, got {ids!r}")
    unknown = [t for t in ids if t not in ROLES]
    if unknown:
        raise TemplateError(f"{spec.path}: variant {variant.name!r}: template(s) {unknown} have no role in a chain; "
                            f"the generator knows the ids {list(ROLES)}")
    for t in ids:
        template, want = spec.template(t), SHAPES[t][1]
        if list(template.slots) != [want]:
            raise TemplateError(f"{spec.path}: template {t!r}: needs the one slot [{want}], has {list(template.slots)}")
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


@register(PROBE, version="1", params=CompositionParams, tables=("wikidata",))
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
        return f"template_id {template!r} is not a template of {PROBE}"
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
