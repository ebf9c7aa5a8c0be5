"""The commands ``probes`` starts (``dvc`` for ``probes run`` and ``probes rehearse``) stay ours and stop within
seconds of a Ctrl-C. Each runs in a process group of its own. The first SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to
``probes`` while it runs goes to that whole group (the stage ``dvc`` runs, and its own children, as a Ctrl-C in a
terminal reaches them, so they can clean up), and SIGTERM to the command itself, which a Python command (``dvc``)
takes as a Ctrl-C (:data:`STOPPABLE`): DVC ignores SIGINT while a stage runs and, under ``--keep-going``, would
start the next stage. The group then has :data:`GRACE` seconds to end, :data:`SHORT` after a second signal, before
the rest is killed (SIGKILL). Once no process of it is left, :class:`Interrupted` is raised. A caller that has
something to write first (a partial report) catches it, writes, and raises it again; probes/main.py exits 128 + the
signal's number: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP), 131 (SIGQUIT).

POSIX (Linux, macOS). Elsewhere, or off the main thread (where Python cannot install signal handlers), the command
runs as :func:`subprocess.run` runs it, in this process's group."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, n))
"""What stops the command: Ctrl-C, ``kill``, the terminal closed (an ssh session dropped), Ctrl-\\. Python's default
for the last two kills ``probes`` at once, which left ``dvc`` (in a group of its own) running on, its locks taken."""
GRACE = 5.0
"""Seconds the command's group has to end after the first signal (or once the caller failed), before the rest is
killed (SIGKILL): a stage's cleanup."""
SHORT = 1.0
"""Seconds it has after a second signal (a second Ctrl-C), before SIGKILL."""
POLL = 0.05

STOPPABLE = """import os, runpy, signal, sys
stopping = []
def stop(signum, frame):   # the first SIGINT or SIGTERM: one KeyboardInterrupt; what comes after is the caller's
    if not stopping:
        stopping.append(signum)
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
sys.argv = sys.argv[1:]
if sys.path and sys.path[0] == "":
    sys.path[0] = os.path.dirname(os.path.realpath(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""
"""How a Python command (``dvc``) runs (:func:`stoppable`): the script itself, its first SIGINT or SIGTERM one
KeyboardInterrupt. DVC ignores SIGINT while a stage's command runs, and Python's default for SIGTERM dies where it
stands (a lock taken, ``dvc.lock`` half written); a KeyboardInterrupt unwinds DVC as its own Ctrl-C between stages
does, its locks released on the way. A second interrupt while it unwinds is not raised there (the grace ends it)."""
PYTHON = re.compile(r"python[0-9.]*")


def _interpreter(script: Path) -> list[str] | None:
    """The Python that ``script`` runs with (its ``#!`` line, or the ``exec`` line pip writes under ``#!/bin/sh``
    for a long interpreter path), or None when it is not a Python script."""
    try:
        with open(script, "rb") as fh:
            head = fh.read(1024).decode("utf-8", errors="replace").splitlines()
        words = shlex.split(head[0][2:]) if head and head[0].startswith("#!") else []
        pip = "'''exec' "
        if words == ["/bin/sh"] and len(head) > 1 and head[1].startswith(pip):
            words = shlex.split(head[1][len(pip):])[:-2]   # '''exec' "PYTHON" "$0" "$@"
    except (OSError, ValueError):
        return None
    return words if any(PYTHON.fullmatch(Path(w).name) for w in words[:3]) else None


def stoppable(cmd: Sequence[str], popen: dict) -> list[str]:
    """``cmd`` as :func:`started` runs it: a Python script (``dvc``, found on the ``PATH`` the command gets) through
    :data:`STOPPABLE`; any other command as it is."""
    name = str(cmd[0])
    if os.sep in name:
        found = str(Path(popen.get("cwd") or ".", name))
    else:
        found = shutil.which(name, path=(popen.get("env") or os.environ).get("PATH", os.defpath))
    python = _interpreter(Path(found)) if found else None
    return [*python, "-c", STOPPABLE, found, *map(str, cmd[1:])] if python else list(cmd)


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


class _Ending:
    """When the command's group is killed: a deadline (:meth:`arm`) that a thread of its own keeps (:meth:`watch`),
    so that it holds while the caller's block waits on the command's output (a stage that ignores the signal keeps
    the pipe open)."""

    def __init__(self, group: int):
        self.group, self.deadline = group, None
        self.done = threading.Event()
        threading.Thread(target=self.watch, name="probes-children", daemon=True).start()

    def arm(self, seconds: float) -> None:
        then = time.monotonic() + seconds
        self.deadline = then if self.deadline is None else min(self.deadline, then)

    def watch(self) -> None:
        while not self.done.wait(POLL):
            if self.deadline is not None and time.monotonic() > self.deadline:
                _signal(self.group, signal.SIGKILL)


def _stop(proc: subprocess.Popen, signum: int, nth: int, ending: _Ending) -> None:
    """The ``nth`` signal ``signum`` to ``probes``: to the command's group (SIGINT as it is, any other as SIGTERM, which
    a stage run by ``probes`` unwinds on); the first also as SIGTERM to the command itself (:data:`STOPPABLE`), with
    :data:`GRACE` for the group to end, a later one with :data:`SHORT`."""
    signum = signum if signum == signal.SIGINT else signal.SIGTERM
    _signal(proc.pid, signum)
    if nth == 1 and signum != signal.SIGTERM and proc.returncode is None:   # not reaped: its pid is its own
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    ending.arm(GRACE if nth == 1 else SHORT)


def _end(proc: subprocess.Popen, ending: _Ending) -> None:
    """Wait for ``proc``; once ``ending`` is armed (a signal came, or the caller failed), then for every process of
    its group, killed at the ending's deadline (and at most :data:`GRACE` after it)."""
    proc.wait()
    if ending.deadline is None:
        return
    while _alive(proc.pid) and time.monotonic() < (ending.deadline or 0) + GRACE:
        time.sleep(POLL)


@contextmanager
def started(cmd: Sequence[str], **popen) -> Iterator[subprocess.Popen]:
    """``cmd`` started (:class:`subprocess.Popen` with ``popen``; a Python script through :func:`stoppable`) in a
    process group of its own; while the block runs, SIGINT and SIGTERM stop it (:func:`_stop`). Leaving the block
    waits for the command (and, after a signal or an error in the block, for every process of its group), then
    raises :class:`Interrupted` if a signal came. The block may read the command's output as it comes
    (``stdout=subprocess.PIPE``)."""
    if not _ours():
        with subprocess.Popen(cmd, **popen) as proc:
            yield proc
        return
    got: list[int] = []
    handled = 0
    proc = ending = None

    def forward(signum=None, frame=None):   # also once started: the signals that came while it started
        nonlocal handled
        if signum is not None:
            got.append(signum)
        while ending is not None and handled < len(got):
            handled += 1
            _stop(proc, got[handled - 1], handled, ending)

    previous = {s: signal.signal(s, forward) for s in SIGNALS}
    try:
        proc = subprocess.Popen(stoppable(cmd, popen), process_group=0, **popen)
        ending = _Ending(proc.pid)
        forward()
        try:
            yield proc
        except BaseException:
            _signal(proc.pid, signal.SIGTERM)
            ending.arm(GRACE)
            raise
        finally:
            try:
                _end(proc, ending)
            finally:
                ending.done.set()
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
