"""The settings of ANTONYM NEGATION: the probe's name, its parts of speech and relations (the templates'
outcomes) and the typed params (sizes, the frequency filter, the pair sources, how ambiguous or scarce pairs
are handled) with their checks; the defaults are in ``antonym_negation.yaml``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt, field_validator

from probekit.errors import shown
from probekit.params import ProbeParams, SplitSizes

PROBE = "antonym_negation"
PartOfSpeech = Literal["noun", "adjective", "verb"]
POS = ("noun", "adjective", "verb")
RELATIONS = ("antonym", "synonym")  # the templates' outcomes; with an odd size antonyms get the extra row


class AntonymParams(ProbeParams):
    """Sizes, the frequency filter, the pair sources, and how ambiguous or scarce pairs are handled."""

    size: SplitSizes
    min_zipf: float = Field(ge=0, le=8)
    sources: list[Literal["wordnet", "conceptnet"]] = Field(min_length=1)
    pos_priority: list[PartOfSpeech]
    reverse_to_fill: bool = True
    dev_word_limit: PositiveInt = 3

    @field_validator("sources")
    @classmethod
    def _distinct(cls, sources):
        if len(set(sources)) != len(sources):
            raise ValueError(f"repeated source in {sources}")
        return sources

    @field_validator("pos_priority")
    @classmethod
    def _permutation(cls, order):
        if sorted(order) != sorted(POS):
            raise ValueError(f"must list each of {list(POS)} once, got {shown(order)}")
        return order
