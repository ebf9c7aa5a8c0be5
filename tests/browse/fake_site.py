"""A small, deterministic results site in the browser's format (notes: the site folder of issue 42), for testing
the page without the builder: an oLMpics-like probe with its controls (siblings by `source_id`), an open-answer
ParaRel relation with pattern groups, preds.bin, pairs.bin computed from the fake predictions, and versions.json.

`write_fake_site(dir)` returns a `FakeSite` holding the predictions it wrote, so that a test computes the counts it
expects from them (not from the page)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import binom

STATIC = Path(__file__).resolve().parents[2] / "evaluators" / "browse" / "static"
LABELS = ["alpha-mlm", "beta-mlm", "gamma-mlm", "delta-mlm", "epsilon-mlm", "zeta-mlm"]
TEMPLATES = ["paper", "swap", "short"]
PAIR_LIMIT = 12


@dataclass
class FakeShard:
    meta: dict
    rows: list
    vocab: list
    pred: dict = field(default_factory=dict)      # run label -> int32[n]
    margin: dict = field(default_factory=dict)    # run label -> float32[n]
    correct: dict = field(default_factory=dict)   # run label -> uint8[n]
    scores: dict = field(default_factory=dict)    # run label -> float32[n, k]


@dataclass
class FakeSite:
    dir: Path
    site: dict
    shards: dict   # shard id -> FakeShard

    def shard(self, probe, variant, split="dev"):
        return next(s for s in self.shards.values()
                    if (s.meta["probe"], s.meta["variant"], s.meta["split"]) == (probe, variant, split))


def label(i: int) -> str:
    return LABELS[i] if i < len(LABELS) else f"model-{i}"


def _bootstrap(correct: np.ndarray, rng, reps=100):
    if not len(correct):
        return float("nan"), float("nan")
    draws = rng.integers(0, len(correct), size=(reps, len(correct)))
    means = correct[draws].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def mcnemar_p(rw: int, wr: int) -> float:
    """McNemar's exact two-sided p: twice the binomial tail of the smaller discordant count, capped at 1."""
    if rw + wr == 0:
        return 1.0
    return float(min(1.0, 2 * binom.cdf(min(rw, wr), rw + wr, 0.5)))


def crosstab(a: np.ndarray, b: np.ndarray) -> dict:
    """Counts over rows where both runs predicted (correct codes 0/1; 255 = no prediction)."""
    both = (a != 255) & (b != 255)
    a, b = a[both], b[both]
    return {"RR": int(((a == 1) & (b == 1)).sum()), "RW": int(((a == 1) & (b == 0)).sum()),
            "WR": int(((a == 0) & (b == 1)).sum()), "WW": int(((a == 0) & (b == 0)).sum())}


def _block(pred, margin, correct, scores, k) -> bytes:
    n = len(pred)
    out = pred.astype("<i4").tobytes() + margin.astype("<f4").tobytes() + correct.astype("u1").tobytes()
    out += b"\0" * (-n % 4)
    if k:
        out += scores.astype("<f4").tobytes()
    return out


def _predict(rng, rows, k, vocab, r, constant):
    """Run r's fake predictions: MC from random scores (stronger with a bias toward gold), open from the vocab."""
    n = len(rows)
    if k:
        gold = np.array([row["gold"] for row in rows])
        size = np.array([len(row["choices"]) for row in rows])
        scores = rng.normal(size=(n, k)).astype(np.float32)
        scores[np.arange(k)[None, :] >= size[:, None]] = np.nan   # NaN padded past a row's choices
        scores[np.arange(n), gold] += 0.3 * r
        if constant:
            scores[:, 0] += 100.0
        pred = np.nanargmax(scores, axis=1).astype(np.int32)
        other = scores.copy()
        other[np.arange(n), gold] = -np.inf
        margin = (scores[np.arange(n), gold] - np.nanmax(other, axis=1)).astype(np.float32)
    else:
        scores = None
        gold = np.array([vocab.index(row["answer"]) for row in rows])
        pred = np.where(rng.random(n) < 0.4 + 0.1 * r, gold, rng.integers(0, len(vocab), n)).astype(np.int32)
        margin = np.full(n, np.nan, dtype=np.float32)
    correct = (pred == gold).astype(np.uint8)
    missing = rng.random(n) < (0.02 if r % 2 else 0.0)   # odd runs skip a few rows
    pred[missing], margin[missing], correct[missing] = -1, np.nan, 255
    return pred, margin, correct, scores


