"""What probekit records of the bytes it wrote: the marker of a folder output and the ledger of loose files.

- ``.probekit.json``, the **marker**, sits at the top of every folder probekit writes whole (a dataset, results, an
  export...). It says what kind of output the folder is (:data:`KINDS`) and lists every file written in it with its
  size and sha256, and every folder. It travels with the folder (git, the DVC cache, a copy), and the same files give
  the same marker, byte for byte.
- ``.probekit-files.json``, the **ledger**, sits beside the loose files a command writes into a folder it does not
  own (``--out results/report.md``, ``--json diff.json``): their names, sizes and sha256s. It is this machine's
  record, ignored by git and DVC (``.gitignore``, ``.dvcignore``).

A marker of an older probekit (``entries``: names only, or ``store``: a results store) is read too, but it proves no
bytes (:mod:`probekit.outputs.legacy` checks those against ``dvc.lock``). A file of either name that is not what
probekit writes is reported in one line (:class:`MarkerError`) and proves nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

from probekit.errors import ProbekitError, shown
from probekit.outputs.regular import open_regular

MARKER = ".probekit.json"
LEDGER = ".probekit-files.json"
WRITTEN_BY = "probekit"
VERSION = 2

KINDS = {
    "dataset": "a dataset (probes generate)",
    "tables": "source tables (probes tables)",
    "results": "results (probes evaluate, probes train)",
    "figures": "figures (a report's --plots or --heatmaps)",
    "export": "an export (probes export)",
    "dry-run": "a publish dry run (probes publish --dry-run)",
    "space": "a Space dry run (probes browse publish --dry-run)",
    "store": "a results store (probes grid), which probekit only adds to",
    "cell": "a cell of a results store (probes grid)",
    "code": "the code of each command (probes code)",
    "site": "a results browser (probes browse build)",
    "file": "a file written by a probes command",
}
"""Every kind of output, as a refusal names it. A command replaces only a folder of its own kind (else ``--force``);
a ``store`` is never replaced."""


class MarkerError(ProbekitError):
    """A ``.probekit.json`` or ``.probekit-files.json`` that is not what probekit writes; the message names it."""


Digest = tuple[int, str]
"""A file's size and sha256."""


@dataclass(frozen=True)
class Marker:
    """A folder's marker as read: its ``kind`` (None for an older marker that names none), ``files`` (relative
    path -> :data:`Digest`; None for an older marker, which lists names only: ``names``) and ``folders``."""

    kind: str | None
    files: Mapping[str, Digest] | None
    folders: frozenset[str] = frozenset()
    names: frozenset[str] = field(default_factory=frozenset)

    @property
    def proves_bytes(self) -> bool:
        return self.files is not None


def digest(path: Path) -> Digest:
    """``path``'s size and sha256 (read in 1 MiB blocks); an :class:`OSError` at once when it is not a regular file
    (a FIFO is never waited on: :func:`probekit.outputs.regular.open_regular`)."""
    h, size = hashlib.sha256(), 0
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return size, h.hexdigest()


