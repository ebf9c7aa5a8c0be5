"""The learning curves on the original release's own train and dev files (params ``curve.release``, ``--release-of``
on ``probes evaluate curve`` and ``mcqa``), as the original trains every curve (its configs' ``train_data_path``):
what a release curve reads and records, the report's sections when both kinds of curves ran, and the paper
profile's stages."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import yaml

from probes.main import main

from helpers import REPO, toy_rows, write_toy_probe


def _release_rows(rows: list[dict]) -> list[dict]:
    """``rows`` as the release writes them: id, question, answerKey (no slots, no template)."""
    return [{"answerKey": r["answerKey"], "id": r["id"], "question": r["question"]} for r in rows]


def release_layout(root: Path, probe: str, train: list[dict], dev: list[dict]) -> Path:
    """A project's raw/: the checkout's manifest, and ``probe``'s release train and dev files where it says; the
    manifest's path."""
    from probekit.sources.manifest import load_manifest, release_file

    manifest = root / "raw" / "sources.yaml"
    manifest.parent.mkdir(parents=True)
    shutil.copy2(REPO / "raw" / "sources.yaml", manifest)
    entries = load_manifest(manifest)
    for split, rows in (("train", train), ("dev", dev)):
        path = root / "raw" / "olmpics" / release_file(entries, "olmpics", probe, split).path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in _release_rows(rows)), encoding="utf-8")
    return manifest


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_curve_given_a_release_probe_trains_on_its_train_file_and_scores_its_dev_file(informative_bert,
                                                                                         tmp_path):
    """``probes evaluate curve --release-of age_comparison``: the head trains on rows of the release's train file
    only and is scored on every row of its dev file; metrics.json names the probe, the release's dev file (by its
    sha256) and ``curve_data: release``, and holds no control (the release has none); the browser reads the rows
    each run scored from that file."""
    train, dev = toy_rows(60, 1, "train"), toy_rows(24, 2, "dev")
    manifest = release_layout(tmp_path, "age_comparison", train, dev)
    out = tmp_path / "results" / "curve" / "tiny" / "olmpics-age_comparison"
    assert main(["evaluate", "curve", "--model", str(informative_bert), "--release-of", "age_comparison",
                 "--manifest", str(manifest), "--setting", "mlp", "--setting", "linear", "--sizes", "8,16",
                 "--seeds", "1,2", "--out", str(out)]) == 0
    dev_file = next((tmp_path / "raw" / "olmpics").glob("*_dev.jsonl"))
    for setting in ("mlp", "linear"):
        metrics = _read(out / setting / "metrics.json")
        assert (metrics["probe"], metrics["variant"], metrics["curve_data"], metrics["release_source"]) == (
            "age_comparison", "release", "release", "olmpics")
        assert metrics["data_fingerprint"] == hashlib.sha256(dev_file.read_bytes()).hexdigest()
        assert metrics["n"] == 24 and metrics["controls"] == {} and metrics["sensitivity"] == {}
        subsets = _read(out / setting / "subsets.json")["seeds"]
        assert all(len(ids) == 16 and set(ids) <= {r["id"] for r in train} for ids in subsets.values())
        predicted = [json.loads(line)["id"] for line in (out / setting / "original" / "predictions.jsonl")
                     .read_text().splitlines()]
        assert predicted == [r["id"] for r in dev]
        assert sorted(p.name for p in (out / setting).iterdir() if p.is_dir()) == ["original"]
    from evaluators.predictions.files import find_predictions   # the browser finds the rows each run scored

    found = find_predictions(tmp_path / "results", data=tmp_path / "data", root=tmp_path)
    assert sorted((f.setting, f.probe, f.variant, f.data) for f in found) == [
        (s, "age_comparison", "release", dev_file) for s in ("linear", "mlp")]


