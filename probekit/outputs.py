"""Output folders: probekit replaces only what it wrote.

Every folder probekit writes whole (:func:`probekit.atomic.atomic_path`) gets a marker, ``.probekit.json``, that
lists each file and folder in it. A command's output folder (``--out``, ``--features``, ``--plots``...) is then
checked before any work (:func:`claim`):

- it must not be the current folder, the project, the home folder, the root, or a folder holding one of them, and
  must not hold a repository (``.git``, ``.dvc``): refused even with ``--force``;
- it may not exist yet, or be empty, or be ours: everything in it listed by a marker of ours (the folder's own, or a
  subfolder's), or a dataset folder written before markers existed (:func:`_legacy`), or a store of ours that
  commands add to and never replace (the results store of ``probes grid``: :func:`mark_store`);
- anything else is refused with one line that names the folder and what in it is not ours; ``--force`` replaces a
  folder of someone else's (never a forbidden one).

The writers check again when they replace a folder (:func:`check_replace`, called by ``atomic_path``), so a library
call cannot replace a foreign folder either unless a command claimed it with ``--force``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Iterator

from probekit.errors import ProbekitError, UsageError, clipped

MARKER = ".probekit.json"
SHOWN_ENTRIES = 3   # entries named in a refusal
_REPOSITORY = (".git", ".dvc")
_STORE = "store"
_LEGACY_NAMES = re.compile(r"(meta\.json|README\.md|[^/]+\.jsonl|[^/]+\.npy)")
_forced: set[Path] = set()   # folders a command claimed with --force: their writers may replace them


class OutputError(ProbekitError):
    """An output folder that probekit must not write or replace; the message names it."""


_TEMP = r"(?:(?P<pid>\d+)-(?P<host>[0-9a-f]{8})\.(?:[\w-]+\.tmp|old)|[\w-]+\.tmp|old-(?P<oldpid>\d+))"
"""How :mod:`probekit.atomic` names what it leaves beside ``NAME`` while it writes: ``.NAME.<pid>-<host>.<x>.tmp``
and ``.NAME.<pid>-<host>.old``, and the older forms ``.NAME.<x>.tmp`` and ``.NAME.old-<pid>`` (after ``.NAME.``)."""
_ANY_TEMP = re.compile(rf"\..+\.{_TEMP}")


def temp_name(name: str) -> re.Pattern:
    """The names of what :mod:`probekit.atomic` leaves beside ``name`` while it writes (:data:`_TEMP`)."""
    return re.compile(rf"\.{re.escape(name)}\.{_TEMP}")


def write_marker(folder: Path) -> None:
    """List every file and folder under ``folder`` (relative, sorted; folders end in ``/``) in its marker: what
    this write put there, which a later write may replace. Deterministic: the same files, the same bytes."""
    entries = sorted(p.relative_to(folder).as_posix() + ("/" if p.is_dir() else "") for p in folder.rglob("*")
                     if p.name != MARKER or p.parent != folder)
    text = json.dumps({"written_by": "probekit", "entries": entries}, indent=1, ensure_ascii=False) + "\n"
    (folder / MARKER).write_text(text, encoding="utf-8", newline="\n")


def mark_store(folder: Path, kind: str) -> None:
    """Mark ``folder`` as a store of ours (``kind``: what it stores): commands add to it and never replace it."""
    if _read_marker(folder) is None:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{MARKER}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"written_by": "probekit", _STORE: kind}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, folder / MARKER)


def claim(out: str | os.PathLike, flag: str = "--out", *, force: bool = False) -> Path:
    """Check a command's output folder before any work (see the module's docstring); returns it as a path.
    ``force``: replace a folder probekit did not write (never a forbidden one)."""
    not_empty(out, flag)
    path = Path(out).expanduser()
    why = forbidden(path)
    if why:
        raise UsageError(f"{flag} {out}: {why}, so probekit will not write there, even with --force; give a new "
                         f"folder for the output")
    if force:
        _forced.add(_absolute(path))
        return path
    if path.is_symlink():
        raise UsageError(f"{flag} {out}: is a symbolic link, which probekit would replace; give the folder itself, "
                         f"or --force to replace the link")
    foreign = not_ours(path, SHOWN_ENTRIES + 1)
    if foreign:
        raise UsageError(f"{flag} {out}: {_refusal(foreign)}")
    return path


@contextlib.contextmanager
def claims() -> Iterator[None]:
    """The ``--force`` claims made inside last until the end of the block (one command: ``probes.main.main``,
    which a grid cell also runs in-process)."""
    before = set(_forced)
    try:
        yield
    finally:
        _forced.intersection_update(before)


def not_empty(out: str | os.PathLike, flag: str = "--out") -> None:
    """An output path given as an empty string (an unset shell variable: ``--out "$OUT"``) is refused: it would
    mean the current folder."""
    if not str(out).strip():
        raise UsageError(f"{flag} is empty: give a folder (an unset shell variable?)")


def check_replace(target: Path) -> None:
    """What a writer checks before it replaces the folder ``target`` with a new one: not forbidden, and ours unless
    a command claimed it (or a folder holding it) with ``--force``."""
    why = forbidden(target)
    if why:
        raise OutputError(f"{target}: {why}; probekit will not replace it")
    absolute = _absolute(target)
    if any(absolute == f or f in absolute.parents for f in _forced):
        return
    foreign = not_ours(target, SHOWN_ENTRIES + 1)
    if foreign:
        raise OutputError(f"{target}: {_refusal(foreign)}")


def forbidden(path: Path) -> str | None:
    """Why probekit may never write or replace the folder ``path``, or None. The folders it protects: the current
    folder, the project (the nearest folder above it with ``dvc.yaml``, ``.dvc`` or ``.git``), probekit's own
    checkout, the Python environment, the home folder and the root; any folder holding one of them; and any
    repository. Checked on the path as written, with links resolved, and as the same folder on disk (a bind mount,
    another spelling on a case-insensitive file system)."""
    absolute = _absolute(path)
    candidates = {absolute}
    try:
        candidates.add(absolute.resolve())
    except (OSError, RuntimeError):
        pass
    protected = _protected()
    for kind, folder in protected:
        if folder in candidates or _same(absolute, folder):
            return f"is {kind}"
    for kind, folder in protected:
        if any(p in folder.parents for p in candidates):
            return f"holds {kind} ({folder})"
    for p in candidates:
        for name in _REPOSITORY:
            if (p / name).exists():
                return f"is a repository (it holds {name})"
    return None


def not_ours(folder: Path, most: int | None = None) -> list[str]:
    """What under ``folder`` probekit did not write (relative paths; folders end in ``/``), the first ``most`` of
    them (the walk stops there): empty when the folder is missing, empty, ours, or a store of ours."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        return [folder.name]
    if not folder.exists():
        return []
    marker = _read_marker(folder)
    if (marker is not None and marker.get(_STORE)) or (marker is None and _legacy_store(folder)):
        return []
    return list(itertools.islice(_foreign(folder, ""), most))


