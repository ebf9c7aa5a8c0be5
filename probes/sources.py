"""``probes sources`` (list, fetch, mirror the raw sources of ``raw/sources.yaml``) and ``probes tables`` (a source
family's raw files -> Parquet tables). Argparse and checks only; the work is in :mod:`probekit.sources`."""

from __future__ import annotations

from pathlib import Path

from probekit.errors import UsageError
from probes.options import MANIFEST_HELP, PARAMS_HELP, edits, Added, Names, Read, Written, add_force, out_folder


def manifest_of(args) -> Path:
    """``--manifest``, else ./raw/sources.yaml, else the one of this probekit checkout (the commands that read it)."""
    from probekit.sources.manifest import default_manifest

    return Path(args.manifest) if args.manifest else default_manifest()


def _source_paths(args) -> list:
    """What ``probes sources`` writes besides its options: this checkout's ``sources.local.yaml`` beside the manifest
    (``mirror`` sets or forgets its folder there, ``fetch --record-checksums`` records sha256s), and ``fetch``'s
    default folder, ``raw/NAME`` beside the manifest."""
    from probekit.outputs.gate import ADD, Access
    from probekit.sources.manifest import LOCAL_CONFIG

    manifest = manifest_of(args)
    found = []
    if args.action == "mirror" and (args.folder or args.unset) or args.action == "fetch" and args.record_checksums:
        found += edits((f"{manifest.parent / LOCAL_CONFIG} (this checkout's source settings)",
                        manifest.parent / LOCAL_CONFIG))
    if args.action == "fetch" and not args.dest:
        found.append(Access(ADD, str(manifest.parent / args.name), "--dest (left out: raw/NAME beside the manifest)"))
    return found


def _sources(args) -> int:
    from probekit.sources import fetch as sources

    manifest = manifest_of(args)
    out_folder(args.dest if args.action == "fetch" else None, "the source's files are written inside it", "--dest",
               replaced=False)
    if args.action == "list":
        return sources.cmd_list(manifest, args.dest, args.mirror)
    if args.action == "mirror":
        return sources.cmd_mirror(manifest, args.folder, args.unset)
    from probekit.sources.capped import fetch_hint
    from probekit.sources.manifest import FetchError

    try:
        return sources.cmd_fetch(manifest, args.name, args.dest, args.mirror, args.record_checksums, args.force)
    except FetchError as e:   # DoQ (the paper profile's fetch@doq): the cap a run without it gets, and the override
        if not fetch_hint(args.name):
            raise
        raise type(e)(f"{e}{fetch_hint(args.name)}") from None


def _tables(args) -> int:
    out_folder(args.out, "the tables are written inside it", kind="tables", force=args.force)
    from probekit.outputs import overlap
    from probekit.params import read_params, section
    from probekit.sources import loaders
    from probekit.sources.manifest import load_manifest, provenance, with_recorded

    from probekit.sources import capped, capped_check

    loader = loaders.get(args.name)
    params_file = read_params(args.params)
    params = section(params_file, f"tables.{args.name}", loader.params)
    params_label = params_file.label
    manifest_path = manifest_of(args)
    manifest = load_manifest(manifest_path)
    names = loader.sources(params)
    unknown = [n for n in names if n not in manifest]
    if unknown:
        raise UsageError(f"{manifest_path}: no source(s) {unknown}, which the {args.name} loader reads")
    raw = Path(args.raw) if args.raw else manifest_path.parent
    overlap.check([("--out", args.out)], [("--raw" if args.raw else "--manifest's folder", raw / n) for n in names])
    if args.name in capped.CAPS:   # a capped source the params refuse, or a full one not here: before any reading
        from probekit.sources.manifest import resolve_mirror

        capped_check.check({"tables": {args.name: params.model_dump(mode="json")}}, manifest_path,
                           resolve_mirror(None, manifest_path)[0], raw, label=params_label)
    loaded = loader.fn(raw, params)
    cap = capped.fact(args.name, params)   # recorded once, here, where the table set is made from the capped source
    provenances = {n: provenance(with_recorded(manifest[n], manifest_path)) | ({"capped": cap} if cap else {})
                   for n in names}
    loaded.report = {**loaded.report, "params": params.model_dump(mode="json", exclude=set() if cap else {"capped"}),
                     "sources": provenances}   # `capped` left out where unset: the default profile's bytes kept
    loaders.write_tables(loaded, Path(args.out))
    for name, df in loaded.tables.items():
        print(f"{args.name}/{name}: {len(df)} rows")
    return 0


def add_commands(sub, command) -> None:
    """``probes sources`` and ``probes tables``."""
    src = command(sub, "sources", "list, fetch or mirror the raw sources of raw/sources.yaml", """\
list     the state of every source (files present and verified; the mirror in use)
fetch    download a source from its official URLs, or copy it from a mirror, verifying each sha256 (a file
         the manifest marks `unconfirmed`: against the one recorded by `fetch NAME --record-checksums`)
mirror   set (or show, or --unset) a mirror folder for this checkout: every later fetch and `dvc repro`
         copies from it instead of downloading (kept in raw/sources.local.yaml, not committed)""")
    src_sub = src.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, help in (("list", "the state of every source"), ("fetch", "fetch one source, verified"),
                         ("mirror", "set, show or forget this checkout's mirror folder")):
        a = command(src_sub, action, help)
        if action == "fetch":
            a.add_argument("name", help="source name in the manifest, e.g. olmpics")
            add_force(a)
            a.add_argument("--record-checksums", action="store_true",
                           help="download files whose sha256 is 'unconfirmed' in the manifest (and none recorded "
                                "yet) unverified, and record the sha256 got in raw/sources.local.yaml: every "
                                "later fetch verifies against it")
        if action == "mirror":
            a.add_argument("folder", nargs="?", help="mirror folder to use from now on (omit to show the current one)",
                           type=Read)
            a.add_argument("--unset", action="store_true", help="forget the mirror: download from now on")
        else:
            a.add_argument("--dest", type=Added, help="target folder (default: raw/NAME beside the manifest)")
            a.add_argument("--mirror", type=Read, help="copy from this folder instead of downloading, this time only "
                                            "(default: $PROBES_MIRROR, then `probes sources mirror`)")
        a.add_argument("--manifest", type=Read, help=MANIFEST_HELP)
        a.set_defaults(func=_sources, paths=_source_paths)

    tab = command(sub, "tables", "load a source family's raw files into Parquet tables (what generators read)")
    tab.add_argument("name", choices=Names("probekit.sources.loaders:available"), metavar="NAME", help="one of: %(choices)s")
    tab.add_argument("--out", type=Written, required=True, help="folder for <table>.parquet and report.json")
    tab.add_argument("--raw", help="folder holding one sub-folder per fetched source (default: the manifest's)",
                     type=Read)
    tab.add_argument("--params", type=Read, help=PARAMS_HELP + "; section tables.NAME")
    tab.add_argument("--manifest", type=Read, help=MANIFEST_HELP)
    add_force(tab)
    tab.set_defaults(func=_tables)
