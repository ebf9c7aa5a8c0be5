"""Removing what probekit wrote, and nothing else (a grid's pruned cells, a report no cell backs any more)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from probekit.outputs.boundary import forbidden
from probekit.outputs.claim import SHOWN_ENTRIES
from probekit.outputs.marker import forget_loose
from probekit.outputs.ownership import file_kind, inventory

log = logging.getLogger("probekit")


def discard(path: Path) -> bool:
    """Remove the file or folder ``path`` when all of it is probekit's (a folder: no file probekit did not write, no
    repository, no store; a file: its bytes the ones probekit recorded); else keep it and log why. Returns whether it
    is gone (a missing path is)."""
    if not (path.exists() or path.is_symlink()):
        return True
    if forbidden(path):
        log.warning(f"kept {path}: {forbidden(path)}")
        return False
    if path.is_dir() and not path.is_symlink():
        inv = inventory(path)
        kept = inv.foreign or inv.repositories or inv.stores or inv.store
        if kept:
            names = ", ".join((inv.foreign or inv.repositories or inv.stores or ["(a results store)"])[:SHOWN_ENTRIES])
            log.warning(f"kept {path}: it holds {names}, which probekit did not write")
            return False
        shutil.rmtree(path)
        return True
    kind, _ = file_kind(path)
    if kind is None:
        log.warning(f"kept {path}: probekit did not write it (or it changed since)")
        return False
    path.unlink()
    forget_loose(path)
    return True
