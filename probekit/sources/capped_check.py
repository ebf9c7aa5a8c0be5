"""Whether a run can have the full sources its params ask for: the check behind the one-line refusal of a paper run
that could only read the mirror's capped sources (:mod:`probekit.sources.capped`), run before any work by ``probes
run`` and ``probes rehearse`` (before dvc starts) and by ``probes tables`` (before the table set is read)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from probekit.errors import UsageError
from probekit.sources.capped import CAPS, SPARQL_CACHE, refusal


def _doq_missing(manifest_path: Path, raw: Path, mirror: Path | None) -> str | None:
    """Why DoQ cannot be had for this run (``None``: it can): fetched and verified in ``raw/doq``, else copied from
    ``mirror``, else downloaded, each needing a sha256 (the manifest's, or the one this checkout recorded)."""
    from probekit.sources.fetch import status
    from probekit.sources.manifest import load_manifest, with_recorded

    source = with_recorded(load_manifest(manifest_path)["doq"], manifest_path)
    if all(state == "ok" for _, state in status(source, raw / "doq")):
        return None
    unknown = [f.path for f in source.files if f.sha256 is None]
    if mirror is not None:
        absent = [f.mirror for f in source.files if not (mirror / f.mirror).is_file()]
        if absent:
            return (f"DoQ is neither in {raw / 'doq'} nor in the mirror {mirror} ({', '.join(absent)}), and offline it "
                    f"cannot be fetched")
    if unknown:
        return (f"DoQ has no sha256 to verify against (unconfirmed in {manifest_path}, none recorded here: "
                f"`probes sources fetch doq --record-checksums` records one)")
    return None


def _sparql_missing(params: Mapping, raw: Path, mirror: Path | None) -> str | None:
    """Why Wikidata's SPARQL answers cannot be had (``None``: they can): every relation's cache file under
    ``raw/wikidata_sparql``, else the endpoint, which a run reading its sources from a mirror does not reach."""
    from probekit.sources.loaders import get

    cache = raw / SPARQL_CACHE
    relations = get("wikidata").params.model_validate(dict(params)).relations
    absent = [r for r in relations if not (cache / f"{r}.json").is_file()]
    if not absent or mirror is None:
        return None
    return (f"no SPARQL cache for {', '.join(absent)} in {cache}, and offline (sources read from the mirror {mirror}) "
            f"Wikidata cannot be queried")


def check(params: Mapping, manifest_path: str | os.PathLike, mirror: str | os.PathLike | None,
          raw: str | os.PathLike | None = None, label: str = "params") -> None:
    """Refuse, in one line, a run of ``params`` (a whole composed params mapping) whose capped table sets under
    ``capped: refuse`` read their capped source, or a full source this checkout cannot have (``raw``: the raw root,
    default the manifest's folder; ``mirror``: the one in use, ``None`` when the sources are downloaded)."""
    manifest_path = Path(manifest_path)
    raw = Path(raw) if raw else manifest_path.parent
    mirror = Path(mirror) if mirror else None
    for name, cap in CAPS.items():
        section = ((params.get("tables") or {}).get(name)) or {}
        if section.get("capped") != "refuse":
            continue
        why = refusal(name, section)
        if why is None:
            source = section.get("source") or cap.capped
            missing = (_doq_missing(manifest_path, raw, mirror) if source == "doq"
                       else _sparql_missing(section, raw, mirror) if source == "sparql" else None)
            if missing:
                why = (f"tables.{name}: source {source} under capped: refuse (the paper profile): {missing}; without "
                       f"it {cap.cap}: run capped with {cap.override()}")
        if why:
            raise UsageError(f"{label}: {why}")
