"""The heads a MC-MLM learning curve trains on cached mask features (oLMpics §3.2).

- ``MLP``: the model's own MLM head (transform + decoder), as pretrained, or as newly initialised with a
  seed when the checkpoint has none; **LINEAR**: only its final projection (decoder weights and bias) trains.
- MLM-BASELINE: the same shape of head (dense, GELU, LayerNorm, decoder), freshly initialised, over the
  1000-d GloVe features.

The paper's masked softmax over the K candidates reads only the candidates' rows of the decoder, and AdamW
updates each row from its own gradient, so the head is trained on the decoder cut to the probe's candidate
tokens: the same training as over the whole vocabulary, at a fraction of the cost. The head runs the
checkpoint's own head module (any MLM family): its encoder is swapped for a pass-through of the features.
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch
from transformers.modeling_outputs import BaseModelOutput

SETTINGS = ("MLP", "LINEAR")


class _PassThrough(torch.nn.Module):
    """Stands in for the encoder: the features given as ``inputs_embeds`` are its last hidden state."""

    def forward(self, *args, inputs_embeds=None, **kwargs):
        return BaseModelOutput(last_hidden_state=inputs_embeds)


class MaskedLMHead(torch.nn.Module):
    """A masked LM's head over features ``[batch, hidden]`` -> logits of the ``candidates`` token ids."""

    def __init__(self, model, candidates: Sequence[int]):
        super().__init__()
        prefix = model.base_model_prefix
        encoder = getattr(model, prefix)
        setattr(model, prefix, _PassThrough())
        try:  # copies the head alone (a decoder tied to the input embeddings becomes its own copy)
            head = copy.deepcopy(model)
        finally:
            setattr(model, prefix, encoder)
        decoder = head.get_output_embeddings()
        rows = torch.as_tensor(list(candidates), dtype=torch.long, device=decoder.weight.device)
        cut = torch.nn.Linear(decoder.in_features, len(rows), bias=True, device=decoder.weight.device)
        with torch.no_grad():
            cut.weight.copy_(decoder.weight[rows])
            cut.bias.copy_(decoder.bias[rows] if decoder.bias is not None else torch.zeros(len(rows)))
        head.set_output_embeddings(cut)
        self.head = head.float().eval()
        # not a registered submodule (its parameters are the head's own): a plain attribute, copied with the head
        object.__setattr__(self, "_module", self._head_module())

    def _head_module(self) -> torch.nn.Module | None:
        """The model's own head module (BERT's ``cls``, RoBERTa's ``lm_head``, ALBERT's ``predictions``) when
        calling it on the features gives, bit for bit, what the whole model's forward gives: a learning curve
        calls the head some 12,000 times, and the model's forward around it (masks, output records) costs a third
        of each call. None (the whole forward) for a family whose head is not one such module (DistilBERT)."""
        features = torch.randn(3, 1, self.head.config.hidden_size, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            whole = self.head(inputs_embeds=features).logits
            for name in ("cls", "lm_head", "predictions"):
                module = getattr(self.head, name, None)
                if isinstance(module, torch.nn.Module):
                    try:
                        direct = module(features)
                    except Exception:   # noqa: BLE001 (a module of that name that takes other inputs)
                        continue
                    if isinstance(direct, torch.Tensor) and torch.equal(direct, whole):
                        return module
        return None

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if self._module is not None:
            return self._module(features[:, None, :])[:, 0, :]
        return self.head(inputs_embeds=features[:, None, :]).logits[:, 0, :]

    def final_projection(self) -> torch.nn.Module:
        return self.head.get_output_embeddings()


class BaselineHead(torch.nn.Module):
    """MLM-BASELINE's head (the original's BERT-like head): dense, dropout 0.5, GELU, LayerNorm, decoder over
    the candidate words; weights drawn with std 0.02 under the caller's seed."""

    def __init__(self, width: int, n_candidates: int):
        super().__init__()
        self.dense = torch.nn.Linear(width, width)
        self.dropout = torch.nn.Dropout(0.5)
        self.layer_norm = torch.nn.LayerNorm(width)
        self.decoder = torch.nn.Linear(width, n_candidates)
        for layer in (self.dense, self.decoder):
            torch.nn.init.normal_(layer.weight, std=0.02)
            torch.nn.init.zeros_(layer.bias)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.layer_norm(torch.nn.functional.gelu(self.dropout(self.dense(features))))
        return self.decoder(x)

    def final_projection(self) -> torch.nn.Module:
        return self.decoder


def select(head: torch.nn.Module, setting: str) -> None:
    """``MLP``: every head parameter trains; ``LINEAR``: only the final projection."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    for p in head.parameters():
        p.requires_grad_(setting == "MLP")
    for p in head.final_projection().parameters():
        p.requires_grad_(True)
