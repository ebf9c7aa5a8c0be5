"""GloVe inputs of the oLMpics non-contextual baselines: MLM-BASELINE features and ESIM token ids.

Token ids for ESIM index :func:`embedding_matrix`, whose row 0 is a zero vector shared by padding and
out-of-vocabulary tokens: a word's id is its GloVe row + 1, an OOV token (``[mask]`` included) is 0. The
``mask`` tells padding (False) from a real OOV token (True), so an unknown word still takes a position.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from evaluators.engine.collator import pad_right
from probekit.sources.vectors import Glove

MASK = "[mask]"
# GloVe 6B was tokenized with Stanford's PTB tokenizer: words, single punctuation marks, and the clitics
# "n't" and 's 're 've 'll 'm 'd split off ("don't" -> do n't, "it's" -> it 's).
_TOKEN = re.compile(r"\[mask\]|\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|m|d)\b|\w+|[^\w\s]")


def glove_tokens(text: str) -> list[str]:
    """Lowercased PTB-like tokens; ``[MASK]`` stays one token, ``[mask]``, which GloVe does not know."""
    return _TOKEN.findall(text.lower())


def encode_tokens(glove: Glove, texts: Sequence[str], max_tokens: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``ids`` ``[n, L]`` int64 (GloVe row + 1; 0 for OOV and padding) and ``mask`` ``[n, L]`` bool (True on
    tokens), right-padded to the longest text, each cut to its first ``max_tokens`` tokens. A text without
    tokens is one OOV token, so every row has at least one position to attend to and pool over."""
    rows = [[i + 1 for i in glove.vector_ids(glove_tokens(t)[:max_tokens])] or [0] for t in texts]
    ids, lengths = pad_right(rows, 0)
    return ids, np.arange(ids.shape[1]) < lengths[:, None]


def embedding_matrix(glove: Glove) -> np.ndarray:
    """``[V + 1, D]`` float32: a zero row 0 (padding, OOV) above the GloVe vectors, for :func:`encode_tokens` ids."""
    return np.concatenate([np.zeros((1, glove.dim), np.float32), glove.vectors])


def mlm_baseline_features(glove: Glove, stems: Sequence[str], n_tokens: int = 20) -> np.ndarray:
    """``[n, n_tokens * D]`` float32: the GloVe vectors of each stem's first ``n_tokens`` tokens concatenated,
    zero for OOV tokens (``[MASK]`` included) and zero-padded past the stem's end (oLMpics' MLM-BASELINE:
    20 tokens x 50-d = 1000-d)."""
    ids, _ = encode_tokens(glove, stems, max_tokens=n_tokens)
    out = np.zeros((len(stems), n_tokens, glove.dim), np.float32)
    known = ids > 0
    out[:, :ids.shape[1]][known] = glove.vectors[ids[known] - 1]
    return out.reshape(len(stems), n_tokens * glove.dim)
