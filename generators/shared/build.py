"""Build an MC-MLM or MC-QA probe: its generator for the base variants, the generic controls for the control
variants, and the dataset (a part per variant) the one writer writes."""

from __future__ import annotations

from functools import partial
from typing import Callable, Mapping

from generators.shared import registry
from generators.shared.single_token import check_answer_words
from probekit.data.examples import check_unique_ids
from probekit.params import ParamsFile, ProbeParams, probe_section
from probekit.probes import controls
from probekit.data.writer import Dataset
from probekit.probes.dataset import BuiltProbe, probe_dataset


def build_probe(probe: str, params_file: ParamsFile, tables: Mapping | None = None,
                section: str | None = None) -> BuiltProbe:
    """Every variant the probe YAML declares, or those that ``<section>.variants`` selects, in that order;
    ``section``: the params section to read (default: the probe's)."""
    generator = registry.get(probe)
    spec = generator.probe_spec()
    section = section or probe
    params = probe_section(params_file, spec, generator.params, section)
    if hasattr(params, "with_models"):  # params read against the file's `models` (a one-token filter's tokenizers)
        params = params.with_models(params_file, section)
    names = params.variants if params.variants is not None else list(spec.variants)   # declared: ProbeParams
    built: dict[str, dict[str, list[dict]]] = {}

    def rows(name: str) -> dict[str, list[dict]]:
        if name not in built:
            variant = spec.variants[name]
            if variant.control:
                control = controls.CONTROLS[variant.control]
                built[name] = controls.apply(rows(variant.base), control.perturbation(spec, variant, params.seed))
                if control.check is not None:
                    control.check(spec, variant, rows(variant.base), built[name])
            else:
                built[name] = generator.fn(spec, variant, params, tables or {})
            check_unique_ids(built[name])
        return built[name]

    for name in names:
        rows(name)
    return BuiltProbe(spec, params, {n: built[n] for n in names},
                      tuple(n for n in spec.variants if n not in names))


def variants_dataset(generator: registry.Generator, request: registry.Request) -> Dataset:
    """The dataset of a probe registered with :func:`generators.register`: every variant :func:`build_probe`
    builds, a part each."""
    built = build_probe(generator.probe, request.params, request.tables, request.section)
    check_answer_words(built, request.params)
    dataset = probe_dataset(built, generator_version=generator.version)
    if built.not_built:
        skipped = (f"{generator.probe}: declared in {built.spec.path.name} but not selected by {request.params.label} "
                   f"{request.section or generator.probe}.variants, so not built: {', '.join(built.not_built)}")
        dataset = Dataset(dataset.parts, dataset.license, dataset.definition, (*dataset.summary, skipped))
    return dataset


def register(probe: str, *, version: str, params: type[ProbeParams] = ProbeParams, tables: tuple[str, ...] = (),
             sources: tuple[str, ...] = (), outcomes: tuple[str, ...] = (), options: tuple[str, ...] = ()) -> Callable:
    """Decorator: register ``fn(spec, variant, params, tables) -> {split: [row, ...]}``, the rows of one base
    variant, as ``probe``'s generator (MC-MLM and MC-QA probes); the control variants and the dataset are made
    here (:func:`variants_dataset`).

    ``params`` is the probe's typed params model; ``tables`` names the table sets it reads (``fn`` gets
    ``{set: {table: DataFrame}}``, read once per run); ``sources`` names raw sources it reads directly
    (their licence and citation go into the dataset card). ``outcomes``: the outcomes its rows are answered by,
    which every template's ``answers`` must map exactly (none: the choices come from the data, and no template
    has ``answers``); ``options``: the keys a base variant of its YAML may set besides ``template(s)`` and
    ``role`` (:meth:`~generators.shared.registry.Generator.probe_spec` refuses others).
    """
    return registry.registrar(probe, version=version, build=partial(_generate, probe), params=params,
                                tables=tables, sources=sources, outcomes=outcomes, options=options)


def _generate(probe: str, request: registry.Request) -> Dataset:
    return variants_dataset(registry.get(probe), request)
