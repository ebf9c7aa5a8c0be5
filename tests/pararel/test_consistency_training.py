"""ParaRel consistency training (§8): the loss against hand-computed values and the original's formula, and a
tiny random BERT trained on a tiny cloze set (two training relations, one held out)."""

from __future__ import annotations

import json
import math
from itertools import permutations

import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError

from evaluators.engine.models import load_lm
from evaluators.pararel.consistency_training import ConsistencyParams, consistency_loss, run, train
from evaluators.training import one_thread
from probekit.data.cloze import read_cloze_set
from probekit.tokens.refs import ModelRef

from helpers import write_toy_cloze_set

RELATIONS = {  # relation: (patterns, (subject, object) tuples); every object one WordPiece token
    "P37": (["the official language of [X] is [Y] .", "in [X] , people speak [Y] .", "[X] speaks [Y] ."],
            list(zip("quebec brazil mexico austria egypt chile peru cuba".split(),
                     "french portuguese spanish german arabic spanish spanish spanish".split()))),
    "P138": (["[X] is named after [Y] .", "[X] was named for [Y] .", "[X] , named after [Y] ."],
             list(zip("georgetown jamestown charleston williamsburg victoria adelaide elizabeth augusta".split(),
                      "george james charles william victoria adelaide elizabeth augustus".split()))),
    "P17": (["[X] is located in [Y] .", "[X] , which is in [Y] .", "[X] lies in [Y] ."],
            list(zip("paris berlin rome madrid toronto tokyo lyon osaka".split(),
                     "france germany italy spain canada japan france japan".split()))),
}
PARAMS = dict(train_relations=["P37", "P138"], consistency_weight=1.0, lr=3e-3, epochs=6, batch_size=4,
              mlm_steps=1, mlm_batch_size=4, block_size=32, seed=3)


@pytest.fixture(scope="module")
def cloze(tmp_path_factory):
    return read_cloze_set(write_toy_cloze_set(tmp_path_factory.mktemp("cloze") / "pararel", RELATIONS))


@pytest.fixture(scope="module")
def runs(cloze, tiny_bert, tmp_path_factory):
    """The same run twice (fresh model, same seed): its metrics and output folder."""
    out = []
    for k in range(2):
        loaded = load_lm(ModelRef("tiny", str(tiny_bert), str(tiny_bert)), scoring="mlm")
        folder = tmp_path_factory.mktemp(f"run{k}") / "out"
        with one_thread(True):
            out.append((run(loaded, cloze, folder, ConsistencyParams(**PARAMS), progress=False), folder))
    return out


def _epoch_means(history: list[dict]) -> tuple[float, float]:
    """The mean Lc of the first and of the last epoch."""
    epochs: dict[int, list[float]] = {}
    for row in history:
        epochs.setdefault(row["epoch"], []).append(row["consistency_loss"])
    return tuple(sum(v) / len(v) for v in (epochs[0], epochs[max(epochs)]))


def _original_loss(logits: torch.Tensor, n_patterns: int) -> torch.Tensor:
    """The original's expression (pararel/ft/train_consistency.py, loss "kl"), with ``.T`` spelled out."""
    logits = logits.reshape(-1, n_patterns, logits.shape[1])
    pairs = torch.tensor(list(permutations(range(n_patterns), 2)))
    first = logits.index_select(1, pairs[:, 0]).permute(2, 1, 0)
    second = logits.index_select(1, pairs[:, 1]).permute(2, 1, 0)
    return F.kl_div(first.log_softmax(0), second.softmax(0), reduction="batchmean")


def test_consistency_loss_values():
    same = torch.tensor([[1.0, 2.0, 0.5]] * 3 + [[0.0, -1.0, 3.0]] * 3)  # 2 tuples x 3 identical patterns
    assert consistency_loss(same, 3).item() == pytest.approx(0.0, abs=1e-7)
    # p = (1/2, 1/2), q = (3/4, 1/4): KL(p||q) + KL(q||p) = sum (p - q)(log p - log q)
    # = (-1/4) log(2/3) + (1/4) log 2 = log(3) / 4; divided by K = 2 candidates: log(3) / 8
    two = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])
    assert consistency_loss(two, 2).item() == pytest.approx(math.log(3) / 8, rel=1e-6)
    assert consistency_loss(two.flip(0), 2).item() == pytest.approx(math.log(3) / 8, rel=1e-6)  # symmetric
    # summed over tuples: the pair twice is twice the loss
    assert consistency_loss(torch.cat([two, two.flip(0)]), 2).item() == pytest.approx(math.log(3) / 4, rel=1e-6)
    random = torch.randn(5 * 4, 7, generator=torch.Generator().manual_seed(0))
    assert consistency_loss(random, 4).item() == pytest.approx(_original_loss(random, 4).item(), rel=1e-5)
    with pytest.raises(ValueError, match="whole number"):
        consistency_loss(random, 3)


