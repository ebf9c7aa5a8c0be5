"""Atomic writes: an interrupted run never leaves a half-written file or folder in place, nor no output where one was.

A new output is built in a temporary folder beside its target (the *holder*, ``.probekit-<pid>-<host>-<random>.tmp``:
the same short length whatever the target's name; its note proves it probekit's and names the target) and put in
place in one step: a file by one rename over the old one, a folder by exchanging the two
(:func:`probekit.outputs.exchange.swap`). The old output stays readable until the new one is in place, and a kill at
any instant leaves one or the other at the target, never neither, never a mix. Where the file system has no exchange,
the old folder is moved into the holder and the new one onto the target with Ctrl-C and ``kill`` held back between
the two renames; a SIGKILL there leaves the old folder in the holder, and the next write of that target (or a
sweep: :func:`remove_stale`) puts it back first.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import tempfile
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

from probekit import outputs
from probekit.outputs import exchange, guard
from probekit.outputs.limits import why_not_replaceable, why_unwritable_name
from probekit.outputs.marker import digest


@contextmanager
def atomic_path(target: str | os.PathLike, *, kind: str | None = None, edit: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success put it in place of ``target`` in one step: the output
    appears whole or not at all, and the old one stays until then (the module's note). A folder is marked as
    ``kind``'s output (:func:`probekit.outputs.write_marker`: every file with its size and sha256) and replaces only a
    folder of ours of that kind; a file replaces only a loose file of ours and is recorded in its folder's ledger
    (:mod:`probekit.outputs`; ``--force`` claims lift that). ``edit``: a file the user edits too (``params.yaml``),
    which the caller read and keeps: replaced whatever it holds, not recorded. Inside a folder being written, paths
    are written as they are (the outer folder is checked and marked whole). A name too long for the file system
    (:func:`why_unwritable_name`), and a named pipe, device or socket at ``target`` (:func:`why_not_replaceable`), are
    refused before the work, ``--force`` or not; the latter again when it would be replaced.

    The one thing ever removed is this call's own temporary folder (holding, once the new output is in place, the
    old one it replaced), and such a folder that an interrupted write of the same target left (its process gone,
    proven by the note probekit put in it). A full disk or a read-only folder is an :class:`OutputError` naming
    ``target``."""
    text = os.fspath(target)
    target = outputs.normal(target)
    if not text or target.name in ("", ".", ".."):
        raise outputs.OutputError(f"{text or repr('')}: not a name to write to; give a file or folder name")
    why = why_unwritable_name(target) or why_not_replaceable(target)
    if target.name == _NOTE:
        why = "is the name of probekit's own temporary note; give another name"
    if why:
        raise outputs.OutputError(f"{target}: {why}")
    inner = outputs.inside_writing(target)
    with staging(target.parent, target.name, clean=not inner) as tmp:
        holder = tmp.parent
        try:
            with outputs.writing(holder):
                yield tmp
            folder = stat.S_ISDIR(os.lstat(tmp).st_mode)
            if folder and not inner:
                if kind is None:
                    raise ValueError(f"{target}: a folder output needs its kind (one of {', '.join(outputs.KINDS)})")
                outputs.write_marker(tmp, kind)
            why = why_not_replaceable(target)
            if why:
                raise outputs.OutputError(f"{target}: {why}")
            if not inner and not edit and os.path.lexists(target):
                outputs.check_replace(target, kind) if folder else outputs.check_file(target)
            record = not folder and not inner and not edit
            if record:   # what a kill between the rename and the ledger leaves is recorded by the next write
                (holder / _aside(target.name, _PENDING)).write_text(json.dumps(digest(tmp)) + "\n")
            with exchange.held():
                _put_in_place(tmp, target, holder)
                guard.written(target)
                if record:
                    outputs.record_loose(target)
        except OutputError as exc:
            raise exc.at(target) from exc.__cause__
        except OSError as exc:
            if exc.errno not in _DISK:
                raise
            raise _disk_error(target, exc) from exc


