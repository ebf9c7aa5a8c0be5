"""`probes rehearse`: the paper profile's params capped for a tiny model, its stand-in files read by the loaders as
GLUE's and KLUE's own, and (the slow lane) every stage of the paper profile run end to end on a tiny BERT, offline
with the mirror, in a copy of the project that leaves this checkout untouched."""

from __future__ import annotations

import json

import pytest
import yaml

from helpers import MIRROR, REPO
from probes import rehearse_files
from probes.main import main
from probes.rehearse import rehearsal_params


def _paper() -> dict:
    from probekit.params import compose

    return compose(REPO / "conf", ["profile=paper"])


def test_the_rehearsal_keeps_the_papers_code_paths_and_caps_the_examples():
    paper = _paper()
    p = rehearsal_params(paper, {"tiny": "/models/tiny"}, 5, "cpu")
    assert p["models"] == {"tiny": "/models/tiny"} and p["device"] == "cpu" and p["profile"] == "rehearsal"
    assert p["runs"] == {paper: ["tiny"] for paper in ("olmpics", "pararel", "consistency", "calum")}
    # what makes it the paper profile: sizes, seeds, every relation, the five tasks, both groups, early stopping
    for key in ("curve", "mcqa"):
        assert p[key]["sizes"] == paper[key]["sizes"] == [62, 125, 250, 500, 1000, 2000, 4000]
        assert p[key]["seeds"] == paper[key]["seeds"] == [1, 2, 3, 4, 5, 6]
    assert p["pararel_eval"]["relations"] is None and p["calum_tasks"] == paper["calum_tasks"]
    assert p["calum_eval"]["seeds"] == paper["calum_eval"]["seeds"]
    # every CALUM table, each on the tiny model: Table 2's tasks, Table 6's tasks and groups, Table 5's tasks
    assert p["calum_models"] == ["tiny"] and len(paper["calum_models"]) == 9
    assert p["calum_multitask"] == paper["calum_multitask"] | {"models": ["tiny"]}
    assert p["calum_korean"] == paper["calum_korean"] | {"models": ["tiny"]}
    assert list(p["calum_korean"]["tasks"]) == ["kornli", "klue_nli", "klue_sts"]
    assert p["calum_eval"]["patience"] and p["calum_eval"]["epochs"] > p["calum_eval"]["patience"]
    assert p["mlm_baseline"]["patience"] and p["mlm_baseline"]["epochs"] > p["mlm_baseline"]["patience"]
    esim = p["mcqa"]["esim_training"]
    assert esim["patience"] and esim["epochs"] > esim["patience"] and p["mcqa"].get("esim_trainer") != \
        "slanted_triangular"
    # what the cap cuts
    assert p["zeroshot"]["limit"] == p["pararel_eval"]["limit"] == p["calum_eval"]["limit"] == 5
    assert p["calum_eval"]["eval_limit"] == p["consistency"]["limit"] == p["consistency"]["eval_limit"] == 5
    assert p["mcqa"]["intermediate_limit"] == 5
    # offline: GLUE from the raw sources (QNLI's train and test too), KLUE and KorNLI from release files
    assert p["tables"]["glue"]["source"] == "mirror" and p["tables"]["glue"]["splits"]["qnli"] == ["train", "dev",
                                                                                                     "test"]
    assert p["tables"]["klue"] == {"source": "files", "folder": "standins/klue", "tasks": ["klue_nli", "klue_sts"]}
    assert paper["tables"]["kornli"] == {"source": "hub", "splits_as": "original_code"}   # the original's split,
    assert p["tables"]["kornli"] == {"source": "release", "splits_as": "original_code", "holdout": 5}   # dev, test
    assert paper["models"] != p["models"] and paper["zeroshot"]["limit"] is None   # the paper profile unchanged
    short = rehearsal_params(paper, {"tiny": "/models/tiny"}, 5, "cpu", max_size=300)   # --max-size
    assert short["curve"]["sizes"] == short["mcqa"]["sizes"] == [62, 125, 250]


