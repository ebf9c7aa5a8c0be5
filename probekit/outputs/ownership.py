"""What in a folder or at a path probekit wrote: the one rule's question.

A file is probekit's when its bytes are the ones probekit recorded for it: in the marker of the folder output holding
it (the nearest ``.probekit.json`` at or above it), in its folder's ledger of loose files, or, for what an older
probekit wrote, in the project's ``dvc.lock`` (:mod:`probekit.outputs.legacy`). Everything else is the user's: a file
no record lists, a file whose bytes changed, a link, a folder no marker lists, and a repository (``.git``, ``.dvc``,
``.hg``) wherever it is. :func:`inventory` walks a folder once and says all of it (links are never followed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from probekit.outputs import legacy
from probekit.outputs.marker import (LEDGER, MARKER, Digest, Marker, MarkerError, read_ledger, read_marker,
                                     same_bytes)

REPOSITORIES = (".git", ".dvc", ".hg", ".svn")
"""Folder (or, for a git worktree or submodule, file) names that make a repository: never written, never deleted."""


@dataclass
class Inventory:
    """A folder as the rule sees it: ``foreign`` (relative paths, folders ending in ``/``, in walk order) is what
    probekit did not write; ``kinds``: the kinds of output of what it did write; ``store``: the folder is a results
    store (its own marker says so), ``stores``: stores inside it; ``repositories``: the repositories under it (at any
    depth); ``problems``: markers or ledgers probekit cannot read; ``files``/``size``: every file under it, and their
    bytes (what replacing it deletes)."""

    foreign: list[str] = field(default_factory=list)
    kinds: set[str] = field(default_factory=set)
    store: bool = False
    stores: list[str] = field(default_factory=list)
    repositories: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    size: int = 0

    @property
    def empty(self) -> bool:
        return not (self.files or self.foreign or self.repositories)


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
    _walk(target, "", governing, inv)
    return inv


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


def _walk(folder: Path, rel: str, governing: _Governing, inv: Inventory) -> None:
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
        if entry.is_dir():
            _walk(path, here + "/", governing.below(name), inv)
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


def _size(entry: os.DirEntry) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_size
    except OSError:
        return 0
