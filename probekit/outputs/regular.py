"""Only regular files are opened, and only regular files and folders replaced: a FIFO, a socket or a device node is
never read (a FIFO blocks its reader forever, a device has no bytes to prove) and never replaced, ``--force`` or not.

:func:`non_regular` says what a path is when it is none of these (the gate calls it on every path a command reads or
writes); :func:`special` says it of a mode already stat'ed (a walk's entry); :func:`open_regular` opens a file for
reading only when it is a regular one, without blocking on the way (``O_NONBLOCK``, then ``fstat``: a file swapped
for a FIFO between the check and the open is caught too).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def special(mode: int) -> str | None:
    """What a file of ``mode`` (``st_mode``) is when it is neither a regular file, a folder nor a link: ``a FIFO
    (named pipe)``, ``a socket``, ``a character device``, ``a block device`` (or ``not a regular file``)."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def non_regular(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not something probekit reads or writes, in the words of a one-line refusal (``is a FIFO
    (named pipe)``, ``is a link to a character device (/dev/null)``), or None: a regular file, a folder, a link to
    one of them, a dangling link, or nothing at all. Never opens ``path``."""
    try:
        here = os.lstat(path)
    except (OSError, ValueError):
        return None
    what = special(here.st_mode)
    if what:
        return f"is {what}"
    if stat.S_ISLNK(here.st_mode):
        try:
            what = special(os.stat(path).st_mode)
        except (OSError, ValueError):
            return None
        if what:
            return f"is a link to {what} ({os.path.realpath(path)})"
    return None


def is_regular(path: str | os.PathLike) -> bool:
    """Whether ``path`` itself (not followed) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


class NotRegular(OSError):
    """A path opened for reading that is not a regular file (a FIFO, a socket, a device)."""


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """``path`` opened for reading in binary, when it is a regular file (a link to one is followed); else an
    :class:`OSError` at once (:class:`NotRegular`; :class:`IsADirectoryError` for a folder): a FIFO or a device is
    never waited on, and never read."""
    _refuse(os.stat(path).st_mode, path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        _refuse(os.fstat(fd).st_mode, path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _refuse(mode: int, path) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", os.fspath(path))
    if not stat.S_ISREG(mode):
        raise NotRegular(f"{os.fspath(path)}: {special(mode)}, not a regular file")
