"""KLUE sentence-pair tasks (KLUE-NLI, KLUE-STS) -> one ``pairs`` table, for CALUM's Korean variants.

Table ``pairs`` (the columns of the glue set): ``task`` (``klue_nli``, ``klue_sts``), ``split`` (``train``,
``dev``: KLUE has no public test split; dev is the Hub's ``validation``; ``test`` with ``splits_as: original_code``,
below), ``idx`` (the record's ``guid``),
``sentence1``, ``sentence2`` (NLI premise/hypothesis, STS sentence1/sentence2), ``label`` (NLI entailment/
neutral/contradiction; STS the paper's two classes from KLUE's ``binary-label``: 0 not_similar, 1 similar,
the Hub's negative/positive), ``line`` (the record's 0-based position in its file or Hub split). Rows in task
order (klue_nli, klue_sts), then split, then file order.

``source: files`` reads KLUE's release files from the folder ``folder`` (``klue-nli-v1.1_train.json``, ...: a
JSON list of records; NLI ``guid``, ``premise``, ``hypothesis``, ``gold_label``; STS ``guid``, ``sentence1``,
``sentence2``, ``labels.binary-label``); a record with a missing field or an unknown label is a ``DataError``
naming file, record and guid; the report holds each file's sha256. ``source: hub`` reads ``klue/klue`` (configs
``nli``, ``sts``) with ``datasets.load_dataset``. KLUE is not in the sources manifest: no raw source is read.

``splits_as: original_code`` cuts dev in two in order, as the original code (DSincerity/CALM
``inference/dataset/kor_dataset.py`` lines 12-19, ``lightning-transformers/lightning_transformers/task/nlp/
klue_nli/klue_nli.py`` lines 22-24, ``klue_sts/klue_sts.py`` lines 22-24): ``validation[:50%]`` stays ``dev``,
``validation[50%:]`` is ``test`` (``datasets`` rounds the boundary to the closest row, half to even: 260 and 259 of
KLUE-STS's 519, Table 1's). The paper says it "randomly sampled test sets from the validation set for KLUE
datasets" (§4.1), which CALUM's generator does by default (``calum.test_draw``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import AfterValidator, Field, model_validator

from probekit.errors import DataError, shown
from probekit.sources.loaders import Loaded, LoaderParams, register
from probekit.sources.loaders.glue import PAIR_COLUMNS, distinct

HUB_DATASET = "klue/klue"
Task = Literal["klue_nli", "klue_sts"]
TASKS = ("klue_nli", "klue_sts")
SPLITS = ("train", "dev")
FILES = {"klue_nli": "klue-nli-v1.1_{split}.json", "klue_sts": "klue-sts-v1.1_{split}.json"}
HUB_CONFIGS = {"klue_nli": "nli", "klue_sts": "sts"}
# the record fields read as sentence1, sentence2 (same names in the files and on the Hub)
TEXT_FIELDS = {"klue_nli": ("premise", "hypothesis"), "klue_sts": ("sentence1", "sentence2")}
NLI_LABELS = ("entailment", "neutral", "contradiction")
# the label as the release files write it -> its name here; STS: KLUE's binary-label (1: mean score >= 3)
LABELS = {"klue_nli": {n: n for n in NLI_LABELS}, "klue_sts": {0: "not_similar", 1: "similar"}}
# the Hub's ClassLabel names -> the names here
HUB_LABELS = {"klue_nli": LABELS["klue_nli"], "klue_sts": {"negative": "not_similar", "positive": "similar"}}
LABEL_FIELDS = {"klue_nli": "gold_label", "klue_sts": "labels.binary-label"}
HUB_LABEL_FIELDS = {"klue_nli": "label", "klue_sts": "labels.binary-label"}  # STS: ``labels`` is a struct


class KlueParams(LoaderParams):
    """Params of the klue table set (section ``tables.klue``)."""

    source: Literal["hub", "files"] = "hub"
    tasks: Annotated[list[Task], AfterValidator(distinct)] = Field(default_factory=lambda: list(TASKS))
    folder: Path | None = None  # source: files, the folder of KLUE's release JSON files
    hub_revision: str | None = None  # a commit of klue/klue, for a reproducible source: hub
    # release: train and dev (the test is drawn by calum.test_draw); original_code: dev cut in two in order, the
    # second half the test, as the original code (module docstring)
    splits_as: Literal["release", "original_code"] = "release"

    @model_validator(mode="after")
    def _folder(self):
        if self.source == "files" and self.folder is None:
            raise ValueError("source: files needs `folder`, the folder of KLUE's release JSON files")
        return self


def _raw_label(task: str, record: dict):
    """The record's label as the file writes it (None when missing)."""
    if task == "klue_nli":
        return record.get("gold_label")
    labels = record.get("labels")
    return labels.get("binary-label") if isinstance(labels, dict) else None


