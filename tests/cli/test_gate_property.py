"""The one rule as a property over the whole CLI (Hypothesis): any command of the walk's table (every command of
the parser that runs here: tests/cli/test_gate_walk.py), its output moved onto any entry of a user's project, spelled
any way, with or without --force. Every byte of the user's is unchanged (with --force, only what lies under the
output may go, never a repository, a cache, a model's weights or a file the command reads), and the command either
succeeds or says why in one line.

A world is the walk's project plus the kinds the earlier property did not have: a gold table its params name, a
model alias's folder, a user's own DVC stage whose output ``dvc.lock`` records, other version-control systems (a bare
git repository, Bazaar, Jujutsu, Darcs, Fossil), a DVC cache named by the project's config, links (to the project,
its .git, outside, nowhere, a device) and FIFOs. Signals at every step of a replace are
tests/core/test_replace_kill.py's."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probes.main import _Args, main, parser
from probes.options import named

from test_gate_walk import snapshot, template, walked  # noqa: F401  (template: a fixture)

TARGETS = ["new", "notes.md", "gold.csv", "models/mine", "models/mine/config.json", "models", "user/metrics.json",
           "user", "thesis.git", "vcs/.bzr", "vcs", "jj", "darcs", "fossil", "cache", "cache/files", "pipe",
           "devnull", "lnk-project", "lnk-outside", "lnk-nowhere", "data", "data/probes/age_comparison",
           "results", ".git", ".dvc", "."]
FORMS = ["relative", "absolute", "dotdot", "trailing-dot"]
PROTECTED = ("thesis.git", "vcs", "jj", "darcs", "fossil", "cache", ".git", ".dvc")
"""Entries --force never deletes, wherever the output is: repositories and the DVC cache."""
PROBEKITS = ("data", "old", "results", "prebuilt-site", "raw/olmpics", "fake-data")
"""The walk's project entries probekit wrote (every other one is the user's)."""
READS = {"annotate export": ("gold.csv", "cand.csv", "params.yaml"), "generate": ("gold.csv", "params.yaml"),
         "evaluate zeroshot": ("models", "params.yaml", "data/probes/age_comparison"),
         "evaluate features": ("models", "params.yaml", "data/probes/age_comparison"),
         "grid": ("models", "params.yaml", "spec.yaml", "data/probes/age_comparison"),
         "audit": ("models", "data/probes/age_comparison"), "tokenizers": ("params.yaml",),
         "diff": ("data/probes/age_comparison", "old/age_comparison"), "report": ("results/zeroshot",),
         "annotate import": ("answers.csv",), "browse build": ("data", "results"),
         "browse publish": ("prebuilt-site",), "publish": ("data/probes/age_comparison",),
         "export lm-eval": ("data/probes/age_comparison",)}
"""What each drawn command reads: never deleted, --force or not (the gate refuses an output over it)."""


def _user_world(root: Path, tiny_bert: Path) -> None:
    """The kinds the walk's project lacks, planted in it."""
    (root / "gold.csv").write_text("template_id,x,y,gold,n_workers,agreement\ndish,pasta,pork,never,1,1.0\n")
    with open(root / "params.yaml", "a") as f:
        f.write("always_never:\n  annotations: [gold.csv]\n")
    shutil.copytree(tiny_bert, root / "models" / "mine")
    text = (root / "params.yaml").read_text().replace(f"  m: {tiny_bert}", f"  m: {root / 'models' / 'mine'}")
    (root / "params.yaml").write_text(text)
    (root / "user").mkdir()
    (root / "user" / "metrics.json").write_text('{"f1": 0.5}\n')
    md5 = hashlib.md5((root / "user" / "metrics.json").read_bytes()).hexdigest()
    (root / "dvc.yaml").write_text("stages:\n  mine:\n    cmd: python train.py\n    outs: [user/metrics.json]\n")
    (root / "dvc.lock").write_text(f"schema: '2.0'\nstages:\n  mine:\n    cmd: python train.py\n    outs:\n    - path: "
                                   f"user/metrics.json\n      hash: md5\n      md5: {md5}\n      size: 12\n")
    subprocess.run(["git", "init", "-q", "--bare", str(root / "thesis.git")], check=True)
    for folder, inner in (("vcs", ".bzr"), ("jj", ".jj"), ("darcs", "_darcs")):
        (root / folder / inner).mkdir(parents=True)
        (root / folder / inner / "format").write_text("a repository\n")
    (root / "fossil").mkdir()
    (root / "fossil" / ".fslckout").write_bytes(b"SQLite format 3\x00")
    (root / "cache" / "files" / "md5" / "ab").mkdir(parents=True)
    (root / "cache" / "files" / "md5" / "ab" / "cdef").write_text("an object\n")
    (root / ".dvc" / "config").write_text("[core]\n    analytics = false\n[cache]\n    dir = ../cache\n")
    os.mkfifo(root / "pipe")
    (root / "devnull").symlink_to("/dev/null")
    (root / "lnk-project").symlink_to(root)
    (root / "lnk-outside").symlink_to(root.parent / "outside")
    (root / "lnk-nowhere").symlink_to(root / "nowhere")


