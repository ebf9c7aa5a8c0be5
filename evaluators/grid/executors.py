"""Executors of an evaluation grid: the missing cells one after another in this process (``local``), or as Ray
tasks on a cluster (``ray``); both count done / cached / failed cells with one progress bar. A cell calls
:func:`evaluators.evaluate` (or runs its command line through a ``command`` the caller passes)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from evaluators.grid.plan import Cell, Planned
from evaluators.grid.store import Command, Failure, one_line, run_cell, sweep

SETTLE = 10.0
"""Seconds a run gives the workers killed during it to end, before it removes their temporary folders."""


def run_local(plans: list[Planned], store: Path, params: str | None, command: Command | None = None, *,
              progress: bool = True) -> list[Failure]:
    """The missing cells, one after another in this process, a model that scores kept loaded from one cell to
    the next; a progress bar counts done / cached / failed."""
    from evaluators.engine.kept_models import keeping

    sweep(store)
    with keeping(1):
        return _tally(plans, (run_cell(p, store, params, command) for p in plans if not p.cached), progress)


def _tally(plans: list[Planned], outcomes: Iterable[Failure | None], progress: bool) -> list[Failure]:
    """The failures among the missing cells' outcomes (as they come), with a progress bar of done / cached /
    failed cells."""
    from tqdm.auto import tqdm

    failures, done, cached = [], 0, sum(p.cached for p in plans)
    with tqdm(total=len(plans), initial=cached, desc="cells", unit="cell", disable=not progress) as bar:
        bar.set_postfix(done=done, cached=cached, failed=0)
        for failure in outcomes:
            if failure:
                failures.append(failure)
            else:
                done += 1
            bar.update()
            bar.set_postfix(done=done, cached=cached, failed=len(failures))
    return failures


def _ray_cell(planned: Planned, store: str, params: str | None, cwd: str, command: Command | None) -> Failure | None:
    """A Ray task: one cell, run from the driver's working directory (the spec's relative paths). The
    command's own error comes back as the task's value (the same on every attempt); a crash raises, so Ray
    retries it (``retry_exceptions``), as it does a task whose worker died. The worker keeps its last scoring
    model loaded for the next cell (cells are submitted model by model)."""
    import os

    from evaluators.engine.kept_models import keep

    os.chdir(cwd)
    keep(1)
    return run_cell(planned, Path(store), params, command, raise_crash=True)


def run_ray(plans: list[Planned], store: Path, params: str | None, command: Command | None = None, *,
            address: str | None = None, retries: int = 2, progress: bool = True) -> list[Failure]:
    """The missing cells as Ray tasks (a GPU each for a cell with ``device: cuda...``, or ``auto`` on a cluster
    with GPUs; a CPU otherwise) on a running cluster (``address``) or a local Ray; a task whose worker dies or
    whose cell crashes is retried ``retries`` times, then reported with its error (a cell the command rejects,
    e.g. a bad model path, is reported at once), the other cells unaffected; what killed attempts left on this host
    is removed at the end. Every node must see the store, and
    the driver's working directory (the spec's relative paths), at the same paths; a ``command`` travels to the
    workers by reference (a module-level function every node can import)."""
    import ray

    ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR", runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}})
    task = ray.remote(max_retries=retries, retry_exceptions=True)(_ray_cell)
    has_gpu = ray.cluster_resources().get("GPU", 0) >= 1

    def gpus(cell: Cell) -> int:   # device auto: a GPU when the cluster has one (a task without sees none)
        device = str(dict(cell.options).get("device", ""))
        return int(device.startswith("cuda") or (device == "auto" and has_gpu))

    pending = {task.options(num_cpus=1, num_gpus=gpus(p.cell)).remote(p, str(store.resolve()), params,
                                                                       str(Path.cwd()), command): p
               for p in plans if not p.cached}

    def outcomes():
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            planned = pending.pop(ready[0])
            try:
                failure = ray.get(ready[0])
            except Exception as exc:   # a crash past its retries, or Ray's error (a worker lost past its retries)
                cause = getattr(exc, "cause", None) or exc
                failure = Failure(planned.key, planned.cell, f"{type(cause).__name__}: {one_line(cause)}"[-400:])
            yield failure

    sweep(store)
    failures = _tally(plans, outcomes(), progress)
    # a worker killed during the run may still be ending when Ray has retried its cell: its temporary folder goes
    sweep(store, settle=SETTLE)
    return failures
