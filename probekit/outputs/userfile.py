"""The one writer of the files a user edits by hand and probekit edits in place (params.yaml, conf/config.yaml,
raw/sources.local.yaml): every command that changes one calls :func:`edit_yaml` (or :func:`edit_text`, for an edit
made on the text itself).

What it guarantees:

- **Only the command's own change is written.** The command says what it took the file to hold (``base``: its
  composition, or what it read) and what it wants there (``new``); the keys where the two differ are applied to the
  file as it is now, round-trip (:func:`probekit.yamlmerge.merged`): comments, key order, quoting and every hand
  edit elsewhere stay. The result is read back and must be the file's data with that change and nothing else (an
  anchor shared with another key, say), or nothing is written.
- **A hand edit is never lost.** Where the file holds, at a key the command changes, neither ``base``'s value nor
  ``new``'s, the command refuses in one line naming the file and the keys (:class:`UsageError`), nothing written.
- **The file stays the user's.** A read-only file is refused (never made writable); a link is written through to
  the file it points to (a chain followed), the link kept: the user linked it there on purpose, and the file they
  see through it is the one they asked to change; its mode is kept. The write is atomic
  (:func:`probekit.outputs.atomic.atomic_path`, in the target's own folder).
- **Two commands never lose each other's change.** The read, the merge and the write happen under a lock
  (:func:`locked`): ``flock`` on the folder that holds the file, which leaves no lock file in the user's tree, is
  the same lock however the folder is reached (a link, a relative path), and is dropped by the kernel when its
  process dies (no stale lock to clear). A command that edits several files at once (``probes new``) holds the
  lock of the project's folder across all of them; the lock is re-entrant within a thread.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from probekit.errors import SHOWN, UsageError, clipped
from probekit.yamlmerge import merged, plain

try:
    import fcntl
except ImportError:   # not a POSIX system: no lock (probekit runs on Linux and macOS)
    fcntl = None

_held = threading.local()


@contextmanager
def locked(folder: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of ``folder`` (an exclusive ``flock`` on it) until the block ends; re-entrant in one thread. A
    command that finds it held says so on stderr once and waits for it."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        info = os.fstat(fd)
        key, held = (info.st_dev, info.st_ino), _held.__dict__.setdefault("folders", {})
        if key in held or fcntl is None:
            held[key] = held.get(key, 0) + 1
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"{folder}: another probekit command is editing a file here; waiting for it", file=sys.stderr,
                      flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
            held[key] = 1
        try:
            yield
        finally:
            held[key] -= 1
            if not held[key]:
                del held[key]
    finally:
        os.close(fd)   # releases the flock


def target(path: str | os.PathLike) -> Path:
    """The file ``path`` stands for: itself, or where its link (a chain of them) points. A link to nothing is
    refused (probekit would create a file where the link points); so is anything but a regular file."""
    path = Path(path)
    real = Path(os.path.realpath(path))
    if path.is_symlink() and not real.exists():
        raise UsageError(f"{path}: a link to {real}, which does not exist: make the file or remove the link")
    if real.exists() and not real.is_file():
        raise UsageError(f"{path}: not a regular file; probekit edits a YAML file here")
    return real


def writable(path: str | os.PathLike, command: str, what: str) -> None:
    """Refuse a read-only file ``command`` would change (``what``: the keys or the edit): no write permission for
    anyone, or none for this user. Read-only is the user's way of saying keep it: it is never made writable. A file
    with other hard links is refused too: the atomic replace would leave them holding the old text."""
    real = target(path)
    if real.is_file() and (not os.access(real, os.W_OK) or not real.stat().st_mode & 0o222):
        raise UsageError(f"{path}: is read-only; {command} edits it ({clipped(what, 2 * SHOWN)}): make it writable "
                         f"(chmod u+w) and run {command} again, or make the change by hand")
    if real.is_file() and real.stat().st_nlink > 1:   # an atomic replace would part it from its other names
        raise UsageError(f"{path}: has {real.stat().st_nlink - 1} other hard link(s); {command} replaces the file "
                         f"whole, which would leave them with the old text: make it a symbolic link or a file of "
                         f"its own, or make the change ({clipped(what, 2 * SHOWN)}) by hand")


def _write(path: Path, text: str | None, command: str, what: str, newline: str = "\n") -> None:
    """``text`` into the file ``path`` stands for (None: remove it), atomically, its mode and line ends kept; the
    caller holds the lock."""
    from probekit.outputs.atomic import atomic_path

    writable(path, command, what)
    real = target(path)
    if text is None:
        real.unlink(missing_ok=True)
        return
    mode = stat.S_IMODE(real.stat().st_mode) if real.exists() else None
    with atomic_path(real, edit=True) as tmp:
        tmp.write_text(text, encoding="utf-8", newline=newline)
        if mode is not None:
            os.chmod(tmp, mode)   # probekit's own new file, given the mode of the one it replaces


def _read(real: Path) -> tuple[str | None, str]:
    """The file's text (None: no file), its lines ending in ``\\n``, and how its lines end."""
    if not real.exists():
        return None, "\n"
    raw = real.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{real}: not UTF-8 text; probekit edits a YAML file here") from None
    return text.replace("\r\n", "\n"), "\r\n" if "\r\n" in text else "\n"


