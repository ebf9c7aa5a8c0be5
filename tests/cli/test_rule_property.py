"""The one rule, as a property (Hypothesis): whatever the user's tree holds and whatever output path a command gets,
every byte of every file probekit did not write is unchanged, and the command either succeeds or says why in one
line. With --force, only what lies under the output path may go, and never a repository.

A world is a project (git and DVC, a params file, a generated dataset and results to read) with a random tree of the
user's own under ``w/``: files, folders, nested repositories, hidden and temporary-looking names, links (to the
project, to its .git, outside, nowhere), forged and malformed markers and ledgers, optionally on top of a folder
probekit generated. An output path is one of its entries or a new name, written relative, absolute, through ``..``,
with ``~``, a trailing ``/.``, or through a link; every command with a folder output, and two with a file output,
run in-process."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probes.main import main

from helpers import PAIRS, fake_result

NAMES = ["notes.txt", ".hidden", ".draft.md.tmp", ".notes.old-1", ".gen.abc.tmp", ".gen.1-00000000.old", "dev.jsonl",
         "meta.json", "README.md", "summary.jsonl", ".probekit.json", ".probekit-files.json", ".git", ".hg", ".dvc",
         "thesis.tex"]
PLACES = ["", "", "gen/", "gen/original/", "a/", "a/b/", "a/b/c/", "cells/", "new/"]
KINDS = ["file", "file", "file", "dir", "link-project", "link-git", "link-outside", "link-dangling", "marker-v1",
         "marker-v2-wrong", "marker-bad", "ledger-forged"]
TARGETS = ["new", "gen", "gen", "gen/original", "gen/original/dev.jsonl", "a", "a", "a/b", "notes.txt", ".git",
           "cells", "../.git", "../.dvc", "../.dvc/cache", "../data/probes/age_comparison", "../results", "..", ".",
           "lnk", "lnk/x", "x.json", "report.md"]
FORMS = ["relative", "absolute", "dotdot", "trailing-dot", "tilde", "cwd-relative"]
COMMANDS = {
    "generate": lambda out, w: ["generate", "age_comparison", "--out", out, "--params", str(w / "p.yaml")],
    "tables": lambda out, w: ["tables", "conceptnet", "--out", out, "--raw", str(w / "raw")],
    "zeroshot": lambda out, w: ["evaluate", "zeroshot", "--model", "nosuchmodel", "--data",
                                str(w / "data" / "probes" / "age_comparison"), "--out", out],
    "export": lambda out, w: ["export", "lm-eval", "--data", str(w / "data"), "--out", out],
    "publish": lambda out, w: ["publish", "--dry-run", out, "--data", str(w / "data" / "probes")],
    "grid": lambda out, w: ["grid", "--spec", str(w / "spec.yaml"), "--out", out, "--dry-run"],   # prior: not dry
    "heatmaps": lambda out, w: ["report", str(w / "results"), "--out", str(w / "r.md"), "--heatmaps", out],
    "report": lambda out, w: ["report", str(w / "results"), "--out", out],
    "diff": lambda out, w: ["diff", str(w / "data" / "probes" / "age_comparison"), "--old",
                            str(w / "data" / "probes" / "age_comparison"), "--json", out],
}
REPOSITORIES = {".git", ".hg", ".dvc", ".svn"}

entries = st.lists(st.tuples(st.sampled_from(PLACES), st.sampled_from(NAMES), st.sampled_from(KINDS),
                             st.binary(max_size=24)), max_size=8)


def _snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``, links not followed: a file's sha256, a link's target, a folder."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _world(root: Path, ours: bool) -> Path:
    """The project at ``root``: git, DVC, params, a generated dataset, results to read; ``ours``: also a folder
    probekit generated in the user's tree (``w/gen``)."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".dvc" / "cache" / "files" / "md5" / "ab").mkdir(parents=True)
    (root / ".dvc" / "cache" / "files" / "md5" / "ab" / "cdef").write_text("an object\n")
    (root / ".dvc" / "config").write_text("[core]\n    analytics = false\n")
    (root / "dvc.yaml").write_text("stages: {}\n")
    (root / "p.yaml").write_text("age_comparison:\n  size: {train: 4, dev: 3}\n  variants: [original, nolang]\n")
    (root / "spec.yaml").write_text(f"protocol: zeroshot\nmodels: [nosuchmodel]\ndata: [{root / 'data/probes'}]\n")
    (root / "raw").mkdir()
    (root / "home").mkdir()
    (root / "w").mkdir()
    fake_result(root / "results", root / "fake-data", "m", "original", True, PAIRS[:3], lambda a, b: "A")
    assert main(COMMANDS["generate"](str(root / "data" / "probes" / "age_comparison"), root)) == 0
    if ours:
        assert main(COMMANDS["generate"](str(root / "w" / "gen"), root)) == 0
    return root


