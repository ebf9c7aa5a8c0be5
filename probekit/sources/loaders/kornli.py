"""KorNLI (Ham et al., 2020): MNLI, SNLI and XNLI machine-translated into Korean (XNLI's dev and test
post-edited) -> one ``pairs`` table, for CALUM's Korean NLI task (papers/004 §4.1, Table 5).

Table ``pairs`` (the columns of the glue set): ``task`` (``kornli``), ``split`` (``train``: the corpora of
``train``, MultiNLI then SNLI by default; ``dev``: XNLI dev; ``test``: XNLI test, read only when ``splits`` names
it), ``idx`` (``<corpus>-<n>``: the corpus, ``multinli``/``snli``/``xnli``, and the row's 0-based position in its
file, which is its position in the Hub's split), ``sentence1``, ``sentence2`` (premise, hypothesis), ``label``
(entailment/neutral/contradiction), ``line`` (the file's line, header = 1; from the Hub the row's position).
Rows in split order, then corpus, then file order.

The paper reads no release test: "The three Korean datasets do not provide test sets. Therefore, we randomly
sampled test sets ... from training set for KorNLI dataset"; CALUM's generator draws it (``calum.test_draw``), so
``splits`` defaults to train and dev (``splits_as: release``, the default).

``splits_as: original_code`` makes the splits as the original code does (DSincerity/CALM
``lightning-transformers/lightning_transformers/task/nlp/kornli/kornli.py`` lines 21-24, and
``inference/dataset/kor_dataset.py`` lines 20-23): it reads SNLI's Korean training set only, ``kor_nli`` ``snli``
``train``, and cuts it in order, ``train[:-20000]`` for train, ``train[-20000:-10000]`` for dev and
``train[-10000:]`` for test (``holdout``: 10,000, the rows of each of dev and test). That is Table 1's KorNLI
(530K train, its "53K" a digit short; 10K validation, 10K test), which the release's own splits are not. The cut is
by position in the file, which is the position in the Hub's split (the Hub's builder, huggingface/datasets
``datasets/kor_nli/kor_nli.py``, yields the file's rows in order); a row without a gold label is dropped after the
cut, so the others keep the original's splits (there are none to drop: the Hub's builder encodes the gold label as
a class label of the three, which refuses ``-``, and built all 550,152 rows of the file). ``train`` and ``splits``
are not read then, and may not be given.

``source: release`` reads the files of the ``kornli`` source (``raw/kornli/``: ``multinli.train.ko.tsv``,
``snli_1.0_train.ko.tsv``, ``xnli.dev.ko.tsv``, ``xnli.test.ko.tsv`` of kakaobrain/KorNLUDatasets), UTF-8,
tab-separated with no quoting, header ``sentence1 sentence2 gold_label``. A row with the wrong number of fields or
an unknown label is a ``DataError`` naming file and line; a row with gold label ``-`` (no annotator majority, as
in SNLI) is dropped and counted in the report. ``source: hub`` reads ``kakaobrain/kor_nli`` (configs
``multi_nli``, ``snli``: train; ``xnli``: validation, test) with ``datasets.load_dataset``; a row without a label
(-1) is dropped and counted. The report holds the sha256 of every release file read (the manifest's are not
confirmed yet).
"""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import AfterValidator, Field, PositiveInt, model_validator

from probekit.errors import DataError
from probekit.sources.loaders import Loaded, LoaderParams, register
from probekit.sources.loaders.glue import PAIR_COLUMNS, distinct

SOURCE = "kornli"
TASK = "kornli"
HUB_DATASET = "kakaobrain/kor_nli"
SPLITS = ("train", "dev", "test")
Corpus = Literal["multinli", "snli"]
# (split, corpus) -> the release file, the Hub config and split
FILES = {("train", "multinli"): "multinli.train.ko.tsv", ("train", "snli"): "snli_1.0_train.ko.tsv",
         ("dev", "xnli"): "xnli.dev.ko.tsv", ("test", "xnli"): "xnli.test.ko.tsv"}
HUB = {("train", "multinli"): ("multi_nli", "train"), ("train", "snli"): ("snli", "train"),
       ("dev", "xnli"): ("xnli", "validation"), ("test", "xnli"): ("xnli", "test")}
