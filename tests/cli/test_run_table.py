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
        "zero_shot": False, "lm_head": "newly_initialised"}}}}))
    (results / "olmpics.json").write_text(json.dumps({"age_comparison (MC-MLM)": {
        "tiny": {"MLP": {"MAX": 0.5, "MAX_low": 0.458, "MAX_high": 0.544, "MAX_at_n": 125, "n": 500,
                         "chance": 0.5}, "profile": "smoke", "baseline": False},
        "MLM-BASELINE": {"MLP": {"MAX": 0.532, "MAX_low": 0.49, "MAX_high": 0.57, "MAX_at_n": 62, "n": 500,
                                 "chance": 0.5}, "profile": "smoke", "baseline": True}}}))
    (results / "pararel.json").write_text(json.dumps({"tiny": {"macro": {
        "Consistency": {"mean": 0.743, "std": 0.17, "n": 31}}, "profile": "smoke"}}))
    (results / "calum.json").write_text(json.dumps({"runs": {"tiny-mrpc": {
        "task": "mrpc", "majority": 0.69, "capped": True, "profile": "smoke",
        "constant_predictor": {"seeds": 1, "of": 1},
        "accuracy": {"mean": 0.69, "std": None, "n": 1}, "C_R": {"mean": 1.0, "std": None, "n": 1},
        "C_S": {"mean": 1.0, "std": None, "n": 1}}}}))
    return tmp_path


def test_each_column_has_one_meaning(project):
    text = summary(project, "tiny", ("olmpics", "pararel", "calum"))
    assert _cells(text, "| protocol |") == ["protocol", "task", "metric", "value", "95% CI", "± std (over)",
                                            "dev examples", "N of MAX", "reference", "notes"]
    zero = _cells(text, "| zero-shot | age_comparison (original) |")
    curve = _cells(text, "| oLMpics curves | age_comparison (MC-MLM) MLP | MAX |")
    pararel = _cells(text, "| ParaRel | macro over relations | Consistency |")
    # dev examples, the N of MAX and relations each in their own column, never under one unlabelled `n`
    assert (zero[6], zero[7]) == ("500", "") and (curve[6], curve[7]) == ("500", "125")
    assert pararel[5] == "± 0.170 over 31 relations" and pararel[6:8] == ["", ""]
    assert "**N of MAX**" in text and "**dev examples**" in text


def test_the_line_to_beat_stands_beside_every_trained_number(project):
    text = summary(project, "tiny", ("olmpics", "calum"))
    assert _cells(text, "| zero-shot | age_comparison (original) |")[8] == "chance 0.500"
    assert _cells(text, "| oLMpics curves | age_comparison (MC-MLM) MLP | MAX |")[8] == \
        "chance 0.500; MLM-BASELINE 0.532"
    accuracy = _cells(text, "| CALUM | mrpc | accuracy |")
    assert accuracy[3] == "0.690" and accuracy[8] == "majority 0.690" and "≤ majority" in accuracy[9]
    assert accuracy[5] == "1 seed, no std"


def test_a_constant_predictors_consistency_is_flagged(project):
    text = summary(project, "tiny", ("calum",))
    for metric in ("C_R", "C_S"):
        cells = _cells(text, f"| CALUM | mrpc | {metric} |")
        assert cells[3] == "1.000" and cells[8] == "constant predictor 1.000"
        assert "⚠ constant predictor (1 of 1 seeds)" in cells[9]
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
    assert _cells(text, "| zero-shot |")[9] == "† new MLM head; ⚠ constant predictor (`younger`)"
    assert _cells(text, "| oLMpics curves |")[9].startswith("⚠ constant predictor (3 runs)")
    assert "⚠ constant predictor (oLMpics): the model gave one answer" in text
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
    for start in ("| oLMpics curves |", "| ParaRel |", "| CALUM | mrpc | C_R |"):
        assert smoke.MARK in _cells(text, start)[9]
    assert "‡ capped" in _cells(text, "| CALUM | mrpc | C_R |")[9]
    assert _cells(text, "| zero-shot |")[9] == "† new MLM head"
    assert sum("†" in line for line in text.splitlines() if line.startswith("| CALUM")) == 0
    assert "† new MLM head: the checkpoint has no MLM head" in text and "‡ capped: " in text
