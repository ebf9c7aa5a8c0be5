"""ESIM (Chen et al. 2017, "Enhanced LSTM for Natural Language Inference") over GloVe, the oLMpics MC-QA
baseline: the stem is the premise, a choice the hypothesis, and each pair gets one logit (the caller
softmaxes a question's logits over its choices).

The layers are the original's (alontalmor/oLMpics, ``models/esim_baseline.py`` with ``config/esim_baseline.jsonnet``):
one BiLSTM of 300 per direction, dot-product attention, the enhancement [a; ã; a - ã; a * ã], a 300-d ReLU
projection, a second BiLSTM, mean and max pooling, dropout 0.3, a 300-d ReLU layer, dropout, one logit; the
LSTMs' inputs take AllenNLP's variational dropout (one mask per sequence, the same at every position), and the
linear layers' weights are Xavier-uniform, their biases zero (the config's ``initializer``). The embeddings are
trainable, as the config's ``"trainable": true``.

Padding has no effect on a pair's logit: both BiLSTMs read packed sequences, attention gives padding zero
weight and pooling skips it. Ids and masks are those of :meth:`evaluators.olmpics.glove.Lexicon.encode` (masks are
True on a prefix of each row, never empty).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class ESIM(nn.Module):
    """``hidden`` is each LSTM direction's size and the MLP's width; the defaults are oLMpics' ESIM baseline
    config (hidden 300, dropout 0.3, trainable embeddings). ``embeddings``: the initial ``[V, D]`` matrix (row 0
    padding, kept zero)."""

    def __init__(self, embeddings: np.ndarray, hidden: int = 300, dropout: float = 0.3,
                 freeze_embeddings: bool = False):
        super().__init__()
        self.embed = nn.Embedding.from_pretrained(torch.tensor(embeddings, dtype=torch.float32),  # a copy
                                                  freeze=freeze_embeddings, padding_idx=0)
        self.drop = VariationalDropout(dropout)
        self.encoder = nn.LSTM(self.embed.embedding_dim, hidden, batch_first=True, bidirectional=True)
        self.project = nn.Sequential(nn.Linear(8 * hidden, hidden), nn.ReLU())
        self.composer = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)
        self.classify = nn.Sequential(nn.Dropout(dropout), nn.Linear(8 * hidden, hidden), nn.ReLU(),
                                      nn.Dropout(dropout), nn.Linear(hidden, 1))
        for layer in (self.project[0], self.classify[1], self.classify[4]):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, premise_ids: torch.Tensor, premise_mask: torch.Tensor, hypothesis_ids: torch.Tensor,
                hypothesis_mask: torch.Tensor) -> torch.Tensor:
        """``[batch]`` logits of ``[batch, La]`` premise and ``[batch, Lb]`` hypothesis ids and bool masks."""
        a = _bilstm(self.encoder, self.drop(self.embed(premise_ids)), premise_mask)
        b = _bilstm(self.encoder, self.drop(self.embed(hypothesis_ids)), hypothesis_mask)
        scores = a @ b.transpose(1, 2)  # [batch, La, Lb]
        a_tilde = _masked_softmax(scores, hypothesis_mask[:, None, :]) @ b
        b_tilde = _masked_softmax(scores.transpose(1, 2), premise_mask[:, None, :]) @ a
        v_a = _bilstm(self.composer, self.drop(self.project(_enhance(a, a_tilde))), premise_mask)
        v_b = _bilstm(self.composer, self.drop(self.project(_enhance(b, b_tilde))), hypothesis_mask)
        return self.classify(torch.cat([*_pool(v_a, premise_mask), *_pool(v_b, hypothesis_mask)], -1)).squeeze(-1)


class VariationalDropout(nn.Dropout):
    """Dropout of ``[batch, length, features]`` with one mask per sequence, the same at every position (the
    original's ``VariationalDropout``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = nn.functional.dropout(x.new_ones(x.shape[0], 1, x.shape[-1]), self.p, self.training)
        return x * keep


def _bilstm(lstm: nn.LSTM, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The LSTM over each row's unpadded prefix only; zeros at padded positions."""
    lengths = mask.sum(1).cpu()
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    return pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=x.shape[1])[0]


def _masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, exactly zero where ``mask`` is False."""
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)


def _enhance(x: torch.Tensor, aligned: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, aligned, x - aligned, x * aligned], -1)


def _pool(v: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and max over the unpadded positions."""
    m = mask[..., None]
    mean = (v * m).sum(1) / m.sum(1)
    return mean, v.masked_fill(~m, float("-inf")).amax(1)
