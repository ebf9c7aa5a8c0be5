"""Build a probe: its generator for the base variants, the generic controls for NO-LANG and PERTURBED."""

from __future__ import annotations

from typing import Mapping

from datasets import DatasetDict

import generators

from . import controls
from .templates import ProbeSpec, load_probe_spec


def build_probe(probe: str, params: Mapping, sources: Mapping | None = None) -> tuple[ProbeSpec, dict[str, DatasetDict]]:
    """Every variant named in ``params.variants`` (in that order), as ``{variant: DatasetDict}``."""
    generator = generators.get(probe)
    spec = load_probe_spec(generator.template_path)
    names = list(params.get("variants", ["original"]))
    unknown = [n for n in names if n not in spec.variants and n not in controls.CONTROLS]
    if unknown:
        raise ValueError(f"params: {probe}.variants: unknown variant(s) {unknown}; {spec.path} defines "
                         f"{list(spec.variants)} and the controls {list(controls.CONTROLS)}")
    built: dict[str, DatasetDict] = {}

    def base(name: str) -> DatasetDict:
        if name not in built:
            built[name] = generator.fn(spec, spec.variants[name], params, sources or {})
        return built[name]

    for name in names:
        if name in controls.CONTROLS:
            built[name] = controls.apply(base("original"), controls.CONTROLS[name](spec, params["seed"]))
        else:
            base(name)
    return spec, {name: built[name] for name in names}
