"""The one reader of the JSON and JSONL files probekit reads (dataset rows, source files, predictions, ``metrics.json``,
``meta.json``): strict JSON, errors that name the file and the line.

Strict where Python's :mod:`json` is lax: ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON, which Python reads as
floats, so a NaN score made a NaN accuracy), a number too large for a float (``1e999``, read as infinity), and a
key given twice in one object (Python keeps the last in silence) are each refused in one line, ``<file>:<line>:
...``. A syntax error is :class:`json.JSONDecodeError` for the caller to word (:func:`rows` says ``not valid JSON``).

A JSONL line is read in bounded pieces: one longer than :data:`LONGEST_LINE` is refused with its line number before
it is held whole or parsed, so a 200 MB row costs one 1 MiB read, not minutes of parsing and tokenizing; and with
``limit`` the rows past the first ``limit`` are never read at all.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterator

from probekit.errors import DataError, shown

LONGEST_LINE = 1 << 20
"""The longest JSONL line read, in bytes (1 MiB). The longest real rows are a hundred times shorter: 7.7 KB in the
source mirror (KAMEL's ``P737/test.jsonl``; ParaRel, LAMA and oLMpics rows are under 2 KB), a few KB in generated
data (a CALUM pair row holds two GLUE/KLUE sentences; an MC row a stem and its choices) and in predictions (a row's
scores, ParaRel's top k). A row past it is not a sentence a model reads (it would pass no model's context) but a
broken or hostile file, which a bound of 1 MiB refuses after one read of that size."""


class _Refused(ValueError):
    """A value JSON does not have, or a key twice: refused, never worded as a syntax error."""


def _constant(name: str):
    raise _Refused(f"{name} is not a number JSON has (write null, or a finite number)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"{clip(text)} is too large for a number (it would be read as infinity)")
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        again = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _Refused(f"key {shown(again)} is given twice in one object (JSON readers would keep only one of them)")
    return out


def clip(text: str, longest: int = 40) -> str:
    return text if len(text) <= longest else text[:longest] + "..."


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant, parse_float=_float)


def loads(text: str | bytes, where: str, error: type[Exception] = DataError) -> Any:
    """The JSON value of ``text``, strictly (see the module): ``NaN``, ``Infinity``, a number too large for a float
    or a key twice is ``error`` with one line ``<where>: <why>`` (``where``: the file and line); a syntax error is
    :class:`json.JSONDecodeError`, for the caller to word."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return _DECODER.decode(text)
    except _Refused as exc:
        raise error(f"{where}: {exc}") from None


def read_json(path: str | os.PathLike, error: type[Exception] = DataError) -> Any:
    """The JSON value of the file at ``path`` (a ``metrics.json``, a ``meta.json``), strictly: not UTF-8, not valid
    JSON, ``NaN`` and the rest are ``error`` naming the file (and the line). Raises :class:`OSError` when it cannot
    be read."""
    text = decoded(Path(path).read_bytes(), path, error)
    try:
        return loads(text, str(path), error)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON: {exc}") from None


def decoded(data: bytes, where, error: type[Exception] = DataError) -> str:
    """``data`` (a whole file's bytes, named ``where``) as UTF-8 text; bytes that are not UTF-8 are an error naming
    the bad byte's line and its offset in the file."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{where}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start} of the file)") from None


def lines(path: str | os.PathLike, *, limit: int | None = None,
          error: type[Exception] = DataError) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of the file at ``path`` that is not blank, the first ``limit`` of them
    (None: all), each read in a piece of at most :data:`LONGEST_LINE` bytes: a longer line is ``error`` naming its
    line, before more of it is read; bytes that are not UTF-8 are ``error`` naming the line and the byte's offset."""
    n = offset = given = 0
    if limit is not None and limit <= 0:
        return
    with open(path, "rb") as f:
        while raw := f.readline(LONGEST_LINE + 1):
            n += 1
            if len(raw) > LONGEST_LINE and not raw.endswith(b"\n"):
                raise error(f"{path}:{n}: a line longer than {LONGEST_LINE:,} bytes (1 MiB, the longest row "
                            f"probekit reads): not a row of a dataset, refused unread")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(f"{path}:{n}: not UTF-8 text ({exc.reason} at byte {offset + exc.start} of the file)") \
                    from None
            offset += len(raw)
            if text.strip():
                yield n, text
                given += 1
                if limit is not None and given >= limit:
                    return


def text_lines(text: str, label: str, error: type[Exception] = DataError) -> Iterator[tuple[int, str]]:
    """:func:`lines` of a text already read (a file at a git revision): ``label`` names it; a line longer than
    :data:`LONGEST_LINE` characters is ``error`` naming it, before it is parsed. Lines end at ``\\n`` only, as in a
    file (``str.splitlines`` would also cut a row at a U+2028 that JSON allows inside a string)."""
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > LONGEST_LINE:
            raise error(f"{label}:{n}: a line longer than {LONGEST_LINE:,} characters (1 MiB, the longest row "
                        f"probekit reads): not a row of a dataset, refused unparsed")
        if line.strip():
            yield n, line


def rows(path: str | os.PathLike, *, limit: int | None = None,
         error: type[Exception] = DataError) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each row of a JSONL file (:func:`lines`, :func:`loads`): a line that is not
    valid JSON is ``error`` ``<path>:<line>: not valid JSON: ...``."""
    for n, line in lines(path, limit=limit, error=error):
        try:
            yield n, loads(line, f"{path}:{n}", error)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{n}: not valid JSON: {exc}") from None


def read_jsonl(path: str | Path, *, with_lines: bool = False, limit: int | None = None):
    """Rows of a jsonl file (and their line numbers), the first ``limit`` of them (None: all; the rest never
    read); a bad line is an error naming the file and line (:func:`rows`)."""
    found = list(rows(path, limit=limit))
    got = [row for _, row in found]
    return (got, [n for n, _ in found]) if with_lines else got
