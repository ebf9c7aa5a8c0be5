"""The oLMpics report: Table 2 numbers with bootstrap intervals, paired tests, medals, plots, determinism."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from evaluators.olmpics import results as olmpics_results
from evaluators.olmpics.metrics import max_summary
from evaluators.olmpics.metrics import summary as seed_summary
from evaluators.olmpics.metrics import ws_summary
from evaluators.olmpics.report import write_olmpics_report
from evaluators.olmpics.results import align, analyse, load, medal
from evaluators.shared.report import iter_metrics
from probekit.outputs.atomic import write_json, write_jsonl
from probekit.errors import DataError, ParamsError

N = 20
SIZES = [62, 125]
W = np.array([0.23, 0.2]) / 0.43  # the paper's first two weights, renormalised


def first(share: float) -> np.ndarray:
    """``N`` outcomes, the first ``share · N`` correct (so a higher share is a superset: pairs are clear-cut)."""
    return np.arange(N) < round(share * N)


def curve(accs) -> np.ndarray:
    """``[seeds, sizes, N]`` correctness from per-seed, per-size accuracies."""
    return np.array([[first(a) for a in seed] for seed in accs])


def summary(correct: np.ndarray) -> dict:
    """The curve's points, WS and MAX as metrics.json has them (``learning_curve.curve_statistics``)."""
    acc = correct.mean(axis=-1)
    stats = {str(n): seed_summary(acc[:, k]) for k, n in enumerate(SIZES)}
    stats["WS"], stats["MAX"] = ws_summary(acc), max_summary(acc, SIZES)
    return stats


def write_result(root: Path, model: str, probe: str, setting: str, accs, *, controls=None, zero=None,
                 baseline=None, lm_head="pretrained", chance=0.5, drop=(), fingerprint="f") -> Path:
    """A metrics.json and its predictions in the evaluators' format; control rows written in reverse order."""
    protocol = "MC-QA" if setting == "MC-QA" else "MC-MLM"
    folder = root / model / probe / setting.lower().replace("-", "")
    correct, controls = curve(accs), {name: curve(a) for name, a in (controls or {}).items()}
    s = summary(correct)
    meta = {"protocol": protocol, "setting": setting, "model": model, "baseline": baseline, "lm_head": lm_head,
            "probe": probe, "variant": "original", "data_fingerprint": fingerprint, "split": "dev", "n": N,
            "chance": chance, "sizes": SIZES, "sizes_dropped": [], "seeds": list(range(1, len(accs) + 1)),
            "ws_weights": W.tolist(),
            "zero_shot": None if zero is None else {"accuracy": zero}, "WS": s.pop("WS"), "MAX": s.pop("MAX"),
            "curve": s, "controls": {}, "sensitivity": {}}
    zs = first(zero) if zero is not None else [None] * N
    write_jsonl(folder / "original" / "predictions.jsonl",
                [{"id": f"q{i}", "gold": "A", "zero_shot": None if zs[i] is None else bool(zs[i]),
                  "correct": {str(n): correct[:, k, i].tolist() for k, n in enumerate(SIZES)}} for i in range(N)])
    for name, c in controls.items():
        rows = [{"id": f"{name}{i}", "source_id": f"q{i}", "gold": "A", "zero_shot": None,
                 "correct": {str(n): c[:, k, i].tolist() for k, n in enumerate(SIZES)}}
                for i in reversed(range(N)) if i not in drop]
        kept = np.array([i for i in range(N) if i not in drop])
        cs = summary(c[..., kept])
        meta["controls"][name] = {"variant": name, "WS": cs.pop("WS"), "MAX": cs.pop("MAX"), "curve": cs,
                                  "zero_shot": None}
        write_jsonl(folder / name / "predictions.jsonl", rows)
    write_json(folder / "metrics.json", meta)
    return folder / "metrics.json"


GOOD = [[0.6, 0.8], [0.7, 0.9]]
GOOD_CONTROLS = {"nolang": [[0.5, 0.5], [0.5, 0.6]], "perturbed": [[0.7, 0.7], [0.6, 0.8]]}
BASE = [[0.5, 0.5], [0.5, 0.5]]


@pytest.fixture
def results(tmp_path) -> Path:
    """age (MC-MLM): good (✓), weak († head, ✓– by margin), flat (blank), MLM-BASELINE; conj (MC-QA): n/a.
    Untrained heads (weak, the baseline) score 90% "zero-shot": that must earn no ↑ and no medal."""
    root = tmp_path / "results"
    write_result(root, "good", "age", "MLP", GOOD, controls=GOOD_CONTROLS, zero=0.9)
    write_result(root, "good", "age", "LINEAR", [[0.55, 0.6], [0.6, 0.7]], zero=0.9)
    write_result(root, "weak", "age", "MLP", [[0.6, 0.65], [0.65, 0.7]], zero=0.9, lm_head="newly_initialised",
                 controls={"perturbed": BASE}, drop=(3,))
    write_result(root, "flat", "age", "MLP", BASE, zero=0.5)
    write_result(root, "MLM-BASELINE", "age", "MLP", BASE, zero=0.9, baseline="MLM-BASELINE", lm_head=None)
    write_result(root, "good", "conj", "MC-QA", GOOD, chance=1 / 3)
    write_result(root, "weak", "conj", "MC-QA", BASE, chance=1 / 3, lm_head=None)
    return root


