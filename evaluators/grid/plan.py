"""Evaluation grids: a small YAML spec expands to the cross product of its cells; a cell is one ``probes
evaluate <protocol>`` run, stored in a results store under a key, and never run again once stored.

Spec: ``protocol`` (zeroshot, curve, mcqa, pararel, calum), ``models`` (aliases, Hub ids or folders), ``data``
(dataset folders or files); every other key is an option of that protocol as on its command line (``limit: 100``
is ``--limit 100``, ``a_an_filter: false`` is ``--no-a-an-filter``), and a list value is one more axis of the
product (``seeds: [1, 2, 3]``: three cells). A cell's key is the sha256 of its protocol, options, the model's
identity (spec and revision: a Hub commit, or the folder's config and file sizes), the data's fingerprint (the
``meta.json`` fingerprints under it), the params sections the protocol reads (``SECTIONS``; and the top-level
``profile`` for the protocols that record it, ``PROFILED``) and the code version (probekit's version and the
sources of its packages), so any change that could change a result gives a new key.

Store: ``<out>/cells/<key>/`` holds ``cell.json`` (the cell and its key) and ``result/`` (what the evaluate
command wrote: ``predictions.jsonl``, ``metrics.json``...), renamed into place at once when the run succeeded,
and never over a stored cell; a failed run leaves nothing there and is reported with its key and error.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from probekit.errors import DataError, UsageError
from probekit.params import ParamsFile

PROTOCOLS = ("zeroshot", "curve", "mcqa", "pararel", "calum")
SECTIONS = {"zeroshot": ("zeroshot",), "curve": ("zeroshot", "curve"), "mcqa": ("mcqa",),
            "pararel": ("zeroshot", "pararel_eval"), "calum": ("calum_eval",)}
"""The params sections each protocol's command reads where its command line is silent."""
PROFILED = ("curve", "mcqa", "pararel", "calum")
"""Protocols whose metrics.json records the params file's top-level ``profile``: it is part of their keys."""
UNSCORED = {"batch_size"}
"""Params that change no score (rows per forward pass): not part of a key, as they are no DVC params."""
CELL = "cell.json"
RESULT = "result"


class GridSpec(BaseModel):
    """A grid spec file; keys beyond these are the protocol's options."""

    model_config = ConfigDict(extra="allow")
    protocol: Literal["zeroshot", "curve", "mcqa", "pararel", "calum"]
    models: list[str]
    data: list[str]

    @field_validator("models", "data", mode="before")
    @classmethod
    def _listed(cls, value):
        value = value if isinstance(value, list) else [value]
        if not value or not all(isinstance(v, str) and v for v in value):
            raise ValueError("must be a non-empty string or list of strings")
        return value

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


@dataclass(frozen=True)
class Cell:
    protocol: str
    model: str
    data: str
    options: tuple[tuple[str, Any], ...]   # (key, scalar value), in the spec's order

    def record(self) -> dict:
        return {"protocol": self.protocol, "model": self.model, "data": self.data, "options": dict(self.options)}

    def argv(self, out: Path, params: str | None) -> list[str]:
        """The ``probes evaluate`` command line of this cell."""
        argv = ["evaluate", self.protocol, "--model", self.model, "--data", self.data, "--out", str(out)]
        for key, value in self.options:
            flag = "--" + key.replace("_", "-")
            if isinstance(value, bool):
                argv.append(flag if value else f"--no-{key.replace('_', '-')}")
            elif value is not None:
                argv += [flag, str(value)]
        return argv + (["--params", params] if params else [])


def read_spec(path: str | Path) -> GridSpec:
    """The spec file, validated (errors name the file and the field)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--spec {path}: no such file") from None
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise DataError(f"{path}: expected a mapping (protocol, models, data, options)")
    try:
        spec = GridSpec.model_validate(raw)
    except ValidationError as exc:
        raise DataError("; ".join(f"{path}: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) \
            from None
    for key, value in spec.options().items():
        values = value if isinstance(value, list) else [value]
        if not values or any(isinstance(v, (dict, list)) for v in values):
            raise DataError(f"{path}: {key}: an option is a scalar or a list of scalars (one axis of the grid)")
    return spec


def expand(spec: GridSpec) -> list[Cell]:
    """Every cell of the spec: models x data x each list-valued option, in the spec's order."""
    options = spec.options()
    axes = [[(k, v) for v in (value if isinstance(value, list) else [value])] for k, value in options.items()]
    return [Cell(spec.protocol, model, data, tuple(combo))
            for model in spec.models for data in spec.data for combo in itertools.product(*axes)]


def data_fingerprint(path: str | Path) -> str:
    """The fingerprints of every ``meta.json`` under a dataset folder (what the writer recorded of what it wrote),
    or a file's sha256."""
    path = Path(path)
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    metas = sorted(path.rglob("meta.json")) if path.is_dir() else []
    found = {str(m.relative_to(path)): json.loads(m.read_text(encoding="utf-8")).get("fingerprint") for m in metas}
    found = {k: v for k, v in found.items() if v}
    if not found:
        return "missing" if not path.exists() else "unfingerprinted"
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()


def model_identity(name: str, aliases: Mapping[str, str]) -> dict:
    """What identifies a model's weights: its spec and a revision (the Hub commit of the cached snapshot, or a
    folder's config.json and file sizes); ``unresolved`` when neither is found (the run will say why)."""
    from probekit.tokens.refs import entry_parts, resolve_model

    spec, revision = entry_parts(aliases.get(name, name))   # a pinned entry: its id and revision
    try:
        folder = Path(resolve_model(name, aliases, "the grid's params").location)
    except UsageError:
        return {"spec": spec, "revision": "unresolved"}
    if folder.is_dir():
        files = sorted((str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*") if p.is_file())
        config = (folder / "config.json").read_bytes() if (folder / "config.json").is_file() else b""
        return {"spec": spec, "revision": "folder:" + hashlib.sha256(config + json.dumps(files).encode()).hexdigest()}
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(spec, "config.json", revision=revision)
    return {"spec": spec, "revision": Path(cached).parent.name if isinstance(cached, str) else "unresolved"}


def code_version() -> str:
    """probekit's version and the sources of its packages: a change to any evaluator gives new keys."""
    from probekit import __version__

    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(__version__.encode())
    for package in ("probekit", "evaluators", "generators", "probes"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cell_key(cell: Cell, identity: dict, fingerprint: str, code: str, settings: dict) -> str:
    payload = {**cell.record(), "model_identity": identity, "data_fingerprint": fingerprint, "code": code,
               "params": settings}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:20]


@dataclass
class Planned:
    key: str
    cell: Cell
    cached: bool


def plan(spec: GridSpec, store: Path, params: ParamsFile) -> list[Planned]:
    """Every cell with its key, and whether the store already holds it; ``params``: the params file the cells
    read (its model aliases, and the sections of the protocol, which are part of the key)."""
    code, identities, prints = code_version(), {}, {}
    settings = {name: {k: v for k, v in (params.data.get(name) or {}).items() if k not in UNSCORED}
                for name in SECTIONS[spec.protocol]}
    if spec.protocol in PROFILED:
        settings["profile"] = params.profile   # not a section: a string (smoke, paper) or None
    out = []
    for cell in expand(spec):
        identity = identities.setdefault(cell.model, model_identity(cell.model, params.models()))
        fingerprint = prints.setdefault(cell.data, data_fingerprint(cell.data))
        key = cell_key(cell, identity, fingerprint, code, settings)
        out.append(Planned(key, cell, (store / "cells" / key / CELL).is_file()))
    return out


