"""Age and multi-hop comparison: gold labels, ranges, balance, controls, determinism, round trip."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from datasets import load_dataset

from generators.shared import registry as generators
from probekit.data.examples import answer_text
from probekit.probes.dataset import load_probe_dataset, write_probe
from probekit.probes.templates import MASK, PAPER_NONSENSE_WORDS

from helpers import MIRROR, build_section

AGE = {"seed": 13, "mode": "sample", "size": {"train": 60, "dev": 40},
       "variants": ["original", "nolang", "perturbed", "release_phrasing", "birth_year", "ages_as_years",
                    "years_as_ages"],
       "values": {"ages": {"train": [43, 120], "dev": [15, 38]}, "years": {"train": [1830, 1919], "dev": [1920, 2000]}}}
MULTIHOP = {"seed": 13, "mode": "sample", "size": {"train": 61, "dev": 30},
            "variants": ["original", "nolang", "perturbed", "release_phrasing"],
            "values": {"ages": {"train": [43, 120], "dev": [15, 38]}}}


def build(probe: str, section: dict):
    return build_section(probe, section, label="test-params.yaml")


@pytest.fixture(scope="module")
def age():
    return build("age_comparison", AGE)


@pytest.fixture(scope="module")
def multihop():
    return build("multihop_comparison", MULTIHOP)


def rows(splits, split):
    return splits[split]


def test_age_gold_labels_follow_the_values(age):
    variants = age.variants
    for name in ("original", "release_phrasing", "ages_as_years"):
        for split in ("train", "dev"):
            for r in rows(variants[name], split):
                a, b = r["args"]["age1"], r["args"]["age2"]
                assert answer_text(r) == ("younger" if a < b else "older")
                assert f" {a} year old person" in r["question"]["stem"]
    for name in ("birth_year", "years_as_ages"):  # born earlier = older
        for r in rows(variants[name], "dev"):
            y1, y2 = r["args"]["year1"], r["args"]["year2"]
            assert answer_text(r) == ("older" if y1 < y2 else "younger")
            assert r["question"]["stem"].startswith(f"A person born in {y1} is [MASK]")


def test_multihop_gold_is_the_position_of_the_oldest(multihop):
    variants = multihop.variants
    for split in ("train", "dev"):
        for r in rows(variants["original"], split):
            ages = [r["args"][k] for k in ("age1", "age2", "age3")]
            assert len(set(ages)) == 3
            assert answer_text(r) == ("first", "second", "third")[ages.index(max(ages))]
            assert r["question"]["stem"].endswith("the [MASK] is oldest")


def test_multihop_stems_are_the_papers_and_the_releases(multihop):
    """§4.5's example, ``When comparing a 83 year old, a 63 year old and a 56 year old, the [MASK] is oldest``,
    ends at "oldest": no final period, in the paper or in the release (whose stems end with a space after it,
    the ``release_phrasing`` variant). Every stem of the release, its ages filled into our templates, is ours."""
    paper = multihop.spec.template("paper")
    assert paper.fill({"age1": 83, "age2": 63, "age3": 56}) == \
        "When comparing a 83 year old, a 63 year old and a 56 year old, the [MASK] is oldest"
    phrasing = multihop.spec.template("release_phrasing")
    n = 0
    for split in ("train", "dev"):
        for line in open(MIRROR / "olmpics" / f"compositional_comparison_{split}.jsonl", encoding="utf-8"):
            stem = json.loads(line)["question"]["stem"]
            ages = dict(zip(("age1", "age2", "age3"), map(int, re.findall(r"\d+", stem))))
            assert phrasing.fill(ages) == stem and paper.fill(ages) == stem.rstrip(" ")
            n += 1
    assert n == 5500
    for name, template in (("original", paper), ("release_phrasing", phrasing)):
        for r in rows(multihop.variants[name], "train") + rows(multihop.variants[name], "dev"):
            assert r["question"]["stem"] == template.fill(r["args"])


def test_ranges_are_respected_and_disjoint(age, multihop):
    for variants, params in ((age.variants, AGE), (multihop.variants, MULTIHOP)):
        for split in ("train", "dev"):
            low, high = params["values"]["ages"][split]
            for r in rows(variants["original"], split):
                assert all(low <= v <= high for v in r["args"].values())
    bad = copy.deepcopy(AGE)
    bad["values"]["ages"]["dev"] = [15, 50]
    with pytest.raises(ValueError, match=r"test-params.yaml: age_comparison.values: ages: train \[43, 120\] "
                                         r"overlaps dev \[15, 50\]"):
        build("age_comparison", bad)


def test_answers_and_choice_positions_are_balanced(age, multihop):
    a, m = age.variants, multihop.variants
    assert Counter(map(answer_text, rows(a["original"], "train"))) == {"older": 30, "younger": 30}
    assert Counter(map(answer_text, rows(m["original"], "train"))) == {"first": 21, "second": 20, "third": 20}
    keys = Counter(r["answerKey"] for r in rows(m["original"], "train"))
    assert set(keys) == {"A", "B", "C"} and min(keys.values()) >= 10  # choice order is shuffled per example
    age_keys = Counter(r["answerKey"] for r in rows(a["original"], "train") + rows(a["original"], "dev"))
    assert set(age_keys) == {"A", "B"} and min(age_keys.values()) >= 35  # of 100: the gold is not always first


@pytest.mark.slow   # two `probes generate` processes end to end
def test_same_params_give_the_same_files_in_two_processes(tmp_path):
    """Determinism across processes (hash seeds differ), not only within one."""
    import os
    import subprocess
    import sys

    outs = []
    for n, hash_seed in enumerate(("1", "2")):
        out = tmp_path / f"p{n}"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        subprocess.run([sys.executable, "-m", "probes.main", "generate", "multihop_comparison", "--out", str(out)],
                       cwd=tmp_path, env=env, check=True, capture_output=True)
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert len(files) == 17 and all((outs[0] / f).read_bytes() == (outs[1] / f).read_bytes() for f in files)


def test_sampling_more_than_the_range_holds_is_an_error():
    params = copy.deepcopy(AGE)
    params["size"]["dev"] = 10_000
    with pytest.raises(ValueError, match=r"age_comparison/original/dev: size asks for 5000 examples"):
        build("age_comparison", params)


def test_grid_mode_has_every_ordered_pair_in_order():
    params = dict(copy.deepcopy(AGE), mode="grid", variants=["original"])
    params["values"]["ages"] = {"train": [50, 54], "dev": [15, 20]}
    variants = build("age_comparison", params).variants
    dev = rows(variants["original"], "dev")
    pairs = [(r["args"]["age1"], r["args"]["age2"]) for r in dev]
    assert pairs == [(a, b) for a in range(15, 21) for b in range(15, 21) if a != b]


def test_nolang_keeps_only_arguments_and_mask(age, multihop):
    for variants, slots in ((age.variants, ("age1", "age2")), (multihop.variants, ("age1", "age2", "age3"))):
        originals = {tuple(r["args"].values()): r for r in rows(variants["original"], "dev")}
        nolang = rows(variants["nolang"], "dev")
        assert len(nolang) == len(originals)
        for r in nolang:
            args = [str(r["args"][s]) for s in slots]
            assert r["question"]["stem"] == " ".join(args + [MASK] if len(slots) == 3 else
                                                     [args[0], MASK, args[1]])
            twin = originals[tuple(r["args"].values())]
            assert r["answerKey"] == twin["answerKey"]
            assert r["variant"] == "nolang" and r["id"] != twin["id"] and r["source_id"] == twin["id"]
            assert {k: v for k, v in r.items() if k not in ("id", "question", "answerKey", "variant", "source_id")} \
                == {k: v for k, v in twin.items() if k not in ("id", "question", "answerKey", "variant")}
    age_nolang = rows(age.variants["nolang"], "dev")
    assert all({"younger": "ya", "older": "blah"}[answer_text(o)] == answer_text(n)
               for o, n in zip(rows(age.variants["original"], "dev"), age_nolang))


def test_perturbed_replaces_only_the_key_words(age):
    variants = age.variants
    for original, perturbed in zip(rows(variants["original"], "dev"), rows(variants["perturbed"], "dev")):
        stem = perturbed["question"]["stem"]
        assert " than " not in stem and " age," not in stem
        m = re.fullmatch(r"A (\d+) year old person is \[MASK\] (\w+) me in (\w+), If I am a (\d+) year old person\.",
                         stem)
        assert m, stem
        assert (int(m[1]), int(m[4])) == (original["args"]["age1"], original["args"]["age2"])
        assert {m[2], m[3]} <= set(PAPER_NONSENSE_WORDS)
        assert perturbed["question"]["choices"] == original["question"]["choices"]
    used = Counter(w for r in rows(variants["perturbed"], "train")
                   for w in re.findall(r"\[MASK\] (\w+) me in (\w+)", r["question"]["stem"])[0])
    assert len(used) == 10  # sampled from the whole list


def test_same_params_give_byte_identical_files_and_seed_changes_them(tmp_path):
    params = dict(copy.deepcopy(AGE), variants=["original", "perturbed"])
    version = generators.get("age_comparison").version
    outs = []
    for n, seed in enumerate((13, 13, 14)):
        outs.append(write_probe(tmp_path / f"run{n}", build("age_comparison", dict(params, seed=seed)),
                                generator_version=version))
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert files and all((outs[0] / f).read_bytes() == (outs[1] / f).read_bytes() for f in files)
    assert (outs[0] / "original/dev.jsonl").read_bytes() != (outs[2] / "original/dev.jsonl").read_bytes()


def test_ids_are_unique_and_derived_from_content(age):
    variants = age.variants
    all_ids = [r["id"] for v in variants.values() for s in ("train", "dev") for r in rows(v, s)]
    assert len(all_ids) == len(set(all_ids))
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in all_ids)
    again = build("age_comparison", dict(AGE, variants=["original"])).variants
    assert [r["id"] for r in rows(again["original"], "dev")] == [r["id"] for r in rows(variants["original"], "dev")]


def test_round_trip_through_datasets(tmp_path, age):
    out = write_probe(tmp_path / "age", age, generator_version="1")
    for name, dsd in age.variants.items():
        loaded = load_probe_dataset(out / name)
        assert set(loaded) == {"train", "dev"}
        for split in ("train", "dev"):
            assert loaded[split].to_list() == dsd[split]
        hf = load_dataset("json", data_files={s: str(out / name / f"{s}.jsonl") for s in ("train", "dev")},
                          cache_dir=str(tmp_path / "hf-cache"))
        assert hf["dev"].to_list() == dsd["dev"]
    first = json.loads((out / "original/dev.jsonl").read_text().splitlines()[0])
    assert list(first)[:3] == ["id", "question", "answerKey"]  # the oLMpics layout comes first


def test_meta_and_card(tmp_path, age):
    out = write_probe(tmp_path / "age", age, generator_version="1")
    meta = json.loads((out / "original/meta.json").read_text())
    assert meta["splits"]["dev"] == {"n": 40, "labels": {"older": 20, "younger": 20}, "template_ids": ["paper"]}
    assert meta["definition"] == {"templates": ["paper"], "values": "ages"}
    assert meta["params"] == {k: v for k, v in AGE.items() if k != "variants"}  # seed, mode, size, value ranges
    card = (out / "original/README.md").read_text()
    assert card.startswith("---\n") and "config_name: age_comparison-original" in card
    assert "| dev | 40 | older: 20, younger: 20 |" in card
    assert "seed: 13\nmode: sample\n" in card and "dev: [15, 38]" in card
    assert "`paper`: `A {age1} year old person is [MASK] than me in age" in card


def test_control_cards_describe_the_control_not_the_template(tmp_path, age):
    out = write_probe(tmp_path / "age", age, generator_version="1")
    nolang = (out / "nolang/README.md").read_text()
    assert "`{age1} [MASK] {age2}`" in nolang and "`older` → `blah`, `younger` → `ya`" in nolang
    front, body = nolang.removeprefix("---\n").split("\n---\n", 1)
    assert "If I am a" not in body  # the natural-language template is not what NO-LANG rows read (the card's text)
    assert "probekit:" in front   # its base's template texts are in the metadata only (the Changes' old -> new)
    perturbed = (out / "perturbed/README.md").read_text()
    assert "the key words `age`, `than` of" in perturbed and "seed 13" in perturbed
    assert "blah, ya, foo, snap, woo, boo, da, wee, foe, fee" in perturbed
    assert json.loads((out / "perturbed/meta.json").read_text())["definition"] == {"control": "perturbed",
                                                                                  "base": "original"}


def fingerprints(folder: Path) -> dict[str, str]:
    return {m.parent.name: json.loads(m.read_text())["fingerprint"] for m in sorted(folder.glob("*/meta.json"))}


def test_fingerprint_is_a_hash_of_what_was_written(tmp_path, monkeypatch, age):
    fp = fingerprints(write_probe(tmp_path / "a", age, generator_version="1"))
    edited = tmp_path / "age_comparison.yaml"
    monkeypatch.setattr(type(generators.get("age_comparison")), "template_path", property(lambda self: edited))
    original = age.spec.path.read_text()

    edited.write_text(original + "\n# a comment changes no output\n")
    same = fingerprints(write_probe(tmp_path / "b", build("age_comparison", AGE), generator_version="2"))
    assert same == fp  # nor does the generator version: only the params and the bytes written count

    edited.write_text(original.replace("If I am a {age2}", "if I am a {age2}"))
    changed = fingerprints(write_probe(tmp_path / "c", build("age_comparison", AGE), generator_version="1"))
    assert changed["original"] != fp["original"] and changed["birth_year"] == fp["birth_year"]

    edited.write_text(original.replace("variants:", "variants:\n  extra: {template: paper, values: years}", 1))
    more = fingerprints(write_probe(tmp_path / "d", build("age_comparison", dict(AGE, variants=None)),
                                    generator_version="1"))
    assert set(more) == set(fp) | {"extra"} and {k: more[k] for k in fp} == fp


def test_interrupted_write_leaves_previous_output(tmp_path, age, monkeypatch):
    first = build("age_comparison", dict(AGE, variants=["original"]))
    out = write_probe(tmp_path / "age", first, generator_version="1")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    import probekit.probes.dataset as pd_mod

    def boom(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(pd_mod, "_card", boom)
    with pytest.raises(KeyboardInterrupt):
        write_probe(out, age, generator_version="1")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["age"]  # no temp folder left behind


def test_card_licence_follows_the_sources(age):
    from probekit.probes.dataset import licence

    sa, bsd, mit = ({"license_id": i} for i in ("cc-by-sa-4.0", "other", "mit"))
    assert licence(age.spec, {"conceptnet": sa, "wordnet": bsd}) == "cc-by-sa-4.0"  # share-alike carries over
    assert licence(age.spec, {"a": mit, "b": mit}) == "mit"
    assert licence(age.spec, {"a": mit, "b": bsd}) == "other"
    assert licence(age.spec, {}) == "apache-2.0"  # synthetic: the probe YAML's own


def test_a_large_range_is_sampled_without_listing_it(monkeypatch):
    """Multi-hop train has 456k ordered triples: they are drawn, never listed (nor grouped) whole."""
    import random

    from generators.shared import number_tuples
    from generators.multihop_comparison.generator import outcome

    def listing(*_a, **_k):
        raise AssertionError("the whole range was enumerated")

    monkeypatch.setattr(number_tuples.itertools, "permutations", listing)
    chosen = number_tuples.balanced_sample(range(43, 121), 3, outcome, ["first", "second", "third"], 61,
                                           random.Random(1), where="t")
    assert len(set(chosen)) == 61 and all(len(set(t)) == 3 and all(43 <= v <= 120 for v in t) for t in chosen)
    assert Counter(map(outcome, chosen)) == {"first": 21, "second": 20, "third": 20}