def _put_in_place(tmp: Path, target: Path, holder: Path) -> None:
    """Move ``tmp`` onto ``target`` in one step (the old output, if any, goes into ``holder``); called with signals
    held. A file over a file or a link: one rename. A folder, or over a folder: an exchange; where there is none, two
    renames, the old folder put back if the second fails (a SIGKILL between them: :func:`remove_stale` puts it back)."""
    try:
        old_mode = os.lstat(target).st_mode
    except FileNotFoundError:
        os.replace(tmp, target)
        return
    if not stat.S_ISDIR(old_mode) and not stat.S_ISDIR(os.lstat(tmp).st_mode):
        os.replace(tmp, target)   # a link is replaced, never what it points to
        return
    try:
        exchange.swap(tmp, target)   # the old output is now at tmp, in the holder, removed with it
        return
    except OSError as exc:
        if exc.errno not in exchange.UNSUPPORTED:
            raise
    old = holder / _aside(target.name, _OLD)
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise


@contextmanager
def staging(parent: Path, name: str, *, clean: bool = True) -> Iterator[Path]:
    """A new temporary folder in ``parent`` for what becomes ``parent / name``, holding the note that proves it
    probekit's (:data:`_NOTE`); yields the path to build inside it (``<holder>/<name>``, not yet made) and removes the
    holder with whatever is left in it (its note last, so that a kill meanwhile leaves it proven), unless it holds the
    old output that could not be put back. ``clean``: first remove what an interrupted write of the same name left,
    putting back what it had moved (:func:`remove_stale`). A full disk or a read-only folder is an
    :class:`OutputError` naming ``parent / name``."""
    target, holder = parent / name, None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if clean:
            remove_stale(parent, name)
        with exchange.held():   # no Ctrl-C between making the holder and knowing it
            holder = Path(tempfile.mkdtemp(prefix=f".probekit-{_tag()}-", suffix=".tmp", dir=parent))
            (holder / _NOTE).write_text(_note(name, os.getpid(), _HOST), encoding="utf-8")
        yield holder / name
    except OSError as exc:
        if exc.errno not in _DISK:
            raise
        raise _disk_error(target, exc) from exc
    finally:
        if holder is not None and _settled(holder, target):
            _discard(holder)


_NOTE = ".probekit-temporary.json"
"""The note inside each temporary folder of :func:`atomic_path`: whose it is and of which target, so that only
probekit's own leftovers are ever removed (a user's ``.draft.md.tmp`` is not)."""
_OLD = ".old"
"""In a holder: the old folder, moved there where the file system has no exchange."""
_PENDING = ".pending"
"""In a holder: the size and sha256 of the file being put in place, for its ledger (:func:`_settled`)."""
_START = '{"written_by": "probekit", "temporary_of": "'
"""How every note starts, up to its target's name."""
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_HOLDER = re.compile(r"\.probekit-(?P<pid>\d+)-(?P<host>[0-9a-f]{8})-\w+\.tmp")
_LEGACY = r"\.(?P<name>{})\.(?P<pid>\d+)-(?P<host>[0-9a-f]{{8}})\.[\w-]+\.tmp"
"""How an older probekit named its temporary folders: ``.<target>.<pid>-<host>.<random>.tmp``."""


def _aside(name: str, what: str) -> str:
    """The name of ``what`` (:data:`_OLD`, :data:`_PENDING`) in the holder of target ``name``: never ``name``."""
    return what if name != what else what + "-"


def _note(name: str, pid: int, host: str) -> str:
    """The text of the note in a temporary folder of ``name`` made by process ``pid`` of ``host``."""
    return json.dumps({"written_by": "probekit", "temporary_of": name, "pid": pid, "host": host}) + "\n"


def _tag() -> str:
    """This process, in the names of its temporary files: ``<pid>-<host hash>`` (a forked worker has its own)."""
    return f"{os.getpid()}-{_HOST}"


_DISK = {errno.ENOSPC: "the disk is full (no space left on the device)", errno.EDQUOT: "the disk quota is exceeded",
         errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
         errno.EPERM: "permission denied", errno.ENAMETOOLONG: "a name in its path is too long for the file system"}


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
    """Remove the temporary folders interrupted writes left in ``parent``, of the target ``name`` or of any: named as
    :func:`staging` names them (or as an older probekit did), of a process of this host that is gone, and either
    holding its note for its target, or holding nothing but the start of that note (the writer was killed between
    making the folder and finishing its note: the folder holds no byte probekit did not write). First each is
    settled (:func:`_settled`): the old folder it holds put back where its target is missing, the file it put in
    place recorded in the folder's ledger. ``settle``: seconds to wait for a writer still alive to end (a worker killed
    just now may still be tearing down after its pool has moved on); one that outlives it is left, a write in
    progress. Returns the names removed."""
    holders, removed = _holders(parent, name), []
    deadline = time.monotonic() + settle
    while holders:
        live = []
        for entry, pid, of in holders:
            if _alive(pid):
                live.append((entry, pid, of))
            elif not of or _settled(entry, parent / of, ledger=True):
                _discard(entry)
                removed.append(entry.name)
        if not live or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
        holders = live
    return sorted(removed)


