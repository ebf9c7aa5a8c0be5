"""End to end (the slow lane): `dvc repro` on tiny params in a temporary copy of the project, offline with the
mirror. The pipeline runs once, in the module's fixtures, each step on the project the one before left: the first
run (`probes run` then `dvc repro`), a second run and an offline re-fetch, a new template and two publishes, a
template error, a causal LM. Each test checks one part of what a step wrote, so a failure hides no other part."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from probekit.outputs import LEDGER

from helpers import MIRROR, REPO
from hub_server import FakeHub

# one worker runs every test here (pyproject.toml: `--dist loadfile`): they share one pipeline run (the fixtures)
pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
UP_TO_DATE = "Data and pipelines are up to date."

# What this module names in dvc.yaml (kept here, in one place): the stages that read the age-comparison template,
# the template itself, the fetch stage re-run offline.
TEMPLATE = "generators/age_comparison/probe.yaml"
GENERATE = "generate-mc_mlm@age_comparison"
GENERATE_GRID = "generate-age_grid"
FIDELITY = "fidelity"
FETCH_OLMPICS = "fetch@olmpics"
IMPORT_LOG = "imports.jsonl"   # beside the project: each `probes` process's argv and the project modules it imported


def _env(mirror: Path | None, project: Path | None = None) -> dict:
    """PATH with the venv's commands; PYTHONPATH the project copy, so its generators and templates run (not the
    installed checkout's), and the import log's hook; the mirror, or none."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("PROBES_MIRROR", None)
    if project is not None:   # and every process logs the project modules it imported (tests/importlog)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests" / "importlog"), str(project)])
        env["PROBEKIT_TEST_IMPORT_LOG"] = str(project.parent / IMPORT_LOG)
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


# --- the steps: module-scoped fixtures, each on the project the one it requests left -------------------------

@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, tiny_bert) -> SimpleNamespace:
    """The project copied, its params tiny, then the pipeline's own model through the one command (`probes run`,
    README): a masked LM, so every protocol runs for it (a DVC experiment: the report stages and all they read);
    `dvc repro` then runs the rest."""
    project = tmp_path_factory.mktemp("pipeline") / "project"
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if (REPO / name).is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, project / name)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["models"] = {"tiny": str(tiny_bert)}
    params["runs"] = {paper: ["tiny"] for paper in params["runs"]}   # each paper's models: the tiny BERT
    params["curve"].update(sizes=[4, 8], seeds=[1])
    params["mcqa"].update(sizes=[4], seeds=[1])
    params["age_comparison_grid"]["values"] = {"ages": {"train": [40, 42], "dev": [15, 18]},
                                               "years": {"train": [1900, 1902], "dev": [1950, 1953]}}
    params["pararel"]["tokenizers"] = None   # every model of `models`
    params["pararel_eval"].update(relations=["P19", "P37", "P530"], limit=3)
    params["consistency"].update(train_relations=["P37"], limit=4, eval_limit=2, epochs=1)
    params["calum_eval"].update(seeds=[1], limit=16, eval_limit=8, max_steps=2, batch_size=8, device_batch_size=8)
    params["calum_models"] = ["tiny"]   # CALUM's tables: single-task and multitask runs of the tiny BERT
    params["olmpics_table4"] = ["tiny"]   # oLMpics Table 4's zero-shot matrix
    params["calum_multitask"] = {"models": ["tiny"], "tasks": ["rte"], "groups": ["Para-MRPC"]}
    for probe in params["probes"]["mc_mlm"] + params["probes"]["mc_qa"]:   # every generated probe small (those
        # whose YAML takes a size: always_never's rows are the release's)
        if "size" in yaml.safe_load((project / "generators" / probe / "probe.yaml").read_text())["params"]:
            params[probe]["size"] = {"train": 12, "dev": 9}
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # the same values as a profile, for `dvc exp run` (`probes run`), which composes params.yaml from conf/
    (project / "conf/profile/tiny.yaml").write_text("# @package _global_\n" + yaml.safe_dump(params, sort_keys=False))
    config = project / "conf/config.yaml"
    config.write_text(config.read_text().replace("  - profile: smoke", "  - profile: tiny", 1))
    spec = project / "grids/zeroshot_limits.yaml"
    spec.write_text(spec.read_text().replace("models: [minilm]", "models: [tiny]").replace("[100, 500]", "[3, 6]"))
    for git in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "project"]):
        subprocess.run(["git", *git], cwd=project, check=True, capture_output=True)
    printed = run(["probes", "run", "--model", "tiny"], project)
    run(["dvc", "repro"], project)
    return SimpleNamespace(project=project, params=params, printed=printed)


