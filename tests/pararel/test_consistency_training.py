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
from evaluators.shared.training import one_thread
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
              mlm_steps=1, mlm_batch_size=4, block_size=32, seed=3, sample="first")   # every tuple once


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
          metrics["before"]["test"]["macro"]["Consistency"]["mean"], "->",
          metrics["after"]["test"]["macro"]["Consistency"]["mean"])
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
    assert written["before"]["test"]["relations"]["P17"]["Accuracy"] is not None
    lines = (folder / "history.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == first["history"]
    assert (folder / "model" / "config.json").is_file() and (folder / "model" / "tokenizer.json").is_file()
    reloaded = load_lm(ModelRef("trained", str(folder / "model"), str(folder / "model")), scoring="mlm")
    assert reloaded.head_pretrained


def test_the_training_tuples_are_the_originals_draw_with_repeats(tiny_bert, tmp_path):
    """Issue 41 item 9: the original's generate_data_ft_consistency.py reshuffles its tuples at every step of its
    loop over them and stops after tuple ``num_tuples``: ``limit + 1`` uniform draws with replacement (its released
    100_3_P138_P37_P449: 101 tuples per relation, subjects repeated), the default (``sample: with_replacement``,
    seeded); ``first`` takes the first ``limit``. Training takes the draw: ceil(21 / 4) = 6 batches, not 5."""
    from evaluators.pararel.consistency_training import training_tuples

    objects = "french portuguese spanish german arabic".split()
    big = {"P37": (RELATIONS["P37"][0], [(f"land {k}", objects[k % 5]) for k in range(60)]), "P17": RELATIONS["P17"]}
    data = read_cloze_set(write_toy_cloze_set(tmp_path / "pararel", big))
    rows = [t for t in data.tuples if t["relation"] == "P37"]
    drawn = training_tuples(data, "P37", 20, "with_replacement", 3)
    ids = [t["tuple_id"] for t in drawn]
    assert len(ids) == 21 and len(set(ids)) < 21 and all(t in rows for t in drawn)   # repeats, as the release
    assert drawn == training_tuples(data, "P37", 20, "with_replacement", 3)
    assert drawn != training_tuples(data, "P37", 20, "with_replacement", 4)
    assert len(training_tuples(data, "P37", None, "with_replacement", 3)) == 60   # as many draws as tuples
    assert training_tuples(data, "P37", 20, "first", 3) == rows[:20]
    params = ConsistencyParams(train_relations=["P37"], limit=20, batch_size=4, epochs=1, mlm_steps=0, seed=3)
    assert params.sample == "with_replacement"
    with one_thread(True):
        assert len(train(_load(tiny_bert), data, params, progress=False)) == 6
        assert len(train(_load(tiny_bert), data, params.model_copy(update={"sample": "first"}), progress=False)) == 5


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


SPLIT = dict(RELATIONS, **{  # §8.2's three groups: train P37 P138, validation P17, test P19 P36
    "P19": (["[X] was born in [Y] .", "[X] , born in [Y] .", "the birthplace of [X] is [Y] ."],
            list(zip("mozart dante goethe chopin verdi rubens".split(),
                     "salzburg florence frankfurt warsaw busseto siegen".split()))),
    "P36": (["the capital of [X] is [Y] .", "[X] has its capital in [Y] .", "[Y] is the capital of [X] ."],
            list(zip("france italy spain japan peru chile".split(),
                     "paris rome madrid tokyo lima santiago".split()))),
})
SELECTING = PARAMS | dict(validation_relations=["P17"], consistency_weight=[0.01, 3.0], epochs=4)
# on SPLIT and the tiny BERT, validation Consistent-Acc is 0.125 after λ 0.01 and 0.0 after λ 3: no tie


def _load(folder):
    return load_lm(ModelRef("tiny", str(folder), str(folder)), scoring="mlm")


@pytest.mark.parametrize("weights", [[0.01, 3.0], [3.0, 0.01]], ids=["best-first", "best-last"])
def test_lambda_is_selected_by_validation_consistent_acc_and_its_model_kept(tiny_bert, tmp_path, weights):
    """§8.2: "We perform minimal tuning of the parameters (λ ∈ 0.1, 0.5, 1) to pick the best model, train for three
    epochs, and select the best model based on Consistent-Acc on the validation set." Every λ starts from the same
    weights; the model kept (and saved) is the chosen λ's, whether it was trained first or last; the test
    relations are the N-1 relations neither trained nor validated on."""
    cloze = read_cloze_set(write_toy_cloze_set(tmp_path / "pararel", SPLIT))
    with one_thread(True):
        m = run(_load(tiny_bert), cloze, tmp_path / "selected",
                ConsistencyParams(**SELECTING | {"consistency_weight": weights}), progress=False)
    selection = m["selection"]
    tried = {c["consistency_weight"]: c["validation"]["Consistent-Acc"]["mean"] for c in selection["candidates"]}
    print("validation Consistent-Acc per λ:", tried, "chosen", selection["consistency_weight"])
    assert list(tried) == weights and selection["metric"] == "Consistent-Acc" and not selection["fixed"]
    assert len(set(tried.values())) == 2                       # no tie: the argmax alone decides
    assert selection["consistency_weight"] == max(tried, key=tried.get)
    assert (m["train_relations"], m["validation_relations"], m["eval_relations"]) == (["P37", "P138"], ["P17"],
                                                                                    ["P19", "P36"])
    assert set(m["before"]) == set(m["after"]) == {"train", "validation", "test"}
    assert m["after"]["validation"]["macro"]["Consistent-Acc"]["mean"] == tried[selection["consistency_weight"]]
    assert [row["consistency_weight"] for row in m["history"]] == [w for w in weights for _ in range(4 * 2 * 2)]
    # the saved model is the chosen λ's, as trained alone from the same initial weights
    with one_thread(True):
        alone = run(_load(tiny_bert), cloze, tmp_path / "alone",
                    ConsistencyParams(**SELECTING | {"consistency_weight": selection["consistency_weight"]}),
                    progress=False)
    assert alone["selection"]["fixed"] and alone["after"] == m["after"]
    kept, single = (_load(tmp_path / f / "model").model.state_dict() for f in ("selected", "alone"))
    assert all(torch.equal(kept[k], single[k]) for k in single)


def test_the_params_split_and_lambda_checks():
    with pytest.raises(ValidationError, match="need validation_relations"):
        ConsistencyParams(consistency_weight=[0.1, 0.5, 1.0])
    with pytest.raises(ValidationError, match="must not share relations .*P17"):
        ConsistencyParams(train_relations=["P17"], validation_relations=["P17"])
    with pytest.raises(ValidationError, match="distinct"):
        ConsistencyParams(consistency_weight=[0.1, 0.1], validation_relations=["P17"])
    assert ConsistencyParams(consistency_weight=0.5).weights() == [0.5]   # a fixed λ: the switch


N1 = ("P17 P19 P20 P27 P30 P36 P37 P101 P103 P106 P127 P131 P136 P138 P140 P159 P176 P178 P264 P276 P279 P361 P364 "
      "P407 P413 P449 P495 P740 P937 P1376 P1412").split()   # the paper's 31 N-1 relations (§5.1)


def test_the_pipeline_params_take_the_papers_split(tmp_path):
    """§8.2: "we opt to use only three relations: original-language, named-after, and original-network" (P364, P138,
    P449; the original code trained on P37, official language), "For validation, we randomly pick three relations
    of the remaining relations and use the remaining 25 for testing", λ among 0.1, 0.5, 1."""
    from pathlib import Path

    from probekit.params import read_params, section

    params = section(read_params(str(Path(__file__).parents[2] / "params.yaml")), "consistency", ConsistencyParams)
    every = {rel: (["[X] is [Y] ."], [("a", "b")]) for rel in N1}
    cloze = read_cloze_set(write_toy_cloze_set(tmp_path / "pararel", every))
    split = params.split(cloze)
    assert split["train"] == ["P364", "P138", "P449"] and len(split["validation"]) == 3
    assert len(split["test"]) == 25 and not set(split["test"]) & {*split["train"], *split["validation"]}
    assert params.weights() == [0.1, 0.5, 1.0] and params.typed
    assert params.split(cloze, [split["test"][0]])["test"] == [split["test"][0]]   # --eval-relations
    from probekit.errors import DataError

    with pytest.raises(DataError, match="P138 are also trained or validated on"):
        params.split(cloze, ["P138"])
    with pytest.raises(DataError, match=r"^consistency\.test_relations: .*no relation 'P99'"):
        params.split(cloze, ["P99"])


def test_the_typed_ablation_spreads_the_loss_over_the_whole_vocabulary(cloze, tiny_bert):
    """Table 7's "-typed": "applying our loss on the candidate set rather than on the entire vocabulary is
    beneficial (-typed)"; the original without --candidate_set compares the whole vocabulary's distributions."""
    from evaluators.engine.scorer import Engine
    from evaluators.pararel.consistency_training import _Relation

    loaded = _load(tiny_bert)
    rel = _Relation(Engine(loaded.model, loaded.tokenizer, loaded.family), cloze, "P37", None)
    batch = torch.arange(4)
    with torch.no_grad():
        whole = rel.logits(loaded.model, batch, loaded.tokenizer.pad_token_id, "cpu", typed=False)
        typed = rel.logits(loaded.model, batch, loaded.tokenizer.pad_token_id, "cpu", typed=True)
    assert whole.shape == (4 * rel.n_patterns, loaded.model.config.vocab_size)
    assert typed.shape[1] == len(set(o for _, o in RELATIONS["P37"][1]))   # french portuguese spanish german arabic
    rows = torch.as_tensor(rel.encoded.candidates()[(batch[:, None] + rel.n_tuples * torch.arange(rel.n_patterns)
                                                     [None]).reshape(-1).numpy()])
    assert torch.equal(typed, whole.gather(1, rows))
    assert consistency_loss(whole, rel.n_patterns) != consistency_loss(typed, rel.n_patterns)
    with one_thread(True):
        on = train(_load(tiny_bert), cloze, ConsistencyParams(**PARAMS | {"epochs": 1}), progress=False)
        off = train(_load(tiny_bert), cloze, ConsistencyParams(**PARAMS | {"epochs": 1, "typed": False}),
                    progress=False)
    assert [r["consistency_loss"] for r in on] != [r["consistency_loss"] for r in off]
