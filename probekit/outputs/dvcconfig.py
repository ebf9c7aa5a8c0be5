"""DVC's caches, found where DVC finds them: ``cache.dir`` at every level of its configuration (system, global, the
repository's ``.dvc/config``, its ``.dvc/config.local``: the later shadows the earlier, and a relative path is from
its file's folder), the default ``.dvc/cache``, the folders of local remotes, and the site cache
(``DVC_SITE_CACHE_DIR``, ``core.site_cache_dir``, else ``/var/tmp/dvc``). The levels' folders are DVC's own
(``dvc/dirs.py``): ``DVC_SYSTEM_CONFIG_DIR`` / ``DVC_GLOBAL_CONFIG_DIR`` when set, else the platform's
(``$XDG_CONFIG_DIRS``/``/etc/xdg`` and ``$XDG_CONFIG_HOME``/``~/.config`` on Linux, ``…/dvc``).

Read with the standard library (no ``import dvc``, no subprocess: a check before any work stays fast); each file
is parsed once per version of it.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+://")


def config_files(root: Path | None) -> list[tuple[str, Path]]:
    """DVC's config files as DVC reads them for the project at ``root`` (None: outside any), in the order they
    shadow each other: (level, path)."""
    files = [("system", Path(_system_dir()) / "config"), ("global", Path(_global_dir()) / "config")]
    if root is not None and (root / ".dvc").is_dir():
        files += [("repo", root / ".dvc" / "config"), ("local", root / ".dvc" / "config.local")]
    return files


def caches(root: Path | None) -> list[tuple[str, Path]]:
    """Every DVC cache a project at ``root`` (or none) may use, and every local remote, each with what it is: the
    ``cache.dir`` of each level, the default ``.dvc/cache``, the site cache."""
    found = []
    for level, path in config_files(root):
        values = read(path)
        cache = values.get("cache", {}).get("dir")
        if cache and not _URL.match(cache):
            found.append((f"the DVC cache set in the {level} DVC config ({path})", _resolve(path.parent, cache)))
        for section, keys in values.items():
            url = keys.get("url") if section.startswith("remote ") else None
            if url and not _URL.match(url):
                found.append((f"a DVC remote set in the {level} DVC config ({path})", _resolve(path.parent, url)))
    if root is not None and (root / ".dvc").is_dir():
        found.append((f"the DVC cache of {root}", root / ".dvc" / "cache"))
    found.append(("DVC's site cache", site_cache_dir(root)))
    return found


def cache_dir(root: Path) -> Path | None:
    """The DVC cache of the project at ``root``, as DVC uses it: the last level's ``cache.dir``, else
    ``.dvc/cache``; None for a folder with no ``.dvc``."""
    if not (root / ".dvc").is_dir():
        return None
    chosen = root / ".dvc" / "cache"
    for _, path in config_files(root):
        cache = read(path).get("cache", {}).get("dir")
        if cache and not _URL.match(cache):
            chosen = _resolve(path.parent, cache)
    return chosen


def site_cache_dir(root: Path | None) -> Path:
    """DVC's site cache folder (its index and temporary files): ``DVC_SITE_CACHE_DIR``, else the last level's
    ``core.site_cache_dir``, else the platform's (``/var/tmp/dvc`` on Unix)."""
    if os.environ.get("DVC_SITE_CACHE_DIR"):
        return Path(os.environ["DVC_SITE_CACHE_DIR"])
    chosen = None
    for _, path in config_files(root):
        value = read(path).get("core", {}).get("site_cache_dir")
        if value:
            chosen = _resolve(path.parent, value)
    if chosen is not None:
        return chosen
    if sys.platform == "win32":
        return Path(os.environ.get("PROGRAMDATA", r"C:\ProgramData")) / "iterative" / "dvc" / "Cache"
    if sys.platform == "darwin":
        return Path("/Library/Caches/dvc")
    return Path("/var/tmp/dvc")


def read(path: Path) -> dict[str, dict[str, str]]:
    """DVC's INI-like config at ``path`` (configobj: indented keys, quoted values, ``#`` comments), section ->
    key -> value, names lower-cased as DVC does; empty when it cannot be read."""
    try:
        st = path.stat()
    except (OSError, ValueError):
        return {}
    return _parse(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _parse(path: Path, mtime: int, size: int) -> dict[str, dict[str, str]]:
    from probekit.outputs.regular import open_regular

    try:
        with open_regular(path) as f:
            text = f.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return {}
    values: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        header = re.fullmatch(r"\[+\s*(.+?)\s*\]+", line)
        if header:
            current = values.setdefault(header.group(1).strip("'\"").lower(), {})
        elif current is not None and "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            current[name.strip().lower()] = _value(value.strip())
    return values


def _value(text: str) -> str:
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        return text[1:end] if end > 0 else text[1:]
    return text.split("#", 1)[0].strip()


def _resolve(folder: Path, value: str) -> Path:
    """A path of a config file in ``folder``, as DVC resolves it: ``~`` expanded, a relative one from ``folder``."""
    return Path(os.path.normpath(folder / os.path.expanduser(value)))


def _system_dir() -> str:
    if os.environ.get("DVC_SYSTEM_CONFIG_DIR"):
        return os.environ["DVC_SYSTEM_CONFIG_DIR"]
    if sys.platform == "win32":
        return os.path.join(os.environ.get("PROGRAMDATA", r"C:\ProgramData"), "iterative", "dvc")
    if sys.platform == "darwin":
        return "/Library/Application Support/dvc"
    first = (os.environ.get("XDG_CONFIG_DIRS", "").strip() or "/etc/xdg").split(os.pathsep)[0]
    return os.path.join(os.path.expanduser(first.rstrip(os.sep)), "dvc")


def _global_dir() -> str:
    if os.environ.get("DVC_GLOBAL_CONFIG_DIR"):
        return os.environ["DVC_GLOBAL_CONFIG_DIR"]
    if sys.platform == "win32":
        return os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser(r"~\AppData\Local")), "iterative",
                            "dvc")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Application Support/dvc")
    home = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
    return os.path.join(home, "dvc")
