"""The example-level comparison of one split of a dataset in two versions: its examples joined on their keys
(:mod:`probekit.data.keys`) with pandas, as added, removed, changed (which fields) and unchanged; the answer
balance before and after with a chi-square test of homogeneity and the total variation distance; templates added,
removed and examples per template; a few examples of each kind, side by side. ``probes diff`` reports it per
config and split, and the Hub card's "Changes" count it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from probekit.data.keys import FIELDS, family, frame

ALPHA = 0.05
"""The level below which a chi-square p-value says the answer balance moved."""

_NA = "\x00"   # a missing value, so that two missing values compare equal


def balance(old: pd.Series, new: pd.Series) -> dict:
    """The counts of ``old`` and ``new`` values (None left out), the total variation distance of their shares and
    a chi-square test of homogeneity (``p_value`` None when there are fewer than two values or an empty side);
    ``moved``: p < :data:`ALPHA`."""
    a = old.dropna().value_counts().sort_index()
    b = new.dropna().value_counts().sort_index()
    values = sorted(set(a.index) | set(b.index), key=str)
    ca = [int(a.get(v, 0)) for v in values]
    cb = [int(b.get(v, 0)) for v in values]
    na, nb = sum(ca), sum(cb)
    tvd = 0.5 * sum(abs(x / na - y / nb) for x, y in zip(ca, cb)) if na and nb else None
    p = None
    if na and nb and len(values) > 1:
        if tvd == 0:   # the same shares on both sides: nothing to test
            p = 1.0
        else:
            from scipy.stats import chi2_contingency

            p = float(chi2_contingency([ca, cb]).pvalue)
            p = None if math.isnan(p) else p
    return {"old": {str(v): x for v, x in zip(values, ca) if x}, "new": {str(v): y for v, y in zip(values, cb) if y},
            "tvd": None if tvd is None else round(tvd, 6), "p_value": p,
            "moved": None if p is None else bool(p < ALPHA)}


def _templates(old: pd.Series, new: pd.Series) -> dict:
    a = {str(k): int(v) for k, v in old.dropna().value_counts().sort_index().items()}
    b = {str(k): int(v) for k, v in new.dropna().value_counts().sort_index().items()}
    return {"old": a, "new": b, "added": sorted(set(b) - set(a)), "removed": sorted(set(a) - set(b))}


def _views(df: pd.DataFrame, rows: pd.Series) -> list[dict]:
    """The shown fields of the examples at ``rows`` of a side's frame (missing values left out)."""
    part = df.iloc[rows.astype(int).tolist()][["stem", "choices", "answer", "template"]]
    return [{k: v for k, v in r.items() if v is not None and not (isinstance(v, float) and math.isnan(v))}
            for r in part.astype(object).to_dict("records")]


def _same(new: pd.DataFrame) -> pd.DataFrame:
    """The merged frame of a split whose two versions hold the same rows: every key on both sides."""
    m = pd.DataFrame({"key": new["key"]})
    for column in new.columns:
        if column != "key":
            m[f"{column}_old"] = m[f"{column}_new"] = new[column]
    return m


def compare_split(fmt: str, old_rows: list[dict], new_rows: list[dict], show: int = 3,
                  identical: bool = False) -> tuple[dict, pd.DataFrame]:
    """``(counts and the rest of the record, merged)`` of one split (see
    :class:`probekit.versions.diff.SplitDiff`); ``identical``: the caller knows the two versions' rows are the same
    (the same file bytes), so they are read and keyed once."""
    new = frame(fmt, new_rows)
    if identical:
        old, m = new, _same(new)
        changed_by = {f: np.zeros(len(m), bool) for f in FIELDS}
    else:
        old = frame(fmt, old_rows)
        m = old.merge(new, on="key", how="outer", suffixes=("_old", "_new"), indicator=True, sort=False)
        both = (m["_merge"] == "both").to_numpy()
        changed_by = {}
        for f in FIELDS:
            a, b = m[f"{f}_old"].fillna(_NA), m[f"{f}_new"].fillna(_NA)
            changed_by[f] = (a != b).to_numpy() & both
    any_changed = pd.DataFrame(changed_by).any(axis=1).to_numpy()
    status = pd.Series("unchanged", index=m.index)
    if not identical:
        status[m["_merge"] == "left_only"] = "removed"
        status[m["_merge"] == "right_only"] = "added"
    status[any_changed] = "changed"
    m["status"] = status
    fields = pd.Series("", index=m.index, dtype=object)
    for f in FIELDS:
        if changed_by[f].any():
            fields[changed_by[f]] = fields[changed_by[f]] + ("," + f)
    m["fields"] = fields.str.lstrip(",")
    counts = status.value_counts()
    record = {k: int(counts.get(k, 0)) for k in ("added", "removed", "changed", "unchanged")}
    record["fields"] = {f: int(changed_by[f].sum()) for f in FIELDS if changed_by[f].any()}
    record["rows"] = {"old": len(old), "new": len(new)}
    record["balance"] = balance(old["answer"], new["answer"])
    if family(fmt) == "mc":
        record["position_balance"] = balance(old["position"], new["position"])
    record["templates"] = _templates(old["template"], new["template"])
    examples: dict[str, list] = {}
    for kind in ("added", "removed", "changed"):
        part = m[m["status"] == kind]
        part = part.sort_values("row_old" if kind == "removed" else "row_new").head(show)
        if part.empty:
            continue
        olds = _views(old, part["row_old"]) if kind != "added" else None
        news = _views(new, part["row_new"]) if kind != "removed" else None
        shown_ = []
        for i, (key, what_old, what_new, fields) in enumerate(zip(part["key"], part["what_old"], part["what_new"],
                                                                  part["fields"])):
            ex = {"key": key, "what": what_old if kind == "removed" else what_new}
            if olds is not None:
                ex["old"] = olds[i]
            if news is not None:
                ex["new"] = news[i]
            if kind == "changed":
                ex["fields"] = fields.split(",")
            shown_.append(ex)
        examples[kind] = shown_
    record["examples"] = examples
    return record, m
