"""A Hub config's rows as Parquet shards in the layout ``Dataset.push_to_hub`` writes
(``<config>/<split>-NNNNN-of-NNNNN.parquet``), each split turned into Arrow once, with features under which every
row loads back exactly as written."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from probekit.hub.export import Export


class _Irregular(Exception):
    pass


def _shape(value, memo: dict):
    if value is None:
        return None
    if isinstance(value, (bool, int, float, str)):
        return type(value).__name__
    if isinstance(value, dict):
        return {k: _shape(v, memo) for k, v in value.items()}
    if isinstance(value, list):
        if id(value) not in memo:
            shape = None
            for v in value:
                shape = _unify(shape, _shape(v, memo))
            memo[id(value)] = ("list", shape)
        return memo[id(value)]
    raise _Irregular(type(value).__name__)


def _unify(a, b):
    if a is None or a == b:
        return b if a is None else a
    if b is None:
        return a
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: _unify(a[k], b[k]) for k in a}
    if isinstance(a, tuple) and isinstance(b, tuple):
        return ("list", _unify(a[1], b[1]))
    raise _Irregular(f"{a} vs {b}")


def features(rows: Iterable[dict], columns: list[str]):
    """The config's features: Arrow's inference for a column whose values all have one shape (nulls allowed),
    ``Json()`` for one whose dicts have different keys or whose types mix (``args``, ``facts``), so every row
    loads back exactly as written."""
    import pyarrow as pa
    from datasets import Features, Json
    from datasets.features.features import generate_from_arrow_type

    rows = list(rows)
    out = {}
    for column in columns:
        values, memo, shape = [r[column] for r in rows], {}, None
        try:
            for v in values:
                shape = _unify(shape, _shape(v, memo))
            out[column] = generate_from_arrow_type(pa.array(values).type)
        except (_Irregular, pa.ArrowException):
            out[column] = Json()
    return Features(out)


def write_parquet(exp: Export, out: Path) -> dict:
    """``<config>/<split>-NNNNN-of-NNNNN.parquet`` under ``out`` (shards of at most ``datasets``' max shard size,
    as ``push_to_hub``), each split turned into Arrow once; returns the config's ``DatasetInfo``."""
    import datasets
    from datasets import Dataset
    from datasets.info import DatasetInfo
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.py_utils import convert_file_size_to_int

    columns = list(dict.fromkeys(k for r in exp.rows.values() for k in (r[0] if r else {})))
    feats = features((row for r in exp.rows.values() for row in r), columns)
    info = DatasetInfo(config_name=exp.name, features=feats, splits=SplitDict(), download_size=0, dataset_size=0)
    max_shard = convert_file_size_to_int(datasets.config.MAX_SHARD_SIZE)
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        for split, rows in exp.rows.items():
            ds = Dataset.from_dict({c: [r[c] for r in rows] for c in columns}, features=feats)
            nbytes, shards = ds.data.nbytes, int(ds.data.nbytes / max_shard) + 1
            for i in range(shards):
                path = out / exp.name / f"{split}-{i:05d}-of-{shards:05d}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                (ds.shard(shards, i, contiguous=True) if shards > 1 else ds).to_parquet(str(path))
                info.download_size += path.stat().st_size
            info.splits.add(SplitInfo(name=split, num_bytes=nbytes, num_examples=len(ds)))
            info.dataset_size += nbytes
    finally:
        if was_enabled:
            datasets.enable_progress_bars()
    info.size_in_bytes = info.download_size + info.dataset_size
    return info
