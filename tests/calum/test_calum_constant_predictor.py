"""A model that predicts one label for every pair has C_R = C_S = 1: the run records its prediction distribution and
a `constant_predictor` flag, and the CALUM report says so. Capped settings are marked ‡ (not †, which every report
keeps for "MLM head newly initialised")."""

from __future__ import annotations

import json

from evaluators.shared import smoke
from evaluators.calum import report as calum_report
from evaluators.calum.metrics import consistency, over_seeds

from test_calum_report import metrics, write_runs

EQ, NOT = "equivalent", "not_equivalent"


def _rows(seed_predictions: dict[str, list[str]], gold: list[str]) -> list[dict]:
    return [{"pair_id": f"p{i}", "variant": variant, "prediction": p, "label": gold[i] if variant == "original"
             else None} for variant, predictions in seed_predictions.items() for i, p in enumerate(predictions)]


def test_a_constant_predictor_is_recorded_per_seed_and_over_seeds():
    """MRPC-like: 69% of the gold pairs are `equivalent`; an untrained head predicts it for every variant."""
    gold = [EQ] * 69 + [NOT] * 31
    constant = consistency(_rows({v: [EQ] * 100 for v in ("original", "reverse", "signal")}, gold))
    assert (constant["accuracy"], constant["C_R"], constant["C_S"]) == (0.69, 1.0, 1.0)
    assert constant["constant_predictor"] is True and constant["predicted"] == {EQ: 300}
    learned = consistency(_rows({"original": gold, "reverse": gold, "signal": [EQ] * 100}, gold))
    assert learned["constant_predictor"] is False and learned["predicted"] == {EQ: 69 * 2 + 100, NOT: 62}
    seeds = over_seeds([{"seed": 1, **constant}, {"seed": 2, **learned}])
    assert seeds["constant_predictor"] == {"seeds": 1, "of": 2} and seeds["C_R"]["per_seed"] == [1.0, 1.0]
    assert "constant_predictor" not in over_seeds([{"C_R": 0.5}])   # written before the flag: nothing claimed


def test_the_report_flags_it_and_marks_capped_runs_with_their_own_symbol(tmp_path):
    run = metrics("mrpc", "tiny", "/models/tiny-bert", acc=(0.69,), c_r=(1.0,), c_s=(1.0,), majority=0.69,
                  capped=True)
    run["constant_predictor"] = {"seeds": 1, "of": 1}
    other = metrics("rte", "tiny", "/models/tiny-bert", capped=True)
    calum_report.write(write_runs(tmp_path / "res", {"tiny-mrpc": run, "tiny-rte": other}), tmp_path / "calum.md")
    text = (tmp_path / "calum.md").read_text(encoding="utf-8")
    assert "**⚠ constant predictor**: tiny-mrpc (1 of 1 seeds) predicted one label for every example" in text
    assert "tiny-rte (" not in text
    summary = json.loads((tmp_path / "calum.json").read_text(encoding="utf-8"))
    assert summary["runs"]["tiny-mrpc"]["constant_predictor"] == {"seeds": 1, "of": 1}
    assert summary["runs"]["tiny-rte"]["constant_predictor"] is None
    # ‡ on the capped row, in the capped footnote and in the runs table; † nowhere in this report
    assert smoke.CAPPED == "‡" and calum_report.CAPPED.startswith("‡ capped settings")
    assert "| tiny ‡ | `/models/tiny-bert` |" in text and "| ‡ yes |" in text and "†" not in text
