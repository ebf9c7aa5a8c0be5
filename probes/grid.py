"""``probes grid``: expand a grid spec into cells, run the ones the results store lacks, write the summary
(argparse and checks only; the work is in ``evaluators.grid``). A cell is one :func:`evaluators.evaluate` call
with the keywords its ``probes evaluate ...`` line would pass (typed by that command's parser, passed down)."""

from __future__ import annotations

from probes.options import Added, Read, Written, add_force, out_file, out_folder


STORE_FILES = ("summary.jsonl", "summary.md", "report.md", "report.json", "report.png")
"""The files a grid writes into its store, beside its cells."""


def _checked_params(path: str | None, protocol: str):
    """The params file the cells read, its sections of ``protocol`` validated by their models (the protocol's
    record, :mod:`evaluators.protocols`): a bad value fails here, naming the file and key, before it is hashed into
    the cells' keys."""
    from evaluators import protocols
    from probekit.params import read_params, section

    params = read_params(path)
    for name, model in protocols.get(protocol).reads.items():
        section(params, name, model)
    return params


def _spec_paths(args) -> list:
    """What a grid's cells read, from its spec: every ``data`` folder and every model folder (an alias's, or a
    folder given as a model), so that the store is never over one of them."""
    from probekit import yamlfile
    from probekit.outputs.gate import READ, Access
    from probes.options import model_folder

    try:
        spec = yamlfile.load(args.spec)
    except Exception:   # read and refused in one line by the command itself
        return []
    if not isinstance(spec, dict):
        return []
    found = []
    for key, value in spec.items():
        values = value if isinstance(value, list) else [value]
        if key == "data":
            found += [Access(READ, str(v), f"--spec {args.spec} data") for v in values if isinstance(v, str)]
        elif key == "models":
            found += [a for v in values if isinstance(v, str) for a in model_folder(v, args.params)]
    return found


def _grid(args) -> int:
    out = out_folder(args.out, "the results store: cells/, summary.md and the report are written inside it",
                     kind="store")
    for name in STORE_FILES:   # the store's own files: a file of someone else's there is refused before any work
        out_file(out / name, "a file of the results store", "--out", force=args.force)
    from evaluators.grid import executors
    from evaluators.grid import plan as grid
    from evaluators.grid import report as grid_report
    from evaluators.grid import store

    spec = grid.read_spec(args.spec, args.commands)   # its options checked by the cells' own parsers
    params = _checked_params(args.params, spec.protocol)
    plans = grid.plan(spec, out, params)
    grid.calls(plans, args.commands[spec.protocol])
    cached = sum(p.cached for p in plans)
    if args.dry_run:
        for p in plans:
            options = ", ".join(f"{k}={v}" for k, v in p.cell.options)
            print(f"{p.key}  {'cached ' if p.cached else 'to run '}  {p.cell.model}  {p.cell.data}  {options}")
        print(f"{len(plans)} cells: {cached} cached, {len(plans) - cached} to run")
        return 0
    gone = store.prune(plans, out) if args.prune else []
    if gone:
        print(f"pruned {len(gone)} stored cell(s) that are not cells of {args.spec}")
    if args.executor == "ray":
        failures = executors.run_ray(plans, out, args.params, address=args.address)
    else:
        failures = executors.run_local(plans, out, args.params)
    store.write_summary(store.summary(plans, out, failures), out)
    written = grid_report.write(plans, out)
    for f in failures:
        print(f"failed {f.key} ({f.cell.model}, {f.cell.data}): {f.error}")
    print(f"{len(plans)} cells: {len(plans) - cached - len(failures)} run, {cached} cached, {len(failures)} failed; "
          f"cells in {out / 'summary.md'}" + (f", report in {written[0]}" if written else ""))
    return 1 if failures else 0


def add_commands(sub, evaluate, command, params_help: str) -> None:
    """``probes grid``; ``evaluate``: the subcommands of ``probes evaluate``, whose parsers check a spec's options
    before any cell runs and type each cell's call."""
    g = command(sub, "grid", "run an evaluation grid: the cross product of a spec's models, data and list-valued "
                             "options, each cell one `probes evaluate` run cached in a results store by its key")
    g.add_argument("--spec", required=True, help="grid YAML: protocol, models, data, and the protocol's options "
                                                 "(a list value is one more axis)", type=Read)
    g.add_argument("--out", required=True, help="the results store: cells/<key>/, summary.md and summary.jsonl "
                                                "(a row per cell), report.md (+ .json, .png: the protocol's report)",
                   type=Added)
    g.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: the cells one after another in this process; ray: each cell a Ray task "
                        "(pip install 'probekit[ray]')")
    g.add_argument("--address", help="ray: the address of a running Ray cluster (default: a local Ray)")
    g.add_argument("--dry-run", action="store_true", help="list the cells and which are cached; run nothing")
    g.add_argument("--prune", action="store_true", help="first remove stored cells that are not cells of this spec "
                                                        "(older code versions' keys); not for a shared store")
    g.add_argument("--params", type=Read, help=params_help + "; passed to every cell")
    add_force(g)
    g.set_defaults(func=_grid, commands=evaluate.choices, paths=_spec_paths)   # each protocol's parser, by name
