"""The gate, walked over the whole CLI: every command of the parser's table runs in a user's project, watched
(``PROBEKIT_GUARD=strict``: a write it did not declare is refused where it happens), and the whole tree is compared
before and after: every path that changed lies inside a path the command declared it writes (the same declaration the
gate checked: :func:`probes.options.accesses`), whatever wrote it (Python, or native code that raises no audit event).
A command added to the CLI without a line here fails :func:`test_every_command_of_the_cli_is_walked`."""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from probes.main import _Args, main, parser
from probes.options import accesses

from helpers import MIRROR, PAIRS, fake_result, small_age_comparison

SERVER = "runs until Ctrl-C: tests/browse/test_serve*.py run it, watched (tests/conftest.py sets the guard)"
ELSEWHERE = {
    "browse serve": SERVER,
    "rehearse": "copies a whole probekit project and runs dvc in the copy: tests/cli/test_rehearse*.py and "
                "tests/test_rehearsal.py run it, watched",
    "run": "runs dvc repro in the project: tests/cli/test_run.py runs it, watched",
    "new": "edits conf/ and params.yaml of a probekit project: tests/cli/test_new*.py run it, watched",
    "lm-eval": "runs lm-evaluation-harness: tests/harness/ run it, watched",
    "evaluate curve": "needs a learning-rate selection and trains heads: tests/olmpics/test_cli_curves.py, watched",
    "evaluate curve-lr": "trains heads on every size: tests/olmpics/test_cli_curves.py, watched",
    "evaluate mcqa": "an MC-QA probe and a trained model: tests/olmpics/test_mcqa.py, watched",
    "evaluate pararel": "ParaRel's cloze set: tests/pararel/, watched",
    "train consistency": "ParaRel's cloze set and a training run: tests/pararel/test_consistency_training.py",
    "evaluate calum": "a CALUM pair set and a fine-tuning: tests/calum/, watched",
    "pararel-report": "ParaRel results: tests/pararel/, watched",
    "calum-report": "CALUM results: tests/calum/test_calum_report.py, watched",
    "olmpics-report": "learning curves' results: tests/olmpics/test_olmpics_report*.py, watched",
    "tables": "a whole mirror source: tests/core/test_loader_*.py and the slow lane, watched",
    "fidelity": "the original release and the table sets: tests/core/test_fidelity.py, watched",
    "publish": "pushes to the Hub: tests/core/test_publish.py runs it against a loopback Hub, watched (its --dry-run "
               "is walked here)",
}
"""Commands that run here only with a whole source, a training run or a server: the module that runs each, under
the same watch (the whole test suite runs with ``PROBEKIT_GUARD=strict``)."""


