"""The registry of generators: a probe's template YAML + its params (+ loaded tables) -> its dataset.

A probe is a folder ``generators/<probe>/`` named after it: its definition ``probe.yaml``, its generator module
``generator.py`` and its private helpers. Probes are discovered by those two files; what several probes share sits
beside the folders. The module registers its generator with :func:`generators.shared.build.register` (the rows of one
variant: MC-MLM and MC-QA probes) or :func:`register_dataset` (the whole dataset); every generator is then called
one way, :meth:`Generator.generate` (a :class:`Request` in, a :class:`~probekit.data.writer.Dataset` out).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from pydantic import ConfigDict, ValidationError

from probekit.data.writer import Dataset
from probekit.errors import DataError, UsageError, shown
from probekit.names import Name, check_name
from probekit.probes.schema import read_mapping, validation_line
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import ProbeSpec, TemplateError
from probekit.params import ParamsFile, ProbeParams, probes_in
from probekit.typed import Typed

HERE = Path(__file__).resolve().parent.parent   # generators/: one folder per probe
TEMPLATE, MODULE = "probe.yaml", "generator"   # in each probe's folder: its definition and its generator module
_REGISTRY: dict[str, "Generator"] = {}



class DatasetSpec(Typed):
    """What every whole-dataset generator's YAML starts with (ParaRel's, CALUM's; an MC probe's is
    :class:`probekit.probes.spec.ProbeSpec`): its name, format, version and citation."""

    model_config = ConfigDict(extra="forbid")
    probe: Name
    format: str
    version: str
    citation: str | None = None

    @classmethod
    def read(cls, path: Path, **extra) -> "DatasetSpec":
        """The YAML at ``path`` (with ``extra``: what other files add to it) as this model; what does not fit is
        one line naming the file and the key (an unknown key with the closest known one)."""
        try:
            return cls.model_validate({**read_mapping(path, DataError), **extra})
        except ValidationError as exc:
            raise DataError(validation_line(exc, cls, str(path))) from None


@dataclass(frozen=True)
class Request:
    """What every generator is called with: the params file, the table sets (``{set: {table: DataFrame}}``, read
    on first use), the params ``section`` to read (None: the probe's own) and the ``task`` (CALUM's; a probe
    without tasks refuses one)."""

    params: ParamsFile
    tables: Mapping
    section: str | None = None
    task: str | None = None


@dataclass(frozen=True)
class Generator:
    """A registered probe. :meth:`generate` is the one call shape of every dataset family."""

    probe: str
    version: str
    fn: Callable
    module_path: Path
    params: type[ProbeParams] = ProbeParams  # the typed params section of the probe
    tables: tuple[str, ...] = ()  # table sets (probes tables NAME) the generator reads
    sources: tuple[str, ...] = ()  # raw sources it reads directly (raw/sources.yaml names), for provenance
    build: Callable[[Request], Dataset] | None = None  # the one call shape: build(request) -> Dataset
    tasks: bool = False  # whether the generator takes a task (Request.task)
    outcomes: tuple[str, ...] = ()  # an MC probe's: the outcomes every template's `answers` maps (): open choices
    options: tuple[str, ...] = ()  # an MC probe's: what a base variant may set besides its templates

    @property
    def template_path(self) -> Path:
        return self.module_path.parent / TEMPLATE

    @property
    def format(self) -> str:
        """The dataset family the YAML declares: ``mc_mlm``, ``mc_qa``, ``cloze_set`` (ParaRel), ``pair_cls``
        (CALUM)."""
        from probekit import yamlfile

        return yamlfile.read(self.template_path).get("format", "")

    def probe_spec(self) -> ProbeSpec:
        """An MC-MLM or MC-QA probe's YAML (:func:`probekit.probes.spec.load_probe_spec`), checked against what the
        generator declares: its outcomes, its variants' options and its name."""
        spec = load_probe_spec(self.template_path, outcomes=self.outcomes, options=self.options)
        if spec.probe != self.probe:
            raise TemplateError(f"{self.template_path}: probe: {shown(spec.probe)} must be the name of its folder, "
                                f"{self.probe}")
        return spec

    @property
    def module(self):
        return importlib.import_module(_module(self.probe))

    def generate(self, request: Request) -> Dataset:
        """The probe's dataset, for :func:`probekit.data.writer.write_dataset`."""
        if request.task and not self.tasks:
            raise UsageError(f"--task applies to sentence-pair datasets (calum), not {self.probe}")
        return self.build(request)


def register_dataset(probe: str, *, version: str, tables: tuple[str, ...] = (), sources: tuple[str, ...] = (),
                     tasks: bool = False):
    """Decorator: register ``fn(request: Request) -> Dataset``, the whole dataset (ParaRel's cloze set, a CALUM
    pair set), as ``probe``'s generator; ``tasks``: it takes ``Request.task``. (MC-MLM and MC-QA probes register
    the rows of one variant with :func:`generators.shared.build.register`.)"""
    return registrar(probe, version=version, tables=tables, sources=sources, tasks=tasks)


def registrar(probe: str, *, version: str, build: Callable[[Request], Dataset] | None = None,
              params: type[ProbeParams] = ProbeParams, tables: tuple[str, ...] = (), sources: tuple[str, ...] = (),
              tasks: bool = False, outcomes: tuple[str, ...] = (), options: tuple[str, ...] = ()):
    """The decorator that records ``fn`` as ``probe``'s generator, called by ``build(request)`` (None: ``fn`` is
    that call); the module must be ``generators/<probe>/generator.py``. ``outcomes`` and ``options``: an MC
    probe's (:func:`generators.shared.build.register`)."""

    def wrap(fn: Callable) -> Callable:
        module = importlib.import_module(fn.__module__)
        path = Path(module.__file__).resolve()
        if path.parent.name != probe or path.stem != MODULE:
            raise ValueError(f"{path}: registers probe {probe!r}; a probe's generator is "
                             f"generators/<probe>/{MODULE}.py, in the folder named after it")
        _REGISTRY[probe] = Generator(probe, version, fn, path, params, tuple(tables), tuple(sources), build or fn,
                                     tasks, tuple(outcomes), tuple(options))
        return fn

    return wrap


def available() -> list[str]:
    """Probe ids: the folders here with a template file and a generator module (sorted)."""
    return probes_in(HERE)


def _module(probe: str) -> str:
    return f"generators.{probe}.{MODULE}"




def get(probe: str) -> Generator:
    """The registered generator of ``probe`` (imports its module on first use)."""
    if probe not in available():
        raise UsageError(f"no generator for probe {shown(probe)}; available: {', '.join(available())}")
    check_name(probe, f"{HERE / probe}: the probe's folder name", UsageError)
    importlib.import_module(_module(probe))
    return _REGISTRY[probe]
