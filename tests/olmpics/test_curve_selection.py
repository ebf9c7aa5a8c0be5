"""What the MC-MLM heads' training chooses on dev, as the original's AllenNLP trainer did or in place of what it
left unknown: the epoch (``curve.training.select_epoch: best``, the original's ``"validation_metric": "+EM"``: the
best dev epoch's weights restored, a tie keeping the earlier) and the learning rate (``curve.training.lr`` a list:
one value per model, selected on dev)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from evaluators.engine.models import load_lm
from evaluators.olmpics import heads
from evaluators.olmpics import mc_mlm as mlm_curve
from evaluators.olmpics import mc_mlm_curve as curve
from evaluators.shared import training
from evaluators.shared.params import TrainingParams
from probekit.tokens.refs import ModelRef

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
    (correct, _, chosen), spread = best
    assert (correct == spread[0]).all() and chosen == spread[2]
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


def test_mc_qa_refuses_an_epoch_choice_it_does_not_make():
    """MC-QA's trainer passes no dev set yet: ``best`` there is refused when the params are read, not ignored."""
    from pydantic import ValidationError

    from evaluators.shared.params import McqaParams

    with pytest.raises(ValidationError, match="MC-QA and ESIM evaluate their last epoch"):
        McqaParams(training={"select_epoch": "best"})
    assert McqaParams(training={"epochs": 2}).training.select_epoch == "last"