COLUMNS = ("sentence1", "sentence2", "gold_label")
LABELS = ("entailment", "neutral", "contradiction")
NO_GOLD = "-"  # SNLI's gold label where the annotators had no majority
ORIGINAL_CUT = ("train", "snli")  # splits_as: original_code, the part read and cut into train, dev and test


class KorNliParams(LoaderParams):
    """Params of the kornli table set (section ``tables.kornli``)."""

    source: Literal["release", "hub"] = "release"
    train: Annotated[list[Corpus], AfterValidator(distinct)] = Field(default_factory=lambda: ["multinli", "snli"])
    splits: Annotated[list[Literal["train", "dev", "test"]], AfterValidator(distinct)] = Field(
        default_factory=lambda: ["train", "dev"])  # test: XNLI's, which the paper does not use
    hub_revision: str | None = None  # a commit of kakaobrain/kor_nli, for a reproducible source: hub
    # release: the corpora of `train`, XNLI's dev (and test); original_code: SNLI's training set cut in order into
    # train, dev and test, as the original code (module docstring)
    splits_as: Literal["release", "original_code"] = "release"
    holdout: PositiveInt = 10000  # original_code: the rows of each of dev and test cut from the end (the original's)

    @model_validator(mode="after")
    def _original_code(self):
        given = {"train", "splits"} & self.model_fields_set
        if self.splits_as == "original_code" and given:
            raise ValueError(f"splits_as: original_code cuts train, dev and test from SNLI's training set, as the "
                             f"original code: leave out {' and '.join(sorted(given))}")
        if self.splits_as == "release" and "holdout" in self.model_fields_set:
            raise ValueError("holdout is read with splits_as: original_code only")
        return self

    def parts(self) -> list[tuple[str, str]]:
        """The (split, corpus) pairs read, in table order."""
        if self.splits_as == "original_code":
            return [ORIGINAL_CUT]
        return [(s, c) for s in SPLITS if s in self.splits for c in (self.train if s == "train" else ["xnli"])]


def read_tsv(path: Path, split: str, corpus: str) -> tuple[list[dict], int]:
    """The rows of one KorNLI release file as ``pairs`` rows, and how many had no gold label (dropped)."""
    if not path.is_file():
        raise DataError(f"{path}: missing (run: probes sources fetch {SOURCE}; or set tables.kornli.source: hub)")
    rows, dropped = [], 0
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, [])
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise DataError(f"{path}:1: header lacks column(s) {missing} of KorNLI's format ({' '.join(COLUMNS)})")
        s1, s2, y = (header.index(c) for c in COLUMNS)
        for n, fields in enumerate(reader):
            line = reader.line_num
            if len(fields) != len(header):
                raise DataError(f"{path}:{line}: {len(fields)} tab-separated fields, expected {len(header)}")
            if fields[y] == NO_GOLD:
                dropped += 1
                continue
            if fields[y] not in LABELS:
                raise DataError(f"{path}:{line}: unknown gold_label {fields[y][:40]!r} "
                                f"(expected one of {', '.join(LABELS)})")
            rows.append({"task": TASK, "split": split, "idx": f"{corpus}-{n}", "sentence1": fields[s1],
                         "sentence2": fields[s2], "label": fields[y], "line": line})
    return rows, dropped


def read_hub(split: str, corpus: str, revision: str | None) -> tuple[list[dict], int]:
    """``pairs`` rows of one part from ``kakaobrain/kor_nli`` on the Hub, and how many had no label (dropped)."""
    import datasets

    config, hf_split = HUB[(split, corpus)]
    dataset = datasets.load_dataset(HUB_DATASET, config, revision=revision)
    where = f"{HUB_DATASET} {config} {hf_split}"
    if hf_split not in dataset:
        raise DataError(f"{where}: no such split (has {', '.join(dataset)})")
    part = dataset[hf_split]
    missing = [c for c in ("premise", "hypothesis", "label") if c not in part.column_names]
    if missing:
        raise DataError(f"{where}: no column(s) {missing} (has {', '.join(part.column_names)})")
    names = getattr(part.features["label"], "names", None)
    if names is None or set(names) - set(LABELS):
        raise DataError(f"{where}: label is not a class label of {', '.join(LABELS)} "
                        f"(feature {part.features['label']})")
    cols = part.select_columns(["premise", "hypothesis", "label"]).to_dict()
    rows = [{"task": TASK, "split": split, "idx": f"{corpus}-{n}", "sentence1": a, "sentence2": b,
             "label": names[y], "line": n}
            for n, (a, b, y) in enumerate(zip(cols["premise"], cols["hypothesis"], cols["label"]))
            if y is not None and 0 <= y < len(names)]
    return rows, len(part) - len(rows)


