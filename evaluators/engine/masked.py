"""Masked-LM rules: ``mask-logit`` (oLMpics' MC-MLM: the MLM head's logit of each candidate token at the mask),
``pll`` (PLL-word-l2r of multi-token choices; of whole statements under ``pll-statement``), and the hidden
state at the mask (features).

The model's own MLM head runs on the mask rows only: a forward hook on the encoder keeps the hidden state at
each row's mask, which removes nearly all of the head's cost and is exact for every MLM family (BERT,
RoBERTa, ALBERT, DistilBERT, ELECTRA, DeBERTa-v2...): no shortcut through the output embeddings. Where the
hook does not fire (remote code whose ``base_model`` is the model itself, a back-end returning unpadded
hidden states) the full head runs and the mask rows are read from its output.

In a reduced dtype (bf16, ``--dtype auto`` on a GPU) the whole head, its transform and the projection onto the
vocabulary, runs in float32 on the mask rows, on the weights read back from the checkpoint at its own precision
(:class:`evaluators.engine.checkpoint_head.Float32MlmHead`; ``mask-logit`` uses the candidates' rows of the
projection only): bf16 logits near 10 are 0.0625 apart, and output rows rounded to bf16 at load tie answers whose
rows differ by less than that. An fp32 model runs exactly as before.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Sequence

import numpy as np
import torch

from evaluators.engine.checkpoint_head import Float32MlmHead
from evaluators.engine.masked_queries import MaskedQueries
from evaluators.engine.precision import float32_head
from evaluators.engine.runner import Runner, token_log_probs
from probekit.errors import ProbekitError, shown
from probekit.scoring import MULTI_TOKEN_RULES
from probekit.tokens.statements import Statements


class CandidateError(ProbekitError, ValueError):
    """A choice word is not a single token of the model's vocabulary (in context), or two choices tie."""


def check_candidates(tok, q: MaskedQueries, multi_token: str = "error") -> None:
    """Every choice one token in context (unless ``multi_token`` is ``first``), no two of a query's choices
    sharing their token at the mask (their scores would tie)."""
    if multi_token not in MULTI_TOKEN_RULES:
        raise ValueError(f"multi_token must be one of {MULTI_TOKEN_RULES}, got {shown(multi_token)}")
    rep, valid = q.representative, q.tokens >= 0
    if multi_token == "error" and not q.single[valid].all():
        g, c = np.argwhere(valid & ~q.single)[0]
        row = int(rep.offsets[g]) + int(c)
        raise CandidateError(f"example {rep.example_ids[g]}: candidate {shown(rep.words[row])} is not a "
                             f"single token for this tokenizer in context (got {rep.pieces(tok, row)}); pass "
                             f"--multi-token first to score it by its first token, or use a rule for multi-token "
                             f"answers (--rule pll, or a causal or seq2seq model)")
    for g, row in enumerate(q.tokens.tolist()):
        row = [t for t in row if t >= 0]
        if len(set(row)) != len(row):
            words = [rep.words[r] for r in rep.rows_of(g)]
            raise CandidateError(f"example {rep.example_ids[g]}: candidates {words} share a token at the mask "
                                 f"({tok.convert_ids_to_tokens(row)}): their scores would tie")


def mask_logit(runner: Runner, q: MaskedQueries, multi_token: str = "error") -> np.ndarray:
    """Raw MLM logits of each query's candidates at its mask: ``[queries, max choices]`` (NaN-padded)."""
    check_candidates(runner.tokenizer, q, multi_token)
    tokens = torch.as_tensor(np.maximum(q.tokens, 0), device=runner.device)
    # a bf16/fp16 model: its head in float32 on the checkpoint's weights, the candidates' rows of the projection only
    head = Float32MlmHead.of(runner.model, rows=np.unique(q.tokens[q.tokens >= 0]))
    if head is not None:
        tokens = head.columns(tokens)

    def step(input_ids, attention_mask, cols, group):
        return head_at(runner.model, input_ids, attention_mask, cols, head).gather(1, tokens[group]).float()

    with float32_head(runner.model) if head is None else nullcontext():
        scores = runner.over_sequences(q.inputs, step, "scoring", per_item=(q.positions, q.group))
    return np.where(q.candidates() >= 0, scores, np.nan)


def pll(runner: Runner, st: Statements) -> np.ndarray:
    """PLL-word-l2r (Kauf & Ivanova 2023) of each choice: for each of its tokens in turn, that token and the
    later tokens *of the same word* are masked ("we mask not only the target token, but also all
    within-word tokens to the right of the target"), and the log-probability of the token is summed; the
    other words of a multi-word choice stay visible. Words are the tokenizer's (``word_ids()``; a lone
    space piece before a word, ``Ġ``/``▁``, is that word's). For a one-token choice this is its log-softmax
    at the mask. Returns one score per statement row."""
    return _pll(runner, st, hits=False)[0]