@pytest.fixture(scope="module")
def second_run(pipeline) -> SimpleNamespace:
    """A second `dvc repro`; a forced offline re-fetch (no mirror configured, no network) and `dvc repro` again;
    `dvc status` after a change of the batch size."""
    project, params = pipeline.project, pipeline.params
    again = run(["dvc", "repro"], project)
    raw = [p for p in sorted((project / "raw/olmpics").iterdir()) if p.name != LEDGER]   # not probekit's record
    run(["dvc", "repro", "-f", "-s", FETCH_OLMPICS], project, mirror=None)
    refetched = [p for p in sorted((project / "raw/olmpics").iterdir()) if p.name != LEDGER]
    offline = run(["dvc", "repro"], project, mirror=None)
    params["scoring"]["batch_size"] = 3
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    status = run(["dvc", "status"], project, mirror=None)
    return SimpleNamespace(again=again, raw=raw, refetched=refetched, offline=offline, batch_size_status=status)


@pytest.fixture(scope="module")
def new_template(second_run, pipeline) -> SimpleNamespace:
    """Regenerate with a new template (README "Regenerate with new templates"): publish, add a template and a
    variant reading it, `dvc repro` the stages whose deps hold the YAML, publish again."""
    project = pipeline.project
    probe = project / "data/probes/age_comparison"
    before = _hashes(probe)
    hub = FakeHub(HUB_TOKEN)
    try:
        published = run(PUBLISH, project, hub=hub)
        first_commits = len(hub.commits("org/probes"))
        first = hub.last_commit("org/probes")
        template = project / TEMPLATE
        text = original = template.read_text()
        text = text.replace("variants:", """  - id: reworded
    text: "Someone aged {age1} is [MASK] than someone aged {age2}."
    slots: [age1, age2]
    answers: {less: younger, greater: older}
    perturb: [aged, than]
variants:
  reworded: {template: reworded, values: ages}""", 1)
        template.write_text(text)
        keys = _hashes(project / "code")
        run(["dvc", "repro", "code"], project)   # the code each command runs: the files of the commands reading it
        changed = sorted(k for k, h in _hashes(project / "code").items() if keys.get(k) != h and k.endswith(".txt"))
        readers = set().union(*(_stages_reading(project, f"code/{k}") for k in changed))
        status = run(["dvc", "status"], project)
        run(["dvc", "repro", *sorted(readers)], project)   # the datasets; what reads them ran in the first repro
        after = _hashes(probe)
        versions = run(["probes", "versions", "--repo-id", "org/probes", "--probes", "age_comparison*"], project,
                       hub=hub)
        run(PUBLISH, project, hub=hub)
        commits, last = hub.commits("org/probes"), hub.last_commit("org/probes")
    finally:
        hub.close()
    return SimpleNamespace(probe=probe, template=template, text=text, original=original, before=before,
                           after=after, readers=readers, changed=changed, status=status, published=published,
                           first_commits=first_commits, first=first, versions=versions, commits=commits, last=last)


@pytest.fixture(scope="module")
def template_error(new_template, pipeline) -> SimpleNamespace:
    """A template with an unknown slot, its generate stage re-run; then the template as it was."""
    template = new_template.template
    template.write_text(new_template.text.replace("than someone aged {age2}.", "than someone aged {age3}."))
    failed = subprocess.run(["dvc", "repro", GENERATE], cwd=pipeline.project,
                            env=_env(MIRROR, pipeline.project), capture_output=True, text=True)
    hashes = _hashes(new_template.probe)
    template.write_text(new_template.original)
    return SimpleNamespace(returncode=failed.returncode, output=failed.stderr + failed.stdout, hashes=hashes)


@pytest.fixture(scope="module")
def causal(template_error, pipeline, tiny_gpt2) -> str:
    """A causal LM given as a local folder, through `probes run` on the oLMpics probes; what it printed."""
    return run(["probes", "run", "--model", str(tiny_gpt2), "--name", "gpt", "--probes", "olmpics"],
               pipeline.project)


# --- the first run ---------------------------------------------------------------------------------------------

def test_probes_run_prints_every_protocols_table(pipeline):
    printed = pipeline.printed
    assert "| age_comparison | zero-shot | accuracy |" in printed and "| ParaRel |" in printed
    assert "| age_comparison (MC-MLM) | MLP | MAX |" in printed and "| CALUM | rte | C_R |" in printed
    assert "Skipped:" not in printed and "results/report.md" in printed