def edit_text(path: str | os.PathLike, edit: Callable[[str | None], str], *, command: str, what: str) -> bool:
    """Replace the text of the file at ``path`` with ``edit(text)`` (``text``: None where there is no file), under
    the lock of its folder, as :func:`edit_yaml` writes; the caller's ``edit`` checks what it changes. Returns
    whether the file changed."""
    real = target(path)
    real.parent.mkdir(parents=True, exist_ok=True)
    with locked(real.parent):
        real = target(path)
        text, newline = _read(real)
        new = edit(text)
        if new == text:
            return False
        _write(Path(path), new, command, what, newline)
        return True


@dataclass(frozen=True)
class Edited:
    """What :func:`edit_yaml` did: the keys it wrote, the file's data before and after."""

    keys: list[str]
    before: Any
    after: Any


def edit_yaml(path: str | os.PathLike, new: Mapping, *, base: Mapping, command: str, advice: str = "",
              header: str = "", check: Callable[[Any], None] | None = None, drop_empty: bool = False,
              write: bool = True) -> Edited:
    """Apply to the YAML file at ``path`` the change from ``base`` (what ``command`` took the file to hold: its
    composition, or what it read) to ``new`` (what it wants there), under the lock of the file's folder: each key
    where ``new`` differs from ``base`` (added, changed or removed, at any depth of mappings; a list is one value)
    is set in the file as it is now, every other line kept. Refused, naming the file and the keys (``advice``: how to
    resolve it), where the file holds at such a key neither ``base``'s value nor ``new``'s: a hand edit the change
    would lose. ``header``: a new file's first lines (comments). ``check(data)``: called with the file's data as it
    will be, before writing. ``drop_empty``: a file left with no key and no line but ``header`` is removed.
    ``write=False``: everything but the write (a dry run still refuses)."""
    path = Path(path)
    real = target(path)
    real.parent.mkdir(parents=True, exist_ok=True)
    with locked(real.parent):
        real = target(path)
        text, newline = _read(real)
        data, edited, keys = merged(text if text is not None else header, new, base, label=str(path),
                                    command=command, advice=advice)
        before = plain(text if text is not None else "", str(path))
        if check is not None:
            check(data)
        if keys and not write:
            writable(path, command, ", ".join(keys))
        if not keys or not write:
            return Edited(keys, before, data)
        if drop_empty and not data and _comments(edited) == _comments(header):
            edited = None
        if edited is None and not real.exists():
            return Edited(keys, before, data)
        _write(path, edited, command, ", ".join(keys), newline)
        return Edited(keys, before, data)


def _comments(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]
