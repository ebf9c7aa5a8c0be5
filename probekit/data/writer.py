"""The one writer of dataset folders, for every family (MC-MLM and MC-QA probes, ParaRel's cloze set, CALUM's pair
sets): rows -> jsonl files, each ``meta.json`` completed with the licence, the sources and the fingerprint of
exactly what was written, and each folder's card; the dataset appears at once or not at all."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from probekit.outputs import atomic
from probekit.data.licence import licence_id
from probekit.errors import DataError

FILLED = ("license", "sources", "fingerprint")   # the meta.json keys the writer fills in


@dataclass(frozen=True)
class Part:
    """One folder of a dataset with its own ``meta.json`` and card: ``folder`` relative to the dataset's ("" for
    the dataset folder itself), ``files`` ``{relative path: rows}``, ``meta`` (with its ``params``; a key of
    :data:`FILLED` it holds keeps its place, the others are added last) and ``card(meta) -> README text``."""

    folder: str
    files: Mapping[str, Sequence[dict]]
    meta: dict
    card: Callable[[dict], str]


@dataclass(frozen=True)
class Dataset:
    """What a generator returns: its ``parts``, the ``license`` of data whose sources state none (a synthetic
    probe's own; None: it must have sources, and ``definition`` names the file that should say it) and the lines
    ``probes generate`` prints."""

    parts: tuple[Part, ...]
    license: str | None = None
    definition: str = ""
    summary: tuple[str, ...] = ()


def write_dataset(out: str | Path, dataset: Dataset, sources: Mapping[str, Mapping] | None = None) -> Path:
    """Write every part of ``dataset`` under ``out``; ``sources``: the provenance of what its generator read
    (licence, licence id, citation, file sha256s), whose licence id is the data's (else ``dataset.license``)."""
    sources = dict(sources or {})
    licence = licence_id(sources) or dataset.license
    if not licence:
        raise DataError(f"{dataset.definition}: a probe that reads no sources must state its 'license'")
    with atomic.atomic_path(Path(out), kind="dataset") as tmp:
        for part in dataset.parts:
            texts = {path: atomic.jsonl_text(rows) for path, rows in part.files.items()}
            meta = {**part.meta, "license": licence, "sources": sources}
            meta = {**meta, "fingerprint": fingerprint(meta["params"], texts)}
            folder = tmp / part.folder if part.folder else tmp
            for path, text in texts.items():
                atomic.write_text(folder / path, text)
            atomic.write_json(folder / "meta.json", meta)
            atomic.write_text(folder / "README.md", part.card(meta))
    return Path(out)


def fingerprint(params: Mapping, files: Mapping[str, str]) -> str:
    """sha256 over the params and the bytes written (``files``: name -> text): a code or template change
    that changes no output leaves it alone, and a variant's fingerprint ignores the other variants."""
    payload = json.dumps({"params": params, "files": {name: hashlib.sha256(text.encode("utf-8")).hexdigest()
                                                      for name, text in sorted(files.items())}},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
