"""WordNet loader on the real WordNet 3.0 mirror: known facts, table shape, determinism, error messages."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

from probekit.errors import DataError
from probekit.sources import loaders
from probekit.sources.loaders import wordnet as wnl

from helpers import MIRROR

WORDNET = MIRROR / "wordnet" / "nltk_data" / "corpora" / "wordnet"
FILES = (*wnl.REQUIRED, "index.sense", "LICENSE")



@pytest.fixture(scope="module")
def raw(mirror_sources) -> Path:
    """A raw root holding wordnet/ as `probes sources fetch wordnet` stores it (flat plain files)."""
    return mirror_sources.fetch("wordnet")


@pytest.fixture(scope="module")
def loaded(mirror_sources) -> loaders.Loaded:
    """``wnl.load(raw, wnl.WordNetParams())``, the session's (the built-in params are the defaults)."""
    assert mirror_sources.params("wordnet") == wnl.WordNetParams() and loaders.get("wordnet").fn is wnl.load
    return mirror_sources.loaded("wordnet")


def rows(df: pd.DataFrame, **eq) -> pd.DataFrame:
    mask = pd.Series(True, index=df.index)
    for col, value in eq.items():
        mask &= df[col] == value
    return df[mask]


def test_registered_under_its_name():
    loader = loaders.get("wordnet")
    assert loader.params is wnl.WordNetParams and loader.fn is wnl.load


@pytest.mark.slow   # the whole WordNet mirror loaded (26 s); the small builders run in the fast lane
def test_known_lemma_pairs(loaded):
    pairs = loaded.tables["lemma_pairs"]
    hot = rows(pairs, relation="antonym", word1="cold", word2="hot", pos="a")
    assert hot[["synset1", "synset2"]].values.tolist() == [["cold.a.01", "hot.a.01"]]
    assert len(rows(pairs, relation="antonym", word1="bad", word2="good", pos="a")) == 1
    assert len(rows(pairs, relation="antonym", word1="ascend", word2="descend", pos="v")) == 1
    assert len(rows(pairs, relation="antonym", word1="quickly", word2="slowly", pos="r")) == 1
    car = rows(pairs, relation="synonym", word1="auto", word2="car", pos="n")
    assert car[["synset1", "synset2"]].values.tolist() == [["car.n.01", "car.n.01"]]
    # multiword lemmas: kept (spaced) for antonyms, never in synonyms
    assert len(rows(pairs, relation="antonym", word1="a posteriori", word2="a priori", pos="a")) == 1
    assert not pairs.loc[pairs.relation == "synonym", ["word1", "word2"]].stack().str.contains(" ").any()


@pytest.mark.slow   # the whole WordNet mirror loaded (26 s); the small builders run in the fast lane
def test_known_hypernyms_and_lexnames(loaded):
    hyp = loaded.tables["hypernyms"]
    dog = rows(hyp, concept="dog", concept_synset="dog.n.01")
    depth = dict(zip(dog.hypernym, dog.depth))
    assert depth["canine"] == 1 and depth["domestic animal"] == 1
    assert depth["carnivore"] == 2 and depth["animal"] == 2
    assert depth["placental mammal"] == 3
    assert set(dog.lexname) == {"noun.animal"} and dog.depth.max() == 3
    assert rows(hyp, concept="dog", hypernym="canine").hypernym_synset.tolist() == ["canine.n.02"]
    apple = rows(hyp, concept="apple", concept_synset="apple.n.01")
    assert set(apple.lexname) == {"noun.food"} and 1 in rows(apple, hypernym="edible fruit").depth.tolist()
    assert "noun.plant" in set(rows(hyp, concept="apple").lexname)  # apple.n.02, the tree
    # multiword concepts and hypernyms, with spaces
    assert len(rows(hyp, concept="hot dog", hypernym="sandwich", depth=1)) >= 1
    # instance hypernyms: paris -> national capital
    assert len(rows(hyp, concept="paris", hypernym="national capital", depth=1)) == 1


@pytest.mark.slow   # the whole WordNet mirror loaded (26 s); the small builders run in the fast lane
def test_schema_sorted_unique(loaded):
    pairs, hyp = loaded.tables["lemma_pairs"], loaded.tables["hypernyms"]
    assert list(pairs.columns) == wnl.LEMMA_PAIR_COLUMNS and list(hyp.columns) == wnl.HYPERNYM_COLUMNS
    assert str(hyp.depth.dtype) == "int64"
    for df in (pairs, hyp):
        assert df.equals(df.sort_values(list(df.columns), kind="mergesort").reset_index(drop=True))
        assert not df.duplicated().any()
        text = df.select_dtypes(exclude="number")
        assert not text.isna().any().any()
    assert not pairs.duplicated(["relation", "word1", "word2", "pos"]).any()
    assert not hyp.duplicated(["concept", "hypernym", "concept_synset", "hypernym_synset"]).any()
    assert (pairs.word1 < pairs.word2).all()
    assert set(pairs.relation) == {"antonym", "synonym"} and set(pairs.pos) == set(wnl.POS)
    for col in ("word1", "word2", "concept", "hypernym"):
        series = pairs[col] if col in pairs else hyp[col]
        assert (series == series.str.lower()).all() and not series.str.contains("_").any()
    assert set(hyp.depth) == {1, 2, 3} and (hyp.concept != hyp.hypernym).all()
    assert hyp.lexname.str.startswith("noun.").all() and hyp.concept_synset.str.contains(r"\.n\.").all()


