"""What in a folder or at a path probekit wrote: the one rule's question.

A file is probekit's when its bytes are the ones probekit recorded for it: in the marker of the folder output holding
it (the nearest ``.probekit.json`` at or above it), in its folder's ledger of loose files, or, for what an older
probekit wrote, in the project's ``dvc.lock`` (:mod:`probekit.outputs.legacy`). Everything else is the user's: a file
no record lists, a file whose bytes changed, a link, a folder no marker lists. Some of it is never replaced, even with
``--force``: a repository wherever it is, known by what it holds (:func:`repository`: ``.git``, ``.hg``, ``.svn``,
``.bzr``, ``.jj``, ``_darcs``, ``.pijul``, Fossil's files, a bare git repository's ``HEAD``, ``objects/`` and
``refs/``), a mount point, and what is not a regular file or folder (a FIFO, a socket, a device: never opened).
:func:`inventory` walks a folder once and says all of it (links and mount points are never followed).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from probekit.outputs import legacy
from probekit.outputs.marker import (LEDGER, MARKER, Digest, Marker, MarkerError, read_ledger, read_marker,
                                     same_bytes)
from probekit.outputs.regular import open_regular, special

REPOSITORIES = (".git", ".dvc", ".hg", ".svn", ".bzr", ".jj", "_darcs", ".pijul", ".fossil", "_FOSSIL_", ".fslckout")
"""Folder (or, for a git worktree or submodule and Fossil's checkout, file) names that make a repository: never
written, never deleted."""
BARE = ("HEAD", "objects", "refs")
"""What makes a folder a bare git repository, whatever its name (``thesis.git``): a ``HEAD`` file, ``objects/`` and
``refs/``."""
_SQLITE = b"SQLite format 3\x00"


def repository(folder: Path) -> str | None:
    """What makes ``folder`` itself a repository (``a bare git repository``), or None; ``folder`` holding one of
    :data:`REPOSITORIES` is found by :func:`inventory`."""
    try:
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir():
            return "a bare git repository (HEAD, objects/, refs/)"
    except OSError:
        return None
    return None


def fossil_file(path: Path) -> bool:
    """Whether ``path`` is a Fossil repository file: named ``*.fossil``, a regular file with SQLite's header."""
    if not path.name.endswith(".fossil"):
        return False
    try:
        with open_regular(path) as f:
            return f.read(len(_SQLITE)) == _SQLITE
    except OSError:
        return False


def mount_points() -> frozenset[str]:
    """Every mount point of this system as the kernel lists it (``/proc/self/mountinfo``: bind mounts included);
    empty where there is no such list (:func:`inventory` then asks :func:`os.path.ismount` of each folder)."""
    try:
        with open_regular("/proc/self/mountinfo") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return frozenset()
    found = set()
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            found.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return frozenset(found)


@dataclass
class Inventory:
    """A folder as the rule sees it: ``foreign`` (relative paths, folders ending in ``/``, in walk order) is what
    probekit did not write; ``kinds``: the kinds of output of what it did write; ``store``: the folder is a results
    store (its own marker says so), ``stores``: stores inside it; ``repositories``: the repositories under it (at any
    depth: the name that makes one, or a bare repository's folder ending in ``/``, ``./`` for ``target`` itself);
    ``mounts``: the mount points under it (never walked into); ``special``: what is neither a regular file, a folder
    nor a link (``fifo (a FIFO (named pipe))``); ``problems``: markers or ledgers probekit cannot read;
    ``files``/``size``: every file under it, and their bytes (what replacing it deletes)."""

    foreign: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)
    store: bool = False
    stores: list[str] = field(default_factory=list)
    repositories: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    size: int = 0

    @property
    def empty(self) -> bool:
        return not (self.files or self.foreign or self.repositories or self.mounts or self.special)


@dataclass(frozen=True)
class _Governing:
    """The marker that governs a folder (the nearest at or above it), with the folder's path from the marker's."""

    marker: Marker | None
    prefix: str

    def lists(self, rel: str, path: Path) -> bool:
        m = self.marker
        if m is None or m.files is None:
            return False
        recorded = m.files.get(self.prefix + rel)
        return recorded is not None and same_bytes(path, recorded)

    def lists_folder(self, rel: str) -> bool:
        m = self.marker
        return m is not None and (self.prefix + rel) in (m.folders if m.files is not None else m.names)

    def below(self, name: str) -> "_Governing":
        return _Governing(self.marker, self.prefix + name + "/")


def inventory(target: Path) -> Inventory:
    """Walk ``target`` (a folder; a missing one is empty) and say what in it is probekit's and what is not."""
    inv = Inventory()
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        inv.foreign.append(target.name)
        return inv
    if not target.is_dir():
        return inv
    governing = _above(target, inv)
    own = _noted(read_marker, target, inv)
    if own is not None and own.kind == "store":
        inv.store = True
    mounts = mount_points()
    _walk(target, "", governing, inv, _Mounts(mounts, os.path.realpath(target)))
    return inv


@dataclass(frozen=True)
class _Mounts:
    """The system's mount points (:func:`mount_points`) and the walked target's real path, to say of a folder under
    it whether it is one."""

    points: frozenset[str]
    top: str

    def holds(self, rel: str, path: Path) -> bool:
        if not self.points:
            return os.path.ismount(path)
        return os.path.join(self.top, rel) in self.points


