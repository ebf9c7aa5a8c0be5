"""ParaRel's Tables 4 and 7 (papers/002 §6.2, §8.3): the report's Table 4 of the RoBERTas pretrained on less data
and Table 7's ablations, each beside the published numbers, on results folders built here; the ablations as a
setting of consistency training (``--ablation``), run on a tiny BERT."""

from __future__ import annotations

import json

import pytest
import yaml

from evaluators.pararel import report as pararel_report
from evaluators.pararel.params import ConsistencyParams

from helpers import write_toy_cloze_set

TABLE4 = ["nyu-mll/roberta-med-small-1M-1", "nyu-mll/roberta-base-10M-1", "nyu-mll/roberta-base-100M-1",
          "nyu-mll/roberta-base-1B-1"]
PAPER_SPLIT = (["P364", "P138", "P449"], ["P20", "P176", "P937"])


def _macro(mean, std=0.1, n=31):
    return {k: {"mean": mean, "std": std, "n": n} for k in pararel_report.TABLE3 + pararel_report.TABLE2}


def _evaluated(model_id, mean):
    """A ``probes evaluate pararel`` metrics.json over 31 N-1 relations, its majority 23.1 / 100 / 23.1."""
    majority = _macro(0.231, 0.21) | {"Consistency": {"mean": 1.0, "std": 0.0, "n": 31}}
    return {"model_id": model_id, "macro": _macro(mean), "relations": {}, "rule": "mask-logit",
            "determinism": {"macro": {}}, "a_an_filter": True, "queries": 10, "lm_head": "pretrained",
            "majority": {"relations": {}, "macro": majority}, "profile": "paper"}


def _write(folder, runs: dict[str, dict]):
    for name, m in runs.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "metrics.json").write_text(json.dumps(m))
    return folder


def test_the_report_has_table4_beside_the_published_numbers(tmp_path):
    """§6.2 "Effect of Pretraining Corpus Size": "We use the pretrained RoBERTa models from Warstadt et al. (2020)
    ... We use one of the three published models for each configuration and report the average accuracy over the
    relations for each model in Table 4." Its rows in its order (1M to 1B tokens) whatever order the folders
    sort in, the paper's numbers beside ours, the rows not run named; no Table 4 where none of its models ran."""
    res = _write(tmp_path / "res", {"roberta-base-1B-1": _evaluated(TABLE4[3], 0.4),
                                    "roberta-med-small-1M-1": _evaluated(TABLE4[0], 0.1),
                                    "bert-base-cased": _evaluated("bert-base-cased", 0.5)})
    pararel_report.write(res, tmp_path / "pararel.md")
    text = (tmp_path / "pararel.md").read_text()
    table = text[text.index("### Pretraining data (Table 4)"):]
    table = table[:table.index("\n\n", table.index("| model |"))]
    print(table)
    assert ("| majority | – | 31 | 23.1±21.0 | 23.1±21.0 | 100.0±0.0 | 100.0±0.0 | 23.1±21.0 | 23.1±21.0 |"
            in table)
    small = ("| roberta-med-small-1M-1 | `nyu-mll/roberta-med-small-1M-1` | 31 | 10.0±10.0 | 11.2±9.4 | 10.0±10.0 | "
             "37.1±11.0 | 10.0±10.0 | 2.8±4.0 |")
    large = ("| roberta-base-1B-1 | `nyu-mll/roberta-base-1B-1` | 31 | 40.0±10.0 | 38.0±23.4 | 40.0±10.0 | "
             "50.6±19.8 | 40.0±10.0 | 18.0±16.0 |")
    assert small in table and large in table and table.index(small) < table.index(large)
    assert "bert-base-cased" not in table   # Table 3's model, not Table 4's
    assert "Not run: nyu-mll/roberta-base-10M-1, nyu-mll/roberta-base-100M-1." in table
    summary = json.loads((tmp_path / "pararel.json").read_text())
    assert summary["roberta-base-1B-1"]["published"]["Consistency"] == [50.6, 19.8]   # Table 3's column too
    table3_only = _write(tmp_path / "res3", {"bert-base-cased": _evaluated("bert-base-cased", 0.5)})
    pararel_report.write(table3_only, tmp_path / "three.md")
    assert "Table 4" not in (tmp_path / "three.md").read_text()


