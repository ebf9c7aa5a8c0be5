"""CALUM's variants: indicators, segment order and pairing ids, on hand-made tables and over the whole
generated RTE and MRPC output of the mirror."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pandas as pd
import pytest

import generators.calum.generator as calum
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


def _mnli_pairs() -> pd.DataFrame:
    """MNLI's ``pairs`` as the glue tables hold them: GLUE's split names, premise in sentence1."""
    return pd.DataFrame([{"task": "mnli", "split": split, "idx": str(i), "sentence1": f"{split} premise {i}.",
                          "sentence2": f"{split} hypothesis {i}.", "label": None if split.startswith("test") else
                          ["entailment", "neutral", "contradiction"][i % 3], "line": i + 2}
                         for split in ("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched")
                         for i in range(2)])


def _first(variants: dict, variant: str, split: str) -> tuple[str, str]:
    row = variants[variant][split][0]
    return row["sentence1"], row["sentence2"]


def test_mnli_is_evaluated_in_the_order_it_is_trained_in_and_only_the_named_switch_swaps_it():
    """Every split, dev and test too, in the task's trained order (`train_order`, else `order`): the paper, §3,
    "Each model is trained on this original form". The one way out is `eval_order: original_code_swapped` (the
    setting before issue 52): with MNLI trained premise-first it writes the original code's inference, `original`
    hypothesis-first, REVERSE premise-first, SIGNAL `[Hypothesis] h [Premise] p` (DSincerity/CALM
    inference/dataset/mnli_dataset.py lines 11-32)."""
    default, meta = _build("mnli", _mnli_pairs())
    assert _first(default, "original", "dev") == ("Premise: dev_matched premise 0.",
                                                   "Hypothesis: dev_matched hypothesis 0.")
    assert "eval_order" not in meta and "eval_order" not in meta["params"]   # the default's meta.json as before
    assert "train_order" not in meta["params"]
    trained, meta = _build("mnli", _mnli_pairs(), train_order={"mnli": [2, 1]})
    for split in ("train", "dev", "test"):
        kind = {"train": "train", "dev": "dev_matched", "test": "test_matched"}[split]
        premise, hypothesis = f"{kind} premise 0.", f"{kind} hypothesis 0."
        assert _first(trained, "original", split) == (f"Hypothesis: {hypothesis}", f"Premise: {premise}")
        assert _first(trained, "reverse", split) == (f"Premise: {premise}", f"Hypothesis: {hypothesis}")
        assert _first(trained, "signal", split) == (f"[Hypothesis] {hypothesis}", f"[Premise] {premise}")
    assert meta["order"] == [2, 1] and meta["params"]["train_order"] == {"mnli": [2, 1]} and "eval_order" not in meta
    code, meta = _build("mnli", _mnli_pairs(), eval_order="original_code_swapped")
    assert _first(code, "original", "train") == ("Premise: train premise 0.", "Hypothesis: train hypothesis 0.")
    for split in ("dev", "test"):
        kind = split.replace("dev", "dev_matched").replace("test", "test_matched")
        premise, hypothesis = f"{kind} premise 0.", f"{kind} hypothesis 0."
        assert _first(code, "original", split) == (f"Hypothesis: {hypothesis}", f"Premise: {premise}")
        assert _first(code, "reverse", split) == (f"Premise: {premise}", f"Hypothesis: {hypothesis}")
        assert _first(code, "signal", split) == (f"[Hypothesis] {hypothesis}", f"[Premise] {premise}")
    assert code["original"]["dev"][0]["label"] == "entailment" and meta["order"] == [1, 2]
    assert meta["eval_order"] == [2, 1] and meta["params"]["eval_order"] == "original_code_swapped"
    # trained hypothesis-first, the switch still evaluates the other order: it always swaps, never silently agrees
    swapped, meta = _build("mnli", _mnli_pairs(), eval_order="original_code_swapped", train_order={"mnli": [2, 1]})
    assert _first(swapped, "original", "train")[0].startswith("Hypothesis: ")
    assert _first(swapped, "original", "dev")[0].startswith("Premise: ") and meta["eval_order"] == [1, 2]
    # KLUE-NLI too (klue_nli_dataset.py); RTE's inference keeps sentence1 first (rte_dataset.py)
    klue, _ = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli", "eval_order": "original_code_swapped"}}),
                          {"klue": {"pairs": _klue_pairs("klue_nli", ["entailment", "neutral", "contradiction"])}})
    assert _first(klue, "original", "dev")[0].startswith("가정: ")
    assert _first(klue, "original", "train")[0].startswith("전제: ")
    rte, meta = _build("rte", _pairs("rte", ["entailment", "not_entailment"]), eval_order="original_code_swapped")
    assert _first(rte, "original", "dev") == ("Sentence1: dev first 0.", "Sentence2: dev second 0.")
    assert meta["eval_order"] == [1, 2]
    with pytest.raises(ParamsError, match=r"calum.eval_order"):
        _build("rte", _pairs("rte", ["entailment"]), eval_order="hypothesis_first")
    with pytest.raises(ParamsError, match=r"calum.eval_order: original_code is now original_code_swapped"):
        _build("rte", _pairs("rte", ["entailment"]), eval_order="original_code")
    with pytest.raises(ParamsError, match=r"calum.train_order: .*mlni: not a CALUM task \(rte, mrpc"):
        _build("mnli", _mnli_pairs(), train_order={"mlni": [2, 1]})
    with pytest.raises(ParamsError, match=r"calum.train_order: .*mnli: must be \[1, 2\] or \[2, 1\]"):
        _build("mnli", _mnli_pairs(), train_order={"mnli": [2, 2]})


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
    by_id = {v: {r["pair_id"]: r for rows in variants[v].values() for r in rows} for v in variants}
    pair = "klue_nli-dev-klue_nli-v1_dev_00002"
    original, reverse, signal = (by_id[v][pair] for v in ("original", "reverse", "signal"))
    assert (original["sentence1"], original["sentence2"]) == ("전제: dev 첫 문장 2.", "가정: dev 둘째 문장 2.")
    assert (reverse["sentence1"], reverse["sentence2"]) == ("가정: dev 둘째 문장 2.", "전제: dev 첫 문장 2.")
    assert (signal["sentence1"], signal["sentence2"]) == ("[전제] dev 첫 문장 2.", "[가정] dev 둘째 문장 2.")
    assert original["pair_id"] == reverse["pair_id"] == signal["pair_id"] == "klue_nli-dev-klue_nli-v1_dev_00002"
    assert original["label"] == reverse["label"] == signal["label"] == "contradiction"
    assert meta["indicators"] == ["전제", "가정"]
    assert meta["counts"]["signal"] == {"train": 3, "dev": 2, "test": 1}   # test: half of dev, drawn (§4.1)
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
    (tmp_path / "probe.yaml").write_text((calum.HERE / "probe.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "fr.yaml").write_text(
        "benchmark: FLUE\ntables: flue\ntasks:\n  xnli_fr: {indicators: [Prémisse, Hypothèse], "
        "labels: [entailment, neutral, contradiction]}\n", encoding="utf-8")
    spec = calum.load_spec(tmp_path / "probe.yaml")
    assert list(spec.tasks) == ["xnli_fr"] and spec.language_of("xnli_fr")[0] == "fr"
    assert spec.language_of("xnli_fr")[1].tables == "flue"
    (tmp_path / "fr2.yaml").write_text(
        "benchmark: FLUE\ntables: flue\ntasks:\n  xnli_fr: {indicators: [A, B], labels: [x]}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"fr2\.yaml: task 'xnli_fr' is already defined in .*fr\.yaml"):
        calum.load_spec(tmp_path / "probe.yaml")
    (tmp_path / "fr2.yaml").write_text("benchmark: FLUE\ntasks: {}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"fr2\.yaml: tables: Field required$"):
        calum.load_spec(tmp_path / "probe.yaml")


def test_generate_reads_only_the_table_set_of_the_task(tmp_path, capsys):
    """`probes generate calum --task klue_nli` with only klue tables, `--task rte` with only glue tables: each
    reads the set its task names, and records that set's sources."""
    from probekit.sources.loaders import Loaded, write_tables
    from probes.main import main

    from klue_files import NLI, write_release

    write_release(tmp_path / "klue-release")
    params = tmp_path / "params.yaml"
    params.write_text(f"tables:\n  klue: {{source: files, folder: {tmp_path / 'klue-release'}}}\n")
    korean, english = tmp_path / "korean", tmp_path / "english"
    assert main(["tables", "klue", "--params", str(params), "--out", str(korean / "klue")]) == 0
    out = tmp_path / "out"
    assert main(["generate", "calum", "--task", "klue_nli", "--tables", str(korean), "--params", str(params),
                 "--out", str(out / "klue_nli")]) == 0
    meta = read_meta(out / "klue_nli")
    assert meta["counts"]["reverse"] == {"train": 3, "dev": 2, "test": 1} and meta["sources"] == {}
    signal = read_pairs(out / "klue_nli", "signal", "dev") + read_pairs(out / "klue_nli", "signal", "test")
    assert sorted(r["sentence1"] for r in signal) == sorted(f"[전제] {p}" for p, _, _ in NLI["dev"])
    card = (out / "klue_nli" / "README.md").read_text(encoding="utf-8")
    assert "language:\n- ko\n" in card and "Every example of KLUE\nNLI once per variant" in card
    assert "Test: 1 of the 3 dev rows, drawn with seed 0 and removed from dev" in card
    assert "- `signal`: `[전제] <text 1>` | `[가정] <text 2>`" in card
    assert main(["generate", "calum", "--task", "klue_sts", "--tables", str(korean), "--params", str(params),
                 "--out", str(out / "klue_sts")]) == 0
    assert read_meta(out / "klue_sts")["counts"]["symmetric"] == {"train": 2, "dev": 1, "test": 1}

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