@pytest.mark.slow   # the whole WordNet mirror loaded (26 s); the small builders run in the fast lane
def test_report_counts(loaded):
    r = loaded.report
    assert r["wordnet_version"] == "3.0" and r["origin"].endswith("wordnet")
    assert r["synsets"] == {"n": 82115, "v": 13767, "a": 7463, "s": 10693, "r": 3621}
    pairs, hyp = loaded.tables["lemma_pairs"], loaded.tables["hypernyms"]
    assert r["lemma_pairs"]["rows"] == len(pairs) and r["hypernyms"]["rows"] == len(hyp)
    assert sum(r["lemma_pairs"]["by_relation_pos"].values()) == len(pairs)
    assert r["lemma_pairs"]["by_relation"]["antonym"] > 3000
    assert sum(r["hypernyms"]["by_lexname"].values()) == len(hyp)


@pytest.mark.slow   # the whole WordNet mirror loaded (26 s); the small builders run in the fast lane
def test_parquet_is_byte_deterministic(loaded, tmp_path):
    a = loaders.write_tables(loaded, tmp_path / "a")
    b = loaders.write_tables(loaded, tmp_path / "b")
    names = sorted(p.name for p in a.iterdir())
    assert names == [".probekit.json", "hypernyms.parquet", "lemma_pairs.parquet", "report.json"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes()
    back = loaders.read_tables(a)
    assert back["lemma_pairs"].equals(loaded.tables["lemma_pairs"])
    assert back["hypernyms"].astype(loaded.tables["hypernyms"].dtypes).equals(loaded.tables["hypernyms"])


def test_builders_honour_depth_instances_and_pos(raw):
    with wnl.open_wordnet(raw / "wordnet") as (wn, _):
        nouns = [wn.synset("paris.n.01"), wn.synset("dog.n.01")]
        one, report = wnl.hypernyms(nouns, max_depth=1, instances=False)
        assert set(one.depth) == {1} and "paris" not in set(one.concept)
        assert set(one.hypernym) == {"canine", "canid", "domestic animal", "domesticated animal"}
        assert report["rows"] == len(one)
        synsets = [wn.synset("quickly.r.01"), wn.synset("hot.a.01"), wn.synset("car.n.01")]
        pairs, _ = wnl.lemma_pairs(synsets, ["r"])
        assert set(pairs.pos) == {"r"} and ("quickly", "slowly") in set(zip(pairs.word1, pairs.word2))
        # the order synsets come in does not change the tables
        many = wn.synsets("hot") + wn.synsets("cold") + wn.synsets("dog") + wn.synsets("apple")
        for build in (lambda s: wnl.lemma_pairs(s, list(wnl.POS)), lambda s: wnl.hypernyms(
                [x for x in s if x.pos() == "n"], 3)):
            forward, backward = build(many)[0], build(many[::-1])[0]
            assert len(forward) > 10 and forward.equals(backward)


def test_params_are_checked():
    assert wnl.WordNetParams(pos=["s", "n", "n"]).pos == ["n", "s"]
    for bad in ({"pos": ["x"]}, {"pos": []}, {"max_depth": 0}, {"depth": 2}):
        with pytest.raises(ValidationError):
            wnl.WordNetParams(**bad)


def test_symlinked_files_are_read_through_a_copy(raw, tmp_path):
    """NLTK refuses files whose real path leaves the corpus folder (e.g. links into a DVC cache)."""
    linked = tmp_path / "linked" / "wordnet"
    linked.mkdir(parents=True)
    for name in FILES:
        (linked / name).symlink_to(raw / "wordnet" / name)
    with wnl.open_wordnet(linked) as (wn, origin):
        assert origin == str(linked) and wn.synset("dog.n.01").lexname() == "noun.animal"


def test_incomplete_folder_names_missing_files(tmp_path):
    (tmp_path / "wordnet").mkdir()
    shutil.copyfile(WORDNET / "lexnames", tmp_path / "wordnet" / "lexnames")
    with pytest.raises(DataError, match=r"wordnet: WordNet file\(s\) missing: index.noun, .*data.noun.*"
                                        r"probes sources fetch wordnet"):
        wnl.load(tmp_path, wnl.WordNetParams())


def _fresh_nltk_wordnet(monkeypatch, data_path: list[str]):
    import nltk.corpus
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.corpus.util import LazyCorpusLoader

    monkeypatch.delenv("NLTK_DATA", raising=False)
    monkeypatch.setattr(nltk.data, "path", data_path)
    monkeypatch.setattr(nltk.corpus, "wordnet", LazyCorpusLoader("wordnet", WordNetCorpusReader, None))


@pytest.mark.slow   # the whole WordNet, read through NLTK (7 s)
def test_falls_back_to_nltk_data(monkeypatch, tmp_path):
    _fresh_nltk_wordnet(monkeypatch, [str(WORDNET.parents[1])])
    with wnl.open_wordnet(tmp_path / "wordnet") as (wn, origin):
        assert origin.startswith("nltk_data: ") and origin.endswith("wordnet")
        assert wn.synset("dog.n.01").lexname() == "noun.animal"


def test_missing_corpus_says_how_to_get_it(monkeypatch, tmp_path):
    (tmp_path / "empty").mkdir()
    _fresh_nltk_wordnet(monkeypatch, [str(tmp_path / "empty")])
    with pytest.raises(DataError) as err:
        wnl.load(tmp_path, wnl.WordNetParams())
    msg = str(err.value)
    assert str(tmp_path / "wordnet") in msg and "no 'wordnet' corpus" in msg
    for how in ("probes sources fetch wordnet", "python -m nltk.downloader wordnet", "NLTK_DATA="):
        assert how in msg
