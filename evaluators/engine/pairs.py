"""Sentence-pair inputs through the same collator and runner: ``[CLS] first [SEP] second [SEP]`` (or the model's
own pair template) for MC-QA (stem, choice) and CALUM (premise, hypothesis), scored by a sequence
classifier's logits."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from evaluators.engine.collator import pad_right
from evaluators.engine.runner import Runner
from evaluators.engine.scorer import max_length
from probekit.errors import DataError


def encode_pairs(tokenizer, first: Sequence[str], second: Sequence[str], limit: int,
                 ids: Sequence[str]) -> tuple[list[list[int]], np.ndarray]:
    """Each pair's ids, tokenized once, and their token type ids padded; a pair over ``limit`` tokens is an
    error naming its id (truncating it would silently drop the choice)."""
    enc = tokenizer(list(first), list(second), add_special_tokens=True, truncation=False, verbose=False,
                    return_token_type_ids=True)
    for n, row in enumerate(enc["input_ids"]):
        if len(row) > limit:
            raise DataError(f"example {ids[n]}: the pair is {len(row)} tokens and the model reads at most {limit}")
    return enc["input_ids"], pad_right(enc["token_type_ids"], 0)[0]


def pair_logits(runner: Runner, first: Sequence[str], second: Sequence[str], ids: Sequence[str]) -> np.ndarray:
    """A sequence classifier's logits per pair, ``[pairs, labels]`` float32, in input order."""
    input_ids, type_ids = encode_pairs(runner.tokenizer, first, second, max_length(runner.model, runner.tokenizer),
                                       ids)
    uses_types = "token_type_ids" in runner.tokenizer.model_input_names

    def step(input_ids, attention_mask, token_type_ids):
        extra = {"token_type_ids": token_type_ids} if uses_types else {}
        return runner.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits.float()

    return runner.over_sequences(input_ids, step, "pairs", padded=(type_ids,))
