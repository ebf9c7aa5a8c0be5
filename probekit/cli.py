"""The ``probes`` command: one subcommand per kind of DVC stage (sources, generate, evaluate, report).

Argument parsing and input checks import nothing heavy, so mistakes come back at once; torch and
transformers are imported only when a model is about to be loaded.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path

from probekit import __version__, cli_calum, cli_curves, cli_grid, cli_pararel, cli_publish
from probekit.errors import ProbekitError, UsageError

PARAMS_HELP = "params file over the built-in defaults (default: ./params.yaml if present, else built-in only)"
MANIFEST_HELP = "sources manifest (default: ./raw/sources.yaml, else the one of this probekit checkout)"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _batch_size(text: str) -> int | str:
    return text if text == "auto" else _positive(text)


def _given(value, default):
    """An option's value, else its default from params (for options where 0 is a valid value)."""
    return default if value is None else value


def _manifest(args) -> Path:
    from probekit.sources import default_manifest

    return Path(args.manifest) if args.manifest else default_manifest()


def _sources(args) -> int:
    from probekit import sources

    manifest = _manifest(args)
    if args.action == "list":
        return sources.cmd_list(manifest, args.dest, args.mirror)
    if args.action == "mirror":
        return sources.cmd_mirror(manifest, args.folder, args.unset)
    return sources.cmd_fetch(manifest, args.name, args.dest, args.mirror)


def _tables(args) -> int:
    from probekit import loaders
    from probekit.params import read_params, section
    from probekit.sources import load_manifest, provenance

    loader = loaders.get(args.name)
    params = section(read_params(args.params), f"tables.{args.name}", loader.params)
    manifest_path = _manifest(args)
    manifest = load_manifest(manifest_path)
    names = loader.sources(params)
    unknown = [n for n in names if n not in manifest]
    if unknown:
        raise UsageError(f"{manifest_path}: no source(s) {unknown}, which the {args.name} loader reads")
    loaded = loader.fn(Path(args.raw) if args.raw else manifest_path.parent, params)
    loaded.report = {**loaded.report, "params": params.model_dump(mode="json"),
                     "sources": {n: provenance(manifest[n]) for n in names}}
    loaders.write_tables(loaded, Path(args.out))
    for name, df in loaded.tables.items():
        print(f"{args.name}/{name}: {len(df)} rows")
    return 0


class _TableSets(Mapping):
    """The table sets a generator may read (``names``), each read from ``folder/<set>`` when the generator first
    asks for it; ``sources`` gathers the raw sources (provenance) of the sets read."""

    def __init__(self, folder: Path, names: tuple[str, ...]):
        self.folder, self.names, self.sources, self._read = folder, names, {}, {}

    def __getitem__(self, name: str):
        if name not in self.names:
            raise KeyError(name)
        if name not in self._read:
            from probekit import loaders

            self._read[name] = loaders.read_tables(self.folder / name)
            self.sources.update(loaders.read_report(self.folder / name)["sources"])
        return self._read[name]

    def __contains__(self, name) -> bool:
        return name in self.names

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def _generate(args) -> int:
    import generators
    from probekit.build import build_probe
    from probekit.params import read_params
    from probekit.probe_dataset import write_probe

    generator = generators.get(args.probe)
    params = read_params(args.params)
    given = {}  # the raw sources the generator reads directly
    if generator.sources:
        from probekit.sources import load_manifest, provenance

        manifest = load_manifest(_manifest(args))
        given = {name: provenance(manifest[name]) for name in generator.sources}
    tables = _TableSets(Path(args.tables), generator.tables)

    def sources() -> dict:
        """Provenance of what the generator read: its own sources, then those of the table sets it asked for."""
        return dict(sorted({**given, **tables.sources}.items()))

    if args.section and args.section not in params.data:
        raise UsageError(f"--section {args.section}: no such section in {params.label}")
    if args.task and generator.format != "pair_cls":
        raise UsageError(f"--task applies to sentence-pair datasets (calum), not {args.probe}")
    if generator.format == "cloze_set":
        return _generate_cloze_set(args, generator, params, tables, sources)
    if generator.format == "pair_cls":
        return _generate_pairs(args, generator, params, tables, sources)
    built = build_probe(args.probe, params, tables, args.section)
    write_probe(args.out, built, generator_version=generator.version, sources=sources())
    for name, rows in built.variants.items():
        print(f"{args.probe}/{name}: " + ", ".join(f"{split} {len(r)}" for split, r in rows.items()))
    if built.not_built:
        print(f"{args.probe}: declared in {built.spec.path.name} but not selected by {params.label} "
              f"{args.section or args.probe}.variants, so not built: {', '.join(built.not_built)}")
    return 0


