"""``probes rehearse``: the paper profile (conf/profile/paper.yaml) run end to end on a tiny local model, offline, in
minutes on a CPU, before anyone spends GPU hours on it (README "Before you spend GPU hours").

It copies the project (the files git tracks or would track: the workspace as it is, uncommitted edits included;
not dvc.lock, not data or results) into a new folder, composes the paper profile there with the tiny model(s) in
place of the papers' models and a cap on the examples of each protocol (:func:`rehearsal_params`), and runs every
stage of dvc.yaml with ``dvc repro --keep-going`` in that copy. The user's workspace, params.yaml and dvc.lock are
untouched. Every paper-only code path runs: 6 seeds and the curve sizes 62 ... 4000, MLM-BASELINE's and CALUM's
early stopping, every ParaRel relation, §8's λ selection, the five GLUE tasks, the Para and All multitask groups,
Table 5's Korean tasks (KorNLI, KLUE-NLI, KLUE-STS: their table sets, pair sets and runs). What the raw sources lack
offline (QQP, MNLI, QNLI's train and test; KLUE, KorNLI) is stood in for by small made-up files in the sources' own
layouts (:mod:`probes.rehearse_files`), listed in the copy's REHEARSAL.md. The numbers measure nothing."""

from __future__ import annotations

import copy
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from probekit.errors import ProbekitError, UsageError, shown
from probekit.params import compose
from probekit.recompose import listed_once
from probes import children, rehearse_report
from probes.options import positive
from probes.progress import Progress, follow

LIMIT = 8
"""The default cap: examples per probe (zero-shot) and per ParaRel relation, training and evaluation examples per
CALUM task, §8 tuples per relation."""
MAX_SIZE = 250
"""The default largest learning-curve size: the paper's 62, 125 and 250 (the sizes above run the same code, for about
an hour on 2 CPU cores: ``--max-size 4000``)."""


def add_commands(sub, command) -> None:
    p = command(sub, "rehearse", "run every stage of the paper profile on a tiny local model, offline, in minutes "
                "on a CPU, in a copy of the project: what would crash a paper run, found before the GPU hours",
                __doc__.split("\n\n", 1)[1])
    p.add_argument("--model", action="append", metavar="FOLDER",
                   help="a small local model folder (config, tokenizer, weights), in place of the papers' models; "
                        "repeat for more (a masked LM runs every protocol; other families skip what does not fit)")
    p.add_argument("--limit", type=positive, default=LIMIT, help="examples per probe, per ParaRel relation and per "
                   "CALUM task (training and evaluation)")
    p.add_argument("--max-size", type=positive, default=MAX_SIZE, help="leave out the learning-curve sizes above N "
                   "(MC-MLM, MLM-BASELINE, MC-QA, ESIM: the costliest part); default %(default)s: the paper's 62, 125 "
                   "and 250, minutes on a CPU; 4000: all seven of the paper's sizes, about an hour")
    p.add_argument("--workdir", help="the folder for the copy and its outputs (default: a new probekit-rehearsal-* "
                   "folder in the system's temporary folder); outside the project, and new or empty")
    p.add_argument("--project", default=".", help="the probekit project folder (dvc.yaml, conf/)")
    p.add_argument("--mirror", help="the raw sources' mirror folder (default: the project's: `probes sources "
                   "mirror`, $PROBES_MIRROR); without one the sources are downloaded")
    p.add_argument("--device", dest="run_device", default="cpu", choices=("cpu", "auto", "cuda"),
                   help="where the models run")
    p.add_argument("--estimate", metavar="WORKDIR", help="run nothing: from the rehearsal in WORKDIR (its "
                   "timings.json), the paper profile's expected time per stage and in total, the scaling stated "
                   "(probes/rehearse_estimate.py)")
    p.add_argument("--dry-run", action="store_true", help="make the copy and its params.yaml, print the commands, "
                   "run nothing")
    p.set_defaults(func=_run, paths=_rehearse_paths)


