"""A small hand-made folder in the shape of a built results site (docs/browse.md: the site folder), for the server's
and the Space's tests, which need no builder: its page loads its module script, reads data/site.json and fetches
bytes 4-7 of a shard's preds.bin with a Range header, and writes what it got into ``#out``."""

from __future__ import annotations

import json
from pathlib import Path

BLOB = bytes(range(256)) * 4   # 1024 bytes, each position's value known
PRED = "data/shards/s0/preds.bin"
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>t</title><link rel="stylesheet" href="style.css">
<script type="module" src="app.js"></script></head><body><p id="out">loading</p></body></html>"""
APP = """const site = await (await fetch("data/site.json")).json();
const r = await fetch("data/shards/s0/preds.bin", {headers: {Range: "bytes=4-7"}});
const bytes = new Uint8Array(await r.arrayBuffer());
document.getElementById("out").textContent = `${site.title} ${r.status} ${Array.from(bytes).join(",")}`;
"""
SITE = {"format": 1, "title": "probekit results", "profile": "smoke", "banner": "Smoke scale: not the papers' numbers",
        "generated_by": "probekit 0.1.0", "runs": ["minilm", "tiny"], "shards": [{"id": "s0"}]}


def write_toy_site(root: Path) -> Path:
    """The site at ``root`` (with probekit's marker, which is not served nor published); ``root``."""
    (root / "data" / "shards" / "s0").mkdir(parents=True)
    (root / "index.html").write_text(PAGE)
    (root / "app.js").write_text(APP)
    (root / "style.css").write_text("body { font-family: system-ui; }\n")
    (root / "LICENSES.md").write_text("# Licences\n")
    (root / "data" / "site.json").write_text(json.dumps(SITE))
    (root / PRED).write_bytes(BLOB)
    (root / "data" / "shards" / "s0" / "rows.json").write_text('{"rows": [], "vocab": []}')
    (root / ".probekit.json").write_text("{}")
    return root
