"""``probes browse build``: the results browser, a static site over every prediction file of the project.

The site is the page (``static/``, copied as it is) and its data: ``data/site.json`` (every shard, its runs with
their accuracy, 95% interval and constant-predictor flag, chance and baselines, the smoke banner), and per shard
``rows.json`` (the examples with their facts and control siblings), ``preds.bin`` (every run's answers, one block
per run, read with HTTP range requests: :mod:`.shards`) and ``pairs.bin`` (every pair of runs compared:
:mod:`.pairs`); ``data/versions.json`` with ``--diff``. Everything the page shows that is a statistic is computed
here; the page filters, sorts and lists."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np

from evaluators.browse.pairs import pair_table, resampled_groups
from evaluators.browse.shards import Shard, make_shard, run_summaries
from evaluators.predictions import Dataset, collect, dataset_rows, find_predictions
from evaluators.shared.smoke import BANNER, profile_of
from probekit.data import jsonl
from probekit.errors import UsageError

log = logging.getLogger("probekit")

FORMAT = 1
PAIR_LIMIT = 400
"""Shards with more runs get no ``pairs.bin`` (M² pairs): the compare view then says so."""
COLLECTIONS = ("probes", "grids", "release", "pararel", "calum")
VARIANTS_FIRST = ("original", "nolang", "perturbed", "reverse", "signal")


def _order(ds: Dataset):
    first = VARIANTS_FIRST.index(ds.variant) if ds.variant in VARIANTS_FIRST else len(VARIANTS_FIRST)
    return (COLLECTIONS.index(ds.collection) if ds.collection in COLLECTIONS else len(COLLECTIONS), ds.probe,
            first, _natural(ds.variant), ds.split, ds.path)


PROTOCOLS_FIRST = ("zeroshot", "release", "pararel", "calum", "curve", "mcqa")


def _run_order(label: str, pf):
    """The pipeline's own models first (zero-shot, a paper's runs), then the trained heads and baselines, then a
    grid's cells; by name within each."""
    grid = "· grid" in label
    rank = PROTOCOLS_FIRST.index(pf.protocol) if pf.protocol in PROTOCOLS_FIRST else len(PROTOCOLS_FIRST)
    return (grid, rank, _natural(label))


