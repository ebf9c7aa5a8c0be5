"""The files that are a built site's own: regular files inside the site folder, reached without a link at any depth,
none of whose names is hidden (starts with ``.``: probekit's marker and ledger, a temporary folder). Only these are
served (:mod:`.serve`) and published (:mod:`.space`), so the server shows what the Space will show.

A link inside the site is never followed, to a file or folder of the site or to anywhere else; a FIFO, socket or
device is never opened (opening a FIFO blocks). Each file is opened component by component from the site folder
(``openat`` with ``O_NOFOLLOW``), so a link put in place of a folder between a check and the open is not followed
either. The site folder itself may be reached through a link: the researcher named it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def hidden(name: str) -> bool:
    """A name the site never shows: ``.``, ``..`` and every other one starting with a dot."""
    return name.startswith(".")


def open_own(root: str | os.PathLike, parts: list[str] | tuple[str, ...]) -> tuple[int, bool]:
    """``(fd, is_folder)``: an open descriptor of the regular file or folder the names ``parts`` reach from the
    site folder ``root`` (no parts: the site folder), the caller closes it. Any other case raises
    :class:`OSError`: a hidden or empty name, a name with a ``/`` or NUL, a link anywhere on the way, a FIFO,
    socket or device, a missing file."""
    for name in parts:
        if not name or hidden(name) or "/" in name or "\0" in name:
            raise FileNotFoundError(f"{name!r}: no file of the site")
    fd = os.open(root, _DIR & ~os.O_NOFOLLOW)
    try:
        for name in parts[:-1]:
            inner = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = inner
        if not parts:
            return fd, True
        name = parts[-1]
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            inner = os.open(name, _DIR, dir_fd=fd)
        elif stat.S_ISREG(mode):
            inner = os.open(name, _FILE, dir_fd=fd)   # O_NONBLOCK: a FIFO put there since the stat does not block
        else:
            raise FileNotFoundError(f"{name}: a link or a special file, no file of the site")
        os.close(fd)
        fd = inner
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise FileNotFoundError(f"{name}: a special file, no file of the site")
        return fd, stat.S_ISDIR(mode)
    except BaseException:
        os.close(fd)
        raise


def own_file(root: str | os.PathLike, rel: str) -> bool:
    """Whether ``rel`` (``/``-separated) is a regular file of the site's own."""
    try:
        fd, folder = open_own(root, rel.split("/"))
    except OSError:
        return False
    os.close(fd)
    return not folder


def read_own(root: str | os.PathLike, rel: str) -> bytes:
    """The bytes of the site's own regular file ``rel`` (``/``-separated); :class:`OSError` when it is none."""
    fd, folder = open_own(root, rel.split("/"))
    if folder:
        os.close(fd)
        raise IsADirectoryError(f"{rel}: a folder")
    with open(fd, "rb") as f:
        return f.read()


def what(path: Path) -> str:
    """What a left-out entry is, in a word or two."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "gone"
    if stat.S_ISLNK(mode):
        return "a link to a folder" if path.is_dir() else "a link"
    return {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device",
            stat.S_IFBLK: "a device"}.get(stat.S_IFMT(mode), "not a regular file")


def walk_own(site: str | os.PathLike) -> tuple[list[str], list[str]]:
    """``(files, left_out)``: the site's own files as paths relative to it (``/``-separated, sorted), and the
    entries that are not (links, FIFOs and other special files, each with what it is: ``"data/x.json (a link)"``);
    hidden names are neither (the builder's own). A link to a folder is listed, never walked."""
    site = Path(site)
    files: list[str] = []
    left: list[str] = []

    def walk(folder: Path, rel: str) -> None:
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if hidden(entry.name):
                    continue
                path = f"{rel}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    walk(folder / entry.name, path + "/")
                elif entry.is_file(follow_symlinks=False):
                    files.append(path)
                else:
                    left.append(f"{path} ({what(folder / entry.name)})")

    walk(site, "")
    return sorted(files), sorted(left)