def _mc_rows(ages, order, variant, base_ids):
    """Rows of one variant; row i is built from the base row order[i] (the same ages, so controls match)."""
    rows = []
    ages = ages.tolist()
    for i, j in enumerate(order.tolist()):
        a1, a2 = ages[j]
        choices = ["younger", "older"] if j % 3 else ["younger", "older", "the same age"]
        gold = int(a1 > a2)
        stem = f"A {a1} year old person is [MASK] than a {a2} year old person."
        if variant == "perturbed":
            stem = f"A {a1} year old person is [MASK] than me, and I am {a2}."
        elif variant == "nolang":
            stem = f"{a1} [MASK] {a2}"
        rows.append({"id": f"{variant[:2]}{i:06d}", "stem": stem, "choices": choices, "gold": gold,
                     "answer": choices[gold], "template": TEMPLATES[j % len(TEMPLATES)], "group": None,
                     "source_id": None if base_ids is None else base_ids[i],
                     "args": {"age1": a1, "age2": a2}, "facts": [] if j % 4 else [f"age({a1})", f"age({a2})"],
                     "siblings": {}})
    return rows


def _pararel_rows(rng, n):
    vocab = ["Germany", "France", "Italy", "Spain", "Japan", "Brazil", "Canada", "Kenya"]
    rows = []
    for i in range(n):
        tup, pattern = divmod(i, 4)
        answer = vocab[tup % len(vocab)]
        rows.append({"id": f"pr{i:06d}", "stem": f"City {tup} (pattern {pattern}) is located in [MASK].",
                     "choices": None, "gold": answer, "answer": answer, "template": f"pattern {pattern}",
                     "group": f"tuple-{tup}", "source_id": None, "args": {"subject": f"City {tup}"},
                     "facts": [{"subject": f"City {tup}", "relation": "P17", "object": answer}], "siblings": {}})
    return rows, vocab


def write_fake_site(dir, runs=2, rows=500, variants=("original", "perturbed", "nolang"), seed=0, *, pararel=True,
                    banner="Smoke scale: tiny random models, not the papers' numbers", versions=True,
                    labels=None) -> FakeSite:
    """`labels`: the runs' labels (default: `runs` short ones, LABELS)."""
    out = Path(dir)
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    for f in STATIC.iterdir():
        if f.is_file():
            shutil.copy(f, out / f.name)
    labels = list(labels) if labels is not None else [label(i) for i in range(runs)]
    runs = len(labels)

    shards: dict[str, FakeShard] = {}
    base_ids = None
    # Controls list their base rows in a shuffled order, so that the page must follow `siblings` and `source_id`.
    orders = {}
    ages = rng.integers(10, 90, size=(rows, 2))
    for v, variant in enumerate(variants):
        order = np.arange(rows) if v == 0 else rng.permutation(rows)
        orders[variant] = order
        r_ = _mc_rows(ages, order, variant, None if v == 0 else [base_ids[j] for j in order])
        if v == 0:
            base_ids = [r["id"] for r in r_]
        meta = {"id": f"s{len(shards):04d}", "family": "mc", "collection": "probes", "probe": "age_comparison",
                "variant": variant, "split": "dev", "data": f"data/probes/age_comparison/{variant}/dev.jsonl",
                "version": "2", "fingerprint": f"{seed:04d}{v:04d}" + "ab" * 28, "k": 3, "chance": 0.5,
                "baselines": [{"label": "majority", "value": 0.52}]}
        shards[meta["id"]] = FakeShard(meta, r_, [])
    ids = list(shards)
    where = {variant: np.argsort(orders[variant]) for variant in variants}   # base row -> position in a variant
    for sid, variant in zip(ids, variants):
        for pos, row in enumerate(shards[sid].rows):
            base = int(orders[variant][pos])
            row["siblings"] = {oid: int(where[ov][base]) for oid, ov in zip(ids, variants) if oid != sid}
    if pararel:
        prow, vocab = _pararel_rows(rng, max(8, min(rows, 400)))
        meta = {"id": f"s{len(shards):04d}", "family": "pararel", "collection": "pararel", "probe": "pararel",
                "variant": "P17", "split": "test", "data": "data/pararel/P17.jsonl", "version": None,
                "fingerprint": None, "k": 0, "chance": None, "baselines": []}
        shards[meta["id"]] = FakeShard(meta, prow, vocab)

    for sid, shard in shards.items():
        n, k = len(shard.rows), shard.meta["k"]
        block = 8 * n + (-n % 4) + n + 4 * n * k
        shard.meta.update(n=n, block=block, runs=[], siblings=[o for o in ids if o != sid] if sid in ids else [])
        blob = bytearray()
        for r, lab in enumerate(labels):
            pred, margin, correct, scores = _predict(rng, shard.rows, k, shard.vocab, r, constant=(r == 2))
            shard.pred[lab], shard.margin[lab], shard.correct[lab], shard.scores[lab] = pred, margin, correct, scores
            answered = correct[correct != 255].astype(float)
            low, high = _bootstrap(answered, rng)
            shard.meta["runs"].append({
                "label": lab, "model": lab, "source": f"results/zeroshot/{lab}/{shard.meta['probe']}/predictions.jsonl",
                "protocol": "zeroshot", "setting": None, "offset": len(blob), "n": int(len(answered)),
                "correct": int(answered.sum()), "accuracy": float(answered.mean()), "low": low, "high": high,
                "constant": r == 2})
            blob += _block(pred, margin, correct, scores, k)
            assert len(blob) == block * (r + 1)
        folder = out / "data" / "shards" / sid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "preds.bin").write_bytes(bytes(blob))
        (folder / "rows.json").write_text(json.dumps({"rows": shard.rows, "vocab": shard.vocab}))
        shard.meta["pairs"] = 2 <= runs <= PAIR_LIMIT
        if shard.meta["pairs"]:
            (folder / "pairs.bin").write_bytes(_pairs(shard, labels, rng).tobytes())

    site = {"format": 1, "title": "probekit results (fake)", "profile": "smoke", "banner": banner,
            "generated_by": "tests/browse/fake_site.py", "runs": labels, "versions": versions,
            "shards": [s.meta for s in shards.values()]}
    (out / "data" / "site.json").write_text(json.dumps(site, indent=1))
    if versions:
        changed = next((shards[i] for i, v in zip(ids, variants) if v == "perturbed"), shards[ids[0]])
        (out / "data" / "versions.json").write_text(json.dumps(_versions(changed, labels, variants)))
    return FakeSite(out, site, shards)


