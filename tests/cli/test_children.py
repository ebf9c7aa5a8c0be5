"""The commands `probes run` and `probes rehearse` start stay theirs: a real `probes` process runs a stand-in `dvc`
(which starts a stage of its own), the test signals `probes` by its PID alone (not the terminal's process group),
and then neither dvc nor its stage may still run. What both check before dvc starts: the rehearsal refuses a
--workdir inside the project, and a probe in two lists gets probekit's one line, not DVC's advice."""

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

from helpers import REPO
from probes.main import main

FAKE_DVC = """#!{python}
# A stand-in for dvc: starts a stage that records its pid, records its own pid and group, and waits for the stage.
import json, os, subprocess, sys
from pathlib import Path

record = Path({record!r})
stage = subprocess.Popen([sys.executable, "-c", "import os, pathlib, time; "
                          "pathlib.Path({record!r}, 'stage.pid').write_text(str(os.getpid())); time.sleep(600)"])
(record / "dvc.json").write_text(json.dumps({{"pid": os.getpid(), "group": os.getpgid(0), "stage": stage.pid}}))
stage.wait()
"""

DVC_REFUSES = """#!{python}
# A stand-in for dvc meeting a probe in two lists: records that it ran, says what dvc says, fails as dvc fails.
import sys
from pathlib import Path

Path({record!r}, "called").write_text(" ".join(sys.argv[1:]))
sys.exit("ERROR: output 'data/probes/age_comparison' is specified in: generate-mc_mlm@age_comparison, "
         "generate-mc_qa@age_comparison. Use `dvc remove` with any of the above targets to stop tracking the "
         "overlapping output.")
"""

REHEARSE = """
import os, sys
import probekit.tokens.checkpoint as checkpoint
from probes import rehearse
from probes.main import main

checkpoint.check_folder = lambda *args, **kwargs: None   # a model folder: not what the test is about
env = rehearse._env
rehearse._env = lambda work, mirror: dict(env(work, mirror), PATH=sys.argv[1] + os.pathsep + env(work, mirror)["PATH"])
sys.exit(main(sys.argv[2:]))
"""


def _fake_dvc(tmp_path: Path, script: str = FAKE_DVC) -> tuple[Path, Path]:
    """A folder holding the stand-in ``dvc`` (``script``), and the folder it records its processes in."""
    bin_, record = tmp_path / "bin", tmp_path / "record"
    bin_.mkdir()
    record.mkdir()
    dvc = bin_ / "dvc"
    dvc.write_text(script.format(python=sys.executable, record=str(record)))
    dvc.chmod(0o755)
    return bin_, record


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not reaped, does not)."""
    stat = Path(f"/proc/{pid}/stat")
    if not Path("/proc/self/stat").exists():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        return stat.read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _group(group: int) -> list[int]:
    """The processes of process group ``group`` that run (Linux: from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[2] == str(group) and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


def _signalled(cmd: list[str], env: dict, record: Path, signum: int, out: Path) -> tuple[int, list[int]]:
    """``cmd`` started (a session of its own, as a shell's job), signalled ``signum`` by its PID once the stand-in
    dvc's stage runs; its exit status and the processes of dvc (and its group) still running once it has ended.
    Those are killed after (what this test started, by pid)."""
    with open(out, "w") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    seen: dict = {}
    try:
        deadline = time.monotonic() + 120
        while not ((record / "dvc.json").is_file() and (record / "stage.pid").is_file()):
            assert proc.poll() is None, f"{cmd[:4]} ended before dvc ran:\n{out.read_text()}"
            assert time.monotonic() < deadline, f"dvc did not start:\n{out.read_text()}"
            time.sleep(0.05)
        time.sleep(0.2)
        seen = json.loads((record / "dvc.json").read_text())
        os.kill(proc.pid, signum)
        code = proc.wait(timeout=60)
        return code, [pid for pid in (seen["pid"], seen["stage"]) if _running(pid)] + _group(seen["group"])
    finally:
        for pid in (proc.pid, seen.get("pid"), seen.get("stage")):   # what this test started, by its pid
            if pid and _running(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def _project(tmp_path: Path) -> Path:
    """A git checkout with the project's conf/ and dvc.yaml, params.yaml composed from conf/."""
    from probekit.params import compose

    root = tmp_path / "project"
    shutil.copytree(REPO / "conf", root / "conf")
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    compose(root / "conf", [], root / "params.yaml")
    for git in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "p"]):
        subprocess.run(["git", *git], cwd=root, check=True, capture_output=True)
    return root


SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]


