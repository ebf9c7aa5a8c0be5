"""The masked-LM rules' precision and definitions: a bf16 model keeps fp32's answers (the output projection in
float32), PLL is PLL-word-l2r (Kauf & Ivanova 2023: only the later tokens *of the same word* are masked), and
the head-only forward hook falls back to the full head when it does not fire."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

from evaluators.engine.scorer import Engine

STEMS = ["He is [MASK] .", "A 24 year old person is [MASK] than me in age .", "the [MASK] is oldest",
         "[MASK] , said the third .", "It is [MASK] than that , they say , again and again .",
         "We met the [MASK] yesterday .", "Nobody thought it was [MASK] at all ."]
IDS = [f"q{i}" for i in range(len(STEMS))]
PAIR = ["older", "younger"]


def load(path):
    return AutoModelForMaskedLM.from_pretrained(str(path)).eval(), AutoTokenizer.from_pretrained(str(path))


@pytest.fixture(scope="module")
def close_rows(tiny_bert):
    """A tiny BERT whose two answers' output rows are nearly the same and whose logits there are near 10,
    where bf16 values are 0.0625 apart: its margins are of order 1e-3. The rows and biases are exact in
    bf16, so the fp32 and bf16 models share their output layer and differ only in arithmetic."""
    model, tok = load(tiny_bert)
    a, b = tok.convert_tokens_to_ids(PAIR)
    torch.manual_seed(3)
    with torch.no_grad():
        out = model.get_output_embeddings()
        out.weight[b] = out.weight[a] + 2e-3 * torch.randn_like(out.weight[a])
        out.weight.copy_(out.weight.to(torch.bfloat16).float())
        out.bias[a] = out.bias[b] = 10.0
    return model, tok


@pytest.mark.parametrize("rule", ["mask-logit", "pll"])
def test_bf16_keeps_the_fp32_answers(close_rows, rule):
    model, tok = close_rows
    choices = [PAIR] * len(STEMS)
    full = np.asarray(Engine(model, tok, "mlm", rule=rule).score(STEMS, choices, IDS))
    half = np.asarray(Engine(copy.deepcopy(model).to(torch.bfloat16), tok, "mlm", rule=rule)
                      .score(STEMS, choices, IDS))
    fp32, bf16 = full[:, 1] - full[:, 0], half[:, 1] - half[:, 0]
    assert 1e-4 < np.abs(fp32).min() and np.abs(fp32).max() < 3e-2  # the answers are close calls
    assert np.abs(bf16 - fp32).max() < 1e-2
    assert (bf16 != 0).all() and (np.sign(bf16) == np.sign(fp32)).all()  # no tie, no flipped answer


def test_fp32_output_projection_is_the_model_head_bit_for_bit(tiny_bert):
    """An fp32 model's mask logits are the head's own, to the bit: the float32 projection changes nothing."""
    model, tok = load(tiny_bert)
    choices = [PAIR] * len(STEMS)
    got = np.asarray(Engine(model, tok, "mlm", batch_size=1).score(STEMS, choices, IDS), np.float32)
    a, b = tok.convert_tokens_to_ids(PAIR)
    for stem, row in zip(STEMS, got):
        enc = tok(stem.replace("[MASK]", tok.mask_token), return_tensors="pt")
        at = (enc["input_ids"][0] == tok.mask_token_id).nonzero().item()
        with torch.no_grad():
            hidden = model.base_model(**enc).last_hidden_state[:, at:at + 1]
            logits = model.cls(hidden)[0, 0]
        assert row.tolist() == logits[[a, b]].tolist()


def word_l2r(model, tok, text: str, begin: int, end: int) -> float:
    """PLL-word-l2r of the characters ``text[begin:end]``, computed alone: for each of their tokens, one copy
    of the statement with that token and the later tokens of its word (``word_ids()``) masked. A lone space
    piece (``Ġ``, an empty offset at its word's start) is its word's first token."""
    enc = tok(text, return_offsets_mapping=True)
    ids, words = enc["input_ids"], enc.word_ids()
    inside = [i for i, (s, e) in enumerate(enc["offset_mapping"])
              if words[i] is not None and begin <= s and e <= end and (e > s or s < end)]
    total = 0.0
    for position in inside:
        masked = [tok.mask_token_id if p in inside and p >= position and words[p] == words[position] else t
                  for p, t in enumerate(ids)]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([masked])).logits[0, position]
        total += logits.log_softmax(-1)[ids[position]].item()
    return total


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_roberta"])
def test_pll_is_word_l2r_on_multi_word_choices(fixture, request):
    model, tok = load(request.getfixturevalue(fixture))
    torch.manual_seed(1)
    with torch.no_grad():  # logits of order 1, so that the rules' difference shows
        model.get_output_embeddings().bias.normal_()
    stems = ["He met the [MASK] yesterday .", "It was [MASK] , they say ."]
    choices = [["xylophonist quarterbacks", "old man", "notwithstanding"],
               ["notwithstanding xylophonist", "older younger", "old"]]
    multi = [w for row in choices for w in row if len(w.split()) > 1 and len(tok.tokenize(" " + w)) > 2]
    assert multi  # multi-word, multi-token choices are scored
    scores = Engine(model, tok, "mlm", rule="pll", batch_size=2).score(stems, choices, ["a", "b"])
    for stem, words, row in zip(stems, choices, scores):
        prefix, suffix = stem.split("[MASK]")
        expected = [word_l2r(model, tok, prefix + w + suffix, len(prefix), len(prefix) + len(w)) for w in words]
        assert row == pytest.approx(expected, abs=1e-5)


class NoHookModel(torch.nn.Module):
    """A stand-in for remote code on which the head-only hook does not fire: ``base_model`` is the model itself
    (``self_base``) or a module its forward never calls."""

    def __init__(self, inner, self_base: bool):
        super().__init__()
        self.inner, self.config, self.self_base = inner, inner.config, self_base
        self.unused = torch.nn.Identity()

    @property
    def base_model(self):
        return self if self.self_base else self.unused

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()

    def forward(self, **kwargs):
        return self.inner(**kwargs)


@pytest.mark.parametrize("self_base", [True, False])
@pytest.mark.parametrize("rule", ["mask-logit", "pll"])
def test_the_full_head_when_the_hook_does_not_fire(tiny_bert, self_base, rule):
    model, tok = load(tiny_bert)
    torch.manual_seed(1)
    with torch.no_grad():
        model.get_output_embeddings().bias.normal_()
    choices = [PAIR] * len(STEMS)
    expected = Engine(model, tok, "mlm", rule=rule).score(STEMS, choices, IDS)
    got = Engine(NoHookModel(model, self_base), tok, "mlm", rule=rule, batch_size=3).score(STEMS, choices, IDS)
    assert np.allclose(got, expected, atol=1e-5)