def test_training_makes_the_training_relations_consistent(runs):
    metrics, _ = runs[0]
    history = metrics["history"]
    first, last = _epoch_means(history)
    print(f"Lc first epoch {first:.5f}, last epoch {last:.5f}")
    assert last < first
    before, after = (metrics[k]["train"]["macro"]["Consistency"]["mean"] for k in ("before", "after"))
    print(f"train Consistency before {before:.3f}, after {after:.3f}; held-out",
          metrics["before"]["held_out"]["macro"]["Consistency"]["mean"], "->",
          metrics["after"]["held_out"]["macro"]["Consistency"]["mean"])
    assert after > before
    # one step per batch of 4 of each relation's 8 tuples, MLM on each round's first step, lr decaying to 0
    assert len(history) == PARAMS["epochs"] * 2 * 2
    assert [r["relation"] for r in history[:4]] == ["P37", "P138", "P37", "P138"]
    assert [r["mlm_loss"] is None for r in history[:4]] == [False, True, False, True]
    assert history[0]["lr"] == pytest.approx(PARAMS["lr"]) and history[-1]["lr"] < history[0]["lr"] / 5
    assert metrics["eval_relations"] == ["P17"]


def test_the_consistency_loss_alone_lowers_itself(cloze, tiny_bert):
    """Without MLM (the paper's -MLM ablation), Lc's own gradient lowers it."""
    loaded = load_lm(ModelRef("tiny", str(tiny_bert), str(tiny_bert)), scoring="mlm")
    with one_thread(True):
        history = train(loaded, cloze, ConsistencyParams(**PARAMS | {"mlm_steps": 0}), progress=False)
    first, last = _epoch_means(history)
    print(f"Lc alone: first epoch {first:.5f}, last epoch {last:.5f}")
    assert last < first / 5 and all(row["mlm_loss"] is None for row in history)
    assert not loaded.model.training


def test_run_writes_its_outputs_and_is_deterministic(runs):
    (first, folder), (second, _) = runs
    assert first["history"] == second["history"]
    assert first["after"] == second["after"]
    written = json.loads((folder / "metrics.json").read_text())
    assert written["history"] == first["history"]
    assert {"before", "after", "params"} <= set(written)
    assert set(written["before"]["train"]["relations"]) == {"P37", "P138"}
    assert written["before"]["held_out"]["relations"]["P17"]["Accuracy"] is not None
    lines = (folder / "history.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == first["history"]
    assert (folder / "model" / "config.json").is_file() and (folder / "model" / "tokenizer.json").is_file()
    reloaded = load_lm(ModelRef("trained", str(folder / "model"), str(folder / "model")), scoring="mlm")
    assert reloaded.head_pretrained


def test_params_refuse_unknown_keys():
    assert ConsistencyParams().train_relations == ["P138", "P37", "P449"]
    with pytest.raises(ValidationError, match="lambda"):
        ConsistencyParams(**{"lambda": 0.5})


def test_a_training_relation_without_tuples_is_named(tmp_path, tiny_bert):
    """Every object of a training relation dropped by the one-token filter: an error naming the relation and what
    to change, not a division by zero."""
    from probekit.errors import DataError

    empty = dict(RELATIONS, P19=(["[X] was born in [Y] ."], []))
    cloze = read_cloze_set(write_toy_cloze_set(tmp_path / "pararel", empty))
    loaded = load_lm(ModelRef("tiny", str(tiny_bert), str(tiny_bert)), scoring="mlm")
    with pytest.raises(DataError, match=r"relation P19 has no tuple left .*\(consistency\.train_relations\)"):
        train(loaded, cloze, ConsistencyParams(**PARAMS | {"train_relations": ["P37", "P19"]}), progress=False)
