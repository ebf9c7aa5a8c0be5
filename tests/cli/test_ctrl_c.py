"""Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group (a new session here, as a shell's
job), not to `probes` alone. The finding: `dvc repro --keep-going` ignores SIGINT while a stage runs, takes the stage
the signal killed as failed and starts the next one, so `probes rehearse` ran on for a minute and nine stages. Here a
real DVC project of independent stages, each appending its name to a log (the second one waits for the Ctrl-C):
after it, no further stage starts, `probes` exits 130 within seconds, the rehearsal's partial REHEARSAL.md says so,
and DVC left no lock behind (the next `dvc status` runs; no read or write lock of the stopped dvc is recorded). And a
second Ctrl-C ends a stage that ignores the first at once, without waiting out the grace."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import REPO, dvc_env

STAGE = """import os, pathlib, sys, time
log = pathlib.Path({log!r})
with open(log, "a") as fh:
    fh.write(f"{{sys.argv[1]}} {{os.getpid()}}\\n")
if len(log.read_text().splitlines()) == 2:   # the second stage to start waits for the Ctrl-C
    time.sleep(120)
pathlib.Path(sys.argv[1] + ".txt").write_text(sys.argv[1])
"""

STAGES = ("a", "b", "c", "d")

REHEARSE = """
import sys
from pathlib import Path
import probekit.tokens.checkpoint as checkpoint
from probes import rehearse
from probes.main import main

checkpoint.check_folder = lambda *args, **kwargs: None   # a model folder: not what the test is about
prepare = rehearse.prepare

def tiny(project, work, *args, **kwargs):   # the real copy, then the test's pipeline in place of dvc.yaml
    params = prepare(project, work, *args, **kwargs)
    (work / "dvc.yaml").write_text(Path(sys.argv[1]).read_text())
    return params

rehearse.prepare = tiny
sys.exit(main(sys.argv[2:]))
"""

RUN = """
import sys
from probes.main import main
import probes.run

probes.run.of_report = lambda paper: [type("R", (), {"paper": "olmpics", "stages": tuple(sys.argv[1].split()),
                                                     "limits": ()})()]
