"""Benchmark of the results browser at scale (issue 42: about a million prediction rows).

Writes a project of one probe with seven variants of 500 dev rows each (2 to 5 choices, the controls pointing at
their base) and ``--models`` models' zero-shot predictions on every variant (300 models: 1,050,000 rows), then
in this one run:

1. ``probes browse build``'s library call on it, timed, with the process's peak memory (target: at most 3 minutes
   on 2 cores);
2. the site served on 127.0.0.1 (``evaluators.browse.serve.serving``) and opened in headless Chromium (Debian's
   ``/usr/bin/chromium`` driven by Playwright) at an examples URL with a right/wrong filter over two models: the
   time from navigation until the row count is shown (target: at most 5 s), checked against the count computed
   from the prediction files; then four more filters chosen at random, each a fresh load timed to its count; the page's JS heap after them, and the bytes it fetched (it reads only the shard and the two models'
   blocks).

Usage: ``python bench/browse.py [--models 300] [--rows 500] [--variants 7] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

VARIANTS = ("original", "perturbed", "nolang", "birth_year", "years_as_ages", "ages_as_years", "release_phrasing")
WORDS = ("younger", "older", "same", "first", "second")


def write_project(root: Path, models: int, rows: int, variants: int, seed: int = 0) -> dict:
    """The project; returns ``{(variant, model): bool correct [rows]}``."""
    rng = np.random.default_rng(seed)
    correct = {}
    for v in VARIANTS[:variants]:
        folder = root / "data" / "probes" / "age" / v
        folder.mkdir(parents=True)
        ks = rng.integers(2, 6, rows)
        gold = [int(rng.integers(k)) for k in ks]
        lines = []
        for i, (k, g) in enumerate(zip(ks, gold)):
            row = {"id": f"{v[:2]}{i:05d}", "probe": "age", "variant": v, "template_id": f"t{i % 4}",
                   "question": {"stem": f"A {i % 90} year old is [MASK] than a {(i * 7) % 90} year old ({v}).",
                                "choices": [{"label": "ABCDE"[j], "text": WORDS[j]} for j in range(k)]},
                   "answerKey": "ABCDE"[g], "args": {"age1": i % 90, "age2": (i * 7) % 90}}
            if v in ("perturbed", "nolang"):
                row["source_id"] = f"or{i:05d}"
            lines.append(json.dumps(row))
        (folder / "dev.jsonl").write_text("\n".join(lines) + "\n")
        (folder / "meta.json").write_text(json.dumps({"generator_version": "2"}))
        skill = rng.uniform(-0.5, 1.5, models)
        for m in range(models):
            name = f"m{m:03d}"
            scores = rng.normal(size=(rows, 5))
            scores[np.arange(rows), gold] += skill[m]
            out = root / "results" / "zeroshot" / name / "age" / v
            out.mkdir(parents=True)
            preds, right = [], np.zeros(rows, bool)
            for i, (k, g) in enumerate(zip(ks, gold)):
                s = [round(float(x), 4) for x in scores[i, :k]]
                p = int(np.argmax(s))
                right[i] = p == g
                preds.append(json.dumps({"id": f"{v[:2]}{i:05d}", "scores": s, "prediction": "ABCDE"[p],
                                         "choice": WORDS[p], "gold": "ABCDE"[g], "correct": p == g}))
            (out / "predictions.jsonl").write_text("\n".join(preds) + "\n")
            (out / "metrics.json").write_text(json.dumps({"model": name, "probe": "age", "variant": v, "split": "dev",
                                                          "data": f"data/probes/age/{v}/dev.jsonl", "chance": 0.3}))
            correct[(v, name)] = right
    return correct


def browse(base: str, site: Path, correct: dict, variants: int, models: int, seed: int = 0) -> dict:
    from playwright.sync_api import sync_playwright

    rng = random.Random(seed)
    fetched = []
    timings = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get("PROBEKIT_CHROMIUM", "/usr/bin/chromium"))
        page = browser.new_page()
        page.on("response", lambda r: fetched.append((r.url, int(r.headers.get("content-length") or 0))))
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def count(url: str) -> tuple[int, float]:
            """A fresh load of ``url`` until its row count shows (the browser's HTTP cache may keep site.json)."""
            page.goto("about:blank")
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_function("() => { const e = document.querySelector('[data-testid=row-count]');"
                                   " return e && /^\\d+$/.test(e.textContent.trim()); }", timeout=60_000)
            took = time.perf_counter() - t0
            return int(page.text_content("[data-testid=row-count]").strip()), took

        checks = []
        for i in range(5):
            v = VARIANTS[0] if i == 0 else rng.choice(VARIANTS[:variants])
            a, b = ("m000", "m001") if i == 0 else (f"m{x:03d}" for x in rng.sample(range(models), 2))
            want = {"right": [a], "wrong": [b]} if i % 2 == 0 else {"right": [a, b], "wrong": []}
            url = (f"{base}/#/examples?probe=age&variant={v}&split=dev&models={a},{b}"
                   + "".join(f"&{k}={','.join(ms)}" for k, ms in want.items() if ms))
            got, took = count(url)
            expected = int(np.sum(np.all([correct[(v, m)] for m in want["right"]] +
                                         [~correct[(v, m)] for m in want["wrong"]], axis=0)))
            checks.append({"url": url[len(base):], "count": got, "expected": expected, "seconds": round(took, 2)})
            if got != expected:
                raise SystemExit(f"{url}: the page counts {got}, the prediction files {expected}")
        heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : null")
        browser.close()
    timings["first_count_s"] = checks[0]["seconds"]
    timings["checks"] = checks
    timings["js_heap_mb"] = round(heap / 2**20, 1) if heap else None
    timings["fetched_mb"] = round(sum(n for _, n in fetched) / 2**20, 2)
    timings["site_mb"] = round(sum(f.stat().st_size for f in site.rglob("*") if f.is_file()) / 2**20, 1)
    timings["errors"] = errors
    return timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=300)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--variants", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="write the project and site here and keep them")
    args = ap.parse_args()
    from evaluators.browse.build import build_site
    from evaluators.browse.serve import serving

    root = args.keep or Path(tempfile.mkdtemp(prefix="probekit-bench-browse-"))
    try:
        t0 = time.perf_counter()
        correct = write_project(root, args.models, args.rows, args.variants)
        wrote = time.perf_counter() - t0
        n = args.models * args.rows * args.variants
        t0 = time.perf_counter()
        build_site(root / "site", data=root / "data", results=root / "results", progress=lambda s: None)
        built = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        with serving(root / "site", port=0) as base:
            page = browse(base.rstrip("/"), root / "site", correct, args.variants, args.models)
        print(f"{n:,} prediction rows ({args.models} models × {args.variants} variants × {args.rows} rows), "
              f"written in {wrote:.0f} s")
        print(f"build: {built:.1f} s (target ≤ 180 s), peak memory of this process {peak:.0f} MB, "
              f"site {page['site_mb']} MB")
        print(f"first filtered count in Chromium: {page['first_count_s']:.2f} s (target ≤ 5 s); the page fetched "
              f"{page['fetched_mb']} MB, JS heap {page['js_heap_mb']} MB")
        for c in page["checks"]:
            print(f"  {c['seconds']:5.2f} s  {c['count']:4d} rows (files: {c['expected']})  {c['url']}")
        if page["errors"]:
            print("page errors:", page["errors"])
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
