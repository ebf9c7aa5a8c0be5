"""ALWAYS-NEVER: the release parsed back to gold, the probe built from annotations only, the annotation
round trip (export -> workers -> import), a new template that has no annotations yet, statements drawn from
ConceptNet types for annotation, and the release's defects counted for the fidelity report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from generators.shared import registry as generators
from generators.always_never import generator as always_never
from generators.shared.build import build_probe
from probekit.data.examples import answer_text
from probekit.data.jsonl import read_jsonl
from probekit.errors import DataError
from probekit.params import ParamsError, ParamsFile, probe_section
from generators.always_never import annotations, crowd_tasks
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import MASK, PAPER_NONSENSE_WORDS
from probekit.sources import loaders
from probes.main import main

from helpers import MIRROR, REPO

RELEASE = {s: str(MIRROR / "olmpics" / f"coffee_cats_quantifiers_{s}.jsonl") for s in ("train", "dev")}
WORDS = ("never", "rarely", "sometimes", "often", "always")
PAPER = {"never": .24, "rarely": .10, "sometimes": .34, "often": .07, "always": .23}  # §4.2, footnote 6
PER_TEMPLATE = {"has_part": 333, "dish": 232, "dish_some": 82, "larger": 219, "smaller": 129, "diet": 205,
                "placed": 84}


@pytest.fixture(scope="module")
def spec():
    return load_probe_spec(generators.get("always_never").template_path)


def params_of(spec, **over):
    data = {"always_never": {"seed": 13, "release": RELEASE, **over}}
    return probe_section(ParamsFile(Path("x.yaml"), data), spec, always_never.AlwaysNeverParams)


@pytest.fixture(scope="module")
def built():
    return build_probe("always_never", ParamsFile(Path("x.yaml"), {"always_never": {"seed": 13, "release": RELEASE}}))


# --- the release as the annotation source -------------------------------------------------------------


def test_release_parses_back_to_one_gold_per_statement(spec):
    gold, report = annotations.parse_release(RELEASE, spec, spec.params["release_fixes"])
    assert report["rows"] == {"train": 1004, "dev": 280}
    assert report["statements"] == len(gold) == len({g.key for g in gold}) == 1284
    assert report["matched"] == PER_TEMPLATE and sum(PER_TEMPLATE.values()) == 1284
    # this release file has none of the defects of the other probes' files; its one typo is fixed, counted
    assert report["word_fixes"] == {"tune -> tuna": 9}
    assert (report["unmatched"], report["ambiguous"], report["duplicate_ids"], report["exact_duplicates"],
            report["conflicting_statements"], report["in_train_and_dev"], report["spaces_fixed"]) == (0,) * 7
    assert report["left_out"] == []
    assert Counter(g.split for g in gold) == {"train": 1004, "dev": 280}
    tuna = [g for g in gold if g.x == "tuna" and g.template_id == "dish_some"]
    assert len(tuna) == 9 and all(g.fixes == {"tune": "tuna"} for g in tuna)
    some = next(g for g in gold if g.template_id == "dish_some")  # the most specific template wins
    assert not some.y.startswith("some ")


def test_release_defects_are_fixed_and_counted_never_dropped_silently(spec, tmp_path):
    def row(id_, stem, gold="never"):
        return {"id": id_, "answerKey": "A", "question": {"stem": stem, "choices": [
            {"label": "A", "text": gold}, *({"label": "BCDE"[i], "text": w} for i, w in
                                            enumerate(w for w in WORDS if w != gold))]}}

    train = [row("1", "A cat [MASK] has a horn . "),  # trailing space
             row("1", "A dog [MASK] has a  horn ."),  # duplicate id, double space
             row("3", "A cat [MASK] has a horn ."),  # exact duplicate of the first
             row("4", "A niddle is [MASK] larger than a cat .", "rarely"),  # typo
             row("5", "A cow [MASK] flies to the moon ."),  # no template
             row("6", "A pig [MASK] has a wing .", "never"), row("7", "A pig [MASK] has a wing .", "often"),
             row("8", "A hen [MASK] has a beak .", "always")]
    dev = [row("9", "A hen [MASK] has a beak .", "always")]  # also in train: kept in dev only
    files = {}
    for split, rows in (("train", train), ("dev", dev)):
        files[split] = tmp_path / f"{split}.jsonl"
        files[split].write_text("".join(json.dumps(r) + "\n" for r in rows))
    gold, report = annotations.parse_release(files, spec, {"niddle": "needle"})
    assert {g.key: (g.gold, g.split) for g in gold} == {
        ("has_part", "cat", "horn"): ("never", "train"), ("has_part", "dog", "horn"): ("never", "train"),
        ("larger", "needle", "cat"): ("rarely", "train"), ("has_part", "hen", "beak"): ("always", "dev")}
    assert report["spaces_fixed"] == 2 and report["duplicate_ids"] == 1 and report["word_fixes"] == {
        "niddle -> needle": 1}
    assert report["exact_duplicates"] == 2  # the cat row and the hen row of train
    assert (report["unmatched"], report["conflicting_statements"], report["conflicting_rows"],
            report["in_train_and_dev"]) == (1, 1, 2, 1)
    assert len(report["left_out"]) == 3 and f"{files['train']}:5: matches no template" in report["left_out"][0]
    # the same defects per split, each in the split of the row it concerns (what the fidelity report adds)
    assert report["by_split"] == {
        "train": {"stray spaces fixed": 2, "word fixed (niddle -> needle)": 1, "matches no template (left out)": 1,
                  "duplicate statement (extra row dropped)": 1, "statement with conflicting gold (row left out)": 2,
                  "statement also in dev (train row dropped)": 1},
        "dev": {}}
    rows = {split: read_jsonl(path) for split, path in files.items()}
    assert annotations.parse_release_rows(rows, spec, {"niddle": "needle"})[1]["by_split"] == report["by_split"]


def test_release_problems_counts_what_generation_fixes_per_split():
    rows = {split: read_jsonl(path) for split, path in RELEASE.items()}
    assert always_never.release_problems(rows) == {"train": Counter({"word fixed (tune -> tuna)": 7}),
                                                   "dev": Counter({"word fixed (tune -> tuna)": 2})}


def test_fidelity_report_counts_the_release_defects_generation_fixes(tmp_path):
    manifest = tmp_path / "raw/sources.yaml"
    manifest.parent.mkdir()
    manifest.write_text((REPO / "raw/sources.yaml").read_text())
    assert main(["sources", "fetch", "olmpics", "--manifest", str(manifest), "--mirror", str(MIRROR)]) == 0
    params = tmp_path / "p.yaml"
    params.write_text(yaml.safe_dump({"always_never": {"release": RELEASE, "variants": ["original"]}}))
    assert main(["generate", "always_never", "--params", str(params), "--manifest", str(manifest),
                 "--out", str(tmp_path / "probes/always_never")]) == 0
    out = tmp_path / "fidelity.md"
    assert main(["fidelity", "--probes", str(tmp_path / "probes"), "--manifest", str(manifest),
                 "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())["always_never"]
    assert {s: r["release"]["problems"] for s, r in report.items()} == {
        "train": {"word fixed (tune -> tuna)": 7}, "dev": {"word fixed (tune -> tuna)": 2}}
    assert {s: r["ours"]["problems"] for s, r in report.items()} == {"train": {}, "dev": {}}
    assert "word fixed (tune -> tuna): 2" in out.read_text()


# --- the probe built from the annotations ------------------------------------------------------------------


def test_every_row_keeps_its_annotation_and_its_release_split(built, spec):
    original = built.variants["original"]
    assert {s: len(r) for s, r in original.items()} == {"train": 1004, "dev": 280}
    for split, rows in original.items():
        for r in rows:
            assert always_never.rule(r) is None, r
            template = spec.templates[r["template_id"]]
            assert set(r["args"]) == {"x", "y"} and r["question"]["stem"] == template.fill(r["args"])
            assert r["facts"]["kind"] == "release" and r["facts"]["source"] == RELEASE[split]
            assert sorted(c["text"] for c in r["question"]["choices"]) == sorted(WORDS)
    ids = [r["id"] for rows in built.variants.values() for s in rows.values() for r in s]
    assert len(ids) == len(set(ids)) == 3 * 1284
    labels = Counter(answer_text(r) for rows in original.values() for r in rows)
    shares = {w: labels[w] / 1284 for w in WORDS}
    # found: never .243, rarely .102, sometimes .350, often .073, always .232 (paper: 24/10/34/7/23 %)
    assert all(abs(shares[w] - PAPER[w]) < 0.015 for w in WORDS), shares


def test_controls(built):
    nolang, perturbed = built.variants["nolang"]["dev"], built.variants["perturbed"]["dev"]
    originals = {r["id"]: r for r in built.variants["original"]["dev"]}
    mapping = dict(zip(WORDS, ("blah", "ya", "foo", "snap", "woo")))
    for n, p in zip(nolang, perturbed):
        o = originals[n["source_id"]]
        kept = " ".join(always_never._spec().templates[o["template_id"]].nolang)   # the word that names the relation
        x, y = o["args"]["x"], o["args"]["y"]
        assert n["question"]["stem"] == (f"{x} {MASK} {y} {kept}" if o["template_id"] == "diet" else
                                         f"{x} {MASK} {kept} {y}")
        assert answer_text(n) == mapping[answer_text(o)]
        assert p["args"] == o["args"] and answer_text(p) == answer_text(originals[p["source_id"]])
    dish = next(p for p in perturbed if p["template_id"] == "dish")["question"]["stem"]
    assert " dish " not in dish and " contains " not in dish
    assert set(dish.split()) & set(PAPER_NONSENSE_WORDS)


def test_rule_catches_rows_the_annotations_do_not_back(built):
    row = json.loads(json.dumps(built.variants["original"]["train"][0]))
    other = next(w for w in WORDS if w != answer_text(row))
    wrong_gold = json.loads(json.dumps(row))
    wrong_gold["answerKey"] = next(c["label"] for c in row["question"]["choices"] if c["text"] == other)
    assert "the annotation says" in always_never.rule(wrong_gold)
    moved = json.loads(json.dumps(row))
    moved["args"]["x"] = "unicorn"
    assert "stem is not the template filled" in always_never.rule(moved)
    moved["question"]["stem"] = spec_fill(moved)
    assert "annotation at" in always_never.rule(moved)  # the release line it names says something else
    assert "no facts" in always_never.rule({k: v for k, v in row.items() if k != "facts"})
    nolang = built.variants["nolang"]["train"][0]
    assert "is not one of" in always_never.rule(nolang)


def spec_fill(row):
    return always_never._spec().templates[row["template_id"]].fill(row["args"])


# --- export, workers, import ---------------------------------------------------------------------------------


ANSWERS = {  # worker -> answers to the statements A B C D (None: left blank)
    "w1": ["never", "never", "always", "often"],
    "w2": ["never", "rarely", "always", None],
    "w3": ["rarely", "sometimes", "Always ", None],  # B: 1-1-1, a tie; answer words in any case
}
NEW = [("has_part", "unicorn", "horn"), ("larger", "unicorn", "horse"), ("placed", "sofa", "kitchen"),
       ("diet", "grass", "unicorn")]


def workers(tmp_path, statements: Path) -> list[Path]:
    lines = statements.read_text().splitlines()
    files = []
    for worker, answers in ANSWERS.items():
        path = tmp_path / f"{worker}.csv"
        body = [lines[0]] + [line + (a or "") for line, a in zip(lines[1:], answers)]  # worker column empty
        path.write_text("\n".join(body) + "\n")
        files.append(path)
    return files


def test_export_import_round_trip(spec, tmp_path):
    candidates = tmp_path / "candidates.csv"
    candidates.write_text("template_id,x,y,type\n" + "".join(f"{t},{x},{y},IsA\n" for t, x, y in NEW)
                          + "has_part,lizard,wing,IsA\nhas_part,unicorn,horn,IsA\n")  # annotated; repeated
    params = params_of(spec)
    stats = crowd_tasks.export(spec, annotations.read_candidates(candidates, spec), tmp_path / "statements.csv",
                               always_never.annotated_keys(spec, params))
    assert stats == {"written": 4, "by_template": {"has_part": 1, "larger": 1, "placed": 1, "diet": 1},
                     "already_annotated": 1, "repeated": 1}
    text = (tmp_path / "statements.csv").read_text().splitlines()
    assert text[0] == "template_id,x,y,statement,worker,answer"
    assert text[1:] == ["has_part,unicorn,horn,A unicorn has a horn.,,", "larger,unicorn,horse,A unicorn is larger "
                        "than a horse.,,", "placed,sofa,kitchen,sofa is placed in the kitchen.,,",
                        "diet,grass,unicorn,grass is part of a unicorn's diet.,,"]

    result = crowd_tasks.import_answers(workers(tmp_path, tmp_path / "statements.csv"), spec)
    assert [(g.key, g.gold, g.n_workers, g.agreement) for g in result.gold] == [
        (("diet", "grass", "unicorn"), "often", 1, 1.0),
        (("has_part", "unicorn", "horn"), "never", 3, 0.6667),
        (("placed", "sofa", "kitchen"), "always", 3, 1.0)]
    assert result.ties == [NEW[1]]
    s = result.stats
    assert (s["answers"], s["blank"], s["workers"], s["gold"], s["ties"]) == (10, 2, 3, 3, 1)
    assert s["mean_agreement"] == 0.8333  # (2/3 + 1) / 2, the tie has no majority to agree with
    assert s["fleiss_kappa"] == round(13 / 58, 4)  # by hand over the three statements with 3 workers
    assert crowd_tasks.aggregate(crowd_tasks.read_answers(workers(tmp_path, tmp_path / "statements.csv"), spec)[0],
                                 min_workers=2).too_few == [NEW[3]]

    gold_csv = tmp_path / "gold.csv"
    crowd_tasks.write_gold(result.gold, gold_csv)
    assert [g.key for g in annotations.read_gold(gold_csv, spec)] == [g.key for g in result.gold]
    # the gold goes into the probe: the new statements appear, the release's stay as they were
    store, report = always_never.annotation_store(spec, params_of(spec, annotations=[str(gold_csv)]))
    assert len(store) == 1284 + 3 and report["annotations"] == {str(gold_csv): {"new": 3}}
    built = build_probe("always_never", ParamsFile(Path("x.yaml"), {"always_never": {
        "seed": 13, "release": RELEASE, "annotations": [str(gold_csv)], "variants": ["original"]}}))
    rows = [r for split in built.variants["original"].values() for r in split]
    new = [r for r in rows if r["facts"]["kind"] == "annotations"]
    assert len(rows) == 1287 and {(r["template_id"], r["args"]["x"], r["args"]["y"]) for r in new} == {
        g.key for g in result.gold}
    assert all(always_never.rule(r) is None for r in new)
    assert new[0]["facts"]["source"] == str(gold_csv) and new[0]["facts"]["n_workers"] in (1, 3)


@pytest.mark.parametrize("edit, message", [
    (lambda lines: lines[:2] + ["has_part,unicorn,horn,A unicorn has a horn.,w9,sometime"],
     "{path}:3: answer 'sometime' is not one of never, rarely, sometimes, often, always"),
    (lambda lines: [lines[0].replace(",answer", "")] + [l.rsplit(",", 1)[0] for l in lines[1:]],
     "{path}:1: missing column(s) ['answer']"),
    (lambda lines: lines + [lines[1]], "{path}:6: worker 'w1' already answered this statement (at {path}:2)"),
    (lambda lines: lines[:1] + ["nope,a,b,,w1,never"], "{path}:2: unknown template_id 'nope'"),
    (lambda lines: lines[:1] + ["has_part,unicorn,horn,A unicorn has a tail.,w1,never"],
     "{path}:2: statement 'A unicorn has a tail.' is not what template 'has_part' says now"),
])
def test_bad_answer_files_name_file_and_line(spec, tmp_path, edit, message):
    crowd_tasks.export(spec, NEW, tmp_path / "statements.csv")
    path = workers(tmp_path, tmp_path / "statements.csv")[0]
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")
    with pytest.raises(DataError) as err:
        crowd_tasks.import_answers([path], spec)
    assert message.format(path=path) in str(err.value)


def test_cli_export_and_import(spec, tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"always_never": {"release": RELEASE}}))
    candidates = tmp_path / "candidates.csv"
    candidates.write_text("template_id,x,y\n" + "".join(f"{t},{x},{y}\n" for t, x, y in NEW)
                          + "has_part,lizard,wing\n")
    out = tmp_path / "statements.csv"
    assert main(["annotate", "export", "--candidates", str(candidates), "--out", str(out),
                 "--params", str(params)]) == 0
    assert "wrote 4 statement(s) to annotate" in capsys.readouterr().out
    gold = tmp_path / "gold.csv"
    assert main(["annotate", "import", *map(str, workers(tmp_path, out)), "--out", str(gold)]) == 0
    printed = capsys.readouterr().out
    assert "3 with gold, 1 tie(s)" in printed and "mean agreement with the majority 0.833" in printed
    assert "Fleiss' kappa 0.224" in printed and gold.read_text().startswith(",".join(annotations.GOLD_COLUMNS))
    bad = tmp_path / "bad.csv"
    bad.write_text("template_id,x,y,statement,worker,answer\nhas_part,cat,horn,,w1,nope\n")
    assert main(["annotate", "import", str(bad), "--out", str(tmp_path / "g2.csv")]) == 1
    assert capsys.readouterr().err.startswith(f"probes annotate: error: {bad}:2: answer 'nope' is not one of")
    assert main(["annotate", "export", "--probe", "age_comparison", "--candidates", str(candidates),
                 "--out", str(out), "--all"]) == 2
    assert "takes no human annotations" in capsys.readouterr().err


# --- a new template: exported for annotation, absent from the dataset ------------------------------------


def test_new_template_is_exported_and_not_generated(spec, built, tmp_path):
    raw = yaml.safe_load(generators.get("always_never").template_path.read_text())
    raw["templates"].append({"id": "cheaper", "text": "A {x} is [MASK] cheaper than a {y} .", "slots": ["x", "y"],
                             "answers": {w: w for w in WORDS}, "perturb": ["cheaper"]})
    path = tmp_path / "always_never.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    new_spec = load_probe_spec(path)
    candidates = tmp_path / "candidates.csv"
    candidates.write_text("template_id,x,y\ncheaper,car,bike\ncheaper,pen,boat\nlarger,beaver,mouse\n")
    params = params_of(new_spec, candidates=[str(candidates)])
    keys = annotations.read_candidates(candidates, new_spec)
    stats = crowd_tasks.export(new_spec, keys, tmp_path / "s.csv", always_never.annotated_keys(new_spec, params))
    assert stats["by_template"] == {"cheaper": 2} and stats["already_annotated"] == 1
    store, report = always_never.annotation_store(new_spec, params)
    assert report["templates"]["cheaper"] == {"train": 0, "dev": 0, "unannotated": 2}
    assert report["templates"]["larger"]["unannotated"] == 0
    assert any("template cheaper: annotated train 0, dev 0, 2 candidate(s) unannotated" in line
               for line in always_never.describe(report))
    rows = generators.get("always_never").fn(new_spec, new_spec.variants["original"], params, {})
    assert rows == built.variants["original"]  # the annotated part as before, nothing of the new template


# --- statements drawn from ConceptNet types (probes annotate export without --candidates) -----------------


def edges(*triples) -> pd.DataFrame:
    return pd.DataFrame([{"relation": r, "head": h, "tail": t, "weight": 1.0, "source": "test"}
                         for h, r, t in triples])


SMALL = edges(("cat", "IsA", "animal"), ("dog", "IsA", "animal"), ("puppy", "IsA", "dog"),  # puppy: 2 hops
              ("sea lion", "IsA", "animal"),  # two words
              ("zyzzyva", "IsA", "animal"),  # too rare for wordfreq
              ("this", "IsA", "animal"),  # too frequent: a function word
              ("tail", "IsA", "body part"), ("leg", "IsA", "body part"), ("beak", "IsA", "organ"),
              ("cow", "AtLocation", "animal"),  # not IsA
              ("sofa", "IsA", "furniture"))


def draw(spec, annotated=(), **export):
    """Candidates of SMALL with types declared for has_part and larger only (not the YAML's types)."""
    types = {"has_part": {"x": "animal", "y": "body part"}, "larger": {"x": ["animal"], "y": ["animal"]}}
    params = params_of(spec).model_copy(update={"export": always_never.ExportParams(types=types, **export)})
    return always_never.export_candidates(spec, params, {"conceptnet": {"edges": SMALL}}, annotated)


def test_candidates_from_a_small_edges_table(spec, tmp_path):
    keys, report = draw(spec, annotated={("has_part", "cat", "tail"), ("larger", "cow", "cat")})
    assert keys == [("has_part", "cat", "leg"), ("has_part", "dog", "leg"), ("has_part", "dog", "tail"),
                    ("larger", "cat", "dog"), ("larger", "dog", "cat")]  # x != y; the annotated one left out
    assert report["has_part"] == {"types": {"x": ["animal"], "y": ["body part"]}, "x_words": 2, "y_words": 2,
                                  "pairs": 4, "drawn": 3, "skipped_annotated": 1, "annotated": 1, "typed": 1,
                                  "in_pools": 1}
    assert report["larger"]["pairs"] == 2 and (report["larger"]["typed"], report["larger"]["annotated"]) == (0, 1)
    assert report["dish"] == {"types": None, "annotated": 0}  # this params file declares no types for it
    stats = crowd_tasks.export(spec, keys, tmp_path / "s.csv")
    assert stats["written"] == 5
    assert (tmp_path / "s.csv").read_text().splitlines()[1:] == [
        "has_part,cat,leg,A cat has a leg.,,", "has_part,dog,leg,A dog has a leg.,,",
        "has_part,dog,tail,A dog has a tail.,,", "larger,cat,dog,A cat is larger than a dog.,,",
        "larger,dog,cat,A dog is larger than a cat.,,"]

    two_hops = draw(spec, hops=2)[0]
    assert {k[1] for k in two_hops if k[0] == "has_part"} == {"cat", "dog", "puppy"}
    assert {k[1] for k in draw(spec, single_words=False, min_zipf=0, max_zipf=9)[0]} >= {
        "sea lion", "zyzzyva", "this"}
    one = draw(spec, per_template=1, seed=5)[0]
    assert len(one) == 2 and one == draw(spec, per_template=1, seed=5)[0]  # seeded: the same draw again
    assert {draw(spec, per_template=1, seed=s)[0][0] for s in range(20)} == {k for k in draw(spec)[0]
                                                                             if k[0] == "has_part"}


@pytest.mark.parametrize("types, message", [
    ({"nope": {"x": "animal", "y": "animal"}}, "always_never.export.types: no template 'nope'"),
    ({"has_part": {"z": "animal"}},  # merged over the YAML's x and y
     "has_part: give the type(s) of exactly the slots ['x', 'y'], got ['x', 'y', 'z']"),
    ({"has_part": {"x": [], "y": "animal"}}, "has_part: empty type for slot(s) ['x']"),
])
def test_bad_export_types_name_the_template(spec, types, message):
    with pytest.raises(ParamsError) as err:
        params_of(spec, export={"types": types})
    assert message in str(err.value)


@pytest.mark.slow   # the mirror's ConceptNet table
def test_candidates_from_the_mirror_conceptnet_table(spec, source_tables):
    tables = {"conceptnet": source_tables("conceptnet")}
    params = params_of(spec)
    annotated = always_never.annotated_keys(spec, params)
    keys, report = always_never.export_candidates(spec, params, tables, annotated)
    assert keys == always_never.export_candidates(spec, params, tables, annotated)[0]  # deterministic
    assert len(keys) == len(set(keys)) == 7 * 200 and not set(keys) & annotated
    isa = tables["conceptnet"]["edges"].query("relation == 'IsA'")
    types_of = isa.groupby("head")["tail"].agg(set).to_dict()
    declared = params.export.types
    for tid, x, y in keys:
        assert x != y and " " not in x + y
        assert types_of[x] & set(declared[tid]["x"]) and types_of[y] & set(declared[tid]["y"]), (tid, x, y)
    # the declared types cover most of the release (the coverage the YAML's comments give)
    assert {t: (r["typed"], r["annotated"]) for t, r in report.items()} == {
        "has_part": (193, 333), "dish": (208, 232), "dish_some": (52, 82), "larger": (154, 219),
        "smaller": (92, 129), "diet": (107, 205), "placed": (54, 84)}
    again = always_never.export_candidates(spec, params_of(spec, export={"seed": 14}), tables, annotated)[0]
    assert again != keys and len(again) == len(keys)


def test_cli_export_draws_from_the_tables_without_candidates(spec, tmp_path, capsys):
    loaders.write_tables(loaders.Loaded({"edges": SMALL}), tmp_path / "tables/conceptnet")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"always_never": {"release": RELEASE, "export": {
        "types": {"has_part": {"x": "animal", "y": "body part"}}}}}))
    out = tmp_path / "statements.csv"
    args = ["annotate", "export", "--out", str(out), "--params", str(params)]
    assert main(args + ["--tables", str(tmp_path / "tables")]) == 0
    printed = capsys.readouterr().out  # the params file's types for has_part over the YAML's for the rest
    assert "wrote 8 statement(s) to annotate to" in printed and "(has_part 4, larger 2, smaller 2)" in printed
    assert "has_part: x animal (2 words), y body part (2 words): drew 4 of 4 pairs, skipping 0 annotated; the " \
           "declared types cover 0 of its 333 annotated statement(s)" in printed
    assert "placed: x furniture (1 words), y room | area (0 words): drew 0 of 0 pairs" in printed
    assert out.read_text().splitlines()[1:6] == [
        "has_part,cat,leg,A cat has a leg.,,", "has_part,cat,tail,A cat has a tail.,,",
        "has_part,dog,leg,A dog has a leg.,,", "has_part,dog,tail,A dog has a tail.,,",
        "larger,cat,dog,A cat is larger than a dog.,,"]
    assert main(args + ["--tables", str(tmp_path / "none")]) == 1
    assert f"{tmp_path / 'none' / 'conceptnet'}: no tables here" in capsys.readouterr().err
