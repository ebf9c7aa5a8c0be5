"""``probes run``: one command from a model (a Hub id or a local folder) to its report. It adds the model to the
pipeline's ``models`` as a DVC experiment and reproduces the report stages of the protocols asked for, so DVC runs
exactly that model's stages (and anything stale upstream); each stage runs the protocols that apply to the model's
family and records the others as skipped. At the end it prints the model's results table with the 95% intervals
and where the full reports are. Argparse and checks only: the table is :mod:`evaluators.shared.model_summary`.

The experiment is what ``dvc exp run -S '++models.<name>=<id>' <targets>`` makes, in three steps: params.yaml
changed as that command changes it (DVC's own Hydra composition: :func:`composed`), ``dvc repro <targets>``, ``dvc
exp save <targets>``. params.yaml is the user's file too: only the keys the run's own overrides change are written
into it (:func:`write_params`), its comments and hand edits kept, a hand edit of such a key refused; an edit of
conf/ that params.yaml does not hold yet is not brought in (it looks the same as a hand edit of params.yaml). Not ``dvc exp run`` itself: before
reproducing, it checks out every output of the targets and their upstream stages, and a stage that never ran (each
of the new model's) has no hash in dvc.lock to check out, so DVC warns "No file hash info found ... It won't be
created" once per output of the new model; ``dvc repro`` runs those stages instead, and ``dvc exp save`` records
only the stages it ran."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

from probekit.errors import ProbekitError, UsageError, shown
from evaluators.protocols import of_report, reported
from probekit.recompose import listed_once, made_with
from probekit.outputs.userfile import edit_yaml
from probes import children
from probes.options import edits, positive
from probes.progress import Progress, follow

_NAME = re.compile(r"[^A-Za-z0-9_-]+")
TABLE_LISTS = {"calum": ("calum_models",)}
"""Per paper, the params lists of dvc.yaml (beside its ``runs`` list) that a model ``probes run`` adds joins too:
CALUM's single-task runs (Table 2's layout). The paper profile names each CALUM table's models (conf/profile/
paper.yaml); Tables 5 and 6 keep the paper's, so a new model runs the GLUE tasks, single-task."""


def add_commands(sub, command) -> None:
    p = command(sub, "run", "one command from a model to its report: the model added to the pipeline as a DVC "
                "experiment, the protocols that apply to it run, a results table printed",
                "Adds --model to params.yaml `models` as a DVC experiment (params.yaml composed as `dvc exp run -S` "
                "composes it, `dvc repro` of the report stages of --probes, `dvc exp save`: `dvc exp show` lists it, "
                "the workspace keeps it); each protocol runs "
                "for the model families it applies to and records the others as skipped. Run it in the project "
                "folder (a git repo with a commit).")
    p.add_argument("--model", required=True, help="a Hub id (bert-base-uncased, EleutherAI/pythia-70m), a local "
                   "model folder, pkg:<package>, or an alias already in params.yaml `models`")
    p.add_argument("--name", help="the model's alias in `models` and in the results (default: from --model: its "
                   "last path component)")
    p.add_argument("--revision", help="a Hub branch, tag or commit to pin (recorded in the results)")
    p.add_argument("--probes", default="all", type=_protocols,
                   help="which protocols: olmpics, pararel, calum, a comma-separated list, or all")
    p.add_argument("--limit", type=positive, help="at most N examples per probe, relation or task (a quick look; "
                   "it is a shared param, so the experiment re-runs every model with it and the comparison stays "
                   "fair)")
    p.add_argument("--device", dest="run_device", choices=("auto", "cpu", "cuda", "mps"), help="where models run (default: params.yaml "
                   "`device`, auto: CUDA when present)")
    p.add_argument("--project", default=".", help="the probekit project folder (dvc.yaml, params.yaml)")
    p.add_argument("--dry-run", action="store_true", help="print the overrides and the dvc commands and do nothing")
    p.set_defaults(func=_run, paths=lambda args: edits(("params.yaml (the experiment's params)",
                                                       Path(args.project) / "params.yaml")))


def _protocols(text: str) -> tuple[str, ...]:
    import argparse

    names, known = [n.strip() for n in text.split(",") if n.strip()], reported()
    if names == ["all"]:
        return known
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected all or some of {', '.join(known)}, got {shown(text)}")
    return tuple(p for p in known if p in names)


