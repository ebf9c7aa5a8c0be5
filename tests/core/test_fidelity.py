"""The fidelity report: generic construction rules, a probe's own rule, the comparison with the release."""

from __future__ import annotations

import json
import sys
import types
from collections import Counter

from probekit.data.examples import make_example
from probekit.probes import fidelity
from probes.main import main

from helpers import MIRROR, REPO


def row(stem: str, choices=("older", "younger"), answer="older", **over) -> dict:
    return {**make_example(probe="p", variant="original", template_id="t", stem=stem, choices=list(choices),
                           answer=answer, args={}), **over}


def test_generic_rules_count_each_broken_row():
    good = row("A is [MASK] than B .")
    rows = [good, dict(good), row("A is [MASK] than C . "), row("no mask here"), row("A [MASK] [MASK]"),
            row("A is [MASK] .", choices=("old", "old"), answer="old"), {"id": "x"}]
    assert fidelity.generic_problems(rows, "mc_mlm") == {
        "duplicate id": 2, "duplicate content": 2, "leading/trailing space in stem or choice": 1,
        "stem without exactly 1 [MASK]": 2, "repeated choice text": 1, "malformed row": 1}
    assert fidelity.generic_problems([row("what is big?")], "mc_qa") == {}


def test_probe_rule_and_vocabulary_overlap():
    ours = {"train": [row("A cat is [MASK] .")], "dev": [row("A dog is [MASK] .")]}
    release = {"train": [row("A cat is [MASK] ."), row("A cow is [MASK] .")], "dev": []}
    report = fidelity.compare(ours, release, "mc_mlm", rule=lambda r: "dog" in r["question"]["stem"] and "no dogs")
    assert report["dev"]["ours"]["problems"] == {"no dogs": 1}
    assert report["train"]["vocabulary"] == {"ours": 5, "release": 6, "shared": 5, "release_covered": 0.833}


def _release_and_multihop(tmp_path):
    """The release fetched from the mirror and a small multihop_comparison in ``tmp_path/probes``: the manifest."""
    manifest = tmp_path / "raw/sources.yaml"
    manifest.parent.mkdir()
    manifest.write_text((REPO / "raw/sources.yaml").read_text())
    assert main(["sources", "fetch", "olmpics", "--manifest", str(manifest), "--mirror", str(MIRROR)]) == 0
    params = tmp_path / "p.yaml"
    params.write_text("multihop_comparison: {size: {train: 30, dev: 30}}\n")
    assert main(["generate", "multihop_comparison", "--params", str(params),
                 "--out", str(tmp_path / "probes/multihop_comparison")]) == 0
    return manifest


