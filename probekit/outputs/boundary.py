"""Where probekit never writes, ``--force`` or not: :func:`forbidden`.

The protected folders are the current folder, the project (the nearest folder above it with ``dvc.yaml``, ``.dvc``
or ``.git``), probekit's own checkout, the Python installs (``sys.prefix``, ``sys.base_prefix`` and their exec
twins: never replaced, nor their ``bin``/``lib``…, nor anything in a site-packages folder), the home folder and the
root, and any folder holding one of them; a repository, known by what it is (a ``.git``, ``.hg``, ``.svn``, ``.bzr``,
``.jj``, ``_darcs``… folder or file, a bare git repository, a Fossil repository file:
:mod:`probekit.outputs.ownership`) and anything inside it; every DVC cache and local remote DVC's configuration names,
at every level, and its site cache (:mod:`probekit.outputs.dvcconfig`), and anything inside them; a mount point; and
whatever is not a regular file, a folder or a link (:mod:`probekit.outputs.regular`). A folder holding a repository
or a mount point at any depth is refused by the claim, which walks it
(:func:`probekit.outputs.ownership.inventory`). Each is checked on the path as written, with links resolved, and as
the same folder on disk (a bind mount, another spelling on a case-insensitive file system).
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

from probekit.outputs import dvcconfig, ownership
from probekit.outputs.ownership import REPOSITORIES, fossil_file, repository
from probekit.outputs.regular import non_regular

PROJECT_FILES = ("dvc.yaml", ".dvc", ".git")
_INSTALL = ("bin", "lib", "lib64", "include", "Lib", "Scripts", "DLLs", "Include", "libs", "conda-meta")
"""The folders of a Python prefix that are the install itself (a project may live elsewhere under ``/usr``)."""


def forbidden(path: Path) -> str | None:
    """Why probekit may never write or replace ``path`` (a folder or a file), or None."""
    why = non_regular(path)
    if why:
        return f"{why}; probekit writes and replaces only regular files and folders"
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
        if fossil_file(p):
            return "is a repository (a Fossil repository file)"
        for folder in (p, *p.parents):
            what = repository(folder)
            if what:
                return f"is {what}" if folder == p else f"is inside a repository ({folder}: {what})"
    protected = _protected(absolute)
    for kind, folder, within in protected:
        if folder in candidates or _same(absolute, folder):
            return f"is {kind}"
        if within and any(folder in p.parents for p in candidates):
            return f"is inside {kind} ({folder})"
    if _mount(candidates):
        return "is a mount point, which probekit never replaces"
    for kind, folder, _ in protected:
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


def python_installs() -> list[tuple[str, Path, bool]]:
    """This Python's installs: (what, folder, whether writing inside it is refused too: in a virtual or conda
    environment, anywhere; under another prefix, in its install folders only, :data:`_INSTALL`)."""
    found = []
    for name in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix"):
        prefix = getattr(sys, name, None)
        if prefix:
            whole = (Path(prefix) / "pyvenv.cfg").is_file() or (Path(prefix) / "conda-meta").is_dir()
            found.append((f"the Python environment (sys.{name})", Path(prefix), whole))
            found += [(f"the Python environment (sys.{name})", Path(prefix) / sub, True) for sub in _INSTALL]
    packages = list(getattr(site, "getsitepackages", lambda: [])())
    try:
        packages.append(site.getusersitepackages())
    except (AttributeError, TypeError):
        pass
    found += [("a site-packages folder of this Python", Path(p), True) for p in packages if p]
    return found


def _protected(target: Path) -> list[tuple[str, Path, bool]]:
    """(what, folder, whether writing inside it is refused too) for every protected folder."""
    cwd = Path.cwd()
    found = [("the current folder", cwd, False)]
    project = project_root(cwd)
    if project is not None:
        found.append(("the project", project, False))
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        found.append(("probekit's own checkout", checkout, False))
    found += python_installs()
    found += [("the home folder", Path.home(), False), ("the root folder", Path(cwd.anchor), False)]
    seen = set()
    for root in (project, project_root(target.parent), None):
        if root in seen:
            continue
        seen.add(root)
        found += [(kind, folder, True) for kind, folder in dvcconfig.caches(root)]
    resolved = []
    for kind, p, within in found:
        resolved.append((kind, p, within))
        try:
            if p.resolve() != p:
                resolved.append((kind, p.resolve(), within))
        except (OSError, RuntimeError):
            pass
    return resolved


def _mount(candidates: set[Path]) -> bool:
    points = ownership.mount_points()
    for p in candidates:
        if str(p) in points and p.parent != p:
            return True
        try:
            if os.path.ismount(p) and p.parent != p:
                return True
        except (OSError, ValueError):
            pass
    return False


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
