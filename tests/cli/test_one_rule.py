"""Issue 39's findings, each on its own: probekit deletes or replaces a file only if its bytes are the ones probekit
wrote there; --force never crosses a repository; outputs never overlap inputs. Each test builds the user's own layout
(a project with its .git and DVC cache, a results store, a hidden draft) and checks that every byte the user wrote is
where it was, and that the command said so in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probekit.outputs import atomic
from probes.main import main

from helpers import PAIRS, fake_result
from test_outputs_ours import tree_digest

PARAMS = "age_comparison:\n  size: {train: 6, dev: 4}\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A git + DVC project (``git init``, a ``.dvc`` with its cache and config), the user's docs/ and notes, a
    params file for small datasets; the current folder is the project."""
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".dvc" / "cache" / "files").mkdir(parents=True)
    (root / ".dvc" / "config").write_text("[core]\n    analytics = false\n")
    (root / "dvc.yaml").write_text("stages: {}\n")
    (root / "docs" / "notes.md").write_text("my notes\n")
    (root / "p.yaml").write_text(PARAMS)
    monkeypatch.chdir(root)
    return root


def generate(out, *more: str, params: str = "p.yaml") -> int:
    return main(["generate", "age_comparison", "--out", str(out), "--params", params, *more])


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


# --- data loss -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("where, target", [(".", ".git"), ("docs", "../.git"), (".", ".dvc"), (".", ".dvc/cache"),
                                           (".", ".git/objects"), (".", ".dvc/cache/files")])
def test_force_never_reaches_the_projects_own_repository(where, target, project, monkeypatch, capsys):
    """`--out .git --force` used to exit 0 and leave `git log` saying "not a git repository"; `.git` without
    --force was refused with a suggestion of --force."""
    before = tree_digest(project)
    monkeypatch.chdir(project / where)
    for more in ([], ["--force"]):
        assert generate(target, *more, params=str(project / "p.yaml")) == 2
        err = one_line(capsys)
        assert "even with --force" in err and "or --force" not in err and "give --force" not in err, err
    assert tree_digest(project) == before
    assert subprocess.run(["git", "log"], cwd=project, capture_output=True, text=True).returncode in (0, 128)
    assert "not a git repository" not in subprocess.run(["git", "status"], cwd=project, capture_output=True,
                                                        text=True).stderr


@pytest.mark.parametrize("nested", [".git", ".hg", ".dvc", ".svn"])
@pytest.mark.parametrize("depth", ["", "a/", "a/b/", "a/b/c/"])
def test_force_never_deletes_a_repository_at_any_depth(nested, depth, project, capsys):
    """The forbidden-folder check used to look one level deep: a repository two levels down was deleted."""
    mine = project / "mine"
    (mine / depth / nested).mkdir(parents=True)
    (mine / depth / nested / "HEAD").write_text("ref: refs/heads/main\n")
    (mine / "notes.txt").write_text("n\n")
    before = tree_digest(mine)
    assert generate(mine, "--force") == 2
    err = one_line(capsys)
    assert f"{depth}{nested}" in err and "even with --force" in err
    assert tree_digest(mine) == before