def _licence_id(sources) -> str:
    """A dataset's licence id: its sources' one when they agree, else ``other``."""
    ids = sorted({str(s.get("license_id") or "other") for s in sources.values()})
    return ids[0] if len(ids) == 1 else "other"


def _generate_cloze_set(args, generator, params, tables, sources) -> int:
    """``sources()``: the provenance of what ``generator.fn`` read (called after it)."""
    from probekit.cloze_dataset import write_cloze_set

    rows, meta = generator.fn(params, tables, args.section)
    meta |= {"license": _licence_id(sources()), "sources": sources()}
    write_cloze_set(args.out, rows, meta, generator.module.card)
    print(f"{args.probe}: " + ", ".join(f"{name} {n}" for name, n in meta["counts"].items())
          + f", {meta['queries']} queries")
    return 0


def _generate_pairs(args, generator, params, tables, sources) -> int:
    """``sources()``: the provenance of what ``generator.fn`` read (called after it)."""
    from probekit.pair_dataset import write_pair_dataset

    variants, meta = generator.fn(params, tables, args.section, args.task)
    meta |= {"license": _licence_id(sources()), "sources": sources()}
    write_pair_dataset(args.out, variants, meta, generator.module.card)
    for name, splits in meta["counts"].items():
        print(f"{args.probe} {meta['task']}/{name}: " + ", ".join(f"{s} {n}" for s, n in splits.items()))
    return 0


def _fidelity(args) -> int:
    from probekit import fidelity
    from probekit.sources import load_manifest, release_file

    manifest_path = _manifest(args)
    manifest = load_manifest(manifest_path)

    def release_path(probe: str, split: str) -> Path:
        path = manifest_path.parent / "olmpics" / release_file(manifest, "olmpics", probe, split).path
        if not path.is_file():
            raise UsageError(f"{path}: release file missing (fetch it: probes sources fetch olmpics)")
        return path

    report = fidelity.run(Path(args.probes), release_path, Path(args.out))
    for probe, splits in report.items():
        broken = sum(sum(s["ours"]["problems"].values()) for s in splits.values())
        print(f"{probe}: ours breaks {broken} construction rule(s); release: "
              + ", ".join(f"{split} {sum(s['release']['problems'].values())}" for split, s in splits.items()))
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.json')}")
    return 0


def _data_path(args, data: str | None, release_of: str | None, split: str) -> tuple[Path, str | None]:
    """The file or folder to read: ``--data`` as given, or the release file of ``--release-of [SOURCE:]PROBE``
    for ``split`` (found through the manifest); also the probe of a release. It must exist."""
    probe = None
    if release_of:
        from probekit.sources import load_manifest, release_file

        manifest = _manifest(args)
        source, probe = release_of.split(":", 1) if ":" in release_of else ("olmpics", release_of)
        entries = load_manifest(manifest)
        if source not in entries:
            raise UsageError(f"--release-of {release_of}: no source {source!r} in {manifest}")
        try:
            data = manifest.parent / source / release_file(entries, source, probe, split).path
        except KeyError as exc:
            raise UsageError(f"--release-of {release_of}: {exc.args[0]}") from None
    if data is None:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE")
    if not Path(data).exists():
        hint = f" (fetch it first: probes sources fetch {source})" if release_of else ""
        raise UsageError(f"--data {data}: no such file or folder{hint}")
    return Path(data), probe


