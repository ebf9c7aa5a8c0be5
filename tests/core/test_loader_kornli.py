"""The kornli loader: KorNLI release TSV files written here (SNLI's no-gold ``-`` rows, malformed rows), the Hub
path on a small dataset in the Hub's layout (parquet, loaded by datasets), `probes tables kornli`, and the original
code's split (``splits_as: original_code``) against ``datasets``' own slicing."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
import yaml

from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile, section
from probekit.sources.loaders import kornli, read_report, read_tables
from probes.main import main

from helpers import REPO, hub_from_folder
from klue_files import KORNLI, write_kornli


def params(**given) -> kornli.KorNliParams:
    return section(ParamsFile(None, {"tables": {"kornli": given}}), "tables.kornli", kornli.KorNliParams)


def test_release_files(tmp_path):
    write_kornli(tmp_path / "kornli")
    loaded = kornli.load(tmp_path, params())
    rows = loaded.tables["pairs"]
    assert list(rows.columns) == kornli.PAIR_COLUMNS
    mnli, snli, dev = KORNLI["multinli.train.ko.tsv"], KORNLI["snli_1.0_train.ko.tsv"], KORNLI["xnli.dev.ko.tsv"]
    assert rows.values.tolist() == [
        ["kornli", "train", "multinli-0", *mnli[0], 2], ["kornli", "train", "multinli-1", *mnli[1], 3],
        ["kornli", "train", "multinli-2", *mnli[2], 4],
        ["kornli", "train", "snli-0", *snli[0], 2], ["kornli", "train", "snli-2", *snli[2], 4],   # snli-1: "-"
        ["kornli", "dev", "xnli-0", *dev[0], 2], ["kornli", "dev", "xnli-1", *dev[1], 3]]
    assert rows.sentence1.iloc[5].endswith('"엄마, 저 왔어요."')   # quotes are text, not quoting
    report = loaded.report
    assert report["tasks"]["kornli"]["train"] == {"rows": 5, "labels": {"entailment": 3, "neutral": 2}}
    assert report["dropped"] == {"train/multinli": {"no gold label": 0}, "train/snli": {"no gold label": 1},
                                 "dev/xnli": {"no gold label": 0}}
    name = "xnli.dev.ko.tsv"
    assert report["files"][name] == hashlib.sha256((tmp_path / "kornli" / name).read_bytes()).hexdigest()
    assert "xnli.test.ko.tsv" not in report["files"]   # the paper draws its test from train
    chosen = kornli.load(tmp_path, params(train=["snli"], splits=["train", "test"])).tables["pairs"]
    assert chosen.idx.tolist() == ["snli-0", "snli-2", "xnli-0"] and chosen.split.tolist()[-1] == "test"


def test_a_malformed_row_names_file_and_line(tmp_path):
    folder = tmp_path / "kornli"
    header = "sentence1\tsentence2\tgold_label\n"
    cases = {header + "a\tb\tentailment\na\tb\n": r"multinli\.train\.ko\.tsv:3: 2 tab-separated fields, expected 3",
             header + "a\tb\tmaybe\n": r"multinli\.train\.ko\.tsv:2: unknown gold_label 'maybe' \(expected one of "
                                       r"entailment, neutral, contradiction\)",
             "premise\thypothesis\tlabel\n": r"multinli\.train\.ko\.tsv:1: header lacks column\(s\) \['sentence1', "
                                            r"'sentence2', 'gold_label'\]"}
    for text, message in cases.items():
        write_kornli(folder, **{"multinli.train.ko.tsv": text})
        with pytest.raises(DataError, match=message):
            kornli.load(tmp_path, params())
    write_kornli(folder)
    (folder / "xnli.dev.ko.tsv").unlink()
    with pytest.raises(DataError, match=r"xnli\.dev\.ko\.tsv: missing \(run: probes sources fetch kornli"):
        kornli.load(tmp_path, params())


def test_params_validation():
    assert params().source == "release" and params().train == ["multinli", "snli"]
    assert params().splits == ["train", "dev"]
    assert kornli.sources(params()) == ["kornli"] and kornli.sources(params(source="hub")) == []
    for bad in ({"train": ["xnli"]}, {"train": []}, {"splits": ["dev", "dev"]}, {"source": "files"},
                {"folder": "x"}):
        with pytest.raises(ParamsError):
            params(**bad)


def hub_layout(root, datasets) -> None:
    """A small copy of kakaobrain/kor_nli in the Hub's layout (``<config>/<split>-00000-of-00001.parquet``,
    ``label`` a class label), from the same rows as the release files; a no-gold row is label -1."""
    features = datasets.Features({"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=list(kornli.LABELS))})
    for (split, corpus), (config, hf_split) in kornli.HUB.items():
        records = [{"premise": a, "hypothesis": b, "label": kornli.LABELS.index(y) if y in kornli.LABELS else -1}
                   for a, b, y in KORNLI[kornli.FILES[(split, corpus)]]]
        datasets.Dataset.from_list(records, features=features).to_parquet(
            root / config / f"{hf_split}-00000-of-00001.parquet")


def test_hub_reads_the_hub_layout_through_datasets(tmp_path, monkeypatch):
    import datasets
    hub = tmp_path / "hub"
    hub_layout(hub, datasets)
    calls = hub_from_folder(monkeypatch, hub, tmp_path / "cache")
    write_kornli(tmp_path / "kornli")
    from_hub = kornli.load(tmp_path, params(source="hub", hub_revision="abc", splits=["train", "dev", "test"]))
    from_files = kornli.load(tmp_path, params(splits=["train", "dev", "test"]))
    assert calls == [("kakaobrain/kor_nli", c, "abc") for c in ("multi_nli", "snli", "xnli", "xnli")]
    hub_rows, file_rows = from_hub.tables["pairs"], from_files.tables["pairs"]
    pd.testing.assert_frame_equal(hub_rows.drop(columns="line"), file_rows.drop(columns="line"))
    assert hub_rows.line.tolist()[:3] == [0, 1, 2]   # the Hub row's position; the file's line has the header
    assert from_hub.report["tasks"] == from_files.report["tasks"]
    assert from_hub.report["dropped"] == from_files.report["dropped"]
    assert from_hub.report["dataset"] == "kakaobrain/kor_nli" and "files" not in from_hub.report

    datasets.Dataset.from_dict({"premise": ["p"], "hypothesis": ["h"], "label": [0]}, features=datasets.Features(
        {"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
         "label": datasets.ClassLabel(names=["yes", "no"])})).to_parquet(hub / "snli" / "train-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"kakaobrain/kor_nli snli train: label is not a class label of entailment"):
        kornli.load(tmp_path, params(source="hub"))
    datasets.Dataset.from_dict({"premise": ["p"]}).to_parquet(hub / "snli" / "train-00000-of-00001.parquet")
    with pytest.raises(DataError, match=r"kakaobrain/kor_nli snli train: no column\(s\) \['hypothesis', 'label'\]"):
        kornli.load(tmp_path, params(source="hub"))


def test_probes_tables_kornli_from_the_raw_folder(tmp_path, capsys):
    write_kornli(tmp_path / "raw" / "kornli")
    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump({"tables": {"kornli": {"train": ["multinli"]}}}))
    out = tmp_path / "tables" / "kornli"
    assert main(["tables", "kornli", "--raw", str(tmp_path / "raw"), "--params", str(params_file),
                 "--manifest", str(REPO / "raw" / "sources.yaml"), "--out", str(out)]) == 0
    assert "kornli/pairs: 5 rows" in capsys.readouterr().out
    assert read_tables(out)["pairs"].split.tolist() == ["train"] * 3 + ["dev"] * 2
    report = read_report(out)
    assert report["sources"]["kornli"]["license_id"] == "cc-by-sa-4.0" and report["params"]["train"] == ["multinli"]
    assert sorted(report["files"]) == ["multinli.train.ko.tsv", "xnli.dev.ko.tsv"]


# --- splits_as: original_code, the original code's KorNLI (DSincerity/CALM kornli/kornli.py lines 21-24) --------

SNLI = [(f"말을 탄 사람 {i}.", f"사람이 있다 {i}.", "-" if i == 4 else kornli.LABELS[i % 3]) for i in range(9)]
"""Nine rows of SNLI's Korean training file; row 4 has no gold label and falls in the dev cut of holdout 3."""


