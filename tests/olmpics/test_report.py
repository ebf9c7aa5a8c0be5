"""The report stage: table, dvc metrics, bar plot and pair heatmaps, honest about what each number is."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evaluators.shared import report
from evaluators.shared.zeroshot_figure import figure
from evaluators.olmpics import heatmap
from probekit.outputs.atomic import write_jsonl
from probekit.errors import DataError

from helpers import PAIRS, fake_result


def percentile_interval(correct: list[bool], other: list[bool] | None = None, *, resamples: int = 1000, seed: int = 0,
                        level: float = 0.95) -> tuple[float, float, float]:
    """``(accuracy, low, high)`` of ``correct`` (or of the difference ``correct`` − ``other`` on the same
    resamples), recomputed here from the definition in evaluators/shared/bootstrap.py: resample r holds the example
    indices ``default_rng(seed).integers(0, n, size=(resamples, n))[r]``, the bounds are the percentiles of the
    resampled statistic. Each resample's outcomes are gathered one by one, not counted as the module does."""
    a = np.asarray(correct, float)
    b = np.zeros_like(a) if other is None else np.asarray(other, float)
    idx = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    values = [a[row].mean() - b[row].mean() for row in idx]
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return a.mean() - b.mean(), low, high


def test_report_carries_n_chance_and_setup_with_every_number(tmp_path):
    results = tmp_path / "results"
    fake_result(results, tmp_path / "data", "m1", "original", True, PAIRS, lambda a, b: "A" if a < b else "B")
    fake_result(results, tmp_path / "data", "m2", "original", False, PAIRS, lambda a, b: "B",
                 chance=sum([1 / 5] * 10) / 10)  # 0.20000000000000004 before rounding
    written = report.run([results], out=tmp_path / "r.md", metrics=tmp_path / "m.json", plot=tmp_path / "p.png")
    assert written == [tmp_path / "r.md", tmp_path / "m.json", tmp_path / "p.png"]
    table = (tmp_path / "r.md").read_text()
    # the intervals, recomputed here: m1 is always right, m2 (always "B") right exactly when a > b
    m1, m2 = [True] * len(PAIRS), [a > b for a, b in PAIRS]
    acc2, low2, high2 = percentile_interval(m2)
    assert percentile_interval(m1) == (1.0, 1.0, 1.0) and low2 < acc2 == 0.5 < high2
    diff, low_d, high_d = percentile_interval(m1, m2)
    assert 0 < low_d < diff == 0.5 < high_d   # the difference holds
    assert f"| m2      | age_comparison | original  | {acc2:.3f} [{low2:.3f}, {high2:.3f}] ⚠ | 20  |" in table
    assert f"| m1      | age_comparison | original  | 1.000 [1.000, 1.000]   | 20  |" in table
    assert f"| age_comparison | original  | m1  | m2  | {diff:+.3f} [{low_d:+.3f}, {high_d:+.3f}] | 0.000 | yes" in table
    assert "| m1      | age_comparison | original  | 1.000 [1.000, 1.000]   | 20  | 0.500    | +0.500      | —         | zero-shot " \
        in table
    assert "| m2      | age_comparison | original  | 0.500 [0.250, 0.700] ⚠ | 20  | 0.200    | +0.300      | —         | † not " \
        "zero-shot |" in table
    assert "**⚠ constant predictor**: m2: age_comparison/original (choice B on all 20)." in table   # always "B"
    # the two models scored the same examples: a paired bootstrap says the difference holds
    assert "| age_comparison | original  | m1  | m2  | +0.500 [+0.300, +0.750] | 0.000 | yes     |" in table
    assert "**† m2: MLM head newly initialised: not a zero-shot result.**" in table
    for column in ("**model**", "**accuracy**", "**n**", "**chance**", "**vs chance**", "**setup**"):
        assert column in table
    assert json.loads((tmp_path / "m.json").read_text()) == {
        "m1": {"age_comparison": {"original": {"accuracy": 1.0, "accuracy_low": 1.0, "accuracy_high": 1.0, "n": 20,
                                               "chance": 0.5, "zero_shot": True, "lm_head": "pretrained"}}},
        "m2": {"age_comparison": {"original": {"accuracy": 0.5, "accuracy_low": 0.25, "accuracy_high": 0.7, "n": 20,
                                               "chance": 0.2, "zero_shot": False, "lm_head": "newly_initialised",
                                               "constant_predictor": "choice B"}}}}
    assert (round(low2, 4), round(high2, 4)) == (0.25, 0.7)
    fig = figure(report.collect([results]))
    assert "zero-shot MC-MLM" in fig.get_suptitle()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["m1", "m2 †"] and "† MLM head newly initialised: not a zero-shot result" in labels