def model_name(model: str, name: str | None, models: dict) -> str:
    """The model's alias: --name, the alias itself when --model is one, else --model's last path component
    (``EleutherAI/pythia-70m`` → ``pythia-70m``) made safe for a DVC stage name."""
    if name is None and model in models:
        return model
    key = name or _NAME.sub("-", model.rstrip("/").split("/")[-1].removeprefix("pkg:")).strip("-")
    if not key or _NAME.search(key):
        raise UsageError(f"--name {shown(key)}: use letters, digits, '_' and '-' (a DVC stage name)")
    return key


def _quoted(text: str) -> str:
    """A value in Hydra's override grammar (what ``dvc exp run -S`` parses): single-quoted, escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _spec_id(spec) -> str | None:
    return spec.get("id") if isinstance(spec, dict) else spec


def _hydra_value(entry) -> str:
    """A ``models`` entry in Hydra's override grammar: a quoted string, or ``{id:...,revision:...}`` with the keys it
    has."""
    if not isinstance(entry, dict):
        return _quoted(str(entry))
    parts = [f"id:{_quoted(str(entry['id']))}"]
    if entry.get("revision") is not None:
        parts.append(f"revision:{_quoted(str(entry['revision']))}")
    return "{" + ",".join(parts) + "}"


def _hydra_list(aliases) -> str:
    """A ``runs`` list in Hydra's override grammar."""
    return "[" + ",".join(_quoted(str(a)) for a in aliases) + "]"


def carried(project: Path, params: dict) -> list[str]:
    """The ``-S`` overrides that keep the workspace's params.yaml profile, ``models`` and ``runs``: ``dvc exp run``
    composes params.yaml anew from conf/ and the run's own ``-S`` only, so without them a model added by an earlier
    ``probes run`` (or ``-S '+models...'``) would be dropped from ``models`` and its papers' ``runs`` silently, and a
    ``profile=paper`` workspace would run the default profile. Empty without conf/config.yaml (a params.yaml written
    by hand)."""
    if not (project / "conf" / "config.yaml").is_file():
        return []
    sets, base = made_with(project / "conf", params)
    have, composed = params.get("models"), base.get("models") or {}
    if not isinstance(have, dict) or not have:
        return sets
    sets += [f"~models.{alias}" for alias in composed if alias not in have]
    sets += [f"++models.{alias}={_hydra_value(entry)}" for alias, entry in have.items()
             if composed.get(alias) != entry]
    runs, base_runs = params.get("runs"), base.get("runs") or {}
    if isinstance(runs, dict):
        sets += [f"++runs.{paper}={_hydra_list(aliases)}" for paper, aliases in runs.items()
                 if base_runs.get(paper) != aliases]
    sets += [f"++{key}={_hydra_list(params[key])}" for keys in TABLE_LISTS.values() for key in keys
             if isinstance(params.get(key), list) and params[key] != base.get(key)]
    return sets