def _rehearse_paths(args) -> list:
    """What ``probes rehearse`` reads and writes: the project (copied, never written) and the rehearsal's folder
    (``--workdir``, or a new temporary one: :func:`tempfile.mkdtemp`)."""
    from probekit.outputs.gate import ADD, READ, Access

    found = []   # the project: its own check says a copy inside it is refused (:func:`_outside`)
    if args.mirror:
        found.append(Access(READ, args.mirror, "--mirror"))
    if args.workdir and not args.estimate:
        found.append(Access(ADD, str(Path(args.workdir).expanduser()), "--workdir"))
    if args.estimate:
        found.append(Access(READ, args.estimate, "--estimate"))
    return found


def rehearsal_params(paper: dict, models: dict, limit: int, device: str, max_size: int | None = None) -> dict:
    """The paper profile's params (``paper``: conf/ composed with ``profile=paper``) for the rehearsal: ``models``
    in place of the papers', each running every paper (every stage family of the profile), on ``device``, every
    protocol capped at ``limit`` examples, the paper's sizes, seeds, relations, tasks and groups kept. Epochs are
    cut (one, or three where early stopping must get its chance), and GLUE is read from the raw sources (stand-ins
    added) instead of the Hub."""
    p = copy.deepcopy(paper)
    p |= {"profile": "rehearsal", "device": device, "models": models,
          "runs": {paper: list(models) for paper in paper.get("runs") or {}},   # each model runs every paper
          "calum_models": list(models),                                         # and every CALUM table,
          "olmpics_table4": list(models)}                                       # oLMpics Table 4 too
    for key in ("calum_multitask", "calum_korean"):
        p[key] = {**p.get(key, {}), "models": list(models)}
    p["zeroshot"]["limit"] = limit
    if "mlm_baseline" in p:   # up to 3 epochs, patience 1: early stopping can end a run
        p["mlm_baseline"] |= {"epochs": 3, "patience": 1}
    p["mcqa"].setdefault("training", {})["epochs"] = 1   # over the rest of the block's defaults (McqaParams)
    p["mcqa"]["esim_training"] = p["mcqa"].get("esim_training", {}) | {"epochs": 3, "patience": 1}   # as above
    p["mcqa"]["intermediate_limit"] = limit
    if max_size is not None:   # --max-size: the curves' sizes up to it (at least the smallest)
        for key in ("curve", "mcqa"):
            p[key]["sizes"] = [s for s in p[key]["sizes"] if s <= max_size] or p[key]["sizes"][:1]
    p["pararel"]["tokenizers"] = None                 # the rehearsal's models, not the papers'
    p["pararel_eval"] |= {"limit": limit, "relations": None}
    p["consistency"] |= {"epochs": 1, "limit": limit, "eval_limit": limit, "mlm_steps": 1, "mlm_batch_size": 2}
    accept_caps(p)
    glue = p["tables"]["glue"]
    p["tables"]["glue"] = {"source": "mirror", "tasks": glue["tasks"],
                           "splits": {t: ["train", "dev", "test"] for t in ("qnli",) if t in glue["tasks"]}}
    p["tables"]["klue"] = {**p["tables"].get("klue", {}), "source": "files",   # KLUE's and KorNLI's release
                           "folder": "standins/klue"}                          # files, stood in (KorNLI's in
    p["tables"]["kornli"] = {**p["tables"].get("kornli", {}), "source": "release"}   # raw/kornli)
    if p["tables"]["kornli"].get("splits_as") == "original_code":   # KorNLI's dev and test, cut from SNLI's end
        p["tables"]["kornli"]["holdout"] = limit                      # as the original code: `limit` rows each
    p["calum_eval"] |= {"limit": limit, "eval_limit": limit, "epochs": 4, "patience": 1}   # the paper's batch size:
    # one step an epoch at small limits (a smaller one must stay a multiple of calum_eval.device_batch_size)
    return p


