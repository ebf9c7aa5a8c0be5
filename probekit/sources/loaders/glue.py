"""GLUE sentence-pair tasks (RTE, MRPC, QNLI, QQP, MNLI) -> one ``pairs`` table, for the CALUM/BECEL probes.

Table ``pairs``: ``task``, ``split`` (train/dev/test; MNLI dev_matched/dev_mismatched/test_matched/
test_mismatched), ``idx`` (str: the file's ``index``/``id`` column; GLUE's MRPC train/dev have none, so the
row's 0-based position, which is the Hub's ``idx``), ``sentence1``, ``sentence2`` (RTE/MNLI sentence1/2, MRPC
``#1 String``/``#2 String``, QNLI question/sentence, QQP question1/question2), ``label`` (GLUE's label name;
None for the unlabelled test splits), ``line`` (the file's line, header = 1; with ``source: hub`` the row's
position in the Hub split). Rows in task order (rte, mrpc, qnli, qqp, mnli), then split, then file order.

``source: mirror`` reads GLUE's TSV files from ``raw/glue/<task>_<split>.tsv`` (the ``glue`` source holds RTE
and MRPC train/dev/test and QNLI dev; QQP and MNLI files, if wanted offline, go there by hand, flat or in
GLUE's own layout ``raw/glue/<TASK>/<split>.tsv``, e.g. ``MNLI/dev_matched.tsv``; a task with none of its files
there is left out and listed in the report's ``missing``), UTF-8 with an
optional BOM, tab-separated with no quoting (RTE has unbalanced ``"``). A row with the wrong number of fields
or an unknown label is a ``DataError`` naming file and line. ``source: hub`` reads ``nyu-mll/glue`` with
``datasets.load_dataset`` (MRPC there is SentEval's tokenised copy; the mirror's MRPC is untokenised).
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import AfterValidator, Field, field_validator

from probekit.errors import DataError, shown
from probekit.sources.loaders import Loaded, LoaderParams, register

log = logging.getLogger("probekit")

SOURCE = "glue"
HUB_DATASET = "nyu-mll/glue"
Task = Literal["rte", "mrpc", "qnli", "qqp", "mnli"]
TASKS = ("rte", "mrpc", "qnli", "qqp", "mnli")
SPLITS = {t: ("train", "dev", "test") for t in TASKS} | {
    "mnli": ("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched")}
DEFAULT_SPLITS = SPLITS | {"qnli": ("dev",)}  # the mirror holds only QNLI dev (train/test read if put there)
MIRROR_FILES = {"rte_train.tsv", "rte_dev.tsv", "rte_test.tsv", "mrpc_train.tsv", "mrpc_dev.tsv",
                "mrpc_test.tsv", "qnli_dev.tsv"}
# GLUE TSV columns per task: id, sentence 1, sentence 2, label
COLUMNS = {"rte": ("index", "sentence1", "sentence2", "label"),
           "mrpc": ("index", "#1 String", "#2 String", "Quality"),
           "qnli": ("index", "question", "sentence", "label"),
           "qqp": ("id", "question1", "question2", "is_duplicate"),
           "mnli": ("index", "sentence1", "sentence2", "gold_label")}
HUB_COLUMNS = {"rte": ("sentence1", "sentence2"), "mrpc": ("sentence1", "sentence2"),
               "qnli": ("question", "sentence"), "qqp": ("question1", "question2"), "mnli": ("premise", "hypothesis")}
# label as written in the TSV -> GLUE's label name (the Hub's ClassLabel names)
LABELS = {"rte": {"entailment": "entailment", "not_entailment": "not_entailment"},
          "mrpc": {"0": "not_equivalent", "1": "equivalent"},
          "qnli": {"entailment": "entailment", "not_entailment": "not_entailment"},
          "qqp": {"0": "not_duplicate", "1": "duplicate"},
          "mnli": {"entailment": "entailment", "neutral": "neutral", "contradiction": "contradiction"}}
PAIR_COLUMNS = ["task", "split", "idx", "sentence1", "sentence2", "label", "line"]


def distinct(values: list) -> list:
    """A list param's check: not empty, no repeats."""
    if not values or len(set(values)) != len(values):
        raise ValueError("must be a non-empty list without repeats")
    return values


