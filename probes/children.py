"""The commands ``probes`` starts (``dvc`` for ``probes run`` and ``probes rehearse``) stay ours: each runs in a
process group of its own, SIGINT and SIGTERM sent to ``probes`` while it runs go to that whole group (the stage
``dvc`` runs, and its own children, as a Ctrl-C in a terminal reaches them), the group is waited for, and then
:class:`Interrupted` is raised, once no process of it is left. A caller that has something to write first (a partial
report) catches it, writes, and raises it again; probes/main.py exits 128 + the signal's number: 130 (SIGINT), 143
(SIGTERM).

POSIX (Linux, macOS). Elsewhere, or off the main thread (where Python cannot install signal handlers), the command
runs as :func:`subprocess.run` runs it, in this process's group."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

SIGNALS = (signal.SIGINT, signal.SIGTERM)
GRACE = 10.0
"""Seconds the group has to end, once its first process has (on a signal forwarded to it, or when the caller
failed), before the rest is killed (SIGKILL)."""
POLL = 0.05


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM (``signum``) ended the command; ``probes`` exits with :attr:`code`. A KeyboardInterrupt,
    so it unwinds past ``except Exception`` (temporary files are removed on the way) as a Ctrl-C does."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def code(self) -> int:
        return 128 + self.signum


def _raise(signum, frame) -> None:
    raise Interrupted(signum)


@contextmanager
def terminable() -> Iterator[None]:
    """SIGTERM raises :class:`Interrupted` while the block runs (a plain KeyboardInterrupt is SIGINT's already), so a
    command ended by ``kill PID`` unwinds and cleans up as on a Ctrl-C, instead of dying where it stands. Nothing
    off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ours() -> bool:
    return os.name == "posix" and threading.current_thread() is threading.main_thread()


def _signal(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):   # gone (PermissionError: macOS, a group of zombies)
        pass


def _alive(group: int) -> bool:
    """Whether a process of ``group`` still runs (a zombie, dead but not yet reaped by its parent, does not)."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").is_file():
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()   # after "pid (command)": state, ppid, pgrp, ...
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False


def _end(proc: subprocess.Popen, ending: bool) -> None:
    """Wait for ``proc``; when ``ending`` (a signal came, or the caller failed), then for every process of its group:
    :data:`GRACE` seconds, then SIGKILL (and at most as long again for that)."""
    proc.wait()
    if not ending:
        return
    for last in (signal.SIGKILL, None):
        deadline = time.monotonic() + GRACE
        while _alive(proc.pid):
            if time.monotonic() > deadline:
                break
            time.sleep(POLL)
        else:
            return
        if last is not None:
            _signal(proc.pid, last)


@contextmanager
def started(cmd: Sequence[str], **popen) -> Iterator[subprocess.Popen]:
    """``cmd`` started (:class:`subprocess.Popen` with ``popen``) in a process group of its own; while the block
    runs, SIGINT and SIGTERM go to that group. Leaving the block waits for the command (and, after a signal or an
    error in the block, for every process of its group), then raises :class:`Interrupted` if a signal came. The
    block may read the command's output as it comes (``stdout=subprocess.PIPE``)."""
    if not _ours():
        with subprocess.Popen(cmd, **popen) as proc:
            yield proc
        return
    got: list[int] = []
    proc = None

    def forward(signum, frame):
        got.append(signum)
        if proc is not None:
            _signal(proc.pid, signum)

    previous = {s: signal.signal(s, forward) for s in SIGNALS}
    try:
        proc = subprocess.Popen(cmd, process_group=0, **popen)
        if got:   # came while it started
            _signal(proc.pid, got[0])
        failed = False
        try:
            yield proc
        except BaseException:
            failed = True
            _signal(proc.pid, signal.SIGTERM)
            raise
        finally:
            _end(proc, failed or bool(got))
            for stream in (proc.stdout, proc.stderr, proc.stdin):
                if stream is not None:
                    stream.close()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if got:
        raise Interrupted(got[0])


def run(cmd: Sequence[str], **popen) -> int:
    """``cmd`` run to its end (:func:`started`); its exit status. :class:`Interrupted` when SIGINT or SIGTERM came
    meanwhile (after the command's whole group has ended)."""
    with started(cmd, **popen) as proc:
        return proc.wait()
