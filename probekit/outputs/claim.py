"""A command's outputs, claimed before any work and checked again by the writer: the one rule applied.

probekit replaces a path only when what is there is its own, of the same kind (:func:`verdict`):

- a forbidden path (:func:`probekit.outputs.boundary.forbidden`), a folder holding a repository at any depth, and a
  results store (which probekit only adds to) are refused, ``--force`` or not;
- a symbolic link, anything probekit did not write (no record has its bytes), and an output of another kind are
  refused unless ``--force``, which then replaces it whole, after saying what that deletes;
- a file output replaces only a loose file probekit wrote (``force``: any file).

A command claims its outputs (:func:`claim`, :func:`claim_file`); a writer checks again when it replaces one
(:func:`check_replace`, :func:`check_file`, called by :func:`probekit.outputs.atomic.atomic_path`), so a library
call cannot replace what is not probekit's either, unless it was claimed with ``force``. Paths are taken as written, ``..`` and
``.`` folded (:func:`normal`): the path checked is the path written.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Iterable, Iterator

from probekit.errors import ProbekitError, UsageError, clipped
from probekit.outputs import overlap
from probekit.outputs.boundary import absolute_path, forbidden
from probekit.outputs.marker import KINDS, MarkerError, read_marker
from probekit.outputs.ownership import REPOSITORIES, Inventory, file_kind, inventory

log = logging.getLogger("probekit")
SHOWN_ENTRIES = 3   # entries named in a refusal
_forced: set[Path] = set()   # paths a command claimed with --force: their writers may replace them
_writing: list[Path] = []    # the temporary folders this process is writing: what is inside them is not yet anyone's


class OutputError(ProbekitError):
    """An output that probekit must not write or replace; the message names it."""


def normal(out: str | os.PathLike) -> Path:
    """An output path as probekit checks and writes it: ``.`` and ``..`` folded (``gen/.`` is ``gen``,
    ``a/b/..`` is ``a``), relative where it was given relative."""
    text = os.fspath(out)
    return Path(os.path.normpath(text)) if text else Path(text)


def checked_text(out: str | os.PathLike, flag: str) -> Path:
    """``out`` as a path to write, refused when it is empty (an unset shell variable) or starts with a ``~`` the shell
    did not expand (``--out=~/x``): probekit would write a folder named ``~``."""
    not_empty(out, flag)
    text = os.fspath(out)
    if text == "~" or text.startswith("~/") or text.startswith("~" + os.sep):
        raise UsageError(f"{flag} {text}: starts with '~', which the shell did not expand (it does so only at the "
                         f"start of a word: `{flag} ~/…`, not `{flag}=~/…`), so probekit will not write there, even "
                         f"with --force; give the full path")
    return normal(text)


def not_empty(out: str | os.PathLike, flag: str = "--out") -> None:
    """An output path given as an empty string (an unset shell variable: ``--out "$OUT"``) is refused: it would
    mean the current folder."""
    if not str(out).strip():
        raise UsageError(f"{flag} is empty: give a folder (an unset shell variable?)")


def claim(out: str | os.PathLike, flag: str = "--out", *, kind: str, force: bool = False,
          reads: Iterable[overlap.Named] = ()) -> Path:
    """Claim the folder output ``out`` of a command writing ``kind`` before any work (the module's rule): returns it
    as the path to write. ``force``: replace it whole though it is not probekit's, or of another kind (never what
    is forbidden, a repository, or a store); what that deletes is logged, once every check passed. It must not
    overlap what the command reads (:func:`probekit.outputs.overlap.check_output`: ``reads`` and the command's)."""
    path = checked_text(out, flag)
    refused = verdict(path, kind, force)
    if refused:
        raise UsageError(f"{flag} {out}: {refused}")
    overlap.check_output(flag, path, reads)
    if force:
        _forced.add(absolute_path(path))
        _say_deleted(flag, out, path)
    return path


def claim_file(out: str | os.PathLike, flag: str = "--out", *, force: bool = False,
               reads: Iterable[overlap.Named] = ()) -> Path:
    """Claim the file output ``out`` before any work: nothing, or a loose file probekit wrote with these bytes
    (``force``: any file, or a link, which is replaced, not what it points to), outside what the command reads.
    Returns the path to write."""
    path = checked_text(out, flag)
    refused = file_verdict(path, force)
    if refused:
        raise UsageError(f"{flag} {out}: {refused}")
    overlap.check_output(flag, path, reads)
    if force and (path.exists() or path.is_symlink()):
        _forced.add(absolute_path(path))
        log.warning(f"--force: {flag} {out}: replacing it deletes {'the link' if path.is_symlink() else 'the file'} "
                    f"({_size(path)})")
    return path


def claim_into(out: str | os.PathLike, flag: str = "--out", *, reads: Iterable[overlap.Named] = ()) -> Path:
    """Claim a folder a command only adds files to (``probes sources fetch --dest``): not forbidden, outside what
    the command reads (each file it writes is checked as a file output)."""
    path = checked_text(out, flag)
    why = forbidden(path)
    if why:
        raise UsageError(f"{flag} {out}: {why}, so probekit will not write there, even with --force; give another "
                         f"folder")
    overlap.check_output(flag, path, reads)
    return path


def verdict(path: Path, kind: str, force: bool = False) -> str | None:
    """Why the folder output ``path`` of a ``kind`` command must not be replaced (the end of a one-line refusal), or
    None when it may be."""
    why = forbidden(path)
    if why:
        return f"{why}, so probekit will not write there, even with --force; give a new folder for the output"
    if kind == "store" and _is_store(path):
        return None   # added to, nothing in it replaced: no need to walk it
    inv = inventory(path)
    if inv.repositories:
        where = inv.repositories[0]
        what = ("is a repository (a bare git repository: HEAD, objects/, refs/)" if where == "./" else
                f"is a repository (it holds {where})" if where in REPOSITORIES else
                f"holds a repository ({clipped(where, 80)})")
        return f"{what}, so probekit will not write there, even with --force; give a new folder for the output"
    if inv.mounts:
        return (f"holds a mount point ({clipped(inv.mounts[0], 80)}), which probekit never replaces nor walks into, "
                f"even with --force; give a new folder for the output")
    if inv.special:
        return (f"holds {clipped(inv.special[0], 120)}, and probekit replaces only regular files and folders, even "
                f"with --force; give a new folder for the output, or move it out")
    if kind == "store":
        if inv.store or inv.empty:
            return None
        theirs = "which probekit did not write" if inv.foreign else f"which is {KINDS[sorted(inv.kinds)[0]]}"
        return (f"holds {_names(inv.foreign or inv.files)}, {theirs}; a results store is started only in a new or "
                f"empty folder (an existing store is added to), so --force does not apply; give another folder")
    if inv.store:
        return ("is a results store (probes grid), which probekit only adds to: no other command replaces it, even "
                "with --force; give another folder")
    if inv.stores:
        return (f"holds a results store ({clipped(inv.stores[0], 80)}), which probekit only adds to: no other command "
                f"replaces it, even with --force; give another folder")
    if force:
        return None
    if path.is_symlink():
        return (f"is a symbolic link (to {clipped(os.readlink(path), 120)}), which probekit would replace; give the "
                f"folder itself, or --force to replace the link (not what it points to)")
    if inv.foreign:
        note = f" ({clipped(inv.problems[0], 200)})" if inv.problems else ""
        return (f"holds {_names(inv.foreign)}, which probekit did not write (no record of its has their bytes){note}; "
                f"give a new or empty folder, move them out, or give --force to replace the folder and everything in "
                f"it")
    other = sorted(inv.kinds - {kind})
    if other:
        return (f"is {KINDS[other[0]]}, and this command writes {KINDS[kind]}; give another folder, or --force to "
                f"replace it")
    return None


def file_verdict(path: Path, force: bool = False) -> str | None:
    """Why the file output ``path`` must not be replaced (the end of a one-line refusal), or None when it may be."""
    why = forbidden(path)
    if why:
        return f"{why}, so probekit will not write there, even with --force; give another file name"
    if path.is_dir() and not path.is_symlink():
        return "is a folder; give a file name"
    if force or not (path.exists() or path.is_symlink()):
        return None
    if path.is_symlink():
        return (f"is a symbolic link (to {clipped(os.readlink(path), 120)}), which probekit would replace; give the "
                f"file itself, or --force to replace the link (not what it points to)")
    kind, why = file_kind(path)
    if kind is None:
        said = ("its bytes changed since probekit wrote it" if why == "changed"
                else "exists, and probekit did not write it")
        return f"{said}; give a new file name, move it away, or --force to replace it"
    if kind not in LOOSE:
        return f"is a file of {KINDS[kind]}; give a file name outside it, or --force to replace it"
    return None


LOOSE = ("file", "store")
"""The kinds of file a file output may replace: a loose file probekit wrote, and a store's own (its summary, its
report), which ``dvc.lock`` records as files of the store."""


def check_replace(target: Path, kind: str) -> None:
    """What a writer checks before it replaces the folder ``target`` with a new one of ``kind``: :func:`verdict`,
    ``force`` where a command claimed it (or a folder holding it)."""
    refused = verdict(target, kind, force=_claimed(target))
    if refused:
        said = refused.replace(", so probekit will not write there", "; probekit will not replace it")
        raise OutputError(f"{target}: {said}")


def check_file(target: Path) -> None:
    """What a writer checks before it replaces the file ``target``: :func:`file_verdict`, ``force`` where a command
    claimed it (or a folder holding it)."""
    refused = file_verdict(target, force=_claimed(target))
    if refused:
        raise OutputError(f"{target}: {refused}")


@contextlib.contextmanager
def claims() -> Iterator[None]:
    """The ``--force`` claims made inside last until the end of the block (one command: ``probes.main.main``,
    which a grid cell also runs in-process)."""
    before = set(_forced)
    try:
        yield
    finally:
        _forced.intersection_update(before)


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """While the block runs, ``folder`` is being written by this process (a temporary folder that becomes an
    output whole): what is written inside it is checked and marked with it, not on its own."""
    folder = absolute_path(folder)
    _writing.append(folder)
    try:
        yield
    finally:
        _writing.remove(folder)


def inside_writing(path: Path) -> bool:
    """Whether ``path`` is inside a folder this process is writing (:func:`writing`)."""
    absolute = absolute_path(path)
    return any(folder in absolute.parents for folder in _writing)


def _is_store(path: Path) -> bool:
    try:
        marker = read_marker(path) if path.is_dir() and not path.is_symlink() else None
    except MarkerError:
        return False
    return marker is not None and marker.kind == "store"


def _claimed(path: Path) -> bool:
    absolute = absolute_path(path)
    return any(absolute == f or f in absolute.parents for f in _forced)


def _names(entries: list[str]) -> str:
    shown = ", ".join(clipped(e, 60) for e in entries[:SHOWN_ENTRIES])
    return shown + (" and more" if len(entries) > SHOWN_ENTRIES else "")


def _say_deleted(flag: str, out, path: Path) -> None:
    """Log what replacing ``path`` deletes: how many files, the first names, their bytes (nothing when empty)."""
    if path.is_symlink():
        log.warning(f"--force: {flag} {out}: replacing it deletes the link (to {clipped(os.readlink(path), 120)}), "
                    f"not what it points to")
        return
    inv: Inventory = inventory(path)
    if inv.empty:
        return
    theirs = f", {len(inv.foreign)} of them not written by probekit" if inv.foreign else ""
    log.warning(f"--force: {flag} {out}: replacing it deletes {len(inv.files)} file(s) ({_names(inv.files)}), "
                f"{_human(inv.size)}{theirs}")


def _size(path: Path) -> str:
    try:
        return _human(path.lstat().st_size)
    except OSError:
        return "0 B"


def _human(size: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"
