"""bf16 keeps fp32's answers on real checkpoints: a model loaded in bf16 from a float32 checkpoint scores with its
head at the checkpoint's precision (``evaluators/engine/checkpoint_head.py``), not with output rows rounded at load.

The checkpoints here are saved at float32 with two answers' output rows (and biases) that differ by less than bf16
resolves: loaded in bf16 they are the same row, so the old scorer tied every example (its float32 projection read
rows already rounded)."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

PAIR = ["older", "younger"]
AGES = [(32, 28), (18, 30), (45, 61), (70, 22), (19, 20), (55, 54), (8, 80), (33, 41)]


def below_bf16(base: torch.Tensor, seed: int) -> torch.Tensor:
    """``base`` (exact in bf16) plus noise of at most 0.45 of bf16's spacing at each value: a different float32
    row that bf16 rounds back to ``base``."""
    g = torch.Generator().manual_seed(seed)
    spacing = torch.exp2(torch.floor(torch.log2(base.abs()))) * 2.0 ** -7
    other = base + 0.45 * spacing * (2 * torch.rand(base.shape, generator=g) - 1)
    assert torch.equal(other.to(torch.bfloat16), base.to(torch.bfloat16)) and not torch.equal(other, base)
    return other


@pytest.fixture(scope="module")
def sub_bf16_bert(tiny_bert, tmp_path_factory):
    """The tiny BERT, saved at float32 (safetensors), whose "older" output row is "younger"'s plus noise below
    bf16's resolution, and whose output biases differ by 0.03 around 10 (bf16 values there are 0.0625 apart)."""
    path = tmp_path_factory.mktemp("sub-bf16-bert")
    model = AutoModelForMaskedLM.from_pretrained(str(tiny_bert))
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    a, b = tok.convert_tokens_to_ids(PAIR)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        out = model.get_output_embeddings()
        out.weight[b] = torch.randn(out.weight.shape[1], generator=g).to(torch.bfloat16).float()
        out.weight[a] = below_bf16(out.weight[b], seed=6)
        out.bias[b], out.bias[a] = 10.0, 10.03
    model.save_pretrained(path)  # safetensors, float32
    tok.save_pretrained(path)
    return path


def age_rows() -> list[dict]:
    """An age-comparison dev file as the generator writes it (choices in either order)."""
    rows = []
    for n, (x, y) in enumerate(AGES):
        words = PAIR if n % 2 else PAIR[::-1]
        rows.append({"id": f"age-{n}", "question": {
            "stem": f"A {x} year old person is [MASK] than me in age, If I am a {y} year old person.",
            "choices": [{"label": label, "text": w} for label, w in zip("AB", words)]},
            "answerKey": "AB"[words.index("older" if x > y else "younger")]})
    return rows


def margins(out, rows) -> np.ndarray:
    """score(older) - score(younger) per example, from ``predictions.jsonl``."""
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    texts = [[c["text"] for c in r["question"]["choices"]] for r in rows]
    return np.array([p["scores"][t.index("older")] - p["scores"][t.index("younger")] for p, t in zip(preds, texts)])


def test_bf16_command_keeps_fp32_margins_below_bf16_resolution(sub_bf16_bert, tmp_path):
    """``probes evaluate zeroshot --dtype bfloat16`` on the checkpoint: fp32's margins within 1e-2, no tie, no
    flipped answer (before: every example a tie, 2.4e-2 off)."""
    from probes.main import main

    rows = age_rows()
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    got = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / dtype
        assert main(["evaluate", "zeroshot", "--model", str(sub_bf16_bert), "--data", str(data), "--device", "cpu",
                     "--dtype", dtype, "--out", str(out)]) == 0
        assert json.loads((out / "metrics.json").read_text())["dtype"] == dtype
        got[dtype] = margins(out, rows)
    fp32, bf16 = got["float32"], got["bfloat16"]
    assert (np.abs(fp32) > 1e-3).all()  # fp32 tells the answers apart
    assert (bf16 != 0).all()  # no tie
    assert (np.sign(bf16) == np.sign(fp32)).all()  # no flipped answer
    assert np.abs(bf16 - fp32).max() < 1e-2


