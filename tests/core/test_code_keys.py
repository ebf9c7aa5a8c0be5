"""A stage depends on what its command runs (docs/pipeline.md "What a stage depends on"): ``probes code`` writes, for
each command, the files it runs (code/<command>.txt); each stage of dvc.yaml depends on its command's file and on no
code folder; an edit re-runs exactly the stages whose commands can run the edited file; and what a command really
imports is always in its file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import MIRROR, REPO
from probekit.imports import Graph
from probes.code import commands, key_name, keys
from probes.main import parser
from probes.project import check_project_code

CODE_FOLDERS = ("probekit", "probes", "generators", "evaluators")


def _stages() -> dict[str, object]:
    """dvc.yaml's stages as DVC expands them (foreach and matrix)."""
    from dvc.repo import Repo

    with Repo(str(REPO)) as repo:
        return {stage.name: stage for stage in repo.index.stages}


@pytest.fixture(scope="module")
def stages():
    return _stages()


@pytest.fixture(scope="module")
def written():
    return keys(REPO)


def _listed(text: str) -> set[str]:
    return {line.split()[1] for line in text.splitlines() if line and not line.startswith("#")}


def _stage_keys(stages) -> dict[str, str]:
    """stage name -> the key file name of the command it runs."""
    found, known = {}, commands(parser())
    for name, stage in stages.items():
        argv = stage.cmd.split()
        assert argv[0] == "probes", f"{name}: {stage.cmd}"
        found[name] = key_name(argv[1:], known)
    return found


def test_the_committed_key_files_are_this_checkouts_code(written):
    """code/ holds what `probes code` writes for this checkout (`dvc repro code` rewrites it after an edit)."""
    committed = {str(p.relative_to(REPO / "code").with_suffix("")): p.read_text(encoding="utf-8")
                 for p in (REPO / "code").rglob("*.txt")}
    stale = sorted(n for n in set(written) | set(committed) if written.get(n) != committed.get(n))
    assert not stale, f"code/ is stale for {stale[:5]}: run `probes code --out code --force` (or `dvc repro code`)"


def test_every_stage_depends_on_its_commands_key_and_on_no_code_folder(stages, written):
    for name, key in _stage_keys(stages).items():
        deps = {d.def_path for d in stages[name].deps}
        if name == "code":
            assert deps == set(CODE_FOLDERS)
            continue
        assert key in written, f"{name}: its command has no key file ({stages[name].cmd})"
        assert f"code/{key}.txt" in deps, f"{name} does not depend on code/{key}.txt: {sorted(deps)}"
        code_deps = sorted(d for d in deps if d.split("/")[0] in CODE_FOLDERS or d.startswith("code/"))
        assert code_deps == [f"code/{key}.txt"], f"{name}: {code_deps}"


def _rerun_by(path: str, stages, written) -> set[str]:
    """The stages an edit of ``path`` re-runs (besides `code`): those whose command's key lists it."""
    return {name for name, key in _stage_keys(stages).items() if name != "code" and path in _listed(written[key])}


def test_an_edit_reruns_exactly_the_stages_whose_commands_run_the_file(stages, written):
    # a module no stage imports: nothing
    for path in ("probekit/hub/publish.py", "probekit/versions/diff.py", "probekit/data/compare.py",
                 "probekit/sources/loaders/klue.py", "probes/new.py", "probes/diff.py",
                 "probes/rehearse.py", "probes/run.py", "probes/annotate.py", "generators/shared/scaffold.py"):
        assert _rerun_by(path, stages, written) == set(), path
    # a paper's report module: that report (and the grid, which writes every protocol's report of its cells)
    assert _rerun_by("evaluators/olmpics/report.py", stages, written) == {"olmpics_report", "grid"}
    assert _rerun_by("evaluators/calum/report.py", stages, written) == {"calum_report", "grid"}
    # one probe's generator and YAML: that probe's datasets, and the fidelity report (it reads every generator)
    expected = {"generate-mc_mlm@age_comparison", "generate-age_grid", "fidelity"}
    assert _rerun_by("generators/age_comparison/generator.py", stages, written) == expected
    assert _rerun_by("generators/age_comparison/probe.yaml", stages, written) == expected
    # one table set's loader: its tables stage
    assert _rerun_by("probekit/sources/loaders/wordnet.py", stages, written) == {"tables@wordnet"}
    # the scorer: the stages that score with a model, not the datasets, tables or reports
    scorer = _rerun_by("evaluators/engine/scorer.py", stages, written)
    assert "zeroshot@minilm" in scorer and "curve@minilm-age_comparison" in scorer
    assert not {s for s in scorer if s.startswith(("generate", "tables", "fetch", "fidelity", "olmpics_report"))}


