"""The short Markdown summary of a diff (:class:`probekit.versions.diff.Result`): a table of the datasets that
changed (the unchanged ones counted in one line), what happened to each control variant, and a few examples of
each kind side by side."""

from __future__ import annotations

from probekit.versions.diff import Result

SHOWN_CATEGORIES = 4   # an answer balance with more values is given as its distance and test only
TEXT = 160             # characters of a text an example shows


def _cut(text, limit: int = TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _md(text) -> str:
    return str(text).replace("|", "\\|")


def _counts(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def balance_text(b: dict) -> str:
    """``older 250, younger 250 (same)`` or ``… -> … (moved: p 0.003, TVD 0.12)``."""
    if not b["old"] and not b["new"]:
        return "–"
    test = ("" if b["p_value"] is None else
            f"{'moved' if b['moved'] else 'not moved'}: p {b['p_value']:.3g}, TVD {b['tvd']:.3g}")
    if b["old"] == b["new"]:
        return (f"{_counts(b['old'])} (same)" if len(b["old"]) <= SHOWN_CATEGORIES else
                f"{len(b['old'])} answers, the same counts")
    if max(len(b["old"]), len(b["new"])) <= SHOWN_CATEGORIES:
        return f"{_counts(b['old'])} → {_counts(b['new'])}" + (f" ({test})" if test else "")
    return test or f"{len(b['old'])} → {len(b['new'])} answers"


def _changed(r: dict) -> str:
    fields = ", ".join(f"{f} {n}" for f, n in r["fields"].items())
    return f"{r['changed']}" + (f" ({fields})" if fields else "")


def _templates(t: dict) -> str:
    parts = [f"+{x}" for x in t["added"]] + [f"−{x}" for x in t["removed"]]
    if parts:
        return " ".join(f"`{p}`" for p in parts)
    return "same" if t["old"] == t["new"] else "per template: " + _counts(
        {k: f"{t['old'].get(k, 0)}→{t['new'].get(k, 0)}" for k in t["new"] if t["old"].get(k) != t["new"][k]})


def _touched(r: dict) -> bool:
    return bool(r["added"] or r["removed"] or r["changed"])


def _controls(records: list[dict]) -> list[str]:
    """One line per control variant of a dataset that changed: what happened to it, and its base."""
    touched_datasets = {r["dataset"] for r in records if _touched(r)}
    out, calm = [], {}
    for r in records:
        if r["role"] != "control" or r["dataset"] not in touched_datasets:
            continue
        base = f" (control of `{r['base']}`)" if r.get("base") else " (control)"
        if not _touched(r):
            calm.setdefault((r["dataset"], r["variant"], base), []).append(r["split"])
            continue
        else:
            what = f"+{r['added']} −{r['removed']} ~{_changed(r)}"
            only_source = set(r["fields"]) == {"source"}
            if only_source:
                what += ": its rows' own text is the same; they point at the changed rows of their base"
            elif "source" in r["fields"]:
                what += "; re-derived from the changed rows of its base"
        out.append(f"- `{r['dataset']}` / `{r['variant']}`{base}, {r['split']}: {what}")
    out += [f"- `{d}` / `{v}`{base}: untouched ({', '.join(splits)})" for (d, v, base), splits in calm.items()]
    return out


def _examples(records: list[dict], limit: int) -> list[str]:
    out, n = [], 0
    for r in records:
        for kind, items in (r.get("examples") or {}).items():
            if n >= limit:
                return out + ["\n(more examples in `--examples FILE` and `--json FILE`)"]
            n += 1
            out.append(f"\n**{r['config']}** {r['split']}, {kind}:\n")
            out.append("| what | field | old | new |\n| --- | --- | --- | --- |")
            for ex in items:
                fields = ex.get("fields") or (["stem", "answer"])
                for i, f in enumerate(fields):
                    old = (ex.get("old") or {}).get(f, "") if kind != "added" else ""
                    new = (ex.get("new") or {}).get(f, "") if kind != "removed" else ""
                    out.append(f"| {_md(_cut(ex['what'], 60)) if i == 0 else ''} | {f} | {_md(_cut(old))} | "
                               f"{_md(_cut(new))} |")
    return out


def markdown(result: Result, *, examples: int = 6) -> str:
    """The summary printed on stdout."""
    records = result.records
    t = result.totals()
    touched = [r for r in records if _touched(r)]
    lines = ["# probes diff", "", f"old: {result.old}  ", f"new: {result.new}", "",
             f"{len(records)} datasets (config × split), {len(touched)} with changes: "
             f"+{t['added']} added, −{t['removed']} removed, ~{t['changed']} changed, {t['unchanged']} unchanged "
             f"examples.", ""]
    if touched:
        lines += ["| dataset | variant | split | role | added | removed | changed (fields) | unchanged | "
                  "answer balance | templates |", "| --- | --- | --- | --- | ---: | ---: | --- | ---: | --- | --- |"]
        for r in touched:
            where = "" if r["config_in"] == "both" else f" ({r['config_in']})"
            lines.append(f"| {r['dataset']} | {r['variant']}{where} | {r['split']} | {r['role']} | {r['added']} | "
                         f"{r['removed']} | {_changed(r)} | {r['unchanged']} | {_md(balance_text(r['balance']))} | "
                         f"{_md(_templates(r['templates']))} |")
        moved = [r for r in touched if r.get("position_balance", {}).get("moved")]
        for r in moved:
            lines.append(f"\nThe gold position moved in {r['config']} {r['split']}: "
                         f"{balance_text(r['position_balance'])}.")
    changed = {r["config"] for r in touched}
    untouched = sorted({f"{r['dataset']}/{r['variant']}" for r in records if r["config"] not in changed})
    if untouched:
        shown = ", ".join(untouched[:12]) + (f" and {len(untouched) - 12} more" if len(untouched) > 12 else "")
        lines += ["", f"Untouched ({len(untouched)}): {shown}."]
    controls = _controls(records)
    if controls:
        lines += ["", "## Controls", ""] + controls
    if touched and examples:
        lines += ["", "## Examples"] + _examples(touched, examples)
    return "\n".join(lines) + "\n"
