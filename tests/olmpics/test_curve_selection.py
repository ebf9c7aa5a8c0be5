"""What the MC-MLM heads' training chooses on dev, as the original's AllenNLP trainer did or in place of what it
left unknown: the epoch (``curve.training.select_epoch: best``, the original's ``"validation_metric": "+EM"``: the
best dev epoch's weights restored, a tie keeping the earlier) and the learning rate (``curve.training.lr`` a list:
one value per model, selected on dev)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from pydantic import ValidationError

from evaluators.engine.models import load_lm
from evaluators.olmpics import heads, lr_selection
from evaluators.olmpics import mc_mlm as mlm_curve
from evaluators.olmpics import mc_mlm_curve as curve
from evaluators.shared import training
from evaluators.shared.params import CurveTrainingParams, TrainingParams
from probekit.tokens.refs import ModelRef
from probes.main import main

from helpers import write_toy_probe

pytestmark = pytest.mark.usefixtures("one_thread")   # tests/conftest.py: one intra-op thread


# --- the epoch: the best on dev, as AllenNLP's trainer ---------------------------------------------------------

def _linear_run(select_epoch: str, accuracies: list[float]):
    """A linear model trained 4 epochs on random data; ``validate`` returns the scripted ``accuracies`` and keeps
    the weights it saw after each epoch."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    x, y = torch.randn(48, 4), torch.randint(0, 2, (48,))
    scripted, seen = iter(accuracies), []

    def validate() -> float:
        assert not model.training   # validated in eval mode, as AllenNLP's validation loop
        seen.append(training.snapshot(model))
        return next(scripted)

    hp = TrainingParams(lr=1e-1, epochs=4, select_epoch=select_epoch)
    chosen = training.train(model, lambda b: torch.nn.functional.cross_entropy(model(x[b]), y[b]), 48, hp, seed=3,
                            validate=validate)
    return model, chosen, seen


def test_best_restores_the_best_dev_epoch_and_a_tie_keeps_the_earlier():
    """Dev accuracies 0.5, 0.8, 0.8, 0.6: epoch 2 is restored (epoch 3 ties it, and AllenNLP's MetricTracker counts
    only a strictly greater metric as better); the epochs trained are those of ``last``, whose weights are epoch
    4's."""
    best, chosen, seen = _linear_run("best", [0.5, 0.8, 0.8, 0.6])
    assert chosen == {"selected_epoch": 2, "dev_accuracy": [0.5, 0.8, 0.8, 0.6]}
    assert all(torch.equal(best.state_dict()[k], v) for k, v in seen[1].items())
    assert not torch.equal(seen[1]["weight"], seen[3]["weight"])
    last, nothing, _ = _linear_run("last", [])
    assert nothing is None
    assert all(torch.equal(last.state_dict()[k], v) for k, v in seen[3].items())   # validating changed no step


def test_the_last_epoch_is_restored_by_nothing_when_it_is_the_best():
    model, chosen, seen = _linear_run("best", [0.1, 0.2, 0.3, 0.9])
    assert chosen["selected_epoch"] == 4
    assert all(torch.equal(model.state_dict()[k], v) for k, v in seen[3].items())
    with pytest.raises(ValueError, match="validation set"):
        training.train(model, lambda b: model(torch.zeros(len(b), 4)).sum(), 8,
                       TrainingParams(select_epoch="best"), seed=1)


