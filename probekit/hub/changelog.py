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
from probekit.data.keys import family

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


FIELD_NAMES = {
    "mc": {"stem": "question.stem", "choices": "question.choices", "answer": "answerKey", "template": "template_id",
           "source": "source_id", "other": "other fields"},
    "cloze": {"stem": "query", "choices": "candidates", "answer": "obj_label", "template": "pattern",
              "other": "other fields"},
    "pairs": {"stem": "sentence1/sentence2", "answer": "label", "template": "style", "other": "other fields"}}
"""The published column each compared field of :mod:`probekit.data.keys` is, per family."""
POINTER = "source_id"
"""A control row's pointer to its base row: it changes with the base row's text, the control's own text may not."""


def split_counts(fmt: str, old: Rows, new: Rows) -> dict[str, dict]:
    """Per split (the new side's first): rows, the examples added, removed, changed and unchanged, the changed
    ``fields`` (published column: examples), ``repointed`` (the changed examples whose only change is their
    ``source_id``: a control row whose base row was reworded, its own text the same), and the answer balance's
    ``tvd``, ``p_value`` (4 digits) and ``moved``."""
    names = FIELD_NAMES[family(fmt)]
    out = {}
    for split in dict.fromkeys([*new, *old]):
        record, merged = compare_split(fmt, old.get(split, []), new.get(split, []), show=0)
        b = record["balance"]
        p = b["p_value"]
        repointed = int(((merged["status"] == "changed") & (merged["fields"] == "source")).sum())
        out[split] = {"rows": len(new.get(split, [])), **{k: record[k] for k in COUNTS},
                      "fields": {names.get(f, f): n for f, n in record["fields"].items()}, "repointed": repointed,
                      "tvd": b["tvd"], "p_value": None if p is None else round(p, 4), "moved": b["moved"]}
    return out


def template_changes(old_block: dict | None, block: dict) -> dict[str, dict]:
    """``{template id: {"old": text, "new": text}}`` for each template of the config whose text differs between
    the two blocks' ``template_texts`` (a template added: ``old`` None; removed: ``new`` None); {} when either
    block does not record the texts (a card published before they were kept)."""
    old, new = (old_block or {}).get("template_texts"), block.get("template_texts")
    if not isinstance(old, dict) or not isinstance(new, dict):
        return {}
    return {t: {"old": old.get(t), "new": new.get(t)} for t in dict.fromkeys([*new, *old])
            if old.get(t) != new.get(t)}


def totals(splits: dict[str, dict]) -> dict[str, int]:
    """The counts of :data:`COUNTS` over the splits."""
    return {k: sum(int(s.get(k) or 0) for s in splits.values()) for k in COUNTS}


def summary(splits: dict[str, dict]) -> str:
    """``+added -removed ~changed`` over the splits, e.g. ``+3 -1 ~500``; the changed fields after it, and the
    examples changed only in their ``source_id`` (``~500 (source_id only: 500)``)."""
    t = totals(splits)
    fields = _fields(splits)
    return f"+{t['added']} -{t['removed']} ~{t['changed']}" + (f" ({fields})" if fields else "")


def entry(block: dict, new: Callable[[], Rows] | None = None, old: Rows | None = None, since: str | None = None,
          date: str | None = None) -> dict:
    """The entry of a block's version; ``since`` None: the config's first publish (its rows per split, from the
    block); else counted between ``old`` and ``new()``."""
    counted = since is not None and new is not None
    splits = (split_counts(block["format"], old or {}, new()) if counted
              else {s: {"rows": n} for s, n in block["counts"].items()})
    return {"version": block["version"], "date": date or today(), "since": since, "splits": splits}


def _fields(splits: dict[str, dict]) -> str:
    """The changed fields over the splits, ``question.stem 12, template_id 12``; examples changed only in their
    ``source_id`` said apart (``source_id only: 5500``: their own text is the same). '' when none is recorded."""
    fields: dict[str, int] = {}
    for s in splits.values():
        for f, n in (s.get("fields") or {}).items():
            fields[f] = fields.get(f, 0) + int(n)
    repointed = sum(int(s.get("repointed") or 0) for s in splits.values())
    changed = totals(splits)["changed"]
    if repointed and repointed == changed:
        return f"{POINTER} only: {repointed}"
    listed = ", ".join(f"{f} {n}" for f, n in fields.items())
    return listed + (f"; {POINTER} only: {repointed}" if repointed else "")


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
    new_entry = entry(block, new_rows, old_rows(), old_block.get("version") or "?")
    templates = template_changes(old_block, block)
    return [{**new_entry, "templates": templates} if templates else new_entry, *kept]


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


def _template_lines(name: str, entries: list[dict], role: str) -> list[str]:
    """One line per reworded, added or removed template of an entry: its old and new text."""
    whose = "its base's template" if role == "control" else "template"
    out = []
    for e in entries:
        for t, c in (e.get("templates") or {}).items():
            old, new = c.get("old"), c.get("new")
            what = (f"{whose} `{t}` added: `{new}`" if old is None else f"{whose} `{t}` removed (was `{old}`)"
                    if new is None else f"{whose} `{t}` reworded: `{old}` → `{new}`")
            out.append(f"- `{e.get('version')}`: {_cell(what)}")
    return out


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def table(name: str, entries: list[dict], role: str = "main") -> str:
    """The config's "Changes" as Markdown: one row per version, newest first, with the fields that changed; then
    each reworded template's old and new text ('' when there are no entries)."""
    if not entries:
        return ""
    lines = ["| version | date | tag | since | rows | added | removed | changed | fields changed | unchanged | "
             "answer balance |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in entries:
        splits = e.get("splits") or {}
        rows = ", ".join(f"{s} {v.get('rows', 0)}" for s, v in splits.items())
        first = e.get("since") is None
        t = totals(splits)
        counted = not first and any("added" in v for v in splits.values())
        counts = [str(t[k]) for k in COUNTS] if counted else ["–"] * 4
        fields = (_fields(splits) or ("–" if not t["changed"] or not any("fields" in v for v in splits.values())
                                      else "not recorded")) if counted else "–"
        since = FIRST if first else f"`{e['since']}`"
        lines.append(f"| `{e.get('version')}` | {e.get('date')} | `{tag(name, str(e.get('version')))}` | {since} | "
                     f"{rows} | {' | '.join(counts[:3])} | {_cell(fields)} | {counts[3]} | "
                     f"{'–' if first else _balance(splits)} |")
    templates = _template_lines(name, entries, role)
    return ("#### Changes\n\nNewest first; counts since the version before (examples joined on their keys: a "
            "reworded template changes examples, a new range of slot values adds and removes them); fields changed: "
            f"the published columns that differ, and the examples whose only change is `{POINTER}` (a control row "
            "pointing at its base row's new id: its own text is the same); answer balance: total variation distance "
            "and chi-square p-value of the answers before and after.\n\n" + "\n".join(lines) + "\n"
            + ("\nTemplates:\n\n" + "\n".join(templates) + "\n" if templates else ""))