# --- the Korean test splits: drawn as the paper's §4.1 ----------------------------------------------------------


def _korean(task: str, n: int, splits=("train", "dev")) -> pd.DataFrame:
    return pd.DataFrame([{"task": task, "split": split, "idx": f"{split}-{i}", "sentence1": f"{split} 첫 {i}",
                          "sentence2": f"{split} 둘째 {i}", "label": ["entailment", "neutral"][i % 2], "line": i + 2}
                         for split in splits for i in range(n)])


def test_the_klue_test_split_is_drawn_from_dev_and_removed_from_it():
    df = _korean("klue_nli", 41)
    variants, meta = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}), {"klue": {"pairs": df}})
    dev, test = ({r["idx"] for r in variants["original"][s]} for s in ("dev", "test"))
    assert len(test) == 20 and len(dev) == 21 and not dev & test and dev | test == set(df.idx[df.split == "dev"])
    assert meta["counts"]["reverse"] == {"train": 41, "dev": 21, "test": 20}
    ids = [r["idx"] for r in variants["original"]["test"]]
    assert ids == sorted(ids, key=lambda i: int(i.split("-")[1]))   # in the order of the split drawn from
    record = meta["test_draw"]
    assert record == {"from": "dev", "size": 0.5, "seed": 0, "rows": 20, "of": 41,
                      "ids_sha256": hashlib.sha256("".join(f"{i}\n" for i in ids).encode()).hexdigest()}
    assert meta["params"]["test_draw"] == {"seed": 0, "size": 0.5}
    assert all(r["label"] is not None for r in variants["original"]["test"])   # labelled: drawn from dev
    # deterministic: the same seed draws the same rows whatever the row order; another seed, others
    again, _ = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}),
                           {"klue": {"pairs": df.sample(frac=1, random_state=3)}})
    assert {r["idx"] for r in again["original"]["test"]} == test
    other, other_meta = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli", "test_draw": {"seed": 5}}}),
                                    {"klue": {"pairs": df}})
    assert {r["idx"] for r in other["original"]["test"]} != test and len(other["original"]["test"]) == 20
    assert other_meta["test_draw"]["ids_sha256"] != record["ids_sha256"]
    sized, _ = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli", "test_draw": {"size": {"klue_nli": 7}}}}),
                           {"klue": {"pairs": df}})
    assert len(sized["original"]["test"]) == 7 and len(sized["original"]["dev"]) == 34


