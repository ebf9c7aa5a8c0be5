"""CALUM's variants: indicators, segment order and pairing ids, on hand-made tables and over the whole
generated RTE and MRPC output of the mirror."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import generators.calum as calum
from probekit.data.pairs import read_meta, read_pairs, write_pair_dataset
from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile


def _pairs(task: str, labels: list) -> pd.DataFrame:
    rows = [{"task": task, "split": split, "idx": str(i), "sentence1": f"{split} first {i}.",
             "sentence2": f"{split} second {i}.", "label": None if split == "test" else labels[i % len(labels)],
             "line": i + 2} for split in ("train", "dev", "test") for i in range(3)]
    return pd.DataFrame(rows)


def _build(task: str, df: pd.DataFrame, **params):
    return calum.build(ParamsFile(None, {"calum": {"task": task, **params}}), {"glue": {"pairs": df}})


def test_rte_variants_by_hand():
    variants, meta = _build("rte", _pairs("rte", ["entailment", "not_entailment"]))
    assert list(variants) == ["original", "reverse", "signal"]   # no symmetric: RTE is not a symmetric task
    original, reverse, signal = (variants[v]["dev"][1] for v in ("original", "reverse", "signal"))
    assert (original["sentence1"], original["sentence2"]) == ("Sentence1: dev first 1.", "Sentence2: dev second 1.")
    assert (reverse["sentence1"], reverse["sentence2"]) == ("Sentence2: dev second 1.", "Sentence1: dev first 1.")
    assert (signal["sentence1"], signal["sentence2"]) == ("[Sentence1] dev first 1.", "[Sentence2] dev second 1.")
    assert original["pair_id"] == reverse["pair_id"] == signal["pair_id"] == "rte-dev-1"
    assert original["label"] == reverse["label"] == signal["label"] == "not_entailment"
    assert variants["original"]["test"][0]["label"] is None
    assert meta["order"] == [1, 2] and meta["counts"]["signal"] == {"train": 3, "dev": 3, "test": 3}


def test_the_segment_order_is_a_recorded_parameter_and_mrpc_is_symmetric():
    variants, meta = _build("mrpc", _pairs("mrpc", ["equivalent", "not_equivalent"]), order=[2, 1])
    assert meta["order"] == [2, 1] and meta["params"]["order"] == [2, 1]
    original, symmetric = variants["original"]["train"][0], variants["symmetric"]["train"][0]
    assert original["sentence1"] == "Sentence2: train second 0." and original["sentence2"] == "Sentence1: train first 0."
    assert symmetric["sentence1"] == "Sentence2: train first 0." and symmetric["sentence2"] == "Sentence1: train second 0."
    with pytest.raises(ParamsError, match=r"calum.order: must be \[1, 2\] or \[2, 1\]"):
        _build("mrpc", _pairs("mrpc", ["equivalent"]), order=[1, 1])
    with pytest.raises(ParamsError, match="--task xnli: CALUM's tasks are rte, mrpc, qnli, qqp, mnli"):
        _build("xnli", _pairs("rte", ["entailment"]))


def test_an_unknown_label_names_the_line():
    with pytest.raises(DataError, match=r"glue rte train, line 3: label 'maybe' is not one of"):
        _build("rte", _pairs("rte", ["entailment", "maybe"]))


def test_the_written_dataset_reads_back(tmp_path):
    variants, meta = _build("rte", _pairs("rte", ["entailment", "not_entailment"]), limit=2)
    meta |= {"license": "other", "sources": {}}
    out = write_pair_dataset(tmp_path / "rte", variants, meta, calum.card)
    assert [r["pair_id"] for r in read_pairs(out, "reverse", "dev")] == ["rte-dev-0", "rte-dev-1"]
    card = (out / "README.md").read_text()
    assert read_meta(out)["fingerprint"] and "- `reverse`: `Sentence2: <text 2>` | `Sentence1: <text 1>`" in card
    (out / "signal" / "dev.jsonl").write_text(json.dumps({"pair_id": "x"}) + "\n")
    with pytest.raises(DataError, match=r"signal/dev.jsonl:1: missing field"):
        read_pairs(out, "signal", "dev")


@pytest.mark.parametrize("task", ["rte", "mrpc"])
def test_every_generated_row_of_the_mirror(source_tables, task):
    """Over the whole output: each example in every variant, with the same pair id and label, and each variant
    built from the original exactly as CALUM defines it."""
    variants, meta = calum.build(ParamsFile(None, {"calum": {"task": task}}), {"glue": source_tables("glue")})
    spec = calum.load_spec().tasks[task]
    i1, i2 = spec.indicators
    assert list(variants) == ["original", "reverse", "signal"] + (["symmetric"] if task == "mrpc" else [])
    sizes = {"rte": (2490, 277, 3000), "mrpc": (3668, 408, 1725)}[task]
    assert tuple(len(variants["original"][s]) for s in ("train", "dev", "test")) == sizes
    for split, originals in variants["original"].items():
        assert len({o["pair_id"] for o in originals}) == len(originals)
        for k, o in enumerate(originals):
            t1, t2 = o["segments"][0]["text"], o["segments"][1]["text"]
            assert (o["sentence1"], o["sentence2"]) == (f"{i1}: {t1}", f"{i2}: {t2}")
            assert (o["label"] is None) == (split == "test")
            r, g = variants["reverse"][split][k], variants["signal"][split][k]
            assert (r["sentence1"], r["sentence2"]) == (o["sentence2"], o["sentence1"])
            assert (g["sentence1"], g["sentence2"]) == (f"[{i1}] {t1}", f"[{i2}] {t2}")
            variants_of = [r, g] + ([variants["symmetric"][split][k]] if task == "mrpc" else [])
            assert all(v["pair_id"] == o["pair_id"] and v["label"] == o["label"] for v in variants_of)
            if task == "mrpc":
                y = variants["symmetric"][split][k]
                assert (y["sentence1"], y["sentence2"]) == (f"{i1}: {t2}", f"{i2}: {t1}")


# --- the Korean tasks: KLUE tables, the indicators of generators/calum/ko.yaml ---------------------------------


def _klue_pairs(task: str, labels: list) -> pd.DataFrame:
    """``pairs`` rows as the klue loader writes them: train and dev only, ids are KLUE's guids."""
    return pd.DataFrame([{"task": task, "split": split, "idx": f"{task}-v1_{split}_{i:05d}",
                          "sentence1": f"{split} 첫 문장 {i}.", "sentence2": f"{split} 둘째 문장 {i}.",
                          "label": labels[i % len(labels)], "line": i} for split in ("train", "dev") for i in range(3)])


