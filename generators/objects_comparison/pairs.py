"""The pairs of OBJECTS COMPARISON: the objects of each split with their size buckets, the pairs kept (a
bucket gap apart, or in one bucket with ``pairing: paper_literal``; no direct label against the sizes; counted
per split, never listed) and the seeded draw of
each split's balanced ``(obj1, obj2, outcome, labels)`` rows.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from generators.objects_comparison.domains import wordnet_domains
from generators.objects_comparison.params import ABSOLUTE, FITTED, PROBE, ObjectsParams
from probekit.data.examples import SPLITS
from probekit.errors import DataError, shown

OUTCOMES = ("larger", "smaller")
DOMAIN = {"train": "animal", "dev": "object"}


# --- buckets -------------------------------------------------------------------------------------


def bucket(size_m: float, params: ObjectsParams) -> tuple[int, list]:
    """``(k, [low, high))``: the bucket of ``size_m`` and its range in metres (``high`` None when open)."""
    if params.bucket_edges_m is not None:
        edges = params.bucket_edges_m
        k = bisect.bisect_right(edges, size_m)
        return k, [edges[k - 1] if k > 0 else 0.0, edges[k] if k < len(edges) else None]
    w = params.bucket_decades
    k = math.floor(math.log10(size_m) / w)
    while 10 ** (k * w) > size_m:  # float rounding at a bucket edge: the range must hold the size
        k -= 1
    while 10 ** ((k + 1) * w) <= size_m:
        k += 1
    return k, [10 ** (k * w), 10 ** ((k + 1) * w)]


# --- the pairs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Obj:
    name: str
    size_m: float
    source: str
    n_pairs: int
    bucket: int
    bucket_m: list
    domain: str
    first_sense: list

    @property
    def fitted(self) -> bool:
        return self.source == FITTED

    def facts(self) -> dict:
        return {"size_m": self.size_m, "source": self.source, "n_pairs": self.n_pairs, "bucket": self.bucket,
                "bucket_m": list(self.bucket_m), "domain": self.domain, "first_sense": list(self.first_sense)}


FLIP = {"larger": "smaller", "smaller": "larger"}


@dataclass
class SplitPlan:
    """The usable objects of one split (``names`` sorted, index ``i``) and, per tier, how many kept partners
    ``j > i`` each has. Pairs are never listed: a split of n objects has n(n-1)/2 candidates (DoQ: millions),
    so :func:`partners` recomputes a row's partners when a sample needs them."""

    names: list[str]
    objects: dict[str, Obj]
    bucket: np.ndarray
    fitted: np.ndarray
    bad: dict[int, set[int]]  # i -> {j}: a direct label of (i, j) disagrees with the sizes
    labels: dict[tuple[int, int], tuple]  # (i, j) -> ((source, label of i against j), ...)
    per_row: list[np.ndarray]  # per tier: kept partners j > i of each i
    counts: Counter
    size: np.ndarray  # size_m of each object


def candidates(params: ObjectsParams, bucket_a, bucket_b, size_a, size_b, either_fitted):
    """Whether two objects may pair (``pairing``, see :data:`~generators.objects_comparison.params.PAIRINGS`), before the
    direct labels are checked; works on scalars and on numpy arrays alike. ``ours``: buckets at least ``min_gap``
    apart (``min_gap_fitted`` when either size is fitted); ``paper_literal``: the same bucket, unequal sizes."""
    if params.pairing == "paper_literal":
        return (bucket_a == bucket_b) & (size_a != size_b)
    fitted_gap = params.min_gap_fitted if params.min_gap_fitted is not None else params.min_gap
    return np.abs(bucket_a - bucket_b) >= np.where(either_fitted, fitted_gap, params.min_gap)


LEFT_OUT = {"ours": "pairs left out: buckets closer than the minimum gap",
            "paper_literal": "pairs left out: not in the same bucket (or of the same size)"}


