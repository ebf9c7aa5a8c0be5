"""The library's entry point: :func:`evaluate` runs one protocol of :mod:`probekit.protocols` (zero-shot MC, the
MC-MLM features and curves, MC-QA, ParaRel, consistency training, CALUM) for one model on one or more datasets:
it reads the params (a file, or the built-in defaults), resolves release files, checks that the protocol applies to
the model (else it writes the skipped ``metrics.json`` and returns nothing), loads the model once and runs every
dataset. The ``probes evaluate`` commands and the grid's cells (``bench/grid.py`` times them) call it; see
docs/api.md.

Keyword options are the protocol's command-line options with ``_`` for ``-`` (``batch_size=8``,
``release_of=["age_comparison"]``); an option left out takes its params' value, as on the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probekit import outputs, protocols
from probekit.outputs import overlap
from probekit.errors import UsageError
from probekit.device import check_device, resolve_device  # noqa: F401  (the runs import them from here)
from probekit.params import ParamsFile, read_params


@dataclass(frozen=True)
class Run:
    """One output folder of a protocol's run."""

    out: Path                 # the folder written (metrics.json, predictions...)
    data: Path                # what it read
    metrics: dict = field(default_factory=dict)   # what its metrics.json holds; zero-shot: {variant: metrics}
    probe: str | None = None  # a release file's probe (``release_of``)


def evaluate(protocol: str, model: str, data: Any, out: str | Path, *, params: Any = None, device: str = "auto",
             force: bool = False, **options) -> list[Run]:
    """Run ``protocol`` for ``model`` (an alias of the params' ``models``, a folder, ``pkg:<package>`` or a Hub
    id) on ``data`` (a dataset folder or file; a list of them where the protocol takes several, ``out`` then
    holding ``{probe}``), writing into ``out``. ``params``: a params file (default: ``./params.yaml`` when present,
    else the built-in defaults); ``device``: ``auto`` (CUDA when torch sees a GPU), ``cpu``, ``cuda:N``, ``mps``;
    ``force``: replace an output folder probekit did not write. Returns one :class:`Run` per output folder; none
    when the protocol does not apply to the model (its skipped ``metrics.json`` written, a line printed)."""
    record = protocols.get(protocol)
    if record.run is None:
        runnable = ", ".join(name for name, p in protocols.REGISTRY.items() if p.run)
        raise UsageError(f"protocol {protocol!r} has no run of its own (the protocols evaluate runs: {runnable})")
    check_device(device)
    run = protocols.function(record.run)
    reads = [(flag, p) for flag, values in (("--data", data), ("--model", model)) for p in listed(values)]
    # a folder claimed with force: replaced by this call only; no output may overlap what it reads
    with outputs.claims(), overlap.reading(reads):
        return run(model, data, out, params=params, device=device, force=force, **options)


def params_file(params) -> ParamsFile:
    """``params``: a read params file, or the path to read (None: ``./params.yaml`` when present, else defaults)."""
    return params if isinstance(params, ParamsFile) else read_params(params)


def listed(value: Any) -> list:
    """An option that takes one or several values, as a list (None: none)."""
    if value is None:
        return []
    return [value] if isinstance(value, (str, Path)) else list(value)


PROBE = "{probe}"


def each_probe(value: Any, params: ParamsFile, fmt: str, option: str) -> list:
    """:func:`listed`, where a value with ``{probe}`` in it (``--data data/probes/{probe}``) stands for one value
    per probe of the params' list ``probes.<fmt>``, in its order: a pipeline stage names the list, not each probe,
    so a probe added to it (``probes new``) is evaluated with the others."""
    values = []
    for item in listed(value):
        if PROBE not in str(item):
            values.append(item)
            continue
        probes = params.probes(fmt)
        if not probes:
            raise UsageError(f"{option} {item}: {PROBE} stands for each probe of the params' probes.{fmt}, and "
                             f"{params.label} lists none")
        values += [str(item).replace(PROBE, probe) for probe in probes]
    return values