def test_fidelity_command_on_a_generated_probe(tmp_path, capsys):
    manifest = _release_and_multihop(tmp_path)
    out = tmp_path / "reports/fidelity.md"
    assert main(["fidelity", "--probes", str(tmp_path / "probes"), "--manifest", str(manifest), "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    dev = report["multihop_comparison"]["dev"]
    assert dev["ours"]["n"] == 30 and dev["ours"]["problems"] == {}
    assert dev["release"]["n"] == 500 and dev["release"]["problems"]["duplicate id"] == 37  # the release's defect
    assert "## multihop_comparison" in out.read_text()
    assert dev["variant"] == "release_phrasing" and dev["ours"]["by_design"] == {
        "leading/trailing space in stem or choice": 30}   # the release's "oldest ", written on purpose
    assert "multihop_comparison (release_phrasing): ours breaks 0 construction rule(s)" in capsys.readouterr().out


def test_release_problems_are_added_to_the_release_counts_only():
    ours = {"train": [row("A cat is [MASK] .")], "dev": []}
    release = {"train": [row("A cat is [MASK] . "), row("A cow is [MASK] .")], "dev": [row("A dog is [MASK] .")]}
    fixed = {"train": Counter({"word fixed (tune -> tuna)": 2, "stray spaces fixed": 1, "nothing": 0})}
    report = fidelity.compare(ours, release, "mc_mlm", release_problems=fixed)
    assert report["train"]["release"]["problems"] == {
        "leading/trailing space in stem or choice": 1, "stray spaces fixed": 1, "word fixed (tune -> tuna)": 2}
    assert report["dev"]["release"]["problems"] == {} and report["train"]["ours"]["problems"] == {}
    assert "word fixed (tune -> tuna): 2" in fidelity.markdown({"p": report})


def test_run_calls_a_generators_release_problems_hook(tmp_path, monkeypatch):
    folder = tmp_path / "probes/fake_probe/original"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"probe": "fake_probe", "format": "mc_mlm"}))
    release = {}
    for split, stems in (("train", ["A cat is [MASK] ."]), ("dev", ["A dog is [MASK] .", "A cow is [MASK] ."])):
        (folder / f"{split}.jsonl").write_text(json.dumps(row(stems[0])) + "\n")
        release[split] = tmp_path / f"release_{split}.jsonl"
        release[split].write_text("".join(json.dumps(row(s)) + "\n" for s in stems))
    seen = {}

    def release_problems(rows_by_split):
        seen.update(rows_by_split)
        return {split: Counter({"typo fixed": len(rows)}) for split, rows in rows_by_split.items()}

    module = types.ModuleType("generators.fake_probe.generator")
    module.release_problems = release_problems
    report = fidelity.run(tmp_path / "probes", lambda probe, split: release[split], tmp_path / "f.md",
                          generator={"fake_probe": module}.__getitem__)   # the probe's module, given by the CLI
    assert {s: len(r) for s, r in seen.items()} == {"train": 1, "dev": 2}  # the release rows, per split
    assert {s: r["release"]["problems"] for s, r in report["fake_probe"].items()} == {
        "train": {"typo fixed": 1}, "dev": {"typo fixed": 2}}
    assert {s: r["ours"]["problems"] for s, r in report["fake_probe"].items()} == {"train": {}, "dev": {}}
    assert json.loads((tmp_path / "f.json").read_text())["fake_probe"]["dev"]["release"]["problems"] == {
        "typo fixed": 2}


# --- our construction rules over the release rows ---------------------------------------------------------

def spec_of(probe: str):
    from generators.shared import registry as generators
    from probekit.probes.spec import load_probe_spec

    return load_probe_spec(generators.get(probe).template_path)


def context(probe: str, variant: str, params: dict, tables=None):
    from generators.shared.release_rules import Context

    return Context(spec_of(probe), variant, params, tables or (lambda names: {}))


AGE = "A {} year old person age is [MASK] than a {} year old person ."  # the release's wording


def test_number_rules_count_each_broken_release_row():
    from generators.shared import release_rules

    ages = {"values": {"ages": {"train": [43, 120], "dev": [15, 38]}}}
    train = [row(AGE.format(50, 60), answer="younger"), row(AGE.format(60, 50), answer="older"),
             row(AGE.format(41, 50), answer="younger"),   # 41: below our train range
             row(AGE.format(70, 70), answer="older"),     # the same age twice
             row(AGE.format(80, 90), answer="older"),     # gold against the ages
             row(AGE.format(50, 60), answer="younger")]   # the first row's ages again
    dev = [row(AGE.format(20, 30), answer="younger"), row(AGE.format(30, 25), answer="older"),
           row(AGE.format(20, 50), answer="younger"),     # 50: outside dev's range, and a train age
           row(AGE.format(25, 35), answer="younger"),     # 3 younger, 1 older: one row over an even split
           row("Nothing to see [MASK] here .")]
    got = release_rules.numbers({"train": train, "dev": dev}, context("age_comparison", "release_phrasing", ages))
    assert got["train"] == {
        "a value also in the other split": 4, "a value repeated within the row": 1, "answers off an even split": 0,
        "gold is not the values' answer": 1, "stem matches no template of the probe": 0,
        "value outside our train range [43, 120]": 1, "values repeated in another row (same tuple)": 2}
    assert got["dev"] == {
        "a value also in the other split": 1, "a value repeated within the row": 0, "answers off an even split": 1,
        "gold is not the values' answer": 0, "stem matches no template of the probe": 1,
        "value outside our dev range [15, 38]": 1, "values repeated in another row (same tuple)": 0}


