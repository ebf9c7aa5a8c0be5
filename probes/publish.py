"""The ``probes`` subcommands ``publish`` (every dataset folder under ``--data`` as configs of one Hub dataset repo,
or ``--dry-run DIR``: the folder that would be uploaded) and ``versions`` (each config's version, and what changed
since the last published card). Argparse and checks only: the work is in :mod:`probekit.hub.export`,
:mod:`probekit.hub.card` and :mod:`probekit.hub.publish`."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from probekit.errors import UsageError, shown
from probes.options import Read, Searched, Written, add_force, out_folder

_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def _repo_id(text: str) -> str:
    if not _REPO_ID.match(text):
        import argparse

        raise argparse.ArgumentTypeError(f"expected ORG/NAME (a Hub dataset repo id), got {shown(text)}")
    return text


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _describe(exp) -> None:
    b = exp.block
    rows = ", ".join(f"{s} {n}" for s, n in b["counts"].items())
    print(f"{exp.name}: {b['version']} ({rows}; {b['licence']}{'; restricted' if b['restricted'] else ''})")


def _publish(args) -> int:
    from probekit.hub import card as hub_card
    from probekit.hub import export as hub_export
    from probekit.hub import publish
    from probekit.outputs import overlap

    out_folder(args.dry_run, "the folder that would be uploaded is written inside it", "--dry-run", kind="dry-run",
               force=args.force)
    if not args.dry_run and not args.repo_id:
        raise UsageError("give --repo-id ORG/NAME to publish, or --dry-run DIR to write the folder only")
    if args.published and not args.dry_run:
        raise UsageError("--published DIR goes with --dry-run (a push reads the previous version from the Hub)")
    data = Path(args.data)
    configs = hub_export.discover(data, args.probes)
    overlap.check([("--dry-run", args.dry_run)], [("--data", c.folder) for c in configs])
    if args.dry_run:
        previous = publish.published(folder=args.published) if args.published else None
        card = hub_card.write_folder((hub_export.export(c, data) for c in configs), args.dry_run, args.repo_id,
                                       on_config=_describe, previous=previous)
        files = sum(1 for _ in Path(args.dry_run).rglob("*.parquet"))
        print(f"dry run: wrote {publish.plural(len(card.blocks), 'config')} to {args.dry_run} ({files} Parquet "
              f"files and {hub_export.CARD}); nothing uploaded")
        if previous is not None:
            _print_changes(card, previous.card, args.published)
            from probekit.hub import bump

            for refusal in ([] if args.keep_version else bump.refusals(card.blocks, previous.card.blocks)):
                print(f"note: a push like this would be refused: {refusal}")
        refusal = publish.restricted_refusal(card.blocks, args.repo_id or "the repo", "would be public")
        if refusal and not args.private and not args.accept_restricted_licences:
            print(f"note: a push like this would be refused: {refusal}")
        return 0
    if not args.private and not args.accept_restricted_licences:   # refuse before building anything
        refusal = publish.restricted_refusal({c.name: {"restricted": hub_export.restriction(c.meta)} for c in configs},
                                             args.repo_id, "would be public (no --private)")
        if refusal:
            raise publish.PublishError(refusal)
    secret = publish.token()
    try:
        with tempfile.TemporaryDirectory(prefix="probekit-publish-") as tmp:
            upload = publish.Upload(configs, data, Path(tmp), on_config=_describe)
            out = publish.push(args.repo_id, upload, token=secret, private=args.private,
                               revision=args.revision, accept_restricted=args.accept_restricted_licences,
                               keep_version=args.keep_version)
    except Exception as exc:
        if secret in str(exc):   # never let the token through, whatever raised
            raise publish.PublishError(publish.one_line(exc, secret)) from None
        raise
    where = f"{args.repo_id}" + (f"@{args.revision}" if args.revision else "")
    if out.commit is None:
        print(f"{where}: nothing changed ({publish.plural(len(out.unchanged), 'config')} with the fingerprints of "
              "the Hub's card): no commit")
    else:
        print(f"{where}: commit {out.commit[:12]}: {publish.plural(len(out.uploaded), 'config')} uploaded"
              + (f" ({', '.join(out.uploaded)})" if len(out.uploaded) <= 5 else "")
              + (f", {publish.plural(len(out.described), 'card entry')} updated" if out.described else "")
              + f", {len(out.unchanged)} unchanged; {out.url}")
        for name in out.uploaded:
            print(f"  {name}: {out.changes.get(name, '')}")
        for tag in out.tags:
            print(f"{where}: tagged {tag}")
    return 0


def _print_changes(card, old, against: str) -> None:
    """Each config's new "Changes" entry since ``old`` (the card of ``against``), one line each."""
    from probekit.hub import changelog

    for name, b in card.blocks.items():
        entry = changelog.latest(b)
        if entry is None or (old.blocks.get(name) or {}).get("fingerprint") == b["fingerprint"]:
            continue
        what = changelog.FIRST if entry["since"] is None else (f"{changelog.summary(entry['splits'])} since "
                                                                f"{entry['since']}")
        print(f"changes since {against}: {name} {b['version']}: {what}")


