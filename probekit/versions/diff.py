"""The example-level diff of two sides' datasets: every config (dataset and variant) of either side, split by
split, compared by :func:`probekit.data.compare.compare_split` (examples added, removed, changed and unchanged,
the answer balance, templates, examples side by side)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from probekit.data.compare import compare_split
from probekit.errors import UsageError
from probekit.versions.sides import Entry, Side


@dataclass
class SplitDiff:
    """One config's split: the record the reports print and ``merged``, one row per key with its ``status``
    (added, removed, changed, unchanged), the changed ``fields`` and each side's ``id_old``/``id_new`` and
    ``row_old``/``row_new`` (the example's index in its side's rows)."""

    record: dict
    merged: pd.DataFrame
    old_rows: list[dict]
    new_rows: list[dict]


@dataclass
class Result:
    old: str
    new: str
    splits: list[SplitDiff] = field(default_factory=list)

    @property
    def records(self) -> list[dict]:
        return [s.record for s in self.splits]

    def totals(self) -> dict:
        keys = ("added", "removed", "changed", "unchanged")
        return {k: sum(r[k] for r in self.records) for k in keys}

    def json(self) -> dict:
        return {"old": self.old, "new": self.new, "totals": self.totals(), "datasets": self.records}


def _check_pair(a: Entry | None, b: Entry | None, name: str) -> None:
    if a is not None and b is not None and a.format != b.format:
        raise UsageError(f"config {name}: two different formats ({a.format} in the old side, {b.format} in the new)")


def diff(old: Side, new: Side, *, show: int = 3, progress: bool = False) -> Result:
    """Every config of either side, split by split (a config on one side only: all its examples added or
    removed). Sides that share no config but hold different probes are an error: they are not two versions of
    one dataset."""
    if not old.entries and not new.entries:
        raise UsageError(f"neither {old.label} nor {new.label} holds a dataset folder")
    shared = set(old.entries) & set(new.entries)
    if not shared and old.entries and new.entries:
        a = sorted({e.probe for e in old.entries.values()})
        b = sorted({e.probe for e in new.entries.values()})
        if set(a) != set(b):
            raise UsageError(f"two different probes: {', '.join(a)} ({old.label}) and {', '.join(b)} ({new.label})")
    names = sorted(set(old.entries) | set(new.entries))
    for name in names:
        _check_pair(old.entries.get(name), new.entries.get(name), name)
    result = Result(old.label, new.label)
    from tqdm import tqdm

    for name in tqdm(names, desc="diff", unit="config", disable=None if progress and len(names) > 4 else True, leave=False):
        a, b = old.entries.get(name), new.entries.get(name)
        e = b or a
        same = bool(a and b and a.digest and b.digest and a.digest() == b.digest())   # the same bytes: read once
        new_splits = b.load() if b else {}
        old_splits = new_splits if same else a.load() if a else {}
        presence = "both" if a and b else "new only" if b else "old only"
        for split in dict.fromkeys([*new_splits, *old_splits]):
            o, n = old_splits.get(split, []), new_splits.get(split, [])
            record, merged = compare_split(e.format, o, n, show, identical=same)
            head = {"config": name, "dataset": e.dataset, "variant": e.variant, "split": split, "format": e.format,
                    "role": e.role, "base": (b.base if b else None) or (a.base if a else None), "config_in": presence}
            result.splits.append(SplitDiff({**head, **record}, merged, o, n))
    return result
