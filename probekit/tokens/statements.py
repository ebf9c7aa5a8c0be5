"""Choices as the model reads them: each choice word put in place of ``[MASK]`` and the statement tokenized
in context, all in one tokenizer call. Every scoring rule starts from these ids.

In context matters: a byte-level BPE encodes ``older`` after a space as ``Ġolder`` and at the start of a
sentence as ``older``; scoring the bare token is the bug that made oLMpics' RoBERTa numbers irreproducible
(oLMpics issues #2, #4). The masked-LM input is the statement with the word's tokens replaced by one mask
token, which is how the model saw masks in pretraining (masking happens on token ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Sequence

import numpy as np
from transformers import PreTrainedTokenizerBase

from probekit.data.examples import MASK
from probekit.errors import DataError, shown


@dataclass
class Statements:
    """One row per (example, choice): examples in input order, each one's choices in file order."""

    ids: list[list[int]]     # the filled statement, with the special tokens the tokenizer adds
    start: np.ndarray        # the word's first token (a lone space piece before it, ``▁``/``Ġ``, included)
    stop: np.ndarray         # one past its last token
    first: np.ndarray        # the word's first in-word token id (a lone space piece is no word's)
    single: np.ndarray       # the word is exactly one token, aligned with its characters
    example: np.ndarray      # the row's example (index into the inputs)
    n_choices: np.ndarray    # choices per example
    example_ids: list[str]
    words: list[str]         # the row's choice word
    word_ids: list[list]     # the tokenizer's word index (``word_ids()``) of each of the row's tokens start..stop

    @cached_property
    def offsets(self) -> np.ndarray:
        """Each example's first row."""
        return np.cumsum(self.n_choices) - self.n_choices

    def rows_of(self, i: int) -> range:
        offset = int(self.offsets[i])
        return range(offset, offset + int(self.n_choices[i]))

    def pieces(self, tokenizer: PreTrainedTokenizerBase, row: int) -> list[str]:
        """The word's tokens as the tokenizer spells them (``Ġolder``, ``▁old``, ``##er``)."""
        return tokenizer.convert_ids_to_tokens(self.ids[row][self.start[row]:self.stop[row]])

    def replaced(self, token_id: int) -> tuple[list[list[int]], np.ndarray]:
        """Per example: the statement with the word's tokens replaced by one ``token_id`` (a mask token, a
        sentinel), and that token's position. Every choice must leave the same context around it."""
        inputs, positions = [], np.zeros(len(self.n_choices), np.int64)
        for i in range(len(self.n_choices)):
            rows = self.rows_of(i)
            context = None
            for row in rows:
                ids, s = self.ids[row], int(self.start[row])
                replaced = ids[:s] + [token_id] + ids[int(self.stop[row]):]
                if context is None:
                    context, positions[i] = replaced, s
                elif replaced != context:
                    raise DataError(f"example {self.example_ids[i]}: the words around the mask are tokenized "
                                    f"differently with {shown(self.words[rows[0]])} and {shown(self.words[row])}")
            inputs.append(context)
        return inputs, positions

    def check_length(self, limit: int, extra: int = 0) -> None:
        """Every statement fits the model with ``extra`` tokens added (a causal start token): a longer one names
        its example and the limit."""
        for row, ids in enumerate(self.ids):
            if len(ids) + extra > limit:
                added = " (with the start token)" if extra else ""
                raise DataError(f"example {self.example_ids[self.example[row]]}: the statement with choice "
                                f"{shown(self.words[row])} is {len(ids) + extra} tokens{added} and the model reads at "
                                f"most {limit}" + (" (the mask would be truncated away)" if self.stop[row] > limit
                                                   else ""))


def encode_statements(tokenizer: PreTrainedTokenizerBase, stems: Sequence[str], choices: Sequence[Sequence[str]],
                      example_ids: Sequence[str], *, whole: bool = False) -> Statements:
    """Tokenize every stem with every choice in place of its one ``[MASK]``, once, with offsets. A row's span is
    the choice's characters; with ``whole``, the whole statement's (:func:`text_span`: ``pll-statement`` scores
    every token of it)."""
    if not stems:
        empty = np.zeros(0, np.int64)
        return Statements([], empty, empty, empty, np.zeros(0, bool), empty, empty, [], [], [])
    texts, spans, words = [], [], []
    for stem, row, example_id in zip(stems, choices, example_ids):
        prefix, suffix = split_stem(stem, example_id)
        for word in row:
            texts.append(prefix + word + suffix)
            spans.append(text_span(texts[-1]) if whole else (len(prefix), len(prefix) + len(word)))
            words.append(word)
    n_choices = np.fromiter(map(len, choices), np.int64, len(choices))
    return encode_spans(tokenizer, texts, spans, example_ids, words, n_choices=n_choices)