def _output(argv: list[str]) -> tuple[int, str] | None:
    """The index in ``argv`` of the value of its first output option (what the gate reads as written), and the
    option; None for a command that writes nothing."""
    args = parser(argv[0]).parse_args(argv, namespace=_Args())
    for access in named(args):
        if access.writes and access.said.startswith("--") and "(" not in access.said:
            for i, word in enumerate(argv[:-1]):
                if word == access.said and argv[i + 1] == access.path:
                    return i + 1, access.said
    return None


def _spelled(target: str, form: str, root: Path) -> str:
    if form == "absolute":
        return str(root / target)
    if form == "dotdot":
        return f"models/../{target}"
    if form == "trailing-dot":
        return f"{target}/."
    return target


def _under(rel: str, out: str, root: Path) -> bool:
    target = Path(os.path.normpath(os.path.join(root, out)))
    path = root / rel
    return path == target or target in path.parents


WRITERS = sorted(name for name, argv in walked({"model": "m"}).items() if _output(argv) is not None)


def test_every_command_that_writes_is_drawn():
    """The commands drawn are the walk's (every command of the CLI that runs here) that write an output."""
    assert {"generate", "evaluate zeroshot", "report", "grid", "diff", "browse build", "annotate export",
            "export lm-eval", "publish", "code", "tokenizers", "audit"} <= set(WRITERS)


WORLDS = dict(command=st.sampled_from(WRITERS), target=st.sampled_from(TARGETS), form=st.sampled_from(FORMS),
              force=st.booleans())


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(**WORLDS)
def test_nothing_of_the_users_changes_whatever_the_command(command, target, form, force, template, tiny_bert,
                                                          tmp_path_factory, capsys):
    """20 worlds in README's test command; the slow lane draws 200 more (below)."""
    _in_a_world(command, target, form, force, template, tiny_bert, tmp_path_factory, capsys)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(**WORLDS)
def test_nothing_of_the_users_changes_in_many_more_worlds(command, target, form, force, template, tiny_bert,
                                                          tmp_path_factory, capsys):
    _in_a_world(command, target, form, force, template, tiny_bert, tmp_path_factory, capsys)


def _in_a_world(command, target, form, force, template, tiny_bert, tmp_path_factory, capsys) -> None:
    base = tmp_path_factory.mktemp("world")
    root = base / "project"
    shutil.copytree(template, root, symlinks=True)
    (base / "outside").mkdir()
    (base / "outside" / "keep.txt").write_text("outside\n")
    _user_world(root, tiny_bert)
    start = os.getcwd()
    os.chdir(root)
    try:
        argv = walked({"root": root, "model": str(root / "models" / "mine")})[command]
        at, _ = _output(argv)
        out = _spelled(target, form, root)
        argv = argv[:at] + [out] + argv[at + 1:] + (["--force"] if force else [])
        before, outside = snapshot(root), snapshot(base / "outside")
        pipe_mode = os.lstat(root / "pipe").st_mode
        capsys.readouterr()
        code = main(argv)
        err = capsys.readouterr().err
        said = [line for line in err.splitlines() if line.strip() and not line.startswith("probes: WARNING: --force:")
                and not line.startswith("probes: INFO") and "\r" not in line and "it/s]" not in line
                and not line.startswith(("SITE: warning", "probes: WARNING"))]
        assert code == 0 or len(said) == 1, (argv, err)
        assert "did not declare" not in err, (argv, err)
        assert snapshot(base / "outside") == outside
        assert stat.S_ISFIFO(os.lstat(root / "pipe").st_mode) and os.lstat(root / "pipe").st_mode == pipe_mode
        after = snapshot(root)
        for rel, was in before.items():
            theirs = not any(rel == p or rel.startswith(p + "/") for p in PROBEKITS)
            read = any(rel == r or rel.startswith(r + "/") for r in READS.get(command, ()))
            may_go = _under(rel, out, root) and not rel.split("/")[0] in PROTECTED and not read \
                and (force or not theirs)
            if not may_go and not rel.endswith(".probekit-files.json"):
                assert after.get(rel) == was, (rel, argv, code, err)
    finally:
        os.chdir(start)
        shutil.rmtree(base, ignore_errors=True)