def test_mlm_baseline_and_esim_run_on_the_release_files(tmp_path):
    """The baselines read the release as their protocol's curves do: MLM-BASELINE (``curve``) and ESIM (``mcqa``,
    without the intermediate step the release has no variant for: encyclopedic_composition's single_hop)."""
    train, dev = toy_rows(40, 1, "train"), toy_rows(16, 2, "dev")
    manifest = release_layout(tmp_path, "age_comparison", train, dev)
    release_layout_more(tmp_path, "encyclopedic_composition", train, dev)
    results = tmp_path / "results"
    assert main(["evaluate", "curve", "--model", "mlm-baseline", "--release-of", "age_comparison", "--manifest",
                 str(manifest), "--setting", "mlp", "--sizes", "8", "--seeds", "1",
                 "--out", str(results / "mlm-baseline" / "olmpics-age_comparison" / "mlp")]) == 0
    assert main(["evaluate", "mcqa", "--model", "esim", "--release-of", "encyclopedic_composition", "--manifest",
                 str(manifest), "--sizes", "8", "--seeds", "1",
                 "--out", str(results / "esim" / "olmpics-encyclopedic_composition" / "mcqa")]) == 0
    baseline = _read(results / "mlm-baseline" / "olmpics-age_comparison" / "mlp" / "metrics.json")
    esim = _read(results / "esim" / "olmpics-encyclopedic_composition" / "mcqa" / "metrics.json")
    assert (baseline["baseline"], baseline["probe"], baseline["curve_data"], baseline["n"]) == (
        "MLM-BASELINE", "age_comparison", "release", 16)
    assert (esim["baseline"], esim["probe"], esim["curve_data"], esim["intermediate"], esim["n"]) == (
        "ESIM", "encyclopedic_composition", "release", None, 16)
    assert set(_read(results / "esim" / "olmpics-encyclopedic_composition" / "mcqa" / "subsets.json")["seeds"]["1"]
               ) <= {r["id"] for r in train}


def release_layout_more(root: Path, probe: str, train: list[dict], dev: list[dict]) -> None:
    """One more probe's release files in the raw/ :func:`release_layout` made."""
    from probekit.sources.manifest import load_manifest, release_file

    entries = load_manifest(root / "raw" / "sources.yaml")
    for split, rows in (("train", train), ("dev", dev)):
        path = root / "raw" / "olmpics" / release_file(entries, "olmpics", probe, split).path
        path.write_text("".join(json.dumps(r) + "\n" for r in _release_rows(rows)), encoding="utf-8")


def test_the_report_shows_the_generated_and_the_release_curves_of_a_probe_each_in_its_section(informative_bert,
                                                                                               tmp_path):
    """Both curves of age_comparison ran (the generated probe's, with its controls, and the release's): the report
    has a section for each, the release one saying what it read; the summary and the plots hold both. (Before the
    release's curves were told apart, the second was refused as "a second MLP result".)"""
    probe = write_toy_probe(tmp_path / "probes" / "age_comparison", 60, 24)
    for meta in probe.glob("*/meta.json"):   # the generated probe of that name
        meta.write_text(json.dumps({**_read(meta), "probe": "age_comparison"}))
    manifest = release_layout(tmp_path, "age_comparison", toy_rows(60, 3, "train"), toy_rows(24, 4, "dev"))
    results = tmp_path / "results"
    common = ["evaluate", "curve", "--model", str(informative_bert), "--setting", "mlp", "--sizes", "8,16",
              "--seeds", "1"]
    assert main([*common, "--data", str(probe), "--out", str(results / "tiny" / "age_comparison" / "mlp")]) == 0
    assert main([*common, "--release-of", "age_comparison", "--manifest", str(manifest),
                 "--out", str(results / "tiny" / "olmpics-age_comparison" / "mlp")]) == 0
    md, summary, plots = tmp_path / "olmpics.md", tmp_path / "olmpics.json", tmp_path / "curves"
    assert main(["olmpics-report", str(results), "--out", str(md), "--metrics", str(summary), "--plots",
                 str(plots)]) == 0
    report = md.read_text(encoding="utf-8")
    sections = [line for line in report.splitlines() if line.startswith("## age_comparison")]
    assert sections == ["## age_comparison", "## age_comparison (on the release files)"]
    release = report.split("## age_comparison (on the release files)")[1]
    assert "- data: the original release's own train and dev files" in release
    rows = _read(summary)
    assert set(rows) == {"age_comparison", "age_comparison (on the release files)"}
    label = str(informative_bert)
    assert "nolang" in rows["age_comparison"][label]["MLP"]   # the generated probe's controls, not the release's
    assert "nolang" not in rows["age_comparison (on the release files)"][label]["MLP"]
    assert {p.name for p in plots.glob("*.png")} == {"age_comparison.png",
                                                     "age_comparison_on_the_release_files.png"}


def _compose(tmp_path: Path, profile: str) -> Path:
    """params.yaml as `dvc exp run -S profile=<profile>` writes it, in a project folder with the checkout's dvc.yaml."""
    from dvc.utils.hydra import compose_and_dump

    project = tmp_path / profile
    project.mkdir()
    shutil.copy2(REPO / "dvc.yaml", project / "dvc.yaml")
    compose_and_dump(project / "params.yaml", str(REPO / "conf"), None, "config", str(tmp_path / "no-plugins"),
                     [f"profile={profile}"])
    return project