def _settled(holder: Path, target: Path, *, ledger: bool = False) -> bool:
    """Finish what the write of ``target`` in ``holder`` left half done; whether the holder may go now. Its target
    missing, the old folder it holds (:data:`_OLD`) is put back (False if that fails: it is the only copy).
    ``ledger``: the file it put in place, its bytes those of its :data:`_PENDING` record, is recorded in the ledger."""
    old = holder / _aside(target.name, _OLD)
    if not os.path.lexists(target):
        try:
            if os.path.lexists(old):
                os.rename(old, target)
        except OSError:
            return False
        return True
    if ledger:
        try:
            pending = json.loads((holder / _aside(target.name, _PENDING)).read_text(encoding="utf-8"))
            if stat.S_ISREG(os.lstat(target).st_mode) and list(digest(target)) == pending:
                outputs.record_loose(target)
        except (OSError, ValueError):
            pass
    return True


def _discard(holder: Path) -> None:
    """Remove the temporary folder ``holder``: what it holds first, its note last, so that a kill meanwhile leaves it
    proven; nothing when something in it cannot be removed."""
    try:
        names = os.listdir(holder)
    except OSError:
        return
    for path in (holder / name for name in names if name != _NOTE):
        with suppress(OSError):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() and not path.is_symlink() else os.unlink(path)
    with suppress(OSError):
        if os.listdir(holder) in ([], [_NOTE]):
            with suppress(FileNotFoundError):
                os.unlink(holder / _NOTE)
            os.rmdir(holder)


def _holders(parent: Path, name: str | None = None) -> list[tuple[Path, int, str]]:
    """The temporary folders in ``parent`` (of ``name``, or of any target) proven probekit's and of this host, each
    with the pid of the process that made it and its target's name ("" when its note was cut before it)."""
    legacy = re.compile(_LEGACY.format(re.escape(name) if name is not None else ".+"))
    try:
        entries = os.listdir(parent)
    except OSError:
        return []
    found = []
    for entry in entries:
        match = _HOLDER.fullmatch(entry) or legacy.fullmatch(entry) if entry.endswith(".tmp") else None
        path = parent / entry
        if not match or match["host"] != _HOST or path.is_symlink() or not path.is_dir():
            continue
        pid = int(match["pid"])
        of = _proven(path, pid, match.groupdict().get("name", name))
        if of is not None and (name is None or of in ("", name)):
            found.append((path, pid, of))
    return found


def _proven(holder: Path, pid: int, name: str | None) -> str | None:
    """The target of ``holder``, probekit's temporary folder made by ``pid`` (of ``name`` where its name or the
    caller says so), or None when that is not proven: it holds that note, or it holds nothing but a start of it
    (empty, or a note cut short by a kill: then "")."""
    try:
        held = (holder / _NOTE).read_bytes()
    except FileNotFoundError:
        held = None
    except OSError:
        return None
    try:
        note = json.loads(held) if held else None
    except ValueError:
        note = None
    if isinstance(note, dict) and isinstance(note.get("temporary_of"), str):
        of = note["temporary_of"]
        if (note == json.loads(_note(of, pid, _HOST)) and (name is None or of == name) and of not in ("", ".", "..")
                and os.path.basename(of) == of and (os.altsep is None or os.altsep not in of)):
            return of
    try:
        others = [e for e in os.listdir(holder) if e != _NOTE]
    except OSError:
        return None
    full = (_note(name, pid, _HOST) if name is not None else _START).encode()
    if not others and (not held or full.startswith(held) or (name is None and held.startswith(full))):
        return ""
    return None


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
        line = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:   # no /proc (macOS): signal 0 reached it, so say alive; else it ended just now
        return not Path("/proc/self/stat").exists()
    except OSError:
        return True
    fields = line.rpartition(")")[2].split()   # the name in parentheses may hold spaces
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
