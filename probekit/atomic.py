"""Atomic writes: an interrupted run never leaves a half-written file or folder in place."""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from probekit import outputs


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success move it onto ``target`` (a file, or a folder: then
    marked as ours, :func:`probekit.outputs.write_marker`). A folder replaces only a folder of ours
    (:func:`probekit.outputs.check_replace`), and the one thing ever removed is this call's own temporary folder
    (and, once the new folder is in place, the old one it replaced). What an interrupted write of the same target
    left beside it (its process gone) is removed first. A full disk or a read-only folder is an
    :class:`OutputError` naming ``target``."""
    target = Path(target)
    if target.name in ("", ".", ".."):
        raise outputs.OutputError(f"{str(target) or repr('')}: not a name to write to; give a file or folder name")
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(parent, target.name)
        holder = Path(tempfile.mkdtemp(prefix=f".{target.name}.{_tag()}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise _disk_error(target, exc) from exc
    tmp = holder / target.name
    try:
        yield tmp
        if tmp.is_dir() and not tmp.is_symlink():
            outputs.write_marker(tmp)
        if target.is_dir() and not target.is_symlink():
            outputs.check_replace(target)
            old = parent / f".{target.name}.{_tag()}.old"
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    except OutputError as exc:
        raise exc.at(target) from exc.__cause__
    except OSError as exc:
        if exc.errno not in _DISK:
            raise
        raise _disk_error(target, exc) from exc
    finally:
        shutil.rmtree(holder, ignore_errors=True)


_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _tag() -> str:
    """This process, in the names of its temporary files: ``<pid>-<host hash>`` (a forked worker has its own)."""
    return f"{os.getpid()}-{_HOST}"


_DISK = {errno.ENOSPC: "the disk is full (no space left on the device)", errno.EDQUOT: "the disk quota is exceeded",
         errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
         errno.EPERM: "permission denied"}
_STALE_LEGACY = 3600   # seconds: an older probekit's temp folder (no process in its name) untouched this long is stale


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


def _remove_stale(parent: Path, name: str) -> None:
    """Remove what an interrupted write of ``parent / name`` left in ``parent``: the temporary and old folders of a
    process of this host that is gone (and an older probekit's temporary folders untouched for an hour)."""
    pattern = outputs.temp_name(name)
    for entry in parent.glob(f".{glob.escape(name)}.*"):
        found = pattern.fullmatch(entry.name)
        if not found:
            continue
        if found["pid"]:
            stale = found["host"] == _HOST and not _alive(int(found["pid"]))
        elif found["oldpid"]:
            stale = not _alive(int(found["oldpid"]))
        else:
            try:
                stale = time.time() - entry.stat().st_mtime > _STALE_LEGACY
            except OSError:
                stale = False
        if stale:
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def write_text(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``target`` atomically (UTF-8, ``\\n`` newlines)."""
    with atomic_path(target) as tmp:
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