def zero_shot_result(root, model: str, variant: str, rows: list[tuple[list[str], str, str]],
                     probe: str = "age_comparison", **extra) -> None:
    """A zero-shot result as ``probes evaluate zeroshot`` writes it: per row (its choices in order, the gold word,
    the chosen word), the chosen choice's label and word."""
    predictions = []
    for i, (choices, gold, chosen) in enumerate(rows):
        label, key = "AB"[choices.index(chosen)], "AB"[choices.index(gold)]
        predictions.append({"id": f"{variant}{i}", "scores": [0.0, 1.0], "prediction": label, "choice": chosen,
                            "gold": key, "correct": label == key})
    out = root / model / probe / variant
    write_jsonl(out / "predictions.jsonl", predictions)
    (out / "metrics.json").write_text(json.dumps({
        "model": model, "probe": probe, "variant": variant, "n": len(rows), "chance": 0.5,
        "accuracy": sum(p["correct"] for p in predictions) / len(rows), "zero_shot": True, **extra}))


def test_a_constant_predictor_is_flagged(tmp_path):
    """MiniLM's failure: "younger" on every age example, whose choice order is shuffled, so the label varies and the
    accuracy reads 50.0 like a guess: flagged, with the word, in the table, the note and the metrics."""
    results = tmp_path / "results"
    orders = [["younger", "older"], ["older", "younger"]] * 10
    golds = ["younger", "older", "older", "younger"] * 5
    zero_shot_result(results, "constant", "original", [(c, g, "younger") for c, g in zip(orders, golds)])
    zero_shot_result(results, "guess", "original", [(c, g, c[i % 3 == 0]) for i, (c, g) in
                                                    enumerate(zip(orders, golds))])
    report.run([results], out=tmp_path / "r.md", metrics=tmp_path / "m.json")
    table = (tmp_path / "r.md").read_text()
    assert "**⚠ constant predictor**: constant: age_comparison/original (`younger` on all 20)." in table
    assert "| constant | age_comparison | original  | 0.500 [0.250, 0.700] ⚠ |" in table
    assert "| guess    | age_comparison | original  | " in table and "guess:" not in table
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["constant"]["age_comparison"]["original"]["constant_predictor"] == "`younger`"
    assert "constant_predictor" not in summary["guess"]["age_comparison"]["original"]


def test_a_figure_names_the_rule_a_causal_model_was_scored_by(tmp_path):
    results = tmp_path / "results"
    fake_result(results, tmp_path / "data", "gpt", "original", True, PAIRS, lambda a, b: "A")
    metrics = results / "gpt/age_comparison/original/metrics.json"
    metrics.write_text(json.dumps(json.loads(metrics.read_text()) | {"scoring": "causal", "rule": "statement"}))
    fig = figure(report.collect([results]))
    assert fig.get_suptitle().endswith("(zero-shot, causal rule statement)")


def test_heatmaps_say_not_zero_shot_and_explain_missing_pairs(tmp_path):
    results = tmp_path / "results"
    fake_result(results, tmp_path / "data", "m", "original", False, PAIRS[:-3], lambda a, b: "A")
    [panel] = heatmap.pair_panels([results])["m"]
    fig = heatmap.figure("m", [panel])
    assert "not a zero-shot result" in fig._suptitle.get_text()
    ax = fig.axes[0]
    assert "17 of 20 pairs" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["predicts older", "predicts younger",
                                                                   "pair not in the data"]


