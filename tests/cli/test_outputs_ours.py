"""A folder output is ours or refused: no `probes` command writes into, or replaces, the current folder, the project,
the home folder, a repository or a folder holding one of them (not even with --force), nor a folder of someone
else's (unless --force); each refusal is one line before any work, and leaves every byte as it was."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from probekit import outputs
from probes.main import main

# Every command with a folder output; {out}: the folder under test, {data}: an existing folder, {tmp}: the test's
# folder. Each reaches its output check before any other work.
COMMANDS = [
    ["generate", "age_comparison", "--out", "{out}"],
    ["tables", "conceptnet", "--out", "{out}"],
    ["evaluate", "zeroshot", "--model", "m", "--data", "{data}", "--out", "{out}"],
    ["evaluate", "features", "--model", "m", "--data", "{data}", "--out", "{out}"],
    ["evaluate", "curve", "--model", "m", "--setting", "mlp", "--data", "{data}", "--out", "{out}"],
    ["evaluate", "curve", "--model", "m", "--setting", "mlp", "--data", "{data}", "--out", "{tmp}/o", "--features",
     "{out}"],
    ["evaluate", "mcqa", "--model", "m", "--data", "{data}", "--out", "{out}"],
    ["evaluate", "pararel", "--model", "m", "--data", "{data}", "--out", "{out}"],
    ["train", "consistency", "--model", "m", "--data", "{data}", "--out", "{out}"],
    ["evaluate", "calum", "--model", "m", "--task", "rte", "--out", "{out}"],
    ["report", "{data}", "--out", "{tmp}/r.md", "--heatmaps", "{out}"],
    ["olmpics-report", "{data}", "--out", "{tmp}/r.md", "--plots", "{out}"],
    ["grid", "--spec", "{tmp}/s.yaml", "--out", "{out}"],
    ["publish", "--dry-run", "{out}"],
    ["export", "lm-eval", "--data", "{data}", "--out", "{out}"],
]
IDS = [" ".join(c[:2]) + (" --features" if "--features" in c else "") for c in COMMANDS]

# (target as typed, from the current folder `proj/work`; what the refusal says)
FORBIDDEN = [
    (".", "is the current folder"),
    ("./", "is the current folder"),
    ("{work}", "is the current folder"),
    ("{work}/./", "is the current folder"),
    ("sub/..", "is the current folder"),
    ("../work", "is the current folder"),
    ("here", "is the current folder"),            # a link to it
    ("/proc/self/cwd", "is the current folder"),  # the kernel's link to it
    ("..", "is the project"),                      # proj/ holds dvc.yaml
    ("../..", "holds the current folder"),
    ("~", "starts with '~', which the shell did not expand"),   # probekit would write ./~
    ("/", "is the root folder"),
    ("{tmp}/repo", "is a repository (it holds .git)"),
    ("{tmp}/homes", "holds the home folder"),
]


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links not followed): a file's sha256, a folder's or link's kind."""
    digest = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            if path.is_symlink():
                digest[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                digest[rel] = "dir"
            else:
                digest[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


@pytest.fixture
def world(tmp_path, monkeypatch):
    """``proj/`` (a project: dvc.yaml) with ``work/`` (the current folder: a file, a folder, a hidden file), a link
    to it, a repository beside, a home folder; ``data/`` an input folder, ``s.yaml`` a grid spec."""
    work = tmp_path / "proj" / "work"
    (work / "sub").mkdir(parents=True)
    (work / "keep.txt").write_text("keep\n")
    (work / "sub" / "x.bin").write_bytes(b"\x00\x01")
    (work / ".hidden").write_text("h\n")
    (tmp_path / "proj" / "dvc.yaml").write_text("stages: {}\n")
    (work / "here").symlink_to(work)
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "homes" / "me").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "s.yaml").write_text("protocol: zeroshot\nmodels: [m]\ndata: [d]\n")
    monkeypatch.setenv("HOME", str(tmp_path / "homes" / "me"))
    monkeypatch.chdir(work)
    return tmp_path


def argv_of(command, tmp_path: Path, out: str) -> list[str]:
    values = {"tmp": str(tmp_path), "data": str(tmp_path / "data"), "work": str(tmp_path / "proj" / "work")}
    out = out.format(**values)
    return [a.format(out=out, **values) if "{" in a else a for a in command]