def read_file(path: Path, task: str, split: str) -> list[dict]:
    """The records of one KLUE release file as ``pairs`` rows (see the module docstring)."""
    if not path.is_file():
        raise DataError(f"{path}: missing (KLUE's release file; or set tables.klue.source: hub)")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}:{err.colno}: not JSON ({err.msg})") from None
    if not isinstance(records, list):
        raise DataError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    s1, s2 = TEXT_FIELDS[task]
    rows = []
    for n, record in enumerate(records):
        if not isinstance(record, dict):
            raise DataError(f"{path}: record {n}: not a JSON object")
        where = f"{path}: record {n} (guid {shown(record.get('guid'))})"
        missing = [f for f in ("guid", s1, s2) if not isinstance(record.get(f), str)]
        if missing:
            raise DataError(f"{where}: missing or non-text field(s) {missing}")
        value = _raw_label(task, record)
        label = LABELS[task].get(value) if type(value) in (str, int) else None
        if label is None:
            raise DataError(f"{where}: {LABEL_FIELDS[task]} {shown(value)} is missing or not one of "
                            f"{', '.join(map(str, LABELS[task]))}")
        rows.append({"task": task, "split": split, "idx": record["guid"], "sentence1": record[s1],
                     "sentence2": record[s2], "label": label, "line": n})
    return rows


def read_hub(task: str, revision: str | None) -> dict[str, list[dict]]:
    """``pairs`` rows of train and dev of ``task`` from ``klue/klue`` on the Hub, labels named by its features."""
    import datasets

    config = HUB_CONFIGS[task]
    dataset = datasets.load_dataset(HUB_DATASET, config, revision=revision)
    s1, s2 = TEXT_FIELDS[task]
    label_col = HUB_LABEL_FIELDS[task].split(".")[0]
    out = {}
    for split in SPLITS:
        hf_split = split.replace("dev", "validation")
        where = f"{HUB_DATASET} {config} {hf_split}"
        if hf_split not in dataset:
            raise DataError(f"{where}: no such split (has {', '.join(dataset)})")
        part = dataset[hf_split]
        missing = [c for c in ("guid", s1, s2, label_col) if c not in part.column_names]
        if missing:
            raise DataError(f"{where}: no column(s) {missing} (has {', '.join(part.column_names)})")
        feature = part.features[label_col]
        if task == "klue_sts":
            feature = feature.get("binary-label") if isinstance(feature, dict) else None
        names = getattr(feature, "names", None)
        if names is None or set(names) - set(HUB_LABELS[task]):
            raise DataError(f"{where}: {HUB_LABEL_FIELDS[task]} is not a class label of "
                            f"{', '.join(HUB_LABELS[task])} (feature {feature})")
        cols = part.select_columns(["guid", s1, s2, label_col]).to_dict()
        rows = []
        for n, (guid, a, b, y) in enumerate(zip(cols["guid"], cols[s1], cols[s2], cols[label_col])):
            y = y["binary-label"] if task == "klue_sts" else y
            if y is None or not 0 <= y < len(names):
                raise DataError(f"{where}: row {n} (guid {shown(guid)}): no label ({shown(y)})")
            rows.append({"task": task, "split": split, "idx": guid, "sentence1": a, "sentence2": b,
                         "label": HUB_LABELS[task][names[y]], "line": n})
        out[split] = rows
    return out


def halves(rows: list[dict], where: str) -> tuple[list[dict], list[dict]]:
    """The original code's validation and test of KLUE's validation rows ``rows`` (in file order):
    ``validation[:50%]`` and ``validation[50%:]``, the boundary ``datasets`` takes (``arrow_reader.py``
    ``_pct_to_abs_closest``: ``int(round(50 * n / 100))``, half to even)."""
    boundary = int(round(50 * len(rows) / 100.0))
    if not 0 < boundary < len(rows):
        raise DataError(f"{where}: {len(rows)} dev rows; splits_as: original_code cuts them in two halves (dev, "
                        f"test): it needs at least 2")
    return rows[:boundary], [r | {"split": "test"} for r in rows[boundary:]]


def sources(params: KlueParams) -> list[str]:
    """None: KLUE is read from the Hub or from a folder the user names, not from the sources manifest."""
    return []


@register("klue", params=KlueParams, sources=sources)
def load(raw: Path, params: KlueParams) -> Loaded:
    """The ``pairs`` table (module docstring) and a report of rows and label counts per task and split (test
    too with ``splits_as: original_code``)."""
    rows, report = [], {"source": params.source, "tasks": {}}
    if params.source == "hub":
        report |= {"dataset": HUB_DATASET, "revision": params.hub_revision}
    else:
        report["files"] = {}
    for task in (t for t in TASKS if t in params.tasks):
        if params.source == "hub":
            by_split = read_hub(task, params.hub_revision)
        else:
            by_split = {}
            for split in SPLITS:
                path = params.folder / FILES[task].format(split=split)
                by_split[split] = read_file(path, task, split)
                report["files"][path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        if params.splits_as == "original_code":
            by_split["dev"], by_split["test"] = halves(by_split["dev"], f"klue {task}")
        for split in by_split:
            part = by_split[split]
            labels = Counter(r["label"] for r in part)
            report["tasks"].setdefault(task, {})[split] = {"rows": len(part), "labels": dict(sorted(labels.items()))}
            rows += part
    report["rows"] = len(rows)
    return Loaded({"pairs": pd.DataFrame(rows, columns=PAIR_COLUMNS).astype({"line": "int64"})}, report)