def test_kornli_draws_its_test_from_train_and_reads_the_kornli_tables():
    df = _korean("kornli", 30)
    params = ParamsFile(None, {"calum": {"task": "kornli", "test_draw": {"size": {"kornli": 12}}}})
    variants, meta = calum.build(params, {"kornli": {"pairs": df}})
    assert meta["counts"]["original"] == {"train": 18, "dev": 30, "test": 12}
    assert meta["test_draw"]["from"] == "train" and meta["indicators"] == ["전제", "가정"]
    train, test = ({r["idx"] for r in variants["original"][s]} for s in ("train", "test"))
    assert not train & test and train | test == {f"train-{i}" for i in range(30)}
    assert variants["original"]["test"][0]["pair_id"].startswith("kornli-test-train-")
    meta |= {"license": "cc-by-sa-4.0", "sources": {}, "fingerprint": "f"}
    assert "Every example of KorNLUDatasets\nKorNLI" in calum.card(meta)


def test_a_test_draw_that_cannot_be_made_is_an_error():
    with pytest.raises(DataError, match=r"the klue tables' klue_nli already has a test split; its test is drawn "
                                        r"from dev"):
        calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}),
                    {"klue": {"pairs": _korean("klue_nli", 4, ("train", "dev", "test"))}})
    with pytest.raises(DataError, match=r"calum.test_draw.size.klue_nli: 0.5 draws 0 of the 1 dev rows"):
        calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}), {"klue": {"pairs": _korean("klue_nli", 1)}})
    with pytest.raises(DataError, match=r"calum.test_draw.size.kornli: 10000 draws 10000 of the 4 train rows"):
        calum.build(ParamsFile(None, {"calum": {"task": "kornli"}}), {"kornli": {"pairs": _korean("kornli", 4)}})
    repeated = _korean("klue_nli", 4).replace({"idx": {"dev-1": "dev-0"}})
    with pytest.raises(DataError, match=r"klue_nli dev: repeated idx 'dev-0'"):
        calum.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}), {"klue": {"pairs": repeated}})
    with pytest.raises(ParamsError, match=r"calum.test_draw.size: rte: not a task whose test is drawn"):
        _build("rte", _pairs("rte", ["entailment"]), test_draw={"size": {"rte": 0.5}})
    with pytest.raises(ParamsError, match=r"calum.test_draw.size.klue_sts"):
        calum.build(ParamsFile(None, {"calum": {"task": "klue_sts", "test_draw": {"size": {"klue_sts": 1.5}}}}),
                    {"klue": {"pairs": _korean("klue_sts", 4)}})


