"""The datasets of CALUM fine-tuning: a task's dataset folder (``probes generate calum --task T``) read and
checked (its labels, the variants of a split), and its pairs tokenized as the model reads them: a
``datasets.Dataset`` with labels, lengths and, for a multitask model, the task's head."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from probekit.data.pairs import read_meta, read_pairs
from probekit.errors import DataError, UsageError, shown


def task_folder(data: str | Path, task: str) -> Path:
    """``data`` is one task's dataset (``probes generate calum --task T``) or a folder of them (``<task>/``)."""
    data = Path(data)
    folder = data if (data / "meta.json").is_file() else data / task
    meta = read_meta(folder)
    if meta.get("task") != task:
        raise UsageError(f"--data {data}: {folder} holds {shown(meta.get('task'))}, not {shown(task)}")
    return folder


class TaskData:
    """One task's dataset folder: its labels and the variants of a split, read and checked."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.meta = read_meta(folder)
        self.task, self.labels = self.meta["task"], list(self.meta["labels"])
        self.variants = list(self.meta["counts"])

    def rows(self, variant: str, split: str, *, labelled: bool = False, limit: int | None = None) -> list[dict]:
        rows = read_pairs(self.folder, variant, split, limit)
        path = self.folder / variant / f"{split}.jsonl"
        for n, row in enumerate(rows, start=1):
            if row["label"] is None and labelled:
                raise DataError(f"{path}:{n}: no label, and {split} is trained or validated on "
                                f"(unlabelled splits can only be predicted)")
            if row["label"] is not None and row["label"] not in self.labels:
                raise DataError(f"{path}:{n}: label {shown(row['label'])} is not one of {self.labels} (meta.json)")
        if not rows:
            raise DataError(f"{path}: no rows")
        return rows


def encode(tokenizer, rows: Sequence[dict], labels: list[str], max_length: int, task_id: int | None = None):
    """A ``datasets.Dataset`` of the pairs as the model reads them (``sentence1``, ``sentence2``), with
    ``labels`` (ids; -100 where unlabelled), ``length`` and, for a multitask model, ``task_id``; and how many
    pairs were truncated to ``max_length``."""
    import datasets

    enc = tokenizer([r["sentence1"] for r in rows], [r["sentence2"] for r in rows], truncation="longest_first",
                    max_length=max_length)
    full = tokenizer([r["sentence1"] for r in rows], [r["sentence2"] for r in rows])["input_ids"]
    columns = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
    columns["labels"] = [-100 if r["label"] is None else labels.index(r["label"]) for r in rows]
    columns["length"] = [len(ids) for ids in enc["input_ids"]]
    if task_id is not None:
        columns["task_id"] = [task_id] * len(rows)
    return datasets.Dataset.from_dict(columns), sum(len(ids) > max_length for ids in full)


def concatenate(parts):
    """The datasets as one, in order (the tasks' training splits of a multitask run)."""
    import datasets

    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