def dvc_command(args, models: dict, keep: list[str] = (), runs: dict | None = None,
                lists: dict | None = None) -> tuple[str, list[str], list[str]]:
    """The model's alias, the ``-S`` overrides that add it (or pin its revision) to ``models`` and to the ``runs``
    list of each paper of ``args.probes`` (the workspace's ``runs``: a paper it has no list for runs every model)
    and to the paper's :data:`TABLE_LISTS` (the workspace's, ``lists``), and the report stages of ``args.probes``
    (the targets); ``keep``: the overrides that keep the workspace's params (:func:`carried`), first. What ``dvc exp
    run -S <overrides> <targets>`` would be given."""
    key = model_name(args.model, args.name, models)
    spec = models.get(key)
    local = args.model != key and Path(args.model).expanduser().is_dir()
    # a folder as an absolute path: the stages run in the project folder, not where the command was typed
    model_id = _spec_id(spec) if args.model == key and spec is not None else \
        str(Path(args.model).expanduser().resolve()) if local else args.model   # a Hub id without an org: itself
    if spec is not None and args.model != key and (_spec_id(spec) != model_id or (
            isinstance(spec, dict) and spec.get("revision") != args.revision)):
        raise UsageError(f"--name {key}: params.yaml `models.{key}` is already {shown(spec)}; give another --name")
    sets = []
    if args.revision is not None:
        sets.append(f"++models.{key}={{id:{_quoted(model_id)},revision:{_quoted(args.revision)}}}")
    elif spec is None:
        sets.append(f"++models.{key}={_quoted(model_id)}")
    papers = dict.fromkeys(r.paper for p in args.probes for r in of_report(p))
    for paper in papers:
        listed = (runs or {}).get(paper)
        if isinstance(listed, list) and key not in listed:
            sets.append(f"++runs.{paper}={_hydra_list([*listed, key])}")
        for name in TABLE_LISTS.get(paper, ()):
            listed = (lists or {}).get(name)
            if isinstance(listed, list) and key not in listed:
                sets.append(f"++{name}={_hydra_list([*listed, key])}")
    if args.run_device:   # not `device`: the CLI resolves that one; the stages resolve `auto` themselves
        sets.append(f"device={args.run_device}")
    if args.limit:
        sets += [f"{param}={args.limit}" for p in args.probes for r in of_report(p) for param in r.limits]
    targets = [t.format(key=key) for p in args.probes for r in of_report(p) for t in r.stages]
    own = f"++models.{key}="
    renewed = any(s.startswith(own) for s in sets)
    tables = tuple(f"++{name}=" for names in TABLE_LISTS.values() for name in names)
    relisted = {s.partition("=")[0] for s in sets if s.startswith(("++runs.", *tables))}
    sets = [s for s in keep if not (renewed and s.startswith(own)) and s.partition("=")[0] not in relisted] + sets
    # this run's entry for the model, and its papers' lists, win
    return key, sets, targets


def composed(project: Path, sets: list[str]) -> dict:
    """The params ``dvc exp run -S <sets>`` gives the stages: conf/ composed with them (DVC's own Hydra composition,
    :func:`probekit.params.compose`), else (no conf/config.yaml: params.yaml written by hand) params.yaml with them
    applied (DVC's ``apply_overrides``, what ``dvc exp run`` does without Hydra); its probe lists checked by
    probekit (:func:`probekit.recompose.listed_once`) before dvc meets them."""
    import tempfile

    from probekit.params import compose, read_params

    if (project / "conf" / "config.yaml").is_file():
        params = compose(project / "conf", sets)
        listed_once(params, f"{project / 'conf'} (as dvc exp run composes it)")
        return params
    if not sets:
        params = read_params(project / "params.yaml").data
    else:
        from dvc.exceptions import InvalidArgumentError
        from dvc.utils.hydra import apply_overrides

        with tempfile.TemporaryDirectory(prefix="probekit-run-") as tmp:
            out = Path(tmp) / "params.yaml"
            shutil.copyfile(project / "params.yaml", out)
            for override in sets:   # one at a time, to name the one DVC cannot apply
                try:
                    apply_overrides(out, [override])
                except InvalidArgumentError:
                    raise UsageError(f"{project / 'params.yaml'}: cannot apply -S {override} to it (a key it does not "
                                     f"have: add it to params.yaml, e.g. `limit: null`), then run probes run "
                                     f"again") from None
            params = _named(read_params(project / "params.yaml").data, read_params(out).data, sets)
    listed_once(params, str(project / "params.yaml"))
    return params


def _named(params: dict, applied: dict, sets: list[str]) -> dict:
    """``params`` with each key an override of ``sets`` names as DVC's ``apply_overrides`` left it in ``applied``
    (removed where it is gone), and no other: DVC reads and writes YAML 1.2, so a key it did not touch may come back
    retyped (``0755``)."""
    out = copy.deepcopy(params)
    for override in sets:
        *above, last = override.lstrip("~+").partition("=")[0].split(".")
        here, there = out, applied
        for part in above:   # DVC applied it: each mapping above the key is one in ``applied``
            there = there[part]
            if not isinstance(here.get(part), dict):
                here[part] = {}
            here = here[part]
        if last in there:
            here[last] = copy.deepcopy(there[last])
        else:
            here.pop(last, None)
    return out


