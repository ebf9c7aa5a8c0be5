"""Wikidata facts for the encyclopedic-composition probe: KAMEL and EntityQuestions offline, or WDQS SPARQL.

Tables
------
``facts`` (relation, subject, object, source), all strings: one row per distinct fact of one source, in
Wikidata's direction (the subject has the property, the object is its value), English labels as the sets
give them (no Q-ids offline), sorted by all four columns. The same fact given by two sources is two rows
(``source`` differs); deduplicate on (relation, subject, object) before counting or joining.

``cities`` (city, country, via): the country of each place that can be an answer of the
headquarters question (objects of P159, capitals: objects of P36 and subjects of P1376), found by walking up
P17 / P131 / P1376 / P36 (inverted) facts, shortest walk first (at most ``city_max_hops`` steps); ``via``
names the walk (``P131>P17``: the city is in a region whose country is given by P17; ``P36^-1``: the city is
the capital of that country). A "country" is any object of a P17 fact. Places that are themselves countries
are left out; a label that reaches two countries at the same distance (``Berlin``: Germany, and a Berlin in
the USA) has two rows. For the "a city in the gold's country" distractors.

Relations, sources and direction (mirror)
-----------------------------------------
=======  ===================  ========================  =====================================
P-id     meaning              subject -> object          sets
=======  ===================  ========================  =====================================
P463     member of            person -> band/org         KAMEL
P571     inception            band/org -> year           KAMEL (object: 4-digit year string)
P161     cast member          film -> actor              KAMEL
P26      spouse               person -> person           KAMEL, EntityQuestions
P112     founded by           org -> founder             KAMEL, EntityQuestions
P159     headquarters loc.    org -> city                KAMEL, EntityQuestions
P17      country              place/thing -> country     KAMEL, EntityQuestions
P131     located in (admin.)  place -> region            KAMEL, EntityQuestions
P36      capital              country/region -> city     KAMEL, EntityQuestions (for ``cities``)
P1376    capital of           city -> country/region     KAMEL (for ``cities``)
=======  ===================  ========================  =====================================

KAMEL (``kamel_<P>_<split>.jsonl``): ``{"sub_label": S, "obj_label": [O, ...]}``; in the test split each
object is ``{"rdf", "chosen", "alternative"}`` and its label is ``chosen`` (``rdf`` when ``chosen`` is
missing). EntityQuestions (``eq_<P>_<split>.jsonl``): ``{"question", "answers": [O, ...]}``; the subject is
recovered from the question with the relation's template in ``eq_relation_query_templates.json``
(``Who is [X] married to?``); every answer is one object (EntityQuestions lists every object of a
subject, not aliases). All three splits of both sets are read by default (they are QA splits, not a
knowledge split). The readers: :mod:`probekit.sources.loaders._wikidata_readers`.

Malformed rows
--------------
A line that is not a JSON object of the set's shape (bad JSON, bad UTF-8, missing or mistyped keys) is a
``DataError`` naming the file and the line: the files are checksum-verified, so such a line means a wrong
file. Facts that are well-formed but unusable are dropped and counted in ``report["dropped"]`` (per reason)
and per file: an empty label; a label that is a bare Q-id (no English label); a P571 value that is not a
year in 1000-9999 (BCE dates, decade/century precision); an EntityQuestions question that does not match
its template; a line with no objects. Repeats of a fact within a source are merged and counted.

SPARQL (``source: sparql``)
---------------------------
One SELECT per relation against https://query.wikidata.org/sparql (English labels through the label
service, truthy ``wdt:`` values, optional per-relation type filters, ``LIMIT sparql_limit``), over a session
retrying 429/5xx with exponential back-off that honours ``Retry-After``, with a descriptive User-Agent (set
your contact in ``user_agent``). Each answer is cached as ``raw/wikidata_sparql/<P>.json`` (query, endpoint,
retrieval time, the SPARQL JSON): when that file exists it is read and the endpoint is not asked again, so a
rebuild is reproducible; a cache made by a different query (params changed) is an error asking to delete it.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field, field_validator

from probekit.errors import ParamsError
from probekit.sources.loaders import Loaded, LoaderParams, register
from probekit.sources.loaders._wikidata_readers import (
    EQ_TEMPLATES,
    RELATIONS,
    _FileStats,
    read_eq,
    read_eq_templates,
    read_kamel,
    read_sparql,
    sparql_query,
)
from probekit.sources.capped import SPARQL_CACHE, Policy
from probekit.sources.sparql import DEFAULT_USER_AGENT, WDQS, SparqlClient, cached_select

DEFAULT_RELATIONS = tuple(RELATIONS)
KAMEL_RELATIONS = ("P463", "P571", "P161", "P26", "P112", "P159", "P17", "P131", "P36", "P1376")
EQ_RELATIONS = ("P26", "P112", "P159", "P17", "P131", "P36")
SPLITS = ("train", "dev", "test")
SOURCE_NAMES = {"kamel": "kamel", "eq": "entityquestions", "sparql": SPARQL_CACHE}

_ORG_TYPES = "VALUES ?stype { wd:Q215380 wd:Q5741069 wd:Q4830453 wd:Q783794 wd:Q891723 wd:Q6881511 } ?s wdt:P31 ?stype ."
_CITY_TYPES = "VALUES ?stype { wd:Q515 wd:Q1549591 } ?s wdt:P31 ?stype ."
# Type filters (SPARQL patterns over ?s / ?o) so that a LIMITed query samples the entities the probe asks about:
# bands (musical group Q215380, rock band Q5741069), organisations (business, company, public company,
# enterprise), films (Q11424), actors (Q33999, Q10800557), cities (Q515, big city Q1549591), countries.
DEFAULT_SPARQL_FILTERS = {
    "P463": "VALUES ?otype { wd:Q215380 wd:Q5741069 } ?o wdt:P31 ?otype .",
    "P571": "VALUES ?stype { wd:Q215380 wd:Q5741069 wd:Q4830453 wd:Q783794 wd:Q891723 wd:Q6881511 } ?s wdt:P31 ?stype .",
    "P161": "?s wdt:P31 wd:Q11424 .",
    "P26": "VALUES ?occ { wd:Q33999 wd:Q10800557 } ?s wdt:P106 ?occ .",
    "P112": _ORG_TYPES,
    "P159": _ORG_TYPES,
    "P17": _CITY_TYPES,
    "P131": _CITY_TYPES,
    "P36": "VALUES ?stype { wd:Q6256 wd:Q3624078 } ?s wdt:P31 ?stype .",
    "P1376": _CITY_TYPES,
}

FACT_COLUMNS = ["relation", "subject", "object", "source"]
CITY_COLUMNS = ["city", "country", "via"]
_PID = re.compile(r"P\d+")


class WikidataParams(LoaderParams):
    """Params of the wikidata table set (section ``tables.wikidata``)."""

    source: Literal["mirror", "sparql"] = "mirror"
    capped: Policy = None   # mirror caps ENCYCLOPEDIC COMPOSITION: refuse it, or accept it (probekit/sources/capped.py)
    relations: list[str] = Field(default_factory=lambda: list(DEFAULT_RELATIONS))
    splits: list[Literal["train", "dev", "test"]] = Field(default_factory=lambda: list(SPLITS))
    city_max_hops: int = Field(3, ge=1, le=6)
    sparql_endpoint: str = WDQS
    sparql_limit: int = Field(20000, ge=1)
    sparql_timeout_s: float = Field(120.0, gt=0)
    sparql_retries: int = Field(5, ge=0)
    sparql_backoff_s: float = Field(2.0, ge=0)
    sparql_filters: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_SPARQL_FILTERS))
    user_agent: str = DEFAULT_USER_AGENT

    @field_validator("relations")
    @classmethod
    def _pids(cls, v: list[str]) -> list[str]:
        bad = [r for r in v if not _PID.fullmatch(r)]
        if bad:
            raise ValueError(f"not Wikidata property ids: {bad}")
        if len(set(v)) != len(v) or not v:
            raise ValueError("must be a non-empty list without repeats")
        return v


def sources(params: WikidataParams) -> list[str]:
    """The ``raw/sources.yaml`` sources the loader reads with ``params`` (none for SPARQL: its answers are cached in
    ``raw/wikidata_sparql/`` by the loader itself)."""
    if params.source == "sparql":
        return []
    return [n for n, rels in (("entityquestions", EQ_RELATIONS), ("kamel", KAMEL_RELATIONS))
            if set(params.relations) & set(rels)]


def kamel_file(relation: str, split: str) -> str:
    return f"kamel_{relation}_{split}.jsonl"


def eq_file(relation: str, split: str) -> str:
    return f"eq_{relation}_{split}.jsonl"


# --- derived -----------------------------------------------------------------------------------

def city_countries(facts: pd.DataFrame, max_hops: int = 3) -> pd.DataFrame:
    """The ``cities`` table (see the module docstring) from a ``facts`` table."""
    f = facts[["relation", "subject", "object"]].drop_duplicates()
    by = {r: g for r, g in f.groupby("relation")}
    pairs = lambda r: [] if r not in by else zip(by[r]["subject"], by[r]["object"])  # noqa: E731
    countries = set(by["P17"]["object"]) if "P17" in by else set()
    up: dict[str, list[tuple[str, str]]] = defaultdict(list)  # node -> [(edge name, parent)]
    for s, o in pairs("P17"):
        up[s].append(("P17", o))
    for s, o in pairs("P131"):
        up[s].append(("P131", o))
    for s, o in pairs("P1376"):
        up[s].append(("P1376", o))
    for s, o in pairs("P36"):
        up[o].append(("P36^-1", s))
    for k in up:
        up[k].sort()
    candidates = {o for _, o in pairs("P159")} | {o for _, o in pairs("P36")} | {s for s, _ in pairs("P1376")}
    rows = []
    for city in sorted(candidates - countries):
        found: dict[str, str] = {}
        frontier, seen = [(city, ())], {city}
        for _ in range(max_hops):
            nxt = []
            for node, path in frontier:
                for edge, parent in up.get(node, ()):
                    via = path + (edge,)
                    if parent in countries and parent != city:
                        found[parent] = min(found.get(parent, "~"), ">".join(via))
                    elif parent not in seen:
                        seen.add(parent)
                        nxt.append((parent, via))
            if found or not nxt:
                break
            frontier = nxt
        rows += [(city, country, via) for country, via in sorted(found.items())]
    return pd.DataFrame(rows, columns=CITY_COLUMNS)


def composition_chains(facts: pd.DataFrame, symmetric_spouse: bool = False) -> dict[str, pd.DataFrame]:
    """The two-hop chains of the encyclopedic-composition questions, over distinct (relation, subject, object):

    ``person_band_year`` (person, band, year): P463 person->band joined with P571 band->year;
    ``film_actor_spouse`` (film, actor, spouse): P161 film->actor joined with P26 actor->spouse
    (``symmetric_spouse`` also uses each P26 fact backwards);
    ``person_company_city`` (person, company, city): P112 company->founder (read backwards) joined with
    P159 company->city. Joins are on labels, so two entities with one label are conflated."""
    f = facts[["relation", "subject", "object"]].drop_duplicates()

    def rel(r, a, b):
        return f.loc[f["relation"] == r, ["subject", "object"]].set_axis([a, b], axis=1)

    spouse = rel("P26", "actor", "spouse")
    if symmetric_spouse:
        spouse = pd.concat([spouse, spouse.set_axis(["spouse", "actor"], axis=1)[["actor", "spouse"]]])
    out = {
        "person_band_year": rel("P463", "person", "band").merge(rel("P571", "band", "year")),
        "film_actor_spouse": rel("P161", "film", "actor").merge(spouse),
        "person_company_city": rel("P112", "company", "person")[["person", "company"]].merge(
            rel("P159", "company", "city")),
    }
    return {k: v.drop_duplicates().sort_values(list(v.columns)).reset_index(drop=True) for k, v in out.items()}


# --- the loader --------------------------------------------------------------------------------

@register("wikidata", params=WikidataParams, sources=sources)
def load(raw: Path, params: WikidataParams) -> Loaded:
    """``facts`` and ``cities`` tables from ``raw/kamel`` + ``raw/entityquestions`` (mirror) or from Wikidata's
    SPARQL endpoint cached under ``raw/wikidata_sparql`` (see the module docstring)."""
    raw = Path(raw)
    files: dict[str, _FileStats] = {}
    facts: dict[str, list[tuple[str, str]]] = defaultdict(list)  # source -> [(relation, s, o)] with repeats
    if params.source == "mirror":
        unknown = [r for r in params.relations if r not in KAMEL_RELATIONS and r not in EQ_RELATIONS]
        if unknown:
            raise ParamsError(f"tables.wikidata.relations: {unknown} are in neither KAMEL ({', '.join(KAMEL_RELATIONS)}) "
                              f"nor EntityQuestions ({', '.join(EQ_RELATIONS)}) as mirrored; use source: sparql")
        templates = None
        for rel in params.relations:
            for split in params.splits:
                if rel in KAMEL_RELATIONS:
                    path = raw / "kamel" / kamel_file(rel, split)
                    st = files.setdefault(f"kamel/{path.name}", _FileStats())
                    facts["kamel"] += [(rel, s, o) for s, o in read_kamel(path, rel, st)]
                if rel in EQ_RELATIONS:
                    if templates is None:
                        templates = read_eq_templates(raw / "entityquestions" / EQ_TEMPLATES)
                    path = raw / "entityquestions" / eq_file(rel, split)
                    st = files.setdefault(f"entityquestions/{path.name}", _FileStats())
                    facts["entityquestions"] += [(rel, s, o) for s, o in read_eq(path, rel, templates, st)]
    else:
        cache = raw / SOURCE_NAMES["sparql"]
        client: list[SparqlClient] = []

        def factory() -> SparqlClient:
            if not client:
                client.append(SparqlClient(params.sparql_endpoint, params.user_agent, params.sparql_timeout_s,
                                           params.sparql_retries, params.sparql_backoff_s))
            return client[0]

        for rel in params.relations:
            query = sparql_query(rel, params.sparql_limit, params.sparql_filters.get(rel, ""))
            response = cached_select(cache, rel, query, factory)
            st = files.setdefault(f"{SOURCE_NAMES['sparql']}/{rel}.json", _FileStats())
            facts["wikidata_sparql"] += [(rel, s, o) for s, o in read_sparql(response, rel, str(cache / f"{rel}.json"), st)]

    rows, repeats = set(), Counter()
    for source, triples in facts.items():
        unique = set(triples)
        repeats[source] = len(triples) - len(unique)
        rows |= {(r, s, o, source) for r, s, o in unique}
    table = pd.DataFrame(sorted(rows), columns=FACT_COLUMNS)
    cities = city_countries(table, params.city_max_hops)

    per_rel: dict[str, dict[str, int]] = {}
    for (rel, src), n in table.groupby(["relation", "source"]).size().items():
        per_rel.setdefault(rel, {})[src] = int(n)
    distinct = table.drop_duplicates(["relation", "subject", "object"])
    dropped = Counter()
    for st in files.values():
        dropped.update(st.dropped)
    chains = composition_chains(table)
    report = {
        "source": params.source,
        "malformed_lines": "DataError naming file and line",
        "rows": len(table),
        "rows_per_relation": {r: per_rel[r] for r in sorted(per_rel)},
        "distinct_facts_per_relation": {r: int(n) for r, n in distinct.groupby("relation").size().items()},
        "facts_in_two_sources": int(len(table) - len(distinct)),
        "repeats_merged": {k: int(v) for k, v in sorted(repeats.items())},
        "dropped": dict(sorted(dropped.items())),
        "files": {k: st.as_dict() for k, st in sorted(files.items())},
        "cities": {"rows": len(cities), "cities": int(cities["city"].nunique()),
                   "countries": int(cities["country"].nunique()),
                   "cities_with_two_or_more_countries": int((cities.groupby("city").size() > 1).sum())},
        "chains": {k: len(v) for k, v in chains.items()},
        "chains_symmetric_spouse": len(composition_chains(table, symmetric_spouse=True)["film_actor_spouse"]),
    }
    return Loaded(tables={"facts": table, "cities": cities}, report=report)