def pll_hits(runner: Runner, st: Statements) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pll`'s scores (the same numbers), and per row whether every one of its tokens is the head's
    argmax at its masked position (the harness's ``is_greedy``)."""
    return _pll(runner, st, hits=True)


def _pll(runner: Runner, st: Statements, *, hits: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The PLL queries of every row's tokens, scored in one batched pass; with ``hits``, the argmax check too."""
    mask = runner.tokenizer.mask_token_id
    inputs, positions, targets, owner = [], [], [], []
    for row, ids in enumerate(st.ids):
        s, e = int(st.start[row]), int(st.stop[row])
        words = st.word_ids[row]
        for t in range(s, e):
            end = t + 1
            while end < e and words[end - s] == words[t - s]:
                end += 1
            inputs.append(ids[:t] + [mask] * (end - t) + ids[end:])
            positions.append(t)
            targets.append(ids[t])
            owner.append(row)

    head = Float32MlmHead.of(runner.model)  # a bf16/fp16 model: its head in float32 on the checkpoint's weights

    def step(input_ids, attention_mask, cols, target):
        return token_log_probs(head_at(runner.model, input_ids, attention_mask, cols, head), target)

    def step_hits(input_ids, attention_mask, cols, target):
        logits = head_at(runner.model, input_ids, attention_mask, cols, head)
        hit = (logits.argmax(-1) == target).to(torch.float32)
        return torch.stack([token_log_probs(logits, target).to(torch.float32), hit], 1)

    with float32_head(runner.model) if head is None else nullcontext():
        out = runner.over_sequences(inputs, step_hits if hits else step, "scoring (PLL)", per_item=(
            np.asarray(positions, np.int64), np.asarray(targets, np.int64)))
    owner = np.asarray(owner, np.int64)
    scores = np.zeros(len(st.ids))
    if not hits:
        np.add.at(scores, owner, out)
        return scores, None
    out = out.reshape(-1, 2)
    misses = np.zeros(len(st.ids), np.int64)
    np.add.at(scores, owner, out[:, 0])
    np.add.at(misses, owner, out[:, 1] == 0)
    return scores, misses == 0


def mask_features(runner: Runner, q: MaskedQueries) -> np.ndarray:
    """The encoder's last hidden state at each query's mask, ``[queries, hidden]`` float32: what the MLM
    head reads, cached as features by the learning curves."""
    return hidden_at(runner, q.inputs, q.positions)


def hidden_at(runner: Runner, inputs: Sequence[Sequence[int]], positions: np.ndarray) -> np.ndarray:
    """The encoder's last hidden state at one position of each input, ``[inputs, hidden]`` float32."""

    def step(input_ids, attention_mask, cols):
        hidden = runner.model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return hidden[torch.arange(len(cols), device=cols.device), cols].float()

    return runner.over_sequences(inputs, step, "features", per_item=(positions,))


def head_at(model, input_ids, attention_mask, cols, head: Float32MlmHead | None = None) -> torch.Tensor:
    """The MLM head's logits at one position per row, ``[batch, vocab]`` (``[batch, rows]`` for a ``head`` of
    some rows): the encoder's output is cut to those rows (a forward hook) before the head runs. ``head``: a
    bf16/fp16 model's head run in float32 on the checkpoint's weights (:class:`Float32MlmHead`); without it the
    model's own head runs (the caller wraps it in :func:`evaluators.engine.precision.float32_head` where the model
    is bf16/fp16). Where the cut did not happen, the full head's output is read at those positions."""
    rows = torch.arange(len(cols), device=cols.device)
    shape = tuple(input_ids.shape)
    cut = []

    def keep_mask_rows(_module, _args, output):
        hidden = output[0]
        if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3 or tuple(hidden.shape[:2]) != shape:
            return None  # not padded hidden states (an unpadded back-end): the full head runs
        cut.append(True)
        gathered = hidden[rows, cols].unsqueeze(1)
        if isinstance(output, tuple):
            return (gathered,) + output[1:]
        output.last_hidden_state = gathered
        return output

    handle = None if model.base_model is model else model.base_model.register_forward_hook(keep_mask_rows)
    try:
        logits = (head or model)(input_ids=input_ids, attention_mask=attention_mask).logits
    finally:
        if handle is not None:
            handle.remove()
    if cut and logits.shape[1] == 1:
        return logits[:, 0, :]
    if tuple(logits.shape[:2]) == shape:
        return logits[rows, cols]
    raise RuntimeError(f"the MLM head returned logits of shape {tuple(logits.shape)} for inputs of shape {shape}")