def test_original_code_cuts_snlis_training_set_as_the_originals_datasets_slices(tmp_path, monkeypatch):
    """train ``[:-2h]``, dev ``[-2h:-h]``, test ``[-h:]`` of ``kor_nli`` ``snli`` ``train`` (the original's
    h = 10,000; 3 here), from the release file and from the Hub alike: the same rows as ``datasets``' own slicing of
    the Hub's split, which is what the original ran; a row without a gold label dropped after the cut, so the others
    keep their split; MultiNLI and XNLI not read."""
    import datasets

    write_kornli(tmp_path / "kornli", **{"snli_1.0_train.ko.tsv": "sentence1\tsentence2\tgold_label\n"
                                         + "".join("\t".join(r) + "\n" for r in SNLI)})
    hub = tmp_path / "hub" / "snli"
    hub.mkdir(parents=True)
    features = datasets.Features({"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=list(kornli.LABELS))})
    records = [{"premise": a, "hypothesis": b, "label": kornli.LABELS.index(y) if y != "-" else -1} for a, b, y in SNLI]
    datasets.Dataset.from_list(records, features=features).to_parquet(hub / "train-00000-of-00001.parquet")
    original = {}   # the original's slices, read by datasets itself
    for split, spec in {"train": "train[:-6]", "dev": "train[-6:-3]", "test": "train[-3:]"}.items():
        part = datasets.load_dataset("parquet", data_files={"train": str(hub / "train-00000-of-00001.parquet")},
                                     split=spec, cache_dir=str(tmp_path / "cache0"))
        original[split] = [(a, b, kornli.LABELS[y]) for a, b, y in zip(part["premise"], part["hypothesis"],
                                                                         part["label"]) if y != -1]
    assert [len(v) for v in original.values()] == [3, 2, 3]
    loaded = kornli.load(tmp_path, params(splits_as="original_code", holdout=3))
    rows = loaded.tables["pairs"]
    for split, expected in original.items():
        part = rows[rows.split == split]
        assert list(zip(part.sentence1, part.sentence2, part.label)) == expected
    assert rows.split.tolist() == ["train"] * 3 + ["dev"] * 2 + ["test"] * 3
    assert rows.idx.tolist() == [f"snli-{i}" for i in (0, 1, 2, 3, 5, 6, 7, 8)]   # positions in the file
    report = loaded.report
    assert report["cut"] == {"rows": 9, "holdout": 3, "train": [0, 3], "dev": [3, 6], "test": [6, 9]}
    assert report["dropped"] == {f"{s}/snli": {"no gold label": int(s == "dev")} for s in ("train", "dev", "test")}
    assert list(report["files"]) == ["snli_1.0_train.ko.tsv"]
    assert report["tasks"]["kornli"]["test"]["rows"] == 3

    calls = hub_from_folder(monkeypatch, tmp_path / "hub", tmp_path / "cache")
    from_hub = kornli.load(tmp_path, params(source="hub", splits_as="original_code", holdout=3))
    assert calls == [("kakaobrain/kor_nli", "snli", None)]
    pd.testing.assert_frame_equal(from_hub.tables["pairs"].drop(columns="line"), rows.drop(columns="line"))
    assert from_hub.report["cut"] == report["cut"] and from_hub.report["dropped"] == report["dropped"]


def test_original_code_params_and_a_file_too_short_for_the_cut(tmp_path):
    assert params().splits_as == "release" and params(splits_as="original_code").holdout == 10000   # the original's
    assert params(splits_as="original_code").parts() == [("train", "snli")]
    with pytest.raises(ParamsError, match=r"splits_as: original_code cuts train, dev and test from SNLI's training "
                                          r"set, as the original code: leave out splits and train"):
        params(splits_as="original_code", train=["snli"], splits=["train"])
    with pytest.raises(ParamsError, match=r"holdout is read with splits_as: original_code only"):
        params(holdout=5)
    with pytest.raises(ParamsError):
        params(splits_as="original_code", holdout=0)
    write_kornli(tmp_path / "kornli")
    with pytest.raises(DataError, match=r"snli_1\.0_train\.ko\.tsv: 3 rows; splits_as: original_code cuts dev and "
                                        r"test, 10000 rows each \(tables\.kornli\.holdout\), from its end"):
        kornli.load(tmp_path, params(splits_as="original_code"))
    with pytest.raises(DataError, match=r"^x: 2 rows; .* it needs more than 2$"):
        kornli.cut([], 2, 1, "x")
