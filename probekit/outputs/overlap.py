"""Outputs never overlap inputs: a command refuses, before any work, an output path that is one of the files or
folders it reads, is inside one, or holds one (replacing it would delete what is being read).

Paths are compared as written (``..`` folded), with links resolved and by identity on disk (``samefile``: a hard
link, a bind mount). A path holding ``{probe}`` stands for the folder before it, whose subfolders it names: every
probe's folder is an input (or output) there.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterable, Iterator

from probekit.errors import UsageError, clipped

PLACEHOLDER = "{probe}"

Named = tuple[str, "str | os.PathLike"]
"""An option and the path it gave (``("--data", "data/probes/age_comparison")``)."""


_reading: list[Named] = []   # what the command running in this process reads (:func:`reading`)


@contextlib.contextmanager
def reading(reads: Iterable[Named]) -> Iterator[None]:
    """While the block runs, the command running reads ``reads`` (its input options): every output it claims is
    checked against them (:func:`check_output`)."""
    added = [(flag, p) for flag, p in reads if p is not None and str(p)]
    _reading.extend(added)
    try:
        yield
    finally:
        del _reading[len(_reading) - len(added):]


def check_output(flag: str, path, reads: Iterable[Named] = ()) -> None:
    """Refuse (one line) the output ``path`` of ``flag`` where it overlaps what the running command reads (those
    inputs that exist), or ``reads``."""
    check([(flag, path)], [(f, p) for f, p in [*_reading, *reads] if exists(p)])


def check(writes: Iterable[Named], reads: Iterable[Named]) -> None:
    """Refuse (one line) the first output of ``writes`` that overlaps an input of ``reads``; ``None`` paths are
    left out."""
    reads = [(flag, p) for flag, p in reads if p is not None and str(p)]
    for wflag, written in writes:
        if written is None or not str(written):
            continue
        for rflag, read in reads:
            how = relation(written, read)
            if how:
                raise UsageError(f"{wflag} {clipped(str(written), 200)}: {how} {rflag} {clipped(str(read), 200)}, "
                                 f"which the command reads; give an output outside what it reads")


def exists(path) -> bool:
    """Whether the input ``path`` is there to be read (with ``{probe}``: the folder before it)."""
    forms, _ = _forms(path)
    return any(p.exists() for p in forms)


def relation(written, read) -> str | None:
    """How the output ``written`` overlaps the input ``read`` ("is the same file or folder as", "is inside",
    "holds", "overlaps" where ``{probe}`` stands for several), or None."""
    w, w_many = _forms(written)
    r, r_many = _forms(read)
    if _same(w, r):
        return "overlaps" if w_many or r_many else "is the same file or folder as"
    if _within(w, r):
        return "is inside"
    if _within(r, w):
        return "holds"
    return None


def _forms(path) -> tuple[set[Path], bool]:
    """The path's spellings to compare (as written, ``..`` folded; with links resolved), and whether it stood for
    several (``{probe}``: the folder before it)."""
    text = os.fspath(path)
    many = PLACEHOLDER in text
    if many:
        text = text[:text.index(PLACEHOLDER)]
        text = text[:text.rfind(os.sep) + 1] if os.sep in text else "."
    absolute = Path(os.path.abspath(text))
    forms = {absolute}
    try:
        forms.add(absolute.resolve())
    except (OSError, RuntimeError):
        pass
    return forms, many


def _same(a: set[Path], b: set[Path]) -> bool:
    if a & b:
        return True
    for x in a:
        for y in b:
            try:
                if os.path.samefile(x, y):
                    return True
            except (OSError, ValueError):
                continue
    return False


def _within(inner: set[Path], outer: set[Path]) -> bool:
    """Whether a spelling of ``inner`` lies inside one of ``outer`` (by path, or by identity on disk of one of its
    folders above)."""
    for x in inner:
        for y in outer:
            if y in x.parents:
                return True
    for x in inner:
        for above in x.parents:
            if above.exists() and _same({above}, outer):
                return True
    return False


def base(text: str) -> str:
    """The folder a path with ``{probe}`` stands for (the part before it); any other path as it is."""
    if PLACEHOLDER not in text:
        return text
    head = text[:text.index(PLACEHOLDER)]
    return head[:head.rfind(os.sep) + 1] if os.sep in head else "."
