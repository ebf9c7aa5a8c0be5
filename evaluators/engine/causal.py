"""Causal-LM rules (GPT-2, Llama-style, Pythia...), as Life-after-BERT and BEAR/lm-pub-quiz score them:
``statement``, the log-probability of the whole statement with the choice filled in, and ``choice``, that of
the choice's tokens only, given the words before it; and ``harness``, lm-evaluation-harness's own
context + continuation log-likelihood (what our exported ``<task>_choice`` tasks compute).

``harness`` differs from ``choice`` in three ways, each the harness's (``lm_eval/api/model.py``
``loglikelihood``/``_encode_pair``): a non-empty context gets no start token (only what the tokenizer itself
adds: Llama's BOS, nothing for GPT-2); a blank at the start of the sentence scores the choice after the prefix
token (BOS, else EOS) alone; and the continuation is the choice tokenized after the context without the text
after the blank (the context's trailing spaces moved onto it), cut from ``context + choice``'s ids at the
context's own token count, so a choice glued to the next word is scored as the bare choice.

Each statement splits at the choice into a context (the tokens before it) and a continuation (the choice and
the rest). Choices whose contexts are the same token ids share one forward pass of that context: its key/value
cache is copied to each continuation, which then runs alone. A model whose cache cannot be shared that way
(sliding-window, hybrid, static or recurrent: Gemma 2/3, Mamba, Jamba) or whose forward takes no
``position_ids`` gets one plain forward pass per statement instead. Only the positions read are projected to the
vocabulary (``logits_to_keep``), in float32 for a bf16/fp16 model. A start token (the tokenizer's own, else its BOS
or EOS) comes first, so the statement's first word is scored too.
"""

from __future__ import annotations

import numpy as np
import torch

from evaluators.engine.collator import capped_groups, grouped_batches, mask_of, pad_right, put_back
from evaluators.engine.precision import ForwardApi, float32_head, forward_api, plain_dynamic_cache
from evaluators.engine.runner import Runner, token_log_probs
from probekit.errors import UsageError
from probekit.scoring import CAUSAL_RULES as RULES
from probekit.tokens.statements import Statements


def causal(runner: Runner, st: Statements, rule: str = "statement") -> np.ndarray:
    """Sum of log-probabilities per statement row (natural log)."""
    if rule not in RULES or rule == "harness":
        raise ValueError(f"causal statement rule must be statement or choice, got {rule!r}")
    begin = start_tokens(runner.tokenizer, st)
    full = [begin + ids for ids in st.ids]
    starts, stops = len(begin) + st.start, len(begin) + st.stop
    keys = [tuple(ids[:s]) for ids, s in zip(full, starts.tolist())]
    group_of, first = capped_groups(keys, runner.batch_size)
    continuations = [ids[s:] for ids, s in zip(full, starts.tolist())]
    weights = [[1.0] * (e - s) + [float(rule == "statement")] * (len(ids) - e)
               for ids, s, e in zip(full, starts.tolist(), stops.tolist())]
    return _score(runner, [list(keys[row]) for row in first], group_of, continuations, weights,
                  with_context=rule == "statement")


def harness_pairs(tokenizer, prefixes: list[str], choices: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    """Each (text before the blank, choice) as lm-evaluation-harness 0.4 encodes it: context ids and
    continuation ids (``HFLM.tok_encode``: the tokenizer's own special tokens, none when the text already starts
    with the prefix token's text)."""
    prefix_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix_id is None:
        raise UsageError("the harness rule needs a prefix token (BOS or EOS) for a blank at the sentence start; "
                         "this tokenizer has neither")
    prefix_text = tokenizer.decode(prefix_id)

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, **({"add_special_tokens": False} if text.startswith(prefix_text) else {}))

    contexts, continuations = [], []
    for context, choice in zip(prefixes, choices):
        if context == "":
            cont = tokenizer.encode(choice, add_special_tokens=False)
            ctx, cont = ([prefix_id], cont) if not cont or cont[0] != prefix_id else (cont[:1], cont[1:])
        else:
            spaces = len(context) - len(context.rstrip())
            if spaces:
                context, choice = context[:-spaces], context[-spaces:] + choice
            ctx = encode(context)
            cont = encode(context + choice)[len(ctx):]
        contexts.append(ctx)
        continuations.append(cont)
    return contexts, continuations


def harness(runner: Runner, contexts: list[list[int]], continuations: list[list[int]]) -> np.ndarray:
    """Sum of log p(continuation | context) per row (natural log): the ``harness`` rule on
    :func:`harness_pairs`' ids; rows with the same context share its forward pass."""
    group_of, first = capped_groups([tuple(c) for c in contexts], runner.batch_size)
    weights = [[1.0] * len(c) for c in continuations]
    return _score(runner, [list(contexts[row]) for row in first], group_of, [list(c) for c in continuations],
                  weights, with_context=False)