def test_what_a_command_imports_is_in_its_key(tmp_path):
    """Run for real (a subprocess logging its imports, tests/importlog): every project module a command imported is
    in its key file. The pipeline test checks every stage's command the same way."""
    log = tmp_path / "imports.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "importlog"), str(REPO)]),
           "PROBEKIT_TEST_IMPORT_LOG": str(log)}
    manifest = REPO / "raw" / "sources.yaml"
    runs = [["sources", "list", "--manifest", str(manifest)],
            ["sources", "fetch", "olmpics", "--manifest", str(manifest), "--mirror", str(MIRROR),
             "--dest", str(tmp_path / "raw" / "olmpics")]]
    for argv in runs:
        done = subprocess.run([sys.executable, "-m", "probes", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
    written = keys(REPO)
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == len(runs)
    for entry, argv in zip(logged, runs):
        listed = _listed(written[key_name(argv)])
        imported = {Path(f).resolve().relative_to(REPO).as_posix() for f in entry["modules"].values()}
        assert imported - listed == set(), argv
        assert imported, argv


def test_the_closure_follows_lazy_imports_and_name_references_but_not_other_handlers(tmp_path):
    root = tmp_path / "proj"
    files = {
        "probekit/__init__.py": "",
        "probekit/a.py": "def f():\n    from probekit import b\n",
        "probekit/b.py": "RUN = 'probekit.c:run'\n",
        "probekit/c.py": "",
        "probekit/unused.py": "",
        "probes/__init__.py": "",
        "probes/cli.py": ("from probekit import a\n\n"
                          "def _one(args):\n    from probekit import c\n    return _helper()\n\n"
                          "def _helper():\n    import probekit.b\n\n"
                          "def _two(args):\n    from probekit import unused\n\n"
                          "def add(p):\n    p.set_defaults(func=_one)\n    p.set_defaults(func=_two)\n"),
        "probes/data.yaml": "x: 1\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    graph = Graph(root)
    one = graph.closure(["probes.cli:add", "probes.cli:_one"])
    assert one == {"probekit", "probekit.a", "probekit.b", "probekit.c", "probes", "probes.cli"}
    assert graph.closure(["probekit.b"]) == {"probekit", "probekit.b", "probekit.c"}   # its "module:function" string
    assert graph.why["probekit.c"] == "probekit.b"
    assert "probekit.unused" in graph.closure(["probes.cli:_two"])
    assert [p.relative_to(root).as_posix() for p in graph.files({"probes.cli"})] == [
        "probes/__init__.py", "probes/cli.py", "probes/data.yaml"]


def test_inside_a_project_only_its_own_code_runs(tmp_path):
    """A project whose code is not the code that runs (probekit installed from another checkout, or as a package) is
    refused before any work, in one line naming both places; the checkout itself and a folder outside any project
    are not."""
    project = tmp_path / "project"
    for name in ("generators", "evaluators", "docs"):
        (project / name).mkdir(parents=True)
    (project / "dvc.yaml").write_text("stages: {}\n")
    from probekit.errors import UsageError

    with pytest.raises(UsageError) as refused:
        check_project_code(project / "docs")
    message = str(refused.value)
    assert str(project) in message and str(REPO) in message and "\n" not in message
    check_project_code(REPO / "docs")
    check_project_code(tmp_path)
    # the command line: refused with exit 2, nothing written
    probes = Path(sys.executable).with_name("probes")   # this environment's console script, whatever PATH holds
    done = subprocess.run([str(probes) if probes.is_file() else shutil.which("probes") or "probes", "code", "--out",
                           "code"], cwd=project,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 2 and "is a probekit project" in done.stderr
    assert not (project / "code").exists()


def test_package_data_in_a_folder_beside_the_code_is_in_the_key(stages, written):
    """A folder of data files beside a module (no package: ParaRel's patterns, the browser's page) is read by the
    module's code: editing a pattern re-runs the ParaRel dataset's stage, editing the page re-runs the browser's."""
    by_stage = _stage_keys(stages)
    pararel = _listed(written[by_stage["generate-pararel"]])
    assert {f"generators/pararel/patterns/{p.name}" for p in (REPO / "generators/pararel/patterns").glob("*.yaml")} \
        <= pararel
    browse = _listed(written[by_stage["browse"]])
    assert {f"evaluators/browse/static/{p.name}" for p in (REPO / "evaluators/browse/static").iterdir()} <= browse
    assert not any("__pycache__" in f for f in browse | pararel)