def cut(rows: list[dict], total: int, holdout: int, where: str) -> dict[str, tuple[list[dict], int, int]]:
    """The original code's splits of SNLI's training rows ``rows`` (read of the ``total`` in ``where``, rows
    without a gold label included): train ``[:-2h]``, dev ``[-2h:-h]``, test ``[-h:]`` by position (``h``:
    ``holdout``), as ``kornli.py`` lines 22-24 with h = 10,000; per split its rows and positions (start included,
    end not)."""
    if total <= 2 * holdout:
        raise DataError(f"{where}: {total} rows; splits_as: original_code cuts dev and test, {holdout} rows each "
                        f"(tables.kornli.holdout), from its end and trains on the rest: it needs more than "
                        f"{2 * holdout}")
    bounds = {"train": (0, total - 2 * holdout), "dev": (total - 2 * holdout, total - holdout),
              "test": (total - holdout, total)}
    out: dict[str, list[dict]] = {s: [] for s in bounds}
    for row in rows:   # idx is <corpus>-<n>, n the row's position in the file and in the Hub's split
        split = next(s for s, (_, end) in bounds.items() if int(row["idx"].rpartition("-")[2]) < end)
        out[split].append(row | {"split": split})
    return {s: (out[s], start, end) for s, (start, end) in bounds.items()}


def sources(params: KorNliParams) -> list[str]:
    """The raw sources read: ``kornli`` with the release files, none from the Hub."""
    return [SOURCE] if params.source == "release" else []


@register(SOURCE, params=KorNliParams, sources=sources)
def load(raw: Path, params: KorNliParams) -> Loaded:
    """The ``pairs`` table (module docstring) and a report of rows and label counts per split, rows dropped per
    split and corpus, the release files' sha256 and, with ``splits_as: original_code``, the cut (``cut``)."""
    rows, report = [], {"source": params.source, "tasks": {TASK: {}}, "dropped": {}}
    if params.source == "hub":
        report |= {"dataset": HUB_DATASET, "revision": params.hub_revision}
    by_split: dict[str, list[dict]] = {}
    for split, corpus in params.parts():
        if params.source == "hub":
            read, dropped = read_hub(split, corpus, params.hub_revision)
            where = f"{HUB_DATASET} {HUB[(split, corpus)][0]} {HUB[(split, corpus)][1]}"
        else:
            path = Path(raw) / SOURCE / FILES[(split, corpus)]
            read, dropped = read_tsv(path, split, corpus)
            report.setdefault("files", {})[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
            where = str(path)
        if params.splits_as == "original_code":
            report["cut"] = {"rows": len(read) + dropped, "holdout": params.holdout}
            for part, (part_rows, start, end) in cut(read, len(read) + dropped, params.holdout, where).items():
                report["cut"][part] = [start, end]
                report["dropped"][f"{part}/{corpus}"] = {"no gold label": end - start - len(part_rows)}
                by_split[part] = part_rows
            continue
        report["dropped"][f"{split}/{corpus}"] = {"no gold label": dropped}
        by_split.setdefault(split, []).extend(read)
    for split, part in by_split.items():
        labels = Counter(r["label"] for r in part)
        report["tasks"][TASK][split] = {"rows": len(part), "labels": dict(sorted(labels.items()))}
        rows += part
    report["rows"] = len(rows)
    return Loaded({"pairs": pd.DataFrame(rows, columns=PAIR_COLUMNS).astype({"line": "int64"})}, report)