def _natural(text: str):
    """``P17`` before ``P101``: digits compared as numbers."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def build_site(out: str | Path, *, data: str | Path = "data", results: str | Path = "results",
               diff: str | Path | list | None = None, force: bool = False, root: str | Path | None = None,
               resamples: int = 1000, seed: int = 0, progress: Callable[[str], None] | None = None) -> dict:
    """Write the site to ``out`` (a folder probekit owns as a ``site``: :mod:`probekit.outputs`), returning its
    ``site.json``. ``root``: the folder the prediction files' dataset paths are relative to (default: the parent of
    ``results``). ``resamples``/``seed``: the bootstrap the reports draw (``olmpics_report``)."""
    from probekit import outputs
    from probekit.outputs.atomic import atomic_path

    results, data = Path(results), Path(data)
    say = progress or log.info
    t0 = time.perf_counter()
    files = find_predictions(results, data=data, root=root)
    if not files:
        raise UsageError(f"{results}: no prediction file (predictions.jsonl) of a known layout: run the pipeline "
                         f"first (dvc repro)")
    # what is read: each results folder holding prediction files (the site may sit in results/ beside them)
    tops = sorted({results / f.path.relative_to(results).parts[0] for f in files})
    diffs = [Path(d) for d in (diff if isinstance(diff, (list, tuple)) else [diff] if diff else [])]
    reads = [("--results", t) for t in tops] + [("--data", data)] + [("--diff", d) for d in diffs]
    out = outputs.claim(out, "--out", kind="site", force=force, reads=reads)
    versions = read_diff(diffs) if diffs else None
    grouped = {ds: dict(sorted(runs.items(), key=lambda kv: _run_order(kv[0], kv[1][0])))
               for ds, runs in collect(results, data=data, root=root, files=files).items()}
    root = Path(root) if root is not None else results.parent
    shards = []
    for i, ds in enumerate(sorted(grouped, key=_order)):
        answered = set().union(*(answers.keys() for _, answers in grouped[ds].values()))
        shards.append(make_shard(f"s{i:04d}", ds, dataset_rows(ds, root=root, ids=answered), grouped[ds]))
    say(f"browse: {len(files)} prediction files, {len(shards)} datasets, "
        f"{sum(s.pred.size for s in shards):,} answers read in {time.perf_counter() - t0:.1f} s")
    siblings = link_siblings(shards)
    metas = [pf.meta for pf in files]
    profile = profile_of(metas)
    site = {"format": FORMAT, "title": "probekit results", "profile": profile,
            "banner": _plain(BANNER) if profile == "smoke" else None, "generated_by": _generator(),
            "runs": list(dict.fromkeys(label for s in shards for label in s.runs)), "shards": [],
            "versions": versions is not None}
    with atomic_path(out, kind="site") as tmp:
        tmp.mkdir()
        _copy_static(tmp)
        base = tmp / "data" / "shards"
        base.mkdir(parents=True)
        for shard in shards:
            site["shards"].append(_write_shard(base / shard.id, shard, siblings[shard.id], resamples, seed, root))
        for entry in site["shards"]:
            entry["siblings"] = [e["id"] for e in site["shards"] if e["id"] != entry["id"] and
                                 (e["collection"], e["probe"], e["split"]) ==
                                 (entry["collection"], entry["probe"], entry["split"])]
        if versions is not None:
            _write_json(tmp / "data" / "versions.json", versions)
        site["restricted"] = sorted({s["restricted"] for s in site["shards"] if s["restricted"]})
        _write_json(tmp / "data" / "site.json", site)
    say(f"browse: {out}/ written in {time.perf_counter() - t0:.1f} s ({len(site['runs'])} runs, "
        f"{len(shards)} shards)")
    return site


def _generator() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"probekit {version('probekit')}"
    except PackageNotFoundError:
        return "probekit"


def _plain(markdown: str) -> str:
    return markdown.lstrip("> ").replace("**", "").replace("`", "")


def _copy_static(dest: Path) -> None:
    static = resources.files("evaluators.browse") / "static"
    for item in sorted(static.iterdir(), key=lambda p: p.name):
        if item.is_file() and not item.name.startswith("."):
            (dest / item.name).write_bytes(item.read_bytes())


def _write_json(path: Path, value) -> None:
    path.write_text(json.dumps(_clean(value), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def _clean(value):
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, np.generic):
        return _clean(value.item())
    return value


def _write_shard(folder: Path, shard: Shard, siblings: list[dict], resamples: int, seed: int, root: Path) -> dict:
    folder.mkdir()
    ds = shard.dataset
    rows = [{**{k: r[k] for k in ("id", "stem", "choices", "gold", "answer", "template", "group", "source_id",
                                  "args")},
             **({"facts": r["facts"]} if r.get("facts") not in (None, [], {}) else {}), "siblings": sib}
            for r, sib in zip(shard.rows, siblings)]
    (folder / "rows.json").write_text(json.dumps({"rows": rows, "vocab": shard.vocab}, ensure_ascii=False,
                                                 separators=(",", ":")), encoding="utf-8")
    with open(folder / "preds.bin", "wb") as f:
        for r in range(len(shard.runs)):
            f.write(shard.block_bytes(r))
    pairs = 2 <= len(shard.runs) <= PAIR_LIMIT
    groups = resampled_groups(shard.correct, shard.answered, resamples=resamples, seed=seed, units=shard.units)
    if pairs:
        table = pair_table(shard.correct, shard.answered, resamples=resamples, seed=seed, groups=groups,
                           units=shard.units)
        (folder / "pairs.bin").write_bytes(table.astype("<f4").tobytes())
    summaries = run_summaries(shard, resamples=resamples, seed=seed, groups=groups)
    meta = shard.files[0].meta if shard.files else {}
    licence = _dataset_meta(shard, root)
    runs = []
    for r, (s, pf) in enumerate(zip(summaries, shard.files)):
        runs.append({**s, "model": pf.model, "protocol": pf.protocol, "setting": _setting(s["label"], pf),
                     "source": pf.path.as_posix(), "offset": r * shard.block})
    return {"id": shard.id, "family": ds.family, "collection": ds.collection, "probe": ds.probe,
            "variant": ds.variant, "split": ds.split, "data": ds.path, "version": _str(licence.get("generator_version")),
            "fingerprint": meta.get("data_fingerprint"), "n": len(shard.rows), "k": shard.k,
            "chance": _chance(shard), "baselines": _baselines(shard), "block": shard.block, "runs": runs,
            "siblings": [], "pairs": pairs, "license": licence.get("license"), "restricted": _restricted(licence)}


def _str(value) -> str | None:
    return None if value is None else str(value)


def _dataset_meta(shard: Shard, root: Path) -> dict:
    """The ``meta.json`` of the shard's dataset folder (a variant's, else its config's two levels up); an original
    release file stands for the ``olmpics`` source."""
    if shard.dataset.collection == "release":
        return {"sources": {"olmpics": {}}}
    path = Path(shard.dataset.path)
    path = path if path.is_absolute() else root / path
    for folder in (path if path.is_dir() else path.parent, path.parent.parent):
        meta = folder / "meta.json"
        if meta.is_file():
            try:
                value = jsonl.loads(meta.read_bytes(), str(meta))   # NaN or a key twice: refused, not passed over
            except (OSError, json.JSONDecodeError, UnicodeDecodeError):
                return {}
            return value if isinstance(value, dict) else {}
    return {}


def _restricted(meta: dict) -> str | None:
    """Why the shard's rows may not be shown publicly for any use (:func:`probekit.hub.export.restriction`: a
    non-commercial or unlicensed source), or None; a dataset whose sources are unknown counts as restricted."""
    from probekit.hub.export import restriction

    if not meta:
        return "no meta.json: its sources and licence are unknown"
    return restriction(meta)


def _setting(label: str, pf) -> str | None:
    return label[len(pf.label):].strip() or None if label.startswith(pf.label) else None


def _chance(shard: Shard) -> float | None:
    for pf in shard.files:
        if isinstance(pf.meta.get("chance"), (int, float)):
            return float(pf.meta["chance"])
    ks = [len(r["choices"]) for r in shard.rows if r["choices"]]
    return float(np.mean([1 / k for k in ks])) if ks else None


def _baselines(shard: Shard) -> list[dict]:
    """The reference lines of the shard's report: the majority answer's accuracy (ParaRel's and CALUM's
    ``majority`` in ``metrics.json``)."""
    out = []
    for pf in shard.files:
        m = pf.meta.get("majority")
        if isinstance(m, (int, float)):
            out.append({"label": "majority", "value": float(m)})
            break
        if isinstance(m, dict):
            rel = (m.get("relations") or {}).get(shard.dataset.variant) if isinstance(m.get("relations"), dict) else None
            value = rel if isinstance(rel, (int, float)) else m.get("accuracy") or m.get("mean")
            if isinstance(value, (int, float)):
                out.append({"label": "majority", "value": float(value)})
                break
    return out


def link_siblings(shards: list[Shard]) -> dict[str, list[dict]]:
    """Per shard, per row: ``{shard id: row index}`` of the same example in the other shards of its probe and split:
    a control and its base (``source_id``), two controls of one base, a CALUM pair's variants (``group``)."""
    out = {s.id: [{} for _ in s.rows] for s in shards}
    families: dict[tuple, list[Shard]] = {}
    for s in shards:
        families.setdefault((s.dataset.collection, s.dataset.probe, s.dataset.split), []).append(s)
    for group in families.values():
        if len(group) < 2 or group[0].dataset.family == "pararel":
            continue
        by_key: dict[str, list[tuple[str, int]]] = {}
        for s in group:
            for i, r in enumerate(s.rows):
                key = r["group"] if s.dataset.family == "calum" else (r["source_id"] or r["id"])
                by_key.setdefault(key, []).append((s.id, i))
        for members in by_key.values():
            for sid, i in members:
                for other, j in members:
                    if other != sid:
                        out[sid][i].setdefault(other, j)
    return out


