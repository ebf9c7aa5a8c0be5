"""MNLI and the `All` group from GLUE's own files: small TSVs written here in GLUE's layout (MNLI/train.tsv,
dev_matched.tsv, ... as GLUE's zips unpack, beside the flat rte_*.tsv / mrpc_*.tsv the glue source fetches),
read by the glue loader, generated with GLUE's split names (MNLI's dev = matched + mismatched, as the original
code's inference), and fine-tuned: the MNLI run and an `All` multitask run complete. A task with none of its
files (QQP) is left out and reported, without blocking the others."""

from __future__ import annotations

import json
import logging

import pytest

import generators.calum.generator as calum_generator
from evaluators.calum import finetune as calum
from evaluators.calum.params import CalumEvalParams
from probekit.data.pairs import write_pair_dataset
from probekit.errors import DataError
from probekit.params import ParamsFile, section
from probekit.sources.loaders import glue
from probekit.tokens.refs import ModelRef

MNLI = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
        "sentence2_parse\tsentence1\tsentence2")
WORDS = ["the cat sat on the mat", "a dog ran in the park", "the man is eating food", "she reads a good book",
         "the sun is very hot today", "people walk to the old city", "a child plays with a red ball",
         "the river runs by the house"]
LABELS = {"mnli": ["entailment", "neutral", "contradiction"], "qnli": ["entailment", "not_entailment"],
          "rte": ["entailment", "not_entailment"], "qqp": ["0", "1"], "mrpc": ["0", "1"]}


def _pair(task: str, split: str, i: int) -> tuple[str, str]:
    """Two sentences, distinct per task, split and row."""
    return f"{WORDS[i % 8]} in {task} {split} {i}.", f"{WORDS[(3 * i + 1) % 8]} ."


def _mnli(split: str, n: int) -> str:
    labelled = not split.startswith("test")
    header = MNLI + ("\tlabel1\tgold_label" if labelled else "")
    lines = []
    for i in range(n):
        a, b = _pair("mnli", split, i)
        gold = LABELS["mnli"][i % 3]
        lines.append(f"{i}\t{100 + i}\t{100 + i}n\tfiction\t( a )\t( b )\t(ROOT a)\t(ROOT b)\t{a}\t{b}"
                     + (f"\t{gold}\t{gold}" if labelled else ""))
    return "\n".join([header] + lines) + "\n"