def test_kornli_keeps_the_test_its_table_set_cut_as_the_original_code():
    """``calum.test_draw.size.kornli: tables``: the test the kornli tables cut (``tables.kornli.splits_as:
    original_code``, the original's last SNLI rows) is kept whole, nothing is drawn from train, and the record in
    meta.json makes it the §4.1 test that ``calum_eval.evaluate_test: drawn`` evaluates."""
    from evaluators.calum.finetune import test_split
    from evaluators.calum.params import CalumEvalParams

    df = _korean("kornli", 5, ("train", "dev", "test"))
    keep = ParamsFile(None, {"calum": {"task": "kornli", "test_draw": {"size": {"kornli": "tables"}}}})
    variants, meta = calum.build(keep, {"kornli": {"pairs": df}})
    assert meta["counts"]["original"] == {"train": 5, "dev": 5, "test": 5}
    for split in ("train", "dev", "test"):
        assert [r["idx"] for r in variants["original"][split]] == [f"{split}-{i}" for i in range(5)]
    ids = "".join(f"test-{i}\n" for i in range(5))
    assert meta["test_draw"] == {"from": "test", "size": "tables", "rows": 5,
                                 "ids_sha256": hashlib.sha256(ids.encode()).hexdigest()}
    assert meta["params"]["test_draw"] == {"seed": 0, "size": "tables"}
    assert meta["indicators"] == ["전제", "가정"]
    assert test_split(SimpleNamespace(meta=meta), CalumEvalParams()) == "test"   # evaluate_test: drawn takes it
    card = calum.card(meta | {"license": "cc-by-sa-4.0", "sources": {}, "fingerprint": "f"})
    assert "Test: the table set's own test split, 5 rows, as the paper's test (§4.1), not drawn" in card
    # a size draws, and refuses the table set's test; `tables` needs one
    with pytest.raises(DataError, match=r"the kornli tables' kornli already has a test split; its test is drawn "
                                        r"from train .* or keep theirs \(calum\.test_draw\.size\.kornli: tables\)"):
        calum.build(ParamsFile(None, {"calum": {"task": "kornli", "test_draw": {"size": {"kornli": 2}}}}),
                    {"kornli": {"pairs": df}})
    with pytest.raises(DataError, match=r"calum\.test_draw\.size\.kornli: tables keeps the kornli tables' own kornli "
                                        r"test split, but they have none"):
        calum.build(keep, {"kornli": {"pairs": _korean("kornli", 5)}})
    with pytest.raises(ParamsError, match=r"calum\.test_draw\.size\.kornli"):
        calum.build(ParamsFile(None, {"calum": {"task": "kornli", "test_draw": {"size": {"kornli": "all"}}}}),
                    {"kornli": {"pairs": df}})
    # KLUE's too (tables.klue.splits_as: original_code: dev's second half)
    klue, klue_meta = calum.build(ParamsFile(None, {"calum": {"task": "klue_nli", "test_draw": {
        "size": {"klue_nli": "tables"}}}}), {"klue": {"pairs": _korean("klue_nli", 4, ("train", "dev", "test"))}})
    assert klue_meta["counts"]["signal"] == {"train": 4, "dev": 4, "test": 4}
    assert [r["idx"] for r in klue["original"]["test"]] == [f"test-{i}" for i in range(4)]


