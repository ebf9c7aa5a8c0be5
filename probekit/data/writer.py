"""The one writer of dataset folders: rows -> jsonl files, ``meta.json`` with the fingerprint of exactly what
was written, and the dataset card; the folder appears at once or not at all."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Mapping, Sequence

from probekit import atomic


def write_dataset(out: str | Path, files: Mapping[str, Sequence[dict]], meta: dict,
                  card: Callable[[dict], str]) -> Path:
    """``files``: ``{relative path: rows}``; ``meta`` (with its ``params``) gains ``fingerprint``, and
    ``card(meta)`` becomes ``README.md``."""
    texts = {path: atomic.jsonl_text(rows) for path, rows in files.items()}
    meta = {**meta, "fingerprint": fingerprint(meta["params"], texts)}
    with atomic.atomic_path(Path(out)) as tmp:
        for path, text in texts.items():
            atomic.write_text(tmp / path, text)
        atomic.write_json(tmp / "meta.json", meta)
        atomic.write_text(tmp / "README.md", card(meta))
    return Path(out)


def fingerprint(params: Mapping, files: Mapping[str, str]) -> str:
    """sha256 over the params and the bytes written (``files``: name -> text): a code or template change
    that changes no output leaves it alone, and a variant's fingerprint ignores the other variants."""
    payload = json.dumps({"params": params, "files": {name: hashlib.sha256(text.encode("utf-8")).hexdigest()
                                                      for name, text in sorted(files.items())}},
                         sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
