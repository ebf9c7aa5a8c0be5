"""``probes generate`` (a probe dataset, ParaRel's cloze set or a CALUM pair set, from its generator) and ``probes
fidelity`` (generated probes next to the original release). Argparse and checks only; the work is in
:mod:`generators` and :mod:`probekit.probes`."""

from __future__ import annotations

import importlib
from pathlib import Path

from probekit.errors import DataError, UsageError
from probes.options import MANIFEST_HELP, PARAMS_HELP, params_models, Names, Read, Written, WrittenReport, add_force, out_file, out_folder
from probes.sources import manifest_of


def _generate(args) -> int:
    out_folder(args.out, "the probe's variants are written inside it", kind="dataset", force=args.force)
    from generators.shared import registry
    from probekit.data.writer import write_dataset
    from probekit.params import of_probe, read_params
    from probekit.sources.loaders import TableSets

    generator = registry.get(args.probe)
    params = read_params(args.params)
    if args.tokenizers:   # the one-token filters' tokenizers from the file (its stage reads `models` and `runs`)
        import json

        from generators.shared.single_token import pinned

        try:
            params = pinned(params, json.loads(Path(args.tokenizers).read_text(encoding="utf-8")))
        except (ValueError, DataError) as exc:
            raise DataError(f"--tokenizers {args.tokenizers}: {exc}") from None
    given = {}  # the raw sources the generator reads directly
    if generator.sources:
        from probekit.sources.manifest import load_manifest, provenance

        manifest = load_manifest(manifest_of(args))
        given = {name: provenance(manifest[name]) for name in generator.sources}
    tables = TableSets(Path(args.tables), generator.tables)
    if args.section and args.section not in params.data:
        raise UsageError(f"--section {args.section}: no such section in {params.label}")
    if args.section and not of_probe(args.section, args.probe):
        raise UsageError(f"--section {args.section}: not a section of {args.probe} (a second dataset of a probe is "
                         f"read from a section named after it: {args.probe}_<suffix>)")
    dataset = generator.generate(registry.Request(params, tables, args.section, args.task))
    # provenance of what the generator read: its own sources, then those of the table sets it asked for
    write_dataset(args.out, dataset, dict(sorted({**given, **tables.sources}.items())))
    for line in dataset.summary:
        print(line)
    return 0


def params_paths(args, probe: str, section: str | None = None) -> list:
    """What the params section of ``probe`` names as files to read (its fields marked so: an ALWAYS-NEVER gold
    table, a release file), as :class:`probekit.outputs.gate.Access` reads: a command writing over one would
    delete what it reads. Nothing when the probe or its params cannot be read: the command says why itself."""
    from probekit.outputs.gate import READ, Access

    try:
        from generators.shared import registry
        from probekit.params import probe_section, read_params
        from probekit.pathfields import paths_of

        generator = registry.get(probe)
        params = read_params(args.params)
        model = probe_section(params, generator.probe_spec(), generator.params, section)
    except Exception:
        return []
    label = str(params.path) if params.path is not None else "the built-in defaults"
    return [Access(READ, path, f"{label} {section or probe}.{key}") for key, path in paths_of(model)]


def _generate_paths(args) -> list:
    """What ``probes generate`` reads besides its options: the files its probe's params name, and the model folders
    whose tokenizers its one-token filters may read."""
    return params_paths(args, args.probe, args.section) + params_models(args)


def _tokenizers(args) -> int:
    out = out_file(args.out, "the tokenizers file", force=args.force)
    from generators.shared.single_token import filter_tokenizers
    from probekit.outputs import atomic
    from probekit.params import read_params

    found = filter_tokenizers(read_params(args.params))
    atomic.write_json(out, found)
    for paper, models in found.items():
        print(f"{paper}: the one-token filters read {', '.join(models) or 'no tokenizer (no masked LM runs it)'}")
    return 0