def same_bytes(path: Path, recorded: Digest) -> bool:
    """Whether the file at ``path`` has the ``recorded`` size and sha256 (the size compared first); never for what
    is not a regular file (a FIFO, a device: never opened)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != recorded[0]:
            return False
        return digest(path) == tuple(recorded)
    except OSError:
        return False


def write_marker(folder: Path, kind: str) -> None:
    """Mark ``folder`` as a ``kind`` output of probekit: every file and folder under it (links are not written by
    probekit and not listed), relative, sorted. Deterministic: the same files give the same bytes."""
    if kind not in KINDS:
        raise ValueError(f"not a kind of output: {kind!r} (one of {', '.join(KINDS)})")
    files, folders = {}, []
    for top, dirs, names in os.walk(folder):
        dirs.sort()
        rel = Path(top).relative_to(folder)
        for name in dirs:
            folders.append((rel / name).as_posix())
        for name in names:
            path = Path(top) / name
            if (top == str(folder) and name == MARKER) or path.is_symlink():
                continue
            size, sha = digest(path)
            files[(rel / name).as_posix()] = {"size": size, "sha256": sha}
    record = {"written_by": WRITTEN_BY, "marker": VERSION, "kind": kind, "files": dict(sorted(files.items())),
              "folders": sorted(folders)}
    (folder / MARKER).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8",
                                 newline="\n")


def read_marker(folder: Path) -> Marker | None:
    """The marker of ``folder``; None when it has none; :class:`MarkerError` when its ``.probekit.json`` is not one
    probekit writes (not JSON, not probekit's, a field of the wrong shape)."""
    path = folder / MARKER
    data = _read_json(path)
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("written_by") != WRITTEN_BY:
        raise MarkerError(f"{path}: not a probekit marker (no \"written_by\": \"probekit\")")
    if "marker" not in data:   # an older probekit's: names only, or a store
        if "store" in data:
            _check(isinstance(data["store"], str), path, "store", "a description")
            return Marker("store", None)
        names = data.get("entries")
        _check(isinstance(names, list) and all(isinstance(n, str) for n in names), path, "entries",
               "a list of file and folder names")
        return Marker(None, None, names=frozenset(n.rstrip("/") for n in names))
    _check(data["marker"] == VERSION, path, "marker", f"{VERSION}")
    kind = data.get("kind")
    _check(kind in KINDS, path, "kind", "one of " + ", ".join(KINDS))
    digests = _digests(data, path)
    folders = data.get("folders", [])
    _check(isinstance(folders, list) and all(isinstance(f, str) for f in folders), path, "folders",
           "a list of folder names")
    return Marker(kind, digests, frozenset(folders))


def read_ledger(folder: Path) -> dict[str, Digest]:
    """The loose files probekit wrote into ``folder`` (name -> :data:`Digest`); empty when it has no ledger;
    :class:`MarkerError` when its ``.probekit-files.json`` is not one probekit writes."""
    path = folder / LEDGER
    data = _read_json(path)
    if data is None:
        return {}
    if not isinstance(data, dict) or data.get("written_by") != WRITTEN_BY:
        raise MarkerError(f"{path}: not a probekit ledger (no \"written_by\": \"probekit\")")
    return _digests(data, path)


def _digests(data: dict, path: Path) -> dict[str, Digest]:
    """The ``files`` of a marker or ledger read from ``path``: name -> (size, sha256)."""
    files = data.get("files")
    _check(isinstance(files, dict), path, "files", "a mapping of file name to its size and sha256")
    out = {}
    for name, entry in files.items():
        _check(isinstance(entry, dict) and isinstance(entry.get("size"), int) and isinstance(entry.get("sha256"), str),
               path, f"files.{name}", "{\"size\": N, \"sha256\": HEX}")
        out[name] = (entry["size"], entry["sha256"])
    return out


def record_loose(path: Path) -> None:
    """Add the file ``path`` (just written) to its folder's ledger, under a lock: several commands may write into one
    folder at once. A ledger probekit cannot read is left alone (the file then stays unproven)."""
    folder, name = path.parent, path.name
    size, sha = digest(path)
    with _locked(folder):
        try:
            files = read_ledger(folder)
        except MarkerError:
            return
        files[name] = (size, sha)
        _write_ledger(folder, files)


def forget_loose(path: Path) -> None:
    """Drop the file ``path`` (removed by probekit) from its folder's ledger; the ledger goes with its last file."""
    folder = path.parent
    with _locked(folder):
        try:
            files = read_ledger(folder)
        except MarkerError:
            return
        if files.pop(path.name, None) is not None:
            _write_ledger(folder, files)


def _write_ledger(folder: Path, files: Mapping[str, Digest]) -> None:
    path = folder / LEDGER
    if not files:
        path.unlink(missing_ok=True)
        return
    record = {"written_by": WRITTEN_BY, "files": {n: {"size": s, "sha256": h} for n, (s, h) in sorted(files.items())}}
    tmp = folder / f".{LEDGER}.tmp"   # one name: written under the lock; a killed writer's is the next one's
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (flock on the folder itself: no lock file is left), where the system has one."""
    try:
        import fcntl
    except ImportError:   # Windows: no flock; one writer at a time is then the user's to ensure
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _check(ok: bool, path: Path, key: str, wanted: str) -> None:
    if not ok:
        raise MarkerError(f"{path}: not a probekit marker: {shown(key)} must be {wanted}")


def _read_json(path: Path):
    """The JSON in ``path``; None when there is no such file; :class:`MarkerError` when it is not JSON."""
    try:
        with open_regular(path) as f:
            text = f.read(1 << 26).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        if isinstance(exc, IsADirectoryError) or path.is_dir():
            raise MarkerError(f"{path}: a folder, not a probekit marker") from None
        raise MarkerError(f"{path}: cannot be read as a probekit marker ({type(exc).__name__})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise MarkerError(f"{path}: not a probekit marker (not JSON: {exc})") from None


def mark_store(folder: Path) -> None:
    """Mark ``folder`` as a results store (a new or empty folder, or an older probekit's store): commands add to it
    and never replace it. Its cells carry their own markers; its loose files are in its ledger."""
    try:
        marker = read_marker(folder)
    except MarkerError:
        marker = None
    if marker is not None and marker.kind == "store" and marker.proves_bytes:
        return
    folder.mkdir(parents=True, exist_ok=True)
    record = {"written_by": WRITTEN_BY, "marker": VERSION, "kind": "store", "files": {}, "folders": []}
    tmp = folder / f".{MARKER}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MARKER)
