"""Property conjunction: every row checked against the ConceptNet edges, disjoint splits, the rule, determinism."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import pandas as pd
import pytest

from generators.shared import registry as generators
from generators.property_conjunction import generator as pc
from generators.property_conjunction.params import ConjunctionParams
from generators.property_conjunction.questions import nested
from probekit.data.examples import answer_text
from probekit.errors import DataError, ParamsError
from probekit.probes import lexicon
from probekit.probes.dataset import load_probe_dataset, write_probe
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import PAPER_NONSENSE_WORDS

from helpers import build_section

PROBE = "property_conjunction"
SPEC = load_probe_spec(generators.get(PROBE).template_path)
DEFAULTS = SPEC.params
SYMMETRIC = set(DEFAULTS["symmetric"])
BASE = ("original", "but_not")


def build(section: dict, tables: dict):
    return build_section(PROBE, section, tables)


@pytest.fixture(scope="module")
def edges(source_tables) -> pd.DataFrame:
    return source_tables("conceptnet")["edges"]


@pytest.fixture(scope="module")
def edge_set(edges) -> set[tuple[str, str, str]]:
    return set(zip(edges["head"], edges["relation"], edges["tail"]))


@pytest.fixture(scope="module")
def built(source_tables):
    """The default sizes (the release's 4000 / 483), every variant."""
    return build({"seed": 13}, {"conceptnet": source_tables("conceptnet")})


def rows_of(built, variant):
    return [(split, r) for split, rows in built.variants[variant].items() for r in rows]


def holds(edge_set, concept, relation, obj) -> bool:
    """The property holds in the table: the edge, or (symmetric predicate) the edge read backwards."""
    return (concept, relation, obj) in edge_set or (relation in SYMMETRIC and (obj, relation, concept) in edge_set)


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_default_sizes_and_predicates(built):
    for variant in ("original", "but_not", "perturbed"):
        assert {s: len(r) for s, r in built.variants[variant].items()} == {"train": 4000, "dev": 483}
    phrases = {DEFAULTS["phrases"][r] for r in DEFAULTS["predicates"]}
    used = Counter()
    for _, r in rows_of(built, "original"):
        assert len(r["question"]["choices"]) == 3
        assert r["args"]["p1"] in phrases and r["args"]["p2"] in phrases
        (r1, _), (r2, _) = r["facts"]["properties"]
        used.update([r1, r2])
        assert r["question"]["stem"] == "what {p1} {o1} and {p2} {o2}".format(**r["args"])
    assert set(used) <= set(DEFAULTS["predicates"]) and len(used) >= 12
    assert used.most_common(1)[0][0] == "RelatedTo"  # as in the release (60% of its properties)


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_every_choice_is_checked_against_the_edge_table(built, edge_set):
    for variant in BASE:
        for _, r in rows_of(built, variant):
            facts = r["facts"]
            (r1, o1), (r2, o2) = facts["properties"]
            assert facts["gold"] == ("both" if variant == "original" else "first_only")
            for c, rel, o in facts["has"]:
                assert (c, rel, o) in edge_set, (variant, r["id"], c, rel, o)
            for c, rel, o in facts["lacks"]:  # a claim about the source: no edge, either way if symmetric
                assert not holds(edge_set, c, rel, o), (variant, r["id"], c, rel, o)
            texts = [c["text"] for c in r["question"]["choices"]]
            status = {t: (holds(edge_set, t, r1, o1), holds(edge_set, t, r2, o2)) for t in texts}
            gold = answer_text(r)
            assert len(set(texts)) == 3 and not {o1, o2} & set(texts) and not nested(o1, o2)
            if variant == "original":  # the answer has both, each distractor exactly one
                assert status[gold] == (True, True)
                assert sorted(v for t, v in status.items() if t != gold) == [(False, True), (True, False)]
            else:  # the gold has only the first; the others: both, and only the second
                assert status[gold] == (True, False)
                assert sorted(v for t, v in status.items() if t != gold) == [(False, True), (True, True)]


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_but_not_is_the_parallel_version_of_original(built):
    for split in ("train", "dev"):
        for o, b in zip(built.variants["original"][split], built.variants["but_not"][split], strict=True):
            assert o["args"] == b["args"]
            assert b["question"]["stem"] == o["question"]["stem"].replace(
                f" {o['args']['o1']} and {o['args']['p2']} ", f" {o['args']['o1']} but not {o['args']['p2']} ", 1)
            texts = [sorted(c["text"] for c in r["question"]["choices"]) for r in (o, b)]
            assert texts[0] == texts[1]
            first = o["facts"]["has"][2][0]  # D1: the first distractor of the original
            assert answer_text(b) == first and answer_text(o) == o["facts"]["has"][0][0]


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_concepts_are_disjoint_between_splits(built):
    for variant in BASE:
        concepts = {s: {c["text"] for r in rows for c in r["question"]["choices"]}
                    for s, rows in built.variants[variant].items()}
        assert concepts["train"] and concepts["dev"] and not concepts["train"] & concepts["dev"]
        answers = {s: [answer_text(r) for r in rows] for s, rows in built.variants["original"].items()}
        assert max(Counter(answers["train"]).values()) <= DEFAULTS["max_per_answer"]


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_rule_holds_on_every_row_and_catches_broken_ones(built):
    for variant in BASE:
        assert [r["id"] for _, r in rows_of(built, variant) if pc.rule(r)] == []
    row = copy.deepcopy(built.variants["original"]["dev"][0])
    wrong = next(c["label"] for c in row["question"]["choices"] if c["label"] != row["answerKey"])
    assert re.search(r"(does not|also) answers? the both question", pc.rule(dict(row, answerKey=wrong)))
    row["facts"]["lacks"] = row["facts"]["lacks"][:1]
    assert "neither has nor lacks" in pc.rule(row)
    assert pc.rule({k: v for k, v in row.items() if k != "facts"}) == "no facts"


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_frequent_terms_only(built):
    function_words = set(DEFAULTS["function_words"])
    for _, r in rows_of(built, "original"):
        for term in [c["text"] for c in r["question"]["choices"]] + [r["args"]["o1"], r["args"]["o2"]]:
            assert lexicon.zipf(term) >= DEFAULTS["min_zipf"], term
            assert not set(term.split()) <= function_words and not re.search(r"\b\d+\b", term), term


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_perturbed_replaces_and(built):
    for o, p in zip(built.variants["original"]["dev"], built.variants["perturbed"]["dev"], strict=True):
        a = o["args"]
        m = re.fullmatch(re.escape(f"what {a['p1']} {a['o1']} ") + r"(\w+)" + re.escape(f" {a['p2']} {a['o2']}"),
                         p["question"]["stem"])
        assert m and m[1] in PAPER_NONSENSE_WORDS, p["question"]["stem"]
        assert p["question"]["choices"] == o["question"]["choices"] and p["answerKey"] == o["answerKey"]
        assert p["source_id"] == o["id"]


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_ids_unique(built):
    ids = [r["id"] for v in built.variants for _, r in rows_of(built, v)]
    assert len(ids) == len(set(ids))
    contents = Counter((r["question"]["stem"], frozenset(c["text"] for c in r["question"]["choices"]))
                       for v in BASE for _, r in rows_of(built, v))
    assert max(contents.values()) == 1


@pytest.mark.slow   # the mirror's ConceptNet table (22 s)
def test_deterministic_and_seeded(tmp_path, source_tables):
    section = {"seed": 13, "size": {"train": 300, "dev": 60}, "variants": ["original", "but_not"]}
    outs = []
    for n, seed in enumerate((13, 13, 14)):
        tables = {"conceptnet": dict(source_tables("conceptnet"))}  # a new mapping: no cached plan
        outs.append(write_probe(tmp_path / f"run{n}", build(dict(section, seed=seed), tables), generator_version="1"))
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert files and all((outs[0] / f).read_bytes() == (outs[1] / f).read_bytes() for f in files)
    assert (outs[0] / "original/dev.jsonl").read_bytes() != (outs[2] / "original/dev.jsonl").read_bytes()
    loaded = load_probe_dataset(outs[0] / "but_not")
    assert len(loaded["dev"]) == 60 and loaded["dev"][0]["facts"]["gold"] == "first_only"
    meta = json.loads((outs[0] / "original/meta.json").read_text())
    assert meta["definition"]["gold"] == "both" and meta["splits"]["dev"]["template_ids"] == ["and"]


# --- a hand-made table -------------------------------------------------------------------------

HAND = [  # relation, head, tail
    ("AtLocation", "toy", "toy store"), ("UsedFor", "toy", "fun"),   # the answer
    ("AtLocation", "doll", "toy store"), ("UsedFor", "doll", "fun"),  # has both too: never a distractor
    ("AtLocation", "cashier", "toy store"),                           # only the first
    ("UsedFor", "ball", "fun"),                                       # only the second
    ("RelatedTo", "kite", "wind"), ("AtLocation", "kite", "sky"),     # a second answer
    ("RelatedTo", "sail", "wind"),                                    # only RelatedTo wind
    ("AtLocation", "bird", "sky"),                                    # only AtLocation sky
    ("AtLocation", "cloud", "sky"), ("RelatedTo", "wind", "cloud"),   # RelatedTo read backwards: has both
    ("IsA", "ball", "toy"),                                           # not a predicate of the probe
    ("RelatedTo", "a", "wind"), ("AtLocation", "a", "sky"),           # a function word: no concept
    ("RelatedTo", "9 kite", "wind"), ("AtLocation", "9 kite", "sky"),  # a number in digits: no concept
]


def hand_tables() -> dict:
    df = pd.DataFrame(HAND, columns=["relation", "head", "tail"]).assign(weight=1.0, source="hand")
    return {"conceptnet": {"edges": df}}


def test_hand_made_table():
    section = {"seed": 1, "size": {"train": 50, "dev": 50}, "min_zipf": 0, "dev_share": 0.0,
               "variants": ["original", "but_not"]}
    built = build(section, hand_tables())
    assert built.variants["original"]["dev"] == []  # dev_share 0: every concept is a train concept
    original = built.variants["original"]["train"]
    # toy and doll: (toy store, fun), kite: (wind, sky), in either order; one question per answer and pair
    assert sorted(answer_text(r) for r in original) == ["doll", "kite", "toy"]
    for r in original:
        texts, gold = {c["text"] for c in r["question"]["choices"]}, answer_text(r)
        objects = {r["args"]["o1"], r["args"]["o2"]}
        if gold in {"toy", "doll"}:  # the other one has both properties: never a distractor
            assert objects == {"toy store", "fun"} and texts == {gold, "cashier", "ball"}
        else:  # cloud is related to wind (the edge read backwards): it has both, so it is no distractor
            assert objects == {"wind", "sky"} and texts == {"kite", "sail", "bird"}
    for o, b in zip(original, built.variants["but_not"]["train"], strict=True):
        first = {"toy store": "cashier", "fun": "ball", "wind": "sail", "sky": "bird"}[o["args"]["o1"]]
        assert answer_text(b) == first
        assert b["question"]["stem"].startswith(f"what {o['args']['p1']} {o['args']['o1']} but not ")
        assert pc.rule(o) is None and pc.rule(b) is None
    counts = pc.availability(hand_tables(), ConjunctionParams.model_validate({**DEFAULTS, **section}))
    assert counts["built"] == {"train": 3, "dev": 0} and counts["answer_candidates"] == {"train": 3, "dev": 0}


def test_params_and_tables_are_checked():
    with pytest.raises(ParamsError, match=r"t.yaml: property_conjunction.predicates: .*'MadeOf'.* no question phrase"):
        build({"predicates": ["RelatedTo", "MadeOf"]}, hand_tables())
    with pytest.raises(ParamsError, match=r"property_conjunction.phrases: not ConceptNet relation names.*located_at"):
        build({"phrases": {"located_at": "is at"}}, hand_tables())
    with pytest.raises(DataError, match=r"probes tables conceptnet"):
        build({}, {})
