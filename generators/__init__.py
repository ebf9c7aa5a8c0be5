"""Generators: a probe's template YAML + its params (+ loaded tables) -> rows per split.

Each probe is a module ``generators/<probe>.py`` with its definition ``generators/<probe>.yaml`` beside it;
probes are discovered by that pair of files, and the module registers its generator function with
:func:`register`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from probekit.errors import UsageError, shown
from probekit.params import ProbeParams, set_probes

HERE = Path(__file__).resolve().parent
_REGISTRY: dict[str, "Generator"] = {}


@dataclass(frozen=True)
class Generator:
    probe: str
    version: str
    fn: Callable
    module_path: Path
    params: type[ProbeParams] = ProbeParams  # the typed params section of the probe
    tables: tuple[str, ...] = ()  # table sets (probes tables NAME) the generator reads
    sources: tuple[str, ...] = ()  # raw sources it reads directly (raw/sources.yaml names), for provenance

    @property
    def template_path(self) -> Path:
        return self.module_path.with_suffix(".yaml")

    @property
    def format(self) -> str:
        """The dataset family the YAML declares: ``mc_mlm`` / ``mc_qa`` probes (``fn(spec, variant, params,
        tables) -> {split: rows}``), a ``cloze_set`` (ParaRel: ``fn(params_file, tables, section) -> (rows,
        meta)``, written by :mod:`probekit.data.cloze`) or ``pair_cls`` (CALUM: ``fn(params_file, tables,
        section, task) -> ({variant: {split: rows}}, meta)``, written by :mod:`probekit.data.pairs`); the
        module's ``card(meta)`` writes the last two's README."""
        from probekit import yamlfile

        return yamlfile.read(self.template_path).get("format", "")

    @property
    def module(self):
        return importlib.import_module(f"generators.{self.probe}")


def register(probe: str, *, version: str, params: type[ProbeParams] = ProbeParams, tables: tuple[str, ...] = (),
             sources: tuple[str, ...] = ()):
    """Decorator: register ``fn(spec, variant, params, tables) -> {split: [row, ...]}`` as ``probe``'s generator.

    ``params`` is the probe's typed params model; ``tables`` names the table sets it reads (``fn`` gets
    ``{set: {table: DataFrame}}``, read once per run); ``sources`` names raw sources it reads directly
    (their licence and citation go into the dataset card).
    """

    def wrap(fn: Callable) -> Callable:
        module = importlib.import_module(fn.__module__)
        path = Path(module.__file__).resolve()
        if path.stem != probe:
            raise ValueError(f"{path}: registers probe {probe!r}; a probe's module must be named after it")
        _REGISTRY[probe] = Generator(probe, version, fn, path, params, tuple(tables), tuple(sources))
        return fn

    return wrap


def available() -> list[str]:
    """Probe ids that have a generator module and a template file here (sorted)."""
    return sorted(p.stem for p in HERE.glob("*.yaml") if p.with_suffix(".py").exists())


set_probes(available)   # a params file's probe sections: these probes' (probekit.params cannot import this layer)


def get(probe: str) -> Generator:
    """The registered generator of ``probe`` (imports its module on first use)."""
    if probe not in available():
        raise UsageError(f"no generator for probe {shown(probe)}; available: {', '.join(available())}")
    importlib.import_module(f"generators.{probe}")
    return _REGISTRY[probe]
