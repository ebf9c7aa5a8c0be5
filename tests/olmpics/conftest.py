"""The oLMpics tests' fixtures: tiny random BERTs whose hidden state at the mask carries the context."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import save_tiny_bert

INFORMATIVE = {"initializer_range": 0.2}
"""Tiny random BERTs whose weights are large enough (0.2, not 0.02) for the hidden state at the mask to carry
the context: at 0.02 every mask feature is the mask's own embedding, and no head can learn from it."""


@pytest.fixture(scope="session")
def informative_bert(tmp_path_factory, minilm_vocab) -> Path:
    """The session's ``tiny_bert`` (a BertForMaskedLM with the MiniLM tokenizer) with :data:`INFORMATIVE` weights."""
    from transformers import BertForMaskedLM

    return save_tiny_bert(tmp_path_factory.mktemp("informative-bert"), minilm_vocab, BertForMaskedLM, **INFORMATIVE)


@pytest.fixture(scope="session")
def informative_bert_no_head(tmp_path_factory, minilm_vocab) -> Path:
    """The session's ``tiny_bert_no_head`` (a BertModel, no MLM head) with :data:`INFORMATIVE` weights."""
    from transformers import BertModel

    return save_tiny_bert(tmp_path_factory.mktemp("informative-bert-encoder"), minilm_vocab, BertModel,
                          **INFORMATIVE)
