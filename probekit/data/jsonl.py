"""Reading jsonl files: every dataset folder's rows, with errors that name the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

from probekit.errors import DataError


def decoded(data: bytes, where) -> str:
    """``data`` (a whole file's bytes, named ``where``) as UTF-8 text; bytes that are not UTF-8 are an error naming
    the bad byte's line and its offset in the file. The one place that offset is computed: a file read as text
    fails with the offset in the chunk its decoder was given, so :func:`read_jsonl` decodes the bytes again here."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{where}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start} of the file)") from None


def read_jsonl(path: str | Path, *, with_lines: bool = False):
    """Rows of a jsonl file (and their line numbers); a bad line is an error naming the file and line."""
    rows, lines = [], []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise DataError(f"{path}:{n}: not valid JSON: {exc}") from None
                    lines.append(n)
    except UnicodeDecodeError:   # its offset is within the decoder's chunk: the file's bytes decoded again, whole
        decoded(Path(path).read_bytes(), path)
        raise
    return (rows, lines) if with_lines else rows
