"""Atomic writes remove nothing but their own temporary folder, and the folder they replace only when it is ours; what
an interrupted write left behind is cleaned at the next write of the same target."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from probekit import outputs
from probekit.outputs import atomic


def listing(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "keep.txt").write_text("keep\n")
    (work / "sub" / "x").write_text("x\n")
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize("target", ["", ".", "./", "..", "sub/..", "/"])
def test_a_target_without_a_name_is_refused_and_nothing_is_removed(target, cwd):
    """``atomic_path("")`` used to yield the temporary folder itself, and its cleanup removed the folder holding it:
    the current folder, with everything in it."""
    before = listing(cwd.parent)
    with pytest.raises(Exception) as caught:
        with atomic.atomic_path(target, kind="results") as tmp:
            tmp.mkdir(exist_ok=True)
            (tmp / "f").write_text("new\n")
    assert listing(cwd.parent) == before
    assert isinstance(caught.value, outputs.OutputError)
    assert "not a name to write to" in str(caught.value) or "probekit will not replace it" in str(caught.value)


def test_a_failed_write_leaves_the_target_and_its_siblings_as_they_were(cwd):
    atomic.write_text(cwd / "out" / "a.txt", "old\n")
    before = listing(cwd)
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(cwd / "out", kind="results") as tmp:
            tmp.mkdir()
            (tmp / "a.txt").write_text("new\n")
            raise RuntimeError("the generator failed")
    assert listing(cwd) == before


def test_a_folder_of_someone_elses_is_never_replaced_by_a_writer(cwd):
    """The library checks too, not only the command line: a writer called directly refuses a foreign folder, and
    the current folder whatever it holds."""
    from probekit.data.writer import Dataset, Part, write_dataset

    before = listing(cwd.parent)
    with pytest.raises(outputs.OutputError, match=r"sub: holds x, which probekit did not write"):
        write_dataset(cwd / "sub", Dataset((Part("", {"rows.jsonl": [{"a": 1}]}, {"params": {}}, lambda meta: "card\n"),),
                                           "other"))
    with pytest.raises(outputs.OutputError, match=r"is the current folder; probekit will not replace it"):
        with atomic.atomic_path(cwd, kind="results") as tmp:
            tmp.mkdir()
    assert listing(cwd.parent) == before


def test_a_folder_of_ours_is_replaced_and_marked_with_what_was_written(cwd):
    for text in ("one\n", "two\n"):
        with atomic.atomic_path(cwd / "out", kind="results") as tmp:
            (tmp / "v").mkdir(parents=True)
            (tmp / "v" / "rows.jsonl").write_text(text)
    assert (cwd / "out" / "v" / "rows.jsonl").read_text() == "two\n"
    assert outputs.not_ours(cwd / "out") == []
    assert sorted(p.name for p in cwd.iterdir()) == ["keep.txt", "out", "sub"]


def test_a_full_disk_names_the_output_the_user_asked_for(cwd, monkeypatch):
    """A write inside a folder being written fails: the error names the folder (what --out gave), not a temporary
    file; nothing is left behind."""
    real = Path.write_text

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    before = listing(cwd)
    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(atomic.OutputError) as caught:
        with atomic.atomic_path(cwd / "out", kind="results") as tmp:
            atomic.write_text(tmp / "v" / "rows.jsonl", "x\n")
    assert str(caught.value) == f"{cwd / 'out'}: cannot write it: the disk is full (no space left on the device)"
    monkeypatch.setattr(Path, "write_text", real)
    assert listing(cwd) == before


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _leftover(path: Path, pid: int, host: str, name: str = "out") -> Path:
    """A temporary folder as :func:`probekit.outputs.atomic.atomic_path` leaves it, with its note."""
    (path / name).mkdir(parents=True)
    (path / atomic._NOTE).write_text(json.dumps({"written_by": "probekit", "temporary_of": name, "pid": pid,
                                                  "host": host}) + "\n")
    return path


def test_what_an_interrupted_write_left_is_removed_at_the_next_write(cwd):
    """Removed: a temporary folder of this target with probekit's note, of a process of this host that is gone. Kept:
    one of a live process, of another host, of another target, and anything without the note (a user's hidden files
    named like a temporary, an older probekit's leftovers: their bytes are not proven probekit's)."""
    host = atomic._HOST
    dead, alive = _dead_pid(), os.getpid()
    stale = [_leftover(cwd / f".out.{dead}-{host}.abc123.tmp", dead, host)]
    kept = [_leftover(cwd / f".out.{alive}-{host}.abc123.tmp", alive, host),      # a write in progress (this process)
            _leftover(cwd / f".out.{dead}-0badc0de.abc123.tmp", dead, "0badc0de"),  # another host's
            _leftover(cwd / f".outer.{dead}-{host}.x.tmp", dead, host, "outer"),    # another target's
            _leftover(cwd / f".out.{dead}-{host}.forged.tmp", alive, host)]         # a note that is not its own
    users = [cwd / f".out.{dead}-{host}.abc123x.tmp", cwd / ".out.k2j3h4g5.tmp", cwd / f".out.old-{dead}",
             cwd / f".out.{dead}-{host}.old"]
    for path in users:   # no note: a user's, whatever its name says
        (path / "notes.txt").parent.mkdir(parents=True)
        (path / "notes.txt").write_text("mine\n")
    hour_ago = time.time() - 2 * 3600
    os.utime(cwd / ".out.k2j3h4g5.tmp", (hour_ago, hour_ago))
    atomic.write_json(cwd / "out", {"a": 1})
    assert [p for p in stale if p.exists()] == [] and all(p.exists() for p in kept + users)
    assert all((p / "notes.txt").read_text() == "mine\n" for p in users)


WRITER = """
import sys, time
from probekit.outputs import atomic
with atomic.atomic_path(sys.argv[1], kind="results") as tmp:
    tmp.mkdir()
    (tmp / "rows.jsonl").write_text(sys.argv[2])
    print("writing", flush=True)
    time.sleep(60)