@pytest.mark.parametrize("rule", ["mask-logit", "pll"])
def test_bf16_engine_keeps_fp32_margins_for_both_masked_rules(sub_bf16_bert, rule):
    """The candidates'-rows head (``mask-logit``) and the full-vocabulary one (PLL)."""
    from evaluators.engine.models import load_lm
    from evaluators.engine.scorer import Engine
    from probekit.tokens.refs import ModelRef

    stems = [r["question"]["stem"] for r in age_rows()]
    ref = ModelRef("m", str(sub_bf16_bert), str(sub_bf16_bert))
    scores = {}
    for dtype in ("float32", "bfloat16"):
        lm = load_lm(ref, dtype=dtype)
        scores[dtype] = np.asarray(Engine(lm.model, lm.tokenizer, "mlm", rule=rule).score(
            stems, [PAIR] * len(stems), [f"q{i}" for i in range(len(stems))]))
    fp32, bf16 = (s[:, 0] - s[:, 1] for s in (scores["float32"], scores["bfloat16"]))
    assert (bf16 != 0).all() and (np.sign(bf16) == np.sign(fp32)).all()
    assert np.abs(bf16 - fp32).max() < 1e-2


def test_projection_reads_the_checkpoint_rows_not_the_rounded_ones(sub_bf16_bert, tmp_path, caplog):
    """The projection's rows and bias come from the float32 file, bit for bit, whether read whole or by rows,
    from a safetensors file or a torch ``pytorch_model.bin``; a checkpoint without the key gives the loaded
    weights upcast, and says so."""
    from evaluators.engine.checkpoint_head import Checkpoint, projection32, read_float32

    fp32 = AutoModelForMaskedLM.from_pretrained(str(sub_bf16_bert)).eval()
    bf16 = AutoModelForMaskedLM.from_pretrained(str(sub_bf16_bert), dtype=torch.bfloat16).eval()
    a, b = AutoTokenizer.from_pretrained(str(sub_bf16_bert)).convert_tokens_to_ids(PAIR)
    want_w, want_b = fp32.get_output_embeddings().weight.detach(), fp32.get_output_embeddings().bias.detach()
    assert torch.equal(bf16.get_output_embeddings().weight[a], bf16.get_output_embeddings().weight[b])  # rounded

    weight, bias = projection32(bf16)  # the whole matrix (the full-vocabulary rules)
    assert weight.dtype == bias.dtype == torch.float32
    assert torch.equal(weight, want_w) and torch.equal(bias, want_b)

    torch_dir = tmp_path / "bin"
    shutil.copytree(sub_bf16_bert, torch_dir)
    (torch_dir / "model.safetensors").unlink()
    torch.save(fp32.state_dict(), torch_dir / "pytorch_model.bin")
    proj = bf16.get_output_embeddings()
    rows = np.array([b, a])
    names = ["cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"]  # tied: stored once
    for folder in (sub_bf16_bert, torch_dir):
        got, found = read_float32(bf16, Checkpoint(folder), proj.weight, names, rows)
        assert found and torch.equal(got, want_w[rows])

    # a key the checkpoint does not hold: the loaded (rounded) weights, upcast, and a warning
    got, found = read_float32(bf16, Checkpoint(sub_bf16_bert), proj.weight, ["no.such.weight"], rows)
    assert not found and torch.equal(got, proj.weight[rows].float())
    renamed = tmp_path / "renamed"
    shutil.copytree(sub_bf16_bert, renamed)
    from safetensors.torch import load_file, save_file

    tensors = load_file(renamed / "model.safetensors")
    tensors["other.name"] = tensors.pop("bert.embeddings.word_embeddings.weight")
    save_file(tensors, renamed / "model.safetensors", metadata={"format": "pt"})
    bf16.name_or_path = str(renamed)
    with caplog.at_level(logging.WARNING, logger="probekit"):
        weight, _ = projection32(bf16)
    assert torch.equal(weight, proj.weight.float())
    assert f"not found at their own precision in the checkpoint's files ({renamed})" in caplog.text


