"""ParaRel's reports cannot mislead (issue 41, part 5): a model that predicts one object for every query of a
relation is flagged (its Consistency there is 100 by construction) in the relations column of Table 3's rows,
the determinism table and the §8 table, and said under the title; a deviation over one relation is shown as undefined (``±—``), not as a bare mean."""

from __future__ import annotations

import json

import pandas as pd

from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from evaluators.pararel import evaluate as ev
from evaluators.pararel import metrics as pararel_metrics
from evaluators.pararel import report as pararel_report
from probekit.data.cloze import read_cloze_set
from probekit.tokens.refs import ModelRef

from helpers import write_toy_cloze_set

RELATIONS = {  # every object one WordPiece token of MiniLM's vocabulary
    "P37": (["the official language of [X] is [Y] .", "[X] speaks [Y] ."],
            [("quebec", "french"), ("mexico", "spanish"), ("egypt", "arabic")]),
    "P17": (["[X] is located in [Y] .", "[X] lies in [Y] ."],
            [("paris", "france"), ("berlin", "germany"), ("tokyo", "japan")]),
}


def test_constant_relations_need_one_prediction_for_every_query():
    rows = pd.DataFrame({"relation": ["P1"] * 4 + ["P2"] * 4 + ["P3"],
                         "prediction": ["a", "a", "a", "a", "a", "b", "a", "a", "c"]})
    assert pararel_metrics.constant_relations(rows) == {"P1": "a"}   # P3: a single query is no evidence


def test_a_model_that_predicts_one_object_everywhere_is_flagged(tiny_bert, tmp_path):
    """A tiny BERT whose MLM bias makes ``spanish`` win every P37 query: evaluation records P37 under
    ``constant_predictor``, and the report marks the row and says which relations and objects."""
    import torch

    loaded = load_lm(ModelRef("tiny", str(tiny_bert), str(tiny_bert)), scoring="mlm")
    with torch.no_grad():
        loaded.model.cls.predictions.bias[loaded.tokenizer.convert_tokens_to_ids("spanish")] += 1e4
    data = read_cloze_set(write_toy_cloze_set(tmp_path / "pararel", RELATIONS))
    predictions, metrics = ev.evaluate(Engine(loaded.model, loaded.tokenizer, "mlm"), data, ["P37", "P17"],
                                       progress=False)
    assert {p["prediction"] for p in predictions if p["relation"] == "P37"} == {"spanish"}
    constant = metrics["constant_predictor"]
    assert constant["relations"].get("P37") == "spanish" and constant["of"] == 2
    assert metrics["relations"]["P37"]["Consistency"] == 1.0   # by construction

    metrics |= {"model_id": "tiny-bert", "rule": "mask-logit", "a_an_filter": True, "queries": len(predictions),
                "lm_head": "pretrained"}
    (tmp_path / "res" / "tiny").mkdir(parents=True)
    (tmp_path / "res" / "tiny" / "metrics.json").write_text(json.dumps(metrics))
    pararel_report.write(tmp_path / "res", tmp_path / "pararel.md")
    text = (tmp_path / "pararel.md").read_text()
    print(text)
    k = len(constant["relations"])   # P37, and P17 if the random head also answers one object there
    assert f"| tiny | `tiny-bert` | 2 (⚠ {k} constant) |" in text
    assert "**⚠ constant predictor**: tiny predicted one object for every query of " in text
    assert "P37: spanish" in text and "measure no consistency" in text
    summary = json.loads((tmp_path / "pararel.json").read_text())
    assert summary["tiny"]["constant_predictor"]["relations"]["P37"] == "spanish"


def _macro(mean, std, n):
    return {k: {"mean": mean, "std": std, "n": n} for k in pararel_report.TABLE3 + pararel_report.TABLE2}


def test_a_deviation_over_one_relation_is_undefined_not_absent(tmp_path):
    """One N-1 relation: its std is undefined (``macro``: None), shown ``±—``; a real 0.0 stays ``±0.0``."""
    metrics = {"model_id": "m", "macro": _macro(0.5, None, 1), "relations": {"P1": {}}, "rule": "mask-logit",
               "determinism": {"macro": {"Determinism": {"mean": 0.25, "std": None, "n": 1}}, "P2": {}},
               "a_an_filter": True, "queries": 4, "lm_head": "pretrained",
               "majority": {"macro": _macro(1.0, 0.0, 2)}, "constant_predictor": {"relations": {}, "of": 2}}
    (tmp_path / "res" / "one").mkdir(parents=True)
    (tmp_path / "res" / "one" / "metrics.json").write_text(json.dumps(metrics))
    pararel_report.write(tmp_path / "res", tmp_path / "pararel.md")
    text = (tmp_path / "pararel.md").read_text()
    assert "| one | `m` | 1 | 50.0±— |" in text and "| one | 1 | 25.0±— |" in text
    assert "| majority | – | 2 | 100.0±0.0 |" in text and "⚠" not in text


def test_the_consistency_table_flags_a_run_that_collapsed_to_one_object():
    """§8: a training that leaves the model predicting one object per relation scores Consistency 100 there:
    the group's row is marked and a line counts the relations before and after."""
    def group(n, constant):
        return {"macro": _macro(0.5, 0.1, n), "majority": _macro(0.25, 0.1, n),
                "relations": {f"P{k}": {} for k in range(n)},
                "constant_predictor": {"relations": {f"P{k}": "x" for k in range(constant)}, "of": n}}
    m = {"model_id": "bert-base-cased", "train_relations": ["P364"], "validation_relations": [],
         "before": {"test": group(4, 0)}, "after": {"test": group(4, 3)},
         "selection": {"consistency_weight": 0.1, "fixed": True}, "params": {"epochs": 3}, "profile": "paper"}
    text = "\n".join(pararel_report.consistency_training({"run": m}))
    assert "| run | test | 4 (⚠ 0 → 3 constant) |" in text
    assert "**⚠ constant predictor** (one object predicted for every query of a relation" in text
    assert "run's test relations: 0 of 4 before training, 3 after" in text