class GlueParams(LoaderParams):
    """Params of the glue table set (section ``tables.glue``)."""

    source: Literal["mirror", "hub"] = "mirror"
    tasks: Annotated[list[Task], AfterValidator(distinct)] = Field(default_factory=lambda: ["rte", "mrpc", "qnli"])
    # per task, the splits read; a task not named here reads DEFAULT_SPLITS[task]
    splits: dict[Task, list[str]] = Field(default_factory=dict)
    hub_revision: str | None = None  # a commit of nyu-mll/glue, for a reproducible source: hub

    @field_validator("splits")
    @classmethod
    def _splits(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for task, splits in v.items():
            bad = sorted(set(splits) - set(SPLITS[task]))
            if bad or not splits or len(set(splits)) != len(splits):
                raise ValueError(f"{task}: must be a non-empty list without repeats of {', '.join(SPLITS[task])}"
                                 + (f", got {bad}" if bad else ""))
        return v

    def task_splits(self, task: str) -> list[str]:
        """The splits of ``task`` to read, in GLUE's order."""
        chosen = self.splits.get(task, DEFAULT_SPLITS[task])
        return [s for s in SPLITS[task] if s in chosen]


def tsv_path(folder: Path, task: str, split: str) -> Path:
    """The file of ``task``'s ``split`` in ``folder`` (``raw/glue``): the flat ``<task>_<split>.tsv`` the source
    is stored as, else GLUE's own layout ``<TASK>/<split>.tsv`` (its zips' members, e.g. ``MNLI/dev_matched.tsv``),
    else the flat name (missing)."""
    flat, glue_layout = folder / f"{task}_{split}.tsv", folder / task.upper() / f"{split}.tsv"
    return glue_layout if not flat.is_file() and glue_layout.is_file() else flat


def read_tsv(path: Path, task: str, split: str) -> list[dict]:
    """The rows of one GLUE TSV file as ``pairs`` rows (see the module docstring)."""
    if not path.is_file():
        hint = (f"run: probes sources fetch {SOURCE}" if path.name in MIRROR_FILES else
                f"the {SOURCE} source has no {task.upper()} {split} file: set tables.glue.source: hub, "
                f"or put GLUE's {task.upper()}/{split}.tsv there (or {task}_{split}.tsv)")
        raise DataError(f"{path}: missing ({hint})")
    id_col, s1_col, s2_col, label_col = COLUMNS[task]
    rows = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, [])
        need = [s1_col, s2_col]
        need += [] if split.startswith("test") else [label_col]
        need += [] if task == "mrpc" and split != "test" else [id_col]  # GLUE's MRPC train/dev: no index
        missing = [c for c in need if c not in header]
        if missing:
            raise DataError(f"{path}:1: header lacks column(s) {missing} of GLUE's {task.upper()} format")
        col = {c: header.index(c) for c in (id_col, s1_col, s2_col, label_col) if c in header}
        for n, fields in enumerate(reader):
            line = reader.line_num
            if len(fields) != len(header):
                raise DataError(f"{path}:{line}: {len(fields)} tab-separated fields, expected {len(header)}")
            label = None
            if label_col in col:
                label = LABELS[task].get(fields[col[label_col]])
                if label is None:
                    raise DataError(f"{path}:{line}: unknown {task.upper()} label {shown(fields[col[label_col]])} "
                                    f"(expected one of {', '.join(LABELS[task])})")
            rows.append({"task": task, "split": split, "idx": fields[col[id_col]] if id_col in col else str(n),
                         "sentence1": fields[col[s1_col]], "sentence2": fields[col[s2_col]], "label": label,
                         "line": line})
    return rows