def test_klue_nli_has_the_korean_indicators_and_reads_only_the_klue_tables():
    df = _klue_pairs("klue_nli", ["entailment", "neutral", "contradiction"])
    variants, meta = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}), {"klue": {"pairs": df}})
    assert list(variants) == ["original", "reverse", "signal"]   # NLI is not symmetric
    original, reverse, signal = (variants[v]["dev"][2] for v in ("original", "reverse", "signal"))
    assert (original["sentence1"], original["sentence2"]) == ("전제: dev 첫 문장 2.", "가설: dev 둘째 문장 2.")
    assert (reverse["sentence1"], reverse["sentence2"]) == ("가설: dev 둘째 문장 2.", "전제: dev 첫 문장 2.")
    assert (signal["sentence1"], signal["sentence2"]) == ("[전제] dev 첫 문장 2.", "[가설] dev 둘째 문장 2.")
    assert original["pair_id"] == reverse["pair_id"] == signal["pair_id"] == "klue_nli-dev-klue_nli-v1_dev_00002"
    assert original["label"] == reverse["label"] == signal["label"] == "contradiction"
    assert meta["indicators"] == ["전제", "가설"] and meta["counts"]["signal"] == {"train": 3, "dev": 3}  # no test
    with pytest.raises(DataError, match=r"klue klue_nli train, line 1: label 'maybe' is not one of"):
        calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}),
                    {"klue": {"pairs": _klue_pairs("klue_nli", ["entailment", "maybe"])}})
    with pytest.raises(DataError, match=r"the klue tables hold no klue_sts rows .*tables\.klue\.tasks including"):
        calum.build(ParamsFile(None, {"calum": {"task": "klue_sts"}}), {"klue": {"pairs": df}})


