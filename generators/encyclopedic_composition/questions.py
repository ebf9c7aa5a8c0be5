"""The two-hop questions of ENCYCLOPEDIC COMPOSITION: the probe's params and, per template, one question per
subject (its gold chain drawn among those with enough distractors, its distractors and those of its first
one-hop question, by the rules of the tiers), with the counts of skipped subjects and rules used.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass

from pydantic import Field, ValidationInfo, field_validator

from generators.encyclopedic_composition.facts import KINDS, PROBE, Index, Pool, Triple
from probekit.params import ProbeParams, SplitSizes


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
