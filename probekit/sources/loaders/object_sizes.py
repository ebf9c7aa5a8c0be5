"""Object sizes: one ranked table of typical lengths, and the pairwise size labels it was fitted to.

Table set ``object_sizes``; ``raw`` is the project's raw root. Files are read from ``raw/object_sizes/``
(flat names, see :data:`~probekit.sources.loaders._object_size_params.FILES`) and, with ``source: doq``, the DoQ nouns
file from ``raw/doq/``. The files are read by :mod:`probekit.sources.loaders._object_size_readers`, the sizes fitted by
:mod:`probekit.sources.loaders._object_size_fit`; this module assembles the tables.

Tables
------
``sizes``: ``object`` (lowercase, as spelled in the sources), ``size_m`` (a typical length in metres),
``rank`` (1 = smallest), ``source`` (where ``size_m`` comes from: ``breds``, ``size_comparisons``,
``breds+size_comparisons``, ``doq``, or ``fit`` for an estimate from pairwise labels), ``n_pairs`` (labelled
pairs with both objects in this table) and ``n_contradicted`` (those of them the ranking gets wrong).
Rows are sorted by ``(size_m, object)``.

``pairs``: ``obj1``, ``obj2``, ``label`` (``larger``: obj1 is larger than obj2; ``smaller``), ``source``
(``verbphysics`` or ``viphy``); one row per unordered pair and source, ``obj1 < obj2`` alphabetically, sorted
by ``(source, obj1, obj2)``.

Sources and how each is read
----------------------------
- BREDS (Alkemade, ``data_numeric/VG_YOLO_intersection_{dev_annotated,test_annotated_combined}.csv``):
  ``object,min,max`` human-annotated size range in metres; absolute size = geometric mean of min and max.
  A row with min <= 0, max < min or a non-numeric bound is dropped and counted (``padding,0,2.0``).
- size-comparisons (Alkemade, ``data/manually_selected.csv``): ``object,length`` typical length in metres;
  ``TODO`` (or empty) lengths are dropped and counted.
  An object with both (mouse, piano) gets the geometric mean of the two, ``source`` ``breds+size_comparisons``.
- VerbPhysics (Forbes & Choi 2017, ``objects/train-5/{train,dev,test}.csv``, all 3,656 pairs): ``size-maj``
  +1 (obj1 larger) / -1 (smaller) kept; 0 (similar) and -42 (no majority) skipped and counted. A pair
  listed more than once (either order) is kept once when its labels agree, dropped and counted when not.
- ViPhy (Singh et al. 2022, ``dataset/size/{train,val,test}.csv``): ``,o1,o2,>,<,typical`` counts of
  o1 > o2 and o1 < o2 observations in Visual Genome. Every pair is listed in both orders (with mirrored
  counts) and sometimes in two splits; the counts of an unordered pair are taken once (the mean over its
  rows, in one orientation), the label is the majority; ties, and margins ``|n> - n<| / (n> + n<)`` at or
  below ``viphy_min_margin`` (when above 0), are dropped and counted. A row whose ``typical`` disagrees with
  its counts is counted (the counts win).
- DoQ (Elazar et al. 2019), with ``source: doq``: :func:`~probekit.sources.loaders._object_size_readers.read_doq`; the
  median of dimension ``LENGTH`` (DoQ stores lengths in metres) of each object replaces BREDS /
  size-comparisons as absolute sizes.

Malformed rows: a row of a mirror-set file with the wrong number of fields, a missing header column, an
unknown ``size-maj`` code or a non-integer ViPhy count raises :class:`DataError` naming file and line. Known
gaps of the data (``TODO`` lengths, non-positive bounds) are dropped and counted in ``report``.
``read_doq`` raises ``DataError`` (file and line) on a malformed row by default; with
``doq_errors: count`` it skips such rows and the report counts them (with the first few line numbers).

Fitting sizes from pairs
------------------------
Objects with an absolute size are anchors: their log size is fixed. Every other object in the pair graph
gets a log size by maximising a Bradley-Terry likelihood, ``P(a larger than b) = sigmoid((x_a - x_b) / s)``
over all kept labels (``s`` = ``bt_scale``, natural-log units), with a Gaussian ridge (``bt_ridge``) pulling
each free object towards its least-squares start, so objects that win (or lose) every comparison stay
finite. The start is the least-squares solution of ``x_a - x_b = ls_gap`` for every "a larger than b" (the
grounded graph-Laplacian system, anchors on the right-hand side). Both linear systems (the least-squares one
and each Newton step, with backtracking) are solved by Jacobi-preconditioned conjugate gradients in numpy,
which is deterministic and never forms an n x n matrix. ``fit: least_squares`` stops after the first step.
Objects in a connected component of the pair graph without any anchor have no scale and are dropped
(counted); so are objects with fewer than ``min_pairs`` labels (counted). ``size_m`` is rounded to 6
significant digits. A label is contradicted when the ranking orders its two objects the other way or gives
them the same size.

The defaults were chosen by 5-fold cross-validation over the 71 anchors that occur in the pair graph
(mirror sets): the held-out anchors' fitted sizes are off by a median 0.51 decades (a factor of ~3; least
squares alone: 0.63-0.82 decades; predicting the mean anchor: 0.85), and the ranking contradicts 3.2% of the
labels (least squares: 9.5%). The fitted sizes are a log-scale ordering estimate, not measurements (the
``source`` column says ``fit``). ViPhy labels compare apparent sizes in photographs, so objects photographed
next to buildings come out large (elephant ~40 m, giraffe ~60 m): use the ranks for ordering only.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probekit.errors import DataError
from probekit.sources.loaders import Loaded, register
from probekit.sources.loaders._object_size_fit import _components, fit_log_sizes
from probekit.sources.loaders._object_size_params import DOQ_SOURCE, FILES, SOURCE, ObjectSizeParams
from probekit.sources.loaders._object_size_readers import (
    _VP_CODES,
    read_breds,
    read_doq,
    read_size_comparisons,
    read_verbphysics,
    read_viphy,
)

SIZE_COLUMNS = ("object", "size_m", "rank", "source", "n_pairs", "n_contradicted")
PAIR_COLUMNS = ("obj1", "obj2", "label", "source")


# ------------------------------------------------------------------------------------------- assembling

def _file(raw: Path, source: str, name: str) -> Path:
    path = Path(raw) / source / name
    if not path.is_file():
        raise DataError(f"{path}: missing (run: probes sources fetch {source})")
    return path


def _absolute_sizes(raw: Path, p: ObjectSizeParams, report: dict) -> tuple[dict[str, float], dict[str, str]]:
    """Log sizes (natural log of metres) and their source, per object."""
    files = report["files"]
    per_set: dict[str, dict[str, list[float]]] = {}
    if p.source == "doq":
        path = _file(raw, DOQ_SOURCE, p.doq_file)
        df = read_doq(path, errors=p.doq_errors)
        malformed = df.attrs["malformed_lines"]
        drop = Counter({"malformed (doq_errors: count)": len(malformed)})
        drop["dimension other than LENGTH"] = int((df["dim"] != "LENGTH").sum())
        length = df[df["dim"] == "LENGTH"]
        ok = np.isfinite(length["median"]) & (length["median"] > 0)
        drop["LENGTH median <= 0 or not finite"] = int((~ok).sum())
        logs: dict[str, list[float]] = defaultdict(list)
        for obj, med in zip(length.loc[ok, "obj"], length.loc[ok, "median"]):
            logs[obj].append(math.log(med))
        drop["LENGTH row repeating an object (log-mean taken)"] = int(ok.sum()) - len(logs)
        files[f"{DOQ_SOURCE}/{p.doq_file}"] = {"rows": len(df) + len(malformed), "objects": len(logs),
                                               "dropped": {k: v for k, v in sorted(drop.items()) if v},
                                               "malformed_lines_first": malformed[:10]}
        per_set["doq"] = logs
    else:
        for name in p.size_sets:
            logs = defaultdict(list)
            for fname in FILES[name]:
                path = _file(raw, SOURCE, fname)
                drop = Counter()
                if name == "breds":
                    df = read_breds(path)
                    for obj, lo, hi in zip(df["object"], df["min_m"], df["max_m"]):
                        if not obj:
                            drop["empty object"] += 1
                        elif not (lo > 0 and hi >= lo):  # NaN fails too
                            drop["min <= 0, max < min or missing bound"] += 1
                        else:
                            logs[obj].append(0.5 * (math.log(lo) + math.log(hi)))
                else:
                    df = read_size_comparisons(path)
                    for obj, length in zip(df["object"], df["length_m"]):
                        if not obj:
                            drop["empty object"] += 1
                        elif not length > 0:
                            drop["no length (TODO) or length <= 0"] += 1
                        else:
                            logs[obj].append(math.log(length))
                files[f"{SOURCE}/{fname}"] = {"rows": len(df), "kept": len(df) - sum(drop.values()),
                                               "dropped": dict(sorted(drop.items()))}
            dup = sum(len(v) - 1 for v in logs.values())
            if dup:
                report["dropped"][f"{name}: duplicate object rows (log-mean taken)"] = dup
            per_set[name] = logs
    log_size: dict[str, float] = {}
    origin: dict[str, str] = {}
    merged: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for name, logs in per_set.items():
        for obj, values in logs.items():
            merged[obj].append((name, float(np.mean(values))))
    for obj in sorted(merged):
        entries = merged[obj]
        log_size[obj] = float(np.mean([v for _, v in entries]))
        origin[obj] = "+".join(n for n, _ in entries)
    report["objects_per_source"].update({n: len(v) for n, v in per_set.items()})
    return log_size, origin


def _pairs(raw: Path, p: ObjectSizeParams, report: dict) -> pd.DataFrame:
    """The kept labels, one per unordered pair and source; ``y`` = +1 when obj1 (alphabetically first) is larger."""
    files, out = report["files"], []
    for name in p.pair_sets:
        drop = Counter()
        if name == "verbphysics":
            votes: dict[tuple[str, str], list[int]] = defaultdict(list)
            for fname in FILES[name]:
                df = read_verbphysics(_file(raw, SOURCE, fname))
                codes = Counter(int(c) for c in df["size_maj"])
                fdrop = Counter({_VP_CODES[c]: codes[c] for c in (0, -42) if codes[c]})
                for a, b, code in zip(*(df[c].tolist() for c in ("obj1", "obj2", "size_maj"))):
                    if code not in (1, -1):
                        continue
                    if a == b or not a or not b:
                        fdrop["same or empty object"] += 1
                        continue
                    votes[min(a, b), max(a, b)].append(int(code) if a < b else -int(code))
                files[f"{SOURCE}/{fname}"] = {"rows": len(df), "kept (+1/-1)": len(df) - sum(fdrop.values()),
                                               "dropped": dict(sorted(fdrop.items()))}
            for (a, b), ys in votes.items():
                if len(set(ys)) > 1:
                    drop["pair labelled both ways (all its rows dropped)"] += 1
                    continue
                drop["row repeating a pair with the same label (merged)"] += len(ys) - 1
                out.append((a, b, ys[0], name))
        else:
            counts: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
            for fname in FILES[name]:
                df = read_viphy(_file(raw, SOURCE, fname))
                fdrop = Counter()
                for a, b, gt, lt, typical in zip(*(df[c].tolist() for c in (
                        "obj1", "obj2", "n_larger", "n_smaller", "typical"))):
                    if a == b or not a or not b:
                        fdrop["same or empty object"] += 1
                        continue
                    majority = ">" if gt > lt else "<" if lt > gt else "="
                    if majority != typical:
                        fdrop["typical disagrees with counts (counts used; row kept)"] += 1
                    counts[min(a, b), max(a, b)].append((int(gt), int(lt)) if a < b else (int(lt), int(gt)))
                files[f"{SOURCE}/{fname}"] = {"rows": len(df), "dropped": dict(sorted(fdrop.items()))}
            rows = sum(len(v) for v in counts.values())
            drop["row repeating a pair in the other order or another split (counts taken once)"] = rows - len(counts)
            for (a, b), obs in counts.items():
                gt, lt = sum(o[0] for o in obs) / len(obs), sum(o[1] for o in obs) / len(obs)
                if gt == lt:
                    drop["tie"] += 1
                elif p.viphy_min_margin and abs(gt - lt) / (gt + lt) <= p.viphy_min_margin:
                    drop[f"margin <= {p.viphy_min_margin}"] += 1
                else:
                    out.append((a, b, 1 if gt > lt else -1, name))
        report["dropped"].update({f"{name}: {k}": v for k, v in sorted(drop.items()) if v})
    df = pd.DataFrame(out, columns=["obj1", "obj2", "y", "source"])
    return df.sort_values(["source", "obj1", "obj2"], kind="stable").reset_index(drop=True)



# ---------------------------------------------------------------------------------------------- loader

def raw_sources(p: ObjectSizeParams) -> list[str]:
    """The raw sources (``raw/sources.yaml`` names) the loader reads with params ``p``."""
    names = [SOURCE] if p.source == "mirror_sets" or p.pair_sets else []
    return names + ([DOQ_SOURCE] if p.source == "doq" else [])


@register("object_sizes", params=ObjectSizeParams, sources=raw_sources)
def load(raw: Path, params: ObjectSizeParams) -> Loaded:
    """``sizes`` and ``pairs`` from the raw root ``raw`` (see the module docstring)."""
    raw = Path(raw)
    report: dict[str, Any] = {"source": params.source, "files": {}, "objects_per_source": {}, "dropped": {}}
    log_size, origin = _absolute_sizes(raw, params, report)
    pairs = _pairs(raw, params, report)
    for name in params.pair_sets:
        sub = pairs[pairs["source"] == name]
        report["objects_per_source"][name] = len(set(sub["obj1"]) | set(sub["obj2"]))

    # the pair graph: drop objects without enough labels, then components without an anchor
    objects = sorted(set(pairs["obj1"]) | set(pairs["obj2"]))
    degree = Counter(pairs["obj1"]) + Counter(pairs["obj2"])
    thin = {o for o in objects if o not in log_size and degree[o] < params.min_pairs}
    graph = pairs[~pairs["obj1"].isin(thin) & ~pairs["obj2"].isin(thin)]
    objects = sorted((set(graph["obj1"]) | set(graph["obj2"])))
    index = {o: k for k, o in enumerate(objects)}
    gi = graph["obj1"].map(index).to_numpy(dtype=np.int64)
    gj = graph["obj2"].map(index).to_numpy(dtype=np.int64)
    comp = _components(len(objects), gi, gj)
    anchored = {comp[index[o]] for o in objects if o in log_size}
    reach = np.array([comp[k] in anchored for k in range(len(objects))], dtype=bool)
    unreached = [o for o in objects if not reach[index[o]]]
    report["dropped"]["sizes: object with fewer than min_pairs labels and no absolute size"] = len(thin)
    report["dropped"]["sizes: object not connected to any object of known size"] = len(unreached)
    keep_obj = [o for o in objects if reach[index[o]]]
    sub_index = {o: k for k, o in enumerate(keep_obj)}
    sub = graph[graph["obj1"].isin(sub_index) & graph["obj2"].isin(sub_index)]
    si = sub["obj1"].map(sub_index).to_numpy(dtype=np.int64)
    sj = sub["obj2"].map(sub_index).to_numpy(dtype=np.int64)
    anchors = {sub_index[o]: log_size[o] for o in keep_obj if o in log_size}
    x, fit_info = fit_log_sizes(len(keep_obj), si, sj, sub["y"].to_numpy(), anchors, params)
    report["fit"] = {**fit_info, **params.model_dump(include={"ls_gap", "bt_scale", "bt_ridge", "min_pairs"})}

    est = dict(log_size)
    src = dict(origin)
    for o, k in sub_index.items():
        if o not in est:
            est[o], src[o] = float(x[k]), "fit"
    # round to 6 significant digits so the table (and its ranking) is stable across platforms
    size_m = {o: float(f"{math.exp(v):.6g}") for o, v in est.items()}

    # contradictions of the final ranking
    ranked = pairs["obj1"].isin(size_m) & pairs["obj2"].isin(size_m)
    s1 = pairs["obj1"].map(size_m)
    s2 = pairs["obj2"].map(size_m)
    agree = np.where(pairs["y"] > 0, s1 > s2, s1 < s2)
    contradicted = ranked & ~agree
    n_pairs = Counter(pairs.loc[ranked, "obj1"]) + Counter(pairs.loc[ranked, "obj2"])
    n_bad = Counter(pairs.loc[contradicted, "obj1"]) + Counter(pairs.loc[contradicted, "obj2"])
    per_source = {}
    for name in params.pair_sets:
        m = (pairs["source"] == name).to_numpy()
        r, c = int(ranked[m].sum()), int(contradicted[m].sum())
        per_source[name] = {"labels": int(m.sum()), "ranked": r, "contradicted": c,
                            "rate": round(c / r, 4) if r else None}
    r, c = int(ranked.sum()), int(contradicted.sum())
    report["contradicted"] = {"overall": c, "ranked": r, "labels": len(pairs), "rate": round(c / r, 4) if r else None,
                              "per_source": per_source}
    both = pairs.groupby(["obj1", "obj2"])["y"].agg(["nunique", "size"])
    report["pairs_in_several_sources"] = {"pairs": int((both["size"] > 1).sum()),
                                          "conflicting": int((both["nunique"] > 1).sum())}

    sizes = pd.DataFrame({"object": list(size_m), "size_m": list(size_m.values())})
    sizes["source"] = sizes["object"].map(src)
    sizes["n_pairs"] = sizes["object"].map(lambda o: n_pairs.get(o, 0)).astype("int64")
    sizes["n_contradicted"] = sizes["object"].map(lambda o: n_bad.get(o, 0)).astype("int64")
    sizes = sizes.sort_values(["size_m", "object"], kind="stable").reset_index(drop=True)
    sizes["rank"] = np.arange(1, len(sizes) + 1, dtype=np.int64)
    sizes = sizes[list(SIZE_COLUMNS)].astype({"object": str, "size_m": "float64", "source": str})
    report["objects_per_source"]["fit"] = int((sizes["source"] == "fit").sum())
    report["sizes"] = {"objects": len(sizes), "by_source": dict(sorted(Counter(sizes["source"]).items()))}

    out_pairs = pd.DataFrame({"obj1": pairs["obj1"].astype(str), "obj2": pairs["obj2"].astype(str),
                              "label": np.where(pairs["y"] > 0, "larger", "smaller"),
                              "source": pairs["source"].astype(str)})
    report["pairs"] = {"rows": len(out_pairs), "by_source": dict(sorted(Counter(out_pairs["source"]).items())),
                       "by_label": dict(sorted(Counter(out_pairs["label"]).items()))}
    report["dropped"] = {k: v for k, v in report["dropped"].items() if v}
    return Loaded(tables={"sizes": sizes, "pairs": out_pairs}, report=report)