def _plant(w: Path, outside: Path, root: Path, planted) -> None:
    """The user's entries under ``w`` (an entry whose place is taken, or under a file, is left out)."""
    for place, name, kind, data in planted:
        path = w / place / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() or path.is_symlink():
                if kind.startswith(("marker", "ledger")) or not path.is_file():
                    continue
            if kind == "file":
                path.write_bytes(data)
            elif kind == "dir":
                path.mkdir(exist_ok=True)
            elif kind.startswith("link"):
                to = {"link-project": root, "link-git": root / ".git", "link-outside": outside,
                      "link-dangling": root / "nowhere"}[kind]
                path.symlink_to(to)
            else:
                folder = path if path.is_dir() else path.parent
                siblings = sorted(p.name for p in folder.iterdir())
                if kind == "marker-v1":
                    text = json.dumps({"written_by": "probekit", "entries": siblings})
                elif kind == "marker-v2-wrong":
                    text = json.dumps({"written_by": "probekit", "marker": 2, "kind": "dataset", "folders": [],
                                       "files": {n: {"size": 1, "sha256": "0" * 64} for n in siblings}})
                elif kind == "ledger-forged":
                    (folder / ".probekit-files.json").write_text(json.dumps({"written_by": "probekit", "files": {
                        n: {"size": 3, "sha256": "f" * 64} for n in siblings}}))
                    continue
                else:
                    text = data.decode("latin-1") + "{"
                (folder / ".probekit.json").write_text(text)
        except OSError:
            continue


def _spelled(target: str, form: str, root: Path) -> str:
    """``w/target`` as a user might type it from the project root."""
    if form == "absolute":
        return str(root / "w" / target)
    if form == "dotdot":
        return f"w/a/../{target}"
    if form == "trailing-dot":
        return f"w/{target}/."
    if form == "tilde":
        return f"~/{target}"
    if form == "cwd-relative":
        return target
    return f"w/{target}"


def _under(rel: str, out: str, root: Path) -> bool:
    """Whether the world's entry ``rel`` lies at or under the output path ``out`` (as probekit folds it)."""
    target = Path(os.path.normpath(os.path.join(root, os.path.expanduser(out) if out.startswith("~") else out)))
    path = root / rel
    return path == target or target in path.parents


WORLDS = dict(planted=entries, ours=st.booleans(), prior=st.sampled_from(["none", "grid", "generate", "export"]),
              command=st.sampled_from(sorted(COMMANDS)), target=st.sampled_from(TARGETS),
              form=st.sampled_from(FORMS), force=st.booleans(), link=st.sampled_from(["none", "project", "outside",
                                                                                          "git"]))
"""What a world is drawn from: the user's files, a prior output, the command, its --out as spelled, --force, a link."""


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(**WORLDS)
def test_nothing_probekit_did_not_write_changes(planted, ours, prior, command, target, form, force, link,
                                                monkeypatch, capsys):
    """25 worlds in README's test command; the slow lane draws 300 more (below)."""
    _in_a_world(planted, ours, prior, command, target, form, force, link, monkeypatch, capsys)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(**WORLDS)
def test_nothing_probekit_did_not_write_changes_in_many_more_worlds(planted, ours, prior, command, target, form,
                                                                    force, link, monkeypatch, capsys):
    _in_a_world(planted, ours, prior, command, target, form, force, link, monkeypatch, capsys)


def _in_a_world(planted, ours, prior, command, target, form, force, link, monkeypatch, capsys) -> None:
    start = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, outside = base / "proj", base / "outside"
        root.mkdir()
        outside.mkdir()
        (outside / "keep.txt").write_text("outside\n")
        monkeypatch.setenv("HOME", str(root / "home"))
        os.chdir(root)
        try:
            _check(root, outside, planted, ours, prior, command, target, form, force, link, capsys)
        finally:
            os.chdir(start)


def _check(root: Path, outside: Path, planted, ours: bool, prior: str, command: str, target: str, form: str,
           force: bool, link: str, capsys) -> None:
    _world(root, ours)
    out = _spelled(target, form, root)
    project = set(_snapshot(root))
    if prior != "none":   # an earlier output of probekit's at the same path (a store, a dataset, results)
        main(COMMANDS[prior](out, root)[:-1] if prior == "grid" else COMMANDS[prior](out, root))
    before_planting = _snapshot(root)
    probekits = {rel for rel in before_planting if rel.startswith(("data/", "w/gen/")) or rel not in project}
    _plant(root / "w", outside, root, planted)
    if link != "none" and not (root / "w" / "lnk").exists():
        (root / "w" / "lnk").symlink_to({"project": root, "outside": outside, "git": root / ".git"}[link])
    before = _snapshot(root)
    before_outside = _snapshot(outside)
    users = {rel for rel in before if rel not in probekits or before[rel] != before_planting.get(rel)}
    capsys.readouterr()
    code = main(COMMANDS[command](out, root) + (["--force"] if force else []))
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.strip() and not line.startswith("probes: WARNING: --force:")
            and "\r" not in line and "it/s]" not in line]
    assert code == 0 or len(said) == 1, err
    now = _snapshot(outside)
    assert {rel: now.get(rel) for rel in before_outside} == before_outside   # outside: only ever added to
    after = _snapshot(root)
    for rel in sorted(users):
        if force and _under(rel, out, root) and not set(Path(rel).parts) & REPOSITORIES:
            continue   # --force may replace what lies under the output path, never a repository
        assert after.get(rel) == before[rel], (rel, command, out, force, err)