def test_the_stand_in_files_are_read_as_glue_and_klue_release_files(tmp_path):
    """GLUE's own layout (MNLI/dev_matched.tsv, QQP/train.tsv), KLUE's release JSON and KorNLI's release TSVs:
    every split the paper profile reads, every label of each task; a file the raw sources hold is not replaced;
    KorNLI's SNLI training rows enough for the original code's dev and test cut (the paper profile's) and a
    training split, or the MultiNLI rows the release split's test draw takes (§4.1: 10,000 from train)."""
    import generators.calum.generator as calum
    from probekit.params import ParamsFile, section
    from probekit.sources.loaders import glue, klue, kornli
    from probes.rehearse import kornli_extra

    folder = tmp_path / "raw" / "glue"
    folder.mkdir(parents=True)
    (folder / "qnli_dev.tsv").write_text("index\tquestion\tsentence\tlabel\n0\tq?\ts.\tentailment\n")
    written = rehearse_files.write_glue(folder, 12)
    assert "MNLI/dev_mismatched.tsv" in written and "QQP/test.tsv" in written and "QNLI/train.tsv" in written
    assert not any(w.startswith("QNLI/dev") for w in written)
    for task in ("mnli", "qqp", "qnli"):
        for split in rehearse_files.SPLITS[task]:
            path = folder / task.upper() / f"{split}.tsv"
            if not path.is_file():
                continue
            rows = glue.read_tsv(path, task, split)
            assert len(rows) == 12 and all(r["sentence1"] and r["sentence2"] for r in rows)
            if not split.startswith("test"):
                assert {r["label"] for r in rows} == set(glue.LABELS[task].values())
    rehearse_files.write_klue(tmp_path / "klue", 12)
    loaded = klue.load(tmp_path, klue.KlueParams(source="files", folder=tmp_path / "klue"))
    pairs = loaded.tables["pairs"]
    assert sorted(set(zip(pairs["task"], pairs["split"]))) == [("klue_nli", "dev"), ("klue_nli", "train"),
                                                                ("klue_sts", "dev"), ("klue_sts", "train")]
    assert set(pairs[pairs.task == "klue_sts"]["label"]) == {"similar", "not_similar"}
    # KorNLI as the paper profile reads it (the original code's split: dev and test cut from SNLI's training file)
    p = rehearsal_params(_paper(), {"tiny": "/models/tiny"}, 5, "cpu")
    extra = kornli_extra(p, REPO)
    assert extra == {"snli_1.0_train.ko.tsv": 10}   # 2 x holdout, the rehearsal's limit
    written = rehearse_files.write_kornli(tmp_path / "kornli", 12, extra)
    assert sorted(written) == ["multinli.train.ko.tsv", "snli_1.0_train.ko.tsv", "xnli.dev.ko.tsv"]
    params = ParamsFile(None, p)
    pairs = kornli.load(tmp_path, section(params, "tables.kornli", kornli.KorNliParams)).tables["pairs"]
    assert pairs.split.value_counts().to_dict() == {"train": 12, "dev": 5, "test": 5}
    assert set(pairs["label"]) == {"entailment", "neutral", "contradiction"}
    variants, meta = calum.build(params, {"kornli": {"pairs": pairs}}, task="kornli")   # the paper's calum params
    assert meta["counts"]["original"] == {"train": 12, "dev": 5, "test": 5} and meta["test_draw"]["size"] == "tables"
    # KorNLI as the release splits it (the default): the training rows the test draw takes, in MultiNLI's file
    release = {"tables": {"kornli": {"source": "release"}}}
    assert kornli_extra(release, REPO) == {"multinli.train.ko.tsv": 10000}   # probe.yaml's size: Table 1's
    assert kornli_extra(release | {"calum": {"test_draw": {"size": {"kornli": 7}}}}, REPO) == {
        "multinli.train.ko.tsv": 7}
    rehearse_files.write_kornli(tmp_path / "kornli", 12, {"multinli.train.ko.tsv": 7})
    pairs = kornli.load(tmp_path, kornli.KorNliParams()).tables["pairs"]
    assert (pairs.split == "train").sum() == 7 + 24 and (pairs.split == "dev").sum() == 12