@pytest.mark.parametrize("force", [False, True], ids=["", "--force"])
@pytest.mark.parametrize("target, why", FORBIDDEN, ids=[t for t, _ in FORBIDDEN])
@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_forbidden_output_folder_is_refused_and_left_byte_identical(command, target, why, force, world, capsys):
    before = tree_digest(world)   # everything the test made (links not followed)
    argv = argv_of(command, world, target) + (["--force"] if force else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    flag = command[command.index("{out}") - 1]
    assert err.count("\n") == 1 and f"{flag} " in err and why in err and "even with --force" in err, err
    assert tree_digest(world) == before


def test_an_empty_or_unset_output_is_refused(world, capsys):
    before = tree_digest(world)
    for command in COMMANDS:
        assert main(argv_of(command, world, "")) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is empty: give a folder (an unset shell variable?)" in err, err
    assert tree_digest(world) == before


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_folder_of_someone_elses_is_refused(command, world, capsys):
    mine = world / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "notes.txt").write_text("my notes\n")
    before = tree_digest(world)
    assert main(argv_of(command, world, str(mine))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{mine}: holds notes.txt, sub/, which probekit did not write" in err, err
    # --force is suggested where it would be allowed: never to start a results store in a folder of someone else's
    assert ("--force does not apply" if command[0] == "grid" else "or give --force") in err
    assert tree_digest(world) == before


PARAMS = "age_comparison:\n  size: {train: 6, dev: 4}\n"


def generate(world: Path, out: Path, *more: str) -> int:
    (world / "p.yaml").write_text(PARAMS)
    return main(["generate", "age_comparison", "--out", str(out), "--params", str(world / "p.yaml"), *more])


def test_our_folder_is_replaced_byte_identical_and_an_added_file_is_kept(world, capsys):
    out = world / "gen"
    assert generate(world, out) == 0
    marker = json.loads((out / ".probekit.json").read_text())
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != ".probekit.json")
    assert marker["written_by"] == "probekit" and marker["kind"] == "dataset" and sorted(marker["files"]) == files
    assert all(marker["files"][f] == {"size": (out / f).stat().st_size,
                                      "sha256": hashlib.sha256((out / f).read_bytes()).hexdigest()} for f in files)
    first = tree_digest(out)
    assert generate(world, out) == 0 and tree_digest(out) == first     # a re-run: the same bytes, marker included
    (out / "original" / "notes.txt").write_text("mine\n")
    capsys.readouterr()
    assert generate(world, out) == 2
    err = capsys.readouterr().err
    assert "holds original/notes.txt, which probekit did not write" in err
    assert (out / "original" / "notes.txt").read_text() == "mine\n"
    assert generate(world, out, "--force") == 0
    assert tree_digest(out) == first


def test_force_replaces_a_folder_of_someone_elses(world):
    out = world / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("old\n")
    assert generate(world, out, "--force") == 0
    assert not (out / "notes.txt").exists() and (out / "original" / "dev.jsonl").is_file()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".mine.")]   # no temporary left beside it
    (out / "notes.txt").write_text("again\n")   # --force held for that command only
    with pytest.raises(outputs.OutputError, match="holds notes.txt"):
        outputs.check_replace(out, "dataset")


def test_a_dataset_folder_written_before_markers_is_ours_only_where_dvc_lock_records_its_bytes(world, capsys):
    """A DVC stage keeps (persists) a generated dataset between runs. One an earlier probekit wrote (no marker, or an
    older marker that proves no bytes) counts as ours only when the project's dvc.lock records its bytes as that
    stage's output (checked against the DVC cache's listing of the folder); any file of someone else's in it, or a
    changed byte, and it is not."""
    import subprocess
    import sys

    from helpers import dvc_env

    project = world / "proj"
    out = project / "gen"
    assert generate(world, out) == 0
    (out / ".probekit.json").write_text(json.dumps({"written_by": "probekit", "entries": ["original/"]}) + "\n")
    (project / "dvc.yaml").write_text("stages:\n  gen:\n    cmd: probes generate age_comparison --out gen\n"
                                      "    outs: [gen]\n")
    env, dvc = dvc_env(), str(Path(sys.executable).parent / "dvc")
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=project, check=True, env=env)
    subprocess.run([dvc, "commit", "--force", "-q"], cwd=project, check=True, env=env)   # dvc.lock and the cache
    digest = tree_digest(out)
    assert outputs.not_ours(out) == [] and outputs.inventory(out).kinds == {"dataset"}
    (out / "original" / "dev.jsonl").write_bytes(b"edited\n")   # a byte the lock does not record
    assert outputs.not_ours(out) == ["original/dev.jsonl"]
    capsys.readouterr()
    assert generate(world, out) == 2 and "holds original/dev.jsonl, which probekit did not write" in \
        capsys.readouterr().err
    (out / "original" / "dev.jsonl").unlink()
    (out / "original" / "notes.txt").write_text("mine\n")
    assert generate(world, out) == 2 and (out / "original" / "notes.txt").is_file()
    (out / "original" / "notes.txt").unlink()
    subprocess.run([dvc, "checkout", "--force", "-q"], cwd=project, check=True, env=env)
    assert tree_digest(out) == digest and generate(world, out) == 0   # as the lock records it: replaced
    assert json.loads((out / ".probekit.json").read_text())["kind"] == "dataset"


