"""The ``single_token`` filter of TAXONOMY CONJUNCTION's choices (:class:`OneToken`): whether a word is one
token at the mask for every tokenizer listed, as the zero-shot evaluator tokenizes a candidate; it loads
the tokenizers (``transformers``) on first use only."""

from __future__ import annotations

from generators.taxonomy_params import PROBE
from probekit.errors import DataError, UsageError, shown
from probekit.tokens.one_token import load_tokenizer


class OneToken:
    """``word -> bool``: one token, at the mask, for every tokenizer of ``specs`` (``pkg:<module>``, a model
    folder, or a Hub id in the local cache), as the zero-shot evaluator tokenizes a candidate (in context,
    after a space: RoBERTa's ``Ġword``); always true without specs."""

    STEM = "A thing and a thing are both a type of [MASK] ."

    def __init__(self, specs: list[str]):
        self.specs, self._tokenizers, self._memo = list(specs), None, {}

    def _load(self) -> list:
        tokenizers = []
        for spec in self.specs:
            try:
                tokenizers.append(load_tokenizer(spec, {}, f"{PROBE}.single_token"))
            except UsageError as e:
                raise DataError(f"{PROBE}.single_token: {e} (or leave {shown(spec)} out of the list)") from None
        return tokenizers

    def __call__(self, word: str) -> bool:
        if not self.specs:
            return True
        if word not in self._memo:
            from probekit.tokens.statements import encode_statements

            if self._tokenizers is None:
                self._tokenizers = self._load()
            self._memo[word] = all(encode_statements(tokenizer, [self.STEM], [[word]], [word]).single[0]
                                   for tokenizer in self._tokenizers)
        return self._memo[word]
