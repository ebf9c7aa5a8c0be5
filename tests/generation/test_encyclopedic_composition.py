"""Encyclopedic composition: the rule on every row, splits, hard distractors that are never an answer, the
single-hop facts, determinism; on the real mirror and on small hand-made tables whose answers we know."""

from __future__ import annotations

import logging
from collections import defaultdict

import pandas as pd
import pytest

import generators.encyclopedic_composition.generator as ec
from generators.encyclopedic_composition.questions import CompositionParams
from probekit.data.examples import SPLITS, answer_text, example_problem
from probekit.errors import DataError, ParamsError
from probekit.sources.loaders import wikidata as wd

from helpers import build_section

PROBE = "encyclopedic_composition"
SUBJECT_SLOT = {"band_year": "person", "actor_spouse": "film", "founder_hq": "person"}


def build(tables: dict, **section):
    return build_section(PROBE, section, {"wikidata": tables})


def facts_df(triples) -> pd.DataFrame:
    return pd.DataFrame([(r, s, o, "kamel") for r, s, o in triples], columns=wd.FACT_COLUMNS)


def cities_df(rows) -> pd.DataFrame:
    return pd.DataFrame([(c, k, v) for c, k, v in rows], columns=wd.CITY_COLUMNS)


def distractors(row) -> list[str]:
    return [c["text"] for c in row["question"]["choices"] if c["label"] != row["answerKey"]]


def with_facts(variants: dict) -> dict:
    """Every variant's rows; control rows carry the facts of the row they came from."""
    assert all("facts" in r for rows in variants.values() for split in rows.values() for r in split)
    return variants


class Truth:
    """Every answer of each question, straight from a facts table (P26 both ways)."""

    def __init__(self, facts: pd.DataFrame, cities: pd.DataFrame):
        f = facts[["relation", "subject", "object"]].drop_duplicates()
        self.fwd, self.bwd = defaultdict(lambda: defaultdict(set)), defaultdict(lambda: defaultdict(set))
        for r, s, o in f.itertuples(index=False):
            self.fwd[r][s].add(o)
            self.bwd[r][o].add(s)
        self.countries = defaultdict(set)
        for c, k in zip(cities["city"], cities["country"]):
            self.countries[c].add(k)

    def spouses(self, person):
        return self.fwd["P26"][person] | self.bwd["P26"][person]

    def answers(self, template, subject) -> set[str]:
        if template == "band_year":
            return {y for b in self.fwd["P463"][subject] for y in self.fwd["P571"][b]}
        if template == "actor_spouse":
            return {s for a in self.fwd["P161"][subject] for s in self.spouses(a)}
        if template == "founder_hq":
            return {c for co in self.bwd["P112"][subject] for c in self.fwd["P159"][co]}
        slot_answers = {"person_band": lambda x: self.fwd["P463"][x], "band_inception": lambda x: self.fwd["P571"][x],
                        "film_cast": lambda x: self.fwd["P161"][x], "spouse_of": self.spouses,
                        "founder_company": lambda x: self.bwd["P112"][x], "company_hq": lambda x: self.fwd["P159"][x]}
        return slot_answers[template](subject)


def check_all(built, tables: dict, window: int = 2):
    """The invariants every build must hold; returns the rows with facts."""
    truth = Truth(tables["facts"], tables["cities"])
    variants = with_facts(built.variants)
    for name, splits in variants.items():
        for split, rows in splits.items():
            ids = [r["id"] for r in rows]
            assert len(set(ids)) == len(ids), (name, split)
            for r in rows:
                assert example_problem(r) is None
                assert ec.rule(r) is None, (name, r)
                assert len(r["question"]["choices"]) == 3 and r["variant"] == name
                (subject,) = r["args"].values()
                valid = truth.answers(r["template_id"], subject)
                assert answer_text(r) in valid and not set(distractors(r)) & valid, r
    for split in SPLITS:
        for r in variants["original"][split]:
            gold, ds = answer_text(r), distractors(r)
            if r["template_id"] == "band_year":
                assert all(d != gold and abs(int(d) - int(gold)) <= window for d in ds), r
            if r["template_id"] == "founder_hq":
                assert all(truth.countries[d] & truth.countries[gold] for d in ds), r
    original = variants["original"]
    subjects = {s: {r["args"][SUBJECT_SLOT[r["template_id"]]] for r in original[s]} for s in SPLITS}
    assert not subjects["train"] & subjects["dev"]
    if "single_hop" in variants:
        for split in SPLITS:
            hop_facts = {tuple(f) for r in variants["single_hop"][split] for f in r["facts"]}
            assert all(len(r["facts"]) == 1 for r in variants["single_hop"][split])
            needed = {tuple(f) for r in original[split] for f in r["facts"]}
            assert needed == hop_facts, split  # every fact of the split's questions, nothing else
    return variants


# --- the real mirror -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mirror_tables(source_tables) -> dict:
    return source_tables("wikidata")


@pytest.fixture(scope="module")
def mirror_built(mirror_tables):
    return build(mirror_tables)


