"""The wikidata loader: KAMEL / EntityQuestions readers, the SPARQL client (loopback only), the real mirror."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from probekit.errors import DataError, ParamsError
from probekit.sources.loaders import get
from probekit.sources.loaders import wikidata as wd
from probekit.sources.loaders import write_tables
from probekit.sources.loaders._wikidata_readers import (
    EQ_TEMPLATES,
    _FileStats,
    normalise_year,
    read_eq,
    read_kamel,
    sparql_query,
)
from probekit.sources.manifest import FetchError

from helpers import LoopbackServer, listed

TEMPLATES = {"P26": "Who is [X] married to?", "P159": "Where is the headquarter of [X]?",
             "P159_similar": "Where is [X] headquartered?"}


def jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_registered_with_params_and_sources():
    loader = get("wikidata")
    assert loader.params is wd.WikidataParams and loader.fn is wd.load and loader.sources is wd.sources
    assert wd.sources(wd.WikidataParams()) == ["entityquestions", "kamel"]
    assert wd.sources(wd.WikidataParams(relations=["P571"])) == ["kamel"]
    assert wd.sources(wd.WikidataParams(source="sparql")) == []
    with pytest.raises(ValueError):
        wd.WikidataParams(relations=["Q5"])


@pytest.mark.parametrize("value, year", [
    ("1959", "1959"), ("1959-01-01T00:00:00Z", "1959"), ("+2004-05-01T00:00:00Z", "2004"), (" 1066 ", "1066"),
    ("-0500-01-01T00:00:00Z", None), ("850", None), ("0850", None), ("12000", None), ("1950s", None), ("", None),
])
def test_normalise_year(value, year):
    assert normalise_year(value) == year


# --- readers on small files in the real formats -------------------------------------------------

def test_read_kamel_train_and_test_formats_with_counted_drops(tmp_path):
    path = jsonl(tmp_path / "kamel_P571_test.jsonl", [
        {"index": [1], "sub_label": "The Selecter", "obj_label": ["1979"]},
        {"index": [2], "sub_label": " Oh My Girl ", "obj_uri": ["XMLSchema#dateTime"],
         "obj_label": [{"rdf": None, "alternative": ["2015"], "chosen": "2015-01-01T00:00:00Z"}]},
        "",
        {"index": [3], "sub_label": "Ancient thing", "obj_label": ["-0500"]},
        {"index": [4], "sub_label": "Q123", "obj_label": ["1990"]},
        {"index": [5], "sub_label": "Nothing", "obj_label": []},
        {"index": [6], "sub_label": "", "obj_label": ["1990"]},
    ])
    stats = _FileStats()
    assert read_kamel(path, "P571", stats) == [("The Selecter", "1979"), ("Oh My Girl", "2015")]
    assert stats.as_dict() == {"lines": 6, "facts": 2, "dropped": {
        "P571 value not a year in 1000-9999": 1, "empty label": 1, "no English label (bare Q-id)": 1,
        "no objects": 1}}
    path = jsonl(tmp_path / "kamel_P161_test.jsonl", [
        {"sub_label": "Aag Ka Gola", "obj_uri": ["Q944546", "Q158558"],
         "obj_label": [{"alternative": ["Ajay Singh Deol"], "rdf": "Sunny Deol", "chosen": "Sunny Deol"},
                       {"alternative": [], "rdf": "Dimple Kapadia", "chosen": None}]}])
    assert read_kamel(path, "P161") == [("Aag Ka Gola", "Sunny Deol"), ("Aag Ka Gola", "Dimple Kapadia")]


@pytest.mark.parametrize("bad", [
    '{"sub_label": "A", "obj_label": ["B"]',  # truncated JSON
    '["A", "B"]',
    '{"sub_label": "A", "obj_label": "B"}',
    '{"sub_label": "A", "obj_label": [{"rdf": null}]}',
])
def test_malformed_kamel_line_is_a_data_error_naming_file_and_line(tmp_path, bad):
    path = jsonl(tmp_path / "kamel_P26_train.jsonl", [{"sub_label": "A", "obj_label": ["B"]}, "", bad])
    with pytest.raises(DataError, match=r"kamel_P26_train\.jsonl:3: "):
        read_kamel(path, "P26")


def test_bad_utf8_is_a_data_error_naming_the_line(tmp_path):
    path = tmp_path / "kamel_P26_train.jsonl"
    path.write_bytes(b'{"sub_label": "A", "obj_label": ["B"]}\n{"sub_label": "\xff"}\n')
    # the one JSONL reader's words (probekit.data.jsonl), with the bad byte's place in the file
    with pytest.raises(DataError, match=r"kamel_P26_train\.jsonl:2: not UTF-8 text \(invalid start byte at byte 54 "):
        read_kamel(path, "P26")


def test_read_eq_recovers_the_subject_from_the_question(tmp_path):
    path = jsonl(tmp_path / "eq_P159_dev.jsonl", [
        {"question": "Where is the headquarter of Ingrooves?", "answers": ["Los Angeles", "San Francisco"]},
        {"question": "Where is Magnum Photos headquartered?", "answers": ["Paris"]},
        {"question": "Who owns Magnum Photos?", "answers": ["Paris"]},
        {"question": "Where is the headquarter of Nobody?", "answers": []},
    ])
    stats = _FileStats()
    assert read_eq(path, "P159", TEMPLATES, stats) == [
        ("Ingrooves", "Los Angeles"), ("Ingrooves", "San Francisco"), ("Magnum Photos", "Paris")]
    assert stats.as_dict()["dropped"] == {"question does not match the relation's template": 1, "no objects": 1}
    bad = jsonl(tmp_path / "eq_P26_dev.jsonl", [{"question": "Who is A married to?", "answers": ["B"]},
                                                {"question": "Who is A married to?", "answers": "B"}])
    with pytest.raises(DataError, match=r"eq_P26_dev\.jsonl:2: "):
        read_eq(bad, "P26", TEMPLATES)
    with pytest.raises(DataError, match="no question template for P17"):
        read_eq(bad, "P17", TEMPLATES)


def small_raw(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    (raw / "entityquestions").mkdir(parents=True)
    (raw / "entityquestions" / EQ_TEMPLATES).write_text(json.dumps(TEMPLATES))
    jsonl(raw / "kamel" / "kamel_P26_train.jsonl", [
        {"sub_label": "Peter O'Brien", "obj_label": ["Miranda Otto"]},
        {"sub_label": "Amber Heard", "obj_label": ["Johnny Depp"]}])
    jsonl(raw / "entityquestions" / "eq_P26_train.jsonl", [
        {"question": "Who is Amber Heard married to?", "answers": ["Johnny Depp"]},
        {"question": "Who is Wyatt Earp married to?", "answers": ["Mattie Blaylock", "Josephine Earp"]},
        {"question": "Who is Wyatt Earp married to?", "answers": ["Josephine Earp"]}])
    jsonl(raw / "kamel" / "kamel_P571_train.jsonl", [
        {"sub_label": "The Selecter", "obj_label": ["1979"]}, {"sub_label": "Old", "obj_label": ["0850"]}])
    return raw


def test_load_small_raw_folder(tmp_path):
    raw = small_raw(tmp_path)
    loaded = wd.load(raw, wd.WikidataParams(relations=["P571", "P26"], splits=["train"]))
    facts = loaded.tables["facts"]
    assert list(facts.columns) == wd.FACT_COLUMNS
    assert facts.values.tolist() == [
        ["P26", "Amber Heard", "Johnny Depp", "entityquestions"],
        ["P26", "Amber Heard", "Johnny Depp", "kamel"],
        ["P26", "Peter O'Brien", "Miranda Otto", "kamel"],
        ["P26", "Wyatt Earp", "Josephine Earp", "entityquestions"],
        ["P26", "Wyatt Earp", "Mattie Blaylock", "entityquestions"],
        ["P571", "The Selecter", "1979", "kamel"]]
    r = loaded.report
    assert r["rows_per_relation"] == {"P26": {"entityquestions": 3, "kamel": 2}, "P571": {"kamel": 1}}
    assert r["facts_in_two_sources"] == 1 and r["repeats_merged"] == {"entityquestions": 1, "kamel": 0}
    assert r["dropped"] == {"P571 value not a year in 1000-9999": 1}
    assert r["files"]["entityquestions/eq_P26_train.jsonl"] == {"lines": 3, "facts": 4, "dropped": {}}
    json.dumps(r)  # JSON-able
    (raw / "kamel" / "kamel_P26_train.jsonl").unlink()
    with pytest.raises(DataError, match=r"kamel_P26_train\.jsonl: missing \(run: probes sources fetch kamel\)"):
        wd.load(raw, wd.WikidataParams(relations=["P26"], splits=["train"]))
    with pytest.raises(ParamsError, match="P999"):
        wd.load(raw, wd.WikidataParams(relations=["P999"]))


def facts_df(rows) -> pd.DataFrame:
    return pd.DataFrame([(r, s, o, "kamel") for r, s, o in rows], columns=wd.FACT_COLUMNS)


def test_cities_walk_up_to_a_country():
    facts = facts_df([
        ("P159", "Acme", "Springfield"), ("P159", "Acme2", "Kozhikode"), ("P159", "Acme3", "Spain"),
        ("P159", "Acme4", "Nowhere"), ("P159", "Acme5", "Berlin"), ("P159", "Acme6", "Deepville"),
        ("P17", "Springfield", "United States of America"), ("P17", "Spain", "Spain"),
        ("P131", "Kozhikode", "Kerala"), ("P17", "Kerala", "India"),
        ("P36", "Germany", "Berlin"), ("P17", "Berlin", "United States of America"), ("P17", "Bonn", "Germany"),
        ("P1376", "Madrid", "Spain"),
        ("P131", "Deepville", "A"), ("P131", "A", "B"), ("P131", "B", "C"), ("P17", "C", "Chile"),
    ])
    cities = wd.city_countries(facts, max_hops=3)
    assert cities.values.tolist() == [
        ["Berlin", "Germany", "P36^-1"], ["Berlin", "United States of America", "P17"],
        ["Kozhikode", "India", "P131>P17"], ["Madrid", "Spain", "P1376"],
        ["Springfield", "United States of America", "P17"]]
    assert ["Deepville", "Chile", "P131>P131>P131>P17"] in wd.city_countries(facts, max_hops=4).values.tolist()


def test_composition_chains():
    facts = facts_df([
        ("P463", "Pauline Black", "The Selecter"), ("P571", "The Selecter", "1979"),
        ("P161", "3 Days to Kill", "Amber Heard"), ("P26", "Amber Heard", "Johnny Depp"),
        ("P161", "Film", "Johnny Depp"),
        ("P112", "Quora", "Adam D'Angelo"), ("P159", "Quora", "Mountain View"), ("P159", "Other", "Paris"),
    ])
    facts = pd.concat([facts, facts.assign(source="entityquestions")])  # the same facts twice count once
    chains = wd.composition_chains(facts)
    assert chains["person_band_year"].values.tolist() == [["Pauline Black", "The Selecter", "1979"]]
    assert chains["film_actor_spouse"].values.tolist() == [["3 Days to Kill", "Amber Heard", "Johnny Depp"]]
    assert chains["person_company_city"].values.tolist() == [["Adam D'Angelo", "Quora", "Mountain View"]]
    both = wd.composition_chains(facts, symmetric_spouse=True)["film_actor_spouse"].values.tolist()
    assert both == [["3 Days to Kill", "Amber Heard", "Johnny Depp"], ["Film", "Johnny Depp", "Amber Heard"]]


# --- the SPARQL client against a loopback server ------------------------------------------------

def binding(s, o, year=False):
    obj = ({"o": {"type": "literal", "datatype": "http://www.w3.org/2001/XMLSchema#dateTime", "value": o}} if year
           else {"oLabel": {"type": "literal", "xml:lang": "en", "value": o}})
    return {"s": {"type": "uri", "value": "http://www.wikidata.org/entity/Q1"},
            "sLabel": {"type": "literal", "xml:lang": "en", "value": s}, **obj}


CANNED = {
    "P26": {"head": {"vars": ["s", "sLabel", "o", "oLabel"]}, "results": {"bindings": [
        binding("Amber Heard", "Johnny Depp"), binding("Q98765", "Somebody"), binding("Amber Heard", "Johnny Depp")]}},
    "P571": {"head": {"vars": ["s", "sLabel", "o"]}, "results": {"bindings": [
        binding("The Selecter", "1979-01-01T00:00:00Z", year=True),
        binding("Ancient", "-0500-01-01T00:00:00Z", year=True)]}},
}


class SparqlServer(LoopbackServer):
    """Answers GET /sparql with CANNED[relation] (the relation read from the query); the first ``busy`` answers
    are 429 with ``Retry-After: 0``, or ``status`` for every answer when set."""

    def __init__(self):
        self.busy, self.retry_after, self.status, self.requests = 1, "0", None, []
        super().__init__("/sparql")

    def respond(self, request):
        url = urlparse(request.path)
        query = parse_qs(url.query).get("query", [""])[0]
        self.requests.append({"path": url.path, "query": query, "ua": request.headers.get("User-Agent"),
                              "accept": request.headers.get("Accept")})
        if self.status:
            return self.status, b"down", None
        if self.busy > 0:
            self.busy -= 1
            return 429, b"slow down", {"Retry-After": self.retry_after}
        rel = next(r for r in CANNED if f"wdt:{r} " in query or f"p:{r} " in query)
        return 200, json.dumps(CANNED[rel]).encode(), {"Content-Type": "application/sparql-results+json"}


@pytest.fixture
def sparql():
    s = SparqlServer()
    yield s
    s.close()


UA = "probekit-test/0 (loader tests; contact: tests@example.org)"


def sparql_params(server, **extra) -> wd.WikidataParams:
    return wd.WikidataParams(**{"source": "sparql", "relations": ["P26", "P571"], "sparql_endpoint": server.url,
                                "user_agent": UA, "sparql_backoff_s": 0, "sparql_limit": 50, **extra})


def test_sparql_retries_429_then_caches(sparql, tmp_path):
    loaded = wd.load(tmp_path, sparql_params(sparql))
    assert loaded.tables["facts"].values.tolist() == [["P26", "Amber Heard", "Johnny Depp", "wikidata_sparql"],
                                                      ["P571", "The Selecter", "1979", "wikidata_sparql"]]
    reqs = sparql.requests
    assert len(reqs) == 3 and reqs[0]["query"] == reqs[1]["query"]  # P26 asked twice (429, then 200), P571 once
    assert all(r["ua"] == UA and r["path"] == "/sparql" for r in reqs)
    assert "application/sparql-results+json" in reqs[0]["accept"]
    assert "wdt:P26 ?o" in reqs[0]["query"] and "LIMIT 50" in reqs[0]["query"]
    assert 'wikibase:language "en"' in reqs[0]["query"] and "wd:Q33999" in reqs[0]["query"]
    assert "p:P571 ?st" in reqs[2]["query"] and "timePrecision" in reqs[2]["query"]
    assert loaded.report["dropped"] == {"P571 value not a year in 1000-9999": 1, "no English label (bare Q-id)": 1}
    assert loaded.report["repeats_merged"] == {"wikidata_sparql": 1}
    cache = tmp_path / "wikidata_sparql"
    assert listed(cache) == ["P26.json", "P571.json"]
    stored = json.loads((cache / "P26.json").read_text())
    assert stored["query"] == reqs[1]["query"] and stored["response"] == CANNED["P26"]
    assert stored["endpoint"] == sparql.url

    again = wd.load(tmp_path, sparql_params(sparql))  # the cache answers: no request
    assert len(sparql.requests) == 3
    pd.testing.assert_frame_equal(again.tables["facts"], loaded.tables["facts"])
    with pytest.raises(DataError, match=r"P26\.json: cached for another query .*delete it"):
        wd.load(tmp_path, sparql_params(sparql, sparql_limit=10))
    assert len(sparql.requests) == 3


def test_sparql_honours_retry_after(sparql, tmp_path):
    sparql.retry_after = "1"  # back-off is 0 here, so any wait comes from the header
    start = time.monotonic()
    wd.load(tmp_path, sparql_params(sparql, relations=["P26"]))
    assert time.monotonic() - start >= 0.9 and len(sparql.requests) == 2


def test_sparql_server_errors_become_a_fetch_error_and_write_no_cache(sparql, tmp_path):
    sparql.status = 500
    with pytest.raises(FetchError, match=r"SPARQL http://127\.0\.0\.1:\d+/sparql: RetryError"):
        wd.load(tmp_path, sparql_params(sparql, sparql_retries=1))
    assert len(sparql.requests) == 2
    assert not (tmp_path / "wikidata_sparql" / "P26.json").exists()


def test_malformed_sparql_cache_is_a_data_error(tmp_path):
    query = sparql_query("P26", 50, wd.DEFAULT_SPARQL_FILTERS["P26"])
    (tmp_path / "wikidata_sparql").mkdir()
    (tmp_path / "wikidata_sparql" / "P26.json").write_text(json.dumps(
        {"query": query, "response": {"results": {"bindings": [{"sLabel": {"value": "A"}}]}}}))
    with pytest.raises(DataError, match=r"P26\.json: result 0: expected \?sLabel and \?oLabel"):
        wd.load(tmp_path, wd.WikidataParams(source="sparql", relations=["P26"], sparql_limit=50))


# --- the real mirror ----------------------------------------------------------------------------

def test_real_mirror_facts(mirror_sources, tmp_path):
    assert mirror_sources.params("wikidata") == wd.WikidataParams() and get("wikidata").fn is wd.load
    mirror_raw = mirror_sources.fetch("wikidata")
    loaded = mirror_sources.loaded("wikidata")   # wd.load(mirror_raw, wd.WikidataParams()), the session's
    facts, cities = loaded.tables["facts"], loaded.tables["cities"]
    assert list(facts.columns) == wd.FACT_COLUMNS and list(cities.columns) == wd.CITY_COLUMNS
    assert all(facts[c].map(type).eq(str).all() for c in facts.columns)
    assert set(facts["relation"]) == set(wd.DEFAULT_RELATIONS)
    for source, rels in (("kamel", wd.KAMEL_RELATIONS), ("entityquestions", wd.EQ_RELATIONS)):
        assert set(facts.loc[facts["source"] == source, "relation"]) == set(rels)
    assert not facts.duplicated().any() and not cities.duplicated().any()
    assert facts.equals(facts.sort_values(wd.FACT_COLUMNS).reset_index(drop=True))
    assert (facts["subject"].str.strip() == facts["subject"]).all() and (facts["object"] != "").all()
    years = facts.loc[facts["relation"] == "P571", "object"]
    assert len(years) > 1000 and years.str.fullmatch(r"\d{4}").all()
    rows = {tuple(r) for r in facts.itertuples(index=False)}
    assert ("P26", "Umberto I of Italy", "Margherita of Savoy", "entityquestions") in rows
    assert ("P571", "Navneet Publications", "1959", "kamel") in rows
    assert ("P161", "Aag Ka Gola", "Sunny Deol", "kamel") in rows  # a KAMEL test-split object
    r = loaded.report
    assert r["rows"] == len(facts) and r["dropped"] == {}
    assert sum(n for per in r["rows_per_relation"].values() for n in per.values()) == len(facts)
    assert len(r["files"]) == len(wd.KAMEL_RELATIONS) * 3 + len(wd.EQ_RELATIONS) * 3
    assert all(c > 0 for c in r["chains"].values())
    assert ("Amsterdam", "Netherlands") in {tuple(x) for x in cities[["city", "country"]].values}

    a = write_tables(loaded, tmp_path / "a")
    b = write_tables(wd.load(mirror_raw, wd.WikidataParams()), tmp_path / "b")
    for name in ("facts.parquet", "cities.parquet", "report.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert pd.read_parquet(a / "facts.parquet").equals(facts)