def _trained(mean_after, *, ablation=None, weights=(0.1, 0.5, 1.0), profile="paper", typed=True):
    """A consistency-training metrics.json of bert-base-cased on the paper's split: before 0.5, after
    ``mean_after`` on every group; the majority 0.25 on test."""
    groups = {"train": 3, "validation": 3, "test": 25}
    summary = (lambda mean: {g: {"macro": _macro(mean, n=n), "majority": _macro(0.25, n=n)}
                             for g, n in groups.items()})
    candidates = [{"consistency_weight": w, "steps": 3, "validation": _macro(0.3, n=3)} for w in weights]
    return {"model": "bert-base-cased", "model_id": "bert-base-cased", "train_relations": PAPER_SPLIT[0],
            "validation_relations": PAPER_SPLIT[1], "eval_relations": [f"P{k}" for k in range(25)],
            "before": summary(0.5), "after": summary(mean_after),
            "selection": {"consistency_weight": weights[-1], "fixed": len(weights) == 1, "metric": "Consistent-Acc",
                          "validation_relations": PAPER_SPLIT[1], "candidates": candidates},
            "params": {"eval_limit": None, "epochs": 3, "typed": typed}, "profile": profile,
            **({"ablation": ablation} if ablation else {})}


def test_the_report_has_table7s_ablations_beside_the_published_rows(tmp_path):
    """§8.3: "We also perform an ablation study to quantify the utility of the different components" (Table 7's
    -consistency, -typed, -MLM). Each ablation run of the paper's footing stands in Table 7's layout with the
    paper's row beside it (-consistency: λ 0, not selected, is its footing); one of another footing is marked
    and gets no figures beside it."""
    res = _write(tmp_path / "res", {"bert-base-cased": _evaluated("bert-base-cased", 0.5)})
    cons = _write(tmp_path / "cons", {
        "bert-base-cased": _trained(0.6), "bert-base-cased-consistency": _trained(0.55, ablation="-consistency",
                                                                                   weights=(0.0,)),
        "bert-base-cased-typed": _trained(0.58, ablation="-typed", typed=False),
        "bert-base-cased-MLM": _trained(0.2, ablation="-MLM", profile="smoke")})
    pararel_report.write(res, tmp_path / "pararel.md", cons)
    text = (tmp_path / "pararel.md").read_text()
    table = text[text.index("### Table 7: consistency training and its ablations"):]
    print(table)
    rows = {line.split(" | ")[1]: line for line in table.splitlines() if line.startswith("| bert-base-cased |")}
    assert list(rows) == ["majority", "BERT-base", "BERT-ft", "-consistency", "-typed", "-MLM"]   # Table 7's order
    assert rows["majority"] == ("| bert-base-cased | majority | bert-base-cased (before) | 25 | 25.0±10.0 | "
                                "24.4±22.5 | 25.0±10.0 | 100.0±0.0 | 25.0±10.0 | 24.4±22.5 |")
    assert rows["BERT-base"] == ("| bert-base-cased | BERT-base | bert-base-cased (before) | 25 | 50.0±10.0 | "
                                 "45.6±27.6 | 50.0±10.0 | 58.2±23.9 | 50.0±10.0 | 27.3±24.8 |")
    assert rows["BERT-ft"].endswith("| 60.0±10.0 | 47.4±27.3 | 60.0±10.0 | 64.0±22.9 | 60.0±10.0 | 33.2±27.0 |")
    assert rows["-consistency"] == (
        "| bert-base-cased | -consistency | bert-base-cased-consistency (after) | 25 | 55.0±10.0 | 46.9±27.6 | "
        "55.0±10.0 | 60.9±22.6 | 55.0±10.0 | 30.9±26.3 |")
    assert rows["-typed"].endswith("| 58.0±10.0 | 46.5±27.1 | 58.0±10.0 | 62.0±21.2 | 58.0±10.0 | 31.1±25.2 |")
    # the smoke-scale -MLM run is on another footing: marked, no figures beside it
    assert rows["-MLM"] == ("| bert-base-cased | -MLM | bert-base-cased-MLM (after) ≠ (smoke) | 25 | 20.0±10.0 | – | "
                            "20.0±10.0 | – | 20.0±10.0 | – |")
    # the §8 table above sets each ablation's paper row beside the run on its footing
    assert "| paper: BERT-base → -consistency (Table 7) | test | 25 | 45.6±27.6 | 46.9±27.6 |" in text
    assert "| paper: BERT-base → -typed (Table 7) | test | 25 |" in text
    assert "| paper: BERT-base → -MLM (Table 7) |" not in text and "bert-base-cased-MLM: smoke scale" in text


