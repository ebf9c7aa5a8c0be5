"""A small project on disk as the pipeline leaves it, for the predictions loader and the browser: a probe ``toy``
(original, PERTURBED and NO-LANG dev files, the controls pointing at their base with ``source_id``), two models'
zero-shot predictions on each variant, a curve's file (two sizes, two seeds), a ParaRel folder with one model's
queries, and a CALUM task with two variants and a seed. Answers are drawn from a seeded generator; a model's
answer on an example is exactly what ``truth`` records, so tests compare the loader and the site against it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

VARIANTS = ("original", "perturbed", "nolang")
MODELS = ("alpha", "beta")
CHOICES = ("younger", "older", "same")


def _write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def write_project(root: Path, *, n: int = 40, seed: int = 0, profile: str | None = "smoke") -> dict:
    """Write the project under ``root`` (``data/``, ``results/``); return ``truth``: ``{(variant, model): {id:
    (chosen choice index, correct, scores)}}`` for the zero-shot files, the rows per variant, and the others'
    answers."""
    rng = np.random.default_rng(seed)
    truth: dict = {"rows": {}, "zeroshot": {}, "curve": {}, "pararel": {}, "calum": {}}
    base_ids = [f"b{i:03d}" for i in range(n)]
    for variant in VARIANTS:
        rows = []
        for i, bid in enumerate(base_ids):
            k = 2 + (i % 2)
            order = list(rng.permutation(k))
            choices = [CHOICES[j] for j in order]
            gold = int(rng.integers(k))
            stem = {"original": f"A {20 + i} year old is [MASK] than a {30 + i % 7} year old.",
                    "perturbed": f"A {20 + i} year old is [MASK] blah than a {30 + i % 7} year old.",
                    "nolang": f"{20 + i} [MASK] {30 + i % 7}"}[variant]
            row = {"id": bid if variant == "original" else f"{variant[0]}{i:03d}", "probe": "toy", "variant": variant,
                   "question": {"stem": stem, "choices": [{"label": "ABC"[j], "text": c}
                                                          for j, c in enumerate(choices)]},
                   "answerKey": "ABC"[gold], "template_id": "even" if i % 2 == 0 else "odd",
                   "args": {"age1": 20 + i, "age2": 30 + i % 7}, "facts": [["age", 20 + i]] if i % 3 == 0 else []}
            if variant != "original":
                row["source_id"] = bid
            rows.append(row)
        _write_jsonl(root / "data" / "probes" / "toy" / variant / "dev.jsonl", rows)
        _write_json(root / "data" / "probes" / "toy" / variant / "meta.json",
                    {"probe": "toy", "generator_version": "3", "fingerprint": f"fp-{variant}"})
        truth["rows"][variant] = rows
        for model in MODELS:
            preds, answers = [], {}
            for row in rows:
                k = len(row["question"]["choices"])
                scores = [float(x) for x in np.round(rng.normal(size=k), 4)]
                if model == "beta" and variant == "nolang":   # always "younger": a constant text, at any label
                    texts = [c["text"] for c in row["question"]["choices"]]
                    scores = [1.0 if t == "younger" else 0.0 for t in texts]
                pick = int(np.argmax(scores))
                gold = "ABC".index(row["answerKey"])
                preds.append({"id": row["id"], "scores": scores, "prediction": "ABC"[pick],
                              "choice": row["question"]["choices"][pick]["text"], "gold": row["answerKey"],
                              "correct": pick == gold, "rule": "mask-logit"})
                answers[row["id"]] = (pick, pick == gold, scores)
            folder = root / "results" / "zeroshot" / model / "toy" / variant
            _write_jsonl(folder / "predictions.jsonl", preds)
            _write_json(folder / "metrics.json", {"model": model, "probe": "toy", "variant": variant, "split": "dev",
                                                  "data": f"data/probes/toy/{variant}/dev.jsonl", "chance": 0.4,
                                                  "data_fingerprint": f"fp-{variant}", "profile": profile,
                                                  "accuracy": float(np.mean([a[1] for a in answers.values()]))})
            truth["zeroshot"][(variant, model)] = answers
    # a curve: sizes 4 and 8, seeds 1 and 2, on the original and its controls
    for variant in VARIANTS:
        preds = []
        for row in truth["rows"][variant]:
            k = len(row["question"]["choices"])
            picked = {s: [int(rng.integers(k)) for _ in (1, 2)] for s in ("4", "8")}
            gold = "ABC".index(row["answerKey"])
            preds.append({"id": row["id"], "gold": row["answerKey"],
                          "choices": [c["text"] for c in row["question"]["choices"]], "predicted": picked,
                          "correct": {s: [p == gold for p in v] for s, v in picked.items()}})
            for s, v in picked.items():
                for seed_, p in zip((1, 2), v):
                    truth["curve"].setdefault((variant, f"alpha MLP N={s} seed {seed_}"), {})[row["id"]] = p
        _write_jsonl(root / "results" / "curve" / "alpha" / "toy" / "mlp" / variant / "predictions.jsonl", preds)
    _write_json(root / "results" / "curve" / "alpha" / "toy" / "mlp" / "metrics.json",
                {"model": "alpha", "probe": "toy", "split": "dev", "seeds": [1, 2], "sizes": [4, 8],
                 "profile": profile})
    # ParaRel: one relation, two patterns, three tuples
    pr = root / "data" / "pararel"
    _write_jsonl(pr / "patterns.jsonl", [{"relation": "P17", "pattern_id": 0, "pattern": "[X] is located in [Y] ."},
                                         {"relation": "P17", "pattern_id": 1, "pattern": "[X], in [Y]."}])
    tuples = [{"relation": "P17", "tuple_id": f"P17-{t}", "subject": s, "object": o}
              for t, (s, o) in enumerate([("Lyon", "France"), ("Kyoto", "Japan"), ("Ulm", "Germany")], 1)]
    _write_jsonl(pr / "tuples.jsonl", tuples)
    preds = []
    for p in (0, 1):
        for t in tuples:
            guess = "France" if t["tuple_id"] != "P17-3" or p == 0 else "Germany"
            top = [[guess, 2.0], ["Japan" if guess != "Japan" else "Italy", 1.5], ["Spain", 0.5]]
            preds.append({"relation": "P17", "tuple_id": t["tuple_id"], "pattern_id": p, "prediction": guess,
                          "gold": t["object"], "correct": guess == t["object"], "top_k": top})
            truth["pararel"][f"{t['tuple_id']}/{p}"] = (guess, guess == t["object"])
    _write_jsonl(root / "results" / "pararel" / "alpha" / "predictions.jsonl", preds)
    _write_json(root / "results" / "pararel" / "alpha" / "metrics.json",
                {"model": "alpha", "data": "data/pararel", "profile": profile, "majority": {"relations": {"P17": 0.5}}})
    # CALUM: rte, original and reverse, one seed
    preds = []
    for variant in ("original", "reverse"):
        rows = [{"pair_id": f"rte-dev-{i}", "task": "rte", "split": "dev", "label": "entailment" if i % 2 else
                 "not_entailment", "variant": variant, "sentence1": f"premise {i}", "sentence2": f"hypothesis {i}"}
                for i in range(6)]
        if variant == "reverse":
            rows = [{**r, "sentence1": r["sentence2"], "sentence2": r["sentence1"]} for r in rows]
        _write_jsonl(root / "data" / "calum" / "rte" / variant / "dev.jsonl", rows)
        for r in rows:
            guess = "entailment" if int(r["pair_id"].rsplit("-", 1)[1]) < 4 else "not_entailment"
            preds.append({"seed": 1, "task": "rte", "pair_id": r["pair_id"], "variant": variant, "prediction": guess,
                          "label": r["label"]})
            truth["calum"][(variant, r["pair_id"])] = (guess, guess == r["label"])
    _write_jsonl(root / "results" / "calum" / "alpha-rte" / "predictions.jsonl", preds)
    _write_json(root / "results" / "calum" / "alpha-rte" / "metrics.json",
                {"model": "alpha", "task": "rte", "split": "dev", "labels": ["entailment", "not_entailment"],
                 "majority": 0.5, "profile": profile, "data": {"rte": {"folder": "data/calum/rte"}}})
    return truth
