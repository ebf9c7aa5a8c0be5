"""Issue 51, items 3, 4 and 8 in the user's layouts: what DVC recorded is probekit's only when a ``probes`` command of
its stage wrote it; repositories, DVC's caches, Python's installs and mount points are known by what they are; and
only regular files and folders are ever opened or replaced (a FIFO never blocks a command). Every refusal leaves the
user's bytes as they were."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from probekit import outputs
from probekit.errors import UsageError
from probes.main import main

from helpers import PAIRS, dvc_env, fake_result
from test_outputs_ours import tree_digest

PARAMS = "age_comparison:\n  size: {train: 6, dev: 4}\n"
DVC = str(Path(sys.executable).parent / "dvc")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A DVC project (``dvc init --no-scm``), a params file for small datasets, two generated datasets; the current
    folder is the project."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "p.yaml").write_text(PARAMS)
    monkeypatch.chdir(root)
    subprocess.run([DVC, "init", "--no-scm", "-q"], cwd=root, check=True, env=dvc_env())
    return root


def generate(out, *more: str) -> int:
    return main(["generate", "age_comparison", "--out", str(out), "--params", "p.yaml", *more])


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


# --- item 3: a user's own DVC stage's outputs are the user's ------------------------------------------------------

USER_STAGE = """\
stages:
  metrics:
    cmd: python make.py
    outs:
    - U/metrics.json
    - U/figs
  heatmaps:
    cmd: probes report results/zeroshot --out r.md --heatmaps P/figs
    outs:
    - P/figs
"""


def test_a_users_own_dvc_stage_outputs_are_not_replaced_without_force(project, capsys):
    """`probes diff --json U/metrics.json` and `probes report --heatmaps U/figs` replaced the outputs of the user's
    own stage (`python make.py`), without --force, because dvc.lock recorded their bytes; a probekit stage's output
    (`probes report … --heatmaps P/figs`) is still probekit's."""
    assert generate("data/a") == 0 and generate("old/a") == 0
    fake_result(project / "results" / "zeroshot", project / "data", "m", "original", True, PAIRS, lambda a, b: "A")
    for folder in ("U/figs", "P/figs"):
        (project / folder).mkdir(parents=True)
        (project / folder / "m.png").write_bytes(b"\x89PNG my figure\n")
    (project / "U" / "metrics.json").write_text('{"accuracy": 0.91}\n')
    (project / "dvc.yaml").write_text(USER_STAGE)
    subprocess.run([DVC, "commit", "--force", "-q"], cwd=project, check=True, env=dvc_env())
    assert "U/metrics.json" in (project / "dvc.lock").read_text()
    before = tree_digest(project / "U")
    capsys.readouterr()
    assert main(["diff", "data/a", "--old", "old/a", "--new", "data/a", "--json", "U/metrics.json"]) == 2
    assert "U/metrics.json: exists, and probekit did not write it" in one_line(capsys)
    assert main(["report", "results/zeroshot", "--out", "r.md", "--heatmaps", "U/figs"]) == 2
    assert "--heatmaps U/figs: holds m.png, which probekit did not write" in one_line(capsys)
    assert tree_digest(project / "U") == before
    assert outputs.inventory(project / "P" / "figs").kinds == {"figures"} and not outputs.not_ours(project / "P/figs")


# --- item 4: repositories, caches, installs and mount points by what they are -----------------------------------

def test_a_bare_repository_is_never_replaced_nor_written_into(project, capsys):
    """`--force` deleted `thesis.git`, a bare repository (no `.git` in it): it is known by its HEAD, objects/ and
    refs/, as the output itself, inside a folder replaced, and as a folder holding the output."""
    mine = project / "mine"
    mine.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(mine / "thesis.git")], check=True)
    before = tree_digest(mine)
    for target, words in ((mine, "holds a repository (thesis.git/)"),
                          (mine / "thesis.git", "is a bare git repository (HEAD, objects/, refs/)"),
                          (mine / "thesis.git" / "objects" / "gen", "is inside a repository")):
        assert generate(target, "--force") == 2
        err = one_line(capsys)
        assert words in err and "even with --force" in err, err
    assert tree_digest(mine) == before


