"""The ``probes`` command: one subcommand per kind of DVC stage (sources, generate, evaluate, report)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

DEFAULT_PARAMS = "params.yaml"
DEFAULT_MANIFEST = "raw/sources.yaml"


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def load_params(path: str | Path, *keys: str):
    """``params.yaml`` (or a section of it by dotted keys); errors name the file and the missing key."""
    path = Path(path)
    try:
        value = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: cannot read params: {exc}") from None
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            raise UsageError(f"{path}: missing key {'.'.join(keys[:depth + 1])!r}")
        value = value[key]
    return value


def _sources(args) -> int:
    from probekit import sources

    mirror = args.mirror or os.environ.get("PROBES_MIRROR")
    if not mirror and Path(args.params).is_file():
        mirror = (load_params(args.params).get("sources") or {}).get("mirror")
    if args.action == "list":
        return sources.cmd_list(args.manifest, args.dest, mirror)
    return sources.cmd_fetch(args.manifest, args.name, args.dest, mirror)


def _generate(args) -> int:
    import generators
    from probekit.build import build_probe
    from probekit.probe_dataset import write_probe
    from probekit.sources import load_manifest

    generator = generators.get(args.probe)
    params = load_params(args.params, args.probe)
    manifest = load_manifest(args.manifest) if generator.sources else {}
    raw = Path(args.manifest).parent
    source_dirs = {name: raw / name for name in generator.sources}
    checksums = {f"{name}/{f.path}": f.sha256 for name in generator.sources for f in manifest[name].files}
    spec, variants = build_probe(args.probe, params, source_dirs)
    write_probe(args.out, spec, variants, params=params, generator_version=generator.version,
                source_checksums=checksums)
    for name, dsd in variants.items():
        print(f"{args.probe}/{name}: " + ", ".join(f"{split} {len(ds)}" for split, ds in dsd.items()))
    return 0


def _evaluate(args) -> int:
    import transformers

    from evaluators import zeroshot
    from evaluators.scoring import load_masked_lm
    from probekit.sources import load_manifest, release_file

    transformers.logging.set_verbosity_error()
    model = args.model
    if Path(args.params).is_file():  # an alias of params.yaml `models`
        model = (load_params(args.params).get("models") or {}).get(model, model)
    data, probe = args.data, None
    if args.release_of:
        source, probe = args.release_of.split(":", 1) if ":" in args.release_of else ("olmpics", args.release_of)
        data = Path(args.manifest).parent / source / release_file(load_manifest(args.manifest), source, probe,
                                                                  args.split).path
    if data is None:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE")
    if not Path(data).exists():
        hint = " (fetch it first: probes sources fetch SOURCE)" if args.release_of else ""
        raise UsageError(f"--data {data}: no such file or folder{hint}")
    loaded = load_masked_lm(model, name=args.model, device=args.device, seed=args.seed)
    results = zeroshot.run(loaded, Path(data), Path(args.out), split=args.split, batch_size=args.batch_size,
                           limit=args.limit, multi_token=args.multi_token, probe=probe)
    for variant, m in results.items():
        flag = "" if m["zero_shot"] else "  (MLM head newly initialised: not a zero-shot result)"
        print(f"{args.model} {variant or Path(data).name}: accuracy {m['accuracy']:.3f} on {m['n']}{flag}")
    return 0


def _report(args) -> int:
    from evaluators import heatmap, report

    report.run(args.results, args.out, args.metrics, args.plot)
    print(f"wrote {args.out}, {args.metrics}, {args.plot}")
    if args.heatmaps:
        for path in heatmap.run(args.results, args.heatmaps):
            print(f"wrote {path}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="probes", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    src = sub.add_parser("sources", help="list or fetch raw sources (raw/sources.yaml)")
    src_sub = src.add_subparsers(dest="action", required=True)
    for action in ("list", "fetch"):
        a = src_sub.add_parser(action)
        if action == "fetch":
            a.add_argument("name", help="source name in the manifest, e.g. olmpics")
        a.add_argument("--manifest", default=DEFAULT_MANIFEST)
        a.add_argument("--dest", help="target folder (default: raw/NAME beside the manifest)")
        a.add_argument("--mirror", help="copy from this mirror folder instead of downloading "
                                        "(default: $PROBES_MIRROR, then params.yaml sources.mirror)")
        a.add_argument("--params", default=DEFAULT_PARAMS)
        a.set_defaults(func=_sources)

    gen = sub.add_parser("generate", help="build a probe dataset (all variants of params.<probe>.variants)")
    gen.add_argument("probe")
    gen.add_argument("--out", required=True, help="probe folder to write (<out>/<variant>/...)")
    gen.add_argument("--params", default=DEFAULT_PARAMS)
    gen.add_argument("--manifest", default=DEFAULT_MANIFEST)
    gen.set_defaults(func=_generate)

    ev = sub.add_parser("evaluate", help="evaluate a model on probe data")
    ev_sub = ev.add_subparsers(dest="setup", required=True)
    zs = ev_sub.add_parser("zeroshot", help="zero-shot MC-MLM with the pretrained MLM head")
    zs.add_argument("--model", required=True,
                    help="Hub id, local path, pkg:<python package>, or an alias of params.yaml `models`")
    zs.add_argument("--data", help="a probe folder, a variant folder, or an original oLMpics jsonl file")
    zs.add_argument("--release-of", metavar="[SOURCE:]PROBE",
                    help="evaluate the original release file of PROBE (source olmpics) fetched under raw/")
    zs.add_argument("--split", default="dev")
    zs.add_argument("--out", required=True)
    zs.add_argument("--batch-size", type=int, default=32)
    zs.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    zs.add_argument("--limit", type=int, help="only the first N examples (smoke tests)")
    zs.add_argument("--multi-token", choices=("error", "first"), default="error",
                    help="a choice that is not one token: refuse it (default), or score its first token")
    zs.add_argument("--seed", type=int, default=0, help="seeds a newly initialised MLM head")
    zs.add_argument("--params", default=DEFAULT_PARAMS)
    zs.add_argument("--manifest", default=DEFAULT_MANIFEST)
    zs.set_defaults(func=_evaluate)

    rep = sub.add_parser("report", help="tables and plots of the zero-shot results")
    rep.add_argument("results", nargs="+", type=Path, help="folders searched for metrics.json")
    rep.add_argument("--out", type=Path, default=Path("results/report.md"))
    rep.add_argument("--metrics", type=Path, default=Path("results/metrics.json"))
    rep.add_argument("--plot", type=Path, default=Path("results/zeroshot.png"))
    rep.add_argument("--heatmaps", type=Path, help="folder for per-model heatmaps of two-number probes "
                                                   "(Fig. 2A/3); reads the data files named in metrics.json")
    rep.set_defaults(func=_report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"probes: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # no repr() quotes
        print(f"probes {args.command}: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
