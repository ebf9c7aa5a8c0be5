"""Independent runs spread over the CPU's cores: a learning curve's (N, seed) runs on cached features each train a
small head, whose operations are too small for intra-op threads (:func:`evaluators.shared.training.one_thread`), so
one run keeps one core busy and the others idle. :func:`each` runs them in forked processes of one thread each
instead. A run is a function of its inputs alone (it seeds what it draws), and one thread computes it with the same
operations in a child as in the parent, so the results are bit for bit those of running them one after another
(tested)."""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Callable, TypeVar

import torch

T = TypeVar("T")

_WORK: Callable[[int], object] | None = None
"""The work of the forked children (they inherit it: a closure over the parent's tensors needs no pickling)."""


def _one(i: int) -> tuple[int, object]:
    return i, _WORK(i)


def _one_thread() -> None:
    torch.set_num_threads(1)


def can_fork() -> bool:
    """Whether runs may go to forked children: Linux (macOS's frameworks are not safe to fork, Windows has no fork),
    and not a daemonic process (a multiprocessing pool's worker may have no children)."""
    return sys.platform.startswith("linux") and not multiprocessing.current_process().daemon


def _stop(pool: ProcessPoolExecutor) -> None:
    """End ``pool`` now: its queued runs cancelled, its workers terminated (they hold nothing but their run), so
    that a Ctrl-C or a failed run does not wait for every run still queued (the pool's own exit would)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())   # no public way before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.terminate()


def each(work: Callable[[int], T], n: int, processes: int, done: Callable[[], None] | None = None,
         cost: Callable[[int], float] | None = None) -> list[T]:
    """``[work(0), ..., work(n - 1)]``, on up to ``processes`` forked processes of one intra-op thread each (one after
    another in this process when ``processes`` <= 1, ``n`` <= 1 or :func:`can_fork` is false). ``work`` must only read
    what it closes over and return picklable values; ``done()`` is called as each run ends (a progress bar);
    ``cost(i)``: run ``i``'s expected time, the costliest handed out first (so that the last runs are short and the
    processes end together). A run's exception is raised here; a child that dies (killed, out of memory) is
    ``BrokenProcessPool``. Either, or a Ctrl-C, ends the other runs at once (:func:`_stop`)."""
    global _WORK
    processes = min(processes, n)
    if processes <= 1 or not can_fork():
        out = []
        for i in range(n):
            out.append(work(i))
            if done is not None:
                done()
        return out
    results: list = [None] * n
    _WORK = work
    try:
        # fork: the children are made at the first submit, all at once, before the executor starts its thread
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_one_thread) as pool:
            order = sorted(range(n), key=lambda i: -cost(i)) if cost is not None else range(n)
            try:
                for future in as_completed([pool.submit(_one, i) for i in order]):
                    i, result = future.result()
                    results[i] = result
                    if done is not None:
                        done()
            except BaseException:
                _stop(pool)
                raise
    finally:
        _WORK = None
    return results
