"""Atomic writes: an interrupted run never leaves a half-written file or folder in place."""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from probekit import outputs
from probekit.outputs import guard


@contextmanager
def atomic_path(target: str | os.PathLike, *, kind: str | None = None, edit: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success move it onto ``target``: the output appears whole or
    not at all. A folder is marked as ``kind``'s output (:func:`probekit.outputs.write_marker`: every file with its
    size and sha256) and replaces only a folder of ours of that kind; a file replaces only a loose file of ours and
    is recorded in its folder's ledger (:mod:`probekit.outputs`; ``--force`` claims lift that). ``edit``: a file the
    user edits too (``params.yaml``), which the caller read and keeps: replaced whatever it holds, not recorded.
    Inside a folder being written, paths are written as they are (the outer folder is checked and marked whole).

    The one thing ever removed is this call's own temporary folder (holding, once the new output is in place, the
    old one it replaced), and such a folder that an interrupted write of the same target left (its process gone,
    proven by the note probekit put in it). A full disk or a read-only folder is an :class:`OutputError` naming
    ``target``."""
    text = os.fspath(target)
    target = outputs.normal(target)
    if not text or target.name in ("", ".", ".."):
        raise outputs.OutputError(f"{text or repr('')}: not a name to write to; give a file or folder name")
    inner = outputs.inside_writing(target)
    with staging(target.parent, target.name, clean=not inner) as tmp:
        holder = tmp.parent
        try:
            with outputs.writing(holder):
                yield tmp
            folder = tmp.is_dir() and not tmp.is_symlink()
            if folder and not inner:
                if kind is None:
                    raise ValueError(f"{target}: a folder output needs its kind (one of {', '.join(outputs.KINDS)})")
                outputs.write_marker(tmp, kind)
            if not inner and not edit and (target.exists() or target.is_symlink()):
                outputs.check_replace(target, kind) if folder else outputs.check_file(target)
            if target.is_symlink():
                os.unlink(target)   # claimed with --force: the link is replaced, never what it points to
            elif target.is_dir():
                os.replace(target, holder / _OLD)
            os.replace(tmp, target)
            guard.written(target)
            if not folder and not inner and not edit:
                outputs.record_loose(target)
        except OutputError as exc:
            raise exc.at(target) from exc.__cause__
        except OSError as exc:
            if exc.errno not in _DISK:
                raise
            raise _disk_error(target, exc) from exc


@contextmanager
def staging(parent: Path, name: str, *, clean: bool = True) -> Iterator[Path]:
    """A new temporary folder in ``parent`` for what becomes ``parent / name``, holding the note that proves it
    probekit's (:data:`_NOTE`); yields the path to build inside it (``<holder>/<name>``, not yet made) and removes the
    holder with whatever is left in it. ``clean``: first remove what an interrupted write of the same name left
    (:func:`remove_stale`). A full disk or a read-only folder is an :class:`OutputError` naming ``parent / name``."""
    target = parent / name
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if clean:
            remove_stale(parent, name)
        holder = Path(tempfile.mkdtemp(prefix=f".{name}.{_tag()}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise _disk_error(target, exc) from exc
    try:
        (holder / _NOTE).write_text(_note(name, os.getpid(), _HOST), encoding="utf-8")
        yield holder / name
    except OSError as exc:
        if exc.errno not in _DISK:
            raise
        raise _disk_error(target, exc) from exc
    finally:
        shutil.rmtree(holder, ignore_errors=True)


_NOTE = ".probekit-temporary.json"
"""The note inside each temporary folder of :func:`atomic_path`: whose it is, so that only probekit's own leftovers
are ever removed (a user's ``.draft.md.tmp`` is not)."""
_OLD = ".old"
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _note(name: str, pid: int, host: str) -> str:
    """The text of the note in a temporary folder of ``name`` made by process ``pid`` of ``host``."""
    return json.dumps({"written_by": "probekit", "temporary_of": name, "pid": pid, "host": host}) + "\n"


def _tag() -> str:
    """This process, in the names of its temporary files: ``<pid>-<host hash>`` (a forked worker has its own)."""
    return f"{os.getpid()}-{_HOST}"


_DISK = {errno.ENOSPC: "the disk is full (no space left on the device)", errno.EDQUOT: "the disk quota is exceeded",
         errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
         errno.EPERM: "permission denied"}


class OutputError(outputs.OutputError):
    """A write that failed on the disk (full, read-only, not permitted); names the output the user asked for."""

    def __init__(self, target: Path, reason: str):
        super().__init__(f"{target}: cannot write it: {reason}")
        self.target, self.reason = target, reason

    def at(self, target: Path) -> "OutputError":
        """The same failure, said of ``target`` (an outer write holding this one: what the user named)."""
        return OutputError(target, self.reason)


def _disk_error(target: Path, exc: OSError) -> OSError | OutputError:
    reason = disk_reason(exc)
    return OutputError(target, reason) if reason else exc


def disk_reason(exc: OSError) -> str | None:
    """What a failed write ran into, in the user's words (the disk is full, the file system is read-only,
    permission denied), or None for another error."""
    return _DISK.get(exc.errno)


def remove_stale(parent: Path, name: str | None = None, *, settle: float = 0.0) -> list[str]:
    """Remove the temporary folders interrupted writes left in ``parent``, of the target ``name`` or of any:
    named as :func:`atomic_path` names them, of a process of this host that is gone, and either holding its note for its
    target, or holding nothing but the start of that note (the writer was killed between making the folder and
    finishing its note: the folder holds no byte probekit did not write). ``settle``: seconds to wait for a writer
    still alive to end (a worker killed just now may still be tearing down after its pool has moved on); one that
    outlives it is left, a write in progress. Returns the names removed."""
    holders, removed = _holders(parent, name), []
    deadline = time.monotonic() + settle
    while holders:
        live = []
        for entry, pid in holders:
            if _alive(pid):
                live.append((entry, pid))
            else:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry.name)
        if not live or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
        holders = live
    return sorted(removed)


