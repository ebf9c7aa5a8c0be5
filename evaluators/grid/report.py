"""An evaluation grid's tables and plots: the stored cells' ``metrics.json`` through the report code of the
single runs (``report`` for zero-shot, ``olmpics_report`` for curves and MC-QA, ``pararel_report``,
``calum_report``), each cell's row named by its model and what varies over the grid's cells (``minilm · limit=100``), so
cells that differ only in an option are rows of their own."""

from __future__ import annotations

from pathlib import Path

from evaluators.grid.plan import CELL, RESULT, Planned
from evaluators.grid.reports import CURVES, REPORTS
from probekit import outputs

OUT = "report.md"   # beside it: report.json, and report.png or (curves, MC-QA) a PNG per probe in CURVES
SEPARATOR = " · "
SHOWN = {"curve": ("setting",), "calum": ("task", "multitask")}
"""Options a protocol's report already tells apart (its columns or sections), so not part of a row's label."""


def suffixes(plans: list[Planned]) -> dict[str, str]:
    """``{key: suffix}`` appended to each cell's row name (its model, as its metrics name it): the data folder
    where the report would not tell the cells apart by what their metrics name (ParaRel names no dataset; two
    data folders of one name are the same probe or task), then each option whose value differs between the
    cells, unless the report shows it (``SHOWN``). Empty where nothing varies."""
    shown = SHOWN.get(plans[0].cell.protocol, ()) if plans else ()
    varying = [k for k in dict.fromkeys(k for p in plans for k, _ in p.cell.options)
               if k not in shown and len({repr(dict(p.cell.options).get(k)) for p in plans}) > 1]
    data = list(dict.fromkeys(p.cell.data for p in plans))
    names = {d: Path(d).name or d for d in data}
    show_data = len(data) > 1 and (plans[0].cell.protocol == "pararel" or len(set(names.values())) < len(data))
    if len(set(names.values())) < len(data):
        names = {d: d for d in data}
    out = {}
    for p in plans:
        options = dict(p.cell.options)
        parts = ([f"data={names[p.cell.data]}"] if show_data else []) + [f"{k}={options.get(k)}" for k in varying]
        out[p.key] = "".join(SEPARATOR + part for part in parts)
    return out


def write(plans: list[Planned], store: Path) -> list[Path]:
    """The protocol's report of the stored cells into the store (``report.md`` and beside it); an earlier
    report is removed when no cell is stored. Returns the paths written."""
    from evaluators.shared.report import iter_metrics

    stored = [p for p in plans if (store / "cells" / p.key / CELL).is_file()]
    if not stored:
        for path in (store / OUT, store / "report.json", store / "report.png", store / CURVES):
            outputs.discard(path)   # only what probekit wrote
        return []
    suffix = suffixes(plans)
    found = [(path, m, suffix[p.key], p.key) for p in stored
             for path, m in iter_metrics([store / "cells" / p.key / RESULT])]
    return REPORTS[stored[0].cell.protocol](found, store / OUT)