@pytest.mark.parametrize("signum", SIGNALS)
def test_probes_run_ends_dvc_and_its_stage_on_a_signal(tmp_path, signum):
    bin_, record = _fake_dvc(tmp_path)
    root = _project(tmp_path)
    env = dict(os.environ, PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
    cmd = [sys.executable, "-m", "probes", "run", "--project", str(root), "--model", "org/tiny", "--probes",
           "olmpics"]
    code, left = _signalled(cmd, env, record, signum, tmp_path / "out.txt")
    assert left == [], f"still running after probes run ended ({code}): {left}"
    assert code == 128 + signum, (tmp_path / "out.txt").read_text()
    said = "interrupted" if signum == signal.SIGINT else "terminated"
    assert (tmp_path / "out.txt").read_text().splitlines()[-1] == f"probes run: {said}"


@pytest.mark.parametrize("signum", SIGNALS)
def test_probes_rehearse_ends_dvc_and_its_stage_on_a_signal(tmp_path, signum):
    bin_, record = _fake_dvc(tmp_path)
    root = _project(tmp_path)
    (tmp_path / "model").mkdir()
    cmd = [sys.executable, "-c", REHEARSE, str(bin_), "rehearse", "--model", str(tmp_path / "model"), "--project",
           str(root), "--workdir", str(tmp_path / "work"), "--mirror", str(tmp_path / "mirror")]
    code, left = _signalled(cmd, dict(os.environ), record, signum, tmp_path / "out.txt")
    assert left == [], f"still running after probes rehearse ended ({code}): {left}"
    assert code == 128 + signum, (tmp_path / "out.txt").read_text()


def test_a_command_runs_to_its_status_and_the_handlers_are_put_back():
    from probes import children

    before = {s: signal.getsignal(s) for s in children.SIGNALS}
    assert children.run([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    with pytest.raises(RuntimeError, match="the caller failed"):   # a caller that fails ends the command first
        with children.started([sys.executable, "-c", "import time; time.sleep(60)"]) as proc:
            raise RuntimeError("the caller failed")
    assert proc.returncode == -signal.SIGTERM
    assert {s: signal.getsignal(s) for s in children.SIGNALS} == before


TERMINATED = """
import os, signal, sys, time
from generators.shared import scaffold

def new_probe(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)

scaffold.new_probe = new_probe
from probes.main import main
sys.exit(main(["new", "part_of", "--from", "age_comparison"]))
"""


def test_any_command_ends_on_sigterm_as_on_a_ctrl_c(tmp_path):
    """SIGTERM (`kill PID`) unwinds a command as a Ctrl-C does, temporary files removed on the way, and exits
    143, where Python's default died at once."""
    done = subprocess.run([sys.executable, "-c", TERMINATED], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (143, ["probes new: terminated"]), done.stderr


@pytest.mark.parametrize("workdir", ["rh", "deep/er/rh", ".", "link/rh"])
def test_a_workdir_inside_the_project_is_refused_before_any_work(tmp_path, tiny_bert, capsys, workdir):
    """The finding: `--workdir rh` in the project left a nested repository (153 MB after the rehearsal) in the
    workspace the docs call untouched. Refused in one line at any depth, for the project itself and through a
    link into it; nothing is made (--dry-run: the old code made its copy and stopped there)."""
    root = _project(tmp_path)
    (tmp_path / "link").symlink_to(root)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    target = tmp_path / workdir if workdir.startswith("link") else root / workdir
    code = main(["rehearse", "--model", str(tiny_bert), "--project", str(root), "--workdir", str(target),
                 "--mirror", str(tmp_path / "mirror"), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"--workdir {target}: inside the project {root}" in err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def _in_both_lists(root: Path) -> None:
    conf = root / "conf/config.yaml"
    conf.write_text(conf.read_text().replace("  mc_qa: [", "  mc_qa: [age_comparison, "))


def test_probes_run_says_a_probe_in_two_lists_before_dvc_runs(tmp_path, capfd, monkeypatch):
    """The finding: a probe in probes.mc_mlm and probes.mc_qa got DVC's `use dvc remove` advice (its outputs trie:
    two stages with one output) before probekit's own line. Now probekit's line alone, and dvc never starts."""
    bin_, record = _fake_dvc(tmp_path, DVC_REFUSES)
    root = _project(tmp_path)
    _in_both_lists(root)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    code = main(["run", "--project", str(root), "--model", "org/tiny", "--probes", "olmpics"])
    err = capfd.readouterr().err
    assert not (record / "called").exists() and len(err.splitlines()) == 1, err
    assert code == 1 and f"{root / 'conf'} (as dvc exp run composes it): probes: age_comparison is in both mc_mlm " \
                         f"and mc_qa (a probe has one format)" in err


def test_probes_rehearse_says_a_probe_in_two_lists_before_any_work(tmp_path, tiny_bert, capsys):
    root = _project(tmp_path)
    _in_both_lists(root)
    code = main(["rehearse", "--model", str(tiny_bert), "--project", str(root), "--workdir", str(tmp_path / "work"),
                 "--mirror", str(tmp_path / "mirror"), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1, err
    assert f"{root / 'conf'} (profile=paper): probes: age_comparison is in both mc_mlm and mc_qa" in err
    assert not (tmp_path / "work").exists()
