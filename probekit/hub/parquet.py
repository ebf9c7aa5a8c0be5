"""A Hub config's rows as Parquet shards in the layout ``Dataset.push_to_hub`` writes
(``<config>/<split>-NNNNN-of-NNNNN.parquet``), each split turned into Arrow once, with features under which every
row loads back exactly as written, and the config's ``dataset_info`` entry of the card; and a config's rows read
back from such shards, in a dry-run folder or a Hub repo.

Only ``datasets``' public API (top-level names) is used: the card YAML is built here, in the Hub's documented
dataset card format, rather than by ``datasets``' internal helpers, which change between releases."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterable

from probekit.hub.export import Export

MAX_SHARD_BYTES = 500 * 10**6  # datasets' default max_shard_size for push_to_hub ("500MB")


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

    rows = list(rows)
    out = {}
    for column in columns:
        values, memo, shape = [r[column] for r in rows], {}, None
        try:
            for v in values:
                shape = _unify(shape, _shape(v, memo))
            out[column] = Features.from_arrow_schema(pa.schema([(column, pa.array(values).type)]))[column]
        except (_Irregular, pa.ArrowException):
            out[column] = Json()
    return Features(out)


def features_yaml(features) -> list:
    """``features`` (a :class:`datasets.Features` or struct) as the card's ``dataset_info`` holds them, in the
    Hub's dataset card format as ``push_to_hub`` writes it: ``[{name, <type>}]``, a type being ``dtype: ...``
    for a value, ``struct: [...]``, or ``list: ...`` with its item type inline when that is a value or a struct."""
    return [{"name": name, **_feature_yaml(f)} for name, f in features.items()]


def _feature_yaml(feature) -> dict:
    from datasets import Json, LargeList, List, Value

    if isinstance(feature, dict):
        return {"struct": features_yaml(feature)}
    if isinstance(feature, (List, LargeList)):
        inner = _feature_yaml(feature.feature)
        if list(inner) in (["dtype"], ["struct"]):
            inner = next(iter(inner.values()))
        length = getattr(feature, "length", -1)
        return {"list" if isinstance(feature, List) else "large_list": inner,
                **({"length": length} if length != -1 else {})}
    if isinstance(feature, Value):
        return {"dtype": feature.dtype}
    if isinstance(feature, Json):
        return {"dtype": "json"}
    raise TypeError(f"no dataset card YAML for a {type(feature).__name__} feature")


def write_parquet(exp: Export, out: Path, max_shard_bytes: int = MAX_SHARD_BYTES) -> dict:
    """``<config>/<split>-NNNNN-of-NNNNN.parquet`` under ``out`` (shards of at most ``max_shard_bytes`` of Arrow
    data, as ``push_to_hub``), each split turned into Arrow once; returns the config's ``dataset_info`` entry
    (``config_name``, ``features``, ``splits``, ``download_size``, ``dataset_size``) as the card holds it."""
    import datasets
    from datasets import Dataset

    columns = list(dict.fromkeys(k for r in exp.rows.values() for k in (r[0] if r else {})))
    feats = features((row for r in exp.rows.values() for row in r), columns)
    splits, download_size = [], 0
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        for split, rows in exp.rows.items():
            ds = Dataset.from_dict({c: [r[c] for r in rows] for c in columns}, features=feats)
            nbytes, shards = ds.data.nbytes, int(ds.data.nbytes / max_shard_bytes) + 1
            for i in range(shards):
                path = out / exp.name / f"{split}-{i:05d}-of-{shards:05d}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                (ds.shard(shards, i, contiguous=True) if shards > 1 else ds).to_parquet(str(path))
                download_size += path.stat().st_size
            splits.append({"name": split, "num_bytes": nbytes, "num_examples": len(ds)})
    finally:
        if was_enabled:
            datasets.enable_progress_bars()
    return {"config_name": exp.name, "features": features_yaml(feats), "splits": splits,
            "download_size": download_size, "dataset_size": sum(s["num_bytes"] for s in splits)}


# --- reading a config back: its shards by split, from a dry-run folder or the Hub ---------------------------------

def read_rows(paths: list[str]) -> list[dict]:
    """The rows of Parquet shards written by :func:`probekit.hub.parquet.write_parquet`, decoded by their features
    (JSON columns back to values) as ``load_dataset`` decodes them."""
    import pyarrow.parquet as pq
    from datasets import Features

    rows: list[dict] = []
    for path in paths:
        table = pq.read_table(path)
        batch = Features.from_arrow_schema(table.schema).decode_batch(table.to_pydict())
        rows += [dict(zip(batch, values)) for values in zip(*batch.values())]
    return rows


def shards_by_split(name: str, paths: list[str]) -> dict[str, list[str]]:
    """Parquet shards of config ``name`` (``<name>/<split>-00000-of-00001.parquet``) by split, in order."""
    out: dict[str, list[str]] = {}
    for p in sorted(paths):
        rel = p.split(f"{name}/", 1)[1] if f"{name}/" in p else p
        if "/" in rel or not rel.endswith(".parquet"):
            continue
        out.setdefault(rel.rsplit("-", 3)[0], []).append(p)
    return out


def folder_rows(folder: Path, name: str) -> dict[str, list[dict]] | None:
    """A config's rows in a folder written by ``probes publish --dry-run`` (None: no files of it)."""
    shards = shards_by_split(name, [p.relative_to(folder).as_posix() for p in (folder / name).glob("*.parquet")])
    if not shards:
        return None
    return {s: read_rows([str(folder / p) for p in paths]) for s, paths in shards.items()}


def hub_rows(api, repo_id: str, sha: str, files: set[str], name: str) -> dict[str, list[dict]] | None:
    """A config's rows in the Hub repo at commit ``sha`` (``files``: the paths it holds; None: none of it)."""
    shards = shards_by_split(name, [f for f in files if f.startswith(f"{name}/")])
    if not shards:
        return None
    with tempfile.TemporaryDirectory(prefix="probekit-previous-") as cache:
        return {s: read_rows([api.hf_hub_download(repo_id, p, repo_type="dataset", revision=sha,
                                                  cache_dir=cache) for p in paths])
                for s, paths in shards.items()}
