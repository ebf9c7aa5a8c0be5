"""A replace has no window: a real process that writes over an existing output, killed (SIGKILL) or interrupted
(SIGINT, as Ctrl-C) at each step of its write in turn, leaves at the target exactly the old output or exactly the new
one, every file's bytes; and the next write of that target cleans up what it left and succeeds.

The steps are the audit events the write raises (``open``, ``os.rename``, ``os.mkdir``, ``os.listdir``,
``shutil.rmtree``, ``os.remove``...: every change to the disk comes after one); the n-th kill stops the write just
before its n-th event, for every n up to their number. Each run is a process forked from one that has imported
probekit already, so a series of some hundred kills takes a few seconds."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from probekit.outputs import atomic

ZYGOTE = r"""
import errno, json, os, shutil, signal, sys
from pathlib import Path
from probekit.outputs import atomic

shape, sig, fallback, template, base = sys.argv[1:6]
sig = getattr(signal, sig)
signal.signal(signal.SIGINT, signal.default_int_handler)
if fallback == "1":   # a file system without an exchange rename
    def no_exchange(a, b):
        raise OSError(errno.EINVAL, "no exchange here")
    atomic.exchange.swap = no_exchange


def write(out):
    if shape == "folder":
        with atomic.atomic_path(out, kind="results") as tmp:
            (tmp / "v").mkdir(parents=True)
            (tmp / "v" / "rows.jsonl").write_text("new rows\n")
            (tmp / "summary.json").write_text('{"new": 1}\n')
    else:
        atomic.write_text(out, "new text\n")


def child(n, work):
    state = {"count": 0, "quiet": False}

    def hook(event, args):
        if state["quiet"]:
            return
        state["count"] += 1
        if state["count"] == n:
            state["quiet"] = True
            os.kill(os.getpid(), sig)   # SIGKILL ends it here; SIGINT raises KeyboardInterrupt (later, if held back)
            state["quiet"] = False

    sys.addaudithook(hook)
    try:
        write(work / "out")
    except KeyboardInterrupt:
        os._exit(3)
    except BaseException:
        import traceback
        traceback.print_exc()
        os._exit(4)
    state["quiet"] = True
    (work.parent / f"{work.name}.count").write_text(str(state["count"]))
    os._exit(0)


def run(n, work):
    shutil.copytree(template, work, symlinks=True)
    pid = os.fork()
    if pid == 0:
        child(n, work)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


base = Path(base)
whole = run(10 ** 9, base / "whole")
total = int((base / "whole.count").read_text())
print(json.dumps({"whole": whole, "total": total, "status": [run(n, base / str(n)) for n in range(1, total + 1)]}))
"""


def snapshot(path: Path) -> dict[str, str] | None:
    """Every file at ``path`` (a file, or a folder's files by relative path) with its sha256; None when missing."""
    if not os.path.lexists(path):
        return None
    if path.is_file():
        return {"": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
            for p in sorted(path.rglob("*"))}


def write(out: Path, shape: str, text: str) -> None:
    if shape == "folder":
        with atomic.atomic_path(out, kind="results") as tmp:
            (tmp / "v").mkdir(parents=True)
            (tmp / "v" / "rows.jsonl").write_text(f"{text} rows\n")
            (tmp / "old-only.txt").write_text("old\n")
    else:
        atomic.write_text(out, f"{text} text\n")


@pytest.mark.parametrize("shape, sig, fallback", [
    ("folder", "SIGKILL", False), ("folder", "SIGINT", False), ("file", "SIGKILL", False), ("file", "SIGINT", False),
    ("folder", "SIGKILL", True), ("folder", "SIGINT", True)])
def test_a_write_stopped_at_any_step_leaves_the_old_output_or_the_new_one(tmp_path, shape, sig, fallback):
    """``fallback``: as on a file system without an exchange rename; a SIGKILL between its two renames leaves the old
    folder in the temporary folder, which the next write (:func:`atomic.remove_stale`) puts back first; a Ctrl-C
    there waits until both are done."""
    template = tmp_path / "template"
    template.mkdir()
    (template / "keep.txt").write_text("the user's\n")
    write(template / "out", shape, "old")
    old = snapshot(template / "out")
    base = tmp_path / "runs"
    base.mkdir()
    done = subprocess.run([sys.executable, "-c", ZYGOTE, shape, sig, "1" if fallback else "0", str(template),
                           str(base)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    new = snapshot(base / "whole" / "out")
    assert report["whole"] == 0 and new not in (None, old) and report["total"] > 10
    expected = {"keep.txt", "out"} | ({".probekit-files.json"} if shape == "file" else set())
    stopped, seen = -signal.SIGKILL if sig == "SIGKILL" else 3, set()
    for n, status in enumerate(report["status"], 1):
        work = base / str(n)
        assert status == stopped, f"step {n}: exit status {status}"
        left = snapshot(work / "out")
        if left is None and fallback and sig == "SIGKILL":   # killed between the two renames
            seen.add("put back")
            atomic.remove_stale(work, "out")   # what the next write does first
            left = snapshot(work / "out")
        assert left in (old, new), f"stopped at step {n} of {report['total']}: the target holds {left}"
        seen.add("old" if left == old else "new")
        assert (work / "keep.txt").read_text() == "the user's\n"
        write(work / "out", shape, "third")   # the next write: cleans up and replaces it (it is ours, recorded)
        assert sorted(p.name for p in work.iterdir()) == sorted(expected), f"step {n}"
        assert (work / "out" / "v" / "rows.jsonl" if shape == "folder" else work / "out").read_text()[:5] == "third"
    assert seen == {"old", "new"} | ({"put back"} if fallback and sig == "SIGKILL" else set())
