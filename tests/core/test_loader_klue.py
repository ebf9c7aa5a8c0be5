"""The klue loader: KLUE-NLI and KLUE-STS release JSON files written here, malformed records, the Hub path on a
small dataset in the Hub's layout (parquet, loaded by datasets), and `probes tables klue` with a params file."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
import yaml

from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile, section
from probekit.sources.loaders import klue, read_report, read_tables
from probes.main import main

from helpers import hub_from_folder
from klue_files import NLI, STS, nli_records, sts_records, write_release


def params(**given) -> klue.KlueParams:
    return section(ParamsFile(None, {"tables": {"klue": given}}), "tables.klue", klue.KlueParams)


def test_release_files(tmp_path):
    write_release(tmp_path / "klue")
    loaded = klue.load(tmp_path / "raw-unused", params(source="files", folder=str(tmp_path / "klue")))
    rows = loaded.tables["pairs"]
    assert list(rows.columns) == klue.PAIR_COLUMNS
    assert rows.values.tolist() == [
        ["klue_nli", "train", "klue-nli-v1_train_00000", NLI["train"][0][0], NLI["train"][0][1], "entailment", 0],
        ["klue_nli", "train", "klue-nli-v1_train_00001", NLI["train"][1][0], NLI["train"][1][1], "contradiction", 1],
        ["klue_nli", "train", "klue-nli-v1_train_00002", NLI["train"][2][0], NLI["train"][2][1], "neutral", 2],
        ["klue_nli", "dev", "klue-nli-v1_dev_00000", NLI["dev"][0][0], NLI["dev"][0][1], "contradiction", 0],
        ["klue_nli", "dev", "klue-nli-v1_dev_00001", NLI["dev"][1][0], NLI["dev"][1][1], "entailment", 1],
        ["klue_nli", "dev", "klue-nli-v1_dev_00002", NLI["dev"][2][0], NLI["dev"][2][1], "neutral", 2],
        ["klue_sts", "train", "klue-sts-v1_train_00000", STS["train"][0][0], STS["train"][0][1], "similar", 0],
        ["klue_sts", "train", "klue-sts-v1_train_00001", STS["train"][1][0], STS["train"][1][1], "not_similar", 1],
        ["klue_sts", "dev", "klue-sts-v1_dev_00000", STS["dev"][0][0], STS["dev"][0][1], "similar", 0],
        ["klue_sts", "dev", "klue-sts-v1_dev_00001", STS["dev"][1][0], STS["dev"][1][1], "not_similar", 1]]
    report = loaded.report
    assert report["tasks"]["klue_sts"]["train"] == {"rows": 2, "labels": {"not_similar": 1, "similar": 1}}
    assert report["rows"] == 10 and report["source"] == "files"
    name = "klue-nli-v1.1_dev.json"
    assert report["files"][name] == hashlib.sha256((tmp_path / "klue" / name).read_bytes()).hexdigest()
    only_sts = klue.load(tmp_path, params(source="files", folder=str(tmp_path / "klue"), tasks=["klue_sts"]))
    assert set(only_sts.tables["pairs"].task) == {"klue_sts"} and list(only_sts.report["files"]) == [
        "klue-sts-v1.1_train.json", "klue-sts-v1.1_dev.json"]


def test_a_missing_field_or_unknown_label_names_file_and_record(tmp_path):
    folder = tmp_path / "klue"
    p = params(source="files", folder=str(folder))
    records = nli_records("train")
    del records[1]["hypothesis"]
    write_release(folder, **{"klue-nli-v1.1_train": records})
    with pytest.raises(DataError, match=r"klue-nli-v1\.1_train\.json: record 1 \(guid 'klue-nli-v1_train_00001'\): "
                                        r"missing or non-text field\(s\) \['hypothesis'\]"):
        klue.load(tmp_path, p)
    records = nli_records("dev")
    records[0]["gold_label"] = "-"
    write_release(folder, **{"klue-nli-v1.1_dev": records})
    with pytest.raises(DataError, match=r"klue-nli-v1\.1_dev\.json: record 0 \(guid 'klue-nli-v1_dev_00000'\): "
                                        r"gold_label '-' is missing or not one of entailment, neutral, contradiction"):
        klue.load(tmp_path, p)
    sts = sts_records("train")
    sts[1]["labels"]["binary-label"] = 2
    write_release(folder, **{"klue-sts-v1.1_train": sts})
    with pytest.raises(DataError, match=r"klue-sts-v1\.1_train\.json: record 1 \(guid 'klue-sts-v1_train_00001'\): "
                                        r"labels\.binary-label 2 is missing or not one of 0, 1"):
        klue.load(tmp_path, params(source="files", folder=str(folder), tasks=["klue_sts"]))
    del sts[1]["labels"]
    write_release(folder, **{"klue-sts-v1.1_train": sts})
    with pytest.raises(DataError, match=r"record 1 \(guid 'klue-sts-v1_train_00001'\): labels\.binary-label None"):
        klue.load(tmp_path, params(source="files", folder=str(folder), tasks=["klue_sts"]))
    other, dev = params(source="files", folder=str(folder / "other"), tasks=["klue_sts"]), "klue-sts-v1.1_dev.json"
    write_release(folder / "other")
    (folder / "other" / dev).write_text('{"guid": "a"}', encoding="utf-8")
    with pytest.raises(DataError, match=r"other/klue-sts-v1\.1_dev\.json: expected a JSON list of records, got dict"):
        klue.load(tmp_path, other)
    (folder / "other" / dev).write_text('[{"guid": "a"}, ', encoding="utf-8")
    with pytest.raises(DataError, match=r"other/klue-sts-v1\.1_dev\.json:1:\d+: not JSON"):
        klue.load(tmp_path, other)
    (folder / "other" / dev).unlink()
    with pytest.raises(DataError, match=r"klue-sts-v1\.1_dev\.json: missing \(KLUE's release file"):
        klue.load(tmp_path, other)


def test_params_validation():
    assert params().source == "hub" and params().tasks == ["klue_nli", "klue_sts"]
    assert klue.sources(params()) == [] and klue.sources(params(source="files", folder="x")) == []
    with pytest.raises(ParamsError, match="source: files needs `folder`"):
        params(source="files")
    for bad in ({"tasks": ["kornli"]}, {"tasks": []}, {"source": "mirror"}, {"splits": ["dev"]}):
        with pytest.raises(ParamsError):
            params(**bad)


def hub_layout(root, datasets) -> None:
    """A small copy of klue/klue in the Hub's layout: ``<config>/<split>-00000-of-00001.parquet`` with the Hub's
    features (NLI ``label`` a class label; STS ``labels`` a struct whose ``binary-label`` is one)."""
    nli = datasets.Features({"guid": datasets.Value("string"), "source": datasets.Value("string"),
                             "premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                             "label": datasets.ClassLabel(names=list(klue.NLI_LABELS))})
    sts = datasets.Features({"guid": datasets.Value("string"), "source": datasets.Value("string"),
                             "sentence1": datasets.Value("string"), "sentence2": datasets.Value("string"),
                             "labels": {"label": datasets.Value("float64"), "real-label": datasets.Value("float64"),
                                        "binary-label": datasets.ClassLabel(names=["negative", "positive"])}})
    for split, hf_split in (("train", "train"), ("dev", "validation")):
        records = [{**{k: r[k] for k in ("guid", "premise", "hypothesis")}, "source": "NSMC",
                    "label": klue.NLI_LABELS.index(r["gold_label"])} for r in nli_records(split)]
        datasets.Dataset.from_list(records, features=nli).to_parquet(
            root / "nli" / f"{hf_split}-00000-of-00001.parquet")
        records = [{k: r[k] for k in ("guid", "source", "sentence1", "sentence2", "labels")} for r in sts_records(split)]
        datasets.Dataset.from_list(records, features=sts).to_parquet(
            root / "sts" / f"{hf_split}-00000-of-00001.parquet")


def test_hub_reads_the_hub_layout_through_datasets(tmp_path, monkeypatch):
    import datasets
    hub = tmp_path / "hub"
    hub_layout(hub, datasets)
    calls = hub_from_folder(monkeypatch, hub, tmp_path / "cache")
    write_release(tmp_path / "klue")
    from_hub = klue.load(tmp_path, params(hub_revision="abc"))
    from_files = klue.load(tmp_path, params(source="files", folder=str(tmp_path / "klue")))
    assert calls == [("klue/klue", "nli", "abc"), ("klue/klue", "sts", "abc")]
    pd.testing.assert_frame_equal(from_hub.tables["pairs"], from_files.tables["pairs"])
    assert from_hub.report["tasks"] == from_files.report["tasks"]
    assert from_hub.report["dataset"] == "klue/klue" and from_hub.report["revision"] == "abc"

    bad_labels = datasets.Features({"guid": datasets.Value("string"), "premise": datasets.Value("string"),
                                    "hypothesis": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=["yes", "no"])})
    no_sentence2 = datasets.Dataset.from_dict({"guid": ["x"], "sentence1": ["a"]})
    for hf_split in ("train", "validation"):
        datasets.Dataset.from_dict({"guid": ["x"], "premise": ["p"], "hypothesis": ["h"], "label": [0]},
                                   features=bad_labels).to_parquet(hub / "nli" / f"{hf_split}-00000-of-00001.parquet")
        no_sentence2.to_parquet(hub / "sts" / f"{hf_split}-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"klue/klue nli train: label is not a class label of entailment, neutral, "
                                        r"contradiction"):
        klue.load(tmp_path, params(tasks=["klue_nli"]))
    with pytest.raises(DataError, match=r"klue/klue sts train: no column\(s\) \['sentence2', 'labels'\]"):
        klue.load(tmp_path, params(tasks=["klue_sts"]))


def test_probes_tables_klue_from_a_params_file(tmp_path, capsys):
    write_release(tmp_path / "klue-release")
    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump({"tables": {"klue": {"source": "files",
                                                               "folder": str(tmp_path / "klue-release")}}}))
    out = tmp_path / "tables" / "klue"
    assert main(["tables", "klue", "--params", str(params_file), "--out", str(out)]) == 0
    assert "klue/pairs: 10 rows" in capsys.readouterr().out
    assert len(read_tables(out)["pairs"]) == 10
    report = read_report(out)
    assert report["sources"] == {} and report["params"]["source"] == "files" and len(report["files"]) == 4


def test_original_code_cuts_dev_in_halves_as_the_originals_datasets_slices(tmp_path, monkeypatch):
    """``splits_as: original_code``: dev ``validation[:50%]``, test ``validation[50%:]`` (DSincerity/CALM
    kor_dataset.py lines 12-19): the same rows as ``datasets``' own percent slicing, which rounds 2.5 of 5 rows down
    to 2 and 1.5 of 3 up to 2; from the files and from the Hub alike."""
    import datasets

    five = [dict(r, guid=f"klue-nli-v1_dev_{i:05d}", hypothesis=f"{r['hypothesis']} {i}")
            for i, r in enumerate(nli_records("dev") + nli_records("dev")[:2])]
    write_release(tmp_path / "klue", **{"klue-nli-v1.1_dev": five})
    hub = tmp_path / "hub"
    hub_layout(hub, datasets)
    nli = datasets.Features({"guid": datasets.Value("string"), "source": datasets.Value("string"),
                             "premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                             "label": datasets.ClassLabel(names=list(klue.NLI_LABELS))})
    dev_file = hub / "nli" / "validation-00000-of-00001.parquet"
    datasets.Dataset.from_list([{**{k: r[k] for k in ("guid", "premise", "hypothesis")}, "source": "NSMC",
                                 "label": klue.NLI_LABELS.index(r["gold_label"])} for r in five],
                               features=nli).to_parquet(dev_file)
    original = {}   # the original's slices, read by datasets itself
    for config, file in (("nli", dev_file), ("sts", hub / "sts" / "validation-00000-of-00001.parquet")):
        for split, spec in (("dev", "validation[:50%]"), ("test", "validation[50%:]")):
            original[(config, split)] = datasets.load_dataset(
                "parquet", data_files={"validation": str(file)}, split=spec, cache_dir=str(tmp_path / "c0"))["guid"]
    assert [len(v) for v in original.values()] == [2, 3, 1, 1]
    loaded = klue.load(tmp_path, params(source="files", folder=str(tmp_path / "klue"), splits_as="original_code"))
    rows = loaded.tables["pairs"]
    for (config, split), guids in original.items():
        assert rows[(rows.task == f"klue_{config}") & (rows.split == split)].idx.tolist() == guids
    assert loaded.report["tasks"]["klue_nli"]["test"]["rows"] == 3 and (rows.split == "train").sum() == 5
    calls = hub_from_folder(monkeypatch, hub, tmp_path / "cache")
    from_hub = klue.load(tmp_path, params(splits_as="original_code"))
    assert len(calls) == 2
    pd.testing.assert_frame_equal(from_hub.tables["pairs"], rows)
    assert params().splits_as == "release"
    with pytest.raises(DataError, match=r"klue klue_nli: 1 dev rows; splits_as: original_code cuts them in two"):
        write_release(tmp_path / "klue", **{"klue-nli-v1.1_dev": five[:1]})
        klue.load(tmp_path, params(source="files", folder=str(tmp_path / "klue"), splits_as="original_code"))
