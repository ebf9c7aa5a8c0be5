"""What every dataset card says the same way, whichever folder it describes (a probe variant, ParaRel's cloze set,
a CALUM pair set): the list of its sources with their licences, and the footer with the folder's fingerprint."""

from __future__ import annotations

from typing import Mapping


def source_list(sources: Mapping[str, Mapping]) -> str:
    """One markdown bullet per source: ``- `name`: licence``."""
    return "\n".join(f"- `{name}`: {s['license']}" for name, s in sources.items())


def fingerprint_line(meta: Mapping) -> str:
    """The card's fingerprint line (``meta.json``'s ``fingerprint``)."""
    return f"Fingerprint `{meta['fingerprint']}` (sha256 of the params and of the files written)."
