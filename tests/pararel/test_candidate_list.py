"""``consistency.candidate_list`` and ``tuple_key``: the original's typed consistency loss runs over one candidate per tuple
(``pararel/ft/train_consistency.py`` lines 595-601: ``candidate_ids[-1].append(tokenizer.vocab[d['obj_label']])``
for every row of the relation), so an object weighs by its tuples in the softmax, and ``batchmean`` divides Lc by
the list's length, the relation's tuple count, not its object count."""

from __future__ import annotations

import pytest
import torch
import yaml

from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from evaluators.pararel.consistency_training import ConsistencyParams, _Relation, consistency_loss, train
from evaluators.shared.training import one_thread
from probekit.data.cloze import read_cloze_set
from probekit.tokens.refs import ModelRef

from helpers import REPO, write_toy_cloze_set

# P37: 6 tuples over 3 objects, spanish four times
RELATIONS = {
    "P37": (["the official language of [X] is [Y] .", "in [X] , people speak [Y] ."],
            list(zip("quebec brazil mexico chile peru cuba".split(),
                     "french portuguese spanish spanish spanish spanish".split()))),
    "P17": (["[X] is located in [Y] .", "[X] lies in [Y] ."],
            list(zip("paris berlin rome madrid".split(), "france germany italy spain".split()))),
}
PARAMS = dict(train_relations=["P37"], consistency_weight=1.0, lr=3e-3, epochs=1, batch_size=3, mlm_steps=0,
              seed=3, sample="first")


def _load(path):
    return load_lm(ModelRef("tiny", str(path), str(path)), scoring="mlm")


def test_per_tuple_lists_one_candidate_per_tuple(tiny_bert, tmp_path):
    data = read_cloze_set(write_toy_cloze_set(tmp_path / "set", RELATIONS))
    loaded = _load(tiny_bert)
    engine = Engine(loaded.model, loaded.tokenizer, loaded.family)
    rels = {key: _Relation(engine, data, "P37", None, key) for key in ("set", "per_tuple")}
    batch = torch.arange(2)
    with torch.no_grad():
        logits = {key: rel.logits(loaded.model, batch, loaded.tokenizer.pad_token_id, "cpu")
                  for key, rel in rels.items()}
    vocab = loaded.tokenizer.convert_tokens_to_ids
    assert logits["set"].shape[1] == 3 and logits["per_tuple"].shape[1] == 6   # objects / tuples
    assert rels["per_tuple"].listed == [vocab(w) for w in "french portuguese spanish spanish spanish spanish".split()]
    whole = rels["set"].logits(loaded.model, batch, loaded.tokenizer.pad_token_id, "cpu", typed=False).detach()
    assert torch.equal(logits["per_tuple"], whole[:, rels["per_tuple"].listed])
    # the original's loss on the listed columns: KL over ordered pattern pairs, batchmean over the 6 columns
    lc = consistency_loss(logits["per_tuple"], 2)
    q = logits["per_tuple"].reshape(2, 2, 6)
    expected = sum(torch.nn.functional.kl_div(q[:, a].T.log_softmax(0), q[:, b].T.softmax(0), reduction="sum")
                   for a, b in ((0, 1), (1, 0))) / 6
    assert lc.item() == pytest.approx(expected.item(), rel=1e-4)
    assert lc.item() != pytest.approx(consistency_loss(logits["set"], 2).item(), rel=1e-3)

    with one_thread(True):
        runs = {key: train(_load(tiny_bert), data, ConsistencyParams(**PARAMS, candidate_list=key), progress=False)
                for key in ("set", "per_tuple")}
    assert [r["consistency_loss"] for r in runs["set"]] != [r["consistency_loss"] for r in runs["per_tuple"]]


def test_the_paper_profile_lists_a_candidate_per_tuple_as_the_original(tmp_path):
    from dvc.utils.hydra import compose_and_dump

    from probekit.params import ParamsFile, section

    got = {}
    for profile in ("smoke", "paper"):
        out = tmp_path / f"{profile}.yaml"
        compose_and_dump(out, str(REPO / "conf"), None, "config", str(tmp_path / "no-plugins"), [f"profile={profile}"])
        params = ParamsFile(out, yaml.safe_load(out.read_text(encoding="utf-8")))
        consistency = section(params, "consistency", ConsistencyParams)
        got[profile] = consistency.candidate_list, consistency.tuple_key
    assert got == {"smoke": ("set", "tuple"), "paper": ("per_tuple", "subject")}
    with pytest.raises(ValueError):
        ConsistencyParams(candidate_list="tuples")


def test_the_evaluations_before_and_after_follow_tuple_key(tiny_bert, tmp_path, monkeypatch):
    """``consistency.tuple_key``: the evaluations of §8's run count one tuple per subject where the original's
    ``encode_consistency_probe.py`` does (line 82); the paper profile sets it."""
    from evaluators.pararel import consistency_training as ct

    data = read_cloze_set(write_toy_cloze_set(tmp_path / "set", RELATIONS))
    seen, real = [], ct.evaluate
    monkeypatch.setattr(ct, "evaluate", lambda *a, **k: seen.append(k["tuple_key"]) or real(*a, **k))
    with one_thread(True):
        ct.run(_load(tiny_bert), data, tmp_path / "out", ConsistencyParams(**PARAMS, tuple_key="subject"),
               progress=False)
    assert seen and set(seen) == {"subject"}
