"""Build a probe: its generator for the base variants, the generic controls for the control variants."""

from __future__ import annotations

from typing import Mapping

import generators
from probekit.data.examples import check_unique_ids
from probekit.errors import ParamsError
from probekit.params import ParamsFile, probe_section
from probekit.probes import controls
from probekit.probes.dataset import BuiltProbe
from probekit.probes.spec import load_probe_spec


def build_probe(probe: str, params_file: ParamsFile, tables: Mapping | None = None,
                section: str | None = None) -> BuiltProbe:
    """Every variant the probe YAML declares, or those that ``<section>.variants`` selects, in that order;
    ``section``: the params section to read (default: the probe's)."""
    generator = generators.get(probe)
    spec = load_probe_spec(generator.template_path)
    section = section or probe
    params = probe_section(params_file, spec, generator.params, section)
    if hasattr(params, "with_models"):  # params read against the file's `models` (a one-token filter's tokenizers)
        params = params.with_models(params_file, section)
    names = params.variants if params.variants is not None else list(spec.variants)
    unknown = [n for n in names if n not in spec.variants]
    if unknown:
        raise ParamsError(f"{params_file.label}: {section}.variants: unknown variant(s) {unknown}; "
                          f"{spec.path} declares {', '.join(spec.variants)}")
    built: dict[str, dict[str, list[dict]]] = {}

    def rows(name: str) -> dict[str, list[dict]]:
        if name not in built:
            variant = spec.variants[name]
            if variant.control:
                control = controls.CONTROLS[variant.control]
                built[name] = controls.apply(rows(variant.base), control.perturbation(spec, variant, params.seed))
            else:
                built[name] = generator.fn(spec, variant, params, tables or {})
            check_unique_ids(built[name])
        return built[name]

    for name in names:
        rows(name)
    return BuiltProbe(spec, params, {n: built[n] for n in names},
                      tuple(n for n in spec.variants if n not in names))
