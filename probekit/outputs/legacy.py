"""Bytes that probekit wrote before its markers proved them: a DVC stage's output, as the project's ``dvc.lock``
records it. A file whose md5 is the one ``dvc.lock`` records for that path (a file output, or a file of a folder
output, listed by the folder's ``.dir`` object in the DVC cache) was written by probekit only when the stage that
records it runs a ``probes`` command that writes that output, of that output's kind
(:func:`probekit.outputs.stages.written_kind`): an output of a user's own stage (``python train.py``) is the user's,
whatever DVC recorded. Nothing else counts: an older marker names files but proves no bytes.

Read with the standard library only (no ``import dvc``: a check before any work stays fast): ``dvc.lock``'s
``outs`` (``hash: md5``, DVC 3's plain md5 of the bytes) and ``cmd``, a stage's ``wdir`` from ``dvc.yaml``, the
cache folder from DVC's configuration (:mod:`probekit.outputs.dvcconfig`), and the ``.dir`` object at
``files/md5/XX/…`` (DVC 3) or ``XX/…`` (DVC 2) in it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from probekit.outputs import dvcconfig, stages
from probekit.outputs.regular import open_regular

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
    outs = _outs(root / "dvc.lock", _stamp(root / "dvc.lock"), _stamp(root / "dvc.yaml"))
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
            with open_regular(obj) as f:
                data = f.read()
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
    """The DVC cache folder of the project at ``root`` (:func:`probekit.outputs.dvcconfig.cache_dir`)."""
    return dvcconfig.cache_dir(root)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, 0


@functools.lru_cache(maxsize=8)
def _outs(lock: Path, stamp: tuple[int, int], yaml_stamp: tuple[int, int]) -> dict[Path, Out]:
    """Every output ``lock`` records with DVC 3's md5 that a ``probes`` command of its stage writes (absolute path ->
    :class:`Out`); read once per version of it and of ``dvc.yaml`` beside it (``stamp``s: mtime, size)."""
    try:
        data = yaml.load(_text(lock), Loader=_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    stages_ = data.get("stages") if isinstance(data, dict) else None
    wdirs = _wdirs(lock.parent / "dvc.yaml")
    outs = {}
    for name, stage in (stages_ or {}).items():
        if not isinstance(stage, dict) or not isinstance(name, str):
            continue
        wdir = wdirs.get(name.split("@", 1)[0], ".")
        if wdir is None:
            continue   # a wdir DVC templates: not known without DVC
        wdir = Path(os.path.normpath(lock.parent / wdir))
        for out in stage.get("outs") or ():
            if not (isinstance(out, dict) and out.get("hash") == "md5" and isinstance(out.get("md5"), str)
                    and isinstance(out.get("path"), str)):
                continue
            path = Path(os.path.normpath(wdir / out["path"]))
            kind = stages.written_kind(stage.get("cmd"), path, out["md5"].endswith(".dir"), wdir)
            if kind is not None:
                outs[path] = Out(path, out["md5"], kind)
    return outs


def _wdirs(dvc_yaml: Path) -> dict[str, str | None]:
    """Each stage's ``wdir`` in ``dvc_yaml`` (None: templated); a stage that sets none is not listed."""
    try:
        text = _text(dvc_yaml)
    except (OSError, UnicodeDecodeError):
        return {}
    if "wdir" not in text:
        return {}
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError:
        return {}
    found = {}
    for name, stage in ((data or {}).get("stages") or {}).items() if isinstance(data, dict) else ():
        if not isinstance(stage, dict):
            continue
        body = stage.get("do") if isinstance(stage.get("do"), dict) else stage
        wdir = body.get("wdir")
        if isinstance(wdir, str):
            found[str(name)] = None if "${" in wdir else wdir
    return found


def _text(path: Path) -> str:
    with open_regular(path) as f:
        return f.read().decode("utf-8")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _md5(path: Path) -> str | None:
    """The md5 of the regular file ``path``; None when it cannot be read or is not a regular file (never opened)."""
    h = hashlib.md5()
    try:
        with open_regular(path) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()
