"""Masked-LM inputs of cloze queries, with the choices tokenized once per group of queries rather than once
per query: ParaRel's 224k queries over 38 candidate lists are 24M (query, choice) statements, its choices
only a few thousand distinct (context, choice) pairs.

A word's tokens depend only on the text up to the nearest whitespace on each side: every pre-tokenizer of
the Hugging Face fast tokenizers (BERT's, byte-level BPE's, SentencePiece's Metaspace) splits there first,
and their normalizers act per character. So queries that share their choice list and the whitespace-bounded
text around ``[MASK]`` (with whether it starts or ends the statement) form one **group**, whose first query
is tokenized with every choice (:func:`probekit.tokens.statements.encode_statements`, which also checks that
every choice leaves the same context). Every query is tokenized once, with the group's first choice, and
that word's tokens are replaced by one mask token, as the per-statement encoding does. The word's tokens
must come out as in the group's first query: a tokenizer breaking the rule above is an error, not a
silent difference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from transformers import PreTrainedTokenizerBase

from probekit.errors import DataError, shown
from probekit.tokens.statements import Statements, encode_statements, split_stem, word_spans

_LEFT = re.compile(r"\s*\S*\Z")   # the non-space run touching the mask, and the whitespace before it
_RIGHT = re.compile(r"\S*\s*")


@dataclass
class MaskedQueries:
    """Per query, the statement with its choice replaced by one mask token and the mask's position; per
    group, the tokens of its choices in context (``-1``-padded to the longest choice list)."""

    inputs: list[list[int]]
    positions: np.ndarray      # [queries]
    group: np.ndarray          # [queries] the query's group
    tokens: np.ndarray         # [groups, max choices] each choice's first in-word token id, -1 padding
    single: np.ndarray         # [groups, max choices] the choice is exactly one token in context
    representative: Statements  # each group's first query with every choice (error messages)
    example_ids: list[str]

    @property
    def n_choices(self) -> np.ndarray:
        return self.representative.n_choices[self.group]

    def candidates(self) -> np.ndarray:
        """``[queries, max choices]`` token ids (-1 padding): the dense form, for small choice lists."""
        return self.tokens[self.group]

    def longest(self) -> tuple[np.ndarray, list[str]]:
        """Each query's longest filled statement: its tokens (the mask stands for the longest choice) and
        that choice."""
        st = self.representative
        widths = st.stop - st.start
        width, word = np.zeros(len(st.n_choices), np.int64), []
        for g in range(len(st.n_choices)):
            rows = st.rows_of(g)
            row = rows[int(np.argmax(widths[rows.start:rows.stop]))]
            width[g] = widths[row]
            word.append(st.words[row])
        lengths = np.fromiter(map(len, self.inputs), np.int64, len(self.inputs)) - 1 + width[self.group]
        return lengths, [word[g] for g in self.group.tolist()]


def context_key(prefix: str, suffix: str) -> tuple:
    """What of a query's text can change its choice's tokens: the whitespace-bounded neighbours of the mask,
    and whether they start or end the statement."""
    left, right = _LEFT.search(prefix), _RIGHT.match(suffix)
    return left.group(), left.start() == 0, right.group(), right.end() == len(suffix)


def encode_masked(tokenizer: PreTrainedTokenizerBase, stems: Sequence[str], choices: Sequence[Sequence[str]],
                  example_ids: Sequence[str], token_ids: Mapping[str, int] | None = None) -> MaskedQueries:
    """Group the queries, tokenize each group's choices once and each query once (see the module doc).
    ``token_ids``: each choice word's token id at the mask, in place of its first token in context, every such
    choice counted as one token (ParaRel's ``leading_space`` rule: the original's ``tokenize(" " + obj)``, RoBERTa's
    ``Ġobj`` also at the start of a sentence); the input around the mask is the same either way."""
    mask = tokenizer.mask_token_id
    if mask is None:
        raise DataError(f"{type(tokenizer).__name__} has no mask token: masked-LM scoring needs one")
    lists: dict[tuple, int] = {}
    groups: dict[tuple, int] = {}
    group = np.zeros(len(stems), np.int64)
    firsts, parts = [], []
    for i, (stem, row, example_id) in enumerate(zip(stems, choices, example_ids)):
        prefix, suffix = split_stem(stem, example_id)
        if not row:
            raise DataError(f"example {example_id}: no choices")
        key = (context_key(prefix, suffix), lists.setdefault(tuple(row), len(lists)))
        group[i] = groups.setdefault(key, len(groups))
        if group[i] == len(firsts):
            firsts.append(i)
        parts.append((prefix, suffix))
    rep = encode_statements(tokenizer, [stems[i] for i in firsts], [choices[i] for i in firsts],
                            [example_ids[i] for i in firsts])
    rep.replaced(mask)  # checks that every choice leaves the same context in the group's first query
    width = int(rep.n_choices.max(initial=1))
    tokens = np.full((len(firsts), width), -1, np.int64)
    single = np.zeros((len(firsts), width), bool)
    column = np.arange(len(rep.ids)) - rep.offsets[rep.example]
    tokens[rep.example, column], single[rep.example, column] = rep.first, rep.single
    if token_ids is not None:
        missing = sorted({w for w in rep.words if w not in token_ids})
        if missing:
            raise DataError(f"choices {shown(missing)} have no token id among the {len(token_ids)} given")
        tokens[rep.example, column] = [token_ids[w] for w in rep.words]
        single[rep.example, column] = True

    first_row = rep.offsets[group]  # the query's group's first choice, as its first query tokenized it
    texts, spans = [], []
    for i, (prefix, suffix) in enumerate(parts):
        word = choices[i][0]
        texts.append(prefix + word + suffix)
        spans.append((len(prefix), len(prefix) + len(word)))
    enc = tokenizer(texts, add_special_tokens=True, truncation=False, return_attention_mask=False,
                    return_token_type_ids=False, verbose=False)
    start, stop, _, _ = word_spans(enc, texts, spans, lambda i: f"example {example_ids[i]}")
    inputs = []
    for i, ids in enumerate(enc["input_ids"]):
        s, e, r = int(start[i]), int(stop[i]), int(first_row[i])
        if ids[s:e] != rep.ids[r][rep.start[r]:rep.stop[r]]:
            raise DataError(f"example {example_ids[i]}: {tokenizer.name_or_path}: choice {shown(choices[i][0])} is "
                            f"tokenized differently here than in example {rep.example_ids[group[i]]}, whose text "
                            f"around the mask matches; score with the per-statement rules (--rule pll)")
        inputs.append(ids[:s] + [mask] + ids[e:])
    return MaskedQueries(inputs=inputs, positions=start, group=group, tokens=tokens, single=single,
                         representative=rep, example_ids=list(example_ids))
