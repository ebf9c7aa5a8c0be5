"""Atomic writes: an interrupted run never leaves a half-written file or folder in place."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling path; on success rename it onto ``target`` (file or folder)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)) / target.name
    try:
        yield tmp
        if target.is_dir() and not target.is_symlink():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def write_text(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``target`` atomically (UTF-8, ``\\n`` newlines)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")


def write_json(target: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    write_text(target, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def jsonl_text(rows) -> str:
    """One compact JSON object per line: what :func:`write_jsonl` writes."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_jsonl(target: str | os.PathLike, rows) -> None:
    """Write one compact JSON object per line, atomically."""
    write_text(target, jsonl_text(rows))
