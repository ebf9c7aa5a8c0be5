"""MULTI-HOP COMPARISON (oLMpics §4.5): which of three people, given by age, is the oldest?"""

from __future__ import annotations

from typing import Mapping

from generators.shared.build import register
from generators.shared.number_tuples import VARIANT_OPTIONS, NumberParams, instantiate
from probekit.probes.templates import ProbeSpec, Variant

ORDINALS = ("first", "second", "third")


def outcome(ages: tuple[int, int, int]) -> str:
    """The position of the oldest (largest value)."""
    return ORDINALS[ages.index(max(ages))]


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register("multihop_comparison", version="2", params=NumberParams, outcomes=ORDINALS, options=VARIANT_OPTIONS)
def generate(spec: ProbeSpec, variant: Variant, params: NumberParams, tables: Mapping) -> dict[str, list[dict]]:
    """Triples of distinct ages in the split's range, filled into the variant's template."""
    return instantiate(spec, variant, params, arity=3, outcome=outcome)
