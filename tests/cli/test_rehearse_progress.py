"""`probes rehearse` tells how far it got: a `[k/N] stage` line as each stage starts (read from dvc's output as it
comes), and a REHEARSAL.md whatever ends it (the end, a failed stage, Ctrl-C) saying which stages completed. Run
with the real `dvc` on a tiny pipeline of its own (four stages, one that waits for the signal), in a real `probes`
process signalled by its PID."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import REPO, dvc_env
from probes.progress import Progress

REHEARSE = """
import sys
from pathlib import Path
import probekit.tokens.checkpoint as checkpoint
from probes import rehearse
from probes.main import main

checkpoint.check_folder = lambda *args, **kwargs: None   # a model folder: not what the test is about
prepare = rehearse.prepare

def tiny(project, work, *args, **kwargs):   # the real copy, then the tiny pipeline in place of dvc.yaml
    params = prepare(project, work, *args, **kwargs)
    (work / "dvc.yaml").write_text(Path(sys.argv[1]).read_text())
    return params

rehearse.prepare = tiny
sys.exit(main(sys.argv[2:]))
"""

PIPELINE = """stages:
  fetch:
    foreach: [glue]
    do:
      cmd: mkdir -p raw/glue && echo x > raw/glue/x.tsv
      outs: [raw/glue]
  one:
    cmd: python -c "open('one.txt', 'w').write('1')"
    outs: [one.txt]
  two:
    cmd: python -c "import pathlib, sys, time; pathlib.Path(r'{mark}').write_text('on'); time.sleep({wait}); sys.exit({code})"
    deps: [one.txt]
    outs: [two.txt]
  three:
    cmd: python -c "open('three.txt', 'w').write('3')"
    deps: [two.txt]
    outs: [three.txt]
"""


def _project(tmp_path: Path) -> Path:
    """A git checkout with the project's conf/, a dvc.yaml, DVC set up and a report committed from an earlier run."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "conf", root / "conf")
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    (root / "results").mkdir()
    (root / "results" / "report.md").write_text("# a report of the workspace's own run\n")
    (root / "results" / ".gitignore").write_text("/zeroshot\n")
    env = dvc_env()
    dvc = str(Path(sys.executable).parent / "dvc")
    for cmd in (["git", "init", "-q"], [dvc, "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "p"]):
        subprocess.run(cmd, cwd=root, check=True, capture_output=True, env=env)
    return root


def _rehearse(tmp_path: Path, wait: int, code: int) -> tuple[list[str], Path, Path]:
    pipeline = tmp_path / "pipeline.yaml"
    mark = tmp_path / "two.started"
    pipeline.write_text(PIPELINE.format(mark=mark, wait=wait, code=code))
    (tmp_path / "model").mkdir()
    (tmp_path / "mirror").mkdir()
    cmd = [sys.executable, "-c", REHEARSE, str(pipeline), "rehearse", "--model", str(tmp_path / "model"),
           "--project", str(_project(tmp_path)), "--workdir", str(tmp_path / "work"), "--mirror",
           str(tmp_path / "mirror")]
    return cmd, mark, tmp_path / "work"


def test_ctrl_c_during_a_rehearsal_leaves_a_partial_rehearsal_md_and_progress_lines(tmp_path):
    cmd, mark, work = _rehearse(tmp_path, wait=120, code=0)
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        proc = subprocess.Popen(cmd, env=dvc_env(), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not mark.is_file():
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
        time.sleep(0.3)
        printed = out.read_text()   # while it runs: a line per stage started, before the Ctrl-C
        assert "[1/4] stage fetch@glue" in printed and "[2/4] stage one" in printed, printed
        assert "[3/4] stage two (" in printed and "elapsed" in printed, printed
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130, out.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (work / "REHEARSAL.md").read_text()
    assert "Interrupted (SIGINT) during every stage of dvc.yaml: a partial rehearsal." in text, text
    completed = text.split("Stages that completed (2 of 4):\n\n")[1].split("\n\n")[0].splitlines()
    assert [line.split(" (")[0] for line in completed] == ["- fetch@glue", "- one"], text
    unfinished = text.split("Stages that did not complete:\n\n")[1]
    assert unfinished.startswith("- two: ") and "- three" in unfinished, text   # three: skipped, or not reached
    assert "raw/glue/MNLI/train.tsv" in text   # the stand-in files written before the stop
    assert set(json.loads((work / "timings.json").read_text())["stages"]) == {"fetch@glue", "one"}
    # the workspace's committed report is not in the copy, where it would read as the rehearsal's
    assert not (work / "results" / "report.md").exists() and (work / "results" / ".gitignore").is_file()
    assert "1 committed outputs of the workspace" in text
    assert "What completed: " in out.read_text()


def test_a_failed_stage_is_named_and_the_rest_listed(tmp_path):
    cmd, mark, work = _rehearse(tmp_path, wait=0, code=3)
    done = subprocess.run(cmd, env=dvc_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    text = (work / "REHEARSAL.md").read_text()
    assert "Finished; failed: every stage of dvc.yaml." in text
    assert "Stages that completed (2 of 4)" in text and "- two: " in text, text
    assert "- three: skipped (an upstream stage failed)" in text
    assert "[4/4]" not in done.stdout and "[3/4] stage two" in done.stdout


def test_the_progress_line_counts_stages_and_estimates_what_is_left():
    import io

    ticks = iter([0.0, 10.0, 30.0, 40.0, 70.0])
    out = io.StringIO()
    p = Progress(out, total=4, now=lambda: next(ticks))
    for line in ["Running stage 'a':", "> cmd", "Stage 'x' didn't change, skipping", "Running stage 'b':",
                 "Running stage 'c':", "ERROR: failed to reproduce 'c'"]:
        p.feed(line)
    p.end()
    lines = out.getvalue().splitlines()
    assert lines[0] == "  [1/4] stage a (10s elapsed)"                       # nothing ended yet: no estimate
    assert lines[1] == "  [3/4] stage b (30s elapsed, about 40s left)"      # a: 20s; 2 stages left (b, c)
    assert lines[2] == "  [4/4] stage c (40s elapsed, about 15s left)"      # a, b: 15s on average; c left
    assert p.completed == ["a", "b"] and p.failed == ["c"] and p.unchanged == ["x"] and p.seconds["c"] == 30


DVC_STAGES = """#!{python}
# A stand-in for dvc exp run: two stages, the second failing.
import sys, time
print("Running stage 'zeroshot@tiny':", flush=True)
print("> probes evaluate zeroshot ...", flush=True)
time.sleep(1)
print("Running stage 'report':", flush=True)
sys.exit("ERROR: failed to reproduce 'report'")
"""


def test_probes_run_prints_a_line_per_stage_as_dvc_runs_it(tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "dvc").write_text(DVC_STAGES.format(python=sys.executable))
    (bin_ / "dvc").chmod(0o755)
    root = _project(tmp_path)
    from probekit.params import compose

    compose(root / "conf", [], root / "params.yaml")
    env = dict(dvc_env(), PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run([sys.executable, "-m", "probes", "run", "--project", str(root), "--model", "org/tiny",
                           "--probes", "olmpics"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(l.startswith("  [1] stage zeroshot@tiny (") for l in lines), done.stdout
    assert lines.index("> probes evaluate zeroshot ...") < next(i for i, l in enumerate(lines)
                                                                if l.startswith("  [2] stage report ("))
