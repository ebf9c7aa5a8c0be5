"""Readers of the object-size source files: BREDS, size-comparisons, VerbPhysics, ViPhy and DoQ.

Each reader turns one raw file into a DataFrame with its line numbers, names normalised (lowercase,
whitespace folded), numbers checked; a malformed row raises :class:`DataError` naming file and line (DoQ:
or is counted, with ``errors="count"``). What the rows mean and which are kept: the docstring of
:mod:`probekit.sources.loaders.object_sizes`.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Literal

import pandas as pd

from probekit.errors import DataError, shown

DOQ_COLUMNS = ("obj", "head", "dim", "mean", "perc_5", "perc_25", "median", "perc_75", "perc_95", "std")
_VP_CODES = {1: "larger (1)", -1: "smaller (-1)", 0: "similar (0)", -42: "no majority (-42)"}
_MISSING = {"", "todo"}


def _norm(name: str) -> str:
    return " ".join(name.replace("\ufeff", "").split()).lower()


def _rows(path: Path, required: tuple[str, ...]):
    """``(line, record)`` of a header-first comma-separated file, every record checked for its field count."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read: {e}") from e
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise DataError(f"{path}: line 1: empty file (expected a header with {', '.join(required)})")
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(f"{path}: line 1: header {header} lacks column(s) {missing}")
    col = {c: header.index(c) for c in required}
    while True:
        try:
            record = next(reader, None)
        except csv.Error as e:
            raise DataError(f"{path}: line {reader.line_num}: {e}") from None
        if record is None:
            return
        line = reader.line_num
        if not record or (len(record) == 1 and not record[0].strip()):
            continue
        if len(record) != len(header):
            raise DataError(f"{path}: line {line}: expected {len(header)} fields, got {len(record)}: {record}")
        yield line, {c: record[i] for c, i in col.items()}


def _number(path, line, field, value, kind=float):
    try:
        out = kind(value.strip())
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise DataError(f"{path}: line {line}: {field} {shown(value)} is not {what}") from None
    if kind is float and not math.isfinite(out):
        raise DataError(f"{path}: line {line}: {field} {shown(value)} is not a finite number")
    return out


def read_verbphysics(path: Path) -> pd.DataFrame:
    """A VerbPhysics ``objects/*/*.csv`` file: ``line, obj1, obj2, size_maj`` (1, -1, 0 or -42)."""
    out = []
    for line, r in _rows(path, ("obj1", "obj2", "size-maj")):
        code = _number(path, line, "size-maj", r["size-maj"], int)
        if code not in _VP_CODES:
            raise DataError(f"{path}: line {line}: size-maj {code} is not one of {sorted(_VP_CODES)}")
        out.append((line, _norm(r["obj1"]), _norm(r["obj2"]), code))
    return pd.DataFrame(out, columns=["line", "obj1", "obj2", "size_maj"])


def read_viphy(path: Path) -> pd.DataFrame:
    """A ViPhy ``dataset/size/*.csv`` file: ``line, obj1, obj2, n_larger, n_smaller, typical``."""
    out = []
    for line, r in _rows(path, ("o1", "o2", ">", "<", "typical")):
        n_gt, n_lt = (_number(path, line, c, r[c], int) for c in (">", "<"))
        if n_gt < 0 or n_lt < 0:
            raise DataError(f"{path}: line {line}: negative count ({n_gt}, {n_lt})")
        typical = r["typical"].strip()
        if typical not in (">", "<", "="):
            raise DataError(f"{path}: line {line}: typical {shown(typical)} is not '>', '<' or '='")
        out.append((line, _norm(r["o1"]), _norm(r["o2"]), n_gt, n_lt, typical))
    return pd.DataFrame(out, columns=["line", "obj1", "obj2", "n_larger", "n_smaller", "typical"])


def read_breds(path: Path) -> pd.DataFrame:
    """A BREDS ``data_numeric/*annotated*.csv`` file: ``line, object, min_m, max_m`` (NaN where not a number)."""
    out = []
    for line, r in _rows(path, ("object", "min", "max")):
        bounds = []
        for c in ("min", "max"):
            v = r[c].strip()
            bounds.append(float("nan") if v.lower() in _MISSING else _number(path, line, c, v))
        out.append((line, _norm(r["object"]), *bounds))
    return pd.DataFrame(out, columns=["line", "object", "min_m", "max_m"])


def read_size_comparisons(path: Path) -> pd.DataFrame:
    """size-comparisons ``data/manually_selected.csv``: ``line, object, length_m`` (NaN for ``TODO``)."""
    out = []
    for line, r in _rows(path, ("object", "length")):
        v = r["length"].strip()
        out.append((line, _norm(r["object"]), float("nan") if v.lower() in _MISSING else
                    _number(path, line, "length", v)))
    return pd.DataFrame(out, columns=["line", "object", "length_m"])


def read_doq(path: Path, errors: Literal["raise", "count"] = "raise") -> pd.DataFrame:
    """A DoQ file (nouns, adjectives or verbs): ``obj, head, dim, mean, perc_5, perc_25, median, perc_75,
    perc_95, std`` plus ``line``.

    The released files are tab-separated without a header; a comma-separated file (the first line decides)
    and a header line starting ``obj<sep>head<sep>dim`` are accepted too. Values are in DoQ's units (LENGTH in
    metres). A line that is not UTF-8, has the wrong number of fields, a non-numeric value or an empty obj or
    dim raises ``DataError`` naming file and line; with ``errors="count"`` it is skipped and its line number
    listed in ``df.attrs["malformed_lines"]``. ``obj`` and ``head`` are lowercased and whitespace-normalised;
    ``dim`` is upper-cased."""
    path = Path(path)
    if errors not in ("raise", "count"):
        raise ValueError(f"errors must be 'raise' or 'count', got {shown(errors)}")
    rows, bad, sep = [], [], None
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e}") from e
    with fh:
        for line, raw_line in enumerate(fh, 1):
            problem, record = None, None
            try:
                text = raw_line.decode("utf-8-sig" if line == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                problem = f"not UTF-8 ({e.reason} at byte {e.start})"
            else:
                if not text.strip():
                    continue
                if sep is None:
                    sep = "\t" if "\t" in text or "," not in text else ","
                record = text.split("\t") if sep == "\t" else next(csv.reader([text]))
                if line == 1 and [c.strip().lower() for c in record[:3]] == ["obj", "head", "dim"]:
                    if [c.strip().lower() for c in record] != list(DOQ_COLUMNS):
                        raise DataError(f"{path}: line 1: header {record} is not {list(DOQ_COLUMNS)}")
                    continue
                if len(record) != len(DOQ_COLUMNS):
                    problem = f"expected {len(DOQ_COLUMNS)} fields, got {len(record)}"
                else:
                    try:
                        values = [float(v) for v in record[3:]]
                    except ValueError:
                        problem = f"non-numeric value in {record[3:]}"
                    else:
                        if not _norm(record[0]) or not record[2].strip():
                            problem = "empty obj or dim"
            if problem:
                if errors == "raise":
                    raise DataError(f"{path}: line {line}: {problem}")
                bad.append(line)
                continue
            rows.append((line, _norm(record[0]), _norm(record[1]), record[2].strip().upper(), *values))
    df = pd.DataFrame(rows, columns=["line", *DOQ_COLUMNS])
    df.attrs["malformed_lines"] = bad
    return df
