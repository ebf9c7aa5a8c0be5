"""Evaluation grids: a small YAML spec expands to the cross product of its cells; a cell is one run of a protocol
(:func:`evaluators.evaluate`, called as its ``probes evaluate <protocol>`` line would call it), stored in a
results store under a key, and never run again once stored.

Spec: ``protocol`` (zeroshot, curve, mcqa, pararel, calum), ``models`` (aliases, Hub ids or folders), ``data``
(dataset folders or files); every other key is an option of that protocol as on its command line (``limit: 100``
is ``--limit 100``, ``a_an_filter: false`` is ``--no-a-an-filter``), and a list value is one more axis of the
product (``seeds: [1, 2, 3]``: three cells). Before any cell runs, the spec is refused, naming the key, when an axis
lists a value twice or, checked by the protocol's own parser, an option is not one its command takes or a cell's
command line does not parse. A cell's key is the sha256 of its protocol, options, the model's identity (spec and
revision: a Hub commit, or the folder's config and file sizes), the data's fingerprint (the ``meta.json``
fingerprints under it), the params sections the protocol reads (``SECTIONS``; and the top-level ``profile`` for the
protocols that record it, ``PROFILED``) and the code version (probekit's version and the sources of its packages),
so any change that could change a result gives a new key.

Store: ``<out>/cells/<key>/`` holds ``cell.json`` (the cell and its key) and ``result/`` (what the evaluate
command wrote: ``predictions.jsonl``, ``metrics.json``...), renamed into place at once when the run succeeded,
and never over a stored cell; a failed run leaves nothing there and is reported with its key and error.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import ConfigDict, ValidationError, field_validator

from probekit import yamlfile
from probekit.data.jsonl import read_json
from probekit.errors import DataError, UsageError, clipped, shown
from probekit.params import ParamsFile
from probekit.typed import Typed
from evaluators import protocols
from evaluators.grid.reports import REPORTS

GRID = tuple(REPORTS)
"""The protocols a grid runs: those with a grid report (:mod:`evaluators.grid.reports`)."""
SECTIONS = {name: protocols.get(name).sections for name in GRID}
"""The params sections each protocol's run reads where its call is silent: those of its params models."""
PROFILED = tuple(name for name in GRID if protocols.get(name).profiled)
"""Protocols whose metrics.json records the params file's top-level ``profile``: it is part of their keys."""
UNSCORED = {"batch_size"}
"""Params that change no score (rows per forward pass): not part of a key, as they are no DVC params."""
CELL = "cell.json"
RESULT = "result"


class GridSpec(Typed):
    """A grid spec file; keys beyond these are the protocol's options."""

    model_config = ConfigDict(extra="allow")
    protocol: Literal[GRID]
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
            argv += option_args(key, value)
        return argv + (["--params", params] if params else [])


def option_args(key: str, value: Any) -> list[str]:
    """One option of a spec on a cell's command line: ``--key VALUE`` (``_`` written ``-``), a switch ``--key``
    (true) or ``--no-key`` (false), nothing for null (the command's default)."""
    flag = "--" + str(key).replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag[2:]]
    return [] if value is None else [flag, str(value)]


RESERVED = {"model": "the spec's `models` lists the models", "data": "the spec's `data` lists the data",
            "out": "each cell writes its own folder in the store (probes grid --out)",
            "params": "give the params file to probes grid --params", "force": "cells write only inside the store"}
"""Options of ``probes evaluate`` that the grid sets itself, with what a spec does instead."""


def read_spec(path: str | Path, commands: Mapping[str, argparse.ArgumentParser] | None = None) -> GridSpec:
    """The spec file, validated (errors name the file and the field), no axis listing a value twice; with
    ``commands`` (each protocol's ``probes evaluate`` parser), also its options (:func:`check_options`)."""
    path = Path(path)
    try:
        raw = yamlfile.read(path)
    except FileNotFoundError:
        raise UsageError(f"--spec {path}: no such file") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
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
    _no_repeats(spec, path)
    if commands is not None:
        check_options(spec, path, commands[spec.protocol])
    return spec


def _no_repeats(spec: GridSpec, path: Path) -> None:
    """No axis (``models``, ``data``, a list-valued option) lists a value twice, compared as a cell's command line
    gives it (``1`` and ``"1"`` alike): the same cell would run twice."""
    axes = {"models": spec.models, "data": spec.data,
            **{k: v for k, v in spec.options().items() if isinstance(v, list)}}
    for key, values in axes.items():
        seen: dict[Any, Any] = {}
        for value in values:
            same = None if value is None else (isinstance(value, bool), str(value))
            if same in seen:
                alike = "" if repr(seen[same]) == repr(value) else f" (first as {_yaml(seen[same])})"
                raise DataError(f"{path}: {key}: {_yaml(value)} is listed twice{alike}; an axis lists each value "
                                f"once (the same cell would run twice)")
            seen[same] = value