@pytest.mark.parametrize("name", [".bzr", ".jj", "_darcs", ".pijul", "_FOSSIL_", ".fslckout"])
@pytest.mark.parametrize("depth", ["", "a/b/"])
def test_other_version_control_systems_are_repositories_too(name, depth, project, capsys):
    mine = project / "mine"
    made = mine / depth / name
    if name.startswith("_F") or name == ".fslckout":
        made.parent.mkdir(parents=True)
        made.write_bytes(b"SQLite format 3\x00checkout")
    else:
        (made / "repo").mkdir(parents=True)
        (made / "repo" / "store").write_text("history\n")
    (mine / "notes.txt").write_text("n\n")
    before = tree_digest(mine)
    assert generate(mine, "--force") == 2
    err = one_line(capsys)
    assert f"{depth}{name}" in err and "even with --force" in err, err
    assert tree_digest(mine) == before


def test_a_fossil_repository_file_is_a_repository(project, capsys):
    """A Fossil repository is one SQLite file (`thesis.fossil`): never replaced, nor a folder holding it; a file of
    that name that is not SQLite is an ordinary file."""
    mine = project / "mine"
    mine.mkdir()
    db = sqlite3.connect(mine / "thesis.fossil")
    db.execute("create table blob (rid integer primary key, content blob)")
    db.commit()
    db.close()
    before = tree_digest(mine)
    assert generate(mine, "--force") == 2 and "holds a repository (thesis.fossil)" in one_line(capsys)
    with pytest.raises(UsageError, match="is a repository .a Fossil repository file."):
        outputs.claim_file(mine / "thesis.fossil", "--json", force=True)
    assert tree_digest(mine) == before
    (project / "other.fossil").write_text("not a repository\n")
    assert outputs.claim_file(project / "other.fossil", "--json", force=True)


@pytest.mark.parametrize("level", ["global", "system"])
def test_a_dvc_cache_set_in_the_users_global_or_system_config_is_never_written(level, project, tmp_path, monkeypatch,
                                                                               capsys):
    """`cache.dir` set in the user's global DVC config (not the project's): `--force` deleted the cache. DVC reads
    every level (DVC_GLOBAL_CONFIG_DIR, DVC_SYSTEM_CONFIG_DIR), and so does probekit; a relative path is from the
    config's own folder, as DVC resolves it."""
    conf = tmp_path / f"dvc-{level}"
    conf.mkdir()
    (conf / "config").write_text("[core]\n    analytics = false\n[cache]\n    dir = ../shared-cache\n")
    monkeypatch.setenv(f"DVC_{level.upper()}_CONFIG_DIR", str(conf))
    cache = tmp_path / "shared-cache"
    (cache / "files" / "md5" / "ab").mkdir(parents=True)
    (cache / "files" / "md5" / "ab" / "cdef").write_text("object\n")
    from dvc.config import Config   # what DVC itself takes as this project's cache

    assert Path(Config(dvc_dir=str(project / ".dvc"))["cache"]["dir"]) == cache
    assert outputs.legacy.cache_dir(project) == cache
    for target in (cache, cache / "files"):
        assert generate(target, "--force") == 2
        err = one_line(capsys)
        assert "the DVC cache set in the" in err and "even with --force" in err, err
    assert (cache / "files" / "md5" / "ab" / "cdef").read_text() == "object\n"


def test_dvcs_site_cache_and_a_local_remote_are_never_written(project, tmp_path, monkeypatch, capsys):
    site_cache = tmp_path / "site-cache"
    (site_cache / "repo").mkdir(parents=True)
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", str(site_cache))
    remote = tmp_path / "storage"
    (remote / "files").mkdir(parents=True)
    (project / ".dvc" / "config").write_text(f"['remote \"store\"']\n    url = {remote}\n")
    for target, words in ((site_cache, "DVC's site cache"), (remote, "a DVC remote")):
        assert generate(target, "--force") == 2 and words in one_line(capsys)
    assert (site_cache / "repo").is_dir() and (remote / "files").is_dir()


@pytest.mark.parametrize("where", ["base_prefix", "base_prefix/lib", "prefix/bin", "site-packages",
                                   "site-packages/pkg"])
def test_pythons_installs_are_never_replaced(where, project):
    """`--force --out <sys.base_prefix>` deleted the venv's base interpreter. Checked by the claim alone (which
    deletes nothing), so a failure here costs no install."""
    import site

    name, _, sub = where.partition("/")
    base = Path(site.getsitepackages()[0]) if name == "site-packages" else Path(getattr(sys, name))
    target = base / sub if sub else base
    with pytest.raises(UsageError, match="Python environment|site-packages"):
        outputs.claim(target, kind="dataset", force=True)
    with pytest.raises(UsageError, match="Python environment|site-packages"):   # a file in its install folders
        outputs.claim_file((target if sub or name == "site-packages" else base / "lib") / "x.json", "--json",
                           force=True)