def object_tables() -> dict:
    import pandas as pd

    senses = {"ant": ("noun.animal", "insect.n.01"), "mouse": ("noun.animal", "rodent.n.01"),
              "horse": ("noun.animal", "equine.n.01"), "dog": ("noun.animal", "canine.n.01"),
              "pony": ("noun.animal", "equine.n.01"),
              "whale": ("noun.animal", "cetacean.n.01"), "coin": ("noun.artifact", "currency.n.01"),
              "car": ("noun.artifact", "motor_vehicle.n.01"), "house": ("noun.artifact", "building.n.01")}
    hypernyms = pd.DataFrame([(c, h.split(".")[0], f"{c}.n.01", h, 1, lex) for c, (lex, h) in senses.items()],
                             columns=["concept", "hypernym", "concept_synset", "hypernym_synset", "depth", "lexname"])
    sizes = pd.DataFrame([("ant", 0.005, "breds", 0), ("mouse", 0.09, "breds", 0), ("horse", 2.4, "breds", 0),
                          ("dog", 0.6, "breds", 0), ("pony", 1.5, "breds", 0), ("whale", 20.0, "fit", 2),
                          ("coin", 0.02, "breds", 0),
                          ("car", 4.0, "breds", 0), ("house", 12.0, "breds", 0)],
                         columns=["object", "size_m", "source", "n_pairs"])
    pairs = pd.DataFrame([("ant", "mouse", "larger", "viphy")], columns=["obj1", "obj2", "label", "source"])
    return {"object_sizes": {"sizes": sizes, "pairs": pairs}, "wordnet": {"hypernyms": hypernyms}}


def test_objects_release_rows_checked_with_our_sizes_buckets_and_wordnet():
    """Half-decade buckets: ant -5, coin -4, mouse -3, dog -1, horse 0, car 1, house 2; whale is fitted with 2
    labels (left out); a viphy label calls the ant larger than the mouse."""
    from generators.shared import release_rules

    size = "The size of a {} is usually much [MASK] than the size of a {} ."
    choices = ("larger", "smaller")

    def r(a, b, gold):
        return row(size.format(a, b), choices=choices, answer=gold)

    train = [r("horse", "ant", "larger"), r("ant", "horse", "larger"),  # gold against the sizes
             r("horse", "dog", "larger"),      # one bucket apart
             r("mouse", "ant", "larger"),      # a direct label says the ant is the larger
             r("quokka", "ant", "larger"),     # no size
             r("car", "ant", "larger"),        # not an animal (and a dev object)
             r("whale", "ant", "larger"),      # fitted, too few labels
             r("horse", "ant", "larger"),      # the first pair again
             r("ant", "horse", "smaller"), r("dog", "horse", "smaller")]   # 8 larger, 2 smaller
    dev = [r("car", "coin", "larger"), r("coin", "house", "smaller"),
           r("house", "dog", "larger"),        # an animal in dev (and a train object)
           r("car", "house", "larger")]        # one bucket apart, and the house is the larger
    ctx = context("objects_comparison", "original", dict(spec_of("objects_comparison").params),
                  lambda names: {n: object_tables()[n] for n in names})
    got = release_rules.objects({"train": train, "dev": dev}, ctx)
    gap = "objects closer than our bucket gap (2; 4 with a fitted size)"
    assert got["train"] == {
        "a direct pair label disagrees with our sizes": 1, "an object also in the other split": 3,
        "an object not an animal (our WordNet rule)": 1,
        "an object our params leave out (a fitted size with few labels)": 1,
        "an object without a size in our tables": 1, "answers off an even split": 3,
        "gold is not our sizes' answer": 1, gap: 2,
        "pair repeated in another row (same order)": 4,  # horse-ant twice, ant-horse twice
        "stem matches no template of the probe": 0}
    assert got["dev"] == {
        "a direct pair label disagrees with our sizes": 0, "an object also in the other split": 3,
        "an object not a general object (our WordNet rule)": 1,
        "an object our params leave out (a fitted size with few labels)": 0,
        "an object without a size in our tables": 0, "answers off an even split": 1,
        "gold is not our sizes' answer": 1, gap: 1, "pair repeated in another row (same order)": 0,
        "stem matches no template of the probe": 0}


def antonym_tables() -> dict:
    import pandas as pd

    lemma_pairs = pd.DataFrame([("antonym", "cat", "dog", "n", "cat.n.01", "dog.n.01"),
                                ("antonym", "hot", "cold", "a", "hot.a.01", "cold.a.01"),
                                ("synonym", "big", "large", "a", "big.a.01", "large.a.01")],
                               columns=["relation", "word1", "word2", "pos", "synset1", "synset2"])
    edges = pd.DataFrame([("Synonym", "cold", "hot", "verbosity"),   # against WordNet: the pair has both
                          ("Antonym", "wet", "dry", "wiktionary")], columns=["relation", "head", "tail", "source"])
    return {"wordnet": {"lemma_pairs": lemma_pairs}, "conceptnet": {"edges": edges}}


