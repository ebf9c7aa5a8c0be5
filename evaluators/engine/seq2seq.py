"""Seq2seq rules (T5, BART): the encoder reads the statement with the choice masked, the decoder is scored.

``sentinel`` (T5-style span corruption): the choice's tokens become ``<extra_id_0>`` in the input; the score is
log p(choice tokens, then ``<extra_id_1>`` that closes the span | input, ``<extra_id_0>``), the target T5 was
pretrained to produce. ``statement`` (BART-style denoising): the choice becomes the mask token; the score is
log p(the whole statement | input). Choices of one example share one encoder pass. A bf16/fp16 model's logits
are computed in float32 (its output projection upcast), so log-probabilities are not read off rounded logits.
"""

from __future__ import annotations

import numpy as np
from transformers.modeling_outputs import BaseModelOutput

from evaluators.engine.collator import capped_groups, grouped_batches, mask_of, pad_right, put_back
from evaluators.engine.precision import float32_head, forward_api
from evaluators.engine.runner import Runner, token_log_probs
from probekit.errors import UsageError
from probekit.scoring import SEQ2SEQ_RULES as RULES
from probekit.tokens.statements import Statements

SENTINEL = "<extra_id_{}>"


def has_sentinels(tokenizer) -> bool:
    return all(tokenizer.convert_tokens_to_ids(SENTINEL.format(i)) not in (None, tokenizer.unk_token_id)
               for i in (0, 1))


def seq2seq(runner: Runner, st: Statements, rule: str) -> np.ndarray:
    """Sum of log-probabilities per statement row (natural log)."""
    tok, config = runner.tokenizer, runner.model.config
    if rule not in RULES:
        raise ValueError(f"seq2seq rule must be one of {RULES}, got {rule!r}")
    if rule == "sentinel":
        if not has_sentinels(tok):
            raise UsageError("--rule sentinel needs T5's <extra_id_0> and <extra_id_1> in the vocabulary "
                             "(a BART-style model takes --rule statement)")
        open_id, close_id = (tok.convert_tokens_to_ids(SENTINEL.format(i)) for i in (0, 1))
        inputs, _ = st.replaced(open_id)
        labels = [[open_id] + ids[s:e] + [close_id] for ids, s, e in zip(st.ids, st.start, st.stop)]
        first_scored = 1  # the opening sentinel is the same for every choice
    else:
        if tok.mask_token_id is None:
            raise UsageError("--rule statement needs a mask token in the tokenizer (BART's <mask>)")
        inputs, _ = st.replaced(tok.mask_token_id)
        labels = st.ids
        first_scored = 0
    start = getattr(config, "decoder_start_token_id", None)
    if start is None:
        raise UsageError("the model's config has no decoder_start_token_id")
    enc_ids, enc_len = pad_right(inputs, runner.pad_id)
    dec_ids, dec_len = pad_right([[start] + lab[:-1] for lab in labels], runner.pad_id)
    label_ids, _ = pad_right(labels, runner.pad_id)
    weight = ((np.arange(label_ids.shape[1]) < dec_len[:, None])
              & (np.arange(label_ids.shape[1]) >= first_scored)).astype(np.float32)

    # groups: an example's choices, at most `batch_size` of them (a larger set is split, its encoder rerun)
    group_of, first = capped_groups(st.example.tolist(), runner.batch_size)
    example_of_group = st.example[first]
    batches, order = [], []
    for groups, rows, local in grouped_batches(group_of, enc_len[example_of_group], runner.batch_size):
        examples = example_of_group[groups]
        we, wd = int(enc_len[examples].max()), int(dec_len[rows].max())
        batches.append((enc_ids[examples, :we], mask_of(enc_len[examples], we), local,
                        dec_ids[rows, :wd], mask_of(dec_len[rows], wd), label_ids[rows, :wd], weight[rows, :wd]))
        order.append(rows)

    no_cache = {"use_cache": False} if forward_api(runner.model).use_cache else {}  # one pass: nothing to reuse

    def step(enc, enc_mask, local, dec, dec_mask, target, w):
        hidden = runner.model.get_encoder()(input_ids=enc, attention_mask=enc_mask).last_hidden_state
        logits = runner.model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden[local]),
                              attention_mask=enc_mask[local], decoder_input_ids=dec,
                              decoder_attention_mask=dec_mask, **no_cache).logits
        return (token_log_probs(logits, target) * w).sum(1)

    with float32_head(runner.model):  # a bf16/fp16 model's logits computed in float32
        return put_back(runner.run(batches, step, "scoring (seq2seq)"), order)
