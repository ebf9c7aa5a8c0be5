"""Masked-LM rules: ``mask-logit`` (oLMpics' MC-MLM: the MLM head's logit of each candidate token at the mask),
``pll`` (a pseudo-log-likelihood of multi-token choices), and the hidden state at the mask (features).

The model's own MLM head runs on the mask rows only: a forward hook on the encoder keeps the hidden state at
each row's mask, which removes nearly all of the head's cost and is exact for every MLM family (BERT,
RoBERTa, ALBERT, DistilBERT, ELECTRA, DeBERTa-v2...): no shortcut through the output embeddings.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from probekit.errors import ProbekitError

from .runner import Runner, token_log_probs
from .statements import Statements

MULTI_TOKEN_RULES = ("error", "first")
"""``error``: a choice that is not one token is refused. ``first``: it is scored by its first in-word token."""


class CandidateError(ProbekitError, ValueError):
    """A choice word is not a single token of the model's vocabulary (in context), or two choices tie."""


def masked_inputs(tok, st: Statements, multi_token: str = "error") -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Per example: the statement with the word replaced by one mask token, the mask's position, and the
    candidate token ids ``[examples, max choices]`` (padded with -1)."""
    if multi_token not in MULTI_TOKEN_RULES:
        raise ValueError(f"multi_token must be one of {MULTI_TOKEN_RULES}, got {multi_token!r}")
    if multi_token == "error" and not st.single.all():
        row = int(np.argmin(st.single))
        raise CandidateError(f"example {st.example_ids[st.example[row]]}: candidate {st.words[row]!r} is not a "
                             f"single token for this tokenizer in context (got {st.pieces(tok, row)}); pass "
                             f"--multi-token first to score it by its first token, or use a rule for multi-token "
                             f"answers (--rule pll, or a causal or seq2seq model)")
    inputs, positions = st.replaced(tok.mask_token_id)
    candidates = np.full((len(st.n_choices), int(st.n_choices.max(initial=1))), -1, np.int64)
    candidates[st.example, np.arange(len(st.ids)) - st.offsets[st.example]] = st.first
    for i, row in enumerate(candidates.tolist()):
        row = [c for c in row if c >= 0]
        if len(set(row)) != len(row):
            words = [st.words[r] for r in st.rows_of(i)]
            raise CandidateError(f"example {st.example_ids[i]}: candidates {words} share a token at the mask "
                                 f"({tok.convert_ids_to_tokens(row)}): their scores would tie")
    return inputs, positions, candidates


def mask_logit(runner: Runner, st: Statements, multi_token: str = "error") -> np.ndarray:
    """Raw MLM logits of each example's candidates at its mask: ``[examples, max choices]`` (NaN-padded)."""
    inputs, positions, candidates = masked_inputs(runner.tokenizer, st, multi_token)

    def step(input_ids, attention_mask, cols, cand):
        return head_at(runner.model, input_ids, attention_mask, cols).gather(1, cand).float()

    scores = runner.over_sequences(inputs, step, "scoring", per_item=(positions, np.maximum(candidates, 0)))
    return np.where(candidates >= 0, scores, np.nan)


def pll(runner: Runner, st: Statements) -> np.ndarray:
    """PLL-word-l2r (Kauf & Ivanova 2023) of each choice: for each of its tokens in turn, that token and the
    later ones of the choice are masked, and the log-probability of the token is summed. For a one-token
    choice this is its log-softmax at the mask. Returns one score per statement row."""
    mask = runner.tokenizer.mask_token_id
    inputs, positions, targets, owner = [], [], [], []
    for row, ids in enumerate(st.ids):
        s, e = int(st.start[row]), int(st.stop[row])
        for t in range(s, e):
            inputs.append(ids[:t] + [mask] * (e - t) + ids[e:])
            positions.append(t)
            targets.append(ids[t])
            owner.append(row)

    def step(input_ids, attention_mask, cols, target):
        return token_log_probs(head_at(runner.model, input_ids, attention_mask, cols), target)

    token_scores = runner.over_sequences(inputs, step, "scoring (PLL)", per_item=(
        np.asarray(positions, np.int64), np.asarray(targets, np.int64)))
    scores = np.zeros(len(st.ids))
    np.add.at(scores, np.asarray(owner, np.int64), token_scores)
    return scores


def mask_features(runner: Runner, st: Statements, multi_token: str = "first") -> np.ndarray:
    """The encoder's last hidden state at each example's mask, ``[examples, hidden]`` float32: what the MLM
    head reads, cached as features by the learning curves."""
    inputs, positions, _ = masked_inputs(runner.tokenizer, st, multi_token)
    return hidden_at(runner, inputs, positions)


def hidden_at(runner: Runner, inputs: Sequence[Sequence[int]], positions: np.ndarray) -> np.ndarray:
    """The encoder's last hidden state at one position of each input, ``[inputs, hidden]`` float32."""

    def step(input_ids, attention_mask, cols):
        hidden = runner.model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return hidden[torch.arange(len(cols), device=cols.device), cols].float()

    return runner.over_sequences(inputs, step, "features", per_item=(positions,))


def head_at(model, input_ids, attention_mask, cols) -> torch.Tensor:
    """The MLM head's full-vocabulary logits at one position per row, ``[batch, vocab]``: the encoder's
    output is cut to those rows (a forward hook) before the head runs."""
    rows = torch.arange(len(cols), device=cols.device)

    def keep_mask_rows(_module, _args, output):
        gathered = output[0][rows, cols].unsqueeze(1)
        if isinstance(output, tuple):
            return (gathered,) + output[1:]
        output.last_hidden_state = gathered
        return output

    handle = model.base_model.register_forward_hook(keep_mask_rows)
    try:
        return model(input_ids=input_ids, attention_mask=attention_mask).logits[:, 0, :]
    finally:
        handle.remove()
