"""What no output may be, whatever claims it, said before any work: a path too long for its file system (which
would fail only once the work is done), and a named pipe, a device or a socket (opening one blocks, or reaches a
device; replacing one is never what the user meant). Both ask the system about the path only, so a gate can ask
them of every output."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from probekit.errors import clipped

HOLDER = len(".probekit-4294967295-01234567-abcdefgh.tmp/")
"""The most a write adds to its target's path: the temporary folder it is built in
(:func:`probekit.outputs.atomic.staging`)."""


def why_unwritable_name(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be written for its length (the end of a one-line refusal), or None: a name longer than the
    file system allows (``PC_NAME_MAX`` of the nearest existing folder above it; 255 bytes when it cannot tell), or the
    whole path, with the temporary folder it is written in, longer than ``PC_PATH_MAX``. A few system calls; reads no
    file, so a gate can ask it of every output before the work."""
    absolute = Path(os.path.abspath(path))
    base = absolute.parent
    while not os.path.isdir(base) and base != base.parent:
        base = base.parent
    most = _limit(base, "PC_NAME_MAX", 255)
    for name in absolute.relative_to(base).parts:
        size = len(os.fsencode(name))
        if most is not None and size > most:
            return (f"the name {clipped(name, 40)!r} is {size} bytes long, and the file system allows {most} bytes in "
                    f"a name; give a shorter one")
    most, holder = _limit(base, "PC_PATH_MAX", 4096), HOLDER
    size = len(os.fsencode(str(absolute)))
    if most is not None and size + holder >= most:
        return (f"its full path is {size} bytes long, and the file system allows {most - 1 - holder} here ({most - 1} "
                f"less {holder} for the temporary folder it is written in); give a shorter path")
    return None


def _limit(folder: Path, name: str, default: int) -> int | None:
    """``os.pathconf(folder, name)``; ``default`` when the system cannot tell, None when it has no limit."""
    try:
        value = os.pathconf(folder, name)
    except (OSError, ValueError, AttributeError):
        return default
    return None if value < 0 else value


_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def why_not_replaceable(path: str | os.PathLike) -> str | None:
    """Why ``path`` must never be replaced nor opened, whatever claims it (the end of a one-line refusal): it is a
    named pipe, a device or a socket (opening one blocks or reaches a device); None for a file, a folder, a link or
    nothing. One ``lstat``."""
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, said in _SPECIAL:
        if test(mode):
            return (f"is {said}, not a file or folder; probekit neither opens nor replaces one, even with --force; "
                    f"give another name")
    return None