def test_a_git_worktree_file_is_a_repository_too(project, capsys):
    mine = project / "mine" / "sub"
    mine.mkdir(parents=True)
    (mine / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    assert generate(project / "mine", "--force") == 2 and "sub/.git" in one_line(capsys)
    assert (mine / ".git").is_file()


def test_a_dvc_cache_kept_outside_the_project_is_never_written(project, tmp_path, capsys):
    cache = tmp_path / "shared-cache"
    (cache / "files" / "md5").mkdir(parents=True)
    (cache / "files" / "md5" / "ab").write_text("object\n")
    (project / ".dvc" / "config").write_text(f"[cache]\n    dir = {cache}\n")
    for target in (cache, cache / "files"):
        assert generate(target, "--force") == 2 and "the DVC cache" in one_line(capsys)
    assert (cache / "files" / "md5" / "ab").read_text() == "object\n"


def _store(project: Path, name: str = "results/grid-x") -> Path:
    """A results store as `probes grid` leaves it (its cells fail fast: the model does not exist)."""
    data = project / "data" / "d"
    data.mkdir(parents=True, exist_ok=True)
    (project / "spec.yaml").write_text(f"protocol: zeroshot\nmodels: [nosuchmodel]\ndata: [{data}]\n")
    main(["grid", "--spec", "spec.yaml", "--out", name])
    return project / name


def test_a_store_is_not_replaced_by_another_command(project, capsys):
    """After `probes grid --out results/grid-x`, a `probes generate --out results/grid-x` without --force deleted
    every cell and the user's notes.txt."""
    store = _store(project)
    (store / "notes.txt").write_text("my notes on the grid\n")
    capsys.readouterr()
    before = tree_digest(store)
    for more in ([], ["--force"]):
        assert generate(store, *more) == 2
        assert "is a results store (probes grid), which probekit only adds to" in one_line(capsys)
    assert tree_digest(store) == before
    _store(project)   # the grid itself adds to it, and keeps the notes
    assert (store / "notes.txt").read_text() == "my notes on the grid\n"
    assert json.loads((store / ".probekit.json").read_text())["kind"] == "store"


def test_a_store_is_started_only_in_a_new_or_empty_folder(project, capsys):
    """`probes grid --out results --force` made results/ a store, after which a plain `--out results` deleted the
    committed result files."""
    results = project / "results"
    results.mkdir()
    for name in ("report.md", "metrics.json"):
        (results / name).write_text(f"committed {name}\n")
    before = tree_digest(results)
    (project / "spec.yaml").write_text("protocol: zeroshot\nmodels: [m]\ndata: [d]\n")
    for more in ([], ["--force"]):
        assert main(["grid", "--spec", "spec.yaml", "--out", "results", *more]) == 2
        assert "a results store is started only in a new or empty folder" in one_line(capsys)
    assert generate("results") == 2 and "which probekit did not write" in one_line(capsys)
    assert tree_digest(results) == before


def test_a_folder_shaped_like_a_store_is_the_users(project, capsys):
    mine = project / "thesis"
    (mine / "cells").mkdir(parents=True)
    (mine / "summary.jsonl").write_text("")
    (mine / "thesis.tex").write_text("\\documentclass{article}\n")
    before = tree_digest(mine)
    assert generate(mine) == 2 and "thesis.tex" in one_line(capsys)
    assert tree_digest(mine) == before


@pytest.mark.parametrize("name", [".draft.md.tmp", ".notes.old-1", f".gen.old-{2 ** 22 + 7}", ".gen.abc.tmp",
                                  f".gen.{2 ** 22 + 7}-{'0' * 8}.x.tmp", ".gen.123-abcdef01.old"])
def test_a_users_hidden_file_named_like_a_temporary_is_kept(name, project, capsys):
    """Inside an output folder of ours (where the walk used to skip such names, so the folder's replacement deleted
    them) and beside it, untouched for hours (where the next write used to remove them as stale)."""
    out = project / "gen"
    assert generate(out) == 0
    inside, beside = out / "original" / name, project / name
    for path in (inside, beside):
        path.write_text("my draft\n")
        hours_ago = time.time() - 5 * 3600
        os.utime(path, (hours_ago, hours_ago))
    capsys.readouterr()
    assert generate(out) == 2 and f"original/{name}" in one_line(capsys)   # refused, before any work
    inside.unlink()
    assert generate(out) == 0
    assert beside.read_text() == "my draft\n"


def test_a_dataset_is_not_replaced_by_results(project, capsys):
    """`probes evaluate zeroshot … --out data/probes/always_never` replaced a dataset with predictions, without
    --force: the marker did not say what kind of command wrote a folder."""
    assert generate("data/probes/always_never") == 0 and generate("data/probes/age_comparison") == 0
    before = tree_digest(project / "data")
    capsys.readouterr()
    assert main(["evaluate", "zeroshot", "--model", "m", "--data", "data/probes/age_comparison", "--out",
                 "data/probes/always_never"]) == 2
    err = one_line(capsys)
    assert "is a dataset (probes generate), and this command writes results" in err and "--force" in err
    assert main(["evaluate", "zeroshot", "--model", "m", "--data", "data/probes/always_never", "--out",
                 "data/probes/always_never", "--force"]) == 2   # the input itself: never, --force or not
    assert "which the command reads" in one_line(capsys)
    assert tree_digest(project / "data") == before


def test_diff_never_writes_over_the_file_it_compares(project, capsys):
    """`probes diff … --examples data/probes/age_comparison/original/dev.jsonl` wrote over the file it compared."""
    assert generate("data/probes/age_comparison") == 0 and generate("old/age_comparison") == 0
    before = tree_digest(project / "data")
    capsys.readouterr()
    for flag, name in (("--examples", "original/dev.jsonl"), ("--json", "x.json")):
        for more in ([], ["--force"]):
            assert main(["diff", "data/probes/age_comparison", "--old", "old/age_comparison", "--new",
                         "data/probes/age_comparison", flag, f"data/probes/age_comparison/{name}", *more]) == 2
            err = one_line(capsys)
            overlap = f"{flag} data/probes/age_comparison/{name}: is inside PATH data/probes/age_comparison"
            assert overlap in err or (not more and "is a file of a dataset (probes generate)" in err), err
    assert tree_digest(project / "data") == before


def test_a_report_replaces_only_a_file_probekit_wrote(project, capsys):
    """The same rule for a file output: a user's README is never written over; a report probekit wrote is replaced
    on the next run; one edited since is refused; --force replaces it, saying so."""
    fake_result(project / "results" / "zeroshot", project / "data", "m", "original", True, PAIRS, lambda a, b: "A")
    (project / "README.md").write_text("# my project\n")
    assert main(["report", "results/zeroshot", "--out", "README.md"]) == 2
    assert "README.md: exists, and probekit did not write it" in one_line(capsys)
    assert (project / "README.md").read_text() == "# my project\n"
    assert main(["report", "results/zeroshot", "--out", "report.md"]) == 0
    assert main(["report", "results/zeroshot", "--out", "report.md"]) == 0   # ours: replaced
    (project / "report.md").write_text((project / "report.md").read_text() + "my comment\n")
    capsys.readouterr()
    assert main(["report", "results/zeroshot", "--out", "report.md"]) == 2
    assert "its bytes changed since probekit wrote it" in one_line(capsys)
    assert main(["report", "results/zeroshot", "--out", "report.md", "--force"]) == 0
    assert "replacing it deletes the file" in capsys.readouterr().err
    assert "my comment" not in (project / "report.md").read_text()


# --- silent wrong, internal and late ---------------------------------------------------------------------------

def test_a_home_path_the_shell_did_not_expand_is_refused(project, capsys):
    """`--out=~/age` was checked as $HOME/age but written as ./~/age."""
    assert main(["generate", "age_comparison", "--out=~/age", "--params", "p.yaml"]) == 2
    assert "starts with '~', which the shell did not expand" in one_line(capsys)
    assert not (project / "~").exists()


@pytest.mark.parametrize("marker", ['{"written_by": "probekit", "entries": 5}',
                                    '{"written_by": "probekit", "entries": [1, 2]}',
                                    '{"written_by": "probekit", "marker": 2, "kind": "dataset", "files": []}',
                                    '{"written_by": "probekit", "marker": 2, "kind": "nope", "files": {}}',
                                    "not json {", '["written_by"]'])
def test_a_malformed_marker_is_one_line(marker, project, capsys):
    """A marker whose `entries` is not a list of strings gave `TypeError`."""
    out = project / "gen"
    assert generate(out) == 0
    (out / ".probekit.json").write_text(marker)
    before = tree_digest(out)
    capsys.readouterr()
    assert generate(out) == 2
    err = one_line(capsys)
    assert "internal error" not in err and ".probekit.json" in err and "not a probekit marker" in err
    assert tree_digest(out) == before


def test_force_replaces_a_link_not_what_it_points_to_and_says_so_first(project, tmp_path, capsys):
    """`--out LINK --force` failed after all the work with a raw `[Errno 20]`, where the docs say it replaces the
    link."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("keep\n")
    (project / "link").symlink_to(target)
    assert generate("link") == 2 and "is a symbolic link" in one_line(capsys)
    assert generate("link", "--force") == 0
    assert "replacing it deletes the link" in capsys.readouterr().err
    assert (project / "link").is_dir() and not (project / "link").is_symlink()
    assert (project / "link" / "original" / "dev.jsonl").is_file() and (target / "keep.txt").read_text() == "keep\n"


def test_force_says_what_it_deletes_before_replacing(project, capsys):
    mine = project / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "notes.txt").write_text("n" * 1500)
    (mine / "sub" / "x.bin").write_bytes(b"\0" * 500)
    assert generate(mine, "--force") == 0
    err = capsys.readouterr().err
    assert "--force: --out" in err and "deletes 2 file(s) (notes.txt, sub/x.bin), 2.0 kB" in err
    assert "2 of them not written by probekit" in err


def test_the_legacy_temp_names_and_dead_writers_leave_nothing_of_theirs_behind(project):
    """A writer killed mid-write leaves its temporary folder, with probekit's note; the next write of the same target
    removes it, and nothing else."""
    script = ("import sys, time\nfrom probekit.outputs import atomic\n"
              "with atomic.atomic_path(sys.argv[1], kind='results') as tmp:\n"
              "    tmp.mkdir()\n    (tmp / 'x').write_text('x')\n    print('writing', flush=True)\n"
              "    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(project / "out")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "writing\n"
    proc.kill()
    proc.wait()
    left = [p for p in project.iterdir() if p.name.startswith(".probekit-") and p.name.endswith(".tmp")]
    assert len(left) == 1 and (left[0] / ".probekit-temporary.json").is_file()
    (project / ".out.mine.tmp").write_text("mine\n")
    atomic.write_text(project / "out", "done\n")
    assert not left[0].exists() and (project / ".out.mine.tmp").read_text() == "mine\n"


def test_a_store_an_older_probekit_wrote_is_added_to_and_pruned_where_dvc_lock_records_it(project, capsys):
    """The upgrade of a workspace: the grid stage's store (persisted) holds an older probekit's marker, cells without
    markers and a summary; dvc.lock records their bytes, so the grid prunes the old cells and replaces its summary,
    and keeps a file of the user's. (A first run of the new code stopped there: the summary is a file of the store.)"""
    from helpers import dvc_env

    store = project / "results" / "grid"
    (store / "cells" / "oldkey" / "result").mkdir(parents=True)
    (store / "cells" / "oldkey" / "cell.json").write_text('{"key": "oldkey"}\n')
    (store / "cells" / "oldkey" / "result" / "metrics.json").write_text("{}\n")
    (store / "summary.jsonl").write_text('{"key": "oldkey"}\n')
    (store / ".probekit.json").write_text(json.dumps({"written_by": "probekit", "store": "grid"}) + "\n")
    (project / "dvc.yaml").write_text("stages:\n  grid:\n    cmd: probes grid --spec spec.yaml --out results/grid\n"
                                      "    outs:\n    - results/grid:\n        persist: true\n")
    dvc = str(Path(sys.executable).parent / "dvc")
    subprocess.run([dvc, "commit", "--force", "-q"], cwd=project, check=True, env=dvc_env())
    (store / "cells" / "mine.txt").write_text("mine\n")   # after the lock: the user's
    data = project / "data" / "d"
    data.mkdir(parents=True)
    (project / "spec.yaml").write_text(f"protocol: zeroshot\nmodels: [nosuchmodel]\ndata: [{data}]\n")
    capsys.readouterr()
    assert main(["grid", "--spec", "spec.yaml", "--out", "results/grid", "--prune"]) == 1   # its cell fails
    assert "pruned 1 stored cell(s)" in capsys.readouterr().out
    assert not (store / "cells" / "oldkey").exists() and (store / "cells" / "mine.txt").read_text() == "mine\n"
    assert "oldkey" not in (store / "summary.jsonl").read_text()