def test_objects_pairing_paper_literal_checks_one_bucket():
    """With ``pairing: paper_literal`` (§4.1 "objects that are in the same bucket") the release is held to that:
    horse (2.4 m) and pony (1.5 m) share bucket 0, horse and ant do not."""
    from generators.shared import release_rules

    size = "The size of a {} is usually much [MASK] than the size of a {} ."
    train = [row(size.format("horse", "pony"), ("larger", "smaller"), "larger"),
             row(size.format("ant", "horse"), ("larger", "smaller"), "smaller")]
    params = {**spec_of("objects_comparison").params, "pairing": "paper_literal"}
    ctx = context("objects_comparison", "original", params,
                  lambda names: {n: object_tables()[n] for n in names})
    got = release_rules.objects({"train": train, "dev": []}, ctx)["train"]
    assert got["objects not in one bucket, or of one size (pairing: paper_literal)"] == 1
    assert not any(name.startswith("objects closer") for name in got) and got["gold is not our sizes' answer"] == 0


def test_antonym_release_rows_checked_by_our_word_rules_and_tables():
    from generators.shared import release_rules

    choices = ("not", "really")
    train = [row("It was [MASK] a cat, it was really a dog.", choices, "not"),
             row("It was [MASK] hot , it was really cold .", choices, "not"),
             row("It was [MASK] big , it was really large .", choices, "really"),
             row("He was [MASK] ready to run, He was really ready to run.", choices, "really"),  # one word twice
             row("It was [MASK] a xqzvw, it was really a cat.", choices, "not"),      # below min_zipf
             row("It was [MASK] a Paris, it was really a town.", choices, "not"),     # not lower case
             row("It was [MASK] a cat, it was really a dog.", choices, "not")]        # the first pair again
    dev = [row("It was [MASK] a cat, it was really a mouse.", choices, "not"),        # cat: a train word
           row("It was [MASK] wet , it was really dry .", choices, "really"),         # antonyms: "not"
           row("Totally different .", choices, "not")]
    params = {"min_zipf": 2.5, "sources": ["wordnet", "conceptnet"]}
    tables = antonym_tables()
    got = release_rules.antonyms({"train": train, "dev": dev}, context(
        "antonym_negation", "release_phrasing", params, lambda names: {n: tables[n] for n in names}))
    held, both = "a pair our tables (wordnet, conceptnet) do not hold", \
        "a pair our tables (wordnet, conceptnet) call both antonyms and synonyms"
    gold = "gold is not the answer of the pair's relation in our tables (wordnet, conceptnet)"
    assert got["train"] == {
        held: 3, both: 1, gold: 0,   # run-run, xqzvw-cat, Paris-town; hot-cold
        "a word also in the other split": 3, "a word below our min_zipf 2.5": 1,
        "a word that is not one lower-case word of 2+ letters": 1,
        "answers off an even split within a part of speech": 2,   # nouns: 4 not, 0 really
        "pair repeated in another row (same order)": 2, "stem matches no template of the probe": 0,
        "the same word twice": 1}
    assert got["dev"] == {
        held: 1, both: 0, gold: 1,   # cat-mouse; wet-dry
        "a word also in the other split": 1, "a word below our min_zipf 2.5": 0,
        "a word that is not one lower-case word of 2+ letters": 0,
        "answers off an even split within a part of speech": 0,
        "pair repeated in another row (same order)": 0, "stem matches no template of the probe": 1,
        "the same word twice": 0}


