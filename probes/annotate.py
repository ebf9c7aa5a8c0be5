"""``probes annotate``: statements out to crowdworkers (export), their answers back in as gold (import).
Argparse and checks only; the work is in :mod:`generators.always_never.annotations`."""

from __future__ import annotations

from pathlib import Path

from probekit.errors import UsageError
from probes.generate import params_paths
from probes.options import PARAMS_HELP, Read, Written, add_force, out_file, positive


def _annotated_probe(probe: str):
    """The generator module and spec of a probe whose gold comes from people (it defines annotated_keys)."""
    from generators.shared import registry

    generator = registry.get(probe)
    module = generator.module
    if not hasattr(module, "annotated_keys"):
        raise UsageError(f"--probe {probe}: this probe takes no human annotations (its gold is computed)")
    return generator, module, generator.probe_spec()


def _annotate_export(args) -> int:
    out_file(args.out, "the CSV of statements to annotate", force=args.force)
    from probekit.params import probe_section, read_params
    from generators.always_never import annotations, crowd_tasks
    from probekit.sources import loaders

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
    stats = crowd_tasks.export(spec, candidates, args.out, annotated)
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
    out_file(args.out, "the gold CSV", force=args.force)
    from generators.always_never import crowd_tasks

    _, _, spec = _annotated_probe(args.probe)
    result = crowd_tasks.import_answers(args.answers, spec, min_workers=args.min_workers)
    crowd_tasks.write_gold(result.gold, args.out)
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


def add_commands(sub, command) -> None:
    """``probes annotate export`` and ``probes annotate import``."""
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
    exp.add_argument("--candidates", nargs="+", metavar="CSV", type=Read,
                     help="candidate CSV file(s) with columns template_id, x, y (default: draw them from the "
                          "ConceptNet types of the probe's params export.types)")
    exp.add_argument("--tables", default="data/tables", type=Read,
                     help="folder of the table sets (probes tables conceptnet), read when --candidates is not given")
    exp.add_argument("--out", required=True, help="CSV to write (template_id, x, y, statement, worker, answer)",
                     type=Written)
    exp.add_argument("--all", action="store_true",
                     help="also list candidates that already have gold (default: only the unannotated ones)")
    exp.add_argument("--params", type=Read, help=PARAMS_HELP + "; the probe's section says where its annotations are")
    add_force(exp)
    exp.set_defaults(func=_annotate_export, paths=lambda args: params_paths(args, args.probe))
    imp = command(ann_sub, "import", "aggregate workers' answers into a gold table (majority vote)")
    imp.add_argument("answers", nargs="+", metavar="ANSWERS.csv", type=Read,
                     help="answer file(s): the exported columns with worker (empty: the file name) and answer")
    imp.add_argument("--out", required=True, help="gold CSV to write (template_id, x, y, gold, n_workers, agreement)",
                     type=Written)
    imp.add_argument("--probe", default="always_never", help="probe whose templates and answer words to check")
    imp.add_argument("--min-workers", type=positive, default=1,
                     help="a statement with fewer answers gets no gold")
    add_force(imp)
    imp.set_defaults(func=_annotate_import)
