"""A live ``[k/N] stage …`` line for each stage ``dvc repro`` (or ``dvc exp run``) starts, read from its output as it
comes, with the time since the command started and, once a stage has ended, an estimate of the time left (the
mean time of the stages ended so far, times the stages left: N is the pipeline's stages, so the estimate is rough
where stages differ in cost). ``probes rehearse`` and ``probes run`` print it; the stages' own output goes to the
log (rehearse) or passes through (run). Each stage's time (from its ``Running stage`` line to the next stage's, or
the command's end) is kept: :attr:`Progress.seconds`."""

from __future__ import annotations

import time
from typing import Callable, TextIO

RUNNING = "Running stage '"
UNCHANGED = "didn't change, skipping"   # "Stage 'x' didn't change, skipping"
FAILED = "failed to reproduce"          # "ERROR: failed to reproduce 'x': ..."


def clock(seconds: float) -> str:
    """``seconds`` as ``1h02m``, ``3m05s`` or ``42s``."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """Reads a dvc command's output line by line (:meth:`feed`), prints a line per stage to ``out``; ``total``: the
    stages the command may run (None: unknown, no estimate)."""

    def __init__(self, out: TextIO, total: int | None = None, now: Callable[[], float] = time.monotonic):
        self.out, self.total, self.now = out, total, now
        self.start = now()
        self.seconds: dict[str, float] = {}   # stage -> seconds, of each stage that ran to its end
        self.unchanged: list[str] = []        # stages dvc found up to date
        self.failed: list[str] = []
        self.current: str | None = None
        self.stopped: list[str] = []          # stages running when their command was stopped (a signal, an error)
        self._since = self.start

    @property
    def count(self) -> int:
        return len(self.seconds) + len(self.unchanged) + (self.current is not None)

    @property
    def completed(self) -> list[str]:
        """The stages that ran to their end, in order (a failed one not among them)."""
        return [s for s in self.seconds if s not in self.failed]

    def _close(self, now: float) -> None:
        if self.current is not None:
            self.seconds[self.current] = now - self._since
            self.current = None

    def _eta(self) -> str:
        ran = list(self.seconds.values())
        if not self.total or not ran:
            return ""
        left = max(self.total - self.count + 1, 0)
        return f", about {clock(sum(ran) / len(ran) * left)} left"

    def feed(self, line: str) -> None:
        text = line.strip()
        if text.startswith(RUNNING):
            now = self.now()
            self._close(now)
            self.current, self._since = text.split("'")[1], now
            of = f"/{self.total}" if self.total else ""
            print(f"  [{self.count}{of}] stage {self.current} ({clock(self._since - self.start)} elapsed"
                  f"{self._eta()})", file=self.out, flush=True)
        elif UNCHANGED in text and text.startswith("Stage '"):
            name = text.split("'")[1]
            if name not in self.seconds and name not in self.unchanged:   # not one an earlier command ran
                self.unchanged.append(name)
        elif FAILED in text and "'" in text:
            for name in text.split("'")[1::2]:
                if name in self.seconds or name == self.current:
                    self.failed.append(name)

    def end(self, finished: bool = True) -> None:
        """The command ended (``finished``: by itself, not stopped by a signal or an error here): the stage running
        is closed, its time kept; or, when stopped, listed in :attr:`stopped` (it did not complete)."""
        if finished:
            self._close(self.now())
        elif self.current is not None:
            self.stopped.append(self.current)
            self.current = None


def follow(cmd: list[str], sink: TextIO, progress: Progress, **popen) -> int:
    """Run ``cmd`` (:func:`probes.children.started`: a signal to ``probes`` ends it and its stages first), each line
    of its output (stdout and stderr) written to ``sink`` as it comes and read by ``progress``; its exit status.
    Python's output unbuffered (``PYTHONUNBUFFERED``), so dvc's lines come as they are printed, not in blocks."""
    import os
    import subprocess

    from probes import children

    env = dict(popen.pop("env", None) or os.environ, PYTHONUNBUFFERED="1")
    finished = False
    try:
        with children.started(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", **popen) as proc:
            for line in proc.stdout:
                sink.write(line)
                sink.flush()
                progress.feed(line)
            code = proc.wait()
        finished = True
    finally:
        progress.end(finished)
    return code