def _simple(task: str, split: str, n: int) -> str:
    """RTE / QNLI / QQP / MRPC in GLUE's columns."""
    test = split == "test"
    lines = []
    for i in range(n):
        a, b = _pair(task, split, i)
        label = LABELS[task][i % 2]
        if task == "qqp":
            lines.append(f"{i}\t{a}\t{b}" if test else f"{i}\t{2 * i}\t{2 * i + 1}\t{a}\t{b}\t{label}")
        elif task == "mrpc":
            lines.append(f"{i}\t{i}\t{i}\t{a}\t{b}" if test else f"{label}\t{i}\t{i}\t{a}\t{b}")
        else:
            lines.append(f"{i}\t{a}\t{b}" + ("" if test else f"\t{label}"))
    header = {"rte": "index\tsentence1\tsentence2\tlabel", "qnli": "index\tquestion\tsentence\tlabel",
              "qqp": "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
              "mrpc": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"}[task]
    if test:
        header = {"qqp": "id\tquestion1\tquestion2", "mrpc": "index\t#1 ID\t#2 ID\t#1 String\t#2 String"}.get(
            task, "\t".join(header.split("\t")[:3]))
    return "\n".join([header] + lines) + "\n"


def write_glue(raw, *, qqp: bool = True):
    """``raw/glue`` as a user has it: RTE and MRPC fetched (flat ``<task>_<split>.tsv``), MNLI, QNLI and (unless
    ``qqp`` is false) QQP unzipped from GLUE's downloads into ``<TASK>/<split>.tsv``."""
    folder = raw / "glue"
    folder.mkdir(parents=True)
    for task in ("rte", "mrpc"):
        for split, n in (("train", 12), ("dev", 6), ("test", 4)):
            (folder / f"{task}_{split}.tsv").write_text(_simple(task, split, n), encoding="utf-8")
    for task in ("qnli", "qqp") if qqp else ("qnli",):
        (folder / task.upper()).mkdir()
        for split, n in (("train", 12), ("dev", 6), ("test", 4)):
            (folder / task.upper() / f"{split}.tsv").write_text(_simple(task, split, n), encoding="utf-8")
    (folder / "MNLI").mkdir()
    for split, n in (("train", 12), ("dev_matched", 4), ("dev_mismatched", 3), ("test_matched", 2),
                     ("test_mismatched", 2)):
        (folder / "MNLI" / f"{split}.tsv").write_text(_mnli(split, n), encoding="utf-8")


def _params(**given) -> glue.GlueParams:
    return section(ParamsFile(None, {"tables": {"glue": given}}), "tables.glue", glue.GlueParams)


ALL = ["mnli", "qnli", "rte", "qqp", "mrpc"]


def test_glues_own_layout_is_read_and_a_missing_task_does_not_block_the_others(tmp_path, caplog):
    write_glue(tmp_path, qqp=False)
    with caplog.at_level(logging.WARNING, logger="probekit"):
        loaded = glue.load(tmp_path, _params(tasks=ALL))   # QNLI: its train and test read once they are there
    pairs = loaded.tables["pairs"]
    counts = pairs.groupby(["task", "split"], sort=False).size().to_dict()
    assert counts == {("rte", "train"): 12, ("rte", "dev"): 6, ("rte", "test"): 4,
                      ("mrpc", "train"): 12, ("mrpc", "dev"): 6, ("mrpc", "test"): 4,
                      ("qnli", "train"): 12, ("qnli", "dev"): 6, ("qnli", "test"): 4,
                      ("mnli", "train"): 12, ("mnli", "dev_matched"): 4, ("mnli", "dev_mismatched"): 3,
                      ("mnli", "test_matched"): 2, ("mnli", "test_mismatched"): 2}
    assert list(loaded.report["missing"]) == ["qqp"]
    assert loaded.report["missing"]["qqp"]["files"][0] == str(tmp_path / "glue" / "qqp_train.tsv")
    assert "QQP left out: none of its files is in" in caplog.text
    assert "qqp" not in loaded.report["tasks"]


def test_a_task_the_source_holds_or_a_half_copied_task_is_still_an_error(tmp_path):
    write_glue(tmp_path)
    (tmp_path / "glue" / "rte_dev.tsv").unlink()
    with pytest.raises(DataError, match=r"rte_dev\.tsv: missing \(run: probes sources fetch glue\)"):
        glue.load(tmp_path, _params(tasks=["rte", "mnli"]))
    (tmp_path / "glue" / "MNLI" / "dev_mismatched.tsv").unlink()
    with pytest.raises(DataError, match=r"mnli_dev_mismatched\.tsv: missing \(the glue source has no MNLI "
                                        r"dev_mismatched file: .* or put GLUE's MNLI/dev_mismatched\.tsv there"):
        glue.load(tmp_path, _params(tasks=["mnli"]))


@pytest.fixture(scope="module")
def glue_data(tmp_path_factory):
    """The five tasks generated (``probes generate calum --task T``) from the small GLUE files."""
    raw = tmp_path_factory.mktemp("raw")
    write_glue(raw)
    tables = {"glue": glue.load(raw, _params(tasks=ALL)).tables}
    root = tmp_path_factory.mktemp("calum")
    metas = {}
    for task in ALL:
        variants, meta = calum_generator.build(ParamsFile(None, {"calum": {"task": task}}), tables)
        write_pair_dataset(root / task, variants, meta | {"license": "other", "sources": {}}, calum_generator.card)
        metas[task] = meta
    return root, metas


def test_mnli_gets_train_dev_and_test_with_dev_matched_then_mismatched(glue_data):
    root, metas = glue_data
    meta = metas["mnli"]
    assert meta["counts"]["original"] == {"train": 12, "dev": 7, "test": 4}
    assert meta["combined"] == {"dev": ["dev_matched", "dev_mismatched"], "test": ["test_matched", "test_mismatched"]}
    dev = [json.loads(line) for line in (root / "mnli/original/dev.jsonl").read_text().splitlines()]
    assert [r["pair_id"] for r in dev] == [f"mnli-dev_matched-{i}" for i in range(4)] + [
        f"mnli-dev_mismatched-{i}" for i in range(3)]
    assert {r["split"] for r in dev} == {"dev"} and dev[4]["sentence1"].startswith("Premise: the cat sat")
    assert dev[4]["label"] == "entailment" and dev[5]["label"] == "neutral"
    test = [json.loads(line) for line in (root / "mnli/reverse/test.jsonl").read_text().splitlines()]
    assert len(test) == 4 and all(r["label"] is None for r in test)
    assert "combined" not in metas["rte"]   # the other tasks' meta.json as before


SMOKE = {"seeds": [1], "max_length": 64, "batch_size": 8, "device_batch_size": 8, "save_models": "none",
         "max_steps": 1}


def test_the_mnli_run_and_an_all_multitask_run_complete(tmp_path, glue_data, tiny_bert_no_head):
    root, _ = glue_data
    ref = ModelRef("tiny", str(tiny_bert_no_head), str(tiny_bert_no_head))
    m = calum.run(ref, root, "mnli", tmp_path / "single", CalumEvalParams(**SMOKE), progress=False)
    assert m["split"] == "dev" and m["accuracy"]["n"] == 1 and m["per_seed"][0]["n"] == 7
    assert m["labels"] == ["entailment", "neutral", "contradiction"]
    cp = CalumEvalParams(**SMOKE | {"multitask": {"All": ALL}})
    m = calum.run(ref, root, "mnli", tmp_path / "all", cp, group="All", progress=False)
    assert m["tasks_trained"] == ALL and m["train_examples"] == dict.fromkeys(ALL, 12)
    assert set(m["aux"]) == {"qnli", "rte", "qqp", "mrpc"} and "C_sym" in m["aux"]["qqp"]
    rows = [json.loads(line) for line in (tmp_path / "all/predictions.jsonl").read_text().splitlines()]
    assert sum(r["task"] == "mnli" and r["variant"] == "original" for r in rows) == 7