def _fidelity(args) -> int:
    out_file(args.out, "the markdown report", beside=".json", force=args.force)
    from probekit.probes import fidelity
    from probekit.sources.manifest import load_manifest, release_file

    manifest_path = manifest_of(args)
    manifest = load_manifest(manifest_path)

    def release_path(probe: str, split: str) -> Path | None:
        """The release file of ``probe``'s ``split``; None for a probe the release does not have."""
        if not any(f.probe == probe for f in manifest["olmpics"].files):
            return None
        path = manifest_path.parent / "olmpics" / release_file(manifest, "olmpics", probe, split).path
        if not path.is_file():
            raise UsageError(f"{path}: release file missing (fetch it: probes sources fetch olmpics)")
        return path

    def tables(names: tuple[str, ...]):
        from probekit.sources.loaders import TableSets

        missing = [n for n in names if not (Path(args.tables) / n).is_dir()]
        if missing:
            raise UsageError(f"--tables {args.tables}: no table set(s) {missing} (build them: probes tables NAME), "
                             f"read to check the release by our construction rules")
        return TableSets(Path(args.tables), names)

    from generators.shared import release_rules

    report = fidelity.run(Path(args.probes), release_path, Path(args.out), tables, release_rules=release_rules,
                          generator=lambda probe: importlib.import_module(f"generators.{probe}.generator"))
    ours_broken = 0
    for probe, splits in report.items():
        if splits == fidelity.NO_RELEASE:
            print(f"{probe}: {fidelity.NO_RELEASE}, not compared")
            continue
        ours, release = fidelity.broken(splits, "ours"), fidelity.broken(splits, "release")
        ours_broken += sum(ours.values())
        print(f"{probe} ({next(iter(splits.values()))['variant']}): ours breaks {sum(ours.values())} construction "
              f"rule(s); release: " + ", ".join(f"{split} {n}" for split, n in release.items()))
    print(f"wrote {args.out} and {Path(args.out).with_suffix('.json')}")
    if ours_broken:
        raise DataError(f"{args.probes}: {ours_broken} of our rows break a construction rule (see {args.out})")
    return 0


def add_commands(sub, command) -> None:
    """``probes generate`` and ``probes fidelity``."""
    gen = command(sub, "generate", "build a probe dataset: every variant its YAML declares (or params selects)")
    gen.add_argument("probe", choices=Names("generators.shared.registry:available"), metavar="PROBE", help="one of: %(choices)s")
    gen.add_argument("--out", required=True, type=Written, help="probe folder to write (<out>/<variant>/...)")
    gen.add_argument("--tables", default="data/tables", type=Read, help="folder of the table sets (probes tables NAME)")
    gen.add_argument("--params", type=Read, help=PARAMS_HELP)
    gen.add_argument("--section", help="read this params section instead of PROBE's: a second dataset of the same "
                                       "probe, in a section named PROBE_<suffix> (e.g. age_comparison_grid, every "
                                       "pair for the heatmaps)")
    gen.add_argument("--manifest", type=Read, help=MANIFEST_HELP + " (for the raw sources a probe reads directly)")
    gen.add_argument("--task", help="calum: the task (GLUE: rte, mrpc, qnli, qqp, mnli; KLUE: klue_nli, klue_sts; "
                                    "generators/calum/<language>.yaml; default: the params' calum.task)")
    gen.add_argument("--tokenizers", type=Read, help="the one-token filters' tokenizers from this file (probes "
                     "tokenizers writes it), not from the params' models and runs: so the pipeline's generate "
                     "stages depend on it and re-run only when a filter's tokenizers change")
    add_force(gen)
    gen.set_defaults(func=_generate, paths=_generate_paths)

    tok = command(sub, "tokenizers", "the tokenizers the datasets' one-token filters read: one masked LM per "
                  "tokenizer of those each paper runs",
                  "Writes {olmpics: {alias: model}, pararel: {alias: model}}: per paper, the masked LMs of params "
                  "`runs` whose tokenizers the one-token filters read, the first alias of each distinct tokenizer "
                  "(causal LMs narrow nothing). The generate stages read it (--tokenizers), so adding a model whose "
                  "tokenizer is already there generates nothing again.")
    tok.add_argument("--out", required=True, type=Written, help="the JSON file to write (data/tokenizers.json)")
    tok.add_argument("--params", type=Read, help=PARAMS_HELP)
    add_force(tok)
    tok.set_defaults(func=_tokenizers, paths=params_models)

    fid = command(sub, "fidelity", "compare generated probes with the original oLMpics release files")
    fid.add_argument("--probes", required=True, type=Read, help="folder of generated probe folders (data/probes)")
    fid.add_argument("--out", required=True, type=WrittenReport, help="markdown report to write (a .json beside it too)")
    fid.add_argument("--manifest", type=Read, help=MANIFEST_HELP)
    fid.add_argument("--tables", default="data/tables", help="folder of the table sets our construction rules read "
                                                             "(OBJECTS: object_sizes, wordnet)", type=Read)
    add_force(fid)
    fid.set_defaults(func=_fidelity)
