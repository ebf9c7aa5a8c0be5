"""oLMpics Table 4 (RoBERTa-L's zero-shot size comparison over pairs of objects): the published matrix read from the
paper's text, the probe built with `matrix` (every ordered pair, the gold from the order), the report of a
model's predictions beside the paper's through `probes report --size-matrix`, and the profiles' stages."""

from __future__ import annotations

import json

import pytest

from evaluators.olmpics.report import load_published
from probekit.errors import ParamsError
from probekit.outputs.atomic import write_json, write_jsonl

from helpers import MIRROR, build_section
from test_params_profiles import _stages, compose

PAPER = MIRROR.parent / "papers" / "001_b1f53a5673822d0a.txt"
OBJECTS = ["nail", "pen", "laptop", "table", "house", "airplane", "city", "sun"]
GRID = {"mode": "grid", "matrix": OBJECTS, "variants": ["original"]}   # conf/config.yaml's objects_comparison_grid


def test_the_published_matrix_is_the_papers_text():
    """The text prints the objects twice (the table's two axes), then the 56 cells column by column (the Spanish
    translation writes "larger" as "más grande", "table" as "mesa"), then the caption. Read so, the paper's prose
    holds: right below the diagonal (larger) and above it (smaller) but near it and against "sun", 47 of 56."""
    assert PAPER.is_file(), f"the oLMpics paper's text is not at {PAPER}"
    text = PAPER.read_text(encoding="utf-8")
    block = text.split("Accuracy over five answer candidates (aleatorio\nes 20%).\n", 1)[1].split("Mesa 4:", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    named = [("table" if w == "mesa" else w) for w in lines[:16]]
    assert named == OBJECTS * 2
    words = [{"más grande": "larger", "smaller": "smaller"}[w] for w in lines[16:]]
    assert len(words) == 56 and "Mesa 4: ROBERTA-L Zero-shot SIZE COMP." in text
    table = load_published()["table4"]
    assert table["objects"] == OBJECTS and table["model"] == "RoBERTa-L" and list(table["rows"]) == OBJECTS
    columns = iter(words)
    for j, obj2 in enumerate(OBJECTS):
        for i, obj1 in enumerate(OBJECTS):
            if i != j:
                assert table["rows"][obj1][j] == next(columns), (obj1, obj2)
    assert all(table["rows"][o][k] is None for k, o in enumerate(OBJECTS))
    right = [(table["rows"][a][j] == "larger") == (i > j) for i, a in enumerate(OBJECTS) for j in range(8) if i != j]
    assert sum(right) == 47 and "de 84% acc. in the zero-shot setup" in text
    assert all(table["rows"][a][7] == "larger" for a in ("table", "house", "airplane", "city"))   # against "sun"


def test_the_probe_with_a_matrix_is_every_ordered_pair_and_the_default_keeps_its_bytes():
    built = build_section("objects_comparison", GRID, {})
    assert list(built.variants) == ["original"]
    assert list(built.variants["original"]) == ["dev"]   # no train split (an empty file stops the lm-eval export)
    dev = built.variants["original"]["dev"]
    assert len(dev) == 56
    assert [(r["args"]["obj1"], r["args"]["obj2"]) for r in dev] == [
        (a, b) for a in OBJECTS for b in OBJECTS if a != b]
    for r in dev:
        gold = next(c["text"] for c in r["question"]["choices"] if c["label"] == r["answerKey"])
        rank = r["facts"]["rank"]
        assert gold == ("larger" if rank["obj1"] > rank["obj2"] else "smaller") and r["facts"]["matrix"] == OBJECTS
        assert r["question"]["stem"] == (f"The size of a {r['args']['obj1']} is usually much [MASK] than the size of a "
                                         f"{r['args']['obj2']} .")
    from generators.objects_comparison.params import MATRIX, ObjectsParams

    assert list(MATRIX) == OBJECTS
    fields = {"seed": 13, "size": {"train": 1, "dev": 1}, "object_lexnames": ["noun.artifact"]}
    assert not {"mode", "matrix"} & set(ObjectsParams(**fields).model_dump())   # the sampled probe's meta.json: as before
    assert ObjectsParams(**fields, mode="grid", matrix=OBJECTS).model_dump()["matrix"] == OBJECTS
    with pytest.raises(ParamsError, match="distinct object names"):
        build_section("objects_comparison", {"mode": "grid", "matrix": ["pen", "sun", "pen"]}, {})
    with pytest.raises(ParamsError, match="mode grid builds the pairs of `matrix`"):
        build_section("objects_comparison", {"matrix": OBJECTS}, {})   # a matrix the sampled probe would not read


def test_the_grid_exports_beside_the_probe_as_its_own_config(tmp_path, monkeypatch):
    """data/ holds the sampled probe and Table 4's grid, as the pipeline lays them out (here the sampled probe's
    folder is the grid's with its meta.json's mode and matrix dropped, as a sampled build records neither): the
    Hub / lm-eval export names the grid `objects_comparison-grid` (role grid), not a second `objects_comparison`
    (the paper profile's rehearsal stopped at lm_eval_tasks on that)."""
    import shutil

    import yaml

    from probekit.hub.export import discover
    from probes.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"objects_comparison_grid": GRID}), encoding="utf-8")
    assert main(["generate", "objects_comparison", "--section", "objects_comparison_grid", "--params", "params.yaml",
                 "--out", "data/grids/objects_comparison"]) == 0
    shutil.copytree(tmp_path / "data/grids/objects_comparison", tmp_path / "data/probes/objects_comparison")
    meta_path = tmp_path / "data/probes/objects_comparison/original/meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    assert meta["params"]["mode"] == "grid" and meta["params"]["matrix"] == OBJECTS
    del meta["params"]["mode"], meta["params"]["matrix"]
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    configs = {c.name: c.role for c in discover(tmp_path / "data")}   # (the copied card keeps the grid's role)
    assert set(configs) == {"objects_comparison", "objects_comparison-grid"} and \
        configs["objects_comparison-grid"] == "grid"
    assert main(["export", "lm-eval", "--data", "data", "--out", "lm_eval"]) == 0   # the lm_eval_tasks stage


