"""Sentence-pair inputs through the same collator and runner: ``[CLS] first [SEP] second [SEP]`` (or the model's
own pair template) for MC-QA (stem, choice) and CALUM (premise, hypothesis), scored by a sequence
classifier's logits."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from probekit.errors import DataError

from .collator import Collator, batch_ids, pad_right
from .engine import max_length
from .runner import Runner


def encode_pairs(tokenizer, first: Sequence[str], second: Sequence[str], limit: int,
                 ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded ids, token type ids and lengths of each pair, tokenized once; a pair over ``limit`` tokens
    is an error naming its id (truncating it would silently drop the choice)."""
    enc = tokenizer(list(first), list(second), add_special_tokens=True, truncation=False, verbose=False,
                    return_token_type_ids=True)
    for n, row in enumerate(enc["input_ids"]):
        if len(row) > limit:
            raise DataError(f"example {ids[n]}: the pair is {len(row)} tokens and the model reads at most {limit}")
    input_ids, lengths = pad_right(enc["input_ids"], tokenizer.pad_token_id or 0)
    type_ids, _ = pad_right(enc["token_type_ids"], 0)
    return input_ids, type_ids, lengths


def pair_logits(runner: Runner, first: Sequence[str], second: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """A sequence classifier's logits per pair, ``[pairs, labels]`` float32, in input order."""
    input_ids, type_ids, lengths = encode_pairs(runner.tokenizer, first, second,
                                                max_length(runner.model, runner.tokenizer), ids)
    uses_types = "token_type_ids" in runner.tokenizer.model_input_names
    collator = Collator(lengths, runner.batch_size)
    batches = []
    for b in collator:
        ids_b, mask_b = batch_ids(input_ids, lengths, b)
        batches.append((ids_b, mask_b, type_ids[b, :ids_b.shape[1]]))

    def step(input_ids, attention_mask, token_type_ids):
        extra = {"token_type_ids": token_type_ids} if uses_types else {}
        return runner.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits.float()

    return collator.restore(runner.run(batches, step, "pairs"))