def test_the_refusal_comes_before_any_work(world, monkeypatch, capsys):
    """Nothing is read or loaded for a refused output: the generator is never called."""
    from generators.shared import registry as generators

    monkeypatch.setattr(generators.Generator, "generate", lambda *a: pytest.fail("the generator was reached"))
    (world / "mine").mkdir()
    (world / "mine" / "notes.txt").write_text("n\n")
    assert generate(world, world / "mine") == 2
    assert main(["generate", "age_comparison", "--out", "."]) == 2


def test_an_unwritable_output_is_refused_before_any_work(world, monkeypatch, capsys):
    """A read-only or full file system, or a folder this user may not write in, fails at once, naming the folder
    (not as a raw [Errno ...] after the model load)."""
    from generators.shared import registry as generators

    monkeypatch.setattr(generators.Generator, "generate", lambda *a: pytest.fail("the generator was reached"))
    real_statvfs = os.statvfs

    class ReadOnly:
        def __init__(self, real):
            self.f_flag, self.f_bavail, self.f_frsize = real.f_flag | os.ST_RDONLY, real.f_bavail, real.f_frsize

    class Full(ReadOnly):
        def __init__(self, real):
            super().__init__(real)
            self.f_flag, self.f_bavail = real.f_flag & ~os.ST_RDONLY, 0

    for fake, words in ((ReadOnly, "the file system is read-only"), (Full, "the disk is full")):
        monkeypatch.setattr(os, "statvfs", lambda p, fake=fake: fake(real_statvfs(p)))
        assert main(["generate", "age_comparison", "--out", str(world / "new" / "g")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--out {world / 'new' / 'g'}: cannot write in {world}: {words}" in err, err
    monkeypatch.setattr(os, "statvfs", real_statvfs)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert main(["generate", "age_comparison", "--out", str(world / "g")]) == 2
    assert "permission denied" in capsys.readouterr().err
    assert not (world / "new").exists() and not (world / "g").exists()


def test_a_full_disk_during_the_write_names_the_output_and_leaves_nothing(world, monkeypatch, capsys):
    import errno

    real = Path.write_text

    def full(self, *args, **kwargs):
        if self.name == "train.jsonl":
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *args, **kwargs)

    out = world / "gen"
    assert generate(world, out) == 0
    before = tree_digest(world)
    capsys.readouterr()
    monkeypatch.setattr(Path, "write_text", full)
    assert generate(world, out) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err and "[Errno" not in err, err
    assert f"probes generate: error: {out}: cannot write it: the disk is full (no space left on the device)" in err
    assert tree_digest(world) == before   # the last dataset in place, no temporary folder left


def test_a_store_is_only_added_to_and_a_folder_shaped_like_one_is_not_ours(world, capsys):
    """A folder with cells/ and a summary is not a store unless a marker says so: its files are the user's. A store
    is only ever added to: no other command replaces it, even with --force, and the files of someone else's in it are
    kept."""
    store = world / "store"
    (store / "cells").mkdir(parents=True)
    (store / "summary.jsonl").write_text("")
    (store / "thesis.tex").write_text("my thesis\n")
    assert outputs.not_ours(store) == ["cells/", "summary.jsonl", "thesis.tex"]
    assert generate(world, store) == 2 and "holds cells/, summary.jsonl, thesis.tex" in capsys.readouterr().err
    store = world / "store2"
    outputs.mark_store(store)
    (store / "thesis.tex").write_text("my thesis\n")
    assert json.loads((store / ".probekit.json").read_text())["kind"] == "store"
    for more in ([], ["--force"]):
        assert generate(world, store, *more) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is a results store (probes grid), which probekit only adds to" in err, err
    assert (store / "thesis.tex").read_text() == "my thesis\n"