def report(root: Path, out: Path, **kwargs) -> list[Path]:
    return write_olmpics_report([root], out_md=out / "report.md", out_json=out / "metrics.json",
                                plots=out / "plots", **kwargs)


def test_table_numbers_match_a_hand_computation(results, tmp_path):
    report(results, tmp_path / "out")
    ws = [W @ [0.6, 0.8], W @ [0.7, 0.9]]
    # the seed-averaged curves: original (0.65, 0.85), NO-LANG (0.5, 0.55), PERTURBED-LANG (0.65, 0.75)
    nolang = W @ [0.15, 0.3]
    pert = W @ [0.0, 0.1]  # per seed first would give mean(W @ [0, 0.1], W @ [0.1, 0.1]) = 7.3: seed noise
    good = json.loads((tmp_path / "out" / "metrics.json").read_text())["age"]["good"]
    assert good["MLP"]["WS"] == round(np.mean(ws), 4) and good["MLP"]["WS_std"] == round(np.std(ws, ddof=1), 4)
    assert good["MLP"]["MAX"] == 0.85 and good["MLP"]["MAX_at_n"] == 125 and "MAX_std" not in good["MLP"]
    assert good["MLP"]["nolang"] == round(nolang, 4) and good["MLP"]["perturbed"] == round(pert, 4)
    assert "nolang_std" not in good["MLP"]
    assert good["zero_shot"]["accuracy"] == 0.9 and good["medal"] == "success"
    for key in ("WS", "MAX", "nolang", "perturbed"):
        assert good["MLP"][f"{key}_low"] <= good["MLP"][key] <= good["MLP"][f"{key}_high"]
    assert good["zero_shot"]["low"] <= 0.9 <= good["zero_shot"]["high"]
    md = (tmp_path / "out" / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| good "))
    low, high = map(float, re.search(r"\| 74\.3 ± 7\.1 \[([\d.]+), ([\d.]+)\] ▲ \|", row).groups())
    assert (low, high) == pytest.approx((100 * good["MLP"]["WS_low"], 100 * good["MLP"]["WS_high"]), abs=0.051)
    assert "| 85.0 [" in row  # MAX and the sensitivities: no ± std over per-seed values
    assert "| 22.0 [" in row and "| 4.7 [" in row
    assert "| weak †" in md and "† weak: the checkpoint has no MLM head" in md
    assert md.count("↑ |") == 1  # good only: not the † row, not the baseline
    assert "Paired differences in MLP WS" in md and "## Medals" in md and "**▲ / ▼**" in md


def test_bootstrap_estimates_are_the_shared_metrics(results):
    probes = analyse([load(p, m) for p, m in iter_metrics([results])], resamples=200)
    age = next(p for p in probes if p.title == "age")
    r = age.results["good"]["MLP"]
    stats = olmpics_results.curve_statistics(r.correct)
    everything = np.ones((1, N), np.int64)   # every example drawn once
    assert stats["WS"](everything)[0] == pytest.approx(age.cells["good"]["MLP"]["WS"]["value"])
    assert stats["MAX"](everything)[0] == pytest.approx(0.85)
    assert age.cells["weak"]["MLP"]["perturbed"]["n"] == N - 1  # the dropped control row leaves the index set
    assert age.vs_baseline["good", "MLP", "WS"]["holds"]
    assert ("good", "LINEAR", "WS") not in age.vs_baseline  # the baseline has no LINEAR curve
    assert [(a, b) for a, b, _ in age.pairs] == [("flat", "good"), ("flat", "weak"), ("flat", "MLM-BASELINE"),
                                                ("good", "weak"), ("good", "MLM-BASELINE"),
                                                ("weak", "MLM-BASELINE")]


def test_medals(results, tmp_path):
    report(results, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert _medal_rows(md) == {"age": ["", "✓", "✓–"], "conj": ["—", "n/a", "n/a"]}
    report(results, tmp_path / "strict", medals={"success": 0.3, "partial": 0.2})
    assert _medal_rows((tmp_path / "strict" / "report.md").read_text())["age"] == ["", "✓–", ""]
    with pytest.raises(ParamsError, match="medals"):
        report(results, tmp_path / "bad", medals={"success": 0.05, "partial": 0.15})


def _medal_rows(md: str) -> dict:
    table = md.split("## Medals")[1].split("\n## ")[0].strip().splitlines()
    assert [c.strip() for c in table[0].strip("|").split("|")] == ["probe", "flat", "good", "weak"]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")]
                                               for line in table[2:])}