def file_kind(path: Path) -> tuple[str | None, str | None]:
    """The kind of output the file ``path`` belongs to when probekit wrote its bytes (``file`` for a loose file), else
    None; and why it is not (``changed``: a record lists it with other bytes), else None."""
    listed = False
    absolute = Path(os.path.abspath(path))
    try:
        ledger = read_ledger(absolute.parent)
    except MarkerError:
        ledger = {}
    if absolute.name in ledger:
        if same_bytes(absolute, ledger[absolute.name]):
            return "file", None
        listed = True
    for folder in absolute.parents:
        try:
            marker = read_marker(folder)
        except MarkerError:
            break
        if marker is None:
            continue
        rel = absolute.relative_to(folder).as_posix()
        if marker.files is not None and rel in marker.files:
            if same_bytes(absolute, marker.files[rel]):
                return marker.kind, None
            listed = True
        break
    kind = legacy.recorded_kind(absolute)
    if kind is not None:
        return kind, None
    return None, "changed" if listed else None


def _above(target: Path, inv: Inventory) -> _Governing:
    """The marker governing ``target`` from above: the nearest folder above it with a marker, if it lists
    ``target``."""
    absolute = Path(os.path.abspath(target))
    for folder in absolute.parents:
        try:
            marker = read_marker(folder)
        except MarkerError as exc:
            inv.problems.append(str(exc))
            return _Governing(None, "")
        if marker is not None:
            prefix = absolute.relative_to(folder).as_posix() + "/"
            if marker.kind == "store":
                return _Governing(None, "")   # a store's marker lists nothing: its cells carry their own
            return _Governing(marker, prefix)
    return _Governing(None, "")


def _noted(read, folder: Path, inv: Inventory):
    """``read(folder)`` (its marker or ledger), or None noted among ``inv``'s problems when probekit cannot read
    it."""
    try:
        return read(folder)
    except MarkerError as exc:
        inv.problems.append(str(exc))
        return None


def _walk(folder: Path, rel: str, governing: _Governing, inv: Inventory, mounts: _Mounts) -> None:
    """Visit ``folder`` (``rel``: its path from the target, ending in ``/`` below the top)."""
    own = _noted(read_marker, folder, inv)
    own_ok = own is not None
    if own_ok:
        governing = _Governing(own, "")
        if own.kind is not None:
            inv.kinds.add(own.kind)
        if own.kind == "store" and rel:
            inv.stores.append(rel)
    elif (folder / MARKER).exists():
        governing = _Governing(None, "")   # a marker probekit cannot read proves nothing below it
    ledger = _noted(read_ledger, folder, inv)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        inv.foreign.append(rel or "./")
        return
    if rel and not entries and not governing.lists_folder(rel.rstrip("/")):
        inv.foreign.append(rel)   # an empty folder of someone else's
        return
    if _bare(entries):
        inv.repositories.append(rel or "./")
        inv.foreign.append(rel or "./")
        return
    for entry in entries:
        name, path = entry.name, Path(entry.path)
        here = rel + name
        if name in REPOSITORIES:
            inv.repositories.append(here)
            inv.foreign.append(here + ("/" if entry.is_dir(follow_symlinks=False) else ""))
            continue
        if entry.is_symlink():
            inv.foreign.append(here)
            continue
        if entry.is_dir(follow_symlinks=False):
            if mounts.holds(here, path):
                inv.mounts.append(here + "/")
                inv.foreign.append(here + "/")
                continue
            _walk(path, here + "/", governing.below(name), inv, mounts)
            continue
        if not entry.is_file(follow_symlinks=False):
            what = _special(entry)
            if what:
                inv.special.append(f"{here} ({what})")
                inv.foreign.append(here)
                continue
        if fossil_file(path):
            inv.repositories.append(here)
            inv.foreign.append(here)
            continue
        size = _size(entry)
        inv.files.append(here)
        inv.size += size
        if (name == MARKER and own_ok and (own.kind == "store" or _proves(folder, own.files))) or (
                name == LEDGER and ledger is not None and _proves(folder, ledger)):
            continue   # probekit's record, when it proves bytes probekit wrote beside it; else it is someone's file
        if governing.lists(name, path):
            if governing.marker.kind is not None:
                inv.kinds.add(governing.marker.kind)
            continue
        if ledger and name in ledger and same_bytes(path, ledger[name]):
            inv.kinds.add("file")
            continue
        kind = legacy.recorded_kind(Path(os.path.abspath(path)))
        if kind is not None:
            inv.kinds.add(kind)
            continue
        inv.foreign.append(here)


def _proves(folder: Path, files: Mapping[str, Digest] | None) -> bool:
    """Whether a marker's or ledger's ``files`` (path from ``folder`` -> :data:`Digest`) prove bytes probekit wrote:
    one of them at least is there with the recorded bytes (the first found ends the search). A record that proves
    none is not probekit's to replace: probekit writes a ledger only beside a file it wrote and removes it with its
    last one, and a marker with the folder it describes, so a record whose every file is gone or changed, or one
    that lists none, may be anybody's (a forged or copied file of that name). An older marker, which lists names
    only (``files`` None, :mod:`probekit.outputs.legacy`), and a results store's, which lists nothing (its cells
    carry their own), are read as before."""
    if files is None:
        return True
    return any(same_bytes(folder / rel, recorded) for rel, recorded in files.items())


def _bare(entries: list[os.DirEntry]) -> bool:
    """Whether a folder of these ``entries`` is a bare git repository (:data:`BARE`)."""
    found = {e.name: e for e in entries if e.name in BARE}
    if len(found) < len(BARE):
        return False
    try:
        return found["HEAD"].is_file(follow_symlinks=False) and found["objects"].is_dir(follow_symlinks=False) and \
            found["refs"].is_dir(follow_symlinks=False)
    except OSError:
        return False


def _special(entry: os.DirEntry) -> str | None:
    try:
        return special(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return None


def _size(entry: os.DirEntry) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_size
    except OSError:
        return 0