def read_hub(task: str, splits: list[str], revision: str | None) -> dict[str, list[dict]]:
    """``pairs`` rows of ``splits`` of ``task`` from ``nyu-mll/glue`` on the Hub, labels named by its features."""
    import datasets

    dataset = datasets.load_dataset(HUB_DATASET, task, revision=revision)
    s1_col, s2_col = HUB_COLUMNS[task]
    out = {}
    for split in splits:
        hf_split = split.replace("dev", "validation")
        if hf_split not in dataset:
            raise DataError(f"{HUB_DATASET} {task}: no split {shown(hf_split)} (has {', '.join(dataset)})")
        part = dataset[hf_split]
        names = part.features["label"].names
        unknown = sorted(set(names) - set(LABELS[task].values()))
        if unknown:
            raise DataError(f"{HUB_DATASET} {task} {hf_split}: unknown label name(s) {unknown}")
        cols = part.select_columns(["idx", s1_col, s2_col, "label"]).to_dict()
        out[split] = [{"task": task, "split": split, "idx": str(i), "sentence1": a, "sentence2": b,
                       "label": names[y] if y >= 0 else None, "line": n}
                      for n, (i, a, b, y) in enumerate(zip(cols["idx"], cols[s1_col], cols[s2_col], cols["label"]))]
    return out


def sources(params: GlueParams) -> list[str]:
    """The raw sources read: ``glue`` with the mirror, none from the Hub."""
    return [SOURCE] if params.source == "mirror" else []


@register(SOURCE, params=GlueParams, sources=sources)
def load(raw: Path, params: GlueParams) -> Loaded:
    """The ``pairs`` table (module docstring) and a report of rows and label counts per task and split; with the
    mirror, a task none of whose files is there (QQP, MNLI: not in the ``glue`` source) is left out with a
    warning and listed under the report's ``missing``, so it does not block the tasks that are there; a task
    the source holds, or one with some of its files, is an error."""
    rows, report = [], {"source": params.source, "tasks": {}}
    if params.source == "hub":
        report |= {"dataset": HUB_DATASET, "revision": params.hub_revision}
    missing = {}
    for task in (t for t in TASKS if t in params.tasks):
        splits = params.task_splits(task)
        if params.source == "hub":
            by_split = read_hub(task, splits, params.hub_revision)
        else:
            if task == "qnli" and task not in params.splits:   # the source's dev, and QNLI's others if put there
                splits = [s for s in SPLITS[task] if s in DEFAULT_SPLITS[task]
                          or tsv_path(Path(raw) / SOURCE, task, s).is_file()]
            paths = {s: tsv_path(Path(raw) / SOURCE, task, s) for s in splits}
            if not any(p.is_file() or p.name in MIRROR_FILES for p in paths.values()):
                missing[task] = [str(p) for p in paths.values()]
                continue
            by_split = {s: read_tsv(p, task, s) for s, p in paths.items()}
        for split in splits:
            part = by_split[split]
            labels = Counter(r["label"] for r in part if r["label"] is not None)
            report["tasks"].setdefault(task, {})[split] = {"rows": len(part), "labels": dict(sorted(labels.items()))}
            rows += part
    if missing and not report["tasks"]:   # nothing to read at all: the first task's file, with its hint
        task, paths = next(iter(missing.items()))
        read_tsv(Path(paths[0]), task, params.task_splits(task)[0])
    for task, paths in missing.items():
        log.warning("tables glue: %s left out: none of its files is in %s (%s); set tables.glue.source: hub, "
                    "or put GLUE's %s/<split>.tsv there", task.upper(), Path(raw) / SOURCE,
                    ", ".join(Path(p).name for p in paths), task.upper())
    if missing:   # only then: the report of a complete set is as before
        report["missing"] = {task: {"files": paths, "why": "none of the task's files is in the glue source"}
                             for task, paths in missing.items()}
    report["rows"] = len(rows)
    return Loaded({"pairs": pd.DataFrame(rows, columns=PAIR_COLUMNS).astype({"line": "int64"})}, report)