@pytest.mark.parametrize("low, diff, above, protocol, expected", [
    (0.10, 0.20, True, "MC-MLM", "✓"),
    (0.10, 0.20, False, "MC-MLM", "✓–"),  # WS margin but zero-shot at chance
    (0.10, 0.20, False, "MC-QA", "✓"),  # no zero-shot in MC-QA
    (-0.01, 0.20, True, "MC-MLM", "✓–"),  # margin not significant, zero-shot above chance
    (0.01, 0.06, False, "MC-MLM", "✓–"),
    (0.01, 0.04, False, "MC-MLM", ""),
    (-0.01, 0.20, False, "MC-QA", ""),
    (None, None, True, "MC-MLM", "n/a"),
])
def test_medal_rule(low, diff, above, protocol, expected):
    test = None if low is None else {"low": low, "diff": diff}
    zero = {"above_chance": above} if protocol == "MC-MLM" else None
    assert medal(test, zero, protocol, {"success": 0.15, "partial": 0.05}) == expected


def test_align_pairs_duplicate_ids_in_order():
    mine, theirs = align(["a", "b", "a", "c"], ["a", "a", "b", "x"])
    assert mine.tolist() == [0, 1, 2] and theirs.tolist() == [0, 2, 1]


@pytest.mark.parametrize("field", ["sizes", "curve.125.per_seed", "controls"])
def test_missing_field_names_file_and_field(tmp_path, field):
    path = write_result(tmp_path, "m", "age", "MLP", GOOD)
    meta = json.loads(path.read_text())
    *parents, key = field.split(".")
    node = meta
    for p in parents:
        node = node[p]
    del node[key]
    write_json(path, meta)
    with pytest.raises(DataError, match=rf"{path}: missing field '{field}'"):
        report(tmp_path, tmp_path / "out")


def test_one_result_per_cell_and_a_warning_for_different_data(tmp_path):
    write_result(tmp_path / "a", "m", "age", "MLP", GOOD)
    write_result(tmp_path / "a", "n", "age", "MLP", GOOD, fingerprint="other")
    write_olmpics_report([tmp_path / "a"], out_md=tmp_path / "r.md")
    assert "⚠ the rows were evaluated on different data (2 data_fingerprints)" in (tmp_path / "r.md").read_text()
    write_result(tmp_path / "b", "m", "age", "MLP", GOOD)
    with pytest.raises(DataError, match="a second MLP result for m on age"):
        write_olmpics_report([tmp_path / "a", tmp_path / "b"], out_md=tmp_path / "r.md")


def test_stale_predictions_are_refused(tmp_path):
    path = write_result(tmp_path, "m", "age", "MLP", GOOD)
    meta = json.loads(path.read_text())
    meta["curve"]["62"]["per_seed"] = [0.9, 0.9]
    write_json(path, meta)
    with pytest.raises(DataError, match="disagrees with the predictions"):
        report(tmp_path, tmp_path / "out")


def test_a_max_that_is_not_the_mean_curves_is_refused(tmp_path):
    """A metrics.json of the old definition (MAX a mean of per-seed maxima, ``{mean, std, per_seed}``), or whose
    MAX.value is not the predictions' seed-averaged curve's, is named, not reported."""
    path = write_result(tmp_path, "m", "age", "MLP", [[0.8, 0.6], [0.5, 0.9]])  # seeds peak at different N
    meta = json.loads(path.read_text())
    assert meta["MAX"]["value"] == pytest.approx(0.75)
    write_json(path, {**meta, "MAX": {"value": 0.85, "at_n": 125, "per_seed": [0.8, 0.9]}})
    with pytest.raises(DataError, match=r"MAX.value 0.85 disagrees with the predictions' seed-averaged curve"):
        report(tmp_path, tmp_path / "out")
    write_json(path, {**meta, "MAX": {"mean": 0.85, "std": 0.07, "per_seed": [0.8, 0.9]}})
    with pytest.raises(DataError, match="MAX has `mean` but no `value`: written by an older version"):
        report(tmp_path, tmp_path / "out")


def test_rerun_is_byte_identical_and_the_png_is_real(results, tmp_path):
    first_run = report(results, tmp_path / "a")
    second_run = report(results, tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in first_run] == [p.relative_to(tmp_path / "b") for p in second_run]
    for a, b in zip(first_run, second_run):
        assert a.read_bytes() == b.read_bytes(), a.name
    png = tmp_path / "a" / "plots" / "age.png"
    assert png.stat().st_size > 20_000 and matplotlib.image.imread(png).std() > 0.05
    rows = json.loads((tmp_path / "a" / "plots" / "age" / "good-mlp-nolang.json").read_text())
    assert {"N": 125, "accuracy": 0.55} in rows
    assert {p.name for p in (tmp_path / "a" / "plots" / "conj").iterdir()} >= {"good-mc-qa-original.json"}