def _yaml(value: Any) -> str:
    """A spec's value as an error quotes it: ``true``/``false`` as YAML writes them, anything else :func:`shown`."""
    return str(value).lower() if isinstance(value, bool) else shown(value)


class _Refused(Exception):
    """An argparse error, raised instead of exiting (:func:`check_options`)."""


def _refuse(message: str) -> None:
    raise _Refused(message)


def _exit(status: int = 0, message: str | None = None) -> None:
    raise _Refused(message or f"exited with status {status}")


def check_options(spec: GridSpec, path: Path, command: argparse.ArgumentParser) -> None:
    """Every option of the spec is one that ``command`` (the protocol's ``probes evaluate`` parser) takes, in the
    form a cell gives it (a switch true or false, any other option a value), and every cell's command line parses
    (types, choices, required options), so a mistake fails here, naming the spec and the key, before any cell
    runs. Nothing runs: the parser only reads the command lines."""
    name = command.prog
    actions = {flag: a for a in command._actions for flag in a.option_strings if a.dest != "help"}
    for key, value in spec.options().items():
        flag = option_args(key, "")[0]
        action = actions.get(flag)
        if action is not None and action.dest in RESERVED:
            raise DataError(f"{path}: {clipped(str(key), 80)}: set by the grid, not a spec: {RESERVED[action.dest]}")
        if action is None:
            takes = sorted({next((f for f in a.option_strings if f.startswith("--")), a.option_strings[0])
                            .lstrip("-").replace("-", "_") for a in set(actions.values()) if a.dest not in RESERVED})
            close = difflib.get_close_matches(str(key).replace("-", "_"), takes, n=3)
            hint = f"closest: {', '.join(close)}" if close else "it takes " + clipped(", ".join(takes), 300)
            raise DataError(f"{path}: {clipped(str(key), 80)}: not an option of {name} ({hint})")
        for v in value if isinstance(value, list) else [value]:
            if v is None:
                continue
            if action.nargs == 0 and not isinstance(v, bool):
                raise DataError(f"{path}: {key}: {_yaml(v)}: {flag} is a switch: give true or false")
            if action.nargs != 0 and isinstance(v, bool):
                raise DataError(f"{path}: {key}: {_yaml(v)}: {flag} takes a value, not true or false")
            if option_args(key, v)[0] not in actions:
                raise DataError(f"{path}: {key}: false: {name} has no {option_args(key, v)[0]}; leave {key} out "
                                f"for its default")
    checker = _checker(command)
    for cell in expand(spec):
        try:
            checker.parse_args(cell.argv(Path("cell"), None)[2:])
        except _Refused as exc:
            raise DataError(_refusal(path, name, cell, str(exc))) from None


def _checker(command: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``command`` with the same options, argparse's errors raised (:class:`_Refused`), not printed with an exit."""
    checker = copy.copy(command)
    checker.error, checker.exit = _refuse, _exit
    return checker


def calls(plans: list[Planned], command: argparse.ArgumentParser) -> None:
    """Set each plan's ``call``: its cell's keywords of :func:`evaluators.evaluate` (all but ``out`` and
    ``params``, which the store gives), typed as ``command`` (the protocol's ``probes evaluate`` parser, which
    checked them: :func:`check_options`) types them, its defaults included: the call the command would make."""
    checker = _checker(command)
    for p in plans:
        parsed = vars(checker.parse_args(p.cell.argv(Path("cell"), None)[2:]))
        p.call = {k: v for k, v in parsed.items() if k not in ("func", "out", "params")}


def _refusal(path: Path, name: str, cell: Cell, message: str) -> str:
    """``command``'s error on a cell's command line, naming the spec's key where it names an option."""
    named = re.match(r"argument (\S+): (.*)", message, re.S)
    if named:
        flags = set(named[1].split("/"))
        for key, value in (("models", cell.model), ("data", cell.data), *cell.options):
            given = {"models": ["--model"], "data": ["--data"]}.get(key) or option_args(key, value)[:1]
            if flags & set(given):
                gives = "" if shown(value) in named[2] else f" (the spec gives {shown(value)})"
                return f"{path}: {key}: {named[2]}{gives}"
    required = re.match(r"the following arguments are required: (.*)", message)
    if required:
        keys = ", ".join(f.lstrip("-").replace("-", "_") for f in required[1].split(", "))
        return f"{path}: {name} needs {required[1]}: add {keys} to the spec"
    return f"{path}: {name} refuses the cell {shown(cell.model)} x {shown(cell.data)}: {message}"


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
    found = {str(m.relative_to(path)): read_json(m).get("fingerprint") for m in metas}
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
        folder = Path(resolve_model(name, aliases, "the grid's params", needs=None).location)
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
    call: dict | None = None   # the cell's evaluate() keywords (:func:`calls`)


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


