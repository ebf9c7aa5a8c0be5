"""`probes rehearse --estimate`: the rehearsal's own stage times scaled to the paper profile, tested on those
timings: with the rehearsal's own params as the target it gives the measured times back; each stated factor
(sizes × seeds × epochs, the examples a limit left out, the paper's models by parameters) scales what it says."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
import yaml

from helpers import REPO
from probes.main import main
from probes.rehearse import rehearsal_params
from probes.rehearse_estimate import PARAMS_M, estimate

TIMINGS = {"generate-pararel": 4.0, "zeroshot@tiny": 10.0, "curve@tiny-age_comparison": 24.0,
           "curve_baseline@age_comparison": 14.0, "pararel@tiny": 9.0}


@pytest.fixture
def rehearsal(tmp_path):
    """A rehearsal's copy as --estimate reads it: conf/, params.yaml, timings.json, a 1M-parameter model folder,
    one zero-shot metrics.json of 4 scored rows out of its data file's 10."""
    from probekit.params import compose

    shutil.copytree(REPO / "conf", tmp_path / "conf")
    model = tmp_path / "tiny"
    model.mkdir()
    with open(model / "model.safetensors", "wb") as fh:   # 4 MB of float32: 1M parameters
        fh.truncate(4_000_000)
    params = rehearsal_params(compose(tmp_path / "conf", ["profile=paper"]), {"tiny": str(model)}, 4, "cpu", 250)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "timings.json").write_text(json.dumps({"stages": TIMINGS}))
    data = tmp_path / "data" / "probes" / "age_comparison" / "original" / "dev.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text("{}\n" * 10)
    out = tmp_path / "results" / "zeroshot" / "tiny" / "age_comparison" / "original"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps({"n": 4, "data": "data/probes/age_comparison/original/dev.jsonl"}))
    return tmp_path, params


def test_the_rehearsals_own_params_give_its_own_timings_back(rehearsal):
    work, params = rehearsal
    target = copy.deepcopy(params)
    target["runs"] = {paper: [] for paper in params["runs"]}   # no paper model: the rehearsal's own stages
    target["zeroshot"]["limit"] = 4
    for m in (work / "results").rglob("metrics.json"):   # the data as scored: nothing left out
        m.write_text(json.dumps({"n": 10, "data": "data/probes/age_comparison/original/dev.jsonl"}))
    rows = estimate(TIMINGS, params, target, work)
    assert {r["stage"]: round(r["expected"], 9) for r in rows} == TIMINGS


def test_each_factor_scales_what_it_states(rehearsal):
    work, params = rehearsal
    paper = copy.deepcopy(params)
    paper["runs"] = {"olmpics": ["bert-base-uncased", "roberta-large"], "pararel": ["roberta-base"]}
    paper["curve"]["seeds"] = params["curve"]["seeds"] * 2                 # twice the seeds
    rows = {r["stage"]: r for r in estimate(TIMINGS, params, paper, work)}
    fixed = 4.0                                                           # the cheapest stage: not scaled
    assert rows["generate-pararel"]["expected"] == 4.0
    assert rows["curve_baseline@age_comparison"]["expected"] == pytest.approx(fixed + 10.0 * 2)
    both = (PARAMS_M["bert-base-uncased"] + PARAMS_M["roberta-large"]) / 1.0   # Σ parameters / the tiny 1M
    assert rows["curve@tiny-age_comparison"]["expected"] == pytest.approx(2 * fixed + 20.0 * 2 * both)
    assert rows["zeroshot@tiny"]["expected"] == pytest.approx(2 * fixed + 6.0 * 10 / 4 * both)
    assert rows["zeroshot@tiny"]["how"].startswith("examples 4 → 10")
    assert rows["zeroshot@tiny"]["gpu"] == pytest.approx(10 / 3737 + 10 / 1964)   # PERF.md's H100 rates
    assert "a lower bound" in rows["pararel@tiny"]["how"]
    assert rows["pararel@tiny"]["expected"] == pytest.approx(fixed + 5.0 * PARAMS_M["roberta-base"])


def test_the_command_prints_the_table_and_the_total(rehearsal, capsys):
    work, _ = rehearsal
    assert main(["rehearse", "--estimate", str(work)]) == 0
    out = capsys.readouterr().out
    assert "| curve@tiny-age_comparison | 24s |" in out and "In all: " in out and "rehearse_estimate.py" in out
    assert main(["rehearse", "--estimate", str(work / "results")]) == 2   # no timings.json there


def test_every_stage_that_repeats_per_model_is_scaled_by_its_papers_models():
    """Each stage of dvc.yaml that runs once per model of a paper's `runs` list (a foreach over it, or a matrix's
    `model`) is known to the estimate with that paper (PAPER_OF), so the paper's models scale it; a zero-shot one's
    results folder is where dvc.yaml writes it (the examples its limit left out)."""
    from probes.rehearse_estimate import PAPER_OF, ZEROSHOT, _folder

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        over = stage.get("foreach") if "foreach" in stage else (stage.get("matrix") or {}).get("model")
        if isinstance(over, str) and over.startswith("${runs."):
            assert PAPER_OF.get(name) == over[len("${runs."):-1], name
        if name in ZEROSHOT:
            folder = _folder(name, "${item}")   # what --estimate reads the scored examples under
            assert all(o == folder or o.startswith(f"{folder}/") for o in map(str, stage["do"]["outs"])), name
