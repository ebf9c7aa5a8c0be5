"""What a protocol's run (``evaluators/<paper>/runs.py``, called by :func:`evaluators.evaluate`) takes and returns:
its :class:`Run` records, its params file, its options that take one value or several (``{probe}`` standing for
each probe of a params list); a call's options meet the params' sections in
:meth:`evaluators.protocols.Protocol.settings`.

Keyword options are the protocol's command-line options with ``_`` for ``-`` (``batch_size=8``,
``release_of=["age_comparison"]``); an option left out takes its params' value, as on the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probekit.errors import UsageError
from probekit.params import ParamsFile, read_params


@dataclass(frozen=True)
class Run:
    """One output folder of a protocol's run."""

    out: Path                 # the folder written (metrics.json, predictions...)
    data: Path                # what it read
    metrics: dict = field(default_factory=dict)   # what its metrics.json holds; zero-shot: {variant: metrics}
    probe: str | None = None  # a release file's probe (``release_of``)


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
