"""CALUM's variants: indicators, segment order and pairing ids, on hand-made tables and over the whole
generated RTE and MRPC output of the mirror."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import generators.calum as calum
from probekit.errors import DataError, ParamsError
from probekit.pair_dataset import read_meta, read_pairs, write_pair_dataset
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
