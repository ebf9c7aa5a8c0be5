"""The results store of an evaluation grid: ``<out>/cells/<key>/`` holds ``cell.json`` (the cell and its key) and
``result/`` (what the evaluate command wrote: ``predictions.jsonl``, ``metrics.json``...), renamed into place at
once when the run succeeded, and never over a stored cell; a failed run leaves nothing there and is reported with
its key and error. Also the summary of the stored cells (``summary.jsonl``, ``summary.md``)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from evaluators.grid.plan import CELL, RESULT, Cell, Planned
from probekit import outputs
from probekit.data.jsonl import read_json
from probekit.outputs import atomic
from probekit.errors import ProbekitError

HEADLINE = ("accuracy", "C_R", "C_S", "chance", "n", "queries")   # summary.md columns


Command = Callable[[list[str]], int]
"""Runs one ``probes`` command line in this process and returns its exit status (an error of the command comes
back raised, as with ``--debug``): a stand-in for the library call that tests (and a caller with its own command)
may pass instead."""


@dataclass
class Failure:
    key: str
    cell: Cell
    error: str


def run_cell(planned: Planned, store: Path, params: str | None, command: Command | None = None, *,
             raise_crash: bool = False) -> Failure | None:
    """Run one cell, :func:`evaluators.evaluate` with the plan's ``call`` (or its command line through
    ``command``), in this process, in a temporary folder renamed into the store when it succeeded: the cell appears
    complete or not at all, and only once (renaming a folder onto a stored one fails, so a second attempt that
    finishes later keeps the first). An error of the run (bad input: the same on every attempt) comes back as a
    :class:`Failure`; so does a crash (out of memory, a lost file system...), or it is raised with
    ``raise_crash``, for a retry."""
    cells = store / "cells"
    target = cells / planned.key
    if (target / CELL).is_file():   # stored meanwhile (a retried task whose first attempt finished)
        return None
    outputs.mark_store(store)   # cells are added to it, never replaced whole
    err = io.StringIO()
    # what a killed attempt left (its process gone) is removed first; a failed run leaves nothing
    with atomic.staging(cells, planned.key) as tmp, outputs.writing(tmp.parent):
        tmp.mkdir()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), _logged_to(err):
                if command is None:
                    from evaluators import evaluate

                    evaluate(planned.cell.protocol, **{**planned.call, "out": tmp / RESULT, "params": params})
                    rc = 0
                else:
                    rc = command(["--debug", *planned.cell.argv(tmp / RESULT, params)])   # --debug: errors raised
            if rc != 0:
                return Failure(planned.key, planned.cell, _last_line(err.getvalue()) or f"exit status {rc}")
            atomic.write_json(tmp / CELL, {"key": planned.key, **planned.cell.record()})
            outputs.write_marker(tmp, "cell")
            try:
                os.rename(tmp, target)
            except OSError:
                if not (target / CELL).is_file():
                    raise
            return None
        except ProbekitError as exc:
            return Failure(planned.key, planned.cell,
                           f"probes evaluate {planned.cell.protocol}: error: {one_line(exc)}")
        except SystemExit as exc:   # argparse: an option the protocol does not take
            return Failure(planned.key, planned.cell, _last_line(err.getvalue()) or f"exit status {exc.code}")
        except Exception as exc:
            if raise_crash:
                raise
            return Failure(planned.key, planned.cell, f"{type(exc).__name__}: {one_line(exc)}")


@contextlib.contextmanager
def _logged_to(stream) -> Iterator[None]:
    """probekit's log lines go to ``stream`` meanwhile (a cell's, like its output, stay out of the grid's)."""
    log = logging.getLogger("probekit")
    handlers = log.handlers[:]
    log.handlers[:] = [logging.StreamHandler(stream)]
    try:
        yield
    finally:
        log.handlers[:] = handlers


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if "error" in line] or text.splitlines()[-1:]
    return lines[-1] if lines else ""