def test_the_olmpics_datasets_zero_shot_results_and_report(pipeline):
    project = pipeline.project
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
    grid = json.loads((project / "results/zeroshot_grid/tiny/age_comparison/original/metrics.json").read_text())
    assert grid["n"] == 4 * 3   # every ordered pair of the dev ages 15-18
    assert (project / "results/heatmaps/tiny.png").read_bytes()[:4] == b"\x89PNG"


def test_the_olmpics_curves_and_their_report(pipeline):
    project = pipeline.project
    curve = json.loads((project / "results/curve/tiny/age_comparison/linear/metrics.json").read_text())
    assert curve["sizes"] == [4, 8] and set(curve["sensitivity"]) == {"nolang", "perturbed"}
    assert (project / "data/features/tiny/age_comparison/meta.json").is_file()
    olmpics = (project / "results/olmpics.md").read_text()
    assert "MLM-BASELINE" in olmpics and "ESIM" in olmpics and "property_conjunction" in olmpics
    assert (project / "results/curves/age_comparison_MC-MLM.png").read_bytes()[:4] == b"\x89PNG"   # and MC-QA's


def test_pararel_results_and_report(pipeline):
    project = pipeline.project
    pararel = json.loads((project / "results/pararel/tiny/metrics.json").read_text())
    assert pararel["relations_evaluated"] == ["P19", "P37", "P530"] and pararel["macro"]["Consistency"]["n"] == 2
    assert "| tiny (smoke) | test |" in (project / "results/pararel.md").read_text()   # the smoke profile, marked


def test_calum_data_results_and_report(pipeline):
    project = pipeline.project
    signal = (project / "data/calum/rte/signal/dev.jsonl").read_text().splitlines()
    assert len(signal) == 277 and json.loads(signal[0])["sentence1"].startswith("[Sentence1] ")
    calum = json.loads((project / "results/calum/tiny-rte-Para-MRPC/metrics.json").read_text())
    assert calum["tasks_trained"] == ["rte", "mrpc"] and calum["C_R"]["n"] == 1 and calum["capped"]
    assert "| tiny-Para-MRPC ‡" in (project / "results/calum.md").read_text()


def test_the_grid_stage_stores_every_cell(pipeline):
    grid = [json.loads(line) for line in (pipeline.project / "results/grid/summary.jsonl").read_text().splitlines()]
    assert [r["status"] for r in grid] == ["stored"] * 4 and grid[0]["metrics"]["original"]["n"] == 3


# --- a second run ------------------------------------------------------------------------------------------------

def test_every_command_imports_only_the_code_its_stage_depends_on(pipeline):
    """Every `probes` process of the run (each stage's command, `probes run`'s too) imported only modules that its
    command's key file lists (code/<command>.txt, what the stage depends on): an edit to any other file cannot
    change what it wrote."""
    from probes.code import commands, key_name
    from probes.main import parser

    project, known, checked = pipeline.project, commands(parser()), set()
    for line in (project.parent / IMPORT_LOG).read_text().splitlines():
        entry = json.loads(line)
        if not entry["argv"] or Path(entry["argv"][0]).name != "probes":
            continue
        key = key_name(entry["argv"][1:], known)
        if key in (None, "code", "run"):
            continue
        listed = {row.split()[1] for row in (project / "code" / f"{key}.txt").read_text().splitlines()
                  if not row.startswith("#")}
        imported = {Path(f).resolve().relative_to(project.resolve()).as_posix() for f in entry["modules"].values()}
        assert imported - listed == set(), f"{key}: {' '.join(entry['argv'][1:])}"
        checked.add(key)
    assert {"sources-fetch", "tables/wordnet", "generate/age_comparison", "fidelity", "evaluate-zeroshot", "report",
            "evaluate-curve", "evaluate-mcqa", "olmpics-report", "evaluate-pararel", "train-consistency",
            "pararel-report", "evaluate-calum", "calum-report", "export-lm-eval", "grid"} <= checked


def test_a_second_repro_has_nothing_to_do(second_run):
    assert UP_TO_DATE in second_run.again


def test_an_offline_refetch_keeps_the_verified_copy_and_nothing_to_do(second_run):
    """No mirror configured, no network: a forced re-fetch keeps the verified copy (persisted output, files
    checked in place), and the pipeline is still up to date."""
    assert len(second_run.raw) == 16
    assert second_run.refetched == second_run.raw
    assert UP_TO_DATE in second_run.offline


def test_the_batch_size_invalidates_nothing(second_run):
    """The batch size changes no score."""
    assert UP_TO_DATE in second_run.batch_size_status


