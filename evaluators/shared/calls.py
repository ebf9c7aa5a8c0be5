"""What a protocol's run (``evaluators/<paper>/runs.py``, called by :func:`evaluators.evaluate`) takes and returns:
its :class:`Run` records, its params file, its options that take one value or several (``{probe}`` standing for
each probe of a params list), and :func:`over`, the one place where a call's options meet the params' sections.

Keyword options are the protocol's command-line options with ``_`` for ``-`` (``batch_size=8``,
``release_of=["age_comparison"]``); an option left out takes its params' value, as on the command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from probekit.errors import UsageError
from probekit.params import ParamsFile, read_params

M = TypeVar("M", bound=BaseModel)


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


def over(section: M, **given: Any) -> M:
    """``section`` (a params section's typed model, as :func:`probekit.params.section` read it) with the call's
    values ``given`` over its own, each validated as the section's field (a bad value fails before any work, naming
    it); a value of None is one the call left out, so the params' value stays. Every run merges its options over the
    params through this one function (``batch_size=None``: the params' ``scoring.batch_size``)."""
    given = {k: v for k, v in given.items() if v is not None}
    unknown = sorted(set(given) - set(type(section).model_fields))
    if unknown:
        raise TypeError(f"{type(section).__name__} has no field {', '.join(unknown)}")
    if not given:
        return section
    try:
        return type(section).model_validate({**section.model_dump(), **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{where}: {err['msg']} (got {given.get(err['loc'][0])!r})") from None
