"""docs/adding-a-probe.md, followed in a temporary copy of the project: its `probes` commands and its two files as
the page shows them. `probes new` edits only the params files; `probes generate part_of` builds the probe from the
mirror's ConceptNet; zero-shot scoring (a tiny model for `minilm`), the fidelity report, the lm-eval export and the
zero-shot report then take it in. `dvc repro` itself is not run here (the stages' commands are)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import MIRROR, REPO

PAGE = REPO / "docs" / "adding-a-probe.md"
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```[ \t]*$", flags=re.M | re.S)
FIDELITY = "probes fidelity --probes data/probes --out reports/fidelity.md"


def _blocks() -> list[tuple[str, str, str]]:
    """``(language, title, body)`` of every fenced block of the page."""
    text = PAGE.read_text(encoding="utf-8")
    return [(lang, (re.search(r'title="([^"]+)"', info) or [None, ""])[1], body)
            for lang, info, body in BLOCK.findall(text)]


def page_files() -> dict[str, str]:
    """The files the page shows whole: ``{path: text}`` (blocks with a ``title``)."""
    return {title: body for _, title, body in _blocks() if title}


def page_commands() -> list[str]:
    """The ``probes`` command lines of the page's bash blocks, in order."""
    return [line.strip() for lang, _, body in _blocks() if lang == "bash"
            for line in body.splitlines() if line.strip().startswith("probes ")]


def test_the_page_shows_both_files_and_its_commands(tmp_path):
    from probekit.probes.spec import load_probe_spec

    files = page_files()
    assert sorted(files) == ["generators/part_of/generator.py", "generators/part_of/probe.yaml"]
    (tmp_path / "part_of").mkdir()
    (tmp_path / "part_of/probe.yaml").write_text(files["generators/part_of/probe.yaml"])
    spec = load_probe_spec(tmp_path / "part_of/probe.yaml")
    assert spec.probe == "part_of" and spec.citation is None and list(spec.variants) == ["original", "nolang",
                                                                                           "perturbed"]
    compile(files["generators/part_of/generator.py"], "generator.py", "exec")
    assert [c.split()[1] for c in page_commands()] == ["new", "generate", "evaluate"]
    assert f"`{FIDELITY}`" in PAGE.read_text(encoding="utf-8")


def _copy_project(dest: Path) -> Path:
    """The files git sees in the checkout (tracked, or untracked and not ignored), committed in a new repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    for git in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "p"]):
        subprocess.run(["git", *git], cwd=dest, check=True, capture_output=True)
    return dest


def _probes(project: Path, command: str) -> str:
    """``command`` (``probes ...``) run in ``project``, its code first on the path; its output."""
    env = dict(os.environ, PYTHONPATH=str(project), PROBES_MIRROR=str(MIRROR))
    done = subprocess.run([sys.executable, "-m", "probes", *shlex.split(command)[1:]], cwd=project, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.mark.slow   # a copy of the project and a dozen `probes` processes (about a minute)
@pytest.mark.usefixtures("one_thread")
def test_following_the_page_adds_a_probe_the_pipeline_takes_in(tmp_path, tiny_bert):
    project = _copy_project(tmp_path / "project")
    new, generate, zeroshot = page_commands()

    assert "made generators/part_of/" in _probes(project, new)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=normal"], cwd=project,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert sorted(status) == [" M conf/config.yaml", " M params.yaml", "?? generators/part_of/"]
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert params["probes"]["mc_mlm"][-1] == "part_of" and params["part_of"] == {}

    for path, text in page_files().items():
        (project / path).write_text(text)
    _probes(project, "probes sources fetch conceptnet_subsets --dest raw/conceptnet_subsets")   # dvc.yaml's stages
    _probes(project, "probes tables conceptnet --out data/tables/conceptnet")
    printed = _probes(project, generate)
    data = project / "data/probes/part_of"
    for variant in ("original", "nolang", "perturbed"):
        assert f"part_of/{variant}: train " in printed
        rows = [json.loads(line) for line in (data / variant / "dev.jsonl").read_text().splitlines()]
        assert len(rows) > 100 and {r["probe"] for r in rows} == {"part_of"}
        assert all(len(r["question"]["choices"]) == 3 for r in rows)
    dev = [json.loads(line) for line in (data / "original/dev.jsonl").read_text().splitlines()]
    meta = json.loads((data / "original/meta.json").read_text())
    assert meta["license"] == "cc-by-sa-4.0" and list(meta["sources"]) == ["conceptnet_subsets"]
    card = (data / "original/README.md").read_text()
    assert "citation: null" in card and "Talmor" not in card   # not presented as oLMpics
    train = {r["args"]["part"] for r in map(json.loads, (data / "original/train.jsonl").read_text().splitlines())}
    assert train and not train & {r["args"]["part"] for r in dev}   # no dev part in train

    _probes(project, zeroshot.replace("--model minilm", f"--model {tiny_bert}"))
    metrics = json.loads((project / "results/zeroshot/minilm/part_of/original/metrics.json").read_text())
    assert metrics["n"] == len(dev)
    assert "part_of: no original release, not compared" in _probes(project, FIDELITY)
    assert "| part_of |" in (project / "reports/fidelity.md").read_text()
    _probes(project, "probes export lm-eval --data data --out data/lm_eval")   # the lm_eval_tasks stage
    tasks = [p.name for p in (project / "data/lm_eval").rglob("*part_of*.yaml")]
    assert len(tasks) == 6, tasks   # each variant, as the statement and as the choice task
    _probes(project, "probes report results/zeroshot --out results/report.md --metrics results/metrics.json")
    assert "| part_of |" in (project / "results/report.md").read_text()
