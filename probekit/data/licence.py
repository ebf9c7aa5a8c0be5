"""A dataset's licence id from the sources it was built from: the one rule every dataset folder's ``meta.json``
and card follow (probe folders, ParaRel's cloze set, CALUM's pair sets)."""

from __future__ import annotations

from typing import Mapping


def licence_id(sources: Mapping[str, Mapping]) -> str | None:
    """A share-alike source's id (derived data must keep it: ConceptNet's cc-by-sa-4.0), else the sources' one
    when they agree, ``other`` when they differ; ``None`` without sources (the caller's own licence applies).
    Every source's licence is listed in the card too."""
    ids = sorted({str(s.get("license_id") or "other") for s in sources.values()})
    share_alike = [i for i in ids if "-sa-" in i]
    if len(share_alike) == 1:
        return share_alike[0]
    if ids:
        return ids[0] if len(ids) == 1 else "other"
    return None
