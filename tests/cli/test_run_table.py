"""`probes run`'s printed table read as a new user reads it: one meaning per column, the chance / majority /
baseline line beside every trained number, a constant predictor's consistency flagged, smoke scale marked, and
† kept for "MLM head newly initialised" (capped CALUM settings are ‡)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.shared import smoke
from evaluators.shared.model_summary import summary


def _cells(text: str, start: str) -> list[str]:
    """The cells of the table row that starts with ``start`` (``| protocol | task | metric``)."""
    line = next(line for line in text.splitlines() if line.startswith(start))
    return [c.strip() for c in line.split("|")[1:-1]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The results a smoke-profile run of a tiny BERT without an MLM head leaves (`probes run --model tiny`): its
    MRPC fine-tuning predicted "equivalent" for every pair, so accuracy = the majority share, C_R = C_S = 1."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text(json.dumps({"tiny": {"age_comparison": {"original": {
        "accuracy": 0.5, "accuracy_low": 0.458, "accuracy_high": 0.544, "n": 500, "chance": 0.5,
        "zero_shot": False, "lm_head": "newly_initialised"}, "perturbed": {
        "accuracy": 0.5, "accuracy_low": 0.458, "accuracy_high": 0.544, "n": 500, "chance": 0.5,
        "zero_shot": False, "lm_head": "newly_initialised"}}}}))
    # a 2-layer BERT of random weights on the curves: PERTURBED scores what the original scores (sensitivity 0:
    # it reads no template); NO-LANG lower; MAX's interval floored at its value (a flat curve)
    (results / "olmpics.json").write_text(json.dumps({"age_comparison (MC-MLM)": {
        "tiny": {"MLP": {"WS": 0.49, "WS_low": 0.447, "WS_high": 0.533, "MAX": 0.5, "MAX_low": 0.5,
                         "MAX_high": 0.544, "MAX_at_n": 125, "n": 500, "chance": 0.5,
                         "nolang": 0.06, "nolang_low": 0.02, "nolang_high": 0.1, "nolang_control_WS": 0.43,
                         "nolang_control_WS_low": 0.39, "nolang_control_WS_high": 0.47, "nolang_control_MAX": 0.44,
                         "nolang_control_MAX_low": 0.4, "nolang_control_MAX_high": 0.48,
                         "nolang_below_chance": True, "perturbed": 0.0, "perturbed_low": 0.0,
                         "perturbed_high": 0.0, "perturbed_control_WS": 0.49, "perturbed_control_WS_low": 0.447,
                         "perturbed_control_WS_high": 0.533, "perturbed_control_MAX": 0.5,
                         "perturbed_control_MAX_low": 0.5, "perturbed_control_MAX_high": 0.544,
                         "perturbed_below_chance": False},
                 "medal": "partial", "profile": "smoke", "baseline": False},
        "MLM-BASELINE": {"MLP": {"MAX": 0.532, "MAX_low": 0.49, "MAX_high": 0.57, "MAX_at_n": 62, "n": 500,
                                 "chance": 0.5, "WS": 0.52}, "profile": "smoke", "baseline": True}}}))
    (results / "pararel.json").write_text(json.dumps({"tiny": {"macro": {
        "Consistency": {"mean": 0.743, "std": 0.17, "n": 31}, "Know-Const": {"mean": 0.916, "std": 0.122, "n": 5}},
        "majority": {"Consistency": {"mean": 1.0, "std": 0.0, "n": 31},
                     "Know-Const": {"mean": 1.0, "std": 0.0, "n": 31}}, "profile": "smoke"}}))
    (results / "calum.json").write_text(json.dumps({"runs": {"tiny-mrpc": {
        "task": "mrpc", "majority": 0.69, "capped": True, "profile": "smoke",
        "constant_predictor": {"seeds": 1, "of": 1},
        "accuracy": {"mean": 0.69, "std": None, "n": 1}, "C_R": {"mean": 1.0, "std": None, "n": 1},
        "C_S": {"mean": 1.0, "std": None, "n": 1}}}}))
    return tmp_path


def test_each_column_has_one_meaning(project):
    text = summary(project, "tiny", ("olmpics", "pararel", "calum"))
    assert _cells(text, "| probe |") == ["probe", "setting", "statistic", "original", "NO-LANG", "PERTURBED",
                                         "dev examples", "N of MAX", "reference", "notes"]
    assert _cells(text, "| protocol |") == ["protocol", "task", "metric", "value", "± std (over)", "reference",
                                            "notes"]
    zero = _cells(text, "| age_comparison | zero-shot | accuracy |")
    curve = _cells(text, "| age_comparison (MC-MLM) | MLP | MAX |")
    pararel = _cells(text, "| ParaRel | macro over relations | Consistency |")
    # dev examples, the N of MAX and relations each in their own column, never under one unlabelled `n`
    assert (zero[6], zero[7]) == ("500", "") and (curve[6], curve[7]) == ("500", "125")
    assert pararel[4] == "± 0.170 over 31 relations"
    assert "**N of MAX**" in text and "**dev examples**" in text


def test_the_line_to_beat_stands_beside_every_trained_number(project):
    text = summary(project, "tiny", ("olmpics", "calum"))
    assert _cells(text, "| age_comparison | zero-shot | accuracy |")[8] == "chance 0.500"
    assert _cells(text, "| age_comparison (MC-MLM) | MLP | MAX |")[8] == "chance 0.500; MLM-BASELINE 0.532"
    accuracy = _cells(text, "| CALUM | mrpc | accuracy |")
    assert accuracy[3] == "0.690" and accuracy[5] == "majority 0.690" and "≤ majority" in accuracy[6]
    assert accuracy[4] == "1 seed, no std"


def test_a_constant_predictors_consistency_is_flagged(project):
    text = summary(project, "tiny", ("calum",))
    for metric in ("C_R", "C_S"):
        cells = _cells(text, f"| CALUM | mrpc | {metric} |")
        assert cells[3] == "1.000" and cells[5] == "constant predictor 1.000"
        assert "⚠ constant predictor (1 of 1 seeds)" in cells[6]
    assert "C_R = C_S = 1 by construction" in text


def test_an_olmpics_constant_predictor_is_flagged(project):
    """MiniLM's `younger` on every age example: the zero-shot row and the curve's row say so (the reports' JSON
    carry it, :mod:`evaluators.shared.report`, :mod:`evaluators.olmpics.report`)."""
    results = project / "results"
    zero = json.loads((results / "metrics.json").read_text())
    zero["tiny"]["age_comparison"]["original"]["constant_predictor"] = "`younger`"
    (results / "metrics.json").write_text(json.dumps(zero))
    curves = json.loads((results / "olmpics.json").read_text())
    curves["age_comparison (MC-MLM)"]["tiny"]["MLP"]["constant_predictor"] = {
        "original": {"zero_shot": "`younger`", "runs": [[62, 1, "`younger`"], [125, 1, "`younger`"]], "of": 2},
        "nolang": {"zero_shot": None, "runs": [[62, 1, "`ya`"]], "of": 2}}
    (results / "olmpics.json").write_text(json.dumps(curves))
    text = summary(project, "tiny", ("olmpics",))
    zero = _cells(text, "| age_comparison | zero-shot |")
    assert zero[3].endswith(" ⚠") and zero[9] == "† new MLM head; ⚠ constant predictor (original `younger`)"
    ws = _cells(text, "| age_comparison (MC-MLM) | MLP | WS |")
    assert ws[3].endswith(" ⚠") and "⚠" not in ws[5]   # the original's runs, not PERTURBED's
    assert "⚠ constant predictor in original 2 of 2 runs, NO-LANG 1 of 2 runs" in ws[9]
    assert "⚠: a constant predictor: the model gave one answer" in text
    assert "C_R = C_S = 1 by construction" not in text   # CALUM's wording only for CALUM's rows


def test_a_pararel_constant_predictor_is_flagged(project):
    """A run that predicted one object for every query of a relation (pararel.json's ``constant_predictor``, from
    :func:`evaluators.pararel.metrics.constant_relations`): each ParaRel row says in how many relations."""
    results = project / "results"
    pararel = json.loads((results / "pararel.json").read_text())
    pararel["tiny"]["constant_predictor"] = {"relations": {"P30": "Asia", "P36": "Livingston"}}
    (results / "pararel.json").write_text(json.dumps(pararel))
    text = summary(project, "tiny", ("pararel",))
    rows = [line for line in text.splitlines() if line.startswith("| ParaRel |")]
    assert rows and all("⚠ constant predictor (2 relations)" in line for line in rows)
    assert "⚠ constant predictor (ParaRel): the model predicted one object for every query" in text
    assert "(oLMpics)" not in text


def test_smoke_scale_is_marked_and_each_symbol_has_one_meaning(project):
    text = summary(project, "tiny", ("olmpics", "pararel", "calum"))
    assert text.splitlines()[2] == smoke.BANNER
    assert smoke.MARK in _cells(text, "| age_comparison (MC-MLM) | MLP | WS |")[9]
    for start in ("| ParaRel |", "| CALUM | mrpc | C_R |"):
        assert smoke.MARK in _cells(text, start)[6]
    assert "‡ capped" in _cells(text, "| CALUM | mrpc | C_R |")[6]
    assert _cells(text, "| age_comparison | zero-shot |")[9] == "† new MLM head"
    assert sum("†" in line for line in text.splitlines() if line.startswith("| CALUM")) == 0
    assert "† new MLM head: the checkpoint has no MLM head" in text and "‡ capped: " in text
    assert f"{smoke.MARK}: {smoke.LEGEND}." in text


def test_the_original_stands_beside_its_controls_with_ws_and_max(project):
    """The random 2-layer BERT: its PERTURBED curve scores what the original scores, so its sensitivity is 0 and the
    table shows it reads no template; WS (what the medals use) and MAX both, each with its interval."""
    text = summary(project, "tiny", ("olmpics",))
    zero = _cells(text, "| age_comparison | zero-shot | accuracy |")
    assert zero[3:6] == ["0.500 [0.458, 0.544]", "—", "0.500 [0.458, 0.544]"]
    ws = _cells(text, "| age_comparison (MC-MLM) | MLP | WS |")
    assert ws[3:6] == ["0.490 [0.447, 0.533]", "0.430 [0.390, 0.470] ↓", "0.490 [0.447, 0.533]"]
    assert ws[8] == "chance 0.500; MLM-BASELINE 0.520" and ws[9].startswith("medal ✓–")
    top = _cells(text, "| age_comparison (MC-MLM) | MLP | MAX |")
    assert top[3:6] == ["0.500 [0.500, 0.544] ¹", "0.440 [0.400, 0.480]", "0.500 [0.500, 0.544] ¹"]
    sensitivity = _cells(text, "| age_comparison (MC-MLM) | MLP | sensitivity |")
    assert sensitivity[3:6] == ["—", "0.060 [0.020, 0.100] ↓", "0.000 [0.000, 0.000] ¹"]
    assert "**WS**" in text and "what the medals compare" in text and "**sensitivity**" in text


def test_a_max_interval_has_its_footnote(project):
    """Wherever a MAX interval is printed, a footnote says why a maximum's interval can start at the value."""
    text = summary(project, "tiny", ("olmpics",))
    note = next(line for line in text.splitlines() if line.startswith("¹ "))
    assert "recomputes the maximum over N on every resample" in note and "lower bound equals the value" in note
    metrics = json.loads((project / "results/metrics.json").read_text())
    (project / "results/olmpics.json").write_text("{}")   # zero-shot only: no MAX printed, no footnote
    (project / "results/metrics.json").write_text(json.dumps(metrics))
    assert "¹" not in summary(project, "tiny", ("olmpics",))