def _foreign(folder: Path, rel: str, listed: set[str] | None = None, base: str = "") -> Iterator[str]:
    """The entries under ``folder`` (``rel``: its path from the checked folder) that no marker of ours lists;
    ``listed``: the entries of the nearest marker above, relative to the folder at ``base``."""
    marker = _read_marker(folder)
    if marker is not None:
        listed, base = set(marker.get("entries") or ()), rel
    elif listed is None:
        if _legacy(folder):
            return
        if rel and next(folder.iterdir(), None) is None:
            yield rel   # an empty folder of someone else's (the checked folder itself may be empty)
            return
    for entry in sorted(folder.iterdir()):
        if _ANY_TEMP.fullmatch(entry.name) or (entry.name == MARKER and marker is not None):
            continue
        name = f"{rel}{entry.name}"
        is_dir = entry.is_dir() and not entry.is_symlink()
        own = listed is not None and name[len(base):] + ("/" if is_dir else "") in listed
        if not is_dir:
            if not own:
                yield name
        elif own or listed is None or _read_marker(entry) is not None:
            yield from _foreign(entry, f"{name}/", listed if own else None, base)
        else:
            yield f"{name}/"


def _legacy(folder: Path) -> bool:
    """A dataset folder written by probekit before markers existed (a DVC stage keeps it between runs): its
    ``meta.json`` has the writer's ``fingerprint`` and ``generator_version``, and it holds only what the writer
    writes (``meta.json``, ``README.md``, ``*.jsonl``, in it or its variant folders)."""
    meta = _read_json(folder / "meta.json")
    if not (isinstance(meta, dict) and "fingerprint" in meta and "generator_version" in meta):
        return False
    return all((p.is_dir() and not p.is_symlink()) or (p.is_file() and _LEGACY_NAMES.fullmatch(p.name))
               for p in folder.rglob("*"))


def _legacy_store(folder: Path) -> bool:
    """A results store of ``probes grid`` written before markers existed: its ``cells/`` and ``summary.jsonl``."""
    return (folder / "cells").is_dir() and (folder / "summary.jsonl").is_file()


def _refusal(foreign: list[str]) -> str:
    """The refusal of a folder holding ``foreign`` (its first entries probekit did not write, one more than shown
    when there are more)."""
    shown = ", ".join(clipped(e, 60) for e in foreign[:SHOWN_ENTRIES]) + (" and more" if len(foreign) >
                                                                           SHOWN_ENTRIES else "")
    return (f"holds {shown}, which probekit did not write (no {MARKER} lists them); give a new or empty folder, "
            f"move them out, or give --force to replace the folder and everything in it")


def _read_marker(folder: Path) -> dict | None:
    data = _read_json(folder / MARKER)
    return data if isinstance(data, dict) and data.get("written_by") == "probekit" else None


def _read_json(path: Path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.loads(f.read(1 << 24))
    except (OSError, ValueError):
        return None


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _absolute(path: Path) -> Path:
    """``path`` made absolute, ``..`` and ``.`` folded without following links (as the shell's ``cd`` does)."""
    return Path(os.path.abspath(path))


def _protected() -> list[tuple[str, Path]]:
    cwd = Path.cwd()
    found = [("the current folder", cwd)]
    for folder in (cwd, *cwd.parents):
        if any((folder / n).exists() for n in ("dvc.yaml", *_REPOSITORY)):
            found.append(("the project", folder))
            break
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file():
        found.append(("probekit's own checkout", checkout))
    found += [("the Python environment", Path(sys.prefix).resolve()), ("the home folder", Path.home()),
              ("the root folder", Path(Path.cwd().anchor))]
    resolved = []
    for kind, p in found:
        resolved.append((kind, p))
        try:
            if p.resolve() != p:
                resolved.append((kind, p.resolve()))
        except (OSError, RuntimeError):
            pass
    return resolved
