"""Whether a config may be published under its version: a publish refuses to reuse the published semantic version
of a config whose rows changed because its definition did (a template's text, the templates it is filled from, its
generator's version), and says which version to raise.

It refuses rather than raising the version itself: the version is the probe YAML's ``version:`` (recorded in every
dataset folder's ``meta.json`` as ``definition_version`` when it is generated), so a version raised at publish time
would name data that no folder, dataset card or git revision calls by that version; and whether a change is a new
major or minor version (a reworded template makes scores incomparable; a typo fix may not) is the author's
judgement. A change of params or sources alone (sizes, seeds, value ranges, a new source file) changes the rows
and the fingerprint, not the definition: the version's ``+<fingerprint>`` part tells those apart, and no raise is
asked for. ``--keep-version`` publishes anyway, for a definition change the author judges not to need one."""

from __future__ import annotations

from probekit.hub import changelog


def semver(version: str | None) -> tuple[int, ...]:
    """``(major, minor, patch)`` of a config version ``1.2.0+<fingerprint12>`` (``()`` when there is none)."""
    head = str(version or "").split("+")[0]
    try:
        return tuple(int(x) for x in head.split("."))
    except ValueError:
        return ()


def definition_changes(old_block: dict, block: dict) -> list[str]:
    """What of the definition changed between the published block and the new one, in words: templates reworded,
    added or removed (their ``template_texts``, else their ids), the generator's version."""
    what = []
    texts = changelog.template_changes(old_block, block)
    reworded = [t for t, c in texts.items() if c["old"] is not None and c["new"] is not None]
    if reworded:
        what.append("template " + ", ".join(f"`{t}` reworded" for t in reworded))
    old_ids, new_ids = list(old_block.get("template_ids") or []), list(block.get("template_ids") or [])
    added = [t for t in new_ids if t not in old_ids]
    removed = [t for t in old_ids if t not in new_ids]
    if added or removed:
        what.append("templates " + " ".join([f"+`{t}`" for t in added] + [f"-`{t}`" for t in removed]))
    old_gen, new_gen = old_block.get("generator_version"), block.get("generator_version")
    if old_gen is not None and new_gen is not None and str(old_gen) != str(new_gen):
        what.append(f"generator version {old_gen} -> {new_gen}")
    return what


def refusal(name: str, old_block: dict | None, block: dict) -> str | None:
    """Why ``block`` may not be published over ``old_block`` (the Hub's, or an earlier dry run's), or None: its
    rows changed, its definition changed (:func:`definition_changes`) and its semantic version is not above the
    published one."""
    if old_block is None or old_block.get("fingerprint") == block.get("fingerprint"):
        return None
    old_v, new_v = semver(old_block.get("version")), semver(block.get("version"))
    if not old_v or not new_v or new_v > old_v:
        return None
    what = definition_changes(old_block, block)
    if not what:
        return None
    version = ".".join(map(str, new_v))
    minor = f"{old_v[0]}.{old_v[1] + 1 if len(old_v) > 1 else 1}"
    return (f"{name}: its definition changed since the published {old_block.get('version')} ({'; '.join(what)}) "
            f"but its version is still {version}: raise `version:` in generators/{block.get('probe') or name}/"
            f"probe.yaml (e.g. to {minor}; a new major version when scores are no longer comparable) and regenerate "
            f"(`dvc repro`), or pass --keep-version to publish it as {version} anyway")


def changes(local: dict, published: dict | None, examples: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """``(config, version, what changed)`` for every local config, then every published-only one;
    ``examples``: a changed config's examples added, removed and changed (``+3 -1 ~500``), said first."""
    def short(h):
        return (h or "none")[:12]

    out = []
    for name, b in local.items():
        old = None if published is None else published.get(name)
        if published is None:
            out.append((name, b["version"], ""))
            continue
        if old is None:
            out.append((name, b["version"], "new" + (f": {examples[name]}" if (examples or {}).get(name) else "")))
            continue
        what = []
        if old.get("version", "").split("+")[0] != b["version"].split("+")[0]:
            what.append(f"version {old.get('version', '').split('+')[0]} -> {b['version'].split('+')[0]}")
        if old.get("fingerprint") != b["fingerprint"]:
            what.append(f"fingerprint {short(old.get('fingerprint'))} -> {short(b['fingerprint'])}")
        counts, before = b["counts"], old.get("counts") or {}
        what += [f"{s} {before.get(s, 0)} -> {counts.get(s, 0)}" for s in dict.fromkeys([*counts, *before])
                 if before.get(s, 0) != counts.get(s, 0)]
        added = [t for t in b["template_ids"] if t not in (old.get("template_ids") or [])]
        removed = [t for t in old.get("template_ids") or [] if t not in b["template_ids"]]
        if added or removed:
            what.append("templates " + " ".join([f"+{t}" for t in added] + [f"-{t}" for t in removed]))
        what += [w for w in definition_changes(old, b) if w.startswith(("template ", "generator"))]
        if old.get("templates_sha256") != b.get("templates_sha256"):
            what.append(f"templates sha256 {short(old.get('templates_sha256'))} -> "
                        f"{short(b.get('templates_sha256'))}")
        rows_changed = old.get("fingerprint") != b["fingerprint"]
        if rows_changed and (examples or {}).get(name):
            what.insert(0, examples[name])
        status = "changed: " if rows_changed else ("unchanged rows; " if what else "unchanged")
        out.append((name, b["version"], status + ", ".join(what)))
    for name, old in (published or {}).items():
        if name not in local:
            out.append((name, old.get("version", "?"), "published only (not in the local data)"))
    return out


def refusals(blocks: dict[str, dict], published: dict[str, dict]) -> list[str]:
    """The refusal of every config of ``blocks`` against its ``published`` block (none: [])."""
    return [r for r in (refusal(n, published.get(n), b) for n, b in blocks.items()) if r]
