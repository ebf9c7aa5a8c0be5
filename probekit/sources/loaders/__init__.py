"""Loaders: raw source files -> small typed tables, one module per source family.

A loader module registers one function per table set with :func:`register`::

    @register("conceptnet", params=ConceptNetParams, sources=lambda p: [...])
    def load(raw: Path, params: ConceptNetParams) -> Loaded: ...

``raw`` is the raw root: one folder per fetched source (``raw/<source>/``, files named as in
``raw/sources.yaml``); ``sources(params)`` names the ones the loader reads with those params. The tables
are pandas DataFrames with fixed columns and a deterministic row order; ``report`` holds JSON-able counts
(rows read, rows dropped and why, per file) for the fidelity report. A malformed row is either an error
naming file and line (``DataError``) or counted in the report: each loader's docstring says which.
``probes tables NAME`` writes them once to Parquet (a DVC stage); generators read the Parquet files.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from pydantic import ConfigDict

from probekit.outputs import atomic
from probekit.errors import DataError, UsageError, shown
from probekit.typed import Typed

if TYPE_CHECKING:  # pandas is imported where tables are read, not by the CLI's parser
    import pandas as pd

HERE = Path(__file__).resolve().parent
_REGISTRY: dict[str, "Loader"] = {}


class LoaderParams(Typed):
    """Params every loader takes (none yet); a loader extends this with its own fields and defaults."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class Loaded:
    tables: dict[str, pd.DataFrame]
    report: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Loader:
    name: str
    fn: Callable[[Path, LoaderParams], Loaded]
    params: type[LoaderParams]
    module_path: Path
    sources: Callable[[LoaderParams], list[str]]  # the raw sources (raw/sources.yaml names) it reads


def register(name: str, *, params: type[LoaderParams] = LoaderParams,
             sources: Callable[[Any], list[str]] | None = None):
    """Decorator: register ``fn(raw_root, params) -> Loaded`` as the loader of table set ``name``;
    ``sources(params)`` names the raw sources it reads with those params (default: ``[name]``)."""

    def wrap(fn):
        module = importlib.import_module(fn.__module__)
        _REGISTRY[name] = Loader(name, fn, params, Path(module.__file__).resolve(), sources or (lambda _p: [name]))
        return fn

    return wrap


def available() -> list[str]:
    """Table sets with a loader module here (the module is named after the set)."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def get(name: str) -> Loader:
    if name not in available():
        raise UsageError(f"no loader for {shown(name)}; available: {', '.join(available())}")
    importlib.import_module(f"probekit.sources.loaders.{name}")
    return _REGISTRY[name]


def write_tables(loaded: Loaded, out: Path) -> Path:
    """``out/<table>.parquet`` for every table and ``out/report.json``, the folder replaced atomically.

    Parquet is written without pandas metadata or row-group statistics that vary between runs, so the
    same tables give the same bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic.atomic_path(out, kind="tables") as tmp:
        tmp.mkdir(parents=True)
        for name, df in loaded.tables.items():
            table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False).replace_schema_metadata()
            pq.write_table(table, tmp / f"{name}.parquet", compression="zstd", write_statistics=False)
        atomic.write_json(tmp / "report.json", loaded.report)
    return out


def read_tables(folder: Path, names: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """The Parquet tables of a ``probes tables`` folder (all, or ``names``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no tables here (run: probes tables {folder.name} --out {folder})")
    files = {p.stem: p for p in sorted(folder.glob("*.parquet"))}
    missing = sorted(set(names or []) - set(files))
    if missing:
        raise DataError(f"{folder}: missing table(s) {missing} (have: {', '.join(files)})")
    import pandas as pd

    return {n: pd.read_parquet(files[n]) for n in (names or files)}


def read_report(folder: Path) -> dict:
    from probekit.data.jsonl import read_json

    return read_json(Path(folder) / "report.json")


class TableSets(Mapping):
    """The table sets a generator may read (``names``), each read from ``folder/<set>`` when the generator first
    asks for it; ``sources`` gathers the raw sources (provenance) of the sets read."""

    def __init__(self, folder: Path, names: tuple[str, ...]):
        self.folder, self.names, self.sources, self._read = folder, names, {}, {}

    def __getitem__(self, name: str):
        if name not in self.names:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = read_tables(self.folder / name)
            self.sources.update(read_report(self.folder / name)["sources"])
        return self._read[name]

    def __contains__(self, name) -> bool:
        return name in self.names

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)