def commands(p: argparse.ArgumentParser | None = None, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every leaf command of the CLI (``evaluate zeroshot``, ``browse build``, ...)."""
    p = parser() if p is None else p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return [c for name, sub in action.choices.items() for c in commands(sub, prefix + (name,))]
    return [" ".join(prefix)]


def walked(world: dict) -> dict[str, list[str]]:
    """The command line each command runs with in the world (paths relative to the project)."""
    model = world["model"]
    return {
        "sources list": ["sources", "list", "--manifest", "raw/sources.yaml"],
        "sources fetch": ["sources", "fetch", "olmpics", "--manifest", "raw/sources.yaml", "--mirror", str(MIRROR)],
        "sources mirror": ["sources", "mirror", str(MIRROR), "--manifest", "raw/sources.yaml"],
        "generate": ["generate", "age_comparison", "--out", "gen", "--params", "params.yaml"],
        "tokenizers": ["tokenizers", "--out", "tok.json", "--params", "params.yaml"],
        "evaluate zeroshot": ["evaluate", "zeroshot", "--model", "m", "--data", "data/probes/age_comparison", "--out",
                              "z", "--params", "params.yaml", "--device", "cpu"],
        "evaluate features": ["evaluate", "features", "--model", "m", "--data", "data/probes/age_comparison",
                              "--out", "feat", "--params", "params.yaml", "--device", "cpu"],
        "audit": ["audit", "--model", model, "--data", "data/probes/age_comparison", "--out", "audit.md"],
        "report": ["report", "results/zeroshot", "--out", "r.md", "--metrics", "rm.json", "--plot", "r.png"],
        "grid": ["grid", "--spec", "spec.yaml", "--out", "store", "--params", "params.yaml"],
        "publish": ["publish", "--dry-run", "pub", "--data", "data"],
        "versions": ["versions", "--data", "data"],
        "export lm-eval": ["export", "lm-eval", "--data", "data", "--out", "data/lm"],
        "annotate export": ["annotate", "export", "--candidates", "cand.csv", "--out", "exp.csv", "--params",
                            "params.yaml"],
        "annotate import": ["annotate", "import", "answers.csv", "--out", "gold.csv"],
        "diff": ["diff", "data/probes/age_comparison", "--old", "old/age_comparison", "--json", "d.json",
                 "--examples", "d.jsonl"],
        "code": ["code", "--out", "codeout"],
        "browse build": ["browse", "build", "--out", "site", "--data", "data", "--results", "results"],
        "browse publish": ["browse", "publish", "prebuilt-site", "--repo-id", "o/n", "--dry-run", "space"],
    }


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``, links not followed: a file's sha256 and mode, a link's target, a folder."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest() + f":{path.stat().st_mode:o}"
            else:
                found[rel] = "dir"
    return found


def undeclared(before: dict, after: dict, root: Path, argv: list[str]) -> list[str]:
    """The entries under ``root`` that changed, appeared or went, outside every path ``argv`` declares it writes
    (:func:`probes.options.accesses`, as :func:`probes.main.main` reads it) and its ledger beside a file output."""
    args = parser(argv[0]).parse_args(argv, namespace=_Args())
    writes = [Path(os.path.abspath(a.path.split("{probe}")[0])) for a in accesses(args) if a.writes]
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))

    def declared(rel: str) -> bool:
        path = Path(os.path.abspath(root / rel))
        if path.name == ".probekit-files.json" and any(path.parent == w.parent for w in writes):
            return True
        return any(path == w or w in path.parents or path in w.parents and after.get(rel) == "dir" for w in writes)

    return [c for c in changed if not declared(c)]


@pytest.fixture(scope="module")
def template(tmp_path_factory, tiny_bert) -> Path:
    """A user's project with everything the walked commands read: git, DVC, params naming the tiny model, a small
    dataset and an older version of it, zero-shot results, a grid spec, crowd files, the sources manifest, a built
    site."""
    root = tmp_path_factory.mktemp("walk") / "project"
    root.mkdir()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        subprocess.run(["git", "init", "-q"], check=True)
        (root / ".dvc").mkdir()
        (root / ".dvc" / "config").write_text("[core]\n    analytics = false\n")
        (root / "dvc.yaml").write_text("stages: {}\n")
        (root / "params.yaml").write_text(
            f"models:\n  m: {tiny_bert}\nzeroshot:\n  limit: 4\nage_comparison:\n  size: {{train: 6, dev: 4}}\n"
            f"  variants: [original, nolang]\nruns:\n  olmpics: [m]\n")
        (root / "notes.md").write_text("the user's notes\n")
        small_age_comparison(root / "data" / "probes" / "age_comparison")
        small_age_comparison(root / "old" / "age_comparison", size={"train": 10, "dev": 5})
        fake_result(root / "results" / "zeroshot", root / "fake-data", "m", "original", True, PAIRS[:4],
                    lambda a, b: "A")
        (root / "spec.yaml").write_text("protocol: zeroshot\nmodels: [m]\ndata: [data/probes/age_comparison]\n")
        (root / "cand.csv").write_text("template_id,x,y\ndish,pasta,pork\n")
        (root / "answers.csv").write_text("template_id,x,y,statement,worker,answer\n"
                                          "dish,pasta,pork,A dish with pasta contains pork.,w1,never\n")
        (root / "raw").mkdir()
        shutil.copy(Path(__file__).resolve().parents[2] / "raw" / "sources.yaml", root / "raw" / "sources.yaml")
        assert main(["sources", "fetch", "olmpics", "--manifest", "raw/sources.yaml", "--mirror", str(MIRROR)]) == 0
        assert main(["browse", "build", "--out", "prebuilt-site", "--data", "data", "--results", "results"]) == 0
    finally:
        os.chdir(cwd)
    return root


@pytest.fixture
def world(template, tmp_path, monkeypatch, tiny_bert):
    root = tmp_path / "project"
    shutil.copytree(template, root, symlinks=True)
    monkeypatch.chdir(root)
    return {"root": root, "model": str(tiny_bert)}


def test_every_command_of_the_cli_is_walked():
    """A new command needs a line in :func:`walked` (or, with a reason, :data:`ELSEWHERE`)."""
    names = set(walked({"model": "m"}))
    missing = [c for c in commands() if c not in names and c not in ELSEWHERE]
    assert not missing, f"commands the gate's walk does not run: {missing}"
    assert not (names & set(ELSEWHERE)) - {"publish"}


@pytest.mark.parametrize("command", sorted(walked({"model": "m"})))
def test_a_command_writes_only_what_it_declared(command, world, capsys):
    root = world["root"]
    argv = walked(world)[command]
    before = snapshot(root)
    code = main(argv)
    err = capsys.readouterr().err
    assert "did not declare" not in err, err
    assert code == 0, err
    after = snapshot(root)
    assert undeclared(before, after, root, argv) == []
    assert (root / "notes.md").read_text() == "the user's notes\n"


def test_a_command_that_writes_an_undeclared_path_is_refused_where_it_writes(world, monkeypatch, capsys):
    """A command broken on purpose (its generator also writes a file beside the project's params) fails in one line
    naming the file, and the file is not there."""
    from generators.shared import registry

    real = registry.Generator.generate

    def broken(self, request):
        Path("params.yaml.bak").write_text("a copy nobody declared\n")
        return real(self, request)

    monkeypatch.setattr(registry.Generator, "generate", broken)
    assert main(walked(world)["generate"]) == 1
    err = capsys.readouterr().err
    assert "params.yaml.bak, which the command did not declare" in err and err.count("\n") == 1
    assert not (world["root"] / "params.yaml.bak").exists()


def test_a_native_write_the_watch_cannot_see_is_caught_by_the_walk(world, monkeypatch):
    """A write by native code raises no audit event (libc's own ``fopen``, as a Parquet or Rust writer would):
    the walk's comparison of the tree names it all the same."""
    from generators.shared import registry

    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    real = registry.Generator.generate

    def broken(self, request):
        libc.fclose(libc.fopen(b"native.txt", b"w"))
        return real(self, request)

    monkeypatch.setattr(registry.Generator, "generate", broken)
    root, argv = world["root"], walked(world)["generate"]
    before = snapshot(root)
    assert main(argv) == 0
    assert undeclared(before, snapshot(root), root, argv) == ["native.txt"]