def accept_caps(p: dict) -> None:
    """The paper profile's full sources (DoQ, Wikidata through SPARQL) swapped for the mirror's capped ones,
    accepted explicitly (``capped: accept``: probekit/sources/capped.py), as the rehearsal runs offline: DoQ out of
    the fetch stages and the object sizes' dependencies; every table made from them is marked capped."""
    from probekit.sources.capped import CAPS

    tables, sources = p.setdefault("tables", {}), p.setdefault("sources", {})
    for name, cap in CAPS.items():
        if (tables.get(name) or {}).get("capped") == "refuse":
            tables[name] = {**tables[name], "source": cap.capped, "capped": "accept"}
    if (tables.get("object_sizes") or {}).get("source") != "doq":
        sources["fetch"] = [n for n in sources.get("fetch") or () if n != "doq"]
        deps = (sources.get("tables") or {}).get("object_sizes")
        if deps:
            sources["tables"]["object_sizes"] = {k: "object_sizes" if v == "doq" else v for k, v in deps.items()}


def _files(project: Path) -> list[str]:
    """The project's files as git sees them (tracked or not ignored), without dvc.lock."""
    done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=project,
                          capture_output=True)
    if done.returncode != 0:
        raise UsageError(f"--project {project}: not a git checkout of probekit (git ls-files failed: "
                         f"{done.stderr.decode(errors='replace').strip()})")
    return sorted({n for n in done.stdout.decode().split("\0") if n and n != "dvc.lock"})


