"""ConceptNet loader: the official dump reader on the upstream test fixture, the three mirror subsets' formats,
malformed lines, params, and load() on the real mirror (columns, order, no duplicates, stable bytes)."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from pydantic import ValidationError

from probekit.errors import DataError
from probekit.sources.loaders import conceptnet as cn
from probekit.sources.loaders import get, write_tables

from helpers import MIRROR

FIXTURE = MIRROR / "conceptnet" / "conceptnet5_testdata" / "assertions.csv"
MIRROR_FILES = {  # flat name in raw/conceptnet_subsets/ -> file under the mirror root
    "cn100k_train.txt": "conceptnet/cn100k_inductive/train.txt",
    "cn100k_valid.txt": "conceptnet/cn100k_inductive/valid.txt",
    "cn100k_test.txt": "conceptnet/cn100k_inductive/test.txt",
    "twc_train_conceptnet_subgraph.txt": "conceptnet/twc_subgraph/train_conceptnet_subgraph.txt",
    "twc_valid_conceptnet_subgraph.txt": "conceptnet/twc_subgraph/valid_conceptnet_subgraph.txt",
    "evalution_RELATIONS.txt": "conceptnet/evalution_1.0/RELATIONS.txt",
}

# Read by hand from the fixture: its English-English IsA, Antonym and Synonym edges. Senses merge
# (/c/en/test/n and /c/en/test/n/wikt/en_1 give 4 duplicate synonym pairs); 2 synonym self-loops drop.
FIXTURE_EDGES = [
    ("Antonym", "test", "breeze", 1.0), ("Antonym", "test", "recess", 1.0),
    ("IsA", "adjudging", "evaluating", 1.0), ("IsA", "assay", "test", 2.0), ("IsA", "checking", "evaluating", 1.0),
    ("IsA", "evaluating action", "evaluating", 1.0), ("IsA", "evaluating nutrition", "evaluating action", 1.0),
    ("IsA", "striking down", "adjudging", 1.0), ("IsA", "test", "example concept", 0.5),
    ("Synonym", "run", "test", 2.0), ("Synonym", "test", "challenge", 1.0), ("Synonym", "test", "examination", 1.0),
    ("Synonym", "test", "quiz", 1.0), ("Synonym", "test", "trial", 1.0), ("Synonym", "trial", "test", 2.0),
]


def assertion(rel: str, start: str, end: str, meta: str = '{"weight": 1.5}') -> str:
    return f"/a/[/r/{rel}/,{start}/,{end}/]\t/r/{rel}\t{start}\t{end}\t{meta}\n"


def check_table(df: pd.DataFrame) -> None:
    assert list(df.columns) == cn.COLUMNS
    assert all(pd.api.types.is_string_dtype(df[c]) for c in cn.KEY) and df["weight"].dtype == "float64"
    assert not df.duplicated(cn.KEY).any()
    pd.testing.assert_frame_equal(df, df.sort_values(cn.KEY).reset_index(drop=True))


# ---------------------------------------------------------------- the official dump format


@pytest.mark.parametrize("gz", [False, True], ids=["csv", "csv.gz"])
def test_read_assertions_on_upstream_fixture(tmp_path, gz):
    src = tmp_path / ("assertions.csv.gz" if gz else "assertions.csv")
    src.write_bytes(gzip.compress(FIXTURE.read_bytes(), mtime=0) if gz else FIXTURE.read_bytes())
    report = cn.read_assertions(src, tmp_path / "edges.parquet", ["IsA", "antonym", "/r/Synonym"])
    assert report == {"source": "conceptnet5.7", "rows_read": 764, "rows_kept": 19,
                      "dropped": {"not_english": 668, "relation_not_selected": 75, "self_loop": 2},
                      "examples": {}, "duplicates_dropped": 4, "rows_written": 15}
    df = pd.read_parquet(tmp_path / "edges.parquet")
    assert list(df.itertuples(index=False)) == [(*e, "conceptnet5.7") for e in FIXTURE_EDGES]


def test_read_assertions_counts_malformed_lines(tmp_path):
    src = tmp_path / "assertions.csv"
    src.write_text(assertion("IsA", "/c/en/dog/n", "/c/en/pet") + "/a/x\t/r/IsA\t/c/en/cat\n\n"
                   + assertion("IsA", "/c/en/cat", "/c/en/pet").rstrip("\n") + "\textra\n"
                   + assertion("IsA", "/c/en/cow", "/c/en/animal", "{not json")
                   + assertion("IsA", "/c/en/hen", "/c/en/bird", '{"dataset": "/d/x"}')
                   + assertion("IsA", "/c/fr/chien", "/c/en/dog") + assertion("IsA", "/c/en/Big_Dog", "/c/en/dog/n"))
    report = cn.read_assertions(src, tmp_path / "e.parquet", ["IsA"])
    assert (report["rows_read"], report["rows_kept"]) == (7, 2)
    assert report["dropped"] == {"malformed": 4, "not_english": 1}
    examples = report["examples"]["malformed"]
    assert examples[0].startswith("line 2: ") and examples[1].startswith("line 4: ")  # line 3 is blank
    assert "edge /a/[/r/IsA/,/c/en/cow/,/c/en/animal/]: JSON does not parse or has no numeric weight" in examples
    df = pd.read_parquet(tmp_path / "e.parquet")
    assert list(df.itertuples(index=False)) == [("IsA", "big dog", "dog", 1.5, "conceptnet5.7"),
                                                ("IsA", "dog", "pet", 1.5, "conceptnet5.7")]


def test_read_assertions_refuses_a_file_in_another_format(tmp_path):
    src = tmp_path / "edges.csv"
    src.write_text("relation,head,tail\nIsA,dog,pet\n")
    with pytest.raises(DataError, match=r"edges\.csv: no line is a ConceptNet assertion.*line 1"):
        cn.read_assertions(src, tmp_path / "e.parquet", ["IsA"])
    with pytest.raises(DataError, match="no such file"):
        cn.read_assertions(tmp_path / "missing.csv.gz", tmp_path / "e.parquet", ["IsA"])


# ---------------------------------------------------------------- the mirror subsets' formats

EV = "\t".join(["x"] * 14)  # EVALution's 14 columns after relatum1, relation, relatum2


@pytest.mark.parametrize("source, name, text, edges, dropped", [
    ("cn100k", "cn100k_train.txt",
     "IsA\tpractice  read english\tskill\nAtLocation\trestroom\n\nAtLocation\trestroom\trest area\n",
     [("AtLocation", "restroom", "rest area"), ("IsA", "practice read english", "skill")], {"malformed": 1}),
    ("twc", "twc_train_conceptnet_subgraph.txt",
     "derivative_work\tisa\tWork\nrock_band\tgenre\trock\ncheese\tsynonym\tcheese\nbad line\n"
     "x\tfoosimilar\ty\n",
     [("IsA", "derivative work", "work"), ("dbpedia/genre", "rock band", "rock")],
     {"malformed": 1, "self_loop": 1, "unknown_relation": 1}),
    ("evalution", "evalution_RELATIONS.txt",
     f"accident\tAntonym\tplan\t{EV}\nbaseball_diamond\tIsA\tplace\t{EV}\nabstract\tAntonym\tconcrete\n",
     [("Antonym", "accident", "plan"), ("IsA", "baseball diamond", "place")], {"malformed": 1}),
])
def test_each_subset_format(tmp_path, source, name, text, edges, dropped):
    (tmp_path / name).write_text(text)
    relations = {"IsA", "AtLocation", "Antonym", "Synonym", "dbpedia/genre"}
    df, report = cn.read_subset_file(tmp_path / name, cn.SUBSETS[source], source, relations)
    assert sorted(df[["relation", "head", "tail"]].itertuples(index=False, name=None)) == edges
    assert set(df["weight"]) == {1.0} and set(df["source"]) == {source}
    assert report["dropped"] == dropped and report["rows_kept"] == len(edges)
    assert report["rows_read"] == len(edges) + sum(dropped.values())
    assert report["examples"]["malformed"][0].startswith("line ")


def test_subset_file_with_no_parsable_line_is_an_error(tmp_path):
    path = tmp_path / "twc_train_conceptnet_subgraph.txt"
    path.write_text("a,isa,b\nc,isa,d\n")
    with pytest.raises(DataError, match=r"twc_train_conceptnet_subgraph\.txt: no line .*line 1: 1 tab-separated"):
        cn.read_subset_file(path, cn.SUBSETS["twc"], "twc", {"IsA"})


def test_params():
    p = cn.ConceptNetParams()
    assert (p.edge_source, p.subsets) == ("subsets", ["cn100k", "twc", "evalution"])
    assert {"IsA", "Antonym", "Synonym", "RelatedTo", "AtLocation", "UsedFor"} <= set(p.relations)
    assert cn.ConceptNetParams(relations=["isa", "/r/Antonym", "IsA"]).relations == ["Antonym", "IsA"]
    for bad in ({"relations": ["IsAA"]}, {"subsets": ["wikidata"]}, {"edge_source": "api"}, {"extra": 1}):
        with pytest.raises(ValidationError):
            cn.ConceptNetParams(**bad)


def test_missing_source_file_names_the_fetch(tmp_path):
    with pytest.raises(DataError, match=r"conceptnet_subsets/evalution_RELATIONS\.txt: missing .*fetch conceptnet_subsets"):
        cn.load(tmp_path, cn.ConceptNetParams(subsets=["evalution"]))


# ---------------------------------------------------------------- load() on the mirror


def test_load_dump_from_raw_root(tmp_path):
    folder = tmp_path / "conceptnet_dump"
    folder.mkdir()
    (folder / "conceptnet-assertions-5.7.0.csv.gz").write_bytes(gzip.compress(FIXTURE.read_bytes(), mtime=0))
    loaded = get("conceptnet").fn(tmp_path, cn.ConceptNetParams(edge_source="dump", relations=["IsA", "Synonym"]))
    check_table(loaded.tables["edges"])
    assert loaded.report["rows"] == {"conceptnet5.7": 13, "total": 13}
    assert loaded.report["per_relation"] == {"IsA": {"conceptnet5.7": 7}, "Synonym": {"conceptnet5.7": 6}}
    assert loaded.report["files"]["conceptnet-assertions-5.7.0.csv.gz"]["rows_read"] == 764


@pytest.fixture(scope="module")
def mirror_loaded(mirror_sources):
    """``(raw, get("conceptnet").fn(raw, cn.ConceptNetParams()))`` on the mirror's subsets, the session's."""
    assert mirror_sources.params("conceptnet") == cn.ConceptNetParams()
    raw = mirror_sources.fetch("conceptnet")
    assert set(MIRROR_FILES) <= {p.name for p in (raw / "conceptnet_subsets").iterdir()}
    return raw, mirror_sources.loaded("conceptnet")


def test_load_real_mirror_subsets(mirror_loaded):
    df, report = mirror_loaded[1].tables["edges"], mirror_loaded[1].report
    check_table(df)
    assert set(df["source"]) == {"cn100k", "twc", "evalution"}
    assert {"IsA", "Antonym", "Synonym", "AtLocation", "UsedFor", "RelatedTo"} <= set(df["relation"])
    assert set(df["relation"]) <= set(cn.DEFAULT_RELATIONS) and (df["weight"] == 1.0).all()
    assert not (df["head"] == df["tail"]).any() and not df["head"].str.contains("_").any()
    assert report["rows"]["total"] == len(df) > 250_000
    for name, f in report["files"].items():
        assert f["rows_read"] == f["rows_kept"] + sum(f["dropped"].values()), name
    kept = sum(f["rows_kept"] for f in report["files"].values())
    assert kept - sum(report["duplicates_dropped"].values()) == len(df)
    assert report["files"]["evalution_RELATIONS.txt"]["rows_read"] == 7492
    assert ("IsA", "accident", "error") in set(df.loc[df.source == "evalution", ["relation", "head", "tail"]]
                                                 .itertuples(index=False, name=None))


def test_load_real_mirror_twice_writes_identical_bytes(mirror_loaded, tmp_path):
    raw, loaded = mirror_loaded
    first = write_tables(loaded, tmp_path / "a")
    again = write_tables(get("conceptnet").fn(raw, cn.ConceptNetParams()), tmp_path / "b")
    for name in ("edges.parquet", "report.json"):
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
