"""The report stage: table, dvc metrics, bar plot, and the pair heatmaps, from results the test writes."""

from __future__ import annotations

import json
from pathlib import Path

from evaluators import heatmap, report
from probekit.atomic import write_json, write_jsonl


def fake_result(root: Path, data_root: Path, model: str, variant: str, zero_shot: bool, pairs, predict):
    data = data_root / variant / "dev.jsonl"
    rows, predictions = [], []
    for n, (a, b) in enumerate(pairs):
        choices = [{"label": "A", "text": "younger"}, {"label": "B", "text": "older"}]
        rows.append({"id": f"{variant}{n}", "question": {"stem": "…", "choices": choices},
                     "answerKey": "A" if a < b else "B", "args": {"age1": a, "age2": b}})
        label = predict(a, b)
        predictions.append({"id": f"{variant}{n}", "scores": [0.0, 0.0], "prediction": label,
                            "gold": rows[-1]["answerKey"], "correct": label == rows[-1]["answerKey"]})
    write_jsonl(data, rows)
    out = root / model / "age_comparison" / variant
    write_jsonl(out / "predictions.jsonl", predictions)
    accuracy = sum(p["correct"] for p in predictions) / len(predictions)
    write_json(out / "metrics.json", {"model": model, "probe": "age_comparison", "variant": variant, "n": len(rows),
                                      "accuracy": accuracy, "chance": 0.5, "zero_shot": zero_shot,
                                      "data": str(data)})
    return accuracy


def test_report_and_heatmaps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pairs = [(a, b) for a in range(15, 20) for b in range(15, 20) if a != b]
    results = tmp_path / "results"
    acc = fake_result(results, Path("data"), "m1", "original", True, pairs, lambda a, b: "A" if a < b else "B")
    fake_result(results, Path("data"), "m1", "nolang", True, pairs, lambda a, b: "A")
    fake_result(results, Path("data"), "m2", "original", False, pairs, lambda a, b: "B")
    df = report.run([results], tmp_path / "report.md", tmp_path / "metrics.json", tmp_path / "bars.png")
    assert acc == 1.0 and len(df) == 3
    table = (tmp_path / "report.md").read_text()
    assert "| m1      | age_comparison | 1.000      | 0.500    |" in table
    assert "| m2      | age_comparison | 0.500 †    | –        |" in table
    assert "† the model's MLM head was newly initialised" in table
    assert json.loads((tmp_path / "metrics.json").read_text()) == {
        "m1": {"age_comparison": {"original": 1.0, "nolang": 0.5}}, "m2": {"age_comparison": {"original": 0.5}}}
    assert (tmp_path / "bars.png").read_bytes()[:4] == b"\x89PNG"

    panels = heatmap.pair_panels([results])
    original = next(p for p in panels["m1"] if p["title"] == "age_comparison/original")
    assert original["words"] == ["older", "younger"]
    assert sorted(original["points"]) == sorted((a, b, "younger" if a < b else "older") for a, b in pairs)
    written = heatmap.run([results], tmp_path / "heatmaps")
    assert [p.name for p in written] == ["m1.png", "m2.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)
