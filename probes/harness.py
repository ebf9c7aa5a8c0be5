"""The ``probes export`` subcommand ``lm-eval``: every dataset folder under ``--data`` as lm-evaluation-harness task
configs in ``--out`` (local JSON Lines files, or ``--hub`` configs). Argparse and checks only: the work is in
:mod:`evaluators.harness.write`."""

from __future__ import annotations

from probekit.errors import UsageError
from probes.options import Searched, Written, add_force, out_folder
from probes.publish import _names, _repo_id


def _lm_eval(args) -> int:
    from evaluators.harness import write

    out_folder(args.out, "the task YAMLs are written inside it", kind="export", force=args.force)
    if args.hub_revision and not args.hub:
        raise UsageError("--hub-revision needs --hub REPO_ID")
    done = write.write(args.data, args.out, args.probes, args.hub, args.hub_revision)
    counts = ", ".join(f"{g} {len(t)}" for g, t in done.groups.items())
    print(f"wrote {len(done.files)} files to {args.out} (tasks: {counts or 'none'}); run lm_eval with "
          f"--include_path {args.out} from this folder")
    return 0


def add_commands(sub, command) -> None:
    """``export lm-eval``."""
    exp = command(sub, "export", "export the probe datasets for other tools")
    targets = exp.add_subparsers(dest="target", required=True, metavar="TARGET")
    lm = command(targets, "lm-eval", "every dataset folder under --data as lm-evaluation-harness tasks (YAML "
                                     "configs; groups olmpics, olmpics_choice, pararel, calum, probekit_mc and "
                                     "probekit_mc_choice (MC probes not citing oLMpics), and probekit)")
    lm.add_argument("--data", required=True, help="folder searched for dataset folders (a meta.json with a format); "
                                                  "local task configs point at files under it, as given", type=Searched)
    lm.add_argument("--out", required=True, help="folder for the task configs (replaced); lm_eval --include_path",
                    type=Written)
    lm.add_argument("--probes", type=_names, help="comma-separated probe or config names (globs allowed), e.g. "
                                                  "age_comparison,pararel-P19 (default: all)")
    lm.add_argument("--hub", type=_repo_id, metavar="REPO_ID",
                    help="read the rows from this Hub dataset repo (probes publish's configs) instead of --data's files")
    lm.add_argument("--hub-revision", metavar="REV", help="the Hub repo's revision (branch, tag or commit)")
    add_force(lm)
    lm.set_defaults(func=_lm_eval)