def test_float32_mlm_head_is_the_fp32_head_on_the_bf16_encoder(sub_bf16_bert):
    """Unit test of the head: on the bf16 encoder's hidden state at the mask, the candidates' logits (``rows``)
    and the full-vocabulary ones are the float32 checkpoint's head (transform and projection) applied to that
    hidden state upcast; the model itself is left as loaded."""
    from evaluators.engine.checkpoint_head import Float32MlmHead

    fp32 = AutoModelForMaskedLM.from_pretrained(str(sub_bf16_bert)).eval()
    bf16 = AutoModelForMaskedLM.from_pretrained(str(sub_bf16_bert), dtype=torch.bfloat16).eval()
    tok = AutoTokenizer.from_pretrained(str(sub_bf16_bert))
    enc = tok(["He is [MASK] than me .", "A 3 year old is [MASK] ."], return_tensors="pt", padding=True)
    with torch.no_grad():
        hidden = bf16.base_model(**enc).last_hidden_state.float()
        want = fp32.cls(hidden)
        ids = torch.as_tensor(tok.convert_tokens_to_ids(PAIR))
        rows = np.unique(ids.numpy())
        head = Float32MlmHead.of(bf16, rows=rows)
        got = head(**enc).logits
        assert got.dtype == torch.float32 and got.shape[-1] == len(rows)
        assert torch.allclose(got[..., head.columns(ids)], want[..., ids], atol=1e-5, rtol=0)
        full = Float32MlmHead.of(bf16)(**enc).logits
        assert torch.allclose(full, want, atol=1e-5, rtol=0)
    assert next(bf16.parameters()).dtype == torch.bfloat16  # unchanged
    assert bf16.cls.predictions.decoder.weight is bf16.bert.embeddings.word_embeddings.weight
    assert Float32MlmHead.of(fp32) is None  # a float32 model runs as it is


def test_bf16_causal_choice_keeps_fp32_margins_below_bf16_resolution(tiny_gpt2, tmp_path):
    """GPT-2 (its projection tied to the input embeddings): two one-token choices whose rows differ below bf16's
    resolution, scored after the same words (``choice``): bf16 margins within 1e-2 of fp32's, no tie, no flip."""
    from evaluators.engine.models import load_lm
    from evaluators.engine.scorer import Engine
    from probekit.tokens.refs import ModelRef

    tok = AutoTokenizer.from_pretrained(str(tiny_gpt2))
    words = [w for w in ("older", "younger", "first", "second", "third") if len(tok.encode(" " + w)) == 1][:2]
    assert len(words) == 2
    a, b = (tok.encode(" " + w)[0] for w in words)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_gpt2))
    with torch.no_grad():
        out = model.get_output_embeddings()
        out.weight[b] = (8 * out.weight[b]).to(torch.bfloat16).float()  # large: bf16's spacing is coarse there
        out.weight[a] = below_bf16(out.weight[b], seed=7)
    path = tmp_path / "gpt2"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    stems = ["A 32 year old person is [MASK]", "the person is [MASK]", "He said it was [MASK]", "I am [MASK]"]
    ref = ModelRef("g", str(path), str(path))
    scores = {}
    for dtype in ("float32", "bfloat16"):
        lm = load_lm(ref, dtype=dtype)
        scores[dtype] = np.asarray(Engine(lm.model, lm.tokenizer, "causal", rule="choice").score(
            stems, [words] * len(stems), [f"q{i}" for i in range(len(stems))]))
    fp32, bf16 = (s[:, 0] - s[:, 1] for s in (scores["float32"], scores["bfloat16"]))
    assert (np.abs(fp32) > 1e-4).all()
    assert (bf16 != 0).all() and (np.sign(bf16) == np.sign(fp32)).all()
    assert np.abs(bf16 - fp32).max() < 1e-2