"""


def test_a_killed_write_leaves_the_last_complete_folder_and_the_next_write_cleans_up(cwd):
    out = cwd / "out"
    subprocess.run([sys.executable, "-c", WRITER.replace("time.sleep(60)", "pass"), str(out), "first\n"], check=True,
                   capture_output=True)
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(out), "second\n"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (out / "rows.jsonl").read_text() == "first\n"
    left = [p.name for p in cwd.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(f".probekit-{proc.pid}-")
    assert outputs.not_ours(out) == []
    with atomic.atomic_path(out, kind="results") as tmp:
        tmp.mkdir()
        (tmp / "rows.jsonl").write_text("third\n")
    assert (out / "rows.jsonl").read_text() == "third\n"
    assert not [p for p in cwd.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]


def test_a_killed_writer_its_parent_has_not_reaped_yet_counts_as_gone(cwd):
    """A worker killed under a pool (Ray, multiprocessing) is a zombie until its parent waits for it: signal 0 still
    reaches its pid. Its temporary folder is stale all the same, so the retry that runs at once cleans it up."""
    out = cwd / "out"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(out), "second\n"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    os.kill(proc.pid, signal.SIGKILL)
    deadline = time.time() + 10
    while Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z" and time.time() < deadline:
        time.sleep(0.05)
    try:
        os.kill(proc.pid, 0)   # the zombie still answers signal 0: the case this test is about
        atomic.write_json(out, {"a": 1})
        assert not [p for p in cwd.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]
    finally:
        proc.wait()


NOTELESS = """
import sys, time
from probekit.outputs import atomic

def stuck(*args):   # killed between making its temporary folder and writing the note in it
    print("made", flush=True)
    time.sleep(60)