def prepare(project: Path, work: Path, folders: list[Path], limit: int, device: str,
            max_size: int | None = None) -> dict:
    """The copy of ``project`` in ``work`` with the rehearsal's params.yaml and a git repository (DVC needs one);
    returns those params."""
    import yaml

    for name in _files(project):
        src = project / name
        if src.is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / name)
    models = {}
    for folder in folders:
        alias = "".join(c if c.isalnum() or c in "_-" else "-" for c in folder.name).strip("-") or "model"
        while alias in models:
            alias += "-2"
        models[alias] = str(folder)
    params = rehearsal_params(compose(work / "conf", ["profile=paper"]), models, limit, device, max_size)
    from probekit.sources.capped_check import check

    check(params, work / "raw" / "sources.yaml", None, label="probes rehearse")   # its caps accepted, each one
    (work / "params.yaml").write_text("# probes rehearse: the paper profile, capped (probes/rehearse.py)\n"
                                      + yaml.safe_dump(params, sort_keys=False, allow_unicode=True), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    return params


def _env(work: Path, mirror: Path | None) -> dict:
    """The stages' environment: the venv's commands first, the copy's code, the mirror, no network."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(work), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    env.pop("PROBES_MIRROR", None)
    if mirror is not None:
        env["PROBES_MIRROR"] = str(mirror)
    return env


def kornli_extra(params: dict, work: Path) -> dict[str, int]:
    """The rows KorNLI's stand-in files must hold beyond the ones each split keeps, by file: with
    ``tables.kornli.splits_as: original_code``, the dev and test the loader cuts from SNLI's training file (2 x
    ``holdout``); otherwise the rows CALUM's test draw takes from the training files, put in MultiNLI's
    (``calum.test_draw.size.kornli`` of ``params``, or else of the copy's ``generators/calum/probe.yaml``: Table 1's
    10,000; none for a fraction or ``tables``)."""
    from probekit import yamlfile
    from probekit.sources.loaders.kornli import KorNliParams

    kornli = KorNliParams.model_validate((params.get("tables") or {}).get("kornli") or {})
    if kornli.splits_as == "original_code":
        return {"snli_1.0_train.ko.tsv": 2 * kornli.holdout}
    size = (((params.get("calum") or {}).get("test_draw") or {}).get("size") or {}).get("kornli")
    if size is None:
        size = yamlfile.read(work / "generators" / "calum" / "probe.yaml")["params"]["test_draw"]["size"].get("kornli")
    return {"multinli.train.ko.tsv": size if isinstance(size, int) else 0}


def _step(title: str, cmd: list[str], work: Path, env: dict, log: Path, progress: Progress) -> tuple[bool, float]:
    """Run ``cmd`` in ``work``, its output appended to ``log`` as it comes and read by ``progress`` (a ``[k/N] stage``
    line printed as each stage starts); (succeeded, seconds). A signal to ``probes`` ends it and its stages first
    (:mod:`probes.children`: :class:`~probes.children.Interrupted`)."""
    start = time.monotonic()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n=== {title}: $ {' '.join(cmd)}\n")
        fh.flush()
        code = follow(cmd, fh, progress, cwd=work, env=env)
    seconds = time.monotonic() - start
    print(f"  {'ok  ' if code == 0 else 'FAIL'} {seconds:7.1f}s  {title}", flush=True)
    return code == 0, seconds


def _stages(work: Path, env: dict) -> list[str]:
    """The names of the copy's stages (``dvc stage list``: foreach expanded); empty when dvc cannot list them."""
    with children.started(["dvc", "stage", "list", "--name-only"], cwd=work, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:   # a signal ends it as a stage's dvc
        names = [n.strip() for n in proc.stdout if n.strip()]
    return names if proc.returncode == 0 else []


def unfinished(log: str) -> list[str]:
    """The stages that did not complete, from ``dvc repro --keep-going``'s output ``log``: each failed one with the
    last line its command printed before failing (the error), then each skipped for an upstream failure."""
    failed, skipped, stage, last = {}, [], None, ""
    for line in log.splitlines():
        text = line.strip()
        if text.startswith("Running stage '"):
            stage, last = text.split("'")[1], ""
        elif text.startswith("ERROR: failed to reproduce"):   # the summary at the end: names every failed stage
            for name in text.split("'")[1::2]:
                failed.setdefault(name, "(see the log)")
        elif "failed to run:" in text and stage:
            failed.setdefault(stage, last)
        elif text.startswith("WARNING: Stage '") and "will be skipped" in text:
            skipped.append(text.split("'")[1])
        elif text and not text.startswith(("WARNING:", ">")):
            last = text[-500:]
    return [f"{s}: {why}" for s, why in failed.items()] + [f"{s}: skipped (an upstream stage failed)"
                                                           for s in dict.fromkeys(skipped) if s not in failed]


def _outside(project: Path, folder: Path, label: str) -> None:
    """Refuse a work folder in the project (or the project itself, or a link into it): the rehearsal's copy, its
    data and results would be written into the workspace it promises to leave untouched."""
    where = folder.resolve()
    if where == project or project in where.parents:
        raise UsageError(f"{label}: inside the project {project} (as {where}); the rehearsal leaves the workspace "
                         f"untouched, so its copy goes elsewhere: give a --workdir outside it")


def _run(args) -> int:
    from probekit.sources.manifest import resolve_mirror
    from probekit.tokens.checkpoint import check_folder

    if args.estimate:
        from probes.rehearse_estimate import show

        print(show(Path(args.estimate).expanduser().resolve()))
        return 0
    if not args.model:
        raise UsageError("give --model FOLDER (a small local model), or --estimate WORKDIR")
    project = Path(args.project).resolve()
    for name in ("dvc.yaml", "conf/config.yaml", "conf/profile/paper.yaml"):
        if not (project / name).is_file():
            raise UsageError(f"--project {project}: no {name} here; run probes rehearse in a probekit project")
    if args.workdir:
        _outside(project, Path(args.workdir).expanduser(), f"--workdir {args.workdir}")
    folders = []
    for model in args.model:
        folder = Path(model).expanduser().resolve()
        if not folder.is_dir():
            raise UsageError(f"--model {shown(model)}: not a folder; the rehearsal runs offline on a local model "
                             f"(save one with save_pretrained: a tiny one runs every stage in minutes)")
        check_folder(folder, model, weights=True)
        folders.append(folder)
    mirror = resolve_mirror(args.mirror, project / "raw" / "sources.yaml")[0]
    listed_once(compose(project / "conf", ["profile=paper"]), f"{project / 'conf'} (profile=paper)")   # before dvc
    if args.workdir:
        work = Path(args.workdir).expanduser().resolve()
        if work.exists() and (not work.is_dir() or any(work.iterdir())):
            raise UsageError(f"--workdir {work}: exists and is not an empty folder")
        work.mkdir(parents=True, exist_ok=True)
    else:
        _outside(project, Path(tempfile.gettempdir()), "the system's temporary folder (TMPDIR)")
        work = Path(tempfile.mkdtemp(prefix="probekit-rehearsal-"))
    params = prepare(project, work, folders, args.limit, args.run_device, args.max_size)
    removed = rehearse_report.stale_outputs(work)
    env, log = _env(work, mirror), work / "rehearsal.log"
    aliases = list(params["models"])
    steps = [("fetch GLUE", ["dvc", "repro", "--single-item", "fetch@glue"]), ("stand-in files", None),
             ("record them", ["dvc", "commit", "--force", "fetch@glue"]),
             ("every stage of dvc.yaml", ["dvc", "repro", "--keep-going"])]
    print(f"rehearsal of the paper profile in {work} (models: {', '.join(aliases)}; --limit {args.limit}; "
          f"mirror: {mirror or 'none, sources downloaded'}); the log: {log}", flush=True)
    if args.dry_run:
        for title, cmd in steps:
            print(f"  {title}: " + ("$ " + " ".join(cmd) if cmd else "(written by probes rehearse)"))
        return 0
    from probes import rehearse_files

    progress, notes, failed, total, stages = Progress(sys.stdout), [], [], 0.0, []
    title, state = "listing the stages", ""
    try:
        stages = _stages(work, env)
        progress.total = len(stages) or None
        for title, cmd in steps:
            if cmd is None:
                n = max(2 * args.limit, 16)
                notes = [f"raw/glue/{f}" for f in rehearse_files.write_glue(work / "raw" / "glue", n)]
                notes += [f"standins/klue/{f}" for f in rehearse_files.write_klue(work / "standins" / "klue", n)]
                notes += [f"raw/kornli/{f}" for f in rehearse_files.write_kornli(work / "raw" / "kornli", n,
                                                                                  kornli_extra(params, work))]
                print(f"  ok             {title}: {len(notes)} made-up files ({n} rows each)", flush=True)
                continue
            ok, seconds = _step(title, cmd, work, env, log, progress)
            total += seconds
            if not ok:
                failed.append(title)
        state = "Finished." if not failed else f"Finished; failed: {', '.join(failed)}."
    except children.Interrupted as stop:
        state = f"Interrupted ({signal.Signals(stop.signum).name}) during {title}: a partial rehearsal."
        raise
    except KeyboardInterrupt:
        state = f"Interrupted (Ctrl-C) during {title}: a partial rehearsal."
        raise
    except BaseException as error:
        state = f"Failed during {title}: {type(error).__name__}: {error}"
        raise
    finally:
        left = unfinished(log.read_text(encoding="utf-8", errors="replace")) if log.is_file() else []
        report = rehearse_report.write(work, project, notes, len(removed), stages, progress, left, state)
        if not state.startswith("Finished"):
            print(f"{state}\nWhat completed: {report}", file=sys.stderr, flush=True)
    print(f"{total:.0f}s in all. Outputs: {work} (results/*.md, the log rehearsal.log, REHEARSAL.md; "
          f"`probes rehearse --estimate {work}`: the paper profile's expected time)")
    if failed or left:
        print("Stages that did not complete (the stage: the last line it printed):\n" + "".join(
            f"  {s}\n" for s in left), flush=True)
        raise ProbekitError(f"the rehearsal failed: {', '.join(failed)}; {len(left)} stage(s) did not complete "
                            f"(listed above and in {report}; the whole output: {log})")
    print("every stage of the paper profile ran: the paper run should not crash on its code paths")
    return 0