def _peaking_early(n_train: int = 64, n_dev: int = 40):
    """Features whose training labels contradict the dev labels: every epoch moves the head away from dev, so its
    dev accuracy peaks early and falls."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n_train + n_dev, 4, generator=g)
    rule = (x[:, 0] > 0).long()
    gold = torch.cat([1 - rule[:n_train], rule[n_train:]])
    pairs = torch.tensor([[0, 1]] * (n_train + n_dev))
    train_split = curve.Split(lambda idx: x[torch.as_tensor(idx)], pairs[:n_train], gold[:n_train])
    dev = curve.Split(lambda idx: x[n_train + torch.as_tensor(idx)], pairs[n_train:], gold[n_train:])
    return train_split, dev


def _head(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return heads.BaselineHead(4, 2)


def test_the_curve_evaluates_the_best_epochs_weights_and_records_the_choice():
    """A head whose dev accuracy peaks early: with ``select_epoch: best`` each run's curve point is its best dev
    epoch's accuracy (the first of the best), recorded with every epoch's; with ``last``, the last epoch's of the
    same runs; the choice is bit for bit the same over one or two processes."""
    train_split, dev = _peaking_early()
    orders = {seed: np.random.default_rng(seed).permutation(len(train_split)) for seed in (1, 2)}
    sizes = [32, 64]
    hp = TrainingParams(lr=3e-2, epochs=6, select_epoch="best")
    with training.one_thread(True):
        best = [curve.variant_curve(_head, train_split, dev, orders, sizes, "MLP", hp, "", False, p) for p in (1, 2)]
        last = curve.variant_curve(_head, train_split, dev, orders, sizes, "MLP",
                                   hp.model_copy(update={"select_epoch": "last"}), "", False)
    (choices, _, chosen), spread = best
    assert (choices == spread[0]).all() and chosen == spread[2]
    gold = dev.gold.cpu().numpy()
    correct, last = choices == gold, (last[0] == gold, None, last[2])
    assert last[2] is None and set(chosen) == {"32", "64"}
    earlier = 0
    for k, n in enumerate(sizes):
        for s in range(len(orders)):
            epoch, by_epoch = chosen[str(n)]["selected_epoch"][s], chosen[str(n)]["dev_accuracy"][s]
            assert len(by_epoch) == 6 and epoch == 1 + int(np.argmax(by_epoch))
            assert correct[k, s].mean() == pytest.approx(by_epoch[epoch - 1])    # the weights evaluated are epoch's
            assert last[0][k, s].mean() == pytest.approx(by_epoch[-1])           # the same runs' last epoch
            earlier += by_epoch[epoch - 1] > by_epoch[-1]
    assert earlier >= 3, chosen   # the data makes the difference show


def test_the_curves_metrics_record_each_runs_epoch(informative_bert, tmp_path):
    loaded = load_lm(ModelRef("tiny", str(informative_bert), str(informative_bert)), scoring="mlm")
    probe = write_toy_probe(tmp_path / "toy", 40, 20)
    m = mlm_curve.run(model="tiny", data=probe, out=tmp_path / "out", setting="linear", sizes=[8, 16], seeds=[1, 2],
                      hp=TrainingParams(lr=1e-2, epochs=3, select_epoch="best"), load=lambda: loaded,
                      progress=False)
    assert m["training"]["select_epoch"] == "best"
    assert set(m["epoch_selection"]) == {"original", "nolang", "perturbed"}
    for n in ("8", "16"):
        point = m["epoch_selection"]["original"][n]
        assert set(point) == {"selected_epoch", "dev_accuracy"} and len(point["selected_epoch"]) == 2
        assert m["curve"][n]["per_seed"] == pytest.approx([acc[e - 1] for e, acc in
                                                           zip(point["selected_epoch"], point["dev_accuracy"])])
    written = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert written["epoch_selection"] == m["epoch_selection"]


# --- the lr: one per model, selected on dev where the original's is not known ---------------------------------

def _load(path):
    return load_lm(ModelRef("tiny", str(path), str(path)), scoring="mlm")


def test_the_lr_is_selected_per_model_by_the_mean_ws_of_the_curves_it_trains(informative_bert, tmp_path):
    """Two probes, two candidates: each candidate's WS per probe and setting is the WS of that probe's original
    curve (the curve's sizes, its first seed) trained with it, and the lr selected is the one of the higher mean."""
    loaded = _load(informative_bert)
    probes = [write_toy_probe(tmp_path / name, 40, 20) for name in ("toy_a", "toy_b")]
    hp = CurveTrainingParams(lr=[3e-2, 1e-7], epochs=3)
    record = mlm_curve.select_lr(model="tiny", loaded=loaded, datas=probes, settings=["mlp", "linear"],
                                 sizes=[8, 32], seeds=[2, 1], hp=hp, progress=False)
    assert not record["fixed"] and record["seed"] == 2 and record["at_edge"] and record["settings"] == ["MLP", "LINEAR"]
    assert record["probes"] == {"toy_a": {"sizes": [8, 32], "n": 20}, "toy_b": {"sizes": [8, 32], "n": 20}}
    scores = []
    for candidate in record["candidates"]:
        ws = []
        for probe in probes:
            for setting in ("MLP", "LINEAR"):
                curve_of = mlm_curve.run(model="tiny", data=probe / "original", out=tmp_path / "c" / setting,
                                         setting=setting, sizes=[8, 32], seeds=[2], hp=hp.with_lr(candidate["lr"]),
                                         load=lambda: loaded, progress=False)
                assert candidate["WS"][probe.name][setting] == curve_of["WS"]["value"]
                ws.append(curve_of["WS"]["value"])
        scores.append(np.mean(ws))
        assert candidate["score"] == pytest.approx(scores[-1])
    assert scores[0] != scores[1] and record["lr"] == hp.lr[int(np.argmax(scores))]


def test_a_tie_keeps_the_first_listed_and_a_single_lr_is_fixed():
    ws = {"p": {"MLP": 0.7}}
    assert lr_selection.ranked([2e-5, 1e-5], [ws, ws]) == (0, [0.7, 0.7])
    assert lr_selection.ranked([2e-5, 1e-5], [ws, {"p": {"MLP": 0.71}}])[0] == 1
    assert lr_selection.head_lr(CurveTrainingParams(lr=[3e-5]), None)[1] == {"lr": 3e-5, "fixed": True}
    with pytest.raises(ValidationError, match="distinct"):
        CurveTrainingParams(lr=[1e-5, 1e-5])


def _params(tmp_path, **curve) -> str:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"profile": "smoke", "curve": {"sizes": [8, 16], "seeds": [1], **curve}}))
    return str(path)


