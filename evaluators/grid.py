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

import contextlib
import hashlib
import io
import itertools
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from probekit import atomic
from probekit.errors import DataError, ProbekitError, UsageError
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
HEADLINE = ("accuracy", "C_R", "C_S", "chance", "n", "queries")   # summary.md columns


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
    from .models import resolve_model

    spec = aliases.get(name, name)
    try:
        folder = Path(resolve_model(name, aliases, "the grid's params").location)
    except UsageError:
        return {"spec": spec, "revision": "unresolved"}
    if folder.is_dir():
        files = sorted((str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*") if p.is_file())
        config = (folder / "config.json").read_bytes() if (folder / "config.json").is_file() else b""
        return {"spec": spec, "revision": "folder:" + hashlib.sha256(config + json.dumps(files).encode()).hexdigest()}
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(spec, "config.json")
    return {"spec": spec, "revision": Path(cached).parent.name if isinstance(cached, str) else "unresolved"}


def code_version() -> str:
    """probekit's version and the sources of its packages: a change to any evaluator gives new keys."""
    from probekit import __version__

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for package in ("probekit", "evaluators", "generators"):
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


def prune(plans: list[Planned], store: Path) -> list[str]:
    """Remove the stored cells that are not cells of this plan (an older code version's keys, cells dropped
    from the spec); returns their keys. Not for a store other grids share."""
    keep = {p.key for p in plans}
    cells = store / "cells"
    gone = sorted(c.name for c in cells.iterdir() if c.name not in keep) if cells.is_dir() else []
    for key in gone:
        shutil.rmtree(cells / key)
    return gone


@dataclass
class Failure:
    key: str
    cell: Cell
    error: str


def run_cell(planned: Planned, store: Path, params: str | None, *, raise_crash: bool = False) -> Failure | None:
    """Run one cell with ``probes evaluate`` in this process, in a temporary folder renamed into the store when
    it succeeded: the cell appears complete or not at all, and only once (renaming a folder onto a stored one
    fails, so a second attempt that finishes later keeps the first). An error of the command (bad input: the
    same on every attempt) comes back as a :class:`Failure`; so does a crash (out of memory, a lost file
    system...), or it is raised with ``raise_crash``, for a retry."""
    from probekit.cli import main

    cells = store / "cells"
    target = cells / planned.key
    if (target / CELL).is_file():   # stored meanwhile (a retried task whose first attempt finished)
        return None
    for stale in cells.glob(f".{planned.key}.*"):   # what a killed attempt left behind
        shutil.rmtree(stale, ignore_errors=True)
    cells.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{planned.key}.", suffix=".tmp", dir=cells))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(["--debug", *planned.cell.argv(tmp / RESULT, params)])   # --debug: errors raised, typed
        if rc != 0:
            return Failure(planned.key, planned.cell, _last_line(err.getvalue()) or f"exit status {rc}")
        atomic.write_json(tmp / CELL, {"key": planned.key, **planned.cell.record()})
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / CELL).is_file():
                raise
        return None
    except ProbekitError as exc:
        return Failure(planned.key, planned.cell, f"probes evaluate {planned.cell.protocol}: error: {_one_line(exc)}")
    except SystemExit as exc:   # argparse: an option the protocol does not take
        return Failure(planned.key, planned.cell, _last_line(err.getvalue()) or f"exit status {exc.code}")
    except Exception as exc:
        if raise_crash:
            raise
        return Failure(planned.key, planned.cell, f"{type(exc).__name__}: {_one_line(exc)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if "error" in line] or text.splitlines()[-1:]
    return lines[-1] if lines else ""


def run_local(plans: list[Planned], store: Path, params: str | None, *, progress: bool = True) -> list[Failure]:
    """The missing cells, one after another in this process, a model that scores kept loaded from one cell to
    the next; a progress bar counts done / cached / failed."""
    from .kept_models import keeping

    with keeping(1):
        return _tally(plans, (run_cell(p, store, params) for p in plans if not p.cached), progress)


def _tally(plans: list[Planned], outcomes: Iterable[Failure | None], progress: bool) -> list[Failure]:
    """The failures among the missing cells' outcomes (as they come), with a progress bar of done / cached /
    failed cells."""
    from tqdm.auto import tqdm

    failures, done, cached = [], 0, sum(p.cached for p in plans)
    with tqdm(total=len(plans), initial=cached, desc="cells", unit="cell", disable=not progress) as bar:
        bar.set_postfix(done=done, cached=cached, failed=0)
        for failure in outcomes:
            if failure:
                failures.append(failure)
            else:
                done += 1
            bar.update()
            bar.set_postfix(done=done, cached=cached, failed=len(failures))
    return failures


def summary(plans: list[Planned], store: Path, failures: list[Failure]) -> list[dict]:
    """One row per cell: its key, the cell, its status and the top-level numbers of its ``metrics.json``
    (per file under the result folder, e.g. one per variant)."""
    failed = {f.key: f.error for f in failures}
    rows = []
    for p in plans:
        result = store / "cells" / p.key / RESULT
        metrics = {}
        for path in sorted(result.rglob("metrics.json")) if result.is_dir() else []:
            m = json.loads(path.read_text(encoding="utf-8"))
            numbers = {k: v for k, v in m.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            numbers |= {k: v["mean"] for k, v in m.items() if isinstance(v, dict) and isinstance(v.get("mean"), float)}
            numbers |= {"zero_shot": m["zero_shot"]} if isinstance(m.get("zero_shot"), bool) else {}
            metrics[str(path.parent.relative_to(result)) if path.parent != result else "."] = numbers
        status = "failed" if p.key in failed else "stored" if (store / "cells" / p.key / CELL).is_file() else "missing"
        rows.append({"key": p.key, **p.cell.record(), "status": status, "error": failed.get(p.key),
                     "metrics": metrics})
    return rows


def write_summary(rows: list[dict], out: Path) -> None:
    """``summary.jsonl`` and ``summary.md`` (a row per cell and metrics file: its accuracy-like numbers)."""
    atomic.write_jsonl(out / "summary.jsonl", rows)
    keys = sorted({k for r in rows for m in r["metrics"].values() for k in m if k in HEADLINE})
    lines = ["| key | model | data | options | result | status | " + " | ".join(keys) + " |",
             "| --- | --- | --- | --- | --- | --- |" + " --- |" * len(keys)]
    for r in rows:
        options = ", ".join(f"{k}={v}" for k, v in r["options"].items()) or "–"
        for part, m in (r["metrics"] or {"–": {}}).items():
            cells = " | ".join(_fmt(m.get(k)) for k in keys)
            status = r["status"] + (f": {r['error']}" if r["error"] else "")
            status += " †" if m.get("zero_shot") is False else ""
            lines.append(f"| `{r['key']}` | {r['model']} | {r['data']} | {options} | {part} | {status} | {cells} |")
    note = ("\n† not zero-shot: the model's LM head was newly initialised (metrics.json `zero_shot: false`).\n"
            if any(m.get("zero_shot") is False for r in rows for m in r["metrics"].values()) else "")
    atomic.write_text(out / "summary.md", "# Grid summary\n\n" + "\n".join(lines) + "\n" + note)



def _fmt(value) -> str:
    if value is None:
        return "–"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _ray_cell(planned: Planned, store: str, params: str | None, cwd: str) -> Failure | None:
    """A Ray task: one cell, run from the driver's working directory (the spec's relative paths). The
    command's own error comes back as the task's value (the same on every attempt); a crash raises, so Ray
    retries it (``retry_exceptions``), as it does a task whose worker died. The worker keeps its last scoring
    model loaded for the next cell (cells are submitted model by model)."""
    import os

    from .kept_models import keep

    os.chdir(cwd)
    keep(1)
    return run_cell(planned, Path(store), params, raise_crash=True)


def run_ray(plans: list[Planned], store: Path, params: str | None, *, address: str | None = None,
            retries: int = 2, progress: bool = True) -> list[Failure]:
    """The missing cells as Ray tasks (a GPU each for a cell with ``device: cuda...``, or ``auto`` on a cluster
    with GPUs; a CPU otherwise) on a running cluster (``address``) or a local Ray; a task whose worker dies or
    whose cell crashes is retried ``retries`` times, then reported with its error (a cell the command rejects,
    e.g. a bad model path, is reported at once), the other cells unaffected. Every node must see the store, and
    the driver's working directory (the spec's relative paths), at the same paths."""
    import ray

    ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR", runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}})
    task = ray.remote(max_retries=retries, retry_exceptions=True)(_ray_cell)
    has_gpu = ray.cluster_resources().get("GPU", 0) >= 1

    def gpus(cell: Cell) -> int:   # device auto: a GPU when the cluster has one (a task without sees none)
        device = str(dict(cell.options).get("device", ""))
        return int(device.startswith("cuda") or (device == "auto" and has_gpu))

    pending = {task.options(num_cpus=1, num_gpus=gpus(p.cell)).remote(p, str(store.resolve()), params,
                                                                       str(Path.cwd())): p
               for p in plans if not p.cached}

    def outcomes():
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            planned = pending.pop(ready[0])
            try:
                failure = ray.get(ready[0])
            except Exception as exc:   # a crash past its retries, or Ray's error (a worker lost past its retries)
                cause = getattr(exc, "cause", None) or exc
                failure = Failure(planned.key, planned.cell, f"{type(cause).__name__}: {_one_line(cause)}"[-400:])
            yield failure

    return _tally(plans, outcomes(), progress)
