"""The params of PROPERTY CONJUNCTION (:mod:`generators.property_conjunction`): the probe's name and its typed
params section (:class:`ConjunctionParams`), which checks that every predicate is spelt as ConceptNet spells
it and has a question phrase."""

from __future__ import annotations

from collections import Counter

from pydantic import Field, PositiveInt, ValidationInfo, field_validator

from probekit.params import ProbeParams, SplitSizes
from probekit.sources.loaders.conceptnet import canonical_relation

PROBE = "property_conjunction"


class ConjunctionParams(ProbeParams):
    """``size.<split>``: questions per split (capped by the edges); ``phrases``: predicate -> question phrase;
    ``predicates``: those the questions use; ``symmetric``: predicates read both ways when checking an
    absence; ``min_zipf``: the frequency every concept and object must reach; ``function_words``: a term
    made of these only is no concept; ``dev_share``: share of the concepts in dev; ``max_per_answer``:
    questions per answer concept."""

    size: SplitSizes
    phrases: dict[str, str]
    predicates: list[str] = Field(min_length=1)
    symmetric: list[str] = Field(default_factory=list)
    min_zipf: float = Field(3.5, ge=0, le=8)
    function_words: list[str] = Field(default_factory=list)
    dev_share: float = Field(0.25, ge=0, le=1)
    max_per_answer: PositiveInt = 5

    @field_validator("phrases")
    @classmethod
    def _phrases(cls, phrases):
        _conceptnet_names(phrases)
        empty = [r for r, p in phrases.items() if not isinstance(p, str) or not p.strip() or p != " ".join(p.split())]
        if empty:
            raise ValueError(f"empty phrase, or stray spaces in it, for {empty}")
        return phrases

    @field_validator("predicates")
    @classmethod
    def _predicates(cls, predicates, info: ValidationInfo):
        phrases = info.data.get("phrases") or {}
        missing = [r for r in predicates if r not in phrases]
        if missing:
            raise ValueError(f"{missing} have no question phrase in `phrases` (have: {', '.join(phrases)})")
        if len(set(predicates)) != len(predicates):
            raise ValueError(f"repeated predicate(s) {sorted(r for r, n in Counter(predicates).items() if n > 1)}")
        return predicates

    @field_validator("symmetric")
    @classmethod
    def _symmetric(cls, symmetric):
        _conceptnet_names(symmetric)
        return symmetric


def _conceptnet_names(relations) -> None:
    """Refuse relation names not spelt as ConceptNet spells them (AtLocation, not atlocation)."""
    bad = [r for r in relations if canonical_relation(r) != r]
    if bad:
        raise ValueError(f"not ConceptNet relation names (as spelt in ConceptNet, e.g. AtLocation): {bad}")
