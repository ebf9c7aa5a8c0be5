"""The ``probes browse`` subcommands: ``build`` (a static site of every model's predictions beside their rows,
:func:`evaluators.browse.build.build_site`), ``serve`` (that site on 127.0.0.1 with range requests,
:mod:`evaluators.browse.serve`) and ``publish`` (as a static Hugging Face Space, or ``--dry-run DIR``: the folder that
would be uploaded; :mod:`evaluators.browse.space`). Argparse only: each handler imports its module when it runs."""

from __future__ import annotations

import argparse

from probekit.errors import UsageError, shown
from probes.options import Read, SearchedResults, Written, add_force


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number (0: a free one), got {shown(text)}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def _space_id(text: str) -> str:
    from probes.publish import _REPO_ID

    if not _REPO_ID.match(text):
        raise argparse.ArgumentTypeError(f"expected ORG/NAME (a Hub Space id), got {shown(text)}")
    return text


def _build(args) -> int:
    from evaluators.browse.build import build_site

    build_site(args.out, data=args.data, results=args.results, diff=args.diff, force=args.force)
    print(f"wrote the site to {args.out}; `probes browse serve {args.out}` serves it")
    return 0


def _serve(args) -> int:
    from evaluators.browse.serve import serve

    serve(args.dir, port=args.port)
    return 0


def _publish(args) -> int:
    from evaluators.browse.space import publish_space

    if args.dry_run and args.private:
        raise UsageError("--private goes with a push, not --dry-run (nothing is created)")
    out = publish_space(args.dir, args.repo_id, private=args.private, dry_run=args.dry_run, force=args.force,
                        accept_restricted=args.accept_restricted_licences)
    if out.folder is not None:
        print(f"dry run: wrote {len(out.files)} files to {out.folder} (the site and the Space's README.md); "
              "nothing uploaded")
    else:
        print(f"{args.repo_id}: commit {out.commit[:12]}: {len(out.files)} files; {out.url}")
    return 0


def add_commands(sub, command) -> None:
    """``probes browse build|serve|publish``."""
    p = command(sub, "browse", "the results browser: a static site of every model's answer on every example", """\
build    a static site from the project's files: an overview of accuracy per model, probe and variant; the
         examples of each dataset with every model's prediction (filters, sorting by margin); one example
         beside its controls and facts; two models compared (crosstab, McNemar's p); dataset versions
serve    serve a built site on 127.0.0.1 (with HTTP range requests: the page reads each run's block)
publish  push a built site to a static Hugging Face Space (or --dry-run DIR: the folder that would be
         uploaded, its README.md with the Space's front matter); docs/browse.md""")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    b = command(actions, "build", "build the static site from --data and --results")
    b.add_argument("--out", required=True, type=Written, help="the site folder to write")
    b.add_argument("--data", default="data", type=Read, help="the project's data folder (the datasets' rows)")
    b.add_argument("--results", default="results", type=SearchedResults,
                   help="the results folder searched for predictions.jsonl files (the site may sit in it, beside "
                        "the folders holding them: results/browser)")
    b.add_argument("--diff", metavar="FILE", type=Read, action="append",
                   help="a `probes diff --json` or `--examples` output: the site's versions view (give both: "
                        "--diff twice)")
    add_force(b)
    b.set_defaults(func=_build)

    s = command(actions, "serve", "serve a built site on 127.0.0.1 until Ctrl-C (prints its URL)")
    s.add_argument("dir", metavar="DIR", type=Read, help="a folder written by probes browse build")
    s.add_argument("--port", type=_port, default=8000, help="the port (0: a free one)")
    s.set_defaults(func=_serve)

    pub = command(actions, "publish", "publish a built site as a static Hugging Face Space (one commit; files an "
                                      "earlier site left there are deleted)")
    pub.add_argument("dir", metavar="DIR", type=Read, help="a folder written by probes browse build")
    pub.add_argument("--repo-id", type=_space_id, required=True, help="the Space, ORG/NAME")
    pub.add_argument("--private", action="store_true", help="create the Space private")
    pub.add_argument("--accept-restricted-licences", action="store_true",
                     help="push publicly a site showing rows of datasets built from non-commercial or unlicensed "
                          "sources (refused without it, as probes publish refuses them)")
    pub.add_argument("--dry-run", metavar="DIR", type=Written,
                     help="write the folder that would be uploaded to DIR instead of pushing (no network)")
    add_force(pub)
    pub.set_defaults(func=_publish)
