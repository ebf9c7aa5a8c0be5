"""The report of each protocol an evaluation grid runs, declared here beside its code (``@reports``): a grid runs the
protocols that have one (:data:`REPORTS`), each stored cell's ``metrics.json`` through the report code of the single
runs (``report`` for zero-shot, ``olmpics_report`` for curves and MC-QA, ``pararel_report``, ``calum_report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

CURVES = "report_curves"   # the curves' and MC-QA's PNG per probe, beside report.md

REPORTS: dict[str, Callable] = {}
"""protocol -> its grid report ``(found, out) -> paths written``: the protocols a grid runs, in declaring order."""


def reports(*protocols: str) -> Callable[[Callable], Callable]:
    """Decorator: the function is the grid report of ``protocols``."""
    def register(function: Callable) -> Callable:
        for name in protocols:
            REPORTS[name] = function
        return function
    return register


Found = list[tuple[Path, dict, str, str]]
"""The stored runs' metrics, as a protocol's grid report reads them: ``(metrics.json path, metrics, the row name's
suffix, the cell's key)`` each."""


@reports("zeroshot")
def zeroshot(found: Found, out: Path) -> list[Path]:
    """Zero-shot MC: the ``report`` stage's tables and plot."""
    from evaluators.shared import report

    df = report.frame((path, {**m, "model": m["model"] + end}) for path, m, end, _ in found)
    return report.write(df, out=out, metrics=out.with_suffix(".json"), plot=out.with_suffix(".png"))


@reports("curve", "mcqa")
def curves(found: Found, out: Path) -> list[Path]:
    """Learning curves (MC-MLM, MC-QA): ``olmpics_report``'s tables and a plot per probe in :data:`CURVES`."""
    from evaluators.olmpics.report import write_results

    relabelled = [(path, _curve_named(m, end)) for path, m, end, _ in found]
    return write_results(relabelled, out_md=out, out_json=out.with_suffix(".json"), plots=out.parent / CURVES)


@reports("pararel")
def pararel(found: Found, out: Path) -> list[Path]:
    """ParaRel: a row per run, named by its model."""
    from evaluators.pararel.report import write_results

    write_results({m["model"] + end: m for _, m, end, _ in found}, out, plot_path=out.with_suffix(".png"))
    return [out, out.with_suffix(".json"), out.with_suffix(".png")]


@reports("calum")
def calum(found: Found, out: Path) -> list[Path]:
    """CALUM: a row per model, a column per task; the runs are the cells."""
    from evaluators.calum.report import write_results

    write_results({key: {**m, "model": m["model"] + end} for _, m, end, key in found}, out, out.with_suffix(".png"))
    return [out, out.with_suffix(".json"), out.with_suffix(".png")]


def _curve_named(m: dict, suffix: str) -> dict:
    """A curve's metrics with the suffix on its row name: the baseline's name, or the model's."""
    row = "baseline" if m.get("baseline") else "model"
    return {**m, row: m[row] + suffix}
