"""The glue loader: GLUE's RTE/MRPC/QNLI files of the mirror, QQP/MNLI/QNLI TSV formats on small files written
here, malformed rows, and the Hub path on an in-memory DatasetDict."""

from __future__ import annotations

import pandas as pd
import pytest

from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile, section
from probekit.sources.loaders import glue

MNLI = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
        "sentence2_parse\tsentence1\tsentence2")


def params(**given) -> glue.GlueParams:
    return section(ParamsFile(None, {"tables": {"glue": given}}), "tables.glue", glue.GlueParams)


def records(df) -> list[tuple]:
    """The rows of ``df`` as tuples, a missing value (NaN in a pandas string column) as None."""
    return [tuple(None if pd.isna(v) else v for v in row) for row in df.itertuples(index=False)]


def write(raw, name: str, *lines: str) -> None:
    (raw / "glue").mkdir(parents=True, exist_ok=True)
    (raw / "glue" / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def pairs(source_tables):
    return source_tables("glue")["pairs"]


def test_mirror_rows_per_task_and_split(pairs):
    counts = pairs.groupby(["task", "split"], sort=False).size().to_dict()
    assert counts == {("rte", "train"): 2490, ("rte", "dev"): 277, ("rte", "test"): 3000,
                      ("mrpc", "train"): 3668, ("mrpc", "dev"): 408, ("mrpc", "test"): 1725,
                      ("qnli", "dev"): 5463}
    assert list(pairs.columns) == glue.PAIR_COLUMNS
    assert not pairs.duplicated(["task", "split", "idx"]).any()


def test_mirror_labels(pairs):
    def labels(task, split):
        return pairs[(pairs.task == task) & (pairs.split == split)].label.value_counts().to_dict()

    assert labels("rte", "train") == {"entailment": 1249, "not_entailment": 1241}
    assert labels("rte", "dev") == {"entailment": 146, "not_entailment": 131}
    assert labels("mrpc", "train") == {"equivalent": 2474, "not_equivalent": 1194}
    assert labels("mrpc", "dev") == {"equivalent": 279, "not_equivalent": 129}
    assert labels("qnli", "dev") == {"entailment": 2702, "not_entailment": 2761}
    assert pairs[pairs.split == "test"].label.isna().all()
    assert pairs[pairs.split != "test"].label.notna().all()


def test_mrpc_bom_stripped_and_ids(pairs):
    mrpc = pairs[pairs.task == "mrpc"]
    for column in ("idx", "sentence1", "sentence2", "label"):
        assert not mrpc[column].dropna().str.contains("\ufeff").any(), column
    first = mrpc.iloc[0]
    assert (first.split, first.idx, first.line, first.label) == ("train", "0", 2, "equivalent")
    assert first.sentence1.startswith('Amrozi accused his brother, whom he called "the witness"')
    test = mrpc[mrpc.split == "test"]
    assert test.idx.tolist() == [str(i) for i in range(1725)]  # the test file's own index column


def test_rte_unbalanced_quote_read_intact(pairs):
    row = pairs[(pairs.task == "rte") & (pairs.split == "train") & (pairs.idx == "2164")].iloc[0]
    assert row.sentence1.startswith('"That film wasn\'t too successful, but then \'WarGames,\'')
    assert row.sentence1.endswith("in 1983.")
    assert row.sentence2 == 'The film "WarGames" was shot in 1983.'
    assert (row.label, row.line) == ("not_entailment", 2166)


def test_qqp_mnli_qnli_formats(tmp_path):
    write(tmp_path, "qqp_train.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
          "7\t15\t16\tHow do I \"learn?\tHow to learn?\t1", "9\t17\t18\tWhy?\tWhere?\t0")
    write(tmp_path, "qqp_test.tsv", "id\tquestion1\tquestion2", "0\tA?\tB?")
    write(tmp_path, "mnli_train.tsv", MNLI + "\tlabel1\tgold_label",
          "0\t31193\t31193n\tgovernment\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tPremise one.\tHypo one.\tneutral\tneutral")
    write(tmp_path, "mnli_dev_matched.tsv", MNLI + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
          "0\t63735\t63735n\tslate\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tThe new rights are nice.\tEveryone likes them."
          "\tneutral\tentailment\tneutral\tneutral\tneutral\tneutral")
    write(tmp_path, "mnli_test_matched.tsv", MNLI, "0\t31493\t31493\ttravel\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tP.\tH.")
    write(tmp_path, "qnli_train.tsv", "index\tquestion\tsentence\tlabel", "0\tWhen?\tIn 1900.\tentailment")
    write(tmp_path, "qnli_test.tsv", "index\tquestion\tsentence", "0\tWho?\tNobody.")
    p = params(tasks=["mnli", "qqp", "qnli"], splits={"qqp": ["test", "train"], "qnli": ["train", "test"],
                                                       "mnli": ["train", "dev_matched", "test_matched"]})
    loaded = glue.load(tmp_path, p)
    assert records(loaded.tables["pairs"]) == [
        ("qnli", "train", "0", "When?", "In 1900.", "entailment", 2),
        ("qnli", "test", "0", "Who?", "Nobody.", None, 2),
        ("qqp", "train", "7", 'How do I "learn?', "How to learn?", "duplicate", 2),
        ("qqp", "train", "9", "Why?", "Where?", "not_duplicate", 3),
        ("qqp", "test", "0", "A?", "B?", None, 2),
        ("mnli", "train", "0", "Premise one.", "Hypo one.", "neutral", 2),
        ("mnli", "dev_matched", "0", "The new rights are nice.", "Everyone likes them.", "neutral", 2),
        ("mnli", "test_matched", "0", "P.", "H.", None, 2),
    ]
    assert loaded.report["tasks"]["qqp"]["train"] == {"rows": 2, "labels": {"duplicate": 1, "not_duplicate": 1}}


def test_missing_field_and_unknown_label_name_file_and_line(tmp_path):
    write(tmp_path, "rte_train.tsv", "index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\tentailment", "1\tA.\tB.")
    with pytest.raises(DataError, match=r"rte_train\.tsv:3: 3 tab-separated fields, expected 4"):
        glue.load(tmp_path, params(tasks=["rte"], splits={"rte": ["train"]}))
    write(tmp_path, "mrpc_dev.tsv", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\tA.\tB.",
          "2\t3\t4\tC.\tD.")
    with pytest.raises(DataError, match=r"mrpc_dev\.tsv:3: unknown MRPC label '2'"):
        glue.load(tmp_path, params(tasks=["mrpc"], splits={"mrpc": ["dev"]}))
    write(tmp_path, "qnli_dev.tsv", "index\tquestion\tlabel", "0\tQ?\tentailment")
    with pytest.raises(DataError, match=r"qnli_dev\.tsv:1: header lacks column\(s\) \['sentence'\]"):
        glue.load(tmp_path, params(tasks=["qnli"]))


def test_mirror_without_qqp_files_suggests_hub(tmp_path):
    with pytest.raises(DataError, match=r"qqp_train\.tsv: missing \(the glue source has no QQP train file: "
                                        r"set tables\.glue\.source: hub"):
        glue.load(tmp_path, params(tasks=["qqp"]))
    with pytest.raises(DataError, match=r"rte_train\.tsv: missing \(run: probes sources fetch glue\)"):
        glue.load(tmp_path, params(tasks=["rte"]))


def test_params_validation():
    assert params().tasks == ["rte", "mrpc", "qnli"] and params().task_splits("qnli") == ["dev"]
    assert params(splits={"mnli": ["dev_mismatched", "dev_matched"]}).task_splits("mnli") == [
        "dev_matched", "dev_mismatched"]
    assert glue.sources(params()) == ["glue"] and glue.sources(params(source="hub")) == []
    for bad in ({"tasks": ["sst2"]}, {"tasks": []}, {"splits": {"rte": ["dev_matched"]}}, {"source": "web"},
                {"extra": 1}):
        with pytest.raises(ParamsError):
            params(**bad)


def test_hub_maps_class_labels(monkeypatch):
    import datasets

    def split(s1, s2, names, labels):
        features = datasets.Features({s1: datasets.Value("string"), s2: datasets.Value("string"),
                                      "label": datasets.ClassLabel(names=names), "idx": datasets.Value("int32")})
        return datasets.Dataset.from_dict({s1: [f"{s1} {i}" for i in range(len(labels))],
                                           s2: [f"{s2} {i}" for i in range(len(labels))],
                                           "label": labels, "idx": [10 + i for i in range(len(labels))]},
                                          features=features)

    hub = {"mrpc": datasets.DatasetDict(
               train=split("sentence1", "sentence2", ["not_equivalent", "equivalent"], [1, 0]),
               validation=split("sentence1", "sentence2", ["not_equivalent", "equivalent"], [0]),
               test=split("sentence1", "sentence2", ["not_equivalent", "equivalent"], [-1])),
           "mnli": datasets.DatasetDict(
               validation_mismatched=split("premise", "hypothesis", ["entailment", "neutral", "contradiction"],
                                           [2, 1]))}
    calls = []

    def load_dataset(path, name, revision=None):
        calls.append((path, name, revision))
        return hub[name]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    p = params(source="hub", tasks=["mnli", "mrpc"], splits={"mnli": ["dev_mismatched"]}, hub_revision="abc")
    loaded = glue.load("/nonexistent", p)
    rows = loaded.tables["pairs"]
    assert calls == [("nyu-mll/glue", "mrpc", "abc"), ("nyu-mll/glue", "mnli", "abc")]
    assert rows[["task", "split", "idx", "sentence1", "sentence2", "line"]].values.tolist() == [
        ["mrpc", "train", "10", "sentence1 0", "sentence2 0", 0], ["mrpc", "train", "11", "sentence1 1", "sentence2 1", 1],
        ["mrpc", "dev", "10", "sentence1 0", "sentence2 0", 0], ["mrpc", "test", "10", "sentence1 0", "sentence2 0", 0],
        ["mnli", "dev_mismatched", "10", "premise 0", "hypothesis 0", 0],
        ["mnli", "dev_mismatched", "11", "premise 1", "hypothesis 1", 1]]
    assert [y for (y,) in records(rows[["label"]])] == [
        "equivalent", "not_equivalent", "not_equivalent", None, "contradiction", "neutral"]
    assert loaded.report["revision"] == "abc" and loaded.report["tasks"]["mrpc"]["test"] == {"rows": 1, "labels": {}}

    hub["qqp"] = datasets.DatasetDict(train=split("question1", "question2", ["no", "yes"], [0]))
    with pytest.raises(DataError, match=r"nyu-mll/glue qqp train: unknown label name\(s\) \['no', 'yes'\]"):
        glue.load("/nonexistent", params(source="hub", tasks=["qqp"], splits={"qqp": ["train"]}))