def _holders(parent: Path, name: str | None = None) -> list[tuple[Path, int]]:
    """The temporary folders in ``parent`` (of ``name``, or of any target) proven probekit's and of this host,
    each with the pid of the process that made it."""
    target = re.escape(name) if name is not None else r".+"
    pattern = re.compile(rf"\.(?P<name>{target})\.(?P<pid>\d+)-(?P<host>[0-9a-f]{{8}})\.[\w-]+\.tmp")
    found = []
    for entry in parent.glob(f".{glob.escape(name)}.*" if name is not None else ".*.tmp"):
        match = pattern.fullmatch(entry.name)
        if not match or match["host"] != _HOST or entry.is_symlink() or not entry.is_dir():
            continue
        pid = int(match["pid"])
        if _proven(entry, _note(match["name"], pid, match["host"])):
            found.append((entry, pid))
    return found


def _proven(holder: Path, note: str) -> bool:
    """Whether ``holder`` is probekit's temporary folder whose note is ``note``: it holds that note, or it holds
    nothing but a start of it (empty, or a note cut short by a kill)."""
    try:
        held = (holder / _NOTE).read_bytes()
    except FileNotFoundError:
        held = None
    except OSError:
        return False
    if held is not None and held.strip():
        try:
            if json.loads(held) == json.loads(note):
                return True
        except ValueError:
            pass
    try:
        others = [e for e in os.listdir(holder) if e != _NOTE]
    except OSError:
        return False
    return not others and (held is None or note.encode().startswith(held))


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this host may still write. A zombie (killed, its parent has not waited for it yet:
    a pool's worker) still answers signal 0, so where ``/proc`` tells, its state ``Z`` or ``X`` counts as gone."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:   # no /proc (macOS): signal 0 reached it, so say alive; else it ended just now
        return not Path("/proc/self/stat").exists()
    except OSError:
        return True
    fields = stat.rpartition(")")[2].split()   # the name in parentheses may hold spaces
    return not fields or fields[0] not in ("Z", "X")


def write_text(target: str | os.PathLike, text: str, *, edit: bool = False) -> None:
    """Write ``text`` to ``target`` atomically (UTF-8, ``\\n`` newlines); ``edit``: :func:`atomic_path`'s."""
    with atomic_path(target, edit=edit) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")


def write_json(target: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    write_text(target, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def jsonl_text(rows) -> str:
    """One compact JSON object per line: what :func:`write_jsonl` writes."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_jsonl(target: str | os.PathLike, rows) -> None:
    """Write one compact JSON object per line, atomically."""
    write_text(target, jsonl_text(rows))
