"""The gate's watch while a command runs: every file it opens for writing, renames, removes, makes, links or changes
(Python's audit events, :pep:`578`) must lie inside what the command declared it writes (:mod:`probekit.outputs.gate`);
and no file is read from inside an output the command is about to replace (that output overlaps an input the
declaration missed: a path that came from somewhere nobody declared). Either is refused where it happens, before a
byte is lost, as an :class:`UndeclaredAccess` naming the path and the command.

What a command may write besides its declared outputs: the temporary files and folders it makes through
:mod:`tempfile` (the atomic writer's staging folders among them), the folders above an output that do not exist
yet, probekit's ledger beside a file output, and the caches and devices libraries write to (:func:`allowed_roots`:
the Hugging Face, torch, matplotlib and user caches, the system's temporary folder, ``/dev/null``). ``strict``
(the tests: :envvar:`PROBEKIT_GUARD` ``=strict``) leaves the system's temporary folder out, so a test's own tree
under ``/tmp`` is watched whole.

Writes by native code (a Parquet writer, a Rust tokenizer, torch's zip writer) raise no audit event; probekit
gives them paths inside a declared output or a staging folder, and the tests compare the whole tree before and
after every command (tests/cli/test_gate_walk.py). Other processes (``dvc``) are not watched here: each stage is a
``probes`` command with its own gate.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from probekit.errors import ProbekitError, clipped

ENV = "PROBEKIT_GUARD"
"""``strict``: the system's temporary folder is watched too (the tests set it); ``off``: no watch (a last resort,
never needed by a correct command)."""
LEDGER = ".probekit-files.json"


class UndeclaredAccess(ProbekitError):
    """A command wrote (or read from an output it replaces) a path its declaration did not name: an error in
    probekit or in a plug-in, refused before it did harm; the message names the path."""


@dataclass
class Watch:
    """What one command declared: ``writes`` (absolute, ``..`` folded; a ``{probe}`` path as its folder), the
    ``replaced`` outputs among them that existed when it started (reading inside one is refused until it is
    written), the roots it may write besides (:func:`allowed_roots`), and what it made through :mod:`tempfile`."""

    command: str
    writes: list[Path]
    replaced: list[Path]
    roots: list[Path]
    made: list[Path] = field(default_factory=list)
    strict: bool = False
    seen: list[tuple[str, str]] = field(default_factory=list)   # (event, path) refused, for the tests' record


_stack: list[Watch] = []
_lock = threading.Lock()
_installed = False


def _absolute(path) -> Path | None:
    try:
        text = os.fsdecode(path)
    except TypeError:
        return None
    if "\0" in text:
        return None
    return Path(os.path.abspath(text))


def _with_fd(path, dir_fd) -> Path | None:
    """``path`` relative to the folder open as ``dir_fd`` (where ``/proc`` says which), else as given."""
    if isinstance(path, int):
        return None
    if dir_fd is not None and dir_fd >= 0 and not os.path.isabs(os.fsdecode(path)):
        try:
            return Path(os.path.abspath(os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), os.fsdecode(path))))
        except OSError:
            return None
    return _absolute(path)


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _writing(flags: int, mode) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))


def _permitted(w: Watch, path: Path, event: str) -> bool:
    if _inside(path, w.writes) or _inside(path, w.made) or _inside(path, w.roots):
        return True
    parts = path.parts
    if any(parts[i:i + 2] == (".dvc", "tmp") for i in range(len(parts) - 1)):
        return True   # DVC's own scratch folder (its locks, its index) when a command reads a revision with DVC
    if (path.name == LEDGER or path.name.startswith(f".{LEDGER}.")) and any(path.parent == p.parent for p in w.writes):
        return True   # probekit's ledger beside a file output (written through a temporary of its own)
    if event == "os.mkdir" and any(path in p.parents for p in w.writes):
        return True   # a folder above an output, made for it
    return False


def _refuse(w: Watch, event: str, path: Path, what: str) -> None:
    w.seen.append((event, str(path)))
    raise UndeclaredAccess(f"probes {w.command}: {what} {clipped(str(path), 300)}, which the command did not "
                           f"declare (an error in probekit: please report it); nothing was written there")


def _hook(event: str, args: tuple) -> None:
    if not _stack or event not in _EVENTS:
        return
    _EVENTS[event](_stack[-1], event, args)


def _on_open(w: Watch, event: str, args) -> None:
    path, mode, flags = args
    if isinstance(path, int):
        return
    if _writing(flags or 0, mode):
        target = _absolute(path)
        if target is not None and not _permitted(w, target, event):
            _refuse(w, event, target, "writes")
        return
    if w.replaced and not (flags or 0) & getattr(os, "O_DIRECTORY", 0):
        target = _absolute(path)
        if target is not None and _inside(target, w.replaced) and not _internal():
            _refuse(w, event, target, "reads, from inside an output it replaces,")


def _on_paths(positions: tuple[int, ...], fds: tuple[int | None, ...]):
    def check(w: Watch, event: str, args) -> None:
        for pos, fd in zip(positions, fds):
            target = _with_fd(args[pos], args[fd] if fd is not None and len(args) > fd else None)
            if target is not None and not _permitted(w, target, event):
                _refuse(w, event, target, "writes")
    return check


def _on_temp(w: Watch, event: str, args) -> None:
    target = _absolute(args[0])
    if target is not None:
        w.made.append(target)


_EVENTS = {
    "open": _on_open,
    "os.rename": _on_paths((0, 1), (2, 3)),
    "os.remove": _on_paths((0,), (1,)),
    "os.rmdir": _on_paths((0,), (1,)),
    "os.mkdir": _on_paths((0,), (2,)),
    "os.symlink": _on_paths((1,), (2,)),
    "os.link": _on_paths((1,), (3,)),
    "os.truncate": _on_paths((0,), (None,)),
    "os.chmod": _on_paths((0,), (2,)),
    "os.chown": _on_paths((0,), (3,)),
    "os.utime": _on_paths((0,), (3,)),
    "shutil.rmtree": _on_paths((0,), (1,)),
    "shutil.copyfile": _on_paths((1,), (None,)),
    "shutil.copytree": _on_paths((1,), (None,)),
    "shutil.move": _on_paths((0, 1), (None, None)),
    "tempfile.mkstemp": _on_temp,
    "tempfile.mkdtemp": _on_temp,
}


def _internal() -> bool:
    """Whether the read comes from probekit's own output checks (the claim reads an output's files to prove them
    probekit's before it replaces them)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("probekit.outputs.") and name != __name__:
            return True
        frame = frame.f_back
    return False