def test_klue_sts_is_symmetric():
    variants, meta = calum.build(ParamsFile(None, {"calum": {"task": "klue_sts"}}),
                                 {"klue": {"pairs": _klue_pairs("klue_sts", ["similar", "not_similar"])}})
    assert list(variants) == ["original", "reverse", "signal", "symmetric"]
    original, symmetric = variants["original"]["train"][1], variants["symmetric"]["train"][1]
    assert (original["sentence1"], original["sentence2"]) == ("문장1: train 첫 문장 1.", "문장2: train 둘째 문장 1.")
    assert (symmetric["sentence1"], symmetric["sentence2"]) == ("문장1: train 둘째 문장 1.", "문장2: train 첫 문장 1.")
    assert symmetric["label"] == original["label"] == "not_similar" and meta["labels"] == ["not_similar", "similar"]


def test_a_language_is_one_file_of_tasks(tmp_path):
    (tmp_path / "calum").mkdir()
    (tmp_path / "calum.yaml").write_text((calum.HERE / "calum.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "calum" / "fr.yaml").write_text(
        "benchmark: FLUE\ntables: flue\ntasks:\n  xnli_fr: {indicators: [Prémisse, Hypothèse], "
        "labels: [entailment, neutral, contradiction]}\n", encoding="utf-8")
    spec = calum.load_spec(tmp_path / "calum.yaml")
    assert list(spec.tasks) == ["xnli_fr"] and spec.language_of("xnli_fr")[0] == "fr"
    assert spec.language_of("xnli_fr")[1].tables == "flue"
    (tmp_path / "calum" / "fr2.yaml").write_text(
        "benchmark: FLUE\ntables: flue\ntasks:\n  xnli_fr: {indicators: [A, B], labels: [x]}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"fr2\.yaml: task 'xnli_fr' is already defined in .*fr\.yaml"):
        calum.load_spec(tmp_path / "calum.yaml")
    (tmp_path / "calum" / "fr2.yaml").write_text("benchmark: FLUE\ntasks: {}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"fr2\.yaml: tables: Field required$"):
        calum.load_spec(tmp_path / "calum.yaml")


def test_generate_reads_only_the_table_set_of_the_task(tmp_path, capsys):
    """`probes generate calum --task klue_nli` with only klue tables, `--task rte` with only glue tables: each
    reads the set its task names, and records that set's sources."""
    from probekit.sources.loaders import Loaded, write_tables
    from probes.main import main

    from klue_files import write_release

    write_release(tmp_path / "klue-release")
    params = tmp_path / "params.yaml"
    params.write_text(f"tables:\n  klue: {{source: files, folder: {tmp_path / 'klue-release'}}}\n")
    korean, english = tmp_path / "korean", tmp_path / "english"
    assert main(["tables", "klue", "--params", str(params), "--out", str(korean / "klue")]) == 0
    out = tmp_path / "out"
    assert main(["generate", "calum", "--task", "klue_nli", "--tables", str(korean), "--params", str(params),
                 "--out", str(out / "klue_nli")]) == 0
    meta = read_meta(out / "klue_nli")
    assert meta["counts"]["reverse"] == {"train": 3, "dev": 1} and meta["sources"] == {}
    assert [r["sentence1"] for r in read_pairs(out / "klue_nli", "signal", "dev")] == [
        "[전제] 흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다."]
    card = (out / "klue_nli" / "README.md").read_text(encoding="utf-8")
    assert "language: [ko]" in card and "Every example of KLUE\nNLI once per variant" in card
    assert "- `signal`: `[전제] <text 1>` | `[가설] <text 2>`" in card
    assert main(["generate", "calum", "--task", "klue_sts", "--tables", str(korean), "--params", str(params),
                 "--out", str(out / "klue_sts")]) == 0
    assert read_meta(out / "klue_sts")["counts"]["symmetric"] == {"train": 2, "dev": 1}

    glue = _pairs("rte", ["entailment", "not_entailment"])
    write_tables(Loaded({"pairs": glue}, {"sources": {"glue": {"license": "GLUE's", "license_id": "x"}}}),
                 english / "glue")
    assert main(["generate", "calum", "--task", "rte", "--tables", str(english), "--params", str(params),
                 "--out", str(out / "rte")]) == 0
    assert read_meta(out / "rte")["sources"] == {"glue": {"license": "GLUE's", "license_id": "x"}}
    assert read_meta(out / "rte")["license"] == "x"
    capsys.readouterr()
    assert main(["generate", "calum", "--task", "klue_nli", "--tables", str(english), "--params", str(params),
                 "--out", str(out / "none")]) != 0
    assert "klue: no tables here (run: probes tables klue" in capsys.readouterr().err