def test_glue_tasks_keep_their_own_test_and_their_meta():
    """No draw for GLUE: the test is GLUE's, and meta.json's params are those before the draw existed."""
    variants, meta = _build("rte", _pairs("rte", ["entailment", "not_entailment"]))
    assert "test_draw" not in meta and set(meta["params"]) == {"task", "order", "splits", "limit"}
    assert [r["idx"] for r in variants["original"]["test"]] == ["0", "1", "2"]


def test_probes_tables_and_generate_kornli(tmp_path):
    """The release files -> `probes tables kornli` -> `probes generate calum --task kornli`."""
    from probes.main import main

    from helpers import REPO
    from klue_files import KORNLI, write_kornli

    write_kornli(tmp_path / "raw" / "kornli")
    params = tmp_path / "params.yaml"
    params.write_text("calum:\n  test_draw: {seed: 3, size: {kornli: 2}}\n")
    assert main(["tables", "kornli", "--raw", str(tmp_path / "raw"), "--manifest", str(REPO / "raw/sources.yaml"),
                 "--params", str(params), "--out", str(tmp_path / "tables" / "kornli")]) == 0
    assert main(["generate", "calum", "--task", "kornli", "--tables", str(tmp_path / "tables"), "--params",
                 str(params), "--out", str(tmp_path / "kornli")]) == 0
    meta = read_meta(tmp_path / "kornli")
    assert meta["counts"]["reverse"] == {"train": 3, "dev": 2, "test": 2}
    assert meta["test_draw"] | {"ids_sha256": None} == {"from": "train", "size": 2, "seed": 3, "rows": 2, "of": 5,
                                                         "ids_sha256": None}
    assert meta["sources"]["kornli"]["license_id"] == "cc-by-sa-4.0" and meta["license"] == "cc-by-sa-4.0"
    test = read_pairs(tmp_path / "kornli", "original", "test")
    train_texts = {a for f in ("multinli.train.ko.tsv", "snli_1.0_train.ko.tsv") for a, _, _ in KORNLI[f]}
    assert {r["segments"][0]["text"] for r in test} <= train_texts


def test_probes_tables_and_generate_kornli_as_the_original_code(tmp_path):
    """The paper profile's KorNLI: `probes tables kornli` with ``splits_as: original_code`` -> `probes generate
    calum --task kornli` with ``test_draw.size.kornli: tables``: train, dev and test are SNLI's training rows cut in
    order (the original's [:-2h], [-2h:-h], [-h:]), with the original code's indicators."""
    from probes.main import main

    from helpers import REPO
    from klue_files import write_kornli

    snli = [(f"전제 문장 {i}.", f"가정 문장 {i}.", ["entailment", "neutral", "contradiction"][i % 3]) for i in range(7)]
    write_kornli(tmp_path / "raw" / "kornli", **{"snli_1.0_train.ko.tsv": "sentence1\tsentence2\tgold_label\n"
                                                 + "".join("\t".join(r) + "\n" for r in snli)})
    params = tmp_path / "params.yaml"
    params.write_text("tables:\n  kornli: {splits_as: original_code, holdout: 2}\n"
                      "calum:\n  test_draw: {size: {kornli: tables}}\n")
    assert main(["tables", "kornli", "--raw", str(tmp_path / "raw"), "--manifest", str(REPO / "raw/sources.yaml"),
                 "--params", str(params), "--out", str(tmp_path / "tables" / "kornli")]) == 0
    assert main(["generate", "calum", "--task", "kornli", "--tables", str(tmp_path / "tables"), "--params",
                 str(params), "--out", str(tmp_path / "kornli")]) == 0
    meta = read_meta(tmp_path / "kornli")
    assert meta["counts"]["original"] == {"train": 3, "dev": 2, "test": 2} and meta["test_draw"]["size"] == "tables"
    for split, positions in {"train": [0, 1, 2], "dev": [3, 4], "test": [5, 6]}.items():
        rows = read_pairs(tmp_path / "kornli", "original", split)
        assert [r["idx"] for r in rows] == [f"snli-{i}" for i in positions]
        assert [(r["sentence1"], r["sentence2"]) for r in rows] == [
            (f"전제: {snli[i][0]}", f"가정: {snli[i][1]}") for i in positions]