def test_mirror_every_row_of_every_variant_holds(mirror_built, mirror_tables):
    assert list(mirror_built.variants) == ["original", "single_hop", "nolang", "perturbed"]
    variants = check_all(mirror_built, mirror_tables, window=mirror_built.params.year_window)
    for split in SPLITS:  # the perturbed control: same questions, key words replaced, same choices
        base = {r["id"]: r for r in variants["original"][split]}
        pert = variants["perturbed"][split]
        assert len(pert) == len(base)
        for r in pert:
            src = base[r["source_id"]]
            assert r["question"]["choices"] == src["question"]["choices"] and r["answerKey"] == src["answerKey"]
            assert not any(w in r["question"]["stem"].split() for w in ("spouse", "headquarters", "band"))


def test_mirror_sizes_are_counted_per_template(mirror_built, mirror_tables, caplog):
    counts = ec.availability({"wikidata": mirror_tables}, mirror_built.params)
    t = counts["templates"]
    assert t["band_year"]["chains"] == 5 and t["band_year"]["usable"] <= 5  # KAMEL samples relations apart
    assert t["actor_spouse"]["chains"] == 676 and t["actor_spouse"]["usable"] > 400
    assert t["founder_hq"]["chains"] == 750 and 100 < t["founder_hq"]["usable"] < 750
    assert sum(t["founder_hq"]["skipped"].values()) == t["founder_hq"]["subjects"] - t["founder_hq"]["usable"]
    original = mirror_built.variants["original"]
    for name, c in t.items():
        for split in SPLITS:
            assert c["built"][split] == sum(r["template_id"] == name for r in original[split])
    assert counts["built"] == {s: len(original[s]) for s in SPLITS}
    assert counts["built"]["train"] < 5317 and counts["built"]["dev"] < 500  # capped by the facts
    assert 0 < counts["built"]["dev"] < counts["built"]["train"]
    with caplog.at_level(logging.INFO, logger="probekit"):
        build(mirror_tables, variants=["original"])
    assert "encyclopedic_composition/band_year: 5 chains" in caplog.text
    assert "fewer than size asks" in caplog.text


def test_mirror_build_is_deterministic_and_seeded(mirror_built, mirror_tables):
    assert build(mirror_tables).variants == mirror_built.variants
    other = build(mirror_tables, seed=14, variants=["original"]).variants["original"]
    assert other != mirror_built.variants["original"]


# --- hand-made tables ----------------------------------------------------------------------------

def small_tables() -> dict:
    """A film with two married actors (one P26 fact given backwards), a person in two bands formed a year
    apart, a person who founded two companies in one country, and enough others for distractors."""
    triples = [
        ("P161", "Film", "Ann"), ("P161", "Film", "Bob"), ("P161", "Film", "Cid"),
        ("P26", "Ann", "Al"), ("P26", "Bea", "Bob"),  # Bob's marriage is given from Bea's side
        ("P161", "Other Film", "Ann"), ("P161", "Other Film", "Dan"), ("P26", "Dan", "Dot"),  # Dan: co-star
        ("P463", "Pat", "Band1"), ("P463", "Pat", "Band2"), ("P571", "Band1", "1979"), ("P571", "Band2", "1980"),
        ("P112", "Co1", "Fay"), ("P112", "Co2", "Fay"), ("P159", "Co1", "Alpha"), ("P159", "Co2", "Beta"),
        ("P112", "Co3", "Gus"), ("P159", "Co3", "Nowhere"),  # a city with no country: skipped
    ]
    for i in range(12):
        triples += [("P161", f"F{i}", f"Actor{i}"), ("P26", f"Actor{i}", f"Spouse{i}"),
                    ("P463", f"Player{i}", f"B{i}"), ("P571", f"B{i}", str(1900 + 5 * i)),
                    ("P112", f"C{i}", f"Founder{i}"), ("P159", f"C{i}", f"Town{i}")]
    cities = [("Alpha", "Testland", "P17"), ("Beta", "Testland", "P17"), ("Gamma", "Testland", "P17"),
              ("Delta", "Testland", "P17"), ("Elsewhere", "Otherland", "P17")]
    cities += [(f"Town{i}", "Testland", "P17") for i in range(12)]
    facts = facts_df(triples)
    return {"facts": facts, "cities": cities_df(cities)}


@pytest.mark.parametrize("seed", range(12))
def test_small_tables_never_offer_another_answer(seed):
    tables = small_tables()
    built = build(tables, seed=seed, size={"train": 100, "dev": 20})  # more than there is: every subject
    variants = check_all(built, tables)
    rows = {r["args"][SUBJECT_SLOT[r["template_id"]]]: r for s in SPLITS for r in variants["original"][s]
            if r["template_id"] in SUBJECT_SLOT}
    film = rows["Film"]
    assert answer_text(film) in {"Al", "Bea"} and not {"Al", "Bea"} & set(distractors(film))
    assert "Dot" in distractors(film)  # the spouse of a co-star (Dan played with Ann) comes first
    if answer_text(film) == "Bea":  # the P26 fact is kept in Wikidata's direction
        assert film["facts"] == [["P161", "Film", "Bob"], ["P26", "Bea", "Bob"]]
    pat = rows["Pat"]
    assert answer_text(pat) in {"1979", "1980"} and not {"1979", "1980"} & set(distractors(pat))
    fay = rows["Fay"]
    assert answer_text(fay) in {"Alpha", "Beta"}
    assert set(distractors(fay)) <= {"Gamma", "Delta"} | {f"Town{i}" for i in range(12)}
    assert "Gus" not in rows  # no country for Nowhere