def write_params(project: Path, params: dict, base: dict, *, write: bool = True) -> list[str]:
    """params.yaml changed from ``base`` to ``params``, as ``dvc exp run -S`` changes it: ``params`` is the run's
    composition (:func:`composed` of its overrides), ``base`` the composition of the overrides that stand for the
    workspace as it is (:func:`carried`), so what differs is what the run's own overrides change (the model, its
    papers' lists, --device, --limit). Only those keys are written, into params.yaml as it is
    (:func:`probekit.outputs.userfile.edit_yaml`): its comments and hand edits elsewhere kept (``scoring.batch_size: 4``
    stays), a hand edit of a key the run changes refused in one line, a read-only file refused, a link written
    through, atomically, under the folder's lock. ``write=False``: checked, not written. Returns the keys."""
    return edit_yaml(project / "params.yaml", params, base=base, command="probes run", write=write,
                     advice="make the edit in conf/ instead (or undo it), then run probes run again").keys


def _check_project(project: Path):
    """The project's params file (read and checked once, as a stage's), its models a mapping."""
    from probekit.params import read_params

    for name in ("dvc.yaml", "params.yaml"):
        if not (project / name).is_file():
            raise UsageError(f"--project {project}: no {name} here; run probes run in a probekit project (a clone "
                             f"of the repository) or give --project")
    head = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=project, capture_output=True)
    if head.returncode != 0:
        raise UsageError(f"--project {project}: probes run adds the model as a DVC experiment (dvc exp save), which "
                         f"needs a git repository with a commit: git init, git add -A, git commit first")
    params = read_params(project / "params.yaml")   # its sections checked, as a stage's
    models = params.data.get("models") or {}
    if not isinstance(models, dict):
        raise UsageError(f"{project / 'params.yaml'}: `models` must be a mapping of alias to model, got "
                         f"{shown(models)}")
    return params


def _sources_ready(project: Path, params: dict) -> None:
    """Refuse, in one line, a run whose params refuse a capped source it would read (the paper profile offline
    without DoQ or the SPARQL cache: :func:`probekit.sources.capped.check`)."""
    from probekit.sources.capped_check import check
    from probekit.sources.manifest import resolve_mirror

    manifest = project / "raw" / "sources.yaml"
    if manifest.is_file():
        check(params, manifest, resolve_mirror(None, manifest)[0], label=f"profile {params.get('profile')}")


def _run(args) -> int:
    from evaluators.shared.model_summary import summary

    project = Path(args.project)
    data = _check_project(project).data
    keep = carried(project, data)
    key, sets, targets = dvc_command(args, data.get("models") or {}, keep, data.get("runs"),
                                     {name: data.get(name) for names in TABLE_LISTS.values() for name in names})
    params = composed(project, sets)
    _sources_ready(project, params)   # a capped source the profile refuses: before any work
    base = composed(project, keep) if sets != keep else params
    write_params(project, params, base, write=False)   # a hand edit the run would lose: refused before any work
    steps = [["dvc", "repro", *targets], ["dvc", "exp", "save", *targets]]
    if sets:
        print("params.yaml, as `dvc exp run` composes it: " + " ".join(f"-S {s}" for s in sets), flush=True)
    for cmd in steps:
        print("$ " + " ".join(cmd), flush=True)
    if args.dry_run:
        return 0
    write_params(project, params, base)
    dvc = shutil.which("dvc") or str(Path(sys.executable).parent / "dvc")
    # dvc's output passes through, a `[k] stage` line as each stage starts; a signal ends dvc and its stage first
    code = follow([dvc, *steps[0][1:]], sys.stdout, Progress(sys.stdout), cwd=project)
    if code != 0:
        raise ProbekitError(f"dvc repro failed (exit {code}); its output is above. Fix the cause and "
                            f"run the same probes run again: stages already done are not repeated")
    with children.started([dvc, *steps[1][1:]], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as saved:   # its own group too: a Ctrl-C lets it unwind (its stash, its refs)
        out, err = saved.communicate()
    print(out.strip() or err.strip(), flush=True)
    if saved.returncode != 0:
        raise ProbekitError(f"dvc exp save failed (exit {saved.returncode}): the results are in the workspace, not "
                            f"yet an experiment; run `dvc exp save {' '.join(targets)}` in {project}")
    print()
    print(summary(project, key, args.probes))
    return 0