def test_bad_input_is_refused_before_any_copy(tmp_path, capsys):
    assert main(["rehearse", "--model", str(tmp_path / "nowhere"), "--project", str(REPO)]) == 2
    assert "not a folder; the rehearsal runs offline on a local model" in capsys.readouterr().err
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "x").write_text("x")
    (tmp_path / "m").mkdir()
    assert main(["rehearse", "--model", str(tmp_path / "m"), "--project", str(REPO)]) == 2   # no config.json
    assert "--model" in capsys.readouterr().err


def _grid_capped(prepare):
    """``probes.rehearse.prepare``, then the copy's grid spec (the grid stage: not a params profile, so the
    rehearsal's --limit leaves it at the packaged MiniLM on 100 and 500 examples of each probe, minutes on a CPU)
    capped at 4 and 8 examples: the same stage and code path, on as few examples as every other protocol here."""

    def capped(project, work, *args, **kwargs):
        params = prepare(project, work, *args, **kwargs)
        spec = work / "grids" / "zeroshot_limits.yaml"
        text = spec.read_text(encoding="utf-8")
        assert "limit: [100, 500]" in text, f"{spec}: the grid's limits moved; update this test"
        spec.write_text(text.replace("limit: [100, 500]", "limit: [4, 8]"), encoding="utf-8")
        return params

    return capped


@pytest.mark.slow
def test_every_stage_of_the_paper_profile_runs_on_a_tiny_bert(tmp_path, tiny_bert, monkeypatch):
    """The rehearsal itself: `dvc repro` of every stage of the paper profile (capped), offline; the paper-only
    paths ran (7 curve sizes × 6 seeds, the five GLUE tasks, Para and All, every ParaRel relation, Table 5's Korean
    stages) and this checkout's dvc.lock and params.yaml are untouched."""
    from probes import rehearse

    monkeypatch.setattr(rehearse, "prepare", _grid_capped(rehearse.prepare))
    before = {n: (REPO / n).read_bytes() for n in ("dvc.lock", "params.yaml")}
    work = tmp_path / "rehearsal"
    assert main(["rehearse", "--model", str(tiny_bert), "--workdir", str(work), "--mirror", str(MIRROR),
                 "--limit", "4", "--max-size", "125", "--project", str(REPO)]) == 0
    assert "Stages that did not complete:\n\n- none" in (work / "REHEARSAL.md").read_text()
    assert {n: (REPO / n).read_bytes() for n in before} == before          # this checkout untouched
    params = yaml.safe_load((work / "params.yaml").read_text())
    alias = tiny_bert.name
    assert list(params["models"]) == [alias] and params["pararel_eval"]["relations"] is None
    curve = json.loads((work / f"results/curve/{alias}/age_comparison/mlp/metrics.json").read_text())
    assert curve["profile"] == "rehearsal" and curve["sizes"] == [62, 125]
    mcqa = json.loads((work / f"results/curve/{alias}/property_conjunction/mcqa/metrics.json").read_text())
    assert mcqa["profile"] == "rehearsal" and mcqa["sizes"] == [62, 125]   # 125: beyond smoke's MC-QA sizes
    assert curve["seeds"] == [1, 2, 3, 4, 5, 6]
    calum = json.loads((work / "results/calum.json").read_text())
    runs = json.dumps(calum)
    for task in ("mnli", "qnli", "rte"):   # Table 6's main tasks, single and multitask
        assert all(f"{alias}-{task}{group}" in runs for group in ("", "-Para", "-All"))
    assert f"{alias}-qqp" in runs and f"{alias}-mrpc-Para" not in runs   # QQP, MRPC: Table 2 only
    assert all(f'"{alias}-{task}"' in runs for task in ("kornli", "klue_nli", "klue_sts"))   # Table 5, as stages
    assert "### Korean tasks (Table 5)" in (work / "results/calum.md").read_text()