def _evaluate(args) -> int:
    from evaluators.params import ZeroshotParams
    from probekit.params import read_params, section
    from probekit.probe_dataset import read_split

    params = read_params(args.params)
    zs = section(params, "zeroshot", ZeroshotParams)  # what the command line leaves out
    split = args.split or zs.split
    sources = [(d, None) for d in args.data or ()] + [(None, r) for r in args.release_of or ()]
    if not sources:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE (once or more)")
    found = [_data_path(args, data, release_of, split) for data, release_of in sources]
    targets = cli_curves.outs_for(args.out, [probe or path.name for path, probe in found])
    # output folder -> (data, probe of a release file, {variant: (path, examples)})
    inputs = {t: (path, probe, read_split(path, split, args.limit)) for t, (path, probe) in zip(targets, found)}

    from evaluators.models import resolve_model

    ref = resolve_model(args.model, params.models(), params.label)

    from evaluators import zeroshot
    from evaluators.kept_models import scoring_lm

    loaded = scoring_lm(ref, scoring=args.scoring or zs.scoring, device=args.device, seed=_given(args.seed, zs.seed),
                        dtype=args.dtype or zs.dtype)
    if args.multi_token and loaded.family != "mlm":
        raise UsageError("--multi-token applies to the mask-logit rule of masked LMs only")
    rule = args.rule or getattr(zs.rules, loaded.family)
    for target, (data, probe, datasets) in inputs.items():
        results = zeroshot.run(loaded, datasets, target, split=split, rule=rule,
                               batch_size=args.batch_size or zs.batch_size, limit=args.limit,
                               multi_token=args.multi_token or zs.multi_token, probe=probe)
        for variant, m in results.items():
            flag = "" if m["zero_shot"] else "  (LM head newly initialised: not a zero-shot result)"
            name = Path(data).name + (f"/{variant}" if variant and len(inputs) > 1 else "")
            print(f"{args.model} {variant if len(inputs) == 1 and variant else name}: accuracy "
                  f"{m['accuracy']:.3f} on {m['n']}{flag}")
    return 0


def _audit(args) -> int:
    from probekit import atomic
    from probekit.params import read_params
    from probekit.probe_dataset import read_split

    out = Path(args.out)
    if out.suffix == ".json":
        raise UsageError(f"--out {out}: the markdown report; its JSON is written beside it ({out.stem}.json)")
    sources = [(d, None) for d in args.data or ()] + [(None, r) for r in args.release_of or ()]
    if not sources:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE (once or more)")
    datasets = {}
    for data, release_of in sources:
        for path, examples in read_split(_data_path(args, data, release_of, args.split)[0], args.split).values():
            if str(path) in datasets:
                raise UsageError(f"{path}: given twice")
            datasets[str(path)] = examples
    if len(set(args.model)) != len(args.model):
        raise UsageError(f"--model: {', '.join(sorted({m for m in args.model if args.model.count(m) > 1}))} "
                         f"given twice")
    params = read_params(args.params)

    from evaluators.models import resolve_model

    refs = [resolve_model(name, params.models(), params.label) for name in args.model]

    import transformers

    from evaluators import audit

    transformers.logging.set_verbosity_error()
    tokenizers = {}
    for ref in refs:
        tokenizer = transformers.AutoTokenizer.from_pretrained(ref.location)
        if not tokenizer.is_fast:
            raise UsageError(f"--model {ref.name}: a fast tokenizer is needed (offsets locate the word in context)")
        tokenizers[ref.name] = tokenizer
    result = audit.audit(tokenizers, datasets)
    atomic.write_text(out, audit.markdown(result, args.split))
    atomic.write_json(out.with_suffix(".json"), {
        "split": args.split, "datasets": result,
        "models": {ref.name: {"spec": ref.spec, "tokenizer": type(tokenizers[ref.name]).__name__} for ref in refs}})
    for label, d in result.items():
        print(f"{label}: {d['examples']} examples; eligible "
              + ", ".join(f"{name} {m['counts']['eligible']}" for name, m in d["models"].items())
              + f"; for all models {d['eligible_all']['n']}")
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


