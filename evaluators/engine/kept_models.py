"""Scoring models kept loaded between runs in one process: an evaluation grid's worker turns keeping on, so
the cells it runs with the same model load it once. Only the read-only scoring paths load through here
(zero-shot, ParaRel, the curves' mask features); fine-tuning always loads its own copy. Off by default: one
``probes evaluate`` loads its model as it always did."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from pathlib import Path

from evaluators.engine.models import LoadedModel, load_lm
from probekit.tokens.refs import ModelRef

_kept: OrderedDict[tuple, LoadedModel] = OrderedDict()
_size = 0


def keep(size: int) -> None:
    """Keep up to ``size`` models loaded (the most recently used ones); 0 turns keeping off and frees them."""
    global _size
    _size = size
    _evict()


@contextlib.contextmanager
def keeping(size: int = 1):
    """Keep models loaded inside the block (a grid's local executor), and free them after it."""
    before = _size
    keep(size)
    try:
        yield
    finally:
        keep(before)


def scoring_lm(ref: ModelRef, **options) -> LoadedModel:
    """``load_lm(ref, **options)``; while keeping is on, the model already loaded from the same reference, files
    and options when there is one (the caller must not change it: it only scores)."""
    if not _size:
        return load_lm(ref, **options)
    key = (ref, _files(ref.location), tuple(sorted(options.items())))
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]
    _kept[key] = load_lm(ref, **options)
    _evict()
    return _kept[key]


def _files(location: str) -> tuple:
    """A local folder's files with their sizes and modification times (rewritten weights are another model);
    empty for a Hub id, whose revision is fixed for the life of a worker."""
    folder = Path(location)
    if not folder.is_dir():
        return ()
    return tuple(sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                        for p in folder.rglob("*") if p.is_file()))


def _evict() -> None:
    freed = False
    while len(_kept) > _size:
        _kept.popitem(last=False)
        freed = True
    if freed:
        import gc

        import torch

        gc.collect()

        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