def test_the_paper_profile_runs_every_curve_on_the_release_files_and_the_default_none(tmp_path):
    """Composed, the paper profile sets ``curve.release: [olmpics]``: each model's MC-MLM and MC-QA curve and each
    baseline's has a stage on the release's files, depending on raw/olmpics and not on data/probes, written beside
    the generated curves under results/curve (which the report reads) without sharing an output; the default
    profile has none of them."""
    from dvc.repo import Repo

    from evaluators.shared.params import CurveParams
    from probekit.params import read_params, section

    stages = {}
    for profile in ("paper", "smoke"):
        project = _compose(tmp_path, profile)
        params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
        stages[profile] = {s.name: s for s in Repo.init(project, no_scm=True).index.stages}
        stages[profile + "-params"] = params
    paper, p = stages["paper"], stages["paper-params"]
    assert p["curve"]["release"] == ["olmpics"] and stages["smoke-params"]["curve"]["release"] == []
    typed = section(read_params(tmp_path / "paper" / "params.yaml"), "curve", CurveParams)   # the typed switch
    assert typed.release == ["olmpics"]
    assert section(read_params(REPO / "params.yaml"), "curve", CurveParams).release == []
    release = {name: s for name, s in paper.items() if "_release" in name and not name.startswith("zeroshot")}
    models, mc_mlm, mc_qa = p["runs"]["olmpics"], p["probes"]["mc_mlm"], p["probes"]["mc_qa"]
    as_qa = p["probes"]["mc_mlm_as_mc_qa"]
    assert set(release) == (
        {f"curve_release@{m}-{q}-olmpics" for m in models for q in mc_mlm}
        | {f"curve_release_baseline@{q}-olmpics" for q in mc_mlm}
        | {f"mcqa_release@{m}-{q}-olmpics" for m in models for q in mc_qa}
        | {f"mcqa_release-mc_mlm@{m}-{q}-olmpics" for m in models for q in as_qa}
        | {f"mcqa_release_baseline@{q}-olmpics" for q in mc_qa}
        | {f"mcqa_release_baseline-mc_mlm@{q}-olmpics" for q in as_qa})
    for name, stage in release.items():
        deps = [Path(d.def_path).as_posix() for d in stage.deps]
        assert "raw/olmpics" in deps and not any(d.startswith("data/probes") for d in deps), name
        assert "--release-of olmpics:" in stage.cmd and "--data" not in stage.cmd, name
        assert all(Path(o.def_path).as_posix().startswith(("results/curve/", "data/features/")) for o in stage.outs)
    outs = [Path(o.def_path).as_posix() for s in paper.values() for o in s.outs]
    assert len(outs) == len(set(outs))
    assert paper["curve_release@roberta-large-objects_comparison-olmpics"].cmd.split() == (
        "probes evaluate curve --model roberta-large --release-of olmpics:objects_comparison --setting mlp "
        "--setting linear --features data/features/roberta-large/olmpics-objects_comparison "
        "--lr-selection results/curve_lr/roberta-large --device auto "
        "--out results/curve/roberta-large/olmpics-objects_comparison").split()
    assert not {name for name in stages["smoke"] if "_release" in name and not name.startswith("zeroshot")}


def test_a_probe_the_release_lacks_or_no_input_at_all_is_refused_in_one_line_before_any_work(tmp_path, capsys):
    """``--release-of`` a probe of one's own (no release file) names the probe and the source; a release file not
    fetched says how to fetch it; a curve given neither ``--data`` nor ``--release-of`` says to give one; nothing
    is written."""
    manifest = release_layout(tmp_path, "age_comparison", toy_rows(20, 1, "train"), toy_rows(8, 2, "dev"))
    common = ["--model", "mlm-baseline", "--manifest", str(manifest), "--sizes", "8", "--seeds", "1"]
    out = tmp_path / "out"
    assert main(["evaluate", "curve", *common, "--setting", "mlp", "--release-of", "my_probe", "--out", str(out)]) == 2
    assert "--release-of my_probe: source 'olmpics' has no file for probe 'my_probe'" in capsys.readouterr().err
    assert main(["evaluate", "mcqa", "--model", "esim", "--manifest", str(manifest), "--release-of",
                 "property_conjunction", "--out", str(out)]) == 2
    assert "fetch it first: probes sources fetch olmpics" in capsys.readouterr().err
    assert main(["evaluate", "curve", *common, "--setting", "mlp", "--out", str(out)]) == 2
    assert "give --data FOLDER or --release-of PROBE" in capsys.readouterr().err
    assert not out.exists()