def _report(args) -> int:
    from evaluators import heatmap, report

    for path in report.run(args.results, out=args.out, metrics=args.metrics, plot=args.plot):
        print(f"wrote {path}")
    if args.heatmaps:
        for path in heatmap.run(args.results, args.heatmaps):
            print(f"wrote {path}")
    return 0


def _annotated_probe(probe: str):
    """The generator module and spec of a probe whose gold comes from people (it defines annotated_keys)."""
    import importlib

    import generators
    from probekit.templates import load_probe_spec

    generator = generators.get(probe)
    module = importlib.import_module(f"generators.{probe}")
    if not hasattr(module, "annotated_keys"):
        raise UsageError(f"--probe {probe}: this probe takes no human annotations (its gold is computed)")
    return generator, module, load_probe_spec(generator.template_path)


def _annotate_export(args) -> int:
    from probekit import annotations, loaders
    from probekit.params import probe_section, read_params

    generator, module, spec = _annotated_probe(args.probe)
    params = probe_section(read_params(args.params), spec, generator.params)
    annotated = set() if args.all else module.annotated_keys(spec, params)
    drawn = None
    if args.candidates:
        candidates = [key for path in args.candidates for key in annotations.read_candidates(path, spec)]
    else:
        draw = getattr(module, "export_candidates", None)
        if draw is None:
            raise UsageError(f"--probe {args.probe}: draws no candidates from tables; give --candidates CSV")
        tables = {name: loaders.read_tables(Path(args.tables) / name) for name in module.EXPORT_TABLES}
        candidates, drawn = draw(spec, params, tables, annotated)
    stats = annotations.export(spec, candidates, args.out, annotated)
    per = ", ".join(f"{t} {n}" for t, n in stats["by_template"].items()) or "none"
    print(f"wrote {stats['written']} statement(s) to annotate to {args.out} ({per}); left out: "
          f"{stats['already_annotated']} already annotated, {stats['repeated']} repeated candidate(s)")
    for tid, r in (drawn or {}).items():
        if r["types"] is None:
            print(f"{tid}: no ConceptNet types declared ({args.probe}.export.types): nothing drawn; give its "
                  f"statements with --candidates")
            continue
        coverage = (f"; the declared types cover {r['typed']} of its {r['annotated']} annotated statement(s) "
                    f"({r['in_pools']} within the candidate words)" if r["annotated"] else "")
        print(f"{tid}: x {' | '.join(r['types']['x'])} ({r['x_words']} words), y {' | '.join(r['types']['y'])} "
              f"({r['y_words']} words): drew {r['drawn']} of {r['pairs']} pairs, skipping "
              f"{r['skipped_annotated']} annotated{coverage}")
    return 0


def _annotate_import(args) -> int:
    from probekit import annotations

    _, _, spec = _annotated_probe(args.probe)
    result = annotations.import_answers(args.answers, spec, min_workers=args.min_workers)
    annotations.write_gold(result.gold, args.out)
    s = result.stats
    agreement = (f"mean agreement with the majority {s['mean_agreement']:.3f} and Fleiss' kappa "
                 f"{s['fleiss_kappa'] if s['fleiss_kappa'] is None else format(s['fleiss_kappa'], '.3f')} over "
                 f"{s['statements_with_2_or_more_workers']} statement(s) with 2+ workers"
                 if s["mean_agreement"] is not None else "no statement has 2+ workers: agreement undefined")
    print(f"{s['answers']} answer(s) of {s['workers']} worker(s) in {s['files']} file(s) ({s['blank']} blank, "
          f"skipped) on {s['statements']} statement(s): {s['gold']} with gold, {s['ties']} tie(s) and "
          f"{s['too_few_workers']} with fewer than {args.min_workers} worker(s) left without gold (the next "
          f"export lists them again); {agreement}")
    print(f"wrote {args.out}")
    return 0


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Every option's default shown in its help (where it has one); descriptions kept as written."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS \
                or not action.option_strings \
                or "default" in (action.help or ""):
            return action.help
        return f"{action.help} (default: {action.default})"


