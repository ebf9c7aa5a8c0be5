"""The stand-in files of ``probes rehearse``: small GLUE files in GLUE's own TSV layout for the GLUE tasks and splits
that the raw sources lack offline (QQP, MNLI and QNLI's train and test: the mirror holds RTE, MRPC and QNLI dev), and
small KLUE release files (NLI, STS) and KorNLI release files for CALUM's Korean tasks (Table 5). Made-up sentences, deterministic, every label of the
task present: they check that the paper profile's stages run, they measure nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

# GLUE's TSV headers, as its zips write them (MNLI/train.tsv, QQP/dev.tsv, ...): the loader reads columns by name
_PARSES = ["sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse", "sentence2_parse"]
_MNLI = ["index", "promptID", "pairID", "genre", *_PARSES, "sentence1", "sentence2"]
HEADERS = {
    ("mnli", "train"): [*_MNLI, "label1", "gold_label"],
    ("mnli", "dev"): [*_MNLI, "label1", "label2", "label3", "label4", "label5", "gold_label"],
    ("mnli", "test"): _MNLI,
    ("qqp", "train"): ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
    ("qqp", "dev"): ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
    ("qqp", "test"): ["id", "question1", "question2"],
    ("qnli", "train"): ["index", "question", "sentence", "label"],
    ("qnli", "dev"): ["index", "question", "sentence", "label"],
    ("qnli", "test"): ["index", "question", "sentence"],
}
LABELS = {"mnli": ["entailment", "neutral", "contradiction"], "qqp": ["0", "1"],
          "qnli": ["entailment", "not_entailment"]}
SPLITS = {"mnli": ["train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"],
          "qqp": ["train", "dev", "test"], "qnli": ["train", "dev", "test"]}

_WHO = ["the farmer", "a young teacher", "my neighbour", "the old captain", "a tired nurse", "the committee",
        "our driver", "the painter"]
_DID = ["repaired", "sold", "described", "visited", "painted", "photographed", "cleaned", "borrowed"]
_WHAT = ["the red barn", "a wooden boat", "the village school", "an old bicycle", "the harbour wall", "a new bridge"]


def _sentence(i: int) -> str:
    return f"{_WHO[i % 8]} {_DID[(i // 8) % 8]} {_WHAT[(i // 3) % 6]}".capitalize()


def glue_rows(task: str, split: str, n: int) -> list[list[str]]:
    """``n`` rows of ``task``'s ``split`` under its GLUE header; labels in turn."""
    kind = split.split("_")[0]
    header = HEADERS[(task, kind)]
    rows = []
    for i in range(n):
        a, b = _sentence(i), _sentence(i + 5)
        if task == "qqp":
            a, b = f"Who {a.split(' ', 2)[1]} {a.split(' ', 2)[2]}?", f"Who {b.split(' ', 2)[1]} {b.split(' ', 2)[2]}?"
        if task == "qnli":
            a = f"What did {_WHO[i % 8]} see?"
        label = LABELS[task][i % len(LABELS[task])]
        values = {"index": str(i), "id": str(i), "promptID": str(1000 + i), "pairID": f"{1000 + i}e",
                  "genre": "fiction", "qid1": str(2 * i), "qid2": str(2 * i + 1),
                  "sentence1": a, "sentence2": b, "question1": a, "question2": b, "question": a, "sentence": b,
                  "label": label, "is_duplicate": label, "gold_label": label,
                  **{c: f"( {a} )" if c.startswith("sentence1") else f"( {b} )" for c in _PARSES},
                  **{f"label{k}": label for k in range(1, 6)}}
        rows.append([values[c] for c in header])
    return [header, *rows]


def write_glue(folder: Path, n: int) -> list[str]:
    """Every GLUE file of :data:`SPLITS` that ``folder`` (``raw/glue``) lacks, in GLUE's layout
    (``MNLI/dev_matched.tsv``); the ones written, relative to ``folder``."""
    written = []
    for task, splits in SPLITS.items():
        for split in splits:
            if (folder / f"{task}_{split}.tsv").is_file() or (folder / task.upper() / f"{split}.tsv").is_file():
                continue
            path = folder / task.upper() / f"{split}.tsv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join("\t".join(r) + "\n" for r in glue_rows(task, split, n)), encoding="utf-8")
            written.append(str(path.relative_to(folder)))
    return written


_KO_WHO = ["농부가", "선생님이", "이웃이", "선장이", "간호사가", "위원회가"]
_KO_WHAT = ["빨간 헛간을", "나무 배를", "마을 학교를", "낡은 자전거를", "새 다리를"]
_KO_DID = ["고쳤다", "팔았다", "방문했다", "칠했다"]


def _ko(i: int) -> str:
    return f"{_KO_WHO[i % 6]} {_KO_WHAT[(i // 2) % 5]} {_KO_DID[(i // 3) % 4]}."


def write_klue(folder: Path, n: int) -> list[str]:
    """KLUE's four release files (``klue-nli-v1.1_train.json``, ...: NLI and STS, train and dev), ``n`` records
    each, in the release's record layout; the names written."""
    folder.mkdir(parents=True, exist_ok=True)
    nli = ["entailment", "neutral", "contradiction"]
    written = []
    for split in ("train", "dev"):
        records = {
            "nli": [{"guid": f"klue-nli-v1_{split}_{i:05d}", "genre": "NSMC", "premise": _ko(i),
                     "hypothesis": _ko(i + 7), "gold_label": nli[i % 3]} for i in range(n)],
            "sts": [{"guid": f"klue-sts-v1_{split}_{i:05d}", "source": "airbnb-rtt", "sentence1": _ko(i),
                     "sentence2": _ko(i + 1), "labels": {"label": float(i % 6), "real-label": float(i % 6),
                                                         "binary-label": int(i % 6 >= 3)}} for i in range(n)]}
        for task, data in records.items():
            name = f"klue-{task}-v1.1_{split}.json"
            (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
            written.append(name)
    return written


KORNLI = {"train": ("multinli.train.ko.tsv", "snli_1.0_train.ko.tsv"), "dev": ("xnli.dev.ko.tsv",)}
"""The KorNLI release files the kornli table set reads by default (kakaobrain/KorNLUDatasets, KorNLI/): MultiNLI
and SNLI train, XNLI dev (XNLI test only on request)."""


def write_kornli(folder: Path, n: int, extra: Mapping[str, int] | None = None) -> list[str]:
    """KorNLI's release files (:data:`KORNLI`) in ``folder`` (``raw/kornli``), ``n`` rows each in the release's
    layout (header ``sentence1 sentence2 gold_label``, tab-separated), a file of ``extra`` that many more (the rows
    CALUM's test draw takes from train, §4.1, or the dev and test the original code's split cuts from SNLI's
    training file: ``probes.rehearse.kornli_extra``); the names written."""
    folder.mkdir(parents=True, exist_ok=True)
    nli = ["entailment", "neutral", "contradiction"]
    written = []
    for split, names in KORNLI.items():
        for k, name in enumerate(names):
            rows = n + (extra or {}).get(name, 0)
            lines = [f"{_ko(i + 11 * k)}\t{_ko(i + 11 * k + 5)}\t{nli[i % 3]}\n" for i in range(rows)]
            (folder / name).write_text("sentence1\tsentence2\tgold_label\n" + "".join(lines), encoding="utf-8")
            written.append(name)
    return written
