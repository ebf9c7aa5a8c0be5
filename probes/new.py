"""``probes new NAME --from PROBE``: a new probe folder copied from an MC-MLM or MC-QA probe and registered in the
params lists. Argparse only; the work is in :mod:`generators.shared.scaffold` (docs/adding-a-probe.md)."""

from __future__ import annotations

from pathlib import Path


def _new_paths(args) -> list:
    """What ``probes new`` reads and writes: the probe it copies, the new probe's folder, and the user's own
    conf/config.yaml and params.yaml, which it edits."""
    from probekit.outputs.gate import READ, WRITE, Access
    from probes.options import edits

    project = Path(args.project)
    generators = project / "generators"
    return [Access(READ, str(generators / args.source), "--from"), Access(WRITE, str(generators / args.name), "NAME"),
            *edits(("conf/config.yaml", project / "conf" / "config.yaml"), ("params.yaml", project / "params.yaml"))]


def _new(args) -> int:
    from generators.shared.scaffold import new_probe

    project = Path(args.project)
    folder, conf, composed, kept = new_probe(args.name, args.source, project)
    print(f"made {folder.relative_to(project)}/ from generators/{args.source}/\n"
          f"added {args.name} to {conf.relative_to(project)} (beside {args.source} in its probes list, and a section "
          f"`{args.name}: {{}}`) and composed {composed.relative_to(project)} again"
          + (f", keeping your edits of it ({', '.join(kept)})" if kept else "") + "\n"
          f"next: edit {folder.relative_to(project)}/probe.yaml and generator.py, then `dvc repro` "
          f"(docs/adding-a-probe.md)")
    return 0


def add_commands(sub, command) -> None:
    """``probes new``."""
    new = command(sub, "new", "start a new probe from an MC-MLM or MC-QA probe", """\
Copies generators/PROBE/ to generators/NAME/ with the probe renamed inside (its citation dropped, its version 1),
adds NAME to PROBE's list in conf/config.yaml (probes.mc_mlm or probes.mc_qa) with an empty section `NAME: {}`
(the defaults in its probe.yaml apply), and composes params.yaml again: with its profile, and every edit made in
it by hand (or by `dvc exp run -S`, `probes run`) kept, or refused naming the keys where the new composition changes
them too. Then `dvc repro` generates, scores, exports and reports it. A walk-through: docs/adding-a-probe.md""")
    new.add_argument("name", metavar="NAME", help="the new probe's name: a lower-case Python identifier, e.g. part_of")
    new.add_argument("--from", dest="source", required=True, metavar="PROBE",
                     help="the probe to copy (one of params probes.mc_mlm or probes.mc_qa; not pararel or calum)")
    new.add_argument("--project", default=".", help="the project's root: its conf/, generators/ and params.yaml")
    new.set_defaults(func=_new, paths=_new_paths)
