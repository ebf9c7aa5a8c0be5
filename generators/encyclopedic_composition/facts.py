"""The Wikidata side of ENCYCLOPEDIC COMPOSITION: what each two-hop template chains (:data:`KINDS`, with the
roles and fact shapes of its one-hop templates) and the distinct facts of the ``wikidata`` table set indexed
as lookups (:func:`index`), with the seeded candidate pools (:class:`Pool`) the distractors are drawn from.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

from probekit.errors import DataError

PROBE = "encyclopedic_composition"
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
    from probekit.sources.loaders.wikidata import composition_chains

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

    def lookup(rel, backward=False):
        """subject -> its objects by ``rel`` (``backward``: object -> its subjects)."""
        out = defaultdict(set)
        for s, o in pairs.get(rel, ()):
            out[o if backward else s].add(s if backward else o)
        return out

    spouses = lookup("P26")
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
        members=lookup("P463"), years=lookup("P571"), cast=lookup("P161"), films=lookup("P161", backward=True),
        spouses=spouses, p26=set(pairs.get("P26", ())), founded=lookup("P112", backward=True), hq=lookup("P159"),
        city_countries=city_countries, ambiguous_cities=ambiguous,
        country_cities={c: Pool(v) for c, v in country_cities.items()},
        middles=middles, other_middles={t: Pool(relation_ends[KINDS[t].relations[0]] - m.members)
                                        for t, m in middles.items()},
        spouse_pool=Pool(chains["film_actor_spouse"]["spouse"]),
        chains={k.template: [tuple(r) for r in chains[k.chain].itertuples(index=False)] for k in KINDS.values()},
    )