def _versions(args) -> int:
    from probekit.hub import bump
    from probekit.hub import export as hub_export
    from probekit.hub import publish

    if args.repo_id and args.published:
        raise UsageError("give --repo-id or --published, not both")
    from probekit.hub import changelog

    data = Path(args.data)
    configs = hub_export.discover(data, args.probes)
    published, against, previous = None, None, None
    if args.repo_id or args.published:
        previous = publish.published(args.repo_id, args.published, args.revision)
        against = args.published or args.repo_id
        published = {} if previous is None else {n: b for n, b in previous.card.blocks.items()
                                                  if hub_export.selected(n, b.get("probe"), args.probes)}
        if previous is None:
            print(f"{args.repo_id}: not published yet")
    local, examples = {}, {}
    for config in configs:   # a changed config's examples counted against the published Parquet files
        exp = hub_export.export(config, data)
        local[config.name] = b = exp.block
        old = None if published is None else published.get(config.name)
        if published is not None and old is None:
            examples[config.name] = f"+{sum(b['counts'].values())}"
        elif old is not None and old.get("fingerprint") != b["fingerprint"]:
            examples[config.name] = changelog.summary(changelog.split_counts(
                b["format"], previous.rows(config.name) or {}, exp.rows))
    rows = bump.changes(local, published, examples)
    width = max(len(n) for n, _, _ in rows)
    vwidth = max(len(v) for _, v, _ in rows)
    if against:
        print(f"compared with {against}")
    for name, version, what in rows:
        print(f"{name:<{width}}  {version:<{vwidth}}  {what}".rstrip())
    return 0


def add_commands(sub, evaluate, command, params_help: str) -> None:
    """``publish`` and ``versions``."""
    pub = command(sub, "publish", "publish every dataset folder under --data to one Hugging Face Hub dataset repo: "
                                  "one config per probe and variant, Parquet shards and a generated card; only "
                                  "configs whose fingerprint changed are uploaded, in one commit")
    pub.add_argument("--repo-id", type=_repo_id, help="the Hub dataset repo, ORG/NAME")
    pub.add_argument("--data", default="data", help="folder searched for dataset folders (a meta.json with a format)",
                     type=Searched)
    pub.add_argument("--probes", type=_names, help="comma-separated probe or config names (globs allowed), e.g. "
                                                   "age_comparison,pararel-P19 (default: all)")
    pub.add_argument("--private", action="store_true", help="create the repo private")
    pub.add_argument("--revision", metavar="BRANCH", help="commit to this branch (created from main if missing)")
    pub.add_argument("--dry-run", metavar="DIR", help="write the folder that would be uploaded to DIR (every config, "
                                                      "no network) instead of pushing", type=Written)
    pub.add_argument("--published", metavar="DIR", help="with --dry-run: an earlier dry-run folder, the previous "
                                                        "version each config's \"Changes\" entry is counted against "
                                                        "(offline; without it every config is first published)",
                     type=Read)
    pub.add_argument("--accept-restricted-licences", action="store_true",
                     help="allow a public push of configs built from non-commercial or unlicensed sources "
                          "(probekit/hub/licence_policy.yaml; each config's card section says why)")
    pub.add_argument("--keep-version", action="store_true",
                     help="publish a config whose templates or generator changed under its published version "
                          "(refused by default: raise `version:` in its probe.yaml; docs/publishing.md)")
    add_force(pub)
    pub.set_defaults(func=_publish)

    ver = command(sub, "versions", "each config's version (YAML version + fingerprint) and what changed since the "
                                   "last published card: examples added, removed and changed (+3 -1 ~500, "
                                   "against the published Parquet files), rows per split, fingerprint, templates")
    ver.add_argument("--data", default="data", help="folder searched for dataset folders")
    ver.add_argument("--probes", type=_names, help="comma-separated probe or config names (globs allowed)")
    ver.add_argument("--repo-id", type=_repo_id, help="compare with this Hub dataset repo's card")
    ver.add_argument("--published", metavar="DIR", type=Read, help="compare with the card of a folder written by "
                                                        "probes publish --dry-run (offline)")
    ver.add_argument("--revision", metavar="BRANCH", help="the Hub branch to compare with (default: main)")
    ver.set_defaults(func=_versions)