def test_taxonomy_release_rows_checked_by_our_concept_rules():
    from generators.shared import release_rules

    choices = ("animal", "food", "tool")
    train = [row("A cat and a dog are both a type of [MASK] .", choices, "animal"),
             row("A cat and a cow are both a type of [MASK] ", choices, "animal"),   # the release: no "."
             row("An apple pie tin and a pear are both a type of [MASK] .", choices, "food")]
    dev = [row("A dog and a wolf are both a type of [MASK] .", choices, "animal")]
    params = {"single_token": [], "max_concept_words": 2, "max_concept_uses": 1}
    got = release_rules.taxonomy({"train": train, "dev": dev}, context("taxonomy_conjunction", "original", params))
    assert got["train"] == {"a concept also in the other split": 1, "a concept in more than 1 rows": 2,
                            "a concept of more than 2 words": 1, "stem matches no template of the probe": 0}
    assert got["dev"] == {"a concept also in the other split": 1, "a concept in more than 1 rows": 0,
                          "a concept of more than 2 words": 0, "stem matches no template of the probe": 0}


# --- the command: like for like, numbers, a failing check --------------------------------------------------

def fetched_release(tmp_path):
    manifest = tmp_path / "raw/sources.yaml"
    manifest.parent.mkdir()
    manifest.write_text((REPO / "raw/sources.yaml").read_text())
    assert main(["sources", "fetch", "olmpics", "--manifest", str(manifest), "--mirror", str(MIRROR)]) == 0
    return manifest


def generated_age(tmp_path):
    params = tmp_path / "p.yaml"
    params.write_text("age_comparison: {size: {train: 40, dev: 20}, variants: [original, release_phrasing]}\n")
    assert main(["generate", "age_comparison", "--params", str(params),
                 "--out", str(tmp_path / "probes/age_comparison")]) == 0