def summary(plans: list[Planned], store: Path, failures: list[Failure]) -> list[dict]:
    """One row per cell: its key, the cell, its status and the top-level numbers of its ``metrics.json``
    (per file under the result folder, e.g. one per variant; a dict-valued statistic by :func:`_headline`)."""
    failed = {f.key: f.error for f in failures}
    rows = []
    for p in plans:
        result = store / "cells" / p.key / RESULT
        metrics = {}
        for path in sorted(result.rglob("metrics.json")) if result.is_dir() else []:
            m = read_json(path)
            numbers = {k: v for k, v in m.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            numbers |= {k: _headline(v) for k, v in m.items() if isinstance(_headline(v), float)}
            numbers |= {"zero_shot": m["zero_shot"]} if isinstance(m.get("zero_shot"), bool) else {}
            metrics[str(path.parent.relative_to(result)) if path.parent != result else "."] = numbers
        status = "failed" if p.key in failed else "stored" if (store / "cells" / p.key / CELL).is_file() else "missing"
        rows.append({"key": p.key, **p.cell.record(), "status": status, "error": failed.get(p.key),
                     "metrics": metrics})
    return rows


def _headline(stat) -> float | None:
    """The number of a dict-valued statistic: its ``value`` (oLMpics' WS and MAX: the statistic of the
    seed-averaged curve, not a mean of per-seed values) or else its ``mean`` (ParaRel, CALUM: over relations or
    seeds)."""
    if not isinstance(stat, dict):
        return None
    return stat["value"] if "value" in stat else stat.get("mean")


def write_summary(rows: list[dict], out: Path) -> None:
    """``summary.jsonl`` and ``summary.md`` (a row per cell and metrics file: its accuracy-like numbers)."""
    atomic.write_jsonl(out / "summary.jsonl", rows)
    keys = sorted({k for r in rows for m in r["metrics"].values() for k in m if k in HEADLINE})
    lines = ["| key | model | data | options | result | status | " + " | ".join(keys) + " |",
             "| --- | --- | --- | --- | --- | --- |" + " --- |" * len(keys)]
    for r in rows:
        options = ", ".join(f"{k}={v}" for k, v in r["options"].items()) or "–"
        for part, m in (r["metrics"] or {"–": {}}).items():
            cells = " | ".join(_fmt(m.get(k)) for k in keys)
            status = r["status"] + (f": {r['error']}" if r["error"] else "")
            status += " †" if m.get("zero_shot") is False else ""
            lines.append(f"| `{r['key']}` | {r['model']} | {r['data']} | {options} | {part} | {status} | {cells} |")
    note = ("\n† not zero-shot: the model's LM head was newly initialised (metrics.json `zero_shot: false`).\n"
            if any(m.get("zero_shot") is False for r in rows for m in r["metrics"].values()) else "")
    atomic.write_text(out / "summary.md", "# Grid summary\n\n" + "\n".join(lines) + "\n" + note)


def _fmt(value) -> str:
    if value is None:
        return "–"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def prune(plans: list[Planned], store: Path) -> list[str]:
    """Remove the stored cells that are not cells of this plan (an older code version's keys, cells dropped
    from the spec), each only when all of it is probekit's (:func:`probekit.outputs.discard`); returns the keys
    removed. Not for a store other grids share."""
    keep = {p.key for p in plans}
    cells = store / "cells"
    stale = sorted(c.name for c in cells.iterdir() if c.name not in keep and not c.name.startswith(".")) \
        if cells.is_dir() else []
    return [key for key in stale if outputs.discard(cells / key)]   # a cell with files of someone else's is kept


def sweep(store: Path, *, settle: float = 0.0) -> list[str]:
    """Remove what killed attempts left in the store's ``cells/`` (their temporary folders, their processes gone:
    :func:`probekit.outputs.atomic.remove_stale`), whichever cell they were writing; a retry cleans up its own cell's
    at once, this also takes a cell another attempt has since stored. ``settle``: seconds to give a worker killed
    just now to end. Returns the names removed."""
    return atomic.remove_stale(store / "cells", settle=settle)
