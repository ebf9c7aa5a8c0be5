"""The gate: every path a command reads or writes, wherever it came from, checked together before any work.

A command declares its paths as :class:`Access` records: what it reads (an option, a params key, a model alias's
folder, a grid spec's data), what it writes whole (a folder of a kind, a file), what it adds files to, what
user's file it edits in place. The CLI collects them from the parsed command line (:func:`probes.options.accesses`:
the options' types, and each command's own ``paths`` hook for what params, aliases and specs name); the library
functions that a notebook calls declare theirs the same way. :func:`check` then refuses, in one line naming both
paths and where each came from:

- a path that cannot be written: an empty one, a ``~`` the shell left, a name too long for its file system
  (checked here, not after the work);
- anything that is not a regular file, a folder or a link to one where the command reads or writes (a FIFO would
  block the command forever, a device is no output);
- an output inside, over or holding an input that exists (replacing it would delete what is being read), or
  another output of the same command;
- an output probekit may never write (:func:`probekit.outputs.boundary.forbidden`: a repository, a cache, the
  project, the Python installation...).

Whether an output may be *replaced* (probekit's own bytes, of the same kind; ``--force``) is the claim's question
(:func:`probekit.outputs.claim`), asked next by the command, still before any work; what the command then writes
is watched (:mod:`probekit.outputs.guard`), so a write the declaration missed is refused where it happens.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from probekit.errors import UsageError, clipped
from probekit.outputs import overlap
from probekit.outputs.boundary import forbidden
from probekit.outputs.claim import checked_text

READ, WRITE, ADD, EDIT = "read", "write", "add", "edit"
ROLES = (READ, WRITE, ADD, EDIT)
"""``read``: the command reads it; ``write``: an output it writes whole (replacing what is there); ``add``: a folder
it adds files to (each file claimed as it is written); ``edit``: a user's file it edits in place (params.yaml)."""
WRITES = (WRITE, ADD, EDIT)

NAME_MAX = 255
PATH_MAX = 4096
"""What :func:`too_long` assumes where the file system does not say (``os.pathconf``)."""


@dataclass(frozen=True)
class Access:
    """One path a command reads or writes: its ``role`` (:data:`ROLES`), the ``path`` as given (``{probe}`` stands
    for every probe folder there), and ``said``: where it came from, as a refusal names it (``--out``, ``RESULTS``,
    ``params.yaml always_never.annotations``, ``--model m (params.yaml models.m)``)."""

    role: str
    path: str
    said: str

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"not a role: {self.role!r} (one of {', '.join(ROLES)})")

    @property
    def writes(self) -> bool:
        return self.role in WRITES


def check(accesses: Iterable[Access]) -> list[Access]:
    """Refuse (:class:`UsageError`, one line) the first of ``accesses`` that breaks the module's rules; returns
    them, the ones without a path left out."""
    found = [a for a in accesses if a.path is not None and str(a.path) != ""]
    writes = [a for a in found if a.writes]
    reads = [a for a in found if not a.writes]
    for a in writes:
        text = os.fspath(a.path)
        checked_text(text, a.said)   # empty, or a '~' the shell left
        why = too_long(_spelled(text))
        if why:
            raise UsageError(f"{a.said} {clipped(text, 200)}: {why}")
        why = forbidden(overlap_base(text))
        if why:
            raise UsageError(f"{a.said} {clipped(text, 200)}: {why}, so probekit will not write there, even with "
                             f"--force; give another path")
    for a in found:
        why = non_regular(Path(overlap_base(os.fspath(a.path))), follow=not a.writes)
        if why:
            doing = "write" if a.writes else "read"
            raise UsageError(f"{a.said} {clipped(os.fspath(a.path), 200)}: {why}; probekit {doing}s only regular files "
                             f"and folders (one would block the command, or is no file at all)")
    for i, w in enumerate(writes):
        for other in writes[i + 1:]:
            how = overlap.relation(w.path, other.path)
            if how:
                raise UsageError(f"{w.said} {clipped(os.fspath(w.path), 200)}: {how} {other.said} "
                                 f"{clipped(os.fspath(other.path), 200)}, which the command also writes; give "
                                 f"outputs apart from each other")
        for r in reads:
            if not overlap.exists(r.path):
                continue
            how = overlap.relation(w.path, r.path)
            if how:
                raise UsageError(f"{w.said} {clipped(os.fspath(w.path), 200)}: {how} {r.said} "
                                 f"{clipped(os.fspath(r.path), 200)}, which the command reads; give an output "
                                 f"outside what it reads")
    return found


def overlap_base(text: str) -> str:
    """The folder a path with ``{probe}`` stands for (the part before it); any other path as it is."""
    if overlap.PLACEHOLDER not in text:
        return text
    head = text[:text.index(overlap.PLACEHOLDER)]
    return head[:head.rfind(os.sep) + 1] if os.sep in head else "."


def _spelled(text: str) -> str:
    """``text`` with ``{probe}`` spelled as the longest name a probe may have (:data:`probekit.names.LONGEST`)."""
    return text.replace(overlap.PLACEHOLDER, "p" * 64)


def too_long(text: str) -> str | None:
    """Why the path ``text`` cannot be made on its file system: a component longer than ``NAME_MAX`` bytes or the
    whole path longer than ``PATH_MAX`` (as ``os.pathconf`` of the nearest folder above that exists says), or
    None."""
    absolute = Path(os.path.abspath(text))
    above = next((p for p in absolute.parents if p.is_dir()), Path(absolute.anchor))
    name_max, path_max = _limit(above, "PC_NAME_MAX", NAME_MAX), _limit(above, "PC_PATH_MAX", PATH_MAX)
    for part in absolute.parts[1:]:
        size = len(os.fsencode(part))
        if size > name_max:
            return (f"the name {clipped(part, 40)!r} is {size} bytes long, and a name on this file system has at "
                    f"most {name_max}; give a shorter one")
    size = len(os.fsencode(str(absolute)))
    if size >= path_max:
        return f"the path is {size} bytes long, and a path on this file system has fewer than {path_max}"
    return None


def _limit(folder: Path, name: str, default: int) -> int:
    try:
        value = os.pathconf(folder, name)
    except (OSError, ValueError, AttributeError):
        return default
    return value if value and value > 0 else default


KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device"}


def non_regular(path: Path, follow: bool = True) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder (nor a link: ``follow``, what the
    link points to): "is a FIFO (named pipe)", ...; None otherwise (missing included). Never opens it."""
    try:
        mode = (os.stat if follow else os.lstat)(path).st_mode
    except (OSError, ValueError):
        return None
    kind = KINDS.get(stat.S_IFMT(mode))
    return f"is {kind}" if kind else None