def test_age_compared_like_for_like_with_its_ages_and_the_release_checked(tmp_path, capsys):
    """The release's wording against ours, the ages' ranges side by side (ours 43-120, the release's train
    41-104), and the release rows outside our range counted (from the release file, read here apart)."""
    import re

    manifest = fetched_release(tmp_path)
    generated_age(tmp_path)
    out = tmp_path / "fidelity.md"
    assert main(["fidelity", "--probes", str(tmp_path / "probes"), "--manifest", str(manifest), "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())["age_comparison"]
    assert {s: r["variant"] for s, r in report.items()} == {"train": "release_phrasing", "dev": "release_phrasing"}
    assert " person age is [MASK] than a " in report["train"]["ours"]["examples"][0]
    release = [json.loads(line) for line in
               (MIRROR / "olmpics/number_comparison_age_compare_masked_train.jsonl").read_text().splitlines()]
    ages = [tuple(map(int, re.findall(r"\d+", r["question"]["stem"]))) for r in release]
    assert report["train"]["release"]["numbers"]["range"] == [min(map(min, ages)), max(map(max, ages))] == [41, 104]
    low, high = report["train"]["ours"]["numbers"]["range"]
    assert 43 <= low and high <= 120
    outside = sum(any(not 43 <= a <= 120 for a in t) for t in ages)
    assert report["train"]["rules"]["value outside our train range [43, 120]"] == {
        "ours": 0, "release": outside, "ours (original)": 0}
    assert outside > 0 and all(c["ours"] == 0 for s in report.values() for c in s["rules"].values())
    text = out.read_text()
    assert "41–104" in text and "| age_comparison | `release_phrasing` | 40 / 4032 | 20 / 500 |" in text
    assert "age_comparison (release_phrasing): ours breaks 0 construction rule(s)" in capsys.readouterr().out


def test_the_command_fails_when_ours_breaks_a_construction_rule(tmp_path, capsys):
    """Ours in the release's wording and in the paper's (``original``) are held to the same rules: a user's
    hand edit (ages moved out of our range, the gold kept) in either fails the stage, after writing the report."""
    manifest = fetched_release(tmp_path)
    generated_age(tmp_path)
    for variant in ("release_phrasing", "original"):
        train = tmp_path / f"probes/age_comparison/{variant}/train.jsonl"
        rows = [json.loads(line) for line in train.read_text().splitlines()]
        args = rows[0]["args"]
        rows[0]["question"]["stem"] = rows[0]["question"]["stem"].replace(
            f"A {args['age1']} ", f"A {args['age1'] + 500} ").replace(f"a {args['age2']} ", f"a {args['age2'] + 500} ")
        train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "fidelity.md"
    assert main(["fidelity", "--probes", str(tmp_path / "probes"), "--manifest", str(manifest), "--out", str(out)]) == 1
    assert "2 of our rows break a construction rule" in capsys.readouterr().err
    rules = json.loads(out.with_suffix(".json").read_text())["age_comparison"]["train"]["rules"]
    counts = rules["value outside our train range [43, 120]"]
    assert (counts["ours"], counts["ours (original)"]) == (1, 1) and counts["release"] > 0
    assert f"| value outside our train range [43, 120] | 1 | {counts['release']} | 1 |" in out.read_text()


# --- the sizes the docs quote ------------------------------------------------------------------------------

def quoted_sizes(text: str, probe: str) -> list[dict]:
    """The sizes ``text`` quotes for ``probe``: in a table row naming it (`probe`), "train / dev (release train /
    release dev)", one ";"-part per probe the row names; in prose after its paper name (PROBE NAME), "(t / d of
    T / D" or "train split (t of T"."""
    import re

    found = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        names = re.findall(r"`([a-z_]+)`", cells[0]) if cells else []
        if probe in names:
            part = cells[-1].split(";")[names.index(probe)] if len(cells[-1].split(";")) == len(names) else ""
            m = re.match(r"\s*(\d+) / (\d+)(?: \((\d+) / (\d+)\))?", part)
            found.append({"line": line, "sizes": m and [int(g) if g else None for g in m.groups()]})
    name = probe.upper().replace("_", "[ -]")
    flat = " ".join(text.split())
    for m in re.finditer(rf"{name}[^(.]{{0,40}}\(([^)]*)\)", flat):
        inner, lead = m.group(1), m.group(0)
        both = re.match(r"(\d+) / (\d+) of (\d+) / (\d+)", inner)
        train = re.match(r"(\d+) of (\d+)", inner)
        if both:
            found.append({"line": lead, "sizes": [int(g) for g in both.groups()]})
        elif train and "train" in lead:
            found.append({"line": lead, "sizes": [int(train.group(1)), None, int(train.group(2)), None]})
    return found


def test_docs_quote_the_reports_sizes():
    """Every size docs/*.md quotes for a probe is the one reports/fidelity.json measured (ours, then the
    release's: train / dev), and the probes table quotes every probe."""
    report = json.loads((REPO / "reports/fidelity.json").read_text())
    wrong, unquoted = [], []
    for probe, splits in report.items():
        truth = [splits["train"]["ours"]["n"], splits["dev"]["ours"]["n"],
                 splits["train"]["release"]["n"], splits["dev"]["release"]["n"]]
        table = [q for q in quoted_sizes((REPO / "docs/probes.md").read_text(), probe) if q["line"].startswith("|")]
        if not table or table[0]["sizes"] is None or None in table[0]["sizes"]:
            unquoted.append(probe)
        for page in sorted((REPO / "docs").glob("*.md")):
            for q in quoted_sizes(page.read_text(), probe):
                if q["sizes"] and any(a is not None and a != b for a, b in zip(q["sizes"], truth)):
                    wrong.append(f"{page.name}: {probe}: quotes {q['sizes']}, the report has {truth}: {q['line']!r}")
    assert not unquoted, f"docs/probes.md's table quotes no train / dev (release) sizes for {unquoted}"
    assert not wrong, "\n".join(wrong)


def test_a_probe_outside_the_release_is_listed_and_skipped(tmp_path, capsys, monkeypatch):
    """A probe folder the oLMpics release has no file for (a user's new probe, its generator importable) is
    reported as having no original release, and the others are still compared (it used to stop the command with
    ``KeyError: "source 'olmpics' has no file for probe 'part_of' split 'train'"``)."""
    for name in ("generators.part_of", "generators.part_of.generator"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    manifest = _release_and_multihop(tmp_path)
    new = tmp_path / "probes/part_of/original"
    new.mkdir(parents=True)
    (new / "meta.json").write_text(json.dumps({"probe": "part_of", "format": "mc_mlm"}))
    for split in ("train", "dev"):
        (new / f"{split}.jsonl").write_text(json.dumps(row("A wheel is part of a [MASK] .")) + "\n")
    out = tmp_path / "reports/fidelity.md"
    assert main(["fidelity", "--probes", str(tmp_path / "probes"), "--manifest", str(manifest), "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["part_of"] == "no original release"
    assert report["multihop_comparison"]["dev"]["release"]["n"] == 500
    assert "| part_of | – | no original release |" in out.read_text()
    assert "part_of: no original release, not compared" in capsys.readouterr().out