def test_without_an_ablation_run_the_consistency_section_is_as_before(tmp_path):
    """The default profile runs no ablation: its §8 section has no Table 7 layout (results/pararel.md unchanged);
    a row of Table 7 no run stands for shows the paper's figures alone."""
    res = _write(tmp_path / "res", {"bert-base-cased": _evaluated("bert-base-cased", 0.5)})
    cons = _write(tmp_path / "cons", {"bert-base-cased": _trained(0.6)})
    pararel_report.write(res, tmp_path / "pararel.md", cons)
    assert "Table 7: consistency training and its ablations" not in (tmp_path / "pararel.md").read_text()
    _write(tmp_path / "cons", {"bert-base-cased-typed": _trained(0.58, ablation="-typed", typed=False)})
    pararel_report.write(res, tmp_path / "pararel.md", cons)
    text = (tmp_path / "pararel.md").read_text()
    assert ("| bert-base-cased | -MLM | not run | – | – | 16.9±21.1 | – | 80.8±27.1 | – | 9.1±11.5 |") in text


def test_the_ablations_are_the_protocol_less_one_part():
    """Table 7's ablations (§8.3) each change one setting of the §8.2 protocol: "without the consistency loss
    (-consistency)", "applying our loss on the candidate set rather than on the entire vocabulary" (-typed), "by not
    performing the MLM training on the generated patterns (-MLM)"; λ is still selected where it is not removed."""
    from evaluators.pararel.params import ABLATIONS

    paper = ConsistencyParams(train_relations=PAPER_SPLIT[0], validation_relations=PAPER_SPLIT[1],
                              consistency_weight=[0.1, 0.5, 1.0])
    assert set(ABLATIONS) == {"-consistency", "-typed", "-MLM"}
    cut = {name: paper.model_copy(update={"ablation": name}).ablated() for name in ABLATIONS}
    assert cut["-consistency"].weights() == [0.0] and cut["-consistency"].mlm_steps == paper.mlm_steps
    assert cut["-typed"].typed is False and cut["-typed"].weights() == [0.1, 0.5, 1.0]
    assert cut["-MLM"].mlm_steps == 0 and cut["-MLM"].typed and cut["-MLM"].weights() == [0.1, 0.5, 1.0]
    assert paper.ablated() is paper
    with pytest.raises(ValueError, match="ablation"):
        ConsistencyParams(ablation="typed")   # the paper's names, with their dash
    with pytest.raises(ValueError, match="each of Table 7's ablations once"):
        ConsistencyParams(ablations=["-MLM", "-MLM"])


def test_train_consistency_runs_an_ablation_and_records_it(tmp_path, tiny_bert):
    """``probes train consistency --ablation=-MLM`` (the consistency-ablation stage's command) trains without MLM
    steps, records ``ablation`` and the values it trained with; a run without one records no ``ablation`` and its
    ``params`` as before (no ablation keys)."""
    from probes.main import main

    words = "quebec brazil mexico austria".split(), "french portuguese spanish german".split()
    relations = {"P37": (["the official language of [X] is [Y] .", "in [X] , people speak [Y] ."],
                         list(zip(*words))),
                 "P17": (["[X] is located in [Y] .", "[X] lies in [Y] ."],
                         list(zip("paris berlin rome madrid".split(), "france germany italy spain".split())))}
    data = write_toy_cloze_set(tmp_path / "pararel", relations)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"models": {"tiny": str(tiny_bert)}, "consistency": {
        "train_relations": ["P37"], "epochs": 1, "batch_size": 2, "mlm_steps": 1, "mlm_batch_size": 2,
        "block_size": 16, "sample": "first", "ablations": ["-MLM"]}}))
    for name, extra in (("plain", []), ("MLM", ["--ablation=-MLM"])):
        assert main(["train", "consistency", "--model", "tiny", "--data", str(data), "--device", "cpu", *extra,
                     "--out", str(tmp_path / "cons" / name), "--params", str(params)]) == 0
    plain, cut = (json.loads((tmp_path / "cons" / n / "metrics.json").read_text()) for n in ("plain", "MLM"))
    assert "ablation" not in plain and not {"ablation", "ablations"} & set(plain["params"])
    assert plain["params"]["mlm_steps"] == 1 and any(row["mlm_loss"] for row in plain["history"])
    assert cut["ablation"] == "-MLM" and cut["params"]["mlm_steps"] == 0
    assert not any(row["mlm_loss"] for row in cut["history"])