def allowed_roots(strict: bool) -> list[Path]:
    """Where libraries write without being asked: the user's caches (``$XDG_CACHE_HOME`` or ``~/.cache``, the
    Hugging Face, torch and matplotlib folders their variables name, ``~/.config/matplotlib``, ``~/.triton``, DVC's
    site cache: ``/var/tmp/dvc`` or ``$DVC_SITE_CACHE_DIR``), the
    devices any process writes (``/dev/null``, ``/dev/shm``...), and, unless ``strict``, the system's temporary
    folder."""
    home = Path.home()
    env = os.environ
    roots = [Path(env.get("XDG_CACHE_HOME") or home / ".cache"), home / ".config" / "matplotlib", home / ".triton",
             Path("/dev"), Path("/proc/self"), Path("/var/tmp/dvc")]
    for name in ("HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE", "HF_XET_CACHE", "TORCH_HOME",
                 "MPLCONFIGDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "RAY_TMPDIR", "NUMBA_CACHE_DIR",
                 "DVC_SITE_CACHE_DIR"):
        if env.get(name):
            roots.append(Path(env[name]))
    temp = Path(tempfile.gettempdir())
    try:
        user = getpass.getuser()
    except Exception:   # no user name to be had (a container's uid without a passwd entry)
        user = None
    if user:   # torch's and Ray's fixed folders there
        roots += [temp / f"torchinductor_{user}", temp / f"torch_extensions_{user}"]
    roots += [temp / "ray"]
    if not strict:
        roots.append(temp)
    return [Path(os.path.abspath(r)) for r in roots]


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


@contextlib.contextmanager
def watching(command: str, writes: Iterable[str | os.PathLike], *, replaced: Iterable[str | os.PathLike] = (),
             strict: bool | None = None) -> Iterator[Watch]:
    """While the block runs (every thread of this process), refuse what the module refuses for ``command``, whose declared
    outputs are ``writes`` (``replaced``: those it writes whole). Nested (a grid cell run in-process), the innermost
    command's declaration applies. ``strict``: default :envvar:`PROBEKIT_GUARD` ``=strict``."""
    mode = os.environ.get(ENV, "")
    if mode == "off":
        yield Watch(command, [], [], [])
        return
    strict = mode == "strict" if strict is None else strict
    tempfile.gettempdir()   # its first call probes the temporary folder with a write of its own
    from probekit.outputs.overlap import base

    declared = [Path(os.path.abspath(base(os.fspath(p)))) for p in writes]
    declared += [p.resolve() for p in declared if p.is_symlink()]   # an edit written through the user's link
    existing = [Path(os.path.abspath(base(os.fspath(p)))) for p in replaced]
    existing = [p for p in existing if p.exists() and not p.is_symlink()]
    w = Watch(command, declared, existing, allowed_roots(strict), strict=strict)
    _install()
    _stack.append(w)
    try:
        yield w
    finally:
        _stack.remove(w)


def written(target: str | os.PathLike) -> None:
    """The output ``target`` was just written whole (:func:`probekit.outputs.atomic.atomic_path`): reading it is
    reading the command's own output from now on."""
    if not _stack:
        return
    path = Path(os.path.abspath(target))
    for w in _stack:
        w.replaced = [p for p in w.replaced if p != path and path not in p.parents]
