"""ANTONYM NEGATION: gold from the source tables, disjoint vocabularies, balance, the frequency filter, the
release's template texts, articles, controls, determinism, and a hand-made table set."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import pandas as pd
import pytest
from wordfreq import get_frequency_dict, zipf_frequency

from generators.shared import registry as generators
from generators.antonym_negation import generator as an
from generators.antonym_negation import pairs as ap
from probekit.data.examples import answer_text
from probekit.errors import DataError, ParamsError
from probekit.probes import lexicon
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import MASK, PAPER_NONSENSE_WORDS, TemplateError, Variant

from helpers import MIRROR, build_section

PROBE = "antonym_negation"
SMALL = {"seed": 13, "size": {"train": 401, "dev": 81}}  # odd sizes: antonyms get the extra row
BASE = ("original", "release_phrasing")


def build(section: dict, tables: dict):
    return build_section(PROBE, section, tables)


@pytest.fixture(scope="module")
def tables(source_tables):
    return {"conceptnet": source_tables("conceptnet"), "wordnet": source_tables("wordnet")}


@pytest.fixture(scope="module")
def built(tables):
    return build(SMALL, tables)


@pytest.fixture(scope="module")
def spec():
    return load_probe_spec(generators.get(PROBE).template_path)


def pair(row) -> frozenset:
    return frozenset((row["args"]["x"], row["args"]["y"]))


def relation_index(tables) -> dict[str, set[frozenset]]:
    """{antonym, synonym}: every unordered pair the tables give that relation (any source)."""
    index = {"antonym": set(), "synonym": set()}
    lp = tables["wordnet"]["lemma_pairs"]
    for rel, a, b in zip(lp["relation"], lp["word1"], lp["word2"]):
        index[rel].add(frozenset((a, b)))
    edges = tables["conceptnet"]["edges"]
    for rel, a, b in zip(edges["relation"], edges["head"], edges["tail"]):
        if rel in ("Antonym", "Synonym"):
            index[rel.lower()].add(frozenset((a, b)))
    return index


# --- the whole output, built from the mirror's tables ---------------------------------------------------


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_every_row_keeps_the_rule_and_ids_are_unique(built):
    assert list(built.variants) == ["original", "nolang", "perturbed", "release_phrasing"]
    for name, splits in built.variants.items():
        for split, rows in splits.items():
            assert len(rows) == SMALL["size"][split]
            problems = Counter(p for p in map(an.rule, rows) if p)
            assert not problems, (name, split, problems.most_common(3))
            assert len({r["id"] for r in rows}) == len(rows)
            assert len({r["question"]["stem"] for r in rows}) == len(rows)


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_gold_is_the_relation_the_source_tables_give(built, tables):
    index = relation_index(tables)
    lp = tables["wordnet"]["lemma_pairs"]
    wn = set(zip(lp["relation"], lp["word1"], lp["word2"], lp["pos"]))
    edges = tables["conceptnet"]["edges"]
    cn = set(zip(edges["relation"], edges["head"], edges["tail"], edges["source"]))
    for name in BASE:
        for rows in built.variants[name].values():
            for r in rows:
                p, gold = pair(r), answer_text(r)
                relation = {"not": "antonym", "really": "synonym"}[gold]
                other = {"antonym": "synonym", "synonym": "antonym"}[relation]
                assert p in index[relation] and p not in index[other], (r["question"]["stem"], gold)
                for e in r["facts"]["edges"]:  # every edge the row names is a row of its table
                    if e["table"] == ap.WORDNET_TABLE:
                        assert (e["relation"], e["word1"], e["word2"], e["pos"]) in wn
                    else:
                        assert (e["relation"], e["word1"], e["word2"], e["source"]) in cn
    # and the rule catches a row whose gold or edges were changed
    row = json.loads(json.dumps(built.variants["original"]["dev"][0]))
    wrong = next(c["label"] for c in row["question"]["choices"] if c["label"] != row["answerKey"])
    assert "gold" in an.rule(dict(row, answerKey=wrong))
    row["facts"]["edges"][0]["word2"] = "zebra"
    assert "is not the pair" in an.rule(row)


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_no_word_is_in_both_splits(built):
    for name in BASE:
        words = {s: {w for r in rows for w in r["args"].values()} for s, rows in built.variants[name].items()}
        assert words["train"] and words["dev"] and not words["train"] & words["dev"]


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_half_antonyms_half_synonyms_within_each_part_of_speech(built):
    for name in BASE:
        for split, rows in built.variants[name].items():
            n = SMALL["size"][split]
            assert Counter(map(answer_text, rows)) == {"not": n - n // 2, "really": n // 2}
            by_pos = Counter((r["facts"]["pos"], answer_text(r)) for r in rows)
            assert {p for p, _ in by_pos} == {"noun", "adjective", "verb"}
            for pos in ("noun", "adjective", "verb"):
                assert abs(by_pos[pos, "not"] - by_pos[pos, "really"]) <= 1
            assert set(Counter(r["answerKey"] for r in rows)) == {"A", "B"}  # choice order shuffled
    # the base variants hold the same pairs, in the same order, with the same choice order
    for split in ("train", "dev"):
        a, b = (built.variants[n][split] for n in BASE)
        assert [(r["args"], r["answerKey"]) for r in a] == [(r["args"], r["answerKey"]) for r in b]


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_words_are_single_and_frequent(built):
    min_zipf = built.params.min_zipf
    words = {w for name in BASE for rows in built.variants[name].values() for r in rows for w in r["args"].values()}
    assert all(re.fullmatch(r"[a-z]{2,}", w) for w in words)
    assert min(zipf_frequency(w, "en") for w in words) >= min_zipf
    # the shortcut of `frequent` decides as wordfreq does, at the bound above all
    freqs = get_frequency_dict("en")
    near = [w for w, f in freqs.items() if re.fullmatch(r"[a-z]{2,}", w) and abs(math.log10(f) + 9 - min_zipf) < 0.05]
    for w in near[:3000] + sorted(words)[:500] + ["zyzzyvaqq", "colour"]:
        assert lexicon.at_least(w, min_zipf) == (zipf_frequency(w, "en") >= min_zipf), w


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_templates_are_the_releases_and_articles_follow_the_rule(built, spec):
    release = [json.loads(line)["question"]["stem"] for s in ("train", "dev")
               for line in open(MIRROR / "olmpics" / f"antonym_synonym_negation_{s}.jsonl", encoding="utf-8")]
    patterns = {t: re.compile(re.escape(spec.templates[t].text).replace(r"\{x\}", "(.+)").replace(r"\{y\}", "(.+)"))
                for t in ("noun_a_a", "adjective", "verb")}
    matched = Counter(next((t for t, p in patterns.items() if p.fullmatch(s)), None) for s in release)
    assert matched == {"noun_a_a": 2234, "adjective": 2172, "verb": 873}  # every release stem, one template
    for r in built.variants["original"]["train"]:
        x, y, stem = r["args"]["x"], r["args"]["y"], r["question"]["stem"]
        if r["facts"]["pos"] == "noun":
            assert stem == (f"It was {MASK} {lexicon.article(x)} {x}, it was really {lexicon.article(y)} {y}.")
        else:
            assert r["template_id"] == r["facts"]["pos"]
    nouns = [r for r in built.variants["release_phrasing"]["train"] if r["facts"]["pos"] == "noun"]
    assert nouns and all(r["question"]["stem"] == f"It was {MASK} a {r['args']['x']}, it was really a {r['args']['y']}."
                         for r in nouns)
    ids = Counter(r["template_id"] for r in built.variants["original"]["train"])
    assert {"noun_a_a", "noun_a_an", "noun_an_a", "adjective", "verb"} <= set(ids)
    assert lexicon.article("owl") == "an" and lexicon.article("hour") == "a" and lexicon.article("university") == "an"


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_controls(built):
    for split in ("train", "dev"):
        for o, n, p in zip(*(built.variants[v][split] for v in ("original", "nolang", "perturbed"))):
            x, y = o["args"]["x"], o["args"]["y"]
            assert n["question"]["stem"] == f"{MASK} {x} {y}"
            assert answer_text(n) == {"not": "blah", "really": "ya"}[answer_text(o)]
            assert n["source_id"] == p["source_id"] == o["id"] and n["answerKey"] == o["answerKey"]
            stem = p["question"]["stem"]
            assert " really " not in stem and MASK in stem and x in stem and y in stem
            words = set(re.findall(r"[a-z]+", stem)) - set(re.findall(r"[a-z]+", o["question"]["stem"]))
            assert words <= set(PAPER_NONSENSE_WORDS)
            assert answer_text(p) == answer_text(o)


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (34 s)
def test_deterministic_and_seeded(built, tables):
    ap._LAST.clear()  # rebuild the pool too
    again = build(dict(SMALL, variants=["original"]), tables)
    assert again.variants["original"] == built.variants["original"]
    other = build(dict(SMALL, seed=14, variants=["original"]), tables)
    assert {pair(r) for r in other.variants["original"]["dev"]} != {pair(r) for r in built.variants["original"]["dev"]}


# --- a hand-made table set --------------------------------------------------------------------------------


def hand_made() -> dict:
    lp = pd.DataFrame([
        ("antonym", "cold", "hot", "a"), ("antonym", "bad", "good", "a"), ("antonym", "buy", "sell", "v"),
        ("antonym", "enemy", "friend", "n"), ("antonym", "quickly", "slowly", "r"),  # adverbs: no template
        ("synonym", "big", "large", "a"), ("synonym", "fast", "quick", "s"), ("synonym", "buy", "purchase", "v"),
        ("synonym", "hot", "warm", "a"),  # ConceptNet says antonym: dropped
        ("synonym", "gelato", "ice cream", "n"),  # not one word
        ("synonym", "bug", "zyzzyva", "n"),  # zyzzyva is rare
    ], columns=["relation", "word1", "word2", "pos"])
    lp["synset1"] = lp["word1"] + "." + lp["pos"] + ".01"
    lp["synset2"] = lp["word2"] + "." + lp["pos"] + ".01"
    hyper = pd.DataFrame([(c, "thing", f"{c}.n.01", "thing.n.01", 1, "noun.artifact")
                          for c in ("car", "automobile", "ally", "enemy", "apple")],
                         columns=["concept", "hypernym", "concept_synset", "hypernym_synset", "depth", "lexname"])
    edges = pd.DataFrame([
        ("Antonym", "ally", "enemy", 1.0, "twc"),  # nouns by the lexicon (hypernyms)
        ("Synonym", "automobile", "car", 1.0, "twc"),
        ("Synonym", "large", "big", 1.0, "evalution"),  # the WordNet pair again, the other way round
        ("Antonym", "hot", "warm", 1.0, "evalution"),
        ("Antonym", "run", "stroll", 1.0, "twc"),  # no part of speech in the (hand-made) WordNet tables
        ("IsA", "car", "vehicle", 1.0, "twc"),
    ], columns=["relation", "head", "tail", "weight", "source"])
    return {"wordnet": {"lemma_pairs": lp, "hypernyms": hyper}, "conceptnet": {"edges": edges}}


def test_hand_made_tables_candidates():
    params = build({"seed": 1, "size": {"train": 2, "dev": 2}, "min_zipf": 3, "variants": ["original"]},
                   hand_made()).params
    pairs, counts = ap.candidate_pairs(hand_made(), params, ("noun", "adjective", "verb"))
    got = {(p.relation, p.words, p.pos, p.pos_from, tuple(e[1] for e in p.edges)) for p in pairs}
    assert got == {
        ("antonym", ("cold", "hot"), ("adjective",), "wordnet", ("wordnet",)),
        ("antonym", ("bad", "good"), ("adjective",), "wordnet", ("wordnet",)),
        ("antonym", ("buy", "sell"), ("verb",), "wordnet", ("wordnet",)),
        ("antonym", ("enemy", "friend"), ("noun",), "wordnet", ("wordnet",)),
        ("antonym", ("ally", "enemy"), ("noun",), "lexicon", ("twc",)),
        ("synonym", ("big", "large"), ("adjective",), "wordnet", ("evalution", "wordnet")),
        ("synonym", ("fast", "quick"), ("adjective",), "wordnet", ("wordnet",)),
        ("synonym", ("buy", "purchase"), ("verb",), "wordnet", ("wordnet",)),
        ("synonym", ("automobile", "car"), ("noun",), "lexicon", ("twc",)),
    }
    assert counts["pairs: an antonym in one source, a synonym in another"] == 1
    assert counts["pairs: a word below min_zipf"] == 1
    assert counts["wordnet edges: not one alphabetic word each"] == 1
    assert counts["pairs: WordNet adverbs (or a part of speech without template)"] == 1
    assert counts["pairs: no part of speech both words have in WordNet"] == 1
    # only WordNet: the ConceptNet-only pairs go, and hot/warm is no longer contradicted
    only = build({"seed": 1, "size": {"train": 2, "dev": 2}, "min_zipf": 3, "sources": ["wordnet"],
                  "variants": ["original"]}, hand_made()).params
    assert {p.words for p in ap.candidate_pairs(hand_made(), only, ("noun", "adjective", "verb"))[0]} == \
        {w for _, w, *_ in got} - {("ally", "enemy"), ("automobile", "car")} | {("hot", "warm")}


def test_hand_made_tables_build_capped_balanced_disjoint():
    section = {"seed": 1, "size": {"train": 40, "dev": 2}, "min_zipf": 3}
    for reverse in (True, False):
        b = build(dict(section, reverse_to_fill=reverse), hand_made())
        for name in BASE:
            rows = b.variants[name]
            assert len(rows["dev"]) == 2 and Counter(map(answer_text, rows["dev"])) == {"not": 1, "really": 1}
            train = rows["train"]
            assert len(train) < 40 and Counter(map(answer_text, train))["not"] == len(train) / 2
            dev_words = {w for r in rows["dev"] for w in r["args"].values()}
            assert not {w for r in train for w in r["args"].values()} & dev_words
            assert all(an.rule(r) is None for r in train + rows["dev"])
            directions = Counter(pair(r) for r in train)
            assert max(directions.values()) == (2 if reverse else 1)
            assert len({(r["args"]["x"], r["args"]["y"]) for r in train}) == len(train)
        stems = {r["question"]["stem"] for r in b.variants["original"]["train"] + b.variants["original"]["dev"]}
        nouns = [s for s in stems if s.startswith("It was [MASK] a") and "," in s and not s.endswith(" .")]
        for s in nouns:  # enemy, ally, automobile take "an"; friend, car take "a"
            for w in ("enemy", "ally", "automobile"):
                assert f" a {w}," not in s and f" a {w}." not in s
            for w in ("friend", "car"):
                assert f" an {w}" not in s


def test_errors_name_what_is_wrong(spec):
    with pytest.raises(DataError, match=r"table wordnet.lemma_pairs missing \(build it: probes tables wordnet\)"):
        build({"seed": 1, "size": {"train": 2, "dev": 2}}, {"conceptnet": hand_made()["conceptnet"]})
    with pytest.raises(ParamsError, match=r"antonym_negation.pos_priority: must list each of"):
        build({"pos_priority": ["noun", "verb"]}, hand_made())
    bad = Variant("v", templates=("noun_a_a", "adjective"),
                  options={"pos": {"noun": ["noun_a_a"], "adjective": ["adjective"]}, "articles": "rule"})
    with pytest.raises(TemplateError, match=r"variant 'v': with articles: rule, pos.noun needs one template per"):
        an.layout(spec, bad)
    bad = Variant("v", templates=("adjective",), options={"pos": {"adverb": ["adjective"]}})
    with pytest.raises(TemplateError, match=r"unknown part\(s\) of speech \['adverb'\]"):
        an.layout(spec, bad)