def encode_spans(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], spans: Sequence[tuple[int, int]],
                 example_ids: Sequence[str], words: Sequence[str] | None = None, *,
                 n_choices: Sequence[int] | np.ndarray | None = None) -> Statements:
    """Tokenize ``texts`` (with the tokenizer's special tokens), all in one call, and locate in each the
    characters ``spans[row] = (begin, end)``: the rows' "word", which the per-statement rules score. Rows
    belong to examples ``n_choices`` at a time (default: each text its own example); ``example_ids`` names
    the examples, ``words`` the rows (default: each span's characters) in errors and results."""
    words = [text[begin:end] for text, (begin, end) in zip(texts, spans)] if words is None else list(words)
    n_choices = np.ones(len(texts), np.int64) if n_choices is None else np.asarray(n_choices, np.int64)
    if int(n_choices.sum()) != len(texts) or len(spans) != len(texts):
        raise ValueError(f"{len(texts)} texts, {len(spans)} spans and {int(n_choices.sum())} rows by n_choices "
                         f"do not match")
    example = np.repeat(np.arange(len(n_choices)), n_choices)
    if not texts:
        empty = np.zeros(0, np.int64)
        return Statements([], empty, empty, empty, np.zeros(0, bool), example, n_choices, list(example_ids),
                          words, [])
    # ids only as Python lists; offsets and special-token flags are read from the Rust encodings on demand
    enc = tokenizer(list(texts), add_special_tokens=True, truncation=False, return_attention_mask=False,
                    return_token_type_ids=False, verbose=False)
    start, stop, first, single = word_spans(enc, texts, spans, lambda row: f"example {example_ids[example[row]]}")
    word_ids = [enc.encodings[row].word_ids[s:e] for row, (s, e) in enumerate(zip(start.tolist(), stop.tolist()))]
    return Statements(ids=enc["input_ids"], start=start, stop=stop, first=first, single=single,
                      example=example, n_choices=n_choices,
                      example_ids=list(example_ids), words=words, word_ids=word_ids)


def text_span(text: str, begin: int = 0) -> tuple[int, int]:
    """The characters of ``text`` from ``begin`` on without the whitespace at either end, ``(begin, end)``: a
    whole statement's span (whitespace is in no token of some tokenizers, so a span must not start or end
    there). Empty (``begin == end``) when there is nothing but whitespace."""
    rest = text[begin:]
    begin += len(rest) - len(rest.lstrip())
    return begin, max(begin, len(text.rstrip()))


def word_spans(enc, texts: Sequence[str], spans: Sequence[tuple[int, int]], name: Callable[[int], str]):
    """Where each text's word (``spans``: its characters) lies in the tokenizer's output ``enc``: its first
    token (a lone space piece before it included), one past its last, its first in-word token id, and whether
    it is exactly one token aligned with its characters. ``name(row)`` names a text in errors."""
    n = len(texts)
    start, stop, first = (np.zeros(n, np.int64) for _ in range(3))
    single = np.zeros(n, bool)
    for row, ((begin, end), text) in enumerate(zip(spans, texts)):
        encoding = enc.encodings[row]
        s, e = encoding.char_to_token(begin), encoding.char_to_token(end - 1) if end > begin else None
        if s is None or e is None:
            raise DataError(f"{name(row)}: choice {shown(text[begin:end])} has no token in {shown(text)}")
        offsets = encoding.offsets
        space_piece = s > 0 and not encoding.special_tokens_mask[s - 1] and _space_piece(text, *offsets[s - 1], begin)
        start[row], stop[row], first[row] = s - space_piece, e + 1, enc["input_ids"][row][s]
        token_start, token_end = offsets[s]
        single[row] = (s == e and not space_piece and token_end == end
                       and (token_start == begin or text[token_start:begin].isspace()))
    return start, stop, first, single


def split_stem(stem: str, example_id: str) -> tuple[str, str]:
    """The text before and after the stem's one ``[MASK]``."""
    if stem.count(MASK) != 1:
        raise DataError(f"example {example_id}: the stem must contain exactly one {MASK} (MC-QA probes "
                        f"have none): {shown(stem)}")
    prefix, suffix = stem.split(MASK)
    return prefix, suffix


def _space_piece(text: str, s: int, e: int, begin: int) -> bool:
    """A token made only of the space before the word (a lone ``Ġ`` or ``▁``): empty at the word's start
    when offsets are trimmed, else covering just that space."""
    return s == e == begin or (s < e == begin and text[s:e].isspace())

