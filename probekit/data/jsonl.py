"""Reading jsonl files: every dataset folder's rows, with errors that name the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

from probekit.errors import DataError


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
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return (rows, lines) if with_lines else rows