def read_diff(paths) -> dict:
    """``versions.json`` from ``probes diff`` outputs: a ``--json`` file (the old and new sides, the per-split counts
    and, with ``--model``, the flips) and/or an ``--examples`` file (every added, removed and changed example, its
    flip beside it); given both (``--diff`` twice), one view of the two."""
    paths = [Path(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    out = {"source": ", ".join(p.name for p in paths), "old": None, "new": None, "splits": []}
    splits: dict[tuple, dict] = {}

    def split(config, name):
        if (config, name) not in splits:
            splits[(config, name)] = {"config": config, "split": name, "added": 0, "removed": 0, "changed": 0,
                                      "examples": [], "effects": []}
            out["splits"].append(splits[(config, name)])
        return splits[(config, name)]

    for path in paths:
        _read_one_diff(path, out, split)
    return out


def _read_one_diff(path: Path, out: dict, split) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--diff {path}: cannot be read ({exc.strerror or exc.__class__.__name__})") from None
    try:
        whole = jsonl.loads(text, f"--diff {path}", UsageError)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("datasets"), list):
        out["old"], out["new"] = whole.get("old"), whole.get("new")
        for r in whole["datasets"]:
            s = split(r.get("config"), r.get("split"))
            for k in ("added", "removed", "changed"):
                s[k] = int(r.get(k) or 0)
        for e in whole.get("effects") or []:
            s = split(e.get("config"), e.get("split"))
            s["effects"].append({"model": e.get("model"), **(e.get("flips") or {}),
                                 "flipped": e.get("flipped") or [], "mcnemar": e.get("mcnemar"),
                                 "change": e.get("change")})
        return
    counted = {}
    for n, line in jsonl.text_lines(text, f"--diff {path}", UsageError):
        try:
            row = jsonl.loads(line, f"--diff {path}:{n}", UsageError)
        except json.JSONDecodeError:
            raise UsageError(f"--diff {path}:{n}: neither a `probes diff --json` file nor `--examples` JSONL") from None
        if not isinstance(row, dict) or "status" not in row:
            raise UsageError(f"--diff {path}:{n}: not an example of `probes diff --examples` (no status)")
        s = split(row.get("config"), row.get("split"))
        if row["status"] in ("added", "removed", "changed"):
            counted.setdefault(id(s), (s, {"added": 0, "removed": 0, "changed": 0}))[1][row["status"]] += 1
        s["examples"].append(row)
    for s, counts in counted.values():   # the examples' counts where no --json file gave them
        for k, v in counts.items():
            s[k] = s[k] or v