# --- a new template ----------------------------------------------------------------------------------------------

def test_a_new_template_reruns_exactly_the_stages_reading_it_and_adds_only_its_variant(new_template):
    """`dvc status` names exactly the stages whose deps hold the YAML, `dvc repro` builds the new variant and leaves
    every other variant's files as they were."""
    t = new_template
    # the two datasets of the probe, and the fidelity report (its construction rules read every probe's YAML: its
    # command's code lists every generator's folder)
    assert t.changed == ["fidelity.txt", "generate/age_comparison.txt"]
    assert t.readers == {GENERATE, GENERATE_GRID, FIDELITY}
    assert _changed_stages(t.status) == t.readers
    assert {f for f in t.after if f not in t.before} == {f"reworded/{name}" for name in
                                                        ("README.md", "meta.json", "train.jsonl", "dev.jsonl")}
    # every file written before keeps its bytes; the folder's marker (what probekit wrote) lists the new ones too
    assert all(t.after[f] == h for f, h in t.before.items() if f != ".probekit.json")
    assert "reworded/dev.jsonl" in json.loads((t.probe / ".probekit.json").read_text())["files"]
    rows = (t.probe / "reworded/dev.jsonl").read_text().splitlines()
    assert json.loads(rows[0])["question"]["stem"].startswith("Someone aged ")


def test_publish_uploads_only_the_new_config(new_template):
    """`probes publish` before the new template, then after it: one commit, every other file keeps its commit."""
    t = new_template
    assert "commit" in t.published and t.first_commits == 2   # the repo's first commit, then ours
    assert "age_comparison-reworded" in t.versions and "age_comparison-nolang" in t.versions
    assert len(t.commits) == 3
    touched = {path for path, sha in t.last.items() if sha == t.commits[-1]}
    assert touched == {"README.md"} | {path for path in t.last if path.startswith("age_comparison-reworded/")}
    assert all(t.last[path] == sha for path, sha in t.first.items() if path != "README.md")


def test_a_template_error_names_the_file_and_template_and_keeps_the_dataset(template_error, new_template):
    """A template error stops the stage with the file and the template id; the last dataset stays in place."""
    assert template_error.returncode != 0
    assert f"{TEMPLATE}: template 'reworded': unknown slot(s) ['age3']" in template_error.output
    assert template_error.hashes == new_template.after


# --- a causal LM -------------------------------------------------------------------------------------------------

def test_a_causal_lm_runs_what_applies_and_the_report_says_what_it_skipped(causal, pipeline, tiny_bert, tiny_gpt2):
    """A causal LM given as a local folder: it runs the oLMpics protocols that apply to its family (zero-shot) and
    skips the others (the MC-MLM and MC-QA curves), saying so in its table and in the report."""
    project, printed = pipeline.project, causal
    assert yaml.safe_load((project / "params.yaml").read_text())["models"] == {"tiny": str(tiny_bert),
                                                                              "gpt": str(tiny_gpt2)}
    zero_shot = json.loads((project / "results/zeroshot/gpt/age_comparison/original/metrics.json").read_text())
    assert zero_shot["scoring"] == "causal" and zero_shot["n"] == 9 and zero_shot["device"] == "cpu"
    for where in ("curve/gpt/age_comparison/mlp", "curve/gpt/property_conjunction/mcqa"):
        assert "causal" in json.loads((project / "results" / where / "metrics.json").read_text())["skipped"], where
    assert not (project / "results/pararel/gpt").exists()   # not asked for (--probes)
    assert "| age_comparison | zero-shot | accuracy |" in printed and "| ParaRel |" not in printed
    assert "Skipped:" in printed and "- curve/gpt/age_comparison" in printed
    report = (project / "results/report.md").read_text()
    assert "| gpt " in report and "| tiny " in report   # beside every model already in the results
    assert "gpt" in (project / "results/olmpics.md").read_text().split("## Skipped")[-1]


