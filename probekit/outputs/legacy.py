"""Bytes that probekit wrote before its markers proved them: a DVC stage's output, as the project's ``dvc.lock``
records it. Each stage is one ``probes`` command, so a file whose md5 is the one ``dvc.lock`` records for that path
(a file output, or a file of a folder output, listed by the folder's ``.dir`` object in the DVC cache) was written by
probekit; its kind is read from the stage's command (``probes generate`` writes a dataset). Nothing else counts: an
older marker names files but proves no bytes.

Read with the standard library only (no ``import dvc``: a check before any work stays fast): ``dvc.lock``'s
``outs`` (``hash: md5``, DVC 3's plain md5 of the bytes), the cache folder from ``.dvc/config`` and
``.dvc/config.local``, and the ``.dir`` object at ``files/md5/XX/…`` (DVC 3) or ``XX/…`` (DVC 2) in it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

COMMAND_KINDS = {"generate": "dataset", "tables": "tables", "evaluate": "results", "train": "results",
                 "export": "export", "grid": "store", "publish": "dry-run"}
"""The kind of a folder a stage's ``probes`` command writes; any other command's folder holds figures, and every
file output is a ``file``."""


@dataclass(frozen=True)
class Out:
    """One output of a stage: its absolute ``path``, its ``md5`` (``….dir`` for a folder) and its ``kind``."""

    path: Path
    md5: str
    kind: str

    @property
    def is_dir(self) -> bool:
        return self.md5.endswith(".dir")


def project_of(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` (absolute) that holds a ``dvc.lock``."""
    for folder in (path, *path.parents):
        if (folder / "dvc.lock").is_file():
            return folder
    return None


def recorded_kind(path: Path) -> str | None:
    """The kind of output whose bytes the file ``path`` (absolute) has, as its project's ``dvc.lock`` records them;
    None when no stage's output records these bytes at this path."""
    root = project_of(path.parent)
    if root is None:
        return None
    out = covering(root, path)
    if out is None:
        return None
    if not out.is_dir:
        return out.kind if out.path == path and _md5(path) == out.md5 else None
    listing = tree(root, out.md5)
    rel = path.relative_to(out.path).as_posix()
    return out.kind if listing is not None and listing.get(rel) == _md5(path) else None


def covering(root: Path, path: Path) -> Out | None:
    """The output of ``root``'s ``dvc.lock`` that is ``path`` or a folder holding it."""
    outs = _outs(root / "dvc.lock", *_stamp(root / "dvc.lock"))
    for folder in (path, *path.parents):
        if folder in outs:
            return outs[folder]
        if folder == root:
            return None
    return None


def tree(root: Path, md5: str) -> dict[str, str] | None:
    """A folder output's files (relative path -> md5) from its ``.dir`` object in ``root``'s DVC cache; None when the
    cache lacks it (or it is not what DVC writes, or its own md5 is not ``md5``)."""
    cache = cache_dir(root)
    if cache is None:
        return None
    for obj in (cache / "files" / "md5" / md5[:2] / md5[2:], cache / md5[:2] / md5[2:]):
        try:
            data = obj.read_bytes()
        except OSError:
            continue
        if hashlib.md5(data).hexdigest() + ".dir" != md5:
            return None
        try:
            entries = json.loads(data)
            return {e["relpath"]: e["md5"] for e in entries}
        except (ValueError, TypeError, KeyError):
            return None
    return None


def cache_dir(root: Path) -> Path | None:
    """The DVC cache folder of the project at ``root``: ``cache.dir`` of ``.dvc/config.local`` or ``.dvc/config``
    (relative to ``.dvc/``), else ``.dvc/cache``; None for a folder with no ``.dvc``."""
    dvc = root / ".dvc"
    if not dvc.is_dir():
        return None
    for name in ("config.local", "config"):
        value = _ini_value(dvc / name, "cache", "dir")
        if value:
            return Path(os.path.normpath(dvc / os.path.expanduser(value)))
    return dvc / "cache"


def _ini_value(path: Path, section: str, key: str) -> str | None:
    """``key`` of ``[section]`` in DVC's INI-like config (configobj: indented keys, quoted values)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    current = None
    for line in text.splitlines():
        line = line.strip()
        header = re.fullmatch(r"\[\s*(.+?)\s*\]", line)
        if header:
            current = header.group(1).strip("'\"")
        elif current == section and "=" in line:
            name, _, value = line.partition("=")
            if name.strip() == key:
                return value.strip().strip("'\"")
    return None


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, 0


@functools.lru_cache(maxsize=8)
def _outs(lock: Path, mtime: int, size: int) -> dict[Path, Out]:
    """Every output ``lock`` records with DVC 3's md5 (absolute path -> :class:`Out`); read once per version of the
    file (``mtime``, ``size``)."""
    try:
        data = yaml.safe_load(lock.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    stages = data.get("stages") if isinstance(data, dict) else None
    outs = {}
    for stage in (stages or {}).values():
        if not isinstance(stage, dict):
            continue
        command = _command(stage.get("cmd"))
        for out in stage.get("outs") or ():
            if not (isinstance(out, dict) and out.get("hash") == "md5" and isinstance(out.get("md5"), str)
                    and isinstance(out.get("path"), str)):
                continue
            path = Path(os.path.normpath(lock.parent / out["path"]))
            folder = out["md5"].endswith(".dir")
            kind = COMMAND_KINDS.get(command, "figures") if folder else "file"
            outs[path] = Out(path, out["md5"], kind)
    return outs


def _command(cmd) -> str | None:
    """The ``probes`` command of a stage's ``cmd`` (``probes generate x --out y`` -> ``generate``)."""
    words = (cmd if isinstance(cmd, str) else " ".join(cmd) if isinstance(cmd, list) else "").split()
    return words[1] if len(words) > 1 and Path(words[0]).name == "probes" else None


def _md5(path: Path) -> str | None:
    h = hashlib.md5()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()