def parser() -> argparse.ArgumentParser:
    import generators  # globs, no imports of probe or loader modules
    from probekit import loaders

    probes, table_sets = generators.available(), loaders.available()
    p = argparse.ArgumentParser(prog="probes", description=__doc__, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"probes (probekit) {__version__}")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(parent, name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help, description=description or help, formatter_class=_Formatter)

    src = command(sub, "sources", "list, fetch or mirror the raw sources of raw/sources.yaml", """\
list     the state of every source (files present and verified; the mirror in use)
fetch    download a source from its official URLs, or copy it from a mirror, verifying each sha256
mirror   set (or show, or --unset) a mirror folder for this checkout: every later fetch and `dvc repro`
         copies from it instead of downloading (kept in raw/sources.local.yaml, not committed)""")
    src_sub = src.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, help in (("list", "the state of every source"), ("fetch", "fetch one source, verified"),
                         ("mirror", "set, show or forget this checkout's mirror folder")):
        a = command(src_sub, action, help)
        if action == "fetch":
            a.add_argument("name", help="source name in the manifest, e.g. olmpics")
        if action == "mirror":
            a.add_argument("folder", nargs="?", help="mirror folder to use from now on (omit to show the current one)")
            a.add_argument("--unset", action="store_true", help="forget the mirror: download from now on")
        else:
            a.add_argument("--dest", help="target folder (default: raw/NAME beside the manifest)")
            a.add_argument("--mirror", help="copy from this folder instead of downloading, this time only "
                                            "(default: $PROBES_MIRROR, then `probes sources mirror`)")
        a.add_argument("--manifest", help=MANIFEST_HELP)
        a.set_defaults(func=_sources)

    tab = command(sub, "tables", "load a source family's raw files into Parquet tables (what generators read)")
    tab.add_argument("name", choices=table_sets, metavar="NAME", help=f"one of: {', '.join(table_sets)}")
    tab.add_argument("--out", required=True, help="folder for <table>.parquet and report.json")
    tab.add_argument("--raw", help="folder holding one sub-folder per fetched source (default: the manifest's)")
    tab.add_argument("--params", help=PARAMS_HELP + "; section tables.NAME")
    tab.add_argument("--manifest", help=MANIFEST_HELP)
    tab.set_defaults(func=_tables)

    gen = command(sub, "generate", "build a probe dataset: every variant its YAML declares (or params selects)")
    gen.add_argument("probe", choices=probes, metavar="PROBE", help=f"one of: {', '.join(probes)}")
    gen.add_argument("--out", required=True, help="probe folder to write (<out>/<variant>/...)")
    gen.add_argument("--tables", default="data/tables", help="folder of the table sets (probes tables NAME)")
    gen.add_argument("--params", help=PARAMS_HELP)
    gen.add_argument("--section", help="read this params section instead of PROBE's: a second dataset of the same "
                                       "probe (e.g. age_comparison_grid, every pair for the heatmaps)")
    gen.add_argument("--manifest", help=MANIFEST_HELP + " (for the raw sources a probe reads directly)")
    gen.add_argument("--task", help="calum: the task (GLUE: rte, mrpc, qnli, qqp, mnli; KLUE: klue_nli, klue_sts; "
                                    "generators/calum/<language>.yaml; default: the params' calum.task)")
    gen.set_defaults(func=_generate)

    fid = command(sub, "fidelity", "compare generated probes with the original oLMpics release files")
    fid.add_argument("--probes", required=True, help="folder of generated probe folders (data/probes)")
    fid.add_argument("--out", required=True, help="markdown report to write (a .json beside it too)")
    fid.add_argument("--manifest", help=MANIFEST_HELP)
    fid.set_defaults(func=_fidelity)

    ev = command(sub, "evaluate", "evaluate a model on probe data")
    ev_sub = ev.add_subparsers(dest="setup", required=True, metavar="SETUP")
    zs = command(ev_sub, "zeroshot", "zero-shot multiple choice: MC-MLM for masked LMs, log-likelihood rules for "
                                     "causal and seq2seq LMs")
    zs.add_argument("--model", required=True,
                    help="an alias of the params' `models`, a local folder, pkg:<python package>, or a Hub id")
    zs.add_argument("--data", action="append",
                    help="a probe folder, a variant folder, or an original oLMpics jsonl file; once or more")
    zs.add_argument("--release-of", metavar="[SOURCE:]PROBE", action="append",
                    help="evaluate the original release file of PROBE (source olmpics) fetched under raw/; once or "
                         "more. With several --data / --release-of, the model is loaded once and each is written "
                         "to --out with {probe} replaced by the folder's name or the probe")
    zs.add_argument("--split", help="which <split>.jsonl to read (default: the params' zeroshot.split, else dev)")
    zs.add_argument("--out", required=True, help="folder for predictions.jsonl and metrics.json (per variant); "
                                                  "{probe} in it stands for each --data folder's name or --release-of "
                                                  "probe (required with several)")
    zs.add_argument("--scoring", choices=("auto", "mlm", "causal", "seq2seq"),
                    help="the model's family, which picks the scoring rules (default: the params' zeroshot.scoring, "
                         "else auto: from the model's config)")
    zs.add_argument("--rule", choices=("mask-logit", "pll", "statement", "choice", "sentinel"),
                    help="mlm: mask-logit (MC-MLM, default) or pll; causal: statement (default) or choice; "
                         "seq2seq: sentinel (T5, default) or statement (BART, default); defaults come from the "
                         "params' zeroshot.rules")
    zs.add_argument("--batch-size", type=_batch_size,
                    help="rows per forward pass, or auto: 64 on a CPU, the largest that fits on a GPU (default: the "
                         "params' zeroshot.batch_size, else auto); scores do not depend on it")
    zs.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ..., or auto "
                                                    "(cuda when torch sees a GPU, else cpu)")
    zs.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"),
                    help="weights' dtype; auto: bfloat16 on a GPU or CPU with native bf16, else float32 (default: "
                         "the params' zeroshot.dtype, else float32)")
    zs.add_argument("--limit", type=_positive, help="only the first N examples of each file (smoke tests)")
    zs.add_argument("--multi-token", choices=("error", "first"),
                    help="mask-logit: a choice that is not one token is refused, or scored by its first token")
    zs.add_argument("--seed", type=int, help="seeds a newly initialised LM head (default: the params' zeroshot.seed)")
    zs.add_argument("--params", help=PARAMS_HELP)
    zs.add_argument("--manifest", help=MANIFEST_HELP)
    zs.set_defaults(func=_evaluate)
    cli_curves.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_pararel.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_calum.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_grid.add_commands(sub, ev_sub, command, PARAMS_HELP)
    cli_publish.add_commands(sub, ev_sub, command, PARAMS_HELP)

    aud = command(sub, "audit", "how each answer word is tokenized in context per model, and the examples "
                                "mask-logit's single-token rule leaves (loads tokenizers only)")
    aud.add_argument("--model", action="append", required=True,
                     help="an alias of the params' `models`, a local folder, pkg:<python package>, or a Hub id; "
                          "repeat it to compare models on the examples all of them can score")
    aud.add_argument("--data", action="append",
                     help="a probe folder, a variant folder, or an oLMpics jsonl file of MC-MLM data (repeatable)")
    aud.add_argument("--release-of", action="append", metavar="[SOURCE:]PROBE",
                     help="also audit the original release file of PROBE fetched under raw/ (repeatable)")
    aud.add_argument("--split", default="dev", help="which <split>.jsonl to read")
    aud.add_argument("--out", required=True, help="markdown report to write (FILE.json beside it too)")
    aud.add_argument("--params", help=PARAMS_HELP)
    aud.add_argument("--manifest", help=MANIFEST_HELP)
    aud.set_defaults(func=_audit)

    rep = command(sub, "report", "tables and plots of the results; writes only the paths given")
    rep.add_argument("results", nargs="+", type=Path, help="folders searched for metrics.json")
    rep.add_argument("--out", type=Path, required=True, help="the markdown report to write")
    rep.add_argument("--metrics", type=Path, help="also write the summary for `dvc metrics` to this JSON file")
    rep.add_argument("--plot", type=Path, help="also write the accuracy bar plot to this PNG file")
    rep.add_argument("--heatmaps", type=Path, help="also write per-model heatmaps of two-number probes "
                                                   "(Fig. 2A/3) into this folder")
    rep.set_defaults(func=_report)

    ann = command(sub, "annotate", "statements out to crowdworkers, their answers back in as gold", """\
export   write statements that have no gold yet, one a row with empty worker and answer columns, for
         crowdworkers (each fills a copy): the rows (template_id, x, y) of --candidates CSVs, or else a
         seeded sample per template drawn from the ConceptNet types its slots declare (params
         always_never.export; the conceptnet table set under --tables)
import   aggregate the workers' answer files into a gold table by majority vote (a tie gives no gold);
         print the agreement. Give the gold table to the probe's params `annotations`""")
    ann_sub = ann.add_subparsers(dest="action", required=True, metavar="ACTION")
    exp = command(ann_sub, "export", "the statements to annotate, as a CSV for crowdworkers")
    exp.add_argument("--probe", default="always_never", help="probe whose templates and annotations to use")
    exp.add_argument("--candidates", nargs="+", metavar="CSV",
                     help="candidate CSV file(s) with columns template_id, x, y (default: draw them from the "
                          "ConceptNet types of the probe's params export.types)")
    exp.add_argument("--tables", default="data/tables",
                     help="folder of the table sets (probes tables conceptnet), read when --candidates is not given")
    exp.add_argument("--out", required=True, help="CSV to write (template_id, x, y, statement, worker, answer)")
    exp.add_argument("--all", action="store_true",
                     help="also list candidates that already have gold (default: only the unannotated ones)")
    exp.add_argument("--params", help=PARAMS_HELP + "; the probe's section says where its annotations are")
    exp.set_defaults(func=_annotate_export)
    imp = command(ann_sub, "import", "aggregate workers' answers into a gold table (majority vote)")
    imp.add_argument("answers", nargs="+", metavar="ANSWERS.csv",
                     help="answer file(s): the exported columns with worker (empty: the file name) and answer")
    imp.add_argument("--out", required=True, help="gold CSV to write (template_id, x, y, gold, n_workers, agreement)")
    imp.add_argument("--probe", default="always_never", help="probe whose templates and answer words to check")
    imp.add_argument("--min-workers", type=_positive, default=1,
                     help="a statement with fewer answers gets no gold")
    imp.set_defaults(func=_annotate_import)
    return p


def resolve_device(device: str) -> str:
    """``--device auto``: ``cuda`` when torch sees a GPU, else ``cpu`` (logged); any other device as given. The one
    place ``auto`` is resolved (torch is imported only for it)."""
    if device != "auto":
        return device
    import torch

    resolved = "cuda" if torch.cuda.is_available() else "cpu"
    logging.getLogger("probekit").info("--device auto: %s", resolved)
    return resolved


def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except KeyboardInterrupt:
        print("probes: interrupted", file=sys.stderr)
        return 130
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("probes: %(levelname)s: %(message)s"))
    log = logging.getLogger("probekit")
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False
    where = f"probes {args.command}"
    try:
        if getattr(args, "device", None) == "auto":
            args.device = resolve_device(args.device)
        return args.func(args)
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        message = " ".join(str(exc).split())
        if isinstance(exc, ProbekitError):
            print(f"{where}: error: {message}", file=sys.stderr)
            return 2 if isinstance(exc, UsageError) else 1
        if isinstance(exc, OSError):
            print(f"{where}: error: {message}", file=sys.stderr)
            return 1
        print(f"{where}: internal error: {type(exc).__name__}: {message} (run `probes --debug {args.command} ...` "
              f"for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
