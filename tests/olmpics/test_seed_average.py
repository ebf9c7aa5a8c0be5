"""WS, MAX and language sensitivity are statistics of the seed-averaged learning curve (oLMpics §3.2: "report
average accuracy across seeds"; MAX "the maximal accuracy on the learning curve"), computed by hand on a curve
whose seeds peak at different N, and read the same way by metrics.json, MC-QA, the report, its paired tests and
medals, and a grid's summary and report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evaluators.grid import report as grid_report
from evaluators.grid import store as grid_store
from evaluators.grid.plan import CELL, RESULT, Cell, Planned
from evaluators.olmpics import learning_curve as lc
from evaluators.olmpics import metrics
from evaluators.olmpics import results as olmpics_results
from evaluators.olmpics.report import write_olmpics_report
from evaluators.shared.report import iter_metrics
from probekit.outputs.atomic import write_json, write_jsonl

N_DEV, SIZES, SEEDS = 20, [62, 125], [1, 2]
W = np.array([0.23, 0.2]) / 0.43
# [seeds, sizes]: seed 1 peaks at N=62, seed 2 at N=125
FULL = [[0.8, 0.6], [0.5, 0.9]]
NOLANG = [[0.9, 0.5], [0.4, 0.8]]
FLAT = [[0.5, 0.5], [0.5, 0.5]]
# by hand: the mean curve is (0.65, 0.75), so MAX = 0.75 at N=125; the mean of the seeds' maxima is 0.85
MAX, MEAN_OF_MAXIMA = 0.75, (0.8 + 0.9) / 2
WS = (0.23 * 0.65 + 0.2 * 0.75) / 0.43  # = the mean of the per-seed WS (linear)
# NO-LANG's mean curve is (0.65, 0.65): max(0, (0, 0.1)); per seed first: (0, 0.1) and (0.1, 0.1)
SENSITIVITY, MEAN_OF_PER_SEED = 0.2 * 0.1 / 0.43, (0.2 * 0.1 / 0.43 + 0.1) / 2


def correctness(accs) -> np.ndarray:
    """``[sizes, seeds, examples]`` outcomes (as the evaluators hold them), the first ``acc · N_DEV`` correct."""
    return np.array([[np.arange(N_DEV) < round(a * N_DEV) for a in seed] for seed in accs]).transpose(1, 0, 2)


def chosen(accs) -> np.ndarray:
    """The choices that give :func:`correctness` (the gold is choice A, position 0; a wrong answer is B)."""
    return np.where(correctness(accs), 0, 1)


def write_curve(out: Path, data: Path, model: str, probe: str, protocol: str, accs, *, nolang=None,
                baseline: str | None = None) -> dict:
    """A curve's result folder written by the evaluators' own writer (``learning_curve.write_results``)."""
    variants, correct = {}, {}
    for name, a in (("original", accs), ("nolang", nolang)):
        if a is None:
            continue
        folder = data / probe / name
        rows = [{"id": f"{name}{i}", **({"source_id": f"original{i}"} if name != "original" else {}),
                 "question": {"stem": "x [MASK] y", "choices": [{"label": "A", "text": "a"},
                                                                {"label": "B", "text": "b"}]},
                 "answerKey": "A"} for i in range(N_DEV)]
        write_jsonl(folder / "dev.jsonl", rows)
        write_json(folder / "meta.json", {"probe": probe, "variant": name, "fingerprint": f"{probe}-{name}"})
        variants[name] = {"train": [], "dev": rows, "path": folder / "dev.jsonl"}
        correct[name] = chosen(a)
    setting = "MC-QA" if protocol == "MC-QA" else "MLP"
    header = {"protocol": protocol, "setting": setting, "model": model, "baseline": baseline,
              "lm_head": None if baseline or protocol == "MC-QA" else "pretrained", "split": "dev"}
    return lc.write_results(out, variants=variants, predicted=correct, zero_shot=dict.fromkeys(variants), sizes=SIZES,
                            dropped=[], seeds=SEEDS, subsets={}, header=header)


def test_the_statistics_by_hand():
    acc = np.array(FULL)
    assert metrics.curve_max(acc) == pytest.approx(MAX) and MAX != pytest.approx(MEAN_OF_MAXIMA)
    assert metrics.max_summary(acc, SIZES) == {"value": pytest.approx(MAX), "at_n": 125,
                                               "per_seed": pytest.approx([0.8, 0.9])}
    assert metrics.curve_ws(acc) == pytest.approx(WS) == np.mean(metrics.weighted_score(acc))
    assert metrics.ws_summary(acc)["std"] == pytest.approx(np.std(metrics.weighted_score(acc), ddof=1))
    assert metrics.curve_sensitivity(acc, np.array(NOLANG)) == pytest.approx(SENSITIVITY)
    assert SENSITIVITY != pytest.approx(MEAN_OF_PER_SEED)
    assert np.mean(metrics.sensitivity(acc, np.array(NOLANG))) == pytest.approx(MEAN_OF_PER_SEED)
    # vectorised over leading axes (the bootstrap's resamples): each row its own statistic
    assert metrics.curve_max(np.stack([acc, acc[::-1], np.array(FLAT)])).tolist() == pytest.approx([MAX, MAX, 0.5])


@pytest.mark.parametrize("protocol", ["MC-MLM", "MC-QA"])
def test_metrics_json_writes_the_statistics_of_the_mean_curve(tmp_path, protocol):
    m = write_curve(tmp_path / "out", tmp_path / "data", "m", "age", protocol, FULL, nolang=NOLANG)
    assert m["MAX"] == {"value": pytest.approx(MAX), "at_n": 125, "per_seed": pytest.approx([0.8, 0.9])}
    assert m["WS"]["value"] == pytest.approx(WS) and len(m["WS"]["per_seed"]) == 2
    assert m["sensitivity"]["nolang"]["value"] == pytest.approx(SENSITIVITY)
    assert np.mean(m["sensitivity"]["nolang"]["per_seed"]) == pytest.approx(MEAN_OF_PER_SEED)
    assert m["controls"]["nolang"]["MAX"]["value"] == pytest.approx(0.65)
    assert m["curve"]["125"]["mean"] == pytest.approx(0.75)  # the per-N curve keeps {mean, std, per_seed}
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["MAX"]["value"] == pytest.approx(MAX)


@pytest.fixture
def curves(tmp_path) -> Path:
    """age (MC-MLM): ``m`` with seeds peaking at different N, and an MLM-BASELINE at 50%; conj (MC-QA): ``m``."""
    root, data = tmp_path / "results", tmp_path / "data"
    write_curve(root / "m" / "age" / "mlp", data, "m", "age", "MC-MLM", FULL, nolang=NOLANG)
    write_curve(root / "base" / "age" / "mlp", data, "MLM-BASELINE", "age", "MC-MLM", FLAT, nolang=FLAT,
                baseline="MLM-BASELINE")
    write_curve(root / "m" / "conj" / "mcqa", data, "m", "conj", "MC-QA", FULL)
    return root


def test_the_report_and_its_paired_tests_use_the_mean_curve(curves, tmp_path):
    write_olmpics_report([curves], out_md=tmp_path / "r.md", out_json=tmp_path / "r.json", resamples=200)
    summary = json.loads((tmp_path / "r.json").read_text())
    for probe, setting in (("age", "MLP"), ("conj", "MC-QA")):
        cell = summary[probe]["m"][setting]
        assert cell["MAX"] == round(MAX, 4) and cell["MAX_at_n"] == 125 and "MAX_std" not in cell
        assert cell["MAX_low"] <= MAX <= cell["MAX_high"] and cell["WS"] == round(WS, 4)
    assert summary["age"]["m"]["MLP"]["nolang"] == round(SENSITIVITY, 4)
    assert "| 75.0 [" in next(line for line in (tmp_path / "r.md").read_text().splitlines()
                              if line.startswith("| m "))
    probes = olmpics_results.analyse([olmpics_results.load(p, m) for p, m in iter_metrics([curves])],
                                     resamples=200)
    age = next(p for p in probes if p.title == "age")
    assert age.vs_baseline["m", "MLP", "MAX"]["diff"] == pytest.approx(MAX - 0.5)  # not 0.85 − 0.5
    assert age.vs_baseline["m", "MLP", "WS"]["diff"] == pytest.approx(WS - 0.5)
    # the bootstrap recomputes the whole statistic on each resample: the max over N of the seeds' mean
    r = age.results["m"]["MLP"]
    idx = np.random.default_rng(1).integers(0, N_DEV, size=(5, N_DEV))
    by_hand = [max(np.mean([r.correct[s, k, rows].mean() for s in range(2)]) for k in range(2)) for rows in idx]
    drawn = np.stack([np.bincount(rows, minlength=N_DEV) for rows in idx])   # how often each example is drawn
    assert olmpics_results.curve_statistics(r.correct)["MAX"](drawn) == pytest.approx(by_hand)
    # medals: WS 19.7 points above the baseline's, but no zero-shot above chance (MC-MLM): partial
    assert age.medals["m"] == "✓–"


def test_a_grid_summary_and_report_read_the_values(curves, tmp_path):
    store = tmp_path / "store"
    plans = []
    for i, folder in enumerate(sorted({p.parent for p in curves.rglob("metrics.json")})):
        plan = Planned(f"k{i}", Cell("curve", folder.parts[-3], str(tmp_path / "data" / folder.parts[-2]),
                                     (("setting", folder.name),)), False)
        (store / "cells" / plan.key).mkdir(parents=True)
        folder.rename(store / "cells" / plan.key / RESULT)
        write_json(store / "cells" / plan.key / CELL, {"key": plan.key, **plan.cell.record()})
        plans.append(plan)
    rows = grid_store.summary(plans, store, [])
    maxima = sorted(r["metrics"]["."]["MAX"] for r in rows)
    assert maxima == pytest.approx([0.5, MAX, MAX]) and MEAN_OF_MAXIMA not in maxima
    assert all(r["metrics"]["."]["WS"] == pytest.approx(WS) for r in rows if r["metrics"]["."]["MAX"] > 0.5)
    grid_report.write(plans, store)
    report = json.loads((store / "report.json").read_text())
    assert report["age"]["m"]["MLP"]["MAX"] == round(MAX, 4) and report["conj"]["m"]["MC-QA"]["MAX_at_n"] == 125