def test_small_tables_counts_and_exact_sizes():
    tables = small_tables()
    counts = ec.availability({"wikidata": tables}, CompositionParams(seed=1, size={"train": 6, "dev": 3}))
    hq = counts["templates"]["founder_hq"]
    assert hq["subjects"] == 14 and hq["usable"] == 13
    assert hq["skipped"] == {"gold city has no country in the cities table": 1}
    assert counts["templates"]["actor_spouse"]["distractor_rules"]["spouses of co-stars + spouses of other actors"] == 2
    built = build(tables, seed=1, size={"train": 6, "dev": 3})
    original = built.variants["original"]
    assert [len(original[s]) for s in SPLITS] == [6, 3]
    for split, n in (("train", 2), ("dev", 1)):  # shared evenly by the three templates
        assert sorted(sum(r["template_id"] == t for r in original[split]) for t in SUBJECT_SLOT) == [n] * 3
    check_all(built, tables)


def test_a_template_short_of_subjects_leaves_its_share_to_the_others():
    assert ec.waterfill(10, [1, 100, 100]) == [1, 5, 4]
    assert ec.waterfill(10, [0, 0]) == [0, 0]
    assert ec.allocate({"train": 90, "dev": 9}, [5, 1000, 1000]) == ([4, 43, 43], [1, 4, 4])
    train, dev = ec.allocate({"train": 5317, "dev": 500}, [5, 421, 140])
    assert [t + d for t, d in zip(train, dev)] == [5, 421, 140] and sum(dev) == round(566 * 500 / 5817)
    assert all(d >= 1 for d in dev)


def test_year_window_and_choices():
    tables = small_tables()
    built = build(tables, seed=3, year_window=5, choices=4, size={"train": 20, "dev": 10}, variants=["original"])
    for s in SPLITS:
        for r in built.variants["original"][s]:
            assert len(r["question"]["choices"]) == 4 and ec.rule(r) is None
            if r["template_id"] == "band_year":
                assert all(0 < abs(int(d) - int(answer_text(r))) <= 5 for d in distractors(r))
    with pytest.raises(ParamsError, match="year_window"):
        build(tables, year_window=1, choices=4)


def test_rule_finds_broken_rows():
    tables = small_tables()
    row = next(r for r in build(tables, seed=0, size={"train": 20, "dev": 10}).variants["original"]["train"]
               if r["template_id"] == "founder_hq")
    assert ec.rule(row) is None
    gold = answer_text(row)
    other = distractors(row)[0]
    broken = {
        "no facts": {**row, "facts": None},
        "not the chain": {**row, "facts": row["facts"][::-1]},
        "do not chain": {**row, "facts": [["P112", "Co9", "Somebody"], row["facts"][1]]},
        "gold is not": {**row, "facts": [row["facts"][0], ["P159", row["facts"][0][1], other]]},
        "args.person": {**row, "args": {"person": "Nobody"}},
    }
    for message, bad in broken.items():
        assert message in ec.rule(bad), message
    assert ec.rule({**row, "template_id": "nope"}).startswith("template_id")
    assert gold in [c["text"] for c in row["question"]["choices"]]


def test_missing_tables_name_the_command():
    with pytest.raises(DataError, match="probes tables wikidata"):
        build_section(PROBE, {}, {})


def test_the_paper_sizes_when_the_facts_suffice():
    triples, n = [], 2000
    for i in range(n):
        triples += [("P463", f"Person{i}", f"Band{i}"), ("P571", f"Band{i}", str(1900 + i % 100)),
                    ("P161", f"Film{i}", f"Actor{i}"), ("P26", f"Actor{i}", f"Spouse{i}"),
                    ("P112", f"Company{i}", f"Founder{i}"), ("P159", f"Company{i}", f"City{i % 300}")]
    tables = {"facts": facts_df(triples), "cities": cities_df((f"City{j}", f"Country{j % 10}", "P17")
                                                              for j in range(300))}
    built = build(tables)  # the YAML's defaults: the release's 5317 / 500
    original = built.variants["original"]
    assert {s: len(original[s]) for s in SPLITS} == {"train": 5317, "dev": 500}
    for split, shares in (("train", [1772, 1772, 1773]), ("dev", [166, 167, 167])):
        assert sorted(sum(r["template_id"] == t for r in original[split]) for t in SUBJECT_SLOT) == shares
    assert {s: len(built.variants["single_hop"][s]) for s in SPLITS} == {"train": 2 * 5317, "dev": 2 * 500}
    check_all(built, tables)
