"""Evaluators: a model and a dataset -> per-example predictions and metrics. One folder per paper (``olmpics``,
``pararel``, ``calum``), each declaring its protocols in its ``runs`` module (:mod:`evaluators.protocols`), the engine
that loads and scores models (``engine``), grids of runs (``grid``), the lm-evaluation-harness export (``harness``)
and what the papers share (``shared``).

The library's entry point is :func:`evaluate` (docs/api.md): the ``probes evaluate`` commands, the grid's cells,
``bench/`` and a notebook call it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def evaluate(protocol: str, model: str, data: Any, out: str | Path, *, params: Any = None, device: str = "auto",
             force: bool = False, **options) -> list:
    """Run ``protocol`` (:func:`evaluators.protocols.every`: zero-shot MC, the MC-MLM features and curves, MC-QA,
    ParaRel, consistency training, CALUM) for ``model`` (an alias of the params' ``models``, a folder,
    ``pkg:<package>`` or a Hub id) on ``data`` (a dataset folder or file; a list of them where the protocol takes
    several, ``out`` then holding ``{probe}``), writing into ``out``.

    ``params``: a params file (default: ``./params.yaml`` when present, else the built-in defaults); ``device``:
    ``auto`` (CUDA when torch sees a GPU), ``cpu``, ``cuda:N``, ``mps``; ``force``: replace an output folder
    probekit did not write; ``options``: the protocol's command-line options with ``_`` for ``-`` (``batch_size=8``),
    each left out taking its params' value. It reads the params, checks that the protocol applies to the model (else
    it writes the skipped ``metrics.json`` and returns nothing), loads the model once and runs every dataset.
    Returns one :class:`evaluators.shared.calls.Run` per output folder."""
    from evaluators import protocols
    from evaluators.shared.calls import listed
    from probekit import outputs
    from probekit.device import check_device
    from probekit.errors import UsageError
    from probekit.outputs import overlap

    record = protocols.get(protocol)
    if record.run is None:
        runnable = ", ".join(name for name, p in protocols.every().items() if p.run)
        raise UsageError(f"protocol {protocol!r} has no run of its own (the protocols evaluate runs: {runnable})")
    check_device(device)
    reads = [(flag, p) for flag, values in (("--data", data), ("--model", model)) for p in listed(values)]
    # a folder claimed with force: replaced by this call only; no output may overlap what it reads
    with outputs.claims(), overlap.reading(reads):
        return record.run(model, data, out, params=params, device=device, force=force, **options)
