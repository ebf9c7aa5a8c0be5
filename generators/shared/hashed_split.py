"""A split drawn by a hash, shared by the probes that split their data so: ``dev`` with probability
``dev_share``, fixed by the SHA-256 of a text that names the item (a concept, a statement key), so no seed, no
other param and no other item moves it (PROPERTY CONJUNCTION's concepts, ALWAYS-NEVER's new statements)."""

from __future__ import annotations

import hashlib


def hashed_split(text: str, dev_share: float) -> str:
    """``dev`` with probability ``dev_share`` by the SHA-256 of ``text``, else ``train``."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return "dev" if int(digest[:12], 16) / 16 ** 12 < dev_share else "train"