def test_a_mount_point_is_a_boundary(project, monkeypatch, capsys):
    """A mount point is never replaced, and a folder holding one is never replaced nor walked into, --force or not
    (a bind mount of the user's data into the output folder)."""
    from probekit.outputs import ownership

    if os.path.ismount("/proc"):
        assert outputs.forbidden(Path("/proc")) == "is a mount point, which probekit never replaces"
    mine = project / "mine"
    (mine / "data").mkdir(parents=True)
    (mine / "data" / "big.bin").write_bytes(b"\0" * 10)
    real = ownership.mount_points
    monkeypatch.setattr(ownership, "mount_points", lambda: real() | {str((mine / "data").resolve())})
    assert outputs.inventory(mine).mounts == ["data/"] and outputs.inventory(mine).files == []
    before = tree_digest(mine)
    assert generate(mine, "--force") == 2
    assert "holds a mount point (data/), which probekit never replaces nor walks into" in one_line(capsys)
    assert generate(mine / "data", "--force") == 2 and "is a mount point" in one_line(capsys)
    assert tree_digest(mine) == before


# --- item 8: only regular files are opened or replaced ------------------------------------------------------------

def unblocked(check, fifo: Path):
    """``check()``'s result; a test failure when it blocks on ``fifo`` (it is then released: the FIFO is opened for
    writing and closed, so the read ends)."""
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", check()), daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
        pytest.fail(f"blocked reading the FIFO {fifo}")
    return result.get("value")


@pytest.mark.parametrize("where", ["recorded", "ledger", "marker"])
def test_a_fifo_where_an_output_goes_never_blocks_and_is_never_replaced(where, project, capsys):
    """A FIFO in a folder dvc.lock records, or named as a file a ledger or marker records, blocked the command
    forever (the ownership check opened it to hash it); with --force it was deleted."""
    gen = project / "gen"
    assert generate(gen) == 0
    fifo = gen / "original" / ("pipe.jsonl" if where != "marker" else "dev.jsonl")
    if where == "recorded":
        (project / "dvc.yaml").write_text("stages:\n  gen:\n    cmd: probes generate age_comparison --out gen\n"
                                          "    outs: [gen]\n")
        (gen / "original" / "pipe.jsonl").write_text("")
        subprocess.run([DVC, "commit", "--force", "-q"], cwd=project, check=True, env=dvc_env())
        (gen / "original" / "pipe.jsonl").unlink()
    elif where == "ledger":
        (gen / "original" / "pipe.jsonl").write_text("")
        outputs.record_loose(gen / "original" / "pipe.jsonl")
        (gen / "original" / "pipe.jsonl").unlink()
    else:
        (gen / "original" / "dev.jsonl").unlink()
    os.mkfifo(fifo)
    capsys.readouterr()
    for more in ([], ["--force"]):
        assert unblocked(lambda: generate(gen, *more), fifo) == 2
        err = one_line(capsys)
        assert "a FIFO (named pipe)" in err and "only regular files and folders" in err, err
    assert fifo.exists() and outputs.non_regular(fifo) == "is a FIFO (named pipe)"


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/null", "marker"])
def test_a_file_output_that_is_not_a_regular_file_is_refused_even_with_force(kind, project, capsys):
    """`--json null.json` where null.json is a FIFO or a link to a character device: refused, --force or not, at
    once; a FIFO named .probekit.json in an output folder is one line, not a hang."""
    assert generate("data/a") == 0 and generate("old/a") == 0
    target = project / ("null.json" if kind != "marker" else "gen/.probekit.json")
    target.parent.mkdir(exist_ok=True)
    if kind == "link to /dev/null":
        target.symlink_to("/dev/null")
    else:
        os.mkfifo(target)
    capsys.readouterr()
    if kind == "marker":
        assert unblocked(lambda: generate("gen", "--force"), target) == 2
        assert "holds .probekit.json (a FIFO (named pipe))" in one_line(capsys)
    else:
        for more in ([], ["--force"]):
            argv = ["diff", "data/a", "--old", "old/a", "--new", "data/a", "--json", "null.json", *more]
            assert unblocked(lambda: main(argv), target) == 2
            err = one_line(capsys)
            assert "--json null.json: is a" in err and "only regular files and folders" in err, err
    assert os.path.lexists(target) and outputs.non_regular(target)