def test_pararel_rows_have_the_majority_baseline(project):
    """pararel.md's majority row (§5.1) beside each macro metric, its relation count where it differs."""
    text = summary(project, "tiny", ("pararel",))
    assert _cells(text, "| ParaRel | macro over relations | Consistency |")[5] == "majority 1.000 ± 0.000"
    assert _cells(text, "| ParaRel | macro over relations | Know-Const |")[5] == \
        "majority 1.000 ± 0.000 over 31 relations"
    assert "the paper's majority baseline" in text


def test_the_random_init_baseline_row_follows_the_models_zero_shot(project):
    """The `zeroshot_random` stage's result for the model (metrics.json's `random:tiny`): its row, with the same
    controls and intervals, right under the model's zero-shot row, saying what it is (not "new MLM head": every
    weight is new); a random-init model run as one (`probes run --model random:tiny`) gets no row of a row."""
    metrics = json.loads((project / "results/metrics.json").read_text())
    fresh = {"accuracy": 0.602, "accuracy_low": 0.558, "accuracy_high": 0.644, "n": 500, "chance": 0.5,
             "zero_shot": False, "random_init": {"of": "/models/tiny", "seed": 0}}
    metrics["random:tiny"] = {"age_comparison": {"original": fresh, "perturbed": fresh | {"accuracy": 0.5,
                                                                                          "constant_predictor": "`b`"}}}
    (project / "results/metrics.json").write_text(json.dumps(metrics))
    text = summary(project, "tiny", ("olmpics",))
    lines = [line for line in text.splitlines() if line.startswith("| age_comparison |")]
    assert lines[0].startswith("| age_comparison | zero-shot | accuracy |")
    row = _cells(text, "| age_comparison | zero-shot, random init | accuracy |")
    assert lines[1] == "| " + " | ".join(row) + " |"
    assert row[3:6] == ["0.602 [0.558, 0.644]", "—", "0.500 [0.558, 0.644] ⚠"]
    assert row[7:] == ["", "chance 0.500", "random init of /models/tiny (seed 0); ⚠ constant predictor (PERTURBED `b`)"]
    assert any(line.startswith("**zero-shot, random init**") for line in text.splitlines())
    assert "zero-shot, random init" not in summary(project, "random:tiny", ("olmpics",))
    # a model is a random init by its metrics, not by its alias: `randomized` (trained weights) gets its row
    metrics |= {"randomized": metrics["tiny"], "random:randomized": metrics["random:tiny"]}
    (project / "results/metrics.json").write_text(json.dumps(metrics))
    assert "| age_comparison | zero-shot, random init | accuracy |" in summary(project, "randomized", ("olmpics",))
