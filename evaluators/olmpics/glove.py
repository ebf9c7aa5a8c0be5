"""GloVe inputs of the oLMpics non-contextual baselines: MLM-BASELINE features and ESIM token ids.

A :class:`Lexicon` holds the distinct tokens of every text a run reads, an id for each (row 0 of its
:meth:`~Lexicon.matrix` is padding, zero) and their vectors. How a text becomes tokens and what a token GloVe
lacks gets is params ``curve.glove_tokens`` (MLM-BASELINE) and ``mcqa.glove_tokens`` (ESIM); the paper (§2.3)
says only "representing each token with a 50-dimensional GLOVE vector":

- ``original`` (the default: the original code's, alontalmor/oLMpics, where the paper is silent): the tokens of
  spaCy's English tokenizer, case kept (the readers' ``SpacyTokenizer`` and AllenNLP's ``SingleIdTokenIndexer``,
  which lowercases nothing; GloVe 6B is lowercased, so "The" is not "the"); MLM-BASELINE's ``[MASK]`` becomes
  ``@@``, one token (``dataset_readers/mlm_baseline_reader.py`` line 80), ESIM's stays text, ``[`` ``MASK`` ``]``
  (``esim_baseline_reader.py`` has no such line); a token GloVe lacks gets a random vector from N(mean, std), the
  mean and standard deviation of every value of the known tokens' GloVe vectors, as AllenNLP's
  ``_read_pretrained_embedding_file`` fills the rows the file lacks (``normal_(embeddings_mean,
  embeddings_std)``). The original draws those rows once per run, under the run's seed, over the vocabulary of
  that run's files; here a token's vector is drawn from a generator seeded by the token's text (the same in every
  run and seed, whatever else is read), and the mean and deviation are those of every text the run reads.
- ``lowercase``: lowercased PTB-like tokens, ``[MASK]`` one token ``[mask]``, and the zero vector (row 0, shared
  with padding) for every token GloVe lacks.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np

from evaluators.engine.collator import pad_right
from probekit.errors import UsageError
from probekit.sources.vectors import Glove

READINGS = ("original", "lowercase")
MLM_MASK = "@@"
"""What MLM-BASELINE's original reader puts in ``[MASK]``'s place ("to ensure it will be tokenized with 1 token")."""
MASK = "[MASK]"
# GloVe 6B was tokenized with Stanford's PTB tokenizer: words, single punctuation marks, and the clitics
# "n't" and 's 're 've 'll 'm 'd split off ("don't" -> do n't, "it's" -> it 's).
_TOKEN = re.compile(r"\[mask\]|\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|m|d)\b|\w+|[^\w\s]")


def glove_tokens(text: str) -> list[str]:
    """``lowercase``: lowercased PTB-like tokens; ``[MASK]`` stays one token, ``[mask]``, which GloVe does not know."""
    return _TOKEN.findall(text.lower())


@lru_cache(maxsize=1)
def _spacy_tokenizer():
    import spacy

    return spacy.blank("en").tokenizer


def spacy_tokens(texts: Sequence[str]) -> list[list[str]]:
    """``original``: spaCy's English tokens, case kept, whitespace tokens dropped (AllenNLP's ``SpacyTokenizer``)."""
    return [[t.text for t in doc if not t.is_space] for doc in _spacy_tokenizer().pipe(texts)]


def unknown_vector(token: str, mean: float, std: float, dim: int) -> np.ndarray:
    """``original``'s vector of a token GloVe lacks: N(mean, std) from a generator seeded by the token's text."""
    seed = int.from_bytes(hashlib.sha256(token.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).normal(mean, std, dim).astype(np.float32)


class Lexicon:
    """The tokens of a run's texts and their vectors. ``reading``: ``original`` or ``lowercase`` (module
    docstring); ``mask``: what ``original`` puts in place of ``[MASK]`` (None: the text as it is); ``glove``: None
    for a vocabulary without vectors (every token its own row). :meth:`encode` every text the run reads, then
    :meth:`matrix`."""

    def __init__(self, glove: Glove | None, reading: str = "original", mask: str | None = MLM_MASK):
        if reading not in READINGS:
            raise UsageError(f"glove_tokens must be one of {', '.join(READINGS)}, got {reading!r}")
        self.glove, self.reading, self.mask = glove, reading, mask
        self.ids: dict[str, int] = {}   # token -> row of matrix(); a token without one (lowercase, OOV) reads row 0

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        if self.reading == "lowercase":
            return [glove_tokens(t) for t in texts]
        if self.mask is not None:
            texts = [t.replace(MASK, self.mask) for t in texts]
        return spacy_tokens(texts)

    def _id(self, token: str) -> int:
        if token not in self.ids:
            if self.reading == "lowercase" and self.glove is not None and token not in self.glove.index:
                return 0
            self.ids[token] = len(self.ids) + 1
        return self.ids[token]

    def encode(self, texts: Sequence[str], max_tokens: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``ids`` ``[n, L]`` int64 (rows of :meth:`matrix`; 0: padding) and ``mask`` ``[n, L]`` bool (True on
        tokens), right-padded to the longest text, each cut to its first ``max_tokens`` tokens. A text without
        tokens is one token of row 0, so every row has a position to attend to and pool over."""
        rows = [[self._id(t) for t in tokens[:max_tokens]] or [0] for tokens in self.tokens(texts)]
        ids, lengths = pad_right(rows, 0)
        return ids, np.arange(ids.shape[1]) < lengths[:, None]

    def add(self, texts: Iterable[str]) -> None:
        """Every token of ``texts`` gets its row (the vocabulary the mean and deviation of unknown rows read)."""
        for tokens in self.tokens(list(texts)):
            for token in tokens:
                self._id(token)

    def matrix(self) -> np.ndarray:
        """``[1 + tokens, D]`` float32: row 0 zero (padding, and ``lowercase``'s unknown tokens), then each token's
        GloVe vector, or under ``original`` for a token GloVe lacks :func:`unknown_vector`."""
        glove = self.glove
        if glove is None:
            raise RuntimeError("a vocabulary without vectors has no GloVe matrix")
        rows = glove.vector_ids(self.ids)
        known = np.asarray([r for r in rows if r >= 0], np.int64)
        out = np.zeros((len(self.ids) + 1, glove.dim), np.float32)
        if len(known):
            out[1:][np.asarray(rows) >= 0] = glove.vectors[known]
        if len(known) < len(rows):
            values = glove.vectors[known].astype(np.float64)
            mean, std = (float(values.mean()), float(values.std())) if len(known) else (0.0, 1.0)
            for token, i in self.ids.items():
                if rows[i - 1] < 0:
                    out[i] = unknown_vector(token, mean, std, glove.dim)
        return out


def mlm_baseline_features(lexicon: Lexicon, stems: Sequence[str], n_tokens: int = 20) -> np.ndarray:
    """``[n, n_tokens * D]`` float32: the vectors of each stem's first ``n_tokens`` tokens (``lexicon``'s: every
    text of the run already added) concatenated, zero-padded past the stem's end (oLMpics' MLM-BASELINE:
    20 tokens x 50-d = 1000-d)."""
    ids, _ = lexicon.encode(stems, max_tokens=n_tokens)
    matrix = lexicon.matrix()
    out = np.zeros((len(stems), n_tokens, matrix.shape[1]), np.float32)
    out[:, :ids.shape[1]] = matrix[ids]
    return out.reshape(len(stems), n_tokens * matrix.shape[1])