@pytest.fixture(scope="module")
def versions(causal, pipeline) -> SimpleNamespace:
    """Versions you can read (docs/probes.md): the project committed after a `dvc repro` of the probe, then (1) the
    `original` variant's template reworded (same slots, same answers) and the probe regenerated: `probes diff`
    of the last commit against the working tree; (2) the template as it was and the train age range narrowed in
    params instead: `probes diff` again, and the train rows before and after for a hand count."""
    project = pipeline.project
    run(["dvc", "repro", GENERATE], project)   # with the `code` stage above it
    commit = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm"]
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run([*commit, "versions"], cwd=project, check=True, capture_output=True)
    template = project / TEMPLATE
    original = template.read_text()
    assert original.count("than me in age, If I am") == 1
    template.write_text(original.replace("than me in age, If I am", "than I am in age, if I am"))
    run(["dvc", "repro", GENERATE], project)   # with the `code` stage above it
    reworded = run(["probes", "diff", "data/probes/age_comparison", "--json", "reworded.json"], project)
    template.write_text(original)
    before = {s: (project / f"data/probes/age_comparison/original/{s}.jsonl").read_text() for s in ("train", "dev")}
    params = yaml.safe_load((project / "params.yaml").read_text())
    values = {"ages": {"train": [60, 90], "dev": [15, 38]}, "years": {"train": [1830, 1919], "dev": [1920, 2000]}}
    params["age_comparison"]["values"] = values
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["dvc", "repro", GENERATE], project)   # with the `code` stage above it
    narrowed = run(["probes", "diff", "data/probes/age_comparison", "--json", "narrowed.json"], project)
    after = {s: (project / f"data/probes/age_comparison/original/{s}.jsonl").read_text() for s in ("train", "dev")}
    return SimpleNamespace(project=project, reworded=reworded, narrowed=narrowed, before=before, after=after,
                           reworded_json=json.loads((project / "reworded.json").read_text()),
                           narrowed_json=json.loads((project / "narrowed.json").read_text()))


def test_a_reworded_template_diffs_as_changed_stems_and_names_the_controls(versions):
    """`probes diff` (last commit vs the working tree) after the `original` template was reworded and `dvc repro`:
    every example of the variants reading that template changed in its stem alone, none added or removed, the
    answer balance the same; the controls deriving from `original` are named; the other variants untouched."""
    records = {(r["variant"], r["split"]): r for r in versions.reworded_json["datasets"]}
    for split in ("train", "dev"):
        r = records[("original", split)]
        assert r["changed"] == r["rows"]["new"] > 0 and (r["added"], r["removed"], r["unchanged"]) == (0, 0, 0)
        assert r["fields"] == {"stem": r["changed"]}
        assert r["balance"]["old"] == r["balance"]["new"] and r["balance"]["moved"] is False
        assert records[("ages_as_years", split)]["fields"] == {"stem": r["changed"]}   # the same template
        for control in ("nolang", "perturbed"):
            assert records[(control, split)]["base"] == "original" and "source" in records[(control, split)]["fields"]
        for variant in ("release_phrasing", "birth_year", "years_as_ages"):
            assert records[(variant, split)]["changed"] == 0 and records[(variant, split)]["unchanged"] > 0
    assert "## Controls" in versions.reworded and "`nolang` (control of `original`)" in versions.reworded
    assert "Untouched (3): age_comparison/birth_year, age_comparison/release_phrasing, age_comparison/years_as_ages." \
        in versions.reworded


def test_a_narrowed_age_range_adds_and_removes_what_a_hand_count_gives(versions):
    records = {(r["variant"], r["split"]): r for r in versions.narrowed_json["datasets"]}
    for split in ("train", "dev"):
        old, new = ([json.loads(line) for line in rows[split].splitlines()] for rows in (versions.before,
                                                                                        versions.after))
        a, b = ({json.dumps(r["args"], sort_keys=True) for r in rows} for rows in (old, new))
        r = records[("original", split)]
        assert (r["added"], r["removed"], r["unchanged"], r["changed"]) == (len(b - a), len(a - b), len(a & b), 0)
        gold = [{w: sum(1 for x in rows if x["question"]["choices"][ord(x["answerKey"]) - 65]["text"] == w)
                 for w in ("older", "younger")} for rows in (old, new)]
        assert (r["balance"]["old"], r["balance"]["new"]) == tuple(gold)
    assert records[("original", "train")]["added"] > 0 and records[("original", "dev")]["added"] == 0


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _stages_reading(project: Path, path: str) -> set[str]:
    """The names of the stages (as `dvc status` prints them, foreach and matrix stages expanded) with a dependency
    that is ``path`` or a folder holding it, from DVC's own reading of dvc.yaml."""
    from dvc.repo import Repo

    with Repo(str(project)) as repo:
        return {stage.name for stage in repo.index.stages
                if any(path == dep.def_path or path.startswith(dep.def_path.rstrip("/") + "/") for dep in stage.deps)}


def _changed_stages(status: str) -> set[str]:
    """The stage names `dvc status` prints (unindented lines ending in a colon)."""
    return {line[:-1] for line in status.splitlines() if line.endswith(":") and not line.startswith((" ", "\t"))}
