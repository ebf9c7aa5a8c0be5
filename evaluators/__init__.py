"""Evaluators: a model and a dataset -> per-example predictions and metrics. One folder per paper (``olmpics``,
``pararel``, ``calum``), the engine that loads and scores models (``engine``), grids of runs (``grid``), the
lm-evaluation-harness export (``harness``) and what the papers share (``shared``).

The library's entry point is :func:`evaluate` (``evaluators.shared.api.evaluate``, docs/api.md): the CLI, the
grid's cells, ``bench/`` and a notebook call it."""

from __future__ import annotations


def evaluate(protocol: str, model: str, data, out, **options):
    """Run ``protocol`` (:data:`probekit.protocols.REGISTRY`) for ``model`` on ``data``, writing ``out``:
    :func:`evaluators.shared.api.evaluate` (imported on the first call, so that importing any evaluator does not
    import the library's entry point)."""
    from evaluators.shared.api import evaluate as run

    return run(protocol, model, data, out, **options)