sys.exit(main(sys.argv[2:]))
"""


def _pipeline(tmp_path: Path, fetch: bool) -> str:
    """dvc.yaml of independent stages a, b, c, d (each runs STAGE; with ``fetch``, the rehearsal's fetch@glue too)."""
    script = tmp_path / "stage.py"
    script.write_text(STAGE.format(log=str(tmp_path / "stages.log")))
    stages = {"fetch": {"foreach": ["glue"], "do": {"cmd": "mkdir -p raw/glue && echo x > raw/glue/x.tsv",
                                                   "outs": ["raw/glue"]}}} if fetch else {}
    stages |= {s: {"cmd": f"{sys.executable} {script} {s}", "outs": [f"{s}.txt"]} for s in STAGES}
    return yaml.safe_dump({"stages": stages}, sort_keys=False)


def _git_dvc(root: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    dvc = str(Path(sys.executable).parent / "dvc")
    for cmd in (["git", "init", "-q"], [dvc, "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-qm", "p"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True, env=dvc_env())


def _descendants(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _ctrl_c(cmd: list[str], env: dict, log: Path, out: Path, twice: bool = False,
            signum: int = signal.SIGINT) -> tuple[int, list[str]]:
    """``cmd`` started in a session of its own; once two stages have started, ``signum`` (SIGINT: a Ctrl-C) to its
    whole process group (``twice``: again half a second later); its exit status (None: still running 30 s after) and
    the stages that started, each of which must have ended with it. What the test started is killed after, by
    pid."""
    with open(out, "w") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    started: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while not (log.is_file() and len(log.read_text().splitlines()) >= 2):
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.05)
        time.sleep(0.3)
        started = _descendants(proc.pid)
        os.killpg(proc.pid, signum)   # the terminal's Ctrl-C: every process of the foreground group
        if twice:
            time.sleep(0.5)
            os.killpg(proc.pid, signum)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        stages = [line.split() for line in log.read_text().splitlines()]
        left = [name for name, pid in stages if _running(int(pid))]
        assert code is None or not left, f"still running after it ended ({code}): {left}\n{out.read_text()}"
        return code, [name for name, _ in stages]
    finally:
        for pid in [proc.pid, *started, *_descendants(proc.pid),
                    *(int(line.split()[1]) for line in (log.read_text() if log.is_file() else "").splitlines())]:
            try:
                if pid > 1:
                    os.kill(pid, signal.SIGKILL)   # what this test started, by its pid
            except (ProcessLookupError, PermissionError):
                pass
        proc.wait()


def _no_lock_left(root: Path) -> None:
    """The next dvc command in ``root`` runs (no repository lock left), and no stage lock of the stopped dvc is
    recorded (.dvc/tmp/rwlock: DVC released it, as on its own Ctrl-C, rather than dying with it taken)."""
    status = subprocess.run([str(Path(sys.executable).parent / "dvc"), "status"], cwd=root, env=dvc_env(),
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    rwlock = root / ".dvc" / "tmp" / "rwlock"
    if rwlock.is_file():
        assert not any(json.loads(rwlock.read_text() or "{}").values()), rwlock.read_text()


def test_ctrl_c_stops_a_rehearsal_in_its_stage_and_leaves_its_partial_report(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(REPO / "conf", root / "conf")
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    _git_dvc(root)
    (tmp_path / "pipeline.yaml").write_text(_pipeline(tmp_path, fetch=True))
    (tmp_path / "model").mkdir()
    (tmp_path / "mirror").mkdir()
    work, out = tmp_path / "work", tmp_path / "out.txt"
    cmd = [sys.executable, "-c", REHEARSE, str(tmp_path / "pipeline.yaml"), "rehearse", "--model",
           str(tmp_path / "model"), "--project", str(root), "--workdir", str(work), "--mirror",
           str(tmp_path / "mirror")]
    code, ran = _ctrl_c(cmd, dvc_env(), tmp_path / "stages.log", out)
    assert len(ran) == 2, f"stages started after the Ctrl-C: {ran}\n{out.read_text()}"
    assert code == 130, out.read_text()
    text = (work / "REHEARSAL.md").read_text()
    assert "Interrupted (SIGINT) during every stage of dvc.yaml: a partial rehearsal." in text, text
    assert f"- {ran[1]}: " in text.split("Stages that did not complete:\n\n")[1], text
    assert f"- {ran[0]} (" in text.split("Stages that completed")[1].split("Stages that did not")[0], text
    _no_lock_left(work)


def _run_project(tmp_path: Path) -> tuple[Path, list[str]]:
    """A DVC project of stages a, b, c, d committed in git, its params from conf/, and the `probes run` that runs
    them for a model."""
    root = tmp_path / "project"
    (root / "conf").mkdir(parents=True)
    (root / "conf" / "config.yaml").write_text(yaml.safe_dump({"models": {"x": "X"}, "device": "auto",
                                                               "owned_by": {"dvc.yaml": ["device"]}}))
    (root / "params.yaml").write_text((root / "conf" / "config.yaml").read_text())
    (root / "dvc.yaml").write_text(_pipeline(tmp_path, fetch=False))
    _git_dvc(root)
    (tmp_path / "tiny").mkdir()
    return root, [sys.executable, "-c", RUN, " ".join(STAGES), "run", "--project", str(root), "--model",
                  str(tmp_path / "tiny"), "--probes", "olmpics"]


@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, id="ctrl-c"), pytest.param(signal.SIGHUP, id="hangup"),
                                    pytest.param(signal.SIGQUIT, id="ctrl-backslash")])
def test_ctrl_c_stops_probes_run_in_its_stage(tmp_path, signum):
    """Also the terminal closed (an ssh session dropped: SIGHUP) and Ctrl-\\ (SIGQUIT): Python's default ended
    `probes` at once, and dvc, in a group of its own, ran on with its stage and its locks."""
    root, cmd = _run_project(tmp_path)
    out = tmp_path / "out.txt"
    env = dict(dvc_env(), PATH=f"{Path(sys.executable).parent}{os.pathsep}{dvc_env()['PATH']}")
    code, ran = _ctrl_c(cmd, env, tmp_path / "stages.log", out, signum=signum)
    assert len(ran) == 2, f"stages started after the signal: {ran}\n{out.read_text()}"
    said = "interrupted" if signum == signal.SIGINT else "terminated"
    assert code == 128 + signum and out.read_text().splitlines()[-1] == f"probes run: {said}", out.read_text()
    _no_lock_left(root)


EXP_SAVE = """#!{python}
# A stand-in for dvc: `repro` does nothing; `exp save` runs until a Ctrl-C, then takes a second to put the
# workspace back (DVC's stash and refs) and says so.
import os, sys, time
from pathlib import Path

if sys.argv[1:3] == ["exp", "save"]:
    with open({log!r}, "a") as fh:
        fh.write(f"exp-save {{os.getpid()}}\\n" * 2)
    try:
        time.sleep(120)
    except KeyboardInterrupt:
        time.sleep(1)
        Path({log!r}).with_name("unwound").write_text("the workspace put back")
        sys.exit(252)
"""


def test_ctrl_c_during_dvc_exp_save_lets_it_unwind(tmp_path):
    """`probes run` ran `dvc exp save` in its own group, killed 0.25 s after a Ctrl-C (subprocess.run's way), in
    the middle of DVC's own unwinding (the workspace stashed, an experiment ref half made)."""
    _, cmd = _run_project(tmp_path)
    bin_, log, out = tmp_path / "bin", tmp_path / "stages.log", tmp_path / "out.txt"
    bin_.mkdir()
    (bin_ / "dvc").write_text(EXP_SAVE.format(python=sys.executable, log=str(log)))
    (bin_ / "dvc").chmod(0o755)
    code, _ = _ctrl_c(cmd, dict(dvc_env(), PATH=f"{bin_}{os.pathsep}{dvc_env()['PATH']}"), log, out)
    assert code == 130 and out.read_text().splitlines()[-1] == "probes run: interrupted", out.read_text()
    assert (tmp_path / "unwound").is_file(), out.read_text()


STUBBORN = """
import os, signal, sys, time
from probes import children

if sys.argv[2:] == ["stage"]:   # the command: ignores SIGINT and SIGTERM, says it runs (twice: as two stages)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(sys.argv[1], "a") as fh:
        fh.write(f"stubborn {os.getpid()}\\n" * 2)
    time.sleep(600)
children.GRACE = 600   # the first Ctrl-C's grace: longer than the test waits
try:
    children.run([sys.executable, __file__, sys.argv[1], "stage"])
except children.Interrupted as stop:
    sys.exit(stop.code)
"""


def test_a_second_ctrl_c_ends_a_command_that_ignores_the_first(tmp_path):
    """A stage that ignores SIGINT and SIGTERM would hold `probes` for the whole grace; the second Ctrl-C ends it
    after a short one (here the grace is 600 s, the test waits 30)."""
    log, script = tmp_path / "stages.log", tmp_path / "stubborn.py"
    script.write_text(STUBBORN)
    code, _ = _ctrl_c([sys.executable, str(script), str(log)], dict(os.environ), log, tmp_path / "out.txt",
                      twice=True)
    assert code == 130, (tmp_path / "out.txt").read_text()


PIP_LONG = "#!/bin/sh\n'''exec' \"/a b/bin/python3.11\" \"$0\" \"$@\"\n' '''\nimport sys\n"


@pytest.mark.parametrize("head, python", [
    pytest.param("#!{exe}\n", ["{exe}"], id="venv"),
    pytest.param("#!/usr/bin/env python3\n", ["/usr/bin/env", "python3"], id="env"),
    pytest.param(PIP_LONG, ["/a b/bin/python3.11"], id="pip-long-path"),
    pytest.param("#!/bin/sh\nexec python3 -m dvc \"$@\"\n", None, id="shell"),
    pytest.param("#!/usr/bin/pythonista\n", None, id="not-python"),
    pytest.param("\x7fELF\x02\x01\x01", None, id="binary"),
])
def test_a_python_command_is_run_so_that_sigterm_stops_it_as_a_ctrl_c(tmp_path, head, python):
    from probes import children

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "dvc").write_text(head.format(exe=sys.executable))
    (bin_ / "dvc").chmod(0o755)
    cmd = children.stoppable(["dvc", "repro", "-k"], {"env": {"PATH": f"{tmp_path / 'none'}:{bin_}"}})
    python = python and [w.format(exe=sys.executable) for w in python]
    assert cmd == ([*python, "-c", children.STOPPABLE, str(bin_ / "dvc"), "repro", "-k"] if python
                   else ["dvc", "repro", "-k"])


SCRIPT = """#!{exe}
import json, sys
print(json.dumps([__name__, sys.argv, sys.path[0]]))
sys.exit(3)
"""


def test_a_python_command_sees_what_it_sees_when_run_itself(tmp_path):
    """Its argv, its folder first on sys.path, __main__, its exit status, as when the script runs itself."""
    from probes import children

    script = tmp_path / "bin" / "tool"
    script.parent.mkdir()
    script.write_text(SCRIPT.format(exe=sys.executable))
    script.chmod(0o755)
    itself = subprocess.run([str(script), "a", "--b"], capture_output=True, text=True, cwd=tmp_path)
    with children.started(["tool", "a", "--b"], env=dict(os.environ, PATH=str(script.parent)), cwd=tmp_path,
                          stdout=subprocess.PIPE, text=True) as proc:
        out = proc.stdout.read()
    assert (proc.returncode, out) == (itself.returncode, itself.stdout) == (3, itself.stdout), out


FORKED = """
import os, sys, time
from evaluators.shared import parallel

def run(i):
    with open(sys.argv[1], "a") as fh:
        fh.write(f"run{i} {os.getpid()}\\n")
    time.sleep(60)
    return i

parallel.each(run, 8, 2)
"""


def test_ctrl_c_ends_a_stages_forked_runs_without_running_the_queued_ones(tmp_path):
    """A stage's runs on forked processes (evaluators/shared/parallel.py): the pool's exit waited for every queued
    run (here 8 of a minute each on 2 processes) after a Ctrl-C; now the workers are ended with the stage."""
    log, script = tmp_path / "runs.log", tmp_path / "forked.py"
    script.write_text(FORKED)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code, ran = _ctrl_c([sys.executable, str(script), str(log)], env, log, tmp_path / "out.txt")
    assert code == -signal.SIGINT and "KeyboardInterrupt" in (tmp_path / "out.txt").read_text(), ran
