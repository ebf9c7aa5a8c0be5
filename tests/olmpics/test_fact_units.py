"""The two oLMpics reports resample the fact, not the row's id (issue 52, item 6): a probe that asks each fact under
two templates (two rows, two ids, one ``args``) and has a NO-LANG row per original row. The zero-shot and curve
evaluators write each row's fact (``unit``, :func:`probekit.data.keys.fact_unit`) into their predictions, and the
zero-shot report and the curves' cells draw a fact's rows together, its control rows with it. Resampling ids would
count the fact's two templates as two independent draws: the interval about sqrt(2) too narrow."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from evaluators.olmpics import learning_curve as lc
from evaluators.olmpics import results as olmpics_results
from evaluators.olmpics import zeroshot
from evaluators.shared import report as zeroshot_report
from evaluators.shared.bootstrap import accuracy_statistic, bootstrap, paired_bootstrap
from probekit.data.keys import mc_key
from probekit.outputs.atomic import write_json, write_jsonl

FACTS, TEMPLATES, SIZES, SEEDS = 40, ("paper", "birth_year"), [62, 125], [1, 2]
CHOICES = [{"label": "A", "text": "younger"}, {"label": "B", "text": "older"}]


def probe() -> tuple[list[dict], list[dict], np.ndarray]:
    """``(original rows, NO-LANG rows, each fact's fate)``: every fact under both templates (ids differ, ``args``
    the same), then a NO-LANG row per original row (its ``source_id``, the same ``args``)."""
    original = [{"id": f"{t}-{u}", "probe": "age", "variant": "original", "template_id": t,
                 "args": {"age1": 20 + u, "age2": 70 - u}, "question": {"stem": f"{t} {u} [MASK]",
                                                                    "choices": CHOICES}, "answerKey": "A"}
                for u in range(FACTS) for t in TEMPLATES]
    nolang = [{**r, "id": f"nolang-{r['id']}", "variant": "nolang", "source_id": r["id"],
               "question": {"stem": "[MASK] 1 2", "choices": CHOICES}} for r in original]
    fate = np.random.default_rng(0).permutation(np.arange(FACTS) < FACTS // 2)
    return original, nolang, fate


def right_per_row(rows: list[dict], fate: np.ndarray) -> np.ndarray:
    """A row is right where its fact's fate is: both templates of a fact, and its control rows, share it."""
    return np.array([fate[r["args"]["age1"] - 20] for r in rows], bool)


class Engine:
    """What :func:`zeroshot.evaluate` asks of the engine: scores per row, and the rule it records."""

    scoring = SimpleNamespace(rule="mask-logit", record=lambda: {"rule": "mask-logit"})

    def __init__(self, right: dict[str, bool]):
        self.right = right

    def score(self, stems, choices, ids):
        return [[1.0, 0.0] if self.right[i] else [0.0, 1.0] for i in ids]


def width(ci: dict) -> float:
    return ci["high"] - ci["low"]


def test_the_zero_shot_report_draws_a_fact_under_two_templates_once(tmp_path):
    original, nolang, fate = probe()
    facts = [mc_key(r) for r in original]
    ids = [r["id"] for r in original]
    units = {}
    for model, shift in (("a", 0), ("b", 7)):
        for variant, rows in (("original", original), ("nolang", nolang)):
            right = right_per_row(rows, np.roll(fate, shift))
            predictions, metrics = zeroshot.evaluate(Engine(dict(zip((r["id"] for r in rows), right))), rows)
            folder = tmp_path / model / variant
            write_jsonl(folder / "predictions.jsonl", predictions)
            write_json(folder / "metrics.json", {**metrics, "model": model, "probe": "age", "variant": variant,
                                                 "zero_shot": True, "data_fingerprint": variant})
            units[model, variant] = [p.get("unit") for p in predictions]
    df = zeroshot_report.collect([tmp_path])
    row = df[(df.model == "a") & (df.variant == "original")].iloc[0]
    correct = right_per_row(original, fate)
    by_fact = bootstrap(accuracy_statistic(correct), len(correct), units=facts)
    by_id = bootstrap(accuracy_statistic(correct), len(correct), units=ids)
    assert (row.low, row.high) == (by_fact["low"], by_fact["high"])
    assert width(by_fact) > 1.25 * width(by_id)          # sqrt(2) = 1.41
    b = right_per_row(original, np.roll(fate, 7))
    test = paired_bootstrap(accuracy_statistic(correct), accuracy_statistic(b), len(correct), units=facts)
    shown = zeroshot_report.paired_differences(df)
    shown = shown[shown.variant == "original"].iloc[0]["A − B"]
    assert shown == f"{test['diff']:+.3f} [{test['low']:+.3f}, {test['high']:+.3f}]"
    assert units["a", "nolang"] == units["a", "original"] == facts   # a control row is drawn with its fact