def test_the_curves_read_the_models_selection_and_the_report_says_how_it_was_chosen(informative_bert, tmp_path,
                                                                                       capsys):
    probe = write_toy_probe(tmp_path / "toy", 40, 20)
    params = _params(tmp_path, training={"lr": [1e-7, 3e-2], "epochs": 2})
    model, selection, results = str(informative_bert), tmp_path / "curve_lr", tmp_path / "results"
    curve = ["evaluate", "curve", "--model", model, "--data", str(probe), "--setting", "mlp", "--params", params,
             "--out", str(results / "tiny/toy/mlp")]
    assert main(curve) == 2 and "probes evaluate curve-lr" in capsys.readouterr().err   # no selection given
    assert main(["evaluate", "curve-lr", "--model", model, "--data", str(probe), "--params", params,
                 "--out", str(selection)]) == 0
    record = json.loads((selection / "metrics.json").read_text())
    said = f"lr {record['lr']:g}, selected on dev among 1e-07 (WS"
    assert said in capsys.readouterr().out
    assert record["settings"] == ["MLP", "LINEAR"] and record["sizes"] == [8, 16] and record["seed"] == 1
    assert main([*curve, "--lr-selection", str(selection)]) == 0
    metrics = json.loads((results / "tiny/toy/mlp/metrics.json").read_text())
    assert metrics["training"]["lr"] == metrics["lr_selection"]["lr"] == record["lr"]
    assert [c["lr"] for c in metrics["lr_selection"]["candidates"]] == [1e-7, 3e-2]
    assert main(["olmpics-report", str(results), "--out", str(tmp_path / "olmpics.md")]) == 0
    report = (tmp_path / "olmpics.md").read_text()
    assert said in report and "curves over 1 MC-MLM probes" in report
    # the model's random-init baseline (the curve_random stage) trains its heads with the model's selected lr
    assert main([*curve[:3], f"random:{model}", *curve[4:-1], str(results / "random-tiny/toy/mlp"),
                 "--lr-selection", str(selection)]) == 0
    fresh = json.loads((results / "random-tiny/toy/mlp/metrics.json").read_text())
    assert fresh["training"]["lr"] == record["lr"] and fresh["random_init"]["of"] == model
    # params changed after the selection: refused, not used
    stale = _params(tmp_path, sizes=[8, 32], training={"lr": [1e-7, 3e-2], "epochs": 2})
    assert main([*curve[:-4], "--params", stale, "--out", str(tmp_path / "other"), "--lr-selection",
                 str(selection), "--sizes", "8,32"]) == 2
    assert "made for other params (sizes [8, 16], the curve's [8, 32])" in capsys.readouterr().err


def test_a_fixed_lr_loads_no_model_and_changes_no_curve(informative_bert, tmp_path, monkeypatch):
    """The smoke profile's number: the selection stage writes it without loading the model, and the curve read
    through it is the curve run without it, byte for byte."""
    from evaluators.engine import kept_models

    probe = write_toy_probe(tmp_path / "toy", 40, 20)
    params = _params(tmp_path, training={"epochs": 1})
    model = str(informative_bert)
    real = kept_models.scoring_lm
    monkeypatch.setattr(kept_models, "scoring_lm", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(["evaluate", "curve-lr", "--model", model, "--data", str(probe), "--params", params,
                 "--out", str(tmp_path / "curve_lr")]) == 0
    assert json.loads((tmp_path / "curve_lr/metrics.json").read_text())["lr"] == 5e-5
    monkeypatch.setattr(kept_models, "scoring_lm", real)
    curve = ["evaluate", "curve", "--model", model, "--data", str(probe), "--setting", "linear", "--params", params]
    assert main([*curve, "--out", str(tmp_path / "plain")]) == 0
    assert main([*curve, "--out", str(tmp_path / "read"), "--lr-selection", str(tmp_path / "curve_lr")]) == 0
    files = {p.relative_to(tmp_path / "plain"): p.read_bytes() for p in (tmp_path / "plain").rglob("*.*")}
    assert files and files == {p.relative_to(tmp_path / "read"): p.read_bytes()
                               for p in (tmp_path / "read").rglob("*.*")}
    assert json.loads(files[Path("metrics.json")])["lr_selection"] == {"lr": 5e-5, "fixed": True}
