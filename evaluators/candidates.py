"""Answer words as the model sees them in context.

A candidate is tokenized inside its sentence (the stem with the word in place of ``[MASK]``), so a
byte-level BPE gets the space-prefixed token (``Ġolder``) after a space and the bare one at the start of a
sentence. Scoring ``older`` instead of ``Ġolder`` is the bug that made oLMpics' RoBERTa numbers
irreproducible (oLMpics issues #2, #4).
"""

from __future__ import annotations

from typing import Sequence

from transformers import PreTrainedTokenizerBase

from probekit.errors import DataError, ProbekitError
from probekit.templates import MASK

MULTI_TOKEN_RULES = ("error", "first")
"""``error``: a candidate that is not one token is refused. ``first``: it is scored by its first token."""


class CandidateError(ProbekitError, ValueError):
    """An answer word is not a single token of the model's vocabulary (in context)."""


def candidate_token_ids(tokenizer: PreTrainedTokenizerBase, stems: Sequence[str],
                        choices: Sequence[Sequence[str]], ids: Sequence[str], *,
                        multi_token: str = "error") -> list[list[int]]:
    """For each example, the token id of every choice word at the mask, in choice order."""
    if multi_token not in MULTI_TOKEN_RULES:
        raise ValueError(f"multi_token must be one of {MULTI_TOKEN_RULES}, got {multi_token!r}")
    texts, spans = [], []
    for stem, words, example_id in zip(stems, choices, ids):
        if stem.count(MASK) != 1:
            raise DataError(f"example {example_id}: the stem must contain exactly one {MASK} for MC-MLM "
                             f"(MC-QA probes have none): {stem!r}")
        prefix, suffix = stem.split(MASK)
        for word in words:
            texts.append(prefix + word + suffix)
            spans.append((len(prefix), len(prefix) + len(word)))
    enc = tokenizer(texts, return_offsets_mapping=True, return_special_tokens_mask=True, add_special_tokens=True)
    result, n = [], 0
    for words, example_id in zip(choices, ids):
        row = []
        for word in words:
            (start, end), text = spans[n], texts[n]
            covering = [(tid, s, e) for tid, (s, e), special
                        in zip(enc["input_ids"][n], enc["offset_mapping"][n], enc["special_tokens_mask"][n])
                        if not special and ((e > start and s < end and e > s) or _leading_space(text, s, e, start))]
            n += 1
            exact = len(covering) == 1 and covering[0][2] == end and (
                covering[0][1] == start or text[covering[0][1]:start].isspace())
            if not exact and (multi_token == "error" or not covering):
                pieces = tokenizer.convert_ids_to_tokens([c[0] for c in covering])
                raise CandidateError(
                    f"example {example_id}: candidate {word!r} is not a single token for this tokenizer "
                    f"in context (got {pieces}); pass --multi-token first to score it by its first token")
            # the first piece of the word itself: a lone space piece (SentencePiece's ``▁``) is no word's
            in_word = [c for c in covering if not _leading_space(text, c[1], c[2], start)]
            row.append((in_word or covering)[0][0])
        if len(set(row)) != len(row):
            raise CandidateError(f"example {example_id}: candidates {list(words)} share a token at the mask "
                                 f"({tokenizer.convert_ids_to_tokens(row)}): their scores would tie")
        result.append(row)
    return result


def _leading_space(text: str, s: int, e: int, start: int) -> bool:
    """A token made only of the space before the word (a lone ``Ġ`` or ``▁``): the word's first piece.

    Its offsets are empty at the word's start when trimmed, else they cover just that space.
    """
    return s == e == start or (s < e == start and text[s:e].isspace())
