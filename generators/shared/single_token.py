"""The one-token filters of the generators: whose tokenizers they read (:func:`masked_lms`, the masked LMs among
the params' models that run a protocol: ParaRel's objects, TAXONOMY CONJUNCTION's choices) and :class:`OneToken`,
whether a word is one token at the mask for every tokenizer listed, as the zero-shot evaluator tokenizes a
candidate (TAXONOMY CONJUNCTION's ``single_token``); tokenizers are loaded (``transformers``) on first use only."""

from __future__ import annotations

from typing import Mapping

from probekit.errors import DataError, ParamsError, UsageError, shown
from probekit.params import ParamsFile
from probekit.tokens.family import family_of
from probekit.tokens.one_token import load_tokenizer
from probekit.tokens.refs import resolve_model


def masked_lms(params_file: ParamsFile, protocol: str, key: str) -> list[str]:
    """The aliases of the masked LMs among the models that run ``protocol`` (``olmpics`` or ``pararel``:
    :meth:`~probekit.params.ParamsFile.evaluated_models`), whose mask-logit rule reads one token (causal and
    seq2seq LMs score a multi-token word by its log-likelihood, so they narrow nothing). The family comes from
    each model's config and tokenizer, no weights read. ``key``: the param whose null asked (named in errors)."""
    aliases, masked = params_file.models(), []
    for alias in params_file.evaluated_models(protocol):
        try:
            if family_of(resolve_model(alias, aliases, params_file.label, needs="tokenizer")) == "mlm":
                masked.append(alias)
        except UsageError as exc:
            raise ParamsError(f"{params_file.label}: models.{alias} ({key}: null reads every masked LM of models): "
                              f"{exc}") from None
    return masked


class OneToken:
    """``word -> bool``: one token, at the mask, for every tokenizer of ``specs`` (an alias of ``aliases``, i.e. of
    the params' ``models``; ``pkg:<module>``, a model folder, or a Hub id in the local cache), as the zero-shot
    evaluator tokenizes a candidate (in context, after a space: RoBERTa's ``Ġword``); always true without specs.
    ``key``: the param that lists them (named in errors)."""

    STEM = "A thing and a thing are both a type of [MASK] ."

    def __init__(self, specs: list[str], key: str = "single_token",
                 aliases: Mapping[str, str | Mapping] | None = None):
        self.specs, self.key, self.aliases = list(specs), key, dict(aliases or {})
        self._tokenizers, self._memo = None, {}

    def _load(self) -> list:
        tokenizers = []
        for spec in self.specs:
            try:
                tokenizers.append(load_tokenizer(spec, self.aliases, self.key))
            except UsageError as e:
                raise DataError(f"{self.key}: {e} (or leave {shown(spec)} out of the list)") from None
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
