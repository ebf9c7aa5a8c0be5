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
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from probekit.errors import UsageError, clipped
from probekit.outputs import overlap
from probekit.outputs.boundary import forbidden
from probekit.outputs.claim import checked_text
from probekit.outputs.limits import why_unwritable_name
from probekit.outputs.regular import non_regular

READ, WRITE, ADD, EDIT = "read", "write", "add", "edit"
ROLES = (READ, WRITE, ADD, EDIT)
"""``read``: the command reads it; ``write``: an output it writes whole (replacing what is there); ``add``: a folder
it adds files to (each file claimed as it is written); ``edit``: a user's file it edits in place (params.yaml)."""
WRITES = (WRITE, ADD, EDIT)



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
    them, the ones without a path left out. What an interrupted write of an output left beside it is settled first
    (:func:`probekit.outputs.atomic.remove_stale`: an old output a kill left aside is put back, a file put in place is
    recorded), so the checks see the output as the last write left it."""
    from probekit.outputs.atomic import remove_stale

    found = [a for a in accesses if a.path is not None and str(a.path) != ""]
    writes = [a for a in found if a.writes]
    reads = [a for a in found if not a.writes]
    for a in writes:
        text = os.fspath(a.path)
        checked_text(text, a.said)   # empty, or a '~' the shell left
        why = why_unwritable_name(_spelled(text))
        if why:
            raise UsageError(f"{a.said} {clipped(text, 200)}: {why}")
        why = forbidden(Path(overlap.base(text)))
        if why:
            raise UsageError(f"{a.said} {clipped(text, 200)}: {why}, so probekit will not write there, even with "
                             f"--force; give another path")
    for a in found:
        why = non_regular(overlap.base(os.fspath(a.path)))
        if why:
            doing = "write" if a.writes else "read"
            raise UsageError(f"{a.said} {clipped(os.fspath(a.path), 200)}: {why}; probekit {doing}s only regular files "
                             f"and folders (one would block the command, or is no file at all), --force or not")
    for a in writes:
        path = Path(overlap.base(os.fspath(a.path)))
        if overlap.PLACEHOLDER not in os.fspath(a.path) and path.parent.is_dir():
            remove_stale(path.parent, path.name)
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


def _spelled(text: str) -> str:
    """``text`` with ``{probe}`` spelled as the longest name a probe may have (:data:`probekit.names.LONGEST`)."""
    return text.replace(overlap.PLACEHOLDER, "p" * 64)
