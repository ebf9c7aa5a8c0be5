"""Capped sources: the table sets whose offline (mirror) source holds fewer facts than the paper's probe needs, the
full source each has, and the refusal of a run that asks for the paper's sizes and would get the capped ones.

Two table sets have a capped source (:data:`CAPS`): ``object_sizes`` (the mirror's size sets: OBJECTS COMPARISON
gets 674 train rows, the released probe's 5,000; the full source is DoQ, the one the paper names, §4.1 "their
median value in DOQ (Elazar et al., 2019)") and ``wikidata`` (the mirror's KAMEL and EntityQuestions facts:
ENCYCLOPEDIC COMPOSITION gets 517 train / 49 dev rows, the released probe's 5,317 / 500; the full source is
Wikidata through SPARQL, cached).

Each of their params sections has ``capped`` (:data:`Policy`):

- ``null`` (the default, the smoke profile): nothing is asked; nothing is marked.
- ``refuse`` (the paper profile): a run reading the capped source, or the full source where it cannot be had (DoQ
  neither fetched nor in the mirror nor downloadable with a known sha256; no SPARQL cache while the sources are read
  from a mirror, i.e. offline), stops before any work with one line naming the source, its cap and the override
  (:func:`probekit.sources.capped_check.check`, run by ``probes run`` and ``probes rehearse`` before dvc starts,
  and by ``probes tables`` before the table set is read; :func:`fetch_hint` adds the cap and override to a failed
  fetch of DoQ, the paper profile's ``fetch@doq``).
- ``accept``: the run reads the capped source knowingly; the table set's report records the cap (:func:`fact`) in
  the provenance of the source, from where every dataset built on it carries it (``meta.json`` ``sources``) and the
  reports mark each table made from it (:func:`capped_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

SPARQL_CACHE = "wikidata_sparql"
"""The folder of the raw root where the wikidata loader caches Wikidata's SPARQL answers."""
Policy = Literal["refuse", "accept"] | None
"""The type of a capped table set's ``capped`` param (see the module docstring)."""


@dataclass(frozen=True)
class Cap:
    table_set: str
    capped: str          # the capped value of the set's `source`
    full: str            # the full one
    full_name: str       # the full source as a user knows it
    raw: tuple[str, ...]  # the raw sources (raw/sources.yaml) the capped source reads
    full_raw: str | None  # the raw source the full one is fetched as (None: queried, cached by the loader)
    cap: str             # what the capped source gives, against the paper

    def override(self) -> str:
        return f"-S tables.{self.table_set}.source={self.capped} -S tables.{self.table_set}.capped=accept"


CAPS: dict[str, Cap] = {
    "object_sizes": Cap("object_sizes", "mirror_sets", "doq", "DoQ", ("object_sizes",), "doq",
                        "the mirror's size sets cap OBJECTS COMPARISON at 674 train rows (the released probe's 5,000)"),
    "wikidata": Cap("wikidata", "mirror", "sparql", "Wikidata through SPARQL", ("kamel", "entityquestions"), None,
                    "the mirror's KAMEL and EntityQuestions facts cap ENCYCLOPEDIC COMPOSITION at 517 train / 49 dev "
                    "rows (the released probe's 5,317 / 500)"),
}


def _get(params: Any, key: str):
    return params.get(key) if isinstance(params, Mapping) else getattr(params, key, None)


def refusal(name: str, params: Any) -> str | None:
    """The one-line refusal of table set ``name`` with ``params`` (its section, a model or a mapping) when it reads
    its capped source under ``capped: refuse``; ``None`` otherwise (no cap, accepted, or no policy)."""
    cap = CAPS.get(name)
    if cap is None or _get(params, "capped") != "refuse" or (_get(params, "source") or cap.capped) != cap.capped:
        return None
    return (f"tables.{name}: source {cap.capped} under capped: refuse (the paper profile): {cap.cap}; read "
            f"{cap.full_name} (source {cap.full}), or run capped with {cap.override()}")


def fetch_hint(source: str) -> str:
    """What a failed fetch of ``source`` adds when it is a capped table set's full source (DoQ): the cap a run
    without it gets and the override that accepts it; empty for any other source."""
    return "".join(f"; without it {cap.cap}: run capped with {cap.override()}" for cap in CAPS.values()
                   if cap.full_raw == source)


def fact(name: str, params: Any) -> dict | None:
    """What a table set made from its capped source under ``capped: accept`` records of the cap (in its report's
    provenance of each raw source it read); ``None`` for any other run, so a run that asked nothing writes nothing."""
    cap = CAPS.get(name)
    if cap is None or _get(params, "capped") != "accept" or (_get(params, "source") or cap.capped) != cap.capped:
        return None
    return {"table_set": name, "source": cap.capped, "cap": cap.cap, "accepted_by": f"tables.{name}.capped: accept"}


def capped_of(sources: Mapping | None) -> list[str]:
    """The caps a dataset's provenance (``meta.json`` ``sources``) carries, one line each, sorted, without repeats."""
    return sorted({f"{c['table_set']}: {c['cap']}" for s in (sources or {}).values()
                   if isinstance(s, Mapping) and isinstance(c := s.get("capped"), Mapping)})
