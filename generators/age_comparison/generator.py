"""AGE-COMPARISON (oLMpics §3): is a person of age AGE-1 younger or older than one of age AGE-2?"""

from __future__ import annotations

from typing import Mapping

from generators.shared.build import register
from generators.shared.number_tuples import VARIANT_OPTIONS, NumberParams, instantiate
from probekit.probes.templates import ProbeSpec, Variant


OUTCOMES = ("less", "greater")   # the first value is the smaller / the larger


def outcome(pair: tuple[int, int]) -> str:
    """``less`` when the first value is the smaller; the template maps it to younger (ages) or older (years)."""
    return "less" if pair[0] < pair[1] else "greater"


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register("age_comparison", version="2", params=NumberParams, outcomes=OUTCOMES, options=VARIANT_OPTIONS)
def generate(spec: ProbeSpec, variant: Variant, params: NumberParams, tables: Mapping) -> dict[str, list[dict]]:
    """Pairs of distinct values in the split's range, filled into the variant's template."""
    return instantiate(spec, variant, params, arity=2, outcome=outcome)
