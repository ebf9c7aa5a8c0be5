"""The public predictions loader (evaluators.predictions): every layout found, answers beside their rows, a
control joined to its base."""

from __future__ import annotations

import json
import math

import pytest

from browse.toy_project import MODELS, VARIANTS, write_project
from evaluators.predictions import find_predictions, join_controls, load_predictions
from probekit.errors import UsageError


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    return root, write_project(root)


def test_every_layout_is_found_with_the_dataset_it_scored(project):
    root, _ = project
    files = find_predictions(root / "results", data=root / "data")
    kinds = sorted({(f.protocol, f.family) for f in files})
    assert kinds == [("calum", "calum"), ("curve", "mc"), ("pararel", "pararel"), ("zeroshot", "mc")]
    zs = [f for f in files if f.protocol == "zeroshot"]
    assert len(zs) == len(MODELS) * len(VARIANTS)
    assert all(f.data == root / "data" / "probes" / "toy" / f.variant / "dev.jsonl" for f in zs)
    curve = [f for f in files if f.protocol == "curve"]
    assert {f.data.parent.name for f in curve} == set(VARIANTS)


def test_answers_sit_beside_their_rows(project):
    root, truth = project
    frame = load_predictions(root / "results", data=root / "data", probe="toy", models=["alpha", "beta"])
    zs = frame[frame.protocol == "zeroshot"]
    assert len(zs) == len(MODELS) * len(VARIANTS) * len(truth["rows"]["original"])
    rows = {(r["variant"], r["id"]): r for v in VARIANTS for r in truth["rows"][v]}
    for rec in zs.itertuples():
        pick, correct, scores = truth["zeroshot"][(rec.variant, rec.run)][rec.id]
        row = rows[(rec.variant, rec.id)]
        assert rec.stem == row["question"]["stem"]
        assert rec.choices == [c["text"] for c in row["question"]["choices"]]
        assert rec.answer == rec.choices["ABC".index(row["answerKey"])]
        assert rec.predicted == rec.choices[pick] and rec.index == pick and rec.correct == correct
        gold = "ABC".index(row["answerKey"])
        assert rec.margin == pytest.approx(scores[gold] - max(s for i, s in enumerate(scores) if i != gold))
        assert rec.template == row["template_id"] and rec.args == row["args"]


def test_a_curve_file_holds_a_run_per_size_and_seed(project):
    root, truth = project
    frame = load_predictions(root / "results", data=root / "data", probe="toy", variant="perturbed")
    curve = frame[frame.protocol == "curve"]
    assert sorted(curve.run.unique()) == sorted(r for v, r in truth["curve"] if v == "perturbed")
    for rec in curve.itertuples():
        assert rec.index == truth["curve"][("perturbed", rec.run)][rec.id]
        assert math.isnan(rec.margin)   # the curves write no scores


def test_pararel_queries_and_calum_pairs(project):
    root, truth = project
    p = load_predictions(root / "results", data=root / "data", probe="pararel")
    assert {(r.id, r.predicted, r.correct) for r in p.itertuples()} == {(k, *v) for k, v in truth["pararel"].items()}
    assert set(p.group) == {"P17-1", "P17-2", "P17-3"}
    assert p.set_index("id").loc["P17-1/1", "stem"] == "Lyon, in [MASK]."
    right = p.set_index("id").loc["P17-1/0"]   # France at 2.0, the best other at 1.5
    assert right.margin == pytest.approx(0.5)
    c = load_predictions(root / "results", data=root / "data", probe="rte")
    assert set(c.run) == {"alpha-rte seed 1"}
    assert {(r.variant, r.id): (r.predicted, r.correct) for r in c.itertuples()} == truth["calum"]


def test_join_controls_pairs_each_control_with_its_base(project):
    root, truth = project
    frame = load_predictions(root / "results", data=root / "data", probe="toy", models=["alpha", "beta"])
    joined = join_controls(frame[frame.protocol == "zeroshot"], control="perturbed")
    assert len(joined) == len(MODELS) * len(truth["rows"]["original"])
    for rec in joined.itertuples():
        assert rec.source_id_control == rec.id_base
        assert rec.correct_base == truth["zeroshot"][("original", rec.run)][rec.id_base][1]
        assert rec.correct_control == truth["zeroshot"][("perturbed", rec.run)][rec.id_control][1]
    # the question of the issue: right on the original, wrong on PERTURBED, per model
    flips = joined[joined.correct_base & ~joined.correct_control]
    expected = {(m, b) for m in MODELS for b, (_, ok, _) in truth["zeroshot"][("original", m)].items()
                if ok and not truth["zeroshot"][("perturbed", m)]["p" + b[1:]][1]}
    assert set(zip(flips.run, flips.id_base)) == expected


def test_join_controls_refuses_what_is_not_a_control(project):
    root, _ = project
    frame = load_predictions(root / "results", data=root / "data", probe="toy", models=["alpha"])
    with pytest.raises(UsageError, match="no rows of the control 'shuffled'.*nolang, original, perturbed"):
        join_controls(frame, control="shuffled")
    with pytest.raises(UsageError, match="name no base"):
        join_controls(frame, control="original", base="perturbed")


def test_a_bad_predictions_line_names_the_file_and_line(tmp_path):
    write_project(tmp_path, n=4)
    bad = tmp_path / "results" / "zeroshot" / "alpha" / "toy" / "original" / "predictions.jsonl"
    bad.write_text(bad.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(UsageError, match=rf"{bad}:2: not JSON"):
        load_predictions(tmp_path / "results", data=tmp_path / "data", probe="toy")


def test_a_prediction_of_a_row_the_dataset_no_longer_has_is_an_error(tmp_path):
    write_project(tmp_path, n=4)
    data = tmp_path / "data" / "probes" / "toy" / "original" / "dev.jsonl"
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    rows[0]["id"] = "regenerated"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(UsageError, match="example b000 is not a row of .*the dataset changed"):
        load_predictions(tmp_path / "results", data=tmp_path / "data", probe="toy", variant="original")


def test_the_loader_example_of_docs_api_runs_as_written(tmp_path):
    import re
    import subprocess
    import sys
    from pathlib import Path

    truth = write_project(tmp_path)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    block = re.findall(r"```python\n(.*?)```", doc, re.S)[1]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lost = {m: {b for b, (_, ok, _) in truth["zeroshot"][("original", m)].items()
                if ok and not truth["zeroshot"][("perturbed", m)]["p" + b[1:]][1]} for m in MODELS}
    assert done.stdout == f"{len(lost['alpha'])} lost by alpha; {len(lost['alpha'] & lost['beta'])} by both\n"