atomic.json.dumps = stuck   # the note's text is made with json.dumps
atomic.write_text(sys.argv[1], "never\\n")
"""


def test_a_writer_killed_before_its_note_leaves_a_folder_the_next_write_removes(cwd):
    """The window between making the temporary folder and finishing its note: the folder holds nothing, or the start
    of the note, so no byte of anyone else's; the retry that runs next removes it (a Ray retry left it in the store
    before: the grid test that kills a worker caught it)."""
    proc = subprocess.Popen([sys.executable, "-c", NOTELESS, str(cwd / "out")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "made\n"
    proc.kill()
    proc.wait()
    left = [p for p in cwd.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]
    assert len(left) == 1 and os.listdir(left[0]) == []
    atomic.write_text(cwd / "out", "next\n")
    assert not [p for p in cwd.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]
    assert (cwd / "out").read_text() == "next\n"


def test_a_note_cut_short_proves_an_otherwise_empty_folder_only(cwd):
    host, dead, alive = atomic._HOST, _dead_pid(), os.getpid()
    note = atomic._note("out", dead, host)

    def holder(tag: str, pid: int, files: dict[str, str]) -> Path:
        path = cwd / f".out.{pid}-{host}.{tag}.tmp"
        path.mkdir()
        for name, text in files.items():
            (path / name).write_text(text)
        return path

    gone = [holder("empty", dead, {}), holder("cut", dead, {atomic._NOTE: note[:17]})]
    kept = [holder("live", alive, {}),                                            # a write starting now
            holder("mine", dead, {atomic._NOTE: note[:17], "draft.md": "mine\n"}),  # a file beside a cut note
            holder("other", dead, {atomic._NOTE: '{"written_by": "someone"}'}),    # not a start of its note
            holder("alone", dead, {"draft.md": "mine\n"})]
    atomic.write_text(cwd / "out", "x\n")
    assert [p for p in gone if p.exists()] == [] and all(p.exists() for p in kept)
    assert (kept[1] / "draft.md").read_text() == "mine\n"


def test_a_folder_sweep_takes_every_targets_leftovers_and_waits_for_a_dying_writer(cwd):
    """:func:`atomic.remove_stale` sweeps a folder (a grid's cells, after its run) whatever each leftover's target;
    ``settle`` gives a writer that is still ending the time to end, and leaves one that outlives it."""
    host, dead = atomic._HOST, _dead_pid()
    stale = [_leftover(cwd / f".a.{dead}-{host}.x1.tmp", dead, host, "a"),
             _leftover(cwd / f".b.c.{dead}-{host}.x2.tmp", dead, host, "b.c")]
    user = cwd / f".d.{dead}-{host}.x3.tmp"
    (user / "notes.txt").parent.mkdir()
    (user / "notes.txt").write_text("mine\n")
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(cwd / "out"), "second\n"], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline() == "writing\n"
    writing = [p.name for p in cwd.iterdir() if p.name.startswith(f".probekit-{proc.pid}-")]
    try:
        assert atomic.remove_stale(cwd) == sorted(p.name for p in stale)
        holders = [p.name for p in cwd.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]
        assert holders == writing   # alive: kept
        timer = threading.Timer(0.5, proc.kill)
        timer.start()
        assert atomic.remove_stale(cwd, settle=30) == writing   # it ended within the settle time
        assert (user / "notes.txt").read_text() == "mine\n"
    finally:
        proc.kill()
        proc.wait()


def _holder(cwd: Path, pid: int, of: str = "out", tag: str = "abc12345", host: str | None = None,
            note_pid: int | None = None) -> Path:
    """A temporary folder as :func:`atomic.staging` names it (the same short name whatever the target), its note
    naming its target ``of``, holding the output being written."""
    host = host or atomic._HOST
    path = cwd / f".probekit-{pid}-{host}-{tag}.tmp"
    (path / "out").mkdir(parents=True)
    (path / atomic._NOTE).write_text(json.dumps({"written_by": "probekit", "temporary_of": of,
                                                 "pid": note_pid or pid, "host": host}) + "\n")
    return path


def test_temporary_folders_are_known_by_their_note_whatever_their_target(cwd):
    """Removed at the next write of ``out``: its own leftover, of a process of this host that is gone. Left for the
    write of its own target or a sweep: another target's. Kept: a live process's, another host's, one whose note is
    not its own (another pid; a target that is a path, not a name) and a user's folder named like one, no note."""
    dead, alive = _dead_pid(), os.getpid()
    stale, other = _holder(cwd, dead), _holder(cwd, dead, of="other", tag="x2")
    kept = [_holder(cwd, alive, tag="x3"), _holder(cwd, dead, tag="x4", host="0badc0de"),
            _holder(cwd, dead, tag="x5", note_pid=alive), _holder(cwd, dead, of="../out", tag="x6")]
    user = cwd / f".probekit-{dead}-{atomic._HOST}-x7.tmp"
    (user / "notes.txt").parent.mkdir()
    (user / "notes.txt").write_text("mine\n")
    atomic.write_json(cwd / "out", {"a": 1})
    assert not stale.exists() and other.exists() and all(p.exists() for p in kept)
    assert atomic.remove_stale(cwd) == [other.name]
    assert all(p.exists() for p in kept) and (user / "notes.txt").read_text() == "mine\n"
    assert not (cwd.parent / "out").exists()


@pytest.mark.parametrize("legacy", [False, True])
def test_an_old_folder_a_killed_writer_had_moved_aside_is_put_back_first(cwd, legacy):
    """Where the file system has no exchange rename, the old folder goes into the temporary folder before the new
    one comes in; a SIGKILL between the two left no output at the target (an older probekit did so everywhere: its
    temporary folders are named ``.<target>.<pid>-<host>.<random>.tmp``). The next write of it (or a sweep) puts
    the old folder back before anything else; once the new one is in place, the old one goes with its folder."""
    for text in ("old\n", "new\n"):
        with atomic.atomic_path(cwd / "out", kind="results") as tmp:
            tmp.mkdir()
            (tmp / "rows.jsonl").write_text(text)
        if text == "old\n":
            before, dead = listing(cwd / "out"), _dead_pid()
            holder = _leftover(cwd / f".out.{dead}-{atomic._HOST}.x1.tmp", dead, atomic._HOST) if legacy else \
                _holder(cwd, dead)
            os.rename(cwd / "out", holder / ".old")
            assert atomic.remove_stale(cwd, "out") == [holder.name]
            assert listing(cwd / "out") == before and not holder.exists()
    holder = _holder(cwd, _dead_pid())
    (holder / ".old").mkdir()
    assert atomic.remove_stale(cwd) == [holder.name] and (cwd / "out" / "rows.jsonl").read_text() == "new\n"


def test_a_file_a_killed_writer_put_in_place_is_recorded_first_and_only_those_bytes(cwd):
    """Killed between its rename and its ledger, a writer left its new file unrecorded: the next write refused it as
    changed by the user. Its temporary folder records the bytes it put in place (size and sha256); the next write
    records them first. A file whose bytes changed since is still refused."""
    from probekit.outputs.marker import digest

    atomic.write_text(cwd / "out", "old\n")
    (cwd / "new").write_text("new\n")
    pending = json.dumps(list(digest(cwd / "new")))
    os.unlink(cwd / "new")
    for text in ("new\n", "the user's\n"):
        holder = _holder(cwd, _dead_pid())
        (holder / ".pending").write_text(pending)
        (cwd / "out").write_text(text)
        if text == "new\n":
            atomic.write_text(cwd / "out", "next\n")
            assert (cwd / "out").read_text() == "next\n" and not holder.exists()
    with pytest.raises(outputs.OutputError, match="its bytes changed since probekit wrote it"):
        atomic.write_text(cwd / "out", "next\n")
    assert (cwd / "out").read_text() == "the user's\n"
