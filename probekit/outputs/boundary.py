"""Where probekit never writes, ``--force`` or not: :func:`forbidden`.

The protected folders are the current folder, the project (the nearest folder above it with ``dvc.yaml``, ``.dvc``
or ``.git``), probekit's own checkout, the Python environment, the home folder and the root, and any folder holding
one of them; a repository's own folder (``.git``, ``.dvc``, ``.hg``, ``.svn``) and anything inside it; the project's
DVC cache wherever ``cache.dir`` puts it. A folder holding a repository at any depth is refused by the claim, which
walks it (:func:`probekit.outputs.ownership.inventory`). Each is checked on the path as written, with links
resolved, and as the same folder on disk (a bind mount, another spelling on a case-insensitive file system).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from probekit.outputs import legacy
from probekit.outputs.ownership import REPOSITORIES

PROJECT_FILES = ("dvc.yaml", ".dvc", ".git")
_CACHE = "the DVC cache"


def forbidden(path: Path) -> str | None:
    """Why probekit may never write or replace ``path`` (a folder or a file), or None."""
    absolute = absolute_path(path)
    candidates = {absolute}
    try:
        candidates.add(absolute.resolve())
    except (OSError, RuntimeError):
        pass
    for p in candidates:
        inside = next((part for part in p.parts if part in REPOSITORIES), None)
        if inside:
            return f"is inside a repository's own folder ({inside})"
    protected = _protected(absolute)
    for kind, folder in protected:
        if folder in candidates or _same(absolute, folder):
            return f"is {kind}"
        if kind.startswith(_CACHE) and any(folder in p.parents for p in candidates):
            return f"is inside {kind}"
    for kind, folder in protected:
        if any(p in folder.parents for p in candidates):
            return f"holds {kind} ({folder})"
    return None


def absolute_path(path: Path) -> Path:
    """``path`` made absolute, ``..`` and ``.`` folded without following links (as the shell's ``cd`` does)."""
    return Path(os.path.abspath(path))


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that is a project (``dvc.yaml``, ``.dvc`` or ``.git`` in it)."""
    for folder in (start, *start.parents):
        if any((folder / n).exists() for n in PROJECT_FILES):
            return folder
    return None


def _protected(target: Path) -> list[tuple[str, Path]]:
    cwd = Path.cwd()
    found = [("the current folder", cwd)]
    project = project_root(cwd)
    if project is not None:
        found.append(("the project", project))
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        found.append(("probekit's own checkout", checkout))
    found += [("the Python environment", Path(sys.prefix).resolve()), ("the home folder", Path.home()),
              ("the root folder", Path(cwd.anchor))]
    for root in {project, project_root(target.parent)} - {None}:
        cache = legacy.cache_dir(root)
        if cache is not None:
            found.append((f"{_CACHE} of {root}", cache))
    resolved = []
    for kind, p in found:
        resolved.append((kind, p))
        try:
            if p.resolve() != p:
                resolved.append((kind, p.resolve()))
        except (OSError, RuntimeError):
            pass
    return resolved


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