def test_heatmap_panels_hold_every_pair_and_one_file_per_model(tmp_path):
    results = tmp_path / "results"
    fake_result(results, tmp_path / "data", "m1", "original", True, PAIRS, lambda a, b: "A" if a < b else "B")
    fake_result(results, tmp_path / "data", "m1", "nolang", True, PAIRS, lambda a, b: "A")
    fake_result(results, tmp_path / "data", "m2", "original", False, PAIRS, lambda a, b: "B")
    panels = heatmap.pair_panels([results])
    original = next(p for p in panels["m1"] if p["title"] == "age_comparison/original")
    assert original["words"] == ["older", "younger"]
    assert sorted(original["points"]) == sorted((a, b, "younger" if a < b else "older") for a, b in PAIRS)
    written = heatmap.run([results], tmp_path / "heatmaps")
    assert [p.name for p in written] == ["m1.png", "m2.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in written)


def test_heatmap_keeps_rows_whose_ids_repeat(tmp_path):
    """Release files repeat ids (compositional_comparison dev: 480 unique of 500): join by position, not id."""
    results = tmp_path / "results"
    fake_result(results, tmp_path / "data", "m", "original", True, PAIRS, lambda a, b: "A")
    data = tmp_path / "data/original/dev.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    preds_path = results / "m/age_comparison/original/predictions.jsonl"
    preds = [json.loads(line) for line in preds_path.read_text().splitlines()]
    for r, p in zip(rows, preds):
        r["id"] = p["id"] = "same-id"
    write_jsonl(data, rows)
    write_jsonl(preds_path, preds)
    [panel] = heatmap.pair_panels([results])["m"]
    assert sorted(panel["points"]) == sorted((a, b, "younger") for a, b in PAIRS)
    write_jsonl(preds_path, [{**p, "id": "other"} for p in preds])
    with pytest.raises(DataError, match=r"predictions.jsonl:1: id 'other' is not row 1"):
        heatmap.pair_panels([results])


def test_a_score_its_perturbed_control_reaches_reads_no_template(tmp_path):
    """The trial's random 2-layer BERT on OBJECTS COMPARISON: 70% on the original, above chance, and 70% on
    PERTURBED-LANG, whose template words are nonsense: it reads no template (⊘), and its answer texts are shown;
    its random-init baseline row says what it is."""
    results = tmp_path / "results"
    orders = [["larger", "smaller"], ["smaller", "larger"]] * 50
    golds = ["larger", "smaller", "smaller", "larger"] * 25
    other = {"larger": "smaller", "smaller": "larger"}
    picks = [(c, g, g if i % 10 < 7 else other[g]) for i, (c, g) in enumerate(zip(orders, golds))]   # 70% right
    for variant in ("original", "perturbed"):
        zero_shot_result(results, "tiny", variant, picks, probe="objects_comparison")
    reads = [(c, g, g if i % 10 < 9 else other[g]) for i, (c, g) in enumerate(zip(orders, golds))]   # 90%
    zero_shot_result(results, "reader", "original", reads, probe="objects_comparison")
    zero_shot_result(results, "reader", "perturbed", picks, probe="objects_comparison")
    zero_shot_result(results, "tiny-random", "original", [(c, g, "larger") for c, g in zip(orders, golds)],
                     probe="objects_comparison", random_init={"of": "pkg:tiny", "seed": 0})
    report.run([results], out=tmp_path / "r.md", metrics=tmp_path / "m.json")
    md = (tmp_path / "r.md").read_text()
    tiny = next(line for line in md.splitlines() if line.startswith("| tiny        | objects_comparison | original"))
    assert tiny.split("|")[4].strip().endswith("] ⊘") and "larger 50 · smaller 50" in tiny
    assert "**⊘ reads no template**: tiny objects_comparison 0.700 [" in md and "reader objects" not in md
    random = next(line for line in md.splitlines() if line.startswith("| tiny-random "))
    assert "] ⚠" in random and "larger 100 (all)" in random and "random init of pkg:tiny (seed 0)" in random
    summary = json.loads((tmp_path / "m.json").read_text())
    assert summary["tiny"]["objects_comparison"]["original"]["reads_no_template"] is True
    assert "reads_no_template" not in summary["reader"]["objects_comparison"]["original"]
    assert summary["tiny-random"]["objects_comparison"]["original"]["answers"] == {
        "n": 100, "distinct": 1, "top": [["larger", 100]], "other": 0}
    assert summary["tiny-random"]["objects_comparison"]["original"]["random_init"] == {"of": "pkg:tiny", "seed": 0}


def test_the_profile_of_each_result_reaches_the_metrics_and_the_run_table(tmp_path):
    """A result run under the smoke profile (its metrics.json's ``profile``) is one in results/metrics.json too, so
    `probes run`'s table marks its zero-shot row (smoke), and a rehearsal's result says ``profile: rehearsal``."""
    from evaluators.shared import smoke
    from evaluators.shared.model_summary import summary as table

    results = tmp_path / "results"
    rows = [(["larger", "smaller"], "larger", "larger")] * 4
    zero_shot_result(results / "zeroshot", "tiny", "original", rows, profile="smoke")
    zero_shot_result(results / "zeroshot", "big", "original", rows, profile="rehearsal")
    report.run([results / "zeroshot"], out=tmp_path / "r.md", metrics=results / "metrics.json")
    written = json.loads((results / "metrics.json").read_text())
    assert written["tiny"]["age_comparison"]["original"]["profile"] == "smoke"
    assert written["big"]["age_comparison"]["original"]["profile"] == "rehearsal"
    row = next(line for line in table(tmp_path, "tiny", ("olmpics",)).splitlines()
               if line.startswith("| age_comparison | zero-shot | accuracy |"))
    assert smoke.MARK in row.split("|")[-2]
    assert smoke.MARK not in next(line for line in table(tmp_path, "big", ("olmpics",)).splitlines()
                                  if line.startswith("| age_comparison | zero-shot | accuracy |")).split("|")[-2]