def write_curve(out: Path, data: Path, original: list[dict], nolang: list[dict], fate: np.ndarray) -> dict:
    """A curve's result folder by the evaluators' own writer: both seeds and sizes right where the fact's fate is
    (NO-LANG: where another fact's is)."""
    variants, predicted = {}, {}
    for name, rows, shift in (("original", original, 0), ("nolang", nolang, 11)):
        folder = data / "age" / name
        write_jsonl(folder / "dev.jsonl", rows)
        write_json(folder / "meta.json", {"probe": "age", "variant": name, "fingerprint": f"age-{name}"})
        variants[name] = {"train": [], "dev": rows, "path": folder / "dev.jsonl"}
        right = right_per_row(rows, np.roll(fate, shift))
        predicted[name] = np.broadcast_to(np.where(right, 0, 1), (len(SIZES), len(SEEDS), len(rows))).copy()
    header = {"protocol": "MC-MLM", "setting": "MLP", "model": "m", "baseline": None, "lm_head": "pretrained",
              "split": "dev"}
    return lc.write_results(out, variants=variants, predicted=predicted, zero_shot=dict.fromkeys(variants),
                            sizes=SIZES, dropped=[], seeds=SEEDS, subsets={}, header=header)


def test_the_curves_draw_a_fact_under_two_templates_once_with_its_control_rows(tmp_path):
    original, nolang, fate = probe()
    meta = write_curve(tmp_path / "out", tmp_path / "data", original, nolang, fate)
    result = olmpics_results.load(tmp_path / "out" / "metrics.json", meta)
    facts, ids = [mc_key(r) for r in original], [r["id"] for r in original]
    cells = olmpics_results.cells(result, resamples=1000, seed=0)
    n = len(original)
    ws = olmpics_results.curve_statistics(result.correct)["WS"]
    by_fact, by_id = (bootstrap(ws, n, units=u) for u in (facts, ids))
    assert (cells["WS"]["low"], cells["WS"]["high"]) == (by_fact["low"], by_fact["high"])
    assert width(by_fact) > 1.25 * width(by_id)
    # the sensitivity: each original row with its NO-LANG row (aligned through source_id), a fact's rows together
    positions, control = result.controls["nolang"]
    sensitivity = olmpics_results.sensitivity_statistic(result.correct[..., positions], control)
    by_fact, by_id = (bootstrap(sensitivity, len(positions), units=[u[p] for p in positions]) for u in (facts, ids))
    assert (cells["nolang"]["low"], cells["nolang"]["high"]) == (by_fact["low"], by_fact["high"])
    assert width(by_fact) > 1.25 * width(by_id)
    assert result.units() == facts


@pytest.mark.parametrize("rows, expected", [
    ([{"id": "a", "correct": {}}], ["a"]),                                   # written before rows carried `unit`
    ([{"id": "c", "source_id": "a", "correct": {}}], ["a"]),
])
def test_predictions_without_a_unit_resample_their_ids(rows, expected):
    assert zeroshot_report.fact_units(rows) == expected