def partners(sp: SplitPlan, i: int, tier: int, params: ObjectsParams) -> np.ndarray:
    """Indices ``j > i`` (ascending) that form a kept pair with ``i`` in ``tier`` (0: both sizes absolute, 1: a
    fitted one; without ``prefer_absolute`` everything is tier 0)."""
    either = sp.fitted[i + 1:] | sp.fitted[i]
    keep = candidates(params, sp.bucket[i], sp.bucket[i + 1:], sp.size[i], sp.size[i + 1:], either)
    if params.prefer_absolute:
        keep &= either if tier == 1 else ~either
    elif tier == 1:
        return np.zeros(0, dtype=np.int64)
    js = np.nonzero(keep)[0] + i + 1
    if i in sp.bad:
        js = js[~np.isin(js, sorted(sp.bad[i]))]
    return js


@dataclass
class Plan:
    splits: dict[str, SplitPlan] = field(default_factory=dict)
    counts: dict = field(default_factory=dict)


def _tables(tables: Mapping):
    sizes = (tables.get("object_sizes") or {})
    wordnet = (tables.get("wordnet") or {})
    if "sizes" not in sizes or "pairs" not in sizes:
        raise DataError(f"{PROBE} reads the object_sizes table set (tables sizes and pairs): run "
                        f"`probes tables object_sizes` (dvc repro tables-object_sizes)")
    if "hypernyms" not in wordnet:
        raise DataError(f"{PROBE} reads the wordnet table set (table hypernyms): run `probes tables wordnet` "
                        f"(dvc repro tables@wordnet)")
    return sizes["sizes"], sizes["pairs"], wordnet["hypernyms"]


def _split_plan(split: str, sizes, domains, labels, params: ObjectsParams) -> SplitPlan:
    c = Counter()
    objs: dict[str, Obj] = {}
    for name, size_m, source, n_pairs in zip(sizes["object"], sizes["size_m"], sizes["source"], sizes["n_pairs"]):
        domain, first = domains[name]
        if domain != DOMAIN[split]:
            continue
        c["objects in the domain"] += 1
        if not (size_m > 0 and math.isfinite(size_m)):
            c["left out: size not positive"] += 1
            continue
        if source == FITTED and (params.min_gap_fitted is None or n_pairs < params.min_pairs_fitted):
            c["left out: fitted size (min_gap_fitted null or fewer than min_pairs_fitted labels)"] += 1
            continue
        k, range_m = bucket(float(size_m), params)
        objs[name] = Obj(name, float(size_m), source, int(n_pairs), k, range_m, domain, first)
    names = sorted(objs)
    index = {name: i for i, name in enumerate(names)}
    c["objects usable, absolute size"] = sum(not o.fitted for o in objs.values())
    c["objects usable, fitted size"] = sum(o.fitted for o in objs.values())
    sp = SplitPlan(names, objs, np.array([objs[n].bucket for n in names], dtype=np.int64),
                   np.array([objs[n].fitted for n in names], dtype=bool), {}, {}, [], c,
                   np.array([objs[n].size_m for n in names], dtype=np.float64))
    for (a, b), direct in sorted(labels.items()):  # a < b, so index[a] < index[b]
        if a not in index or b not in index:
            continue
        oa, ob = objs[a], objs[b]
        if not candidates(params, oa.bucket, ob.bucket, oa.size_m, ob.size_m, oa.fitted or ob.fitted):
            continue  # not a candidate anyway
        if any((label == "larger") != (oa.size_m > ob.size_m) for _, label in direct):
            sp.bad.setdefault(index[a], set()).add(index[b])
            c["pairs dropped: a direct label disagrees with the sizes"] += 1
        else:
            sp.labels[(index[a], index[b])] = tuple(sorted(direct))
            c["pairs kept with a direct label (all agree)"] += 1
    sp.per_row = [np.array([len(partners(sp, i, tier, params)) for i in range(len(names))], dtype=np.int64)
                  for tier in (0, 1)]
    kept = [int(r.sum()) for r in sp.per_row]
    n = len(names)
    c[LEFT_OUT[params.pairing]] = (
        n * (n - 1) // 2 - sum(kept) - c["pairs dropped: a direct label disagrees with the sizes"])
    if params.prefer_absolute:
        c["pairs kept, both sizes absolute"], c["pairs kept, a fitted size"] = kept
    else:
        c["pairs kept"] = kept[0]
    return sp


def make_plan(tables: Mapping, params: ObjectsParams) -> Plan:
    """Objects of each split with their buckets, and the kept pairs (implicitly: see :class:`SplitPlan`)."""
    sizes, pairs, hypernyms = _tables(tables)
    unknown_sources = sorted(set(sizes["source"]) - set(ABSOLUTE) - {FITTED})
    if unknown_sources:
        raise DataError(f"{PROBE}: object_sizes.sizes has source(s) {unknown_sources}, neither absolute "
                        f"{list(ABSOLUTE)} nor {shown(FITTED)}")
    domains = wordnet_domains(hypernyms, set(sizes["object"]), params)
    labels: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)  # (a, b), a < b -> [(source, label)]
    for a, b, label, source in zip(pairs["obj1"], pairs["obj2"], pairs["label"], pairs["source"]):
        if a == b:
            continue
        if a > b:
            a, b, label = b, a, FLIP[label]
        labels[(a, b)].append((source, label))
    plan = Plan()
    plan.splits = {split: _split_plan(split, sizes, domains, labels, params) for split in SPLITS}
    plan.counts = {"sizes": len(sizes),
                   "wordnet": dict(sorted(Counter(d for d, _ in domains.values()).items())),
                   "splits": {split: dict(sp.counts) for split, sp in plan.splits.items()}}
    return plan