def _score(runner: Runner, contexts: list[list[int]], group_of: np.ndarray, continuations: list[list[int]],
           weights: list[list[float]], *, with_context: bool) -> np.ndarray:
    ctx_ids, ctx_len = pad_right(contexts, runner.pad_id)
    cont_ids, cont_len = pad_right(continuations, runner.pad_id)
    cont_weights = np.zeros(cont_ids.shape, np.float32)
    cont_weights[np.arange(cont_ids.shape[1]) < cont_len[:, None]] = np.concatenate(weights) if weights else []
    longest = np.zeros(len(contexts), np.int64)
    np.maximum.at(longest, group_of, cont_len)
    batches, order = [], []
    for groups, rows, local in grouped_batches(group_of, ctx_len + longest, runner.batch_size):
        wc, wk = int(ctx_len[groups].max()), int(cont_len[rows].max())
        batches.append((ctx_ids[groups, :wc], mask_of(ctx_len[groups], wc), cont_ids[rows, :wk],
                        mask_of(cont_len[rows], wk), local, cont_weights[rows, :wk]))
        order.append(rows)

    model, api = runner.model, forward_api(runner.model)
    shared = [api.cache is not None and api.positions and not getattr(model, "_is_stateful", False)]

    def step(*batch):
        if shared[0]:
            scores = _shared_step(model, api, *batch, with_context=with_context)
            if scores is not None:
                return scores
            shared[0] = False  # not the standard cache: every later batch goes the plain way too
        return _full_step(model, api, *batch, with_context=with_context)

    with float32_head(model):
        return put_back(runner.run(batches, step, "scoring (causal)"), order)


def _shared_step(model, api: ForwardApi, ctx, ctx_mask, cont, cont_mask, local, weight, *,
                 with_context: bool) -> torch.Tensor | None:
    """Scores of one batch, each context run once and its cache extended by each of its continuations; None
    when the model's cache is not the standard dynamic one."""
    last = ctx_mask.sum(1) - 1
    keep = None if with_context else torch.unique(last)  # "choice" reads only each context's last position
    out = model(input_ids=ctx, attention_mask=ctx_mask, use_cache=True, **api.kept(keep))
    cache = api.cache_of(out)
    if not plain_dynamic_cache(cache):
        return None
    logits = api.logits(out, keep)
    at = last if keep is None else torch.searchsorted(keep, last)
    first = logits[torch.arange(len(last), device=last.device), at].float().log_softmax(-1)  # [groups, V]
    context_lp = token_log_probs(logits[:, :-1], ctx[:, 1:]).mul(ctx_mask[:, 1:]).sum(1) \
        if with_context else torch.zeros(len(last), device=last.device)
    token_lp = first[local].gather(1, cont[:, :1])
    if cont.shape[1] > 1:
        cache.batch_select_indices(local)  # each continuation gets its context's keys and values
        positions = last[local, None] + 1 + torch.arange(cont.shape[1], device=cont.device)
        read = torch.arange(cont.shape[1] - 1, device=cont.device)  # the last position predicts nothing
        out = model(input_ids=cont, attention_mask=torch.cat([ctx_mask[local], cont_mask], 1),
                    position_ids=positions, **{api.cache: cache}, **api.kept(read))
        token_lp = torch.cat([token_lp, token_log_probs(api.logits(out, read), cont[:, 1:])], 1)
    return (token_lp * weight).sum(1) + context_lp[local]


def _full_step(model, api: ForwardApi, ctx, ctx_mask, cont, cont_mask, local, weight, *,
               with_context: bool) -> torch.Tensor:
    """Scores of one batch, one plain forward pass per statement (context and continuation together), as
    lm-evaluation-harness runs them: for models whose cache cannot be shared (sliding-window, hybrid, static,
    recurrent) or whose forward takes no ``position_ids``."""
    ctx_len, cont_len = ctx_mask.sum(1)[local], cont_mask.sum(1)
    width = int((ctx_len + cont_len).max())
    columns = torch.arange(ctx.shape[1] + cont.shape[1], device=ctx.device)
    at = ctx_len[:, None] + torch.arange(cont.shape[1], device=ctx.device)
    ids = torch.cat([ctx[local], cont], 1).scatter(1, at, cont)[:, :width]
    mask = (columns < (ctx_len + cont_len)[:, None])[:, :width].to(ctx_mask.dtype)
    w = ((columns >= 1) & (columns < ctx_len[:, None]) & with_context).float()
    w = w.scatter(1, at, weight)[:, :width]
    lo = 1 if with_context else int(ctx_len.min())  # the first target read
    read = torch.arange(lo - 1, width - 1, device=ctx.device)
    extra = {"use_cache": False} if api.use_cache else {}
    out = model(input_ids=ids, attention_mask=mask, **extra, **api.kept(read))
    return (token_log_probs(api.logits(out, read), ids[:, lo:]) * w[:, lo:]).sum(1)


def start_tokens(tokenizer, st: Statements) -> list[int]:
    """What goes before each statement so that its first token has a context: nothing when the tokenizer
    already starts with a special token (Llama's BOS), else its BOS, else its EOS (GPT-2's are one)."""
    specials = set(tokenizer.all_special_ids)
    if st.ids and all(ids and ids[0] in specials for ids in st.ids):
        return []
    for token in (tokenizer.bos_token_id, tokenizer.eos_token_id):
        if token is not None:
            return [token]
    raise UsageError("causal scoring needs a start token (BOS or EOS) to score a statement's first word; this "
                     "tokenizer has neither")
