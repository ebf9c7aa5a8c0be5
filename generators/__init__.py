"""Generators: loaded sources + a probe's template YAML + params -> ``datasets.DatasetDict``.

Each probe is a module ``generators/<probe>.py`` with its definition ``generators/<probe>.yaml`` beside it;
the module registers its generator function with :func:`register`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
PROBES = ("always_never", "age_comparison", "objects_comparison", "antonym_negation", "property_conjunction",
          "taxonomy_conjunction", "encyclopedic_composition", "multihop_comparison")
_REGISTRY: dict[str, "Generator"] = {}


@dataclass(frozen=True)
class Generator:
    probe: str
    version: str
    fn: Callable
    module_path: Path
    sources: tuple[str, ...] = ()  # names in raw/sources.yaml the generator reads

    @property
    def template_path(self) -> Path:
        return self.module_path.with_suffix(".yaml")


def register(probe: str, *, version: str, sources: tuple[str, ...] = ()):
    """Decorator: register ``fn(spec, variant, params, sources) -> DatasetDict`` as the generator of ``probe``.

    ``sources`` names the raw sources it reads; ``fn`` gets ``{name: folder}`` for them.
    """
    if probe not in PROBES:
        raise ValueError(f"unknown probe id {probe!r}; expected one of {PROBES}")

    def wrap(fn: Callable) -> Callable:
        module = importlib.import_module(fn.__module__)
        _REGISTRY[probe] = Generator(probe, version, fn, Path(module.__file__).resolve(), tuple(sources))
        return fn

    return wrap


def available() -> list[str]:
    """Probe ids that have a generator module and a template file here (sorted)."""
    return sorted(p.stem for p in HERE.glob("*.yaml") if p.with_suffix(".py").exists())


def get(probe: str) -> Generator:
    """The registered generator of ``probe`` (imports its module on first use)."""
    if probe not in available():
        raise KeyError(f"no generator for probe {probe!r}; available: {', '.join(available())}")
    importlib.import_module(f"generators.{probe}")
    return _REGISTRY[probe]