def _draw(sp: SplitPlan, tier: int, k: int, rng: random.Random, params: ObjectsParams) -> list[tuple[int, int]]:
    """``k`` distinct kept pairs ``(i, j)`` of ``tier``, uniformly (all of them when there are no more)."""
    counts = sp.per_row[tier]
    total = int(counts.sum())
    if k <= 0 or total == 0:
        return []
    picks = np.arange(total) if k >= total else np.array(sorted(rng.sample(range(total), k)), dtype=np.int64)
    ends = np.cumsum(counts)
    rows = np.searchsorted(ends, picks, side="right")
    out, row, js = [], -1, None
    for p, r in zip(picks.tolist(), rows.tolist()):
        if r != row:
            row, js = r, partners(sp, r, tier, params)
        out.append((r, int(js[p - (ends[r] - counts[r])])))
    return out


def choose(plan: Plan, params: ObjectsParams, split: str, rng: random.Random) -> list[tuple[str, str, str, tuple]]:
    """``(obj1, obj2, outcome, labels)`` rows of ``split``: ``size // 2`` per outcome (to one; capped by the
    kept pairs), drawn from tier 0 first, shuffled. ``labels``: the direct labels, obj1 against obj2."""
    sp = plan.splits[split]
    n = params.size[split]
    rows = []
    for o, outcome in enumerate(OUTCOMES):
        k = n // 2 + (o < n % 2)
        drawn = _draw(sp, 0, k, rng, params)
        drawn += _draw(sp, 1, k - len(drawn), rng, params)
        for i, j in drawn:
            a, b = sp.names[i], sp.names[j]
            labels = sp.labels.get((i, j), ())
            if sp.objects[a].size_m < sp.objects[b].size_m:
                a, b, labels = b, a, tuple((s, FLIP[lab]) for s, lab in labels)
            if outcome == "smaller":  # a is the larger one
                a, b, labels = b, a, tuple((s, FLIP[lab]) for s, lab in labels)
            rows.append((a, b, outcome, labels))
    rng.shuffle(rows)
    return rows