def _pairs(shard: FakeShard, labels, rng) -> np.ndarray:
    m = len(labels)
    out = np.zeros((m, m, 8), dtype="<f4")
    for a, la in enumerate(labels):
        for b, lb in enumerate(labels):
            ca, cb = shard.correct[la], shard.correct[lb]
            t = crosstab(ca, cb)
            both = (ca != 255) & (cb != 255)
            d = ca[both].astype(float) - cb[both].astype(float)
            diff = float(d.mean()) if len(d) else float("nan")
            low, high = _bootstrap(d, rng)
            out[a, b] = [t["RR"], t["RW"], t["WR"], t["WW"], diff, low, high, mcnemar_p(t["RW"], t["WR"])]
    return out


def _dataset_row(row, stem=None, choices=None) -> dict:
    """A row as the dataset file holds it (what `probes diff --examples` puts in its `old` and `new`)."""
    choices = choices or row["choices"]
    return {"id": row["id"], "question": {"stem": stem or row["stem"],
                                          "choices": [{"label": "ABC"[i], "text": c} for i, c in enumerate(choices)]},
            "answerKey": "ABC"[row["gold"]], "template_id": row["template"], "args": row["args"]}


def _versions(shard: FakeShard, labels, variants) -> dict:
    """`probes diff --examples` joined with --json as the builder writes it: the shard's variant changed (three
    stems reworded, one row's choices reordered, one added), every other variant a split with nothing changed.
    Fields are named as the diff names them (`stem`, `choices`, `answer`); keys are not row ids."""
    rows = shard.rows
    variant = shard.meta["variant"]
    config = "age_comparison" if variant == "original" else f"age_comparison-{variant}"
    changed = [{"status": "changed", "key": f"key{i:03d}", "what": "stem reworded", "fields": ["stem"],
                "old": _dataset_row(r, stem=r["stem"].replace("person", "man")), "new": _dataset_row(r)}
               for i, r in enumerate(rows[:3])]
    r = rows[4]
    changed.append({"status": "changed", "key": "key004", "what": "choices reordered", "fields": ["choices", "answer"],
                    "old": _dataset_row(r, choices=r["choices"][::-1]) | {"answerKey": "ABC"[len(r["choices"]) - 1 - r["gold"]]},
                    "new": _dataset_row(r)})
    added = [{"status": "added", "key": "key003", "what": "new example", "fields": [], "old": None,
              "new": _dataset_row(rows[3])}]
    effects = [{"model": lab, "right_to_wrong": 1, "wrong_to_right": 0,
                "flipped": [{"key": "key000", "flip": "right->wrong", "old_prediction": "older",
                             "new_prediction": "younger", "gold_old": "older", "gold_new": "older"}]} for lab in labels]
    quiet = [{"config": "age_comparison" if v == "original" else f"age_comparison-{v}", "split": "dev", "added": 0,
              "removed": 0, "changed": 0, "examples": [], "effects": []} for v in variants if v != variant]
    return {"source": "diff.json", "old": "HEAD~1", "new": "workspace",
            "splits": quiet[:1] + [{"config": config, "split": "dev", "added": 1, "removed": 0, "changed": 4,
                                    "examples": changed + added, "effects": effects}] + quiet[1:]}