def _result(tmp_path, model: str, predict) -> None:
    """``probes evaluate zeroshot``'s files for ``model`` on the matrix probe: ``predict(obj1, obj2)`` -> word."""
    built = build_section("objects_comparison", GRID, {})
    rows = built.variants["original"]["dev"]
    data = tmp_path / "data" / "original" / "dev.jsonl"
    write_jsonl(data, rows)
    out = tmp_path / "results" / model / "objects_comparison" / "original"
    predictions = []
    for r in rows:
        label = {c["text"]: c["label"] for c in r["question"]["choices"]}[predict(r["args"]["obj1"],
                                                                                 r["args"]["obj2"])]
        predictions.append({"id": r["id"], "prediction": label, "gold": r["answerKey"],
                            "correct": label == r["answerKey"]})
    write_jsonl(out / "predictions.jsonl", predictions)
    write_json(out / "metrics.json", {"model": model, "probe": "objects_comparison", "variant": "original",
                                      "n": len(rows), "accuracy": sum(p["correct"] for p in predictions) / len(rows),
                                      "chance": 0.5, "zero_shot": True, "profile": "paper",
                                      "data": str(data.resolve())})


def test_the_report_lays_each_matrix_beside_the_papers(tmp_path, monkeypatch):
    """A model that predicts what RoBERTa-L printed agrees with the paper on all 56 cells (47 right); one that is
    always right agrees on 47 and is right on 56; the cells mark wrong words on both sides."""
    from probes.main import main

    paper = {(a, OBJECTS[j]): w for a, ws in load_published()["table4"]["rows"].items() for j, w in enumerate(ws) if w}
    _result(tmp_path, "like-paper", lambda a, b: paper[(a, b)])
    _result(tmp_path, "oracle", lambda a, b: "larger" if OBJECTS.index(a) > OBJECTS.index(b) else "smaller")
    monkeypatch.chdir(tmp_path)
    assert main(["report", "results", "--out", "report.md", "--size-matrix", "table4.md"]) == 0
    text = (tmp_path / "table4.md").read_text(encoding="utf-8")
    summary = json.loads((tmp_path / "table4.json").read_text(encoding="utf-8"))["matrices"]
    like, oracle = summary["like-paper/original"], summary["oracle/original"]
    assert (like["n"], like["right"], like["paper_right"], like["same_as_paper"]) == (56, 47, 47, 56)
    assert (oracle["n"], oracle["right"], oracle["paper_right"], oracle["same_as_paper"]) == (56, 56, 47, 47)
    assert {"obj1": "pen", "obj2": "nail", "gold": "larger", "prediction": "larger", "paper": "smaller"} in \
        oracle["cells"]
    section = text.split("## oracle", 1)[1]
    assert "| pen | L / S✗ | · | S / S | S / S | S / S | S / S | S / S | S / S |" in section
    assert "| table | L / L | L / L | L / L | · | S / S | S / L✗ | S / S | S / L✗ |" in section
    assert "Ours right: 56 of 56 (100%); the paper's right on the same pairs: 47 of 56 (84%); our word the " \
           "paper's: 47 of 56 (84%)." in section
    assert "| OBJ-1 \\ OBJ-2 | nail | pen | laptop | table | house | airplane | city | sun |" in text


def test_the_paper_profile_runs_table4_for_roberta_large_and_the_smoke_profile_for_its_model(tmp_path):
    _, paper = compose(tmp_path, "profile=paper")
    _, smoke = compose(tmp_path, "profile=smoke")
    assert paper["olmpics_table4"] == ["roberta-large"] and smoke["olmpics_table4"] == smoke["runs"]["olmpics"]
    assert paper["objects_comparison_grid"] == smoke["objects_comparison_grid"] == GRID
    stages = _stages(tmp_path, "paper")
    assert {s for s in stages if s.startswith("zeroshot_table4@")} == {"zeroshot_table4@roberta-large"}
    assert stages["zeroshot_table4@roberta-large"] == (
        "probes evaluate zeroshot --model roberta-large --data data/grids/objects_comparison --device auto "
        "--out results/table4/roberta-large/objects_comparison")
    assert stages["table4"] == ("probes report results/table4 --out results/table4_zeroshot.md "
                                "--size-matrix results/table4.md")
    from probes.rehearse import rehearsal_params   # a rehearsal runs Table 4 for its models, not RoBERTa-L

    assert rehearsal_params(paper, {"tiny": "/m/tiny"}, 4, "cpu")["olmpics_table4"] == ["tiny"]
    assert stages["generate-objects_grid"].startswith(
        "probes generate objects_comparison --section objects_comparison_grid --out data/grids/objects_comparison")
