"""Objects comparison: over the whole output built from the mirror's tables (gold from the sizes table, the
bucket gap, no direct label contradicted, animals in train only, disjoint objects, balance, ids, controls,
determinism), and exact output on small hand-made tables."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import pandas as pd
import pytest

import generators.objects_comparison.generator as oc
from probekit.data.examples import answer_text
from probekit.errors import ParamsError
from probekit.probes.templates import MASK, PAPER_NONSENSE_WORDS

from helpers import build_section

PROBE = "objects_comparison"
# organism words no noun.animal sense of a general object may reach (an independent check of the dev split)
ORGANISM_HYPERNYMS = {"animal", "organism", "mammal", "bird", "fish", "insect", "vertebrate", "invertebrate",
                      "reptile", "amphibian", "arthropod", "placental", "canine", "feline", "rodent", "ruminant"}
CLEAR_ANIMALS = {"dog", "cat", "horse", "mouse", "elephant", "giraffe", "spider", "bird", "cow", "sheep"}


def build(section: dict, tables: dict):
    return build_section(PROBE, section, tables)


@pytest.fixture(scope="module")
def tables(source_tables):
    return {"object_sizes": source_tables("object_sizes"), "wordnet": source_tables("wordnet")}


@pytest.fixture(scope="module")
def built(tables):
    return build({"seed": 13}, tables)  # the YAML defaults: size 5000 / 500


@pytest.fixture(scope="module")
def sizes(tables):
    s = tables["object_sizes"]["sizes"]
    return {o: (size, src, n) for o, size, src, n in zip(s["object"], s["size_m"], s["source"], s["n_pairs"])}


def original(built, split):
    return built.variants["original"][split]


def objects_of(rows):
    return {r["args"][k] for r in rows for k in ("obj1", "obj2")}


def half_decade_bucket(size_m: float) -> int:
    k = math.floor(math.log10(size_m) * 2)
    while 10 ** (k / 2) > size_m:
        k -= 1
    while 10 ** ((k + 1) / 2) <= size_m:
        k += 1
    return k


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_rule_holds_on_every_row_of_every_variant(built):
    for variant, splits in built.variants.items():
        for split, rows in splits.items():
            problems = Counter(p for p in map(oc.rule, rows) if p)
            assert not problems, (variant, split, problems.most_common(3))


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_gold_follows_the_sizes_table(built, sizes):
    for split in ("train", "dev"):
        for r in original(built, split):
            a, b = r["args"]["obj1"], r["args"]["obj2"]
            (sa, src_a, _), (sb, src_b, _) = sizes[a], sizes[b]
            assert sa != sb
            assert answer_text(r) == ("larger" if sa > sb else "smaller")
            assert (r["facts"]["obj1"]["size_m"], r["facts"]["obj1"]["source"]) == (sa, src_a)
            assert (r["facts"]["obj2"]["size_m"], r["facts"]["obj2"]["source"]) == (sb, src_b)
            assert r["question"]["stem"] == f"The size of a {a} is usually much {MASK} than the size of a {b} ."


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_every_pair_is_buckets_apart_and_fitted_sizes_need_more(built, sizes):
    fitted_pairs = 0
    for split in ("train", "dev"):
        for r in original(built, split):
            (sa, src_a, na), (sb, src_b, nb) = sizes[r["args"]["obj1"]], sizes[r["args"]["obj2"]]
            gap = abs(half_decade_bucket(sa) - half_decade_bucket(sb))
            fitted = [n for src, n in ((src_a, na), (src_b, nb)) if src == "fit"]
            fitted_pairs += bool(fitted)
            assert gap >= (4 if fitted else 2), (r["args"], sa, sb)
            assert all(n >= 5 for n in fitted)
            assert r["facts"]["gap"] == gap
    assert fitted_pairs  # train needs the fitted animals (few have an absolute size)
    assert all(f["source"] != "fit" for r in original(built, "dev") for f in (r["facts"]["obj1"], r["facts"]["obj2"]))


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_no_direct_pair_label_is_contradicted(built, tables):
    labels = defaultdict(list)
    for a, b, label in zip(*(tables["object_sizes"]["pairs"][c] for c in ("obj1", "obj2", "label"))):
        labels[(a, b)].append(label)
        labels[(b, a)].append({"larger": "smaller", "smaller": "larger"}[label])
    with_label = 0
    for split in ("train", "dev"):
        for r in original(built, split):
            direct = labels.get((r["args"]["obj1"], r["args"]["obj2"]), [])
            with_label += bool(direct)
            assert all(label == answer_text(r) for label in direct), (r["args"], direct)
            assert sorted(x["label"] for x in r["facts"]["labels"]) == sorted(direct)
    assert with_label  # the check is not vacuous


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_train_objects_are_animals_and_dev_objects_are_not(built, tables):
    h = tables["wordnet"]["hypernyms"]
    train, dev = objects_of(original(built, "train")), objects_of(original(built, "dev"))
    assert not train & dev
    sub = h[h["concept"].isin(train | dev)]
    lexnames = sub.groupby("concept")["lexname"].agg(set)
    synsets = sub.groupby("concept")["concept_synset"].agg(set)
    animal_hypers = sub[sub["lexname"] == "noun.animal"].groupby("concept")["hypernym"].agg(set)
    first_lex = dict(zip(sub["concept_synset"], sub["lexname"]))
    for obj in train:
        assert "noun.animal" in lexnames[obj], obj
        first = f"{obj.replace(' ', '_')}.n.01"
        assert first not in synsets[obj] or first_lex[first] == "noun.animal", obj
    for obj in dev:
        first = f"{obj.replace(' ', '_')}.n.01"
        assert first not in synsets[obj] or first_lex[first] != "noun.animal", obj
        assert not animal_hypers.get(obj, set()) & ORGANISM_HYPERNYMS, (obj, animal_hypers[obj])
    assert not dev & CLEAR_ANIMALS and len(train & CLEAR_ANIMALS) >= 8
    assert all(r["facts"][k]["domain"] == "animal" for r in original(built, "train") for k in ("obj1", "obj2"))
    assert all(r["facts"][k]["domain"] == "object" for r in original(built, "dev") for k in ("obj1", "obj2"))


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_sizes_balance_and_ids(built, tables):
    counts = oc.availability(tables, built.params)
    for split, asked in (("train", 5000), ("dev", 500)):
        rows = original(built, split)
        available = counts["splits"][split]["rows available (2 per kept pair)"]
        assert len(rows) == min(asked, available) > 0
        labels = Counter(map(answer_text, rows))
        assert abs(labels["larger"] - labels["smaller"]) <= 1 and set(labels) == {"larger", "smaller"}
        assert len({r["id"] for r in rows}) == len(rows)
        assert len({(r["args"]["obj1"], r["args"]["obj2"]) for r in rows}) == len(rows)
        assert all(r["args"]["obj1"] != r["args"]["obj2"] for r in rows)
        assert set(Counter(r["answerKey"] for r in rows)) == {"A", "B"}
    assert len(original(built, "dev")) == 500
    ids = [r["id"] for splits in built.variants.values() for rows in splits.values() for r in rows]
    assert len(set(ids)) == len(ids)


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_controls(built):
    for split in ("train", "dev"):
        for o, n, p in zip(original(built, split), built.variants["nolang"][split], built.variants["perturbed"][split]):
            a, b = o["args"]["obj1"], o["args"]["obj2"]
            assert n["question"]["stem"] == f"{a} {MASK} {b}"
            assert answer_text(n) == {"larger": "blah", "smaller": "ya"}[answer_text(o)]
            assert n["source_id"] == p["source_id"] == o["id"]
            stem = p["question"]["stem"]
            assert " size " not in stem and " than " not in stem
            words = stem.replace(f" a {a} ", " ").replace(f" a {b} ", " ").split()
            assert words[0] == "The" and words[1] in PAPER_NONSENSE_WORDS
            assert p["question"]["choices"] == o["question"]["choices"] and p["answerKey"] == o["answerKey"]


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_deterministic_and_seeded(built, tables):
    again = build({"seed": 13}, tables)
    assert json.dumps(again.variants, sort_keys=True) == json.dumps(built.variants, sort_keys=True)
    other = build({"seed": 14, "variants": ["original"]}, tables)
    assert [r["id"] for r in original(other, "dev")] != [r["id"] for r in original(built, "dev")]


# --- hand-made tables ------------------------------------------------------------------------------

# concept -> its noun senses: (synset, lexname, [(hypernym synset, hypernym lexname)])
SENSES = {
    "ant": [("ant.n.01", "noun.animal", [("insect.n.01", "noun.animal")])],
    "mouse": [("mouse.n.01", "noun.animal", [("rodent.n.01", "noun.animal")]),
              ("mouse.n.04", "noun.artifact", [("device.n.01", "noun.artifact")])],
    "horse": [("horse.n.01", "noun.animal", [("equine.n.01", "noun.animal"), ("animal.n.01", "noun.Tops")])],
    "moose": [("elk.n.01", "noun.animal", [("deer.n.01", "noun.animal")])],  # first sense named after elk
    "whale": [("whale.n.02", "noun.animal", [("cetacean.n.01", "noun.animal")])],
    "pen": [("pen.n.01", "noun.artifact", [("writing_implement.n.01", "noun.artifact")]),
            ("pen.n.05", "noun.animal", [("swan.n.01", "noun.animal")])],  # a female swan
    "claw": [("claw.n.01", "noun.animal", [("horny_structure.n.01", "noun.body")])],  # an animal part
    "coin": [("coin.n.01", "noun.artifact", [("currency.n.01", "noun.possession")])],
    "car": [("car.n.01", "noun.artifact", [("motor_vehicle.n.01", "noun.artifact")])],
    "house": [("house.n.01", "noun.artifact", [("building.n.01", "noun.artifact")])],
    "city": [("city.n.01", "noun.location", [("municipality.n.01", "noun.location")])],
    "nurse": [("nurse.n.01", "noun.person", [("health_professional.n.01", "noun.person")])],
}
SIZES = [  # object, size_m, source, n_pairs
    ("ant", 0.005, "breds", 0), ("mouse", 0.09, "breds", 3), ("horse", 2.4, "size_comparisons", 3),
    ("moose", 2.5, "fit", 6), ("whale", 20.0, "fit", 2), ("pen", 0.14, "breds", 0), ("claw", 0.02, "fit", 9),
    ("coin", 0.02, "breds", 1), ("car", 4.0, "breds", 1), ("house", 12.0, "doq", 0), ("city", 8000.0, "breds", 0),
    ("nurse", 1.7, "breds", 0), ("quokka", 0.5, "breds", 0),  # quokka: not in WordNet
]
PAIRS = [  # obj1 < obj2, label: obj1 larger / smaller
    ("horse", "mouse", "larger", "verbphysics"), ("ant", "horse", "smaller", "viphy"),
    ("ant", "mouse", "larger", "viphy"),  # contradicts the sizes: the pair is dropped
    ("car", "coin", "larger", "viphy"),
]


def hand_tables() -> dict:
    rows, lexname = [], {}
    for concept, senses in SENSES.items():
        for synset, lex, hypers in senses:
            for hyper, hlex in hypers:
                rows.append((concept, hyper.rsplit(".", 2)[0].replace("_", " "), synset, hyper, 1, lex))
                lexname[hyper] = hlex
    for hyper, hlex in lexname.items():  # the hypernyms' own rows carry their lexnames
        rows.append((hyper.rsplit(".", 2)[0].replace("_", " "), "entity", hyper, "entity.n.01", 1, hlex))
    hypernyms = pd.DataFrame(rows, columns=["concept", "hypernym", "concept_synset", "hypernym_synset", "depth",
                                            "lexname"])
    sizes = pd.DataFrame(SIZES, columns=["object", "size_m", "source", "n_pairs"])
    sizes["n_contradicted"] = 0
    sizes["rank"] = sizes["size_m"].rank(method="first").astype(int)
    pairs = pd.DataFrame(PAIRS, columns=["obj1", "obj2", "label", "source"])
    return {"object_sizes": {"sizes": sizes, "pairs": pairs}, "wordnet": {"hypernyms": hypernyms}}


HAND = {"seed": 1, "size": {"train": 100, "dev": 100}, "variants": ["original"], "min_pairs_fitted": 5}


def triples(rows):
    return {(r["args"]["obj1"], r["args"]["obj2"], answer_text(r)) for r in rows}


def both_ways(pairs):
    return {(a, b, "larger") for a, b in pairs} | {(b, a, "smaller") for a, b in pairs}


def test_hand_made_tables_give_exactly_the_allowed_pairs():
    tables = hand_tables()
    built = build(HAND, tables)
    train, dev = built.variants["original"]["train"], built.variants["original"]["dev"]
    # train: ant, mouse, horse (absolute), moose (fitted, 6 labels); whale has 2 labels, claw is a part, pen's
    # first sense is the pen. Buckets (half decades): ant -5, mouse -3, horse 0, moose 0.
    # ant-mouse: 2 apart but its direct label contradicts the sizes; moose needs 4 buckets: only ant.
    assert triples(train) == both_ways([("horse", "ant"), ("horse", "mouse"), ("moose", "ant")])
    # dev: coin -4, car 1, house 2, city 7 (nurse is a person, quokka not in WordNet); car-house: 1 apart
    assert triples(dev) == both_ways([("car", "coin"), ("house", "coin"), ("city", "coin"), ("city", "car"),
                                      ("city", "house")])
    assert all(oc.rule(r) is None for r in train + dev)
    horse_mouse = next(r for r in train if (r["args"]["obj1"], r["args"]["obj2"]) == ("mouse", "horse"))
    assert horse_mouse["facts"]["labels"] == [{"source": "verbphysics", "label": "smaller"}]
    assert horse_mouse["facts"]["min_gap"] == 2 and horse_mouse["facts"]["gap"] == 3
    moose = next(r for r in train if "moose" in r["args"].values())
    assert moose["facts"]["min_gap"] == 4 and moose["facts"][
        "obj1" if moose["args"]["obj1"] == "moose" else "obj2"]["first_sense"] == ["elk.n.01"]
    counts = oc.availability(tables, built.params)
    assert counts["wordnet"] == {"animal": 5, "object": 4, "other": 3, "unknown": 1}
    assert counts["splits"]["train"]["pairs dropped: a direct label disagrees with the sizes"] == 1


def test_hand_made_options_any_sense_edges_and_fitted_off():
    tables = hand_tables()
    train = triples(build(dict(HAND, animal_sense="any"), tables).variants["original"]["train"])
    assert {"pen"} <= {a for a, _, _ in train}  # a female swan counts with any sense; the claw never does
    assert not any("claw" in t for t in train)
    strict = triples(build(dict(HAND, min_gap_fitted=None), tables).variants["original"]["train"])
    assert strict == both_ways([("horse", "ant"), ("horse", "mouse")])
    edges = build(dict(HAND, bucket_edges_m=[0.01, 1.0, 100.0]), tables).variants["original"]
    # buckets: ant 0, coin/claw/mouse/pen 1, horse/car/house 2, city 3; min_gap 2
    assert triples(edges["dev"]) == both_ways([("city", "coin")])
    assert triples(edges["train"]) == both_ways([("horse", "ant")])
    assert all(oc.rule(r) is None for r in edges["dev"] + edges["train"])
    assert [r["facts"]["obj1"]["bucket_m"] for r in edges["dev"] if r["args"]["obj1"] == "city"] == [[100.0, None]]


def test_rule_catches_a_wrong_row():
    row = build(HAND, hand_tables()).variants["original"]["dev"][0]
    flipped = json.loads(json.dumps(row))
    flipped["answerKey"] = "A" if row["answerKey"] == "B" else "B"
    assert "gold" in oc.rule(flipped)
    close = json.loads(json.dumps(row))
    close["facts"]["min_gap"] = close["facts"]["gap"] + 1
    assert "below the minimum" in oc.rule(close)
    moved = json.loads(json.dumps(row))
    moved["facts"]["obj1"]["size_m"] *= 1000
    assert "not in its bucket_m" in oc.rule(moved)
    labelled = json.loads(json.dumps(row))
    wrong = {"larger": "smaller", "smaller": "larger"}[answer_text(row)]
    labelled["facts"]["labels"] = [{"source": "viphy", "label": wrong}]
    assert "contradicts" in oc.rule(labelled)


def test_bad_params_are_refused():
    with pytest.raises(ParamsError, match="min_gap_fitted .* is below min_gap"):
        build(dict(HAND, min_gap=3, min_gap_fitted=2), hand_tables())
    with pytest.raises(ParamsError, match="noun.animal is the train domain"):
        build(dict(HAND, object_lexnames=["noun.artifact", "noun.animal"]), hand_tables())
    with pytest.raises(ParamsError, match="strictly ascending"):
        build(dict(HAND, bucket_edges_m=[1.0, 0.1]), hand_tables())


# --- the pairing rule: ours (buckets apart) or the paper's sentence read literally (one bucket) -------------

def test_paper_literal_pairs_objects_of_one_bucket_only():
    """§4.1: "We automatically instantiate object slots using objects that are in the same bucket." With
    ``pairing: paper_literal`` a pair is two objects of one bucket (unequal sizes, gold from the sizes); the
    default ``ours`` pairs them ``min_gap`` buckets apart and never in one bucket."""
    tables = hand_tables()
    edges = dict(HAND, bucket_edges_m=[0.01, 1.0, 100.0])
    # buckets: ant 0, coin/claw/mouse/pen 1, horse/car/house/moose(fitted) 2, city 3
    literal = build(dict(edges, pairing="paper_literal"), tables)
    train, dev = literal.variants["original"]["train"], literal.variants["original"]["dev"]
    assert triples(dev) == both_ways([("house", "car")])          # 12 m and 4 m
    assert triples(train) == both_ways([("moose", "horse")])      # 2.5 m (fitted) and 2.4 m
    assert all(oc.rule(r) is None for r in train + dev)
    assert all(r["facts"]["gap"] == 0 and r["facts"]["pairing"] == "paper_literal" and "min_gap" not in r["facts"]
               for r in train + dev)
    assert literal.params.model_dump()["pairing"] == "paper_literal"   # recorded in meta.json
    assert oc.availability(tables, literal.params)["splits"]["dev"][
        "pairs left out: not in the same bucket (or of the same size)"] == 5   # of coin, car, house, city's 6
    ours = build(edges, tables)
    assert triples(ours.variants["original"]["dev"]) == both_ways([("city", "coin")])
    assert "pairing" not in ours.params.model_dump()   # the default leaves meta.json as before the switch
    assert ours.params.model_dump() == build(dict(edges, pairing="ours"), tables).params.model_dump()
    same = hand_tables()   # two objects of one bucket and one size: no gold, no pair
    same["object_sizes"]["sizes"].loc[same["object_sizes"]["sizes"]["object"] == "house", "size_m"] = 4.0
    assert build(dict(edges, pairing="paper_literal"), same).variants["original"]["dev"] == []


@pytest.mark.slow   # the mirror's WordNet and object sizes tables (45 s)
def test_paper_literal_on_the_mirror(tables, sizes):
    literal = build({"seed": 13, "pairing": "paper_literal", "variants": ["original"]}, tables)
    for split in ("train", "dev"):
        rows = original(literal, split)
        assert rows and all(oc.rule(r) is None for r in rows)
        for r in rows:
            (sa, _, _), (sb, _, _) = sizes[r["args"]["obj1"]], sizes[r["args"]["obj2"]]
            assert half_decade_bucket(sa) == half_decade_bucket(sb) and sa != sb
            assert answer_text(r) == ("larger" if sa > sb else "smaller")


def test_rule_checks_the_rows_pairing():
    tables = hand_tables()
    edges = dict(HAND, bucket_edges_m=[0.01, 1.0, 100.0])
    dev = build(dict(edges, pairing="paper_literal"), tables).variants["original"]["dev"]
    row = next(r for r in dev if answer_text(r) == "larger")   # house (bucket 2) larger than car (bucket 2)
    apart = json.loads(json.dumps(row))
    apart["facts"]["obj2"].update(bucket=1, bucket_m=[0.01, 1.0], size_m=0.5)   # car moved a bucket down
    apart["facts"]["gap"] = 1
    assert "paper_literal, but the objects are 1 buckets apart" in oc.rule(apart)
    unknown = json.loads(json.dumps(row))
    unknown["facts"]["pairing"] = "nearby"
    assert "neither ours nor paper_literal" in oc.rule(unknown)
    with pytest.raises(ParamsError, match="pairing"):
        build(dict(edges, pairing="same_bucket"), tables)
