"""The "Changes" of a config on the Hub card: per published version one entry (its version, the UTC date it was
published, and per split its rows and the examples added, removed, changed and unchanged since the previous
published version of the config, with the shift of the answer balance: the total variation distance, the
chi-square p-value and whether it moved), newest first, counted by :func:`probekit.data.compare.compare_split`
(what ``probes diff`` reports).

The entries are kept in the config's ``probekit`` block (``changes``), so a publish reads the older ones back
from the card it replaces; a config whose fingerprint did not change gets no new entry. A version's Hub tag
(:func:`tag`) names the commit that published it, so ``load_dataset(repo, config, revision=TAG)`` gets it back.
The previous version's rows come from a dry-run folder's Parquet files or the Hub's
(:func:`probekit.hub.parquet.folder_rows`, :func:`probekit.hub.parquet.hub_rows`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from probekit.data.compare import compare_split

KEY = "changes"
"""The key of a config's ``probekit`` block that holds its entries."""
COUNTS = ("added", "removed", "changed", "unchanged")
FIRST = "first published"

Rows = dict[str, list[dict]]   # {split: rows}


@dataclass
class Previous:
    """The last published state: its card (a :class:`probekit.hub.card.Card`, which imports this module) and
    ``rows(config) -> {split: rows}`` (None: no files of it)."""

    card: Any
    rows: Callable[[str], Rows | None]


def today() -> str:
    """The UTC date, ``YYYY-MM-DD``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def tag(name: str, version: str) -> str:
    """The Hub tag of a config's version: ``<config>-v<semver>-<fingerprint12>`` (no ``+``, awkward in URLs)."""
    semver, _, fp = version.partition("+")
    return f"{name}-v{semver}" + (f"-{fp}" if fp else "")


def split_counts(fmt: str, old: Rows, new: Rows) -> dict[str, dict]:
    """Per split (the new side's first): rows, the examples added, removed, changed and unchanged, and the answer
    balance's ``tvd``, ``p_value`` (4 digits) and ``moved``."""
    out = {}
    for split in dict.fromkeys([*new, *old]):
        record, _ = compare_split(fmt, old.get(split, []), new.get(split, []), show=0)
        b = record["balance"]
        p = b["p_value"]
        out[split] = {"rows": len(new.get(split, [])), **{k: record[k] for k in COUNTS}, "tvd": b["tvd"],
                      "p_value": None if p is None else round(p, 4), "moved": b["moved"]}
    return out


def totals(splits: dict[str, dict]) -> dict[str, int]:
    """The counts of :data:`COUNTS` over the splits."""
    return {k: sum(int(s.get(k) or 0) for s in splits.values()) for k in COUNTS}


def summary(splits: dict[str, dict]) -> str:
    """``+added -removed ~changed`` over the splits, e.g. ``+3 -1 ~500``."""
    t = totals(splits)
    return f"+{t['added']} -{t['removed']} ~{t['changed']}"


def entry(block: dict, new: Callable[[], Rows] | None = None, old: Rows | None = None, since: str | None = None,
          date: str | None = None) -> dict:
    """The entry of a block's version; ``since`` None: the config's first publish (its rows per split, from the
    block); else counted between ``old`` and ``new()``."""
    counted = since is not None and new is not None
    splits = (split_counts(block["format"], old or {}, new()) if counted
              else {s: {"rows": n} for s, n in block["counts"].items()})
    return {"version": block["version"], "date": date or today(), "since": since, "splits": splits}


def history(block: dict, old_block: dict | None, new_rows: Callable[[], Rows],
            old_rows: Callable[[], Rows | None]) -> list[dict]:
    """A config's entries after this publish: the published ones (``old_block``'s), and before them a new entry
    when the fingerprint changed (counted against ``old_rows()``, the previous version's rows;
    nothing published yet: "first published")."""
    kept = list((old_block or {}).get(KEY) or [])
    if old_block is not None and old_block.get("fingerprint") == block["fingerprint"]:
        return kept
    if old_block is None:
        return [entry(block), *kept]
    return [entry(block, new_rows, old_rows(), old_block.get("version") or "?"), *kept]


def with_history(block: dict, entries: list[dict]) -> dict:
    """``block`` with its entries (none: without the key, as a card published before entries were kept)."""
    return {**bare(block), KEY: entries} if entries else bare(block)


def bare(block: dict | None) -> dict | None:
    """A block without its entries: what tells whether a config's card entry changed."""
    return None if block is None else {k: v for k, v in block.items() if k != KEY}


def latest(block: dict) -> dict | None:
    """The newest entry of a block when it is of the block's version (None: no entry for this version)."""
    entries = block.get(KEY) or []
    return entries[0] if entries and entries[0].get("version") == block.get("version") else None


# --- rendering ----------------------------------------------------------------------------------------------------

def _num(value, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _balance(splits: dict[str, dict]) -> str:
    parts = []
    for split, s in splits.items():
        if "tvd" not in s:
            continue
        moved = " **moved**" if s.get("moved") else ""
        parts.append(f"{split} TVD {_num(s.get('tvd'), 3)}, p {_num(s.get('p_value'), 3)}{moved}")
    return "; ".join(parts) or "–"


def table(name: str, entries: list[dict]) -> str:
    """The config's "Changes" as Markdown: one row per version, newest first ('' when there are none)."""
    if not entries:
        return ""
    lines = ["| version | date | tag | since | rows | added | removed | changed | unchanged | answer balance |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in entries:
        splits = e.get("splits") or {}
        rows = ", ".join(f"{s} {v.get('rows', 0)}" for s, v in splits.items())
        first = e.get("since") is None
        t = totals(splits)
        counted = not first and any("added" in v for v in splits.values())
        counts = [str(t[k]) for k in COUNTS] if counted else ["–"] * 4
        since = FIRST if first else f"`{e['since']}`"
        lines.append(f"| `{e.get('version')}` | {e.get('date')} | `{tag(name, str(e.get('version')))}` | {since} | "
                     f"{rows} | {' | '.join(counts)} | {'–' if first else _balance(splits)} |")
    return ("#### Changes\n\nNewest first; counts since the version before (examples joined on their keys: a "
            "reworded template changes examples, a new range of slot values adds and removes them); answer "
            "balance: total variation distance and chi-square p-value of the answers before and after.\n\n"
            + "\n".join(lines) + "\n")
