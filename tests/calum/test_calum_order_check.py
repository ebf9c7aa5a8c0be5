"""The CALUM report's order check: a run whose REVERSE accuracy beats ``original`` by more than its interval (the
sign of an NLI task scored in the order it was not trained on) is flagged in results/calum.md and its JSON; a
run where REVERSE does not, or not clearly, is not. Results folders built here as ``probes evaluate calum`` writes
them: metrics.json and predictions.jsonl per run."""

from __future__ import annotations

import json

from evaluators.calum import metrics as calum_metrics
from evaluators.calum import report as calum_report

LABELS = ["entailment", "neutral", "contradiction"]


def _run(folder, name: str, right_original: float, right_reverse: float, shift: int = 0, n: int = 300,
         seeds=(1, 2), eval_order=None) -> None:
    """A single-task MNLI run whose predictions are right on a ``right_*`` share of the examples of each variant
    (REVERSE's right ones ``shift`` examples on from the original's), with test rows the check must leave out."""
    rows = []
    for seed in seeds:
        for i in range(n):
            gold = LABELS[i % 3]
            for variant, share, start in (("original", right_original, 0), ("reverse", right_reverse, shift),
                                          ("signal", right_original, 0)):
                guess = gold if (i - start) % n < round(share * n) else LABELS[(i + 1) % 3]
                rows.append({"seed": seed, "task": "mnli", "pair_id": f"mnli-dev_matched-{i}", "variant": variant,
                             "prediction": guess, "label": gold})
            rows.append({"seed": seed, "task": "mnli", "split": "test", "pair_id": f"mnli-test-{i}",
                         "variant": "reverse", "prediction": LABELS[0], "label": LABELS[0]})
    per_seed = [{"seed": s, **calum_metrics.consistency([r for r in rows if r["seed"] == s and "split" not in r])}
                for s in seeds]
    data = {"order": [2, 1]} | ({"eval_order": eval_order} if eval_order else {})
    m = {"protocol": "calum", "task": "mnli", "model": name, "model_id": f"{name}-id", "setting": "Single",
         "tasks_trained": ["mnli"], "split": "dev", "labels": LABELS, "capped": False, "data": {"mnli": data},
         **calum_metrics.over_seeds(per_seed), "majority": 1 / 3, "per_seed": per_seed}
    (folder / name).mkdir(parents=True)
    (folder / name / "metrics.json").write_text(json.dumps(m))
    (folder / name / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_run_scored_in_the_swapped_order_is_flagged_and_the_others_are_not(tmp_path):
    results = tmp_path / "calum"
    _run(results, "swapped", 0.45, 0.80, eval_order=[1, 2])   # trained hypothesis-first, scored premise-first
    _run(results, "in-order", 0.85, 0.62)                     # as the paper: REVERSE under original
    _run(results, "close", 0.60, 0.62, shift=30)              # REVERSE a little above, within its interval
    out = tmp_path / "calum.md"
    calum_report.write(results, out)
    text, summary = out.read_text(), json.loads(out.with_suffix(".json").read_text())
    flags = [line for line in text.splitlines() if line.startswith("**⚠ REVERSE above original**")]
    assert len(flags) == 1 and "swapped (REVERSE " in flags[0] and "in-order" not in flags[0]
    assert "close" not in flags[0] and "its dataset evaluates [1, 2], trained [2, 1]" in flags[0]
    checks = {run: summary["runs"][run]["order_check"] for run in ("swapped", "in-order", "close")}
    assert [checks[r]["swapped"] for r in ("swapped", "in-order", "close")] == [True, False, False]
    assert all(c["n"] == 300 for c in checks.values())   # the validation pairs; test and signal rows left out
    swapped = checks["swapped"]
    assert abs(swapped["accuracy_original"] - summary["runs"]["swapped"]["accuracy"]["mean"]) < 1e-9
    assert swapped["low"] > 0 and abs(swapped["diff"] - (swapped["accuracy_reverse"] - swapped["accuracy_original"])) < 1e-9
    assert checks["close"]["diff"] > 0 and checks["close"]["low"] <= 0 < checks["close"]["high"]
    assert checks["in-order"]["high"] < 0


def test_a_report_without_a_swapped_run_has_no_flag(tmp_path):
    results = tmp_path / "calum"
    _run(results, "in-order", 0.85, 0.62)
    out = tmp_path / "calum.md"
    calum_report.write(results, out)
    assert "REVERSE above original" not in out.read_text()
    assert json.loads(out.with_suffix(".json").read_text())["runs"]["in-order"]["order_check"]["swapped"] is False
