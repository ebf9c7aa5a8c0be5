"""One scoring engine for every Hugging Face LM family.

A query is a stem with one ``[MASK]`` and its choice words (MC-MLM's ten labels, or ParaRel's hundreds of
objects). The engine tokenizes every statement once (``statements.py``), then a family's rule scores it:

| family | rule | score of a choice |
| --- | --- | --- |
| ``mlm`` | ``mask-logit`` (MC-MLM default) | the MLM head's raw logit of its token at the mask |
| ``mlm`` | ``pll`` | PLL-word-l2r of its tokens (multi-token choices) |
| ``mlm`` | ``pll-statement`` | PLL-word-l2r of every token of the filled statement (minicons) |
| ``causal`` | ``statement`` (default) | log p(statement with the choice in place) |
| ``causal`` | ``choice`` | log p(the choice's tokens given the words before it) |
| ``causal`` | ``harness`` | lm-evaluation-harness's log p(the choice after the text before the blank) |
| ``seq2seq`` | ``sentinel`` (T5 default) | log p(``<extra_id_0>`` → the choice) |
| ``seq2seq`` | ``statement`` (BART default) | log p(statement given the masked statement) |

All rules share the collator (length-sorted batches, right padding, input order restored) and the runner
(batches on the device before the loop); scores do not depend on the batch size. The engine also gives the
hidden state at the mask (features for the learning curves).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from evaluators.engine import causal, masked, seq2seq
from evaluators.engine.masked_queries import MaskedQueries, encode_masked
from evaluators.engine.runner import Runner
from probekit.data.examples import MASK
from probekit.errors import DataError, UsageError, shown
from probekit.scoring import FAMILIES, RULES
from probekit.tokens.statements import Statements, encode_statements, split_stem


def default_rule(family: str, tokenizer) -> str:
    if family == "seq2seq":
        return "sentinel" if seq2seq.has_sentinels(tokenizer) else "statement"
    return RULES[family][0]


@dataclass(frozen=True)
class Scoring:
    family: str
    rule: str
    multi_token: str  # mask-logit only: what a multi-token choice gets (error | first)

    def record(self) -> dict:
        """What results record of it (``metrics.json``; ``predictions.jsonl`` carries ``rule``)."""
        record = {"scoring": self.family, "rule": self.rule}
        if self.rule == "mask-logit":
            record["multi_token"] = self.multi_token
        return record


class Engine:
    """Scores multiple-choice cloze queries with a loaded model of any family."""

    def __init__(self, model, tokenizer, family: str, *, rule: str | None = None, batch_size: int | str = "auto",
                 multi_token: str = "error", progress: bool = False):
        if family not in RULES:
            raise UsageError(f"--scoring must be one of auto, {', '.join(FAMILIES)}, got {shown(family)}")
        rule = rule or default_rule(family, tokenizer)
        if rule not in RULES[family]:
            raise UsageError(f"--rule {rule}: a {family} model is scored by {' or '.join(RULES[family])}")
        if multi_token not in masked.MULTI_TOKEN_RULES:
            raise UsageError(f"--multi-token must be one of {', '.join(masked.MULTI_TOKEN_RULES)}, "
                             f"got {shown(multi_token)}")
        self.scoring = Scoring(family, rule, multi_token)
        self.runner = Runner(model, tokenizer, batch_size=batch_size, progress=progress)
        self.max_length = max_length(model, tokenizer)

    @property
    def tokenizer(self):
        return self.runner.tokenizer

    def encode(self, stems: Sequence[str], choices: Sequence[Sequence[str]], ids: Sequence[str], *,
               whole: bool = False) -> Statements:
        """Every (query, choice) statement tokenized, checked against the model's length (the per-statement
        rules: PLL, causal, seq2seq); ``whole``: each row's span is the whole statement (``pll-statement``)."""
        statements = encode_statements(self.tokenizer, stems, choices, ids, whole=whole)
        start = causal.start_tokens(self.tokenizer, statements) if self.scoring.family == "causal" else []
        statements.check_length(self.max_length, extra=len(start))
        return statements

    def encode_masked(self, stems: Sequence[str], choices: Sequence[Sequence[str]], ids: Sequence[str],
                      token_ids: Mapping[str, int] | None = None) -> MaskedQueries:
        """Each query with its choice masked, choices tokenized once per group (the mask rules and features),
        checked against the model's length with its longest choice in place; ``token_ids``: the choices' tokens
        at the mask, in place of their in-context ones (:func:`encode_masked`)."""
        queries = encode_masked(self.tokenizer, stems, choices, ids, token_ids)
        lengths, words = queries.longest()
        if len(lengths) and lengths.max() > self.max_length:
            i = int(np.argmax(lengths))
            cut = " (the mask would be truncated away)" if queries.positions[i] >= self.max_length else ""
            raise DataError(f"example {ids[i]}: the statement with choice {shown(words[i])} is "
                            f"{int(lengths[i])} tokens and the model reads at most {self.max_length}{cut}")
        return queries

    def scores(self, stems: Sequence[str], choices: Sequence[Sequence[str]], ids: Sequence[str], *,
               token_ids: Mapping[str, int] | None = None) -> np.ndarray:
        """Each query's choice scores, ``[queries, most choices]`` in input and choice order, NaN-padded
        (higher is more likely). A candidate list shared by many queries (ParaRel's objects) is tokenized
        once per group under the mask rule; the other rules score every statement. ``token_ids`` (the mask
        rule only): each choice word's token at the mask, in place of its first token in context."""
        rule = self.scoring.rule
        if token_ids is not None and rule != "mask-logit":
            raise UsageError(f"token ids of the choices are read by the mask-logit rule only, not {rule}")
        if rule == "harness":
            return self._harness_scores(stems, choices, ids)
        if rule == "mask-logit":
            queries = self.encode_masked(stems, choices, ids, token_ids)
            return self.runner.fitting(lambda: masked.mask_logit(self.runner, queries, self.scoring.multi_token))
        st = self.encode(stems, choices, ids, whole=rule == "pll-statement")
        if rule in ("pll", "pll-statement"):
            flat = self.runner.fitting(lambda: masked.pll(self.runner, st))
        elif self.scoring.family == "causal":
            flat = self.runner.fitting(lambda: causal.causal(self.runner, st, rule))
        else:
            flat = self.runner.fitting(lambda: seq2seq.seq2seq(self.runner, st, rule))
        return _table(flat, st.example, st.n_choices)

    def _harness_scores(self, stems: Sequence[str], choices: Sequence[Sequence[str]],
                        ids: Sequence[str]) -> np.ndarray:
        """The causal ``harness`` rule: each choice scored after the text before its example's blank, tokenized
        as lm-evaluation-harness does (``causal.harness_pairs``), not through :class:`Statements`."""
        prefixes, words, example = [], [], []
        for i, (stem, options) in enumerate(zip(stems, choices)):
            before, _ = split_stem(stem, ids[i])
            if before and not before.strip():
                raise DataError(f"example {ids[i]}: only spaces before {MASK}; the harness cannot score that")
            prefixes += [before] * len(options)
            words += list(options)
            example += [i] * len(options)
        contexts, continuations = causal.harness_pairs(self.tokenizer, prefixes, words)
        for row, (ctx, cont) in enumerate(zip(contexts, continuations)):
            if not cont or len(ctx) + len(cont) > self.max_length:
                why = "no continuation token" if not cont else (f"{len(ctx) + len(cont)} tokens and the model reads at "
                                                               f"most {self.max_length}")
                raise DataError(f"example {ids[example[row]]}: choice {shown(words[row])} after its context: {why}")
        flat = self.runner.fitting(lambda: causal.harness(self.runner, contexts, continuations))
        return _table(flat, np.asarray(example, np.int64), np.fromiter(map(len, choices), np.int64, len(choices)))

    def score(self, stems: Sequence[str], choices: Sequence[Sequence[str]], ids: Sequence[str]) -> list[list[float]]:
        """Each example's choice scores as lists, in input and choice order (higher is more likely)."""
        table = self.scores(stems, choices, ids)
        return [row[:len(c)] for row, c in zip(table.tolist(), choices)]

    def features(self, stems: Sequence[str], choices: Sequence[Sequence[str]], ids: Sequence[str]) -> np.ndarray:
        """The last hidden state at each example's mask, ``[examples, hidden]`` (masked LMs)."""
        if self.scoring.family != "mlm":
            raise UsageError(f"mask features need a masked LM, not a {self.scoring.family} model")
        queries = self.encode_masked(stems, choices, ids)
        return self.runner.fitting(lambda: masked.mask_features(self.runner, queries))


def _table(flat: np.ndarray, example: np.ndarray, n_choices: np.ndarray) -> np.ndarray:
    """One score per row (rows grouped by example, in choice order) as ``[examples, most choices]``, NaN-padded."""
    out = np.full((len(n_choices), int(n_choices.max(initial=0))), np.nan, flat.dtype)
    out[example, np.arange(len(example)) - (np.cumsum(n_choices) - n_choices)[example]] = flat
    return out


def max_length(model, tokenizer) -> int:
    """Tokens the model can read: the tokenizer's limit, capped by the position embeddings (RoBERTa-style
    models start positions after the padding index); a tokenizer without a limit gets the model's."""
    config = model.config
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 10**9
    if config.model_type in ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"):
        positions -= (config.pad_token_id or 0) + 1
    limit = tokenizer.model_max_length
    return min(limit if limit and limit < 10**9 else positions, positions)
