"""A command's output paths, checked before any work: a folder that may be (re)written, a file whose folder can be
made, neither where nothing can be written (read-only, full, no permission), nor what probekit did not write
(:mod:`probekit.outputs`), nor what the command reads (:mod:`probekit.outputs.overlap`). The command line and the
library (:func:`evaluators.evaluate`) check them alike, so a mistake fails before a model loads."""

from __future__ import annotations

import os
from pathlib import Path

from typing import Iterable

from probekit import outputs
from probekit.errors import UsageError
from probekit.outputs import overlap


def out_folder(out: str | Path | None, holds: str, flag: str = "--out", *, kind: str | None = None,
               force: bool = False, replaced: bool = True, reads: Iterable[overlap.Named] = ()) -> Path | None:
    """A command's output folder, checked before any work: a folder or nothing yet, never a file; claimed as a
    ``kind`` output (:func:`probekit.outputs.claim`: not forbidden, probekit's own of that kind or new or empty;
    ``force``: replace it whole all the same, never a repository or a store); outside what the command ``reads``
    (option, path); and writable: the nearest folder above it that exists takes new files. ``holds``: what the folder
    is for, said when it is a file ("the probe's variants are written inside it"). ``replaced=False``: a folder the
    command only adds files to (the downloads of ``probes sources fetch``), which need not be ours; each file is
    claimed when written. None stays None (an option not given). Returns the path to write (``..`` folded)."""
    if out is None:
        return None
    path = outputs.checked_text(out, flag)
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        raise UsageError(f"{flag} {out}: is a file; give a folder ({holds})")
    if replaced:
        if kind is None:
            raise ValueError(f"{flag}: a replaced output folder needs its kind")
        outputs.claim(out, flag, kind=kind, force=force, reads=reads)
    else:
        outputs.claim_into(out, flag, reads=reads)
    _makeable(path, flag)
    return path


def out_file(out: str | Path | None, what: str, flag: str = "--out", *, suffix: str | None = None,
             beside: str | None = None, force: bool = False, reads: Iterable[overlap.Named] = ()) -> Path | None:
    """A command's output file, checked before any work: not a folder; nothing yet, or a file probekit wrote there
    (:func:`probekit.outputs.claim_file`; ``force``: any file); outside what the command ``reads``; its folder can be
    made; ending in ``suffix`` when given. ``beside``: the suffix of a second file written next to it (a report's
    ``.json``), checked alike and never the file itself. ``what``: the file, in the user's terms ("the markdown
    report"). None stays None (an option not given). Returns the path to write (``..`` folded)."""
    if out is None:
        return None
    outputs.not_empty(out, flag)
    path = Path(out)
    if suffix and path.suffix != suffix:
        raise UsageError(f"{flag} {out}: {what} (…/name{suffix})" + (f"; its {beside[1:].upper()} is written beside "
                                                                      f"it" if beside else ""))
    if beside and path.suffix == beside:
        raise UsageError(f"{flag} {out}: {what}; its {beside[1:].upper()} is written beside it "
                         f"({path.with_suffix(beside).name})")
    for target in (path, path.with_suffix(beside) if beside else None):
        if target is not None and target.is_dir() and not target.is_symlink():
            raise UsageError(f"{flag} {out}: {'' if target == path else f'{target}, written beside it, '}is a "
                             f"folder; give a file name ({what})")
    if beside:   # checked first: claiming the file itself with force logs what it deletes
        outputs.claim_file(path.with_suffix(beside), f"{flag} (its {beside[1:].upper()} beside it)", force=force,
                           reads=reads)
    path = outputs.claim_file(out, flag, force=force, reads=reads)
    _makeable(path, flag)
    return path


def _makeable(path: Path, flag: str) -> None:
    """The folders above ``path`` exist or can be made, and new files can be written there: the nearest one that
    exists is a folder, on a file system that is not read-only or full, that this user may write in."""
    for above in path.absolute().parents:
        if above.exists():
            if not above.is_dir():
                raise UsageError(f"{flag} {path}: {above} is a file, so no folder can be made inside it")
            why = unwritable(above)
            if why:
                raise UsageError(f"{flag} {path}: cannot write in {above}: {why}")
            return


def unwritable(folder: Path) -> str | None:
    """Why no file can be written in ``folder`` (read-only file system, no space left, no permission), or None."""
    try:
        stat = os.statvfs(folder)
    except OSError:
        stat = None
    if stat is not None and stat.f_flag & os.ST_RDONLY:
        return "the file system is read-only"
    if stat is not None and stat.f_bavail * stat.f_frsize < MIN_FREE:
        return "the disk is full (no space left on the device)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return "permission denied (this user may not write there)"
    return None


MIN_FREE = 1 << 20
"""Bytes a file system must have free for a command to start writing to it (a full disk fails before any work)."""


