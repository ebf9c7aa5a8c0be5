"""End to end: `dvc repro` on tiny params in a temporary copy of the project, offline with the mirror."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import MIRROR, REPO
from hub_server import FakeHub

BIN = Path(sys.executable).parent


def _env(mirror: Path | None, project: Path | None = None) -> dict:
    """PATH with the venv's commands; PYTHONPATH the project copy, so its generators and templates run (not the
    installed checkout's); the mirror, or none."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("PROBES_MIRROR", None)
    if project is not None:
        env["PYTHONPATH"] = str(project)
    if mirror:
        env["PROBES_MIRROR"] = str(mirror)
    return env


HUB_TOKEN = "hf_pipeline_test_token"
PUBLISH = ["probes", "publish", "--repo-id", "org/probes", "--probes", "age_comparison*"]


def run(cmd: list[str], cwd: Path, mirror: Path | None = MIRROR, hub: FakeHub | None = None) -> str:
    env = _env(mirror, cwd)
    if hub is not None:   # the fake Hub on loopback (tests/hub_server.py)
        env |= {"HF_ENDPOINT": hub.url, "HF_TOKEN": HUB_TOKEN, "HF_HOME": str(cwd / ".hf-home"),
                "HF_HUB_OFFLINE": "0"}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_dvc_repro_end_to_end_then_nothing_to_do(tmp_path, tiny_bert, tiny_gpt2):
    project = tmp_path / "project"
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if (REPO / name).is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, project / name)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["models"] = {"tiny": str(tiny_bert)}
    params["curve"].update(sizes=[4, 8], seeds=[1])
    params["mcqa"].update(sizes=[4], seeds=[1])
    params["age_comparison_grid"]["values"] = {"ages": {"train": [40, 42], "dev": [15, 18]},
                                               "years": {"train": [1900, 1902], "dev": [1950, 1953]}}
    params["pararel"]["tokenizers"] = None   # every model of `models`
    params["pararel_eval"].update(relations=["P19", "P37", "P530"], limit=3)
    params["consistency"].update(train_relations=["P37"], limit=4, eval_limit=2, epochs=1)
    params["calum_eval"].update(seeds=[1], limit=16, eval_limit=8, max_steps=2, batch_size=8, device_batch_size=8)
    params["calum_multitask"] = {"tasks": ["rte"], "groups": ["Para-MRPC"]}
    for section in params.values():  # every generated probe small
        if isinstance(section, dict) and "size" in section:
            section["size"] = {"train": 12, "dev": 9}
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # the same values as a profile, for `dvc exp run` (`probes run`), which composes params.yaml from conf/
    (project / "conf/profile/tiny.yaml").write_text("# @package _global_\n" + yaml.safe_dump(params, sort_keys=False))
    config = project / "conf/config.yaml"
    config.write_text(config.read_text().replace("  - profile: smoke", "  - profile: tiny", 1))
    spec = project / "grids/zeroshot_limits.yaml"
    spec.write_text(spec.read_text().replace("models: [minilm]", "models: [tiny]").replace("[100, 500]", "[3, 6]"))

    # The pipeline's own model through the one command (`probes run`, README): a masked LM, so every protocol
    # runs for it (a DVC experiment: the report stages and all they read); `dvc repro` then runs the rest.
    for git in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "project"]):
        subprocess.run(["git", *git], cwd=project, check=True, capture_output=True)
    printed = run(["probes", "run", "--model", "tiny"], project)
    assert "| zero-shot | age_comparison (original) | accuracy |" in printed and "| ParaRel |" in printed
    assert "| oLMpics curves | age_comparison (MC-MLM) MLP | MAX |" in printed and "| CALUM | rte | C_R |" in printed
    assert "Skipped:" not in printed and "results/report.md" in printed
    run(["dvc", "repro"], project)
    dev = (project / "data/probes/age_comparison/original/dev.jsonl").read_text().splitlines()
    assert len(dev) == 9
    metrics = json.loads((project / "results/zeroshot/tiny/multihop_comparison/nolang/metrics.json").read_text())
    assert metrics["n"] == 9 and metrics["lm_head"] == "pretrained" and metrics["variant"] == "nolang"
    release = json.loads((project / "results/release/tiny/age_comparison/metrics.json").read_text())
    assert release["n"] == 500 and release["variant"] == "release"
    summary = json.loads((project / "results/metrics.json").read_text())
    assert set(summary["tiny"]) == {"age_comparison", "multihop_comparison", "always_never", "antonym_negation",
                                    "objects_comparison", "taxonomy_conjunction"}
    assert "| tiny" in (project / "results/report.md").read_text()
    assert (project / "results/zeroshot.png").read_bytes()[:4] == b"\x89PNG"
    curve = json.loads((project / "results/curve/tiny/age_comparison/linear/metrics.json").read_text())
    assert curve["sizes"] == [4, 8] and set(curve["sensitivity"]) == {"nolang", "perturbed"}
    assert (project / "data/features/tiny/age_comparison/meta.json").is_file()
    olmpics = (project / "results/olmpics.md").read_text()
    assert "MLM-BASELINE" in olmpics and "ESIM" in olmpics and "property_conjunction" in olmpics
    assert (project / "results/curves/age_comparison_MC-MLM.png").read_bytes()[:4] == b"\x89PNG"   # and MC-QA's
    assert (project / "results/heatmaps/tiny.png").read_bytes()[:4] == b"\x89PNG"
    grid = json.loads((project / "results/zeroshot_grid/tiny/age_comparison/original/metrics.json").read_text())
    assert grid["n"] == 4 * 3   # every ordered pair of the dev ages 15-18
    pararel = json.loads((project / "results/pararel/tiny/metrics.json").read_text())
    assert pararel["relations_evaluated"] == ["P19", "P37", "P530"] and pararel["macro"]["Consistency"]["n"] == 2
    assert "| tiny (smoke) | test |" in (project / "results/pararel.md").read_text()   # the smoke profile, marked
    signal = (project / "data/calum/rte/signal/dev.jsonl").read_text().splitlines()
    assert len(signal) == 277 and json.loads(signal[0])["sentence1"].startswith("[Sentence1] ")
    grid = [json.loads(line) for line in (project / "results/grid/summary.jsonl").read_text().splitlines()]
    assert [r["status"] for r in grid] == ["stored"] * 4 and grid[0]["metrics"]["original"]["n"] == 3
    calum = json.loads((project / "results/calum/tiny-rte-Para-MRPC/metrics.json").read_text())
    assert calum["tasks_trained"] == ["rte", "mrpc"] and calum["C_R"]["n"] == 1 and calum["capped"]
    assert "| tiny-Para-MRPC ‡" in (project / "results/calum.md").read_text()

    assert "Data and pipelines are up to date." in run(["dvc", "repro"], project)

    # No mirror configured, no network: a forced re-fetch keeps the verified copy (persisted output,
    # files checked in place), and the pipeline is still up to date.
    raw = sorted((project / "raw/olmpics").iterdir())
    assert len(raw) == 16
    run(["dvc", "repro", "-f", "-s", "fetch@olmpics"], project, mirror=None)
    assert sorted((project / "raw/olmpics").iterdir()) == raw
    assert "Data and pipelines are up to date." in run(["dvc", "repro"], project, mirror=None)

    # The batch size changes no score, so it invalidates nothing.
    params["zeroshot"]["batch_size"] = 3
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    assert "Data and pipelines are up to date." in run(["dvc", "status"], project, mirror=None)

    # Regenerate with a new template (README "Regenerate with new templates"): add a template and a variant
    # reading it; `dvc status` names exactly the stages whose deps hold the YAML, `dvc repro` builds the new
    # variant and leaves every other variant's files as they were.
    probe = project / "data/probes/age_comparison"
    before = _hashes(probe)
    hub = FakeHub(HUB_TOKEN)
    published = run(PUBLISH, project, hub=hub)
    assert "commit" in published and len(hub.commits("org/probes")) == 2   # the repo's first commit, then ours
    first = hub.last_commit("org/probes")
    template = project / "generators/age_comparison.yaml"
    text = original = template.read_text()
    text = text.replace("variants:", """  - id: reworded
    text: "Someone aged {age1} is [MASK] than someone aged {age2}."
    slots: [age1, age2]
    answers: {less: younger, greater: older}
    perturb: [aged, than]
variants:
  reworded: {template: reworded, values: ages}""", 1)
    template.write_text(text)
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    readers = {name for name, st in stages.items() if "generators/age_comparison.yaml" in st.get("deps", [])}
    assert readers == {"generate-age_comparison", "generate-age_comparison_grid"}
    assert _changed_stages(run(["dvc", "status"], project)) == readers
    run(["dvc", "repro", *sorted(readers)], project)   # the datasets; what reads them ran in the first repro
    after = _hashes(probe)
    assert {f for f in after if f not in before} == {f"reworded/{name}" for name in
                                                    ("README.md", "meta.json", "train.jsonl", "dev.jsonl")}
    # every file written before keeps its bytes; the folder's marker (what probekit wrote) lists the new ones too
    assert all(after[f] == h for f, h in before.items() if f != ".probekit.json")
    assert "reworded/dev.jsonl" in json.loads((probe / ".probekit.json").read_text())["entries"]
    rows = (probe / "reworded/dev.jsonl").read_text().splitlines()
    assert json.loads(rows[0])["question"]["stem"].startswith("Someone aged ")

    # ... and `probes publish` uploads only the new config: one commit, every other file keeps its commit.
    versions = run(["probes", "versions", "--repo-id", "org/probes", "--probes", "age_comparison*"], project, hub=hub)
    assert "age_comparison-reworded" in versions and "age_comparison-nolang" in versions
    run(PUBLISH, project, hub=hub)
    commits = hub.commits("org/probes")
    assert len(commits) == 3
    last = hub.last_commit("org/probes")
    touched = {path for path, sha in last.items() if sha == commits[-1]}
    assert touched == {"README.md"} | {path for path in last if path.startswith("age_comparison-reworded/")}
    assert all(last[path] == sha for path, sha in first.items() if path != "README.md")
    hub.close()

    # A template error stops the stage with the file and the template id; the last dataset stays in place.
    template.write_text(text.replace("than someone aged {age2}.", "than someone aged {age3}."))
    failed = subprocess.run(["dvc", "repro", "-s", "generate-age_comparison"], cwd=project, env=_env(MIRROR, project),
                            capture_output=True, text=True)
    assert failed.returncode != 0
    assert "generators/age_comparison.yaml: template 'reworded': unknown slot(s) ['age3']" in failed.stderr + failed.stdout
    assert _hashes(probe) == after
    template.write_text(original)

    # A causal LM given as a local folder: it runs the oLMpics protocols that apply to its family (zero-shot) and
    # skips the others (the MC-MLM and MC-QA curves), saying so in its table and in the report.
    printed = run(["probes", "run", "--model", str(tiny_gpt2), "--name", "gpt", "--probes", "olmpics"], project)
    assert yaml.safe_load((project / "params.yaml").read_text())["models"] == {"tiny": str(tiny_bert),
                                                                              "gpt": str(tiny_gpt2)}
    zero_shot = json.loads((project / "results/zeroshot/gpt/age_comparison/original/metrics.json").read_text())
    assert zero_shot["scoring"] == "causal" and zero_shot["n"] == 9 and zero_shot["device"] == "cpu"
    for where in ("curve/gpt/age_comparison/mlp", "curve/gpt/property_conjunction/mcqa"):
        assert "causal" in json.loads((project / "results" / where / "metrics.json").read_text())["skipped"], where
    assert not (project / "results/pararel/gpt").exists()   # not asked for (--probes)
    assert "| zero-shot | age_comparison (original) | accuracy |" in printed and "| ParaRel |" not in printed
    assert "Skipped:" in printed and "- curve/gpt/age_comparison" in printed
    report = (project / "results/report.md").read_text()
    assert "| gpt " in report and "| tiny " in report   # beside every model already in the results
    assert "gpt" in (project / "results/olmpics.md").read_text().split("## Skipped")[-1]


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _changed_stages(status: str) -> set[str]:
    """The stage names `dvc status` prints (unindented lines ending in a colon)."""
    return {line[:-1] for line in status.splitlines() if line.endswith(":") and not line.startswith((" ", "\t"))}
