"""MC-MLM learning curves: the statistics against hand computation, nested subsets, head training on cached
features (equal to re-encoding, sliced decoder equal to the whole vocabulary), controls and the cache key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from evaluators.olmpics import features, heads, learning_curve
from evaluators.olmpics import mc_mlm as mlm_curve
from evaluators.olmpics import mc_mlm_curve as curve
from evaluators.olmpics import metrics
from evaluators.olmpics.zeroshot import evaluate
from evaluators.shared.training import TrainingParams, slanted_triangular
from probekit.tokens.refs import ModelRef

from helpers import write_toy_probe

FAST = TrainingParams(lr=1e-2, epochs=8)
# The tiny BERTs here are tests/olmpics/conftest.py's informative_bert and informative_bert_no_head.


@pytest.fixture
def probe(tmp_path) -> Path:
    return write_toy_probe(tmp_path / "toy")


def load(path, **kwargs):
    return load_lm(ModelRef("tiny", str(path), str(path)), scoring="mlm", **kwargs)


# --- statistics ------------------------------------------------------------------------------------------------

def test_ws_max_and_sensitivity_match_hand_computation():
    accs = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0]
    assert metrics.weighted_score(accs) == pytest.approx(
        0.23 * .5 + 0.2 * .6 + 0.17 * .7 + 0.14 * .8 + 0.11 * .9 + 0.08 + 0.07)
    assert metrics.max_score(accs) == 1.0
    control = [0.6, 0.5, 0.5, 0.9, 0.5, 0.5, 1.0]
    # max(0, full - control) = 0, .1, .2, 0, .4, .5, 0
    assert metrics.sensitivity(accs, control) == pytest.approx(0.2 * .1 + 0.17 * .2 + 0.11 * .4 + 0.08 * .5)
    # a capped curve renormalises the paper's first weights
    assert metrics.ws_weights(2).tolist() == pytest.approx([0.23 / 0.43, 0.2 / 0.43])
    assert metrics.weighted_score([0.5, 1.0]) == pytest.approx((0.23 * 0.5 + 0.2) / 0.43)
    with pytest.raises(ValueError):
        metrics.ws_weights(8)
    assert metrics.summary([0.5, 0.7]) == {"mean": pytest.approx(0.6), "std": pytest.approx(0.1414213),
                                           "per_seed": [0.5, 0.7]}


def test_subsets_are_nested_seeded_and_recorded():
    a, b = learning_curve.nested_order(500, 1), learning_curve.nested_order(500, 1)
    assert (a == b).all() and not (a == learning_curve.nested_order(500, 2)).all()
    assert set(a[:62]) <= set(a[:125]) <= set(a[:250]) and len(set(a[:250])) == 250
    kept, dropped = learning_curve.sizes_that_fit([62, 125, 1000], 500, "toy")
    assert (kept, dropped) == ([62, 125], [1000])


def test_rows_pair_by_occurrence_and_curves_are_checked_before_any_model_loads(tmp_path):
    # the k-th occurrence of an id pairs with its k-th occurrence (release files repeat ids); none: -1
    assert learning_curve.pair_rows(["a", "b", "a", "c"], ["a", "a", "b", "x"]).tolist() == [0, 2, 1, -1]
    control = [{"id": "c1", "source_id": "b"}, {"id": "c2", "source_id": "a"}]
    assert learning_curve.control_rows(["a", "b", "z"], control).tolist() == [1, 0, -1]
    from probekit.errors import UsageError

    def no_load():
        raise AssertionError("the model was loaded before the curve's sizes were checked")

    with pytest.raises(UsageError, match="at most 7 curve sizes"):
        mlm_curve.run(model="m", data=write_toy_probe(tmp_path / "toy", 20, 10), out=tmp_path / "o", setting="mlp",
                      sizes=list(range(1, 9)), seeds=[1], hp=FAST, load=no_load)


def test_slanted_triangular_rises_then_decays():
    lrs = [slanted_triangular(t, 100, 0.1, 32) for t in range(100)]
    assert lrs[0] == pytest.approx(1 / 32) and max(lrs) == pytest.approx(1.0) and lrs.index(1.0) == 10
    assert lrs[99] < lrs[50] < lrs[11]


# --- training --------------------------------------------------------------------------------------------------

def test_the_head_learns_a_learnable_probe_as_n_grows(informative_bert, probe, tmp_path):
    loaded = load(informative_bert)
    m = mlm_curve.run(model="tiny", data=probe, out=tmp_path / "out", setting="mlp", sizes=[8, 62, 250],
                      seeds=[1, 2], hp=FAST, load=lambda: loaded, progress=False)
    means = [m["curve"][str(n)]["mean"] for n in (8, 62, 250)]
    assert means[-1] > 0.85 > m["chance"] + 0.3, means
    assert means[-1] > means[0]
    assert m["MAX"]["value"] == pytest.approx(max(means)) and m["MAX"]["at_n"] == (8, 62, 250)[np.argmax(means)]
    # NO-LANG keeps the word, so it is learnable too; the sensitivities are the WS of the positive gaps between the
    # seed-averaged curves (each seed's own kept as information)
    for name in ("nolang", "perturbed"):
        full = np.array([m["curve"][str(n)]["per_seed"] for n in (8, 62, 250)])
        ctl = np.array([m["controls"][name]["curve"][str(n)]["per_seed"] for n in (8, 62, 250)])
        assert m["sensitivity"][name]["value"] == pytest.approx(metrics.sensitivity(full.mean(1), ctl.mean(1)))
        assert m["sensitivity"][name]["per_seed"] == pytest.approx(
            [metrics.sensitivity(f, c) for f, c in zip(full.T, ctl.T)])
    out = tmp_path / "out"
    subsets = json.loads((out / "subsets.json").read_text())
    assert subsets["sizes"] == [8, 62, 250] and len(subsets["seeds"]["1"]) == 250
    rows = [json.loads(line) for line in (out / "nolang" / "predictions.jsonl").read_text().splitlines()]
    assert rows[0]["source_id"] == "dev0000" and len(rows[0]["correct"]["62"]) == 2
    assert m["lm_head"] == "pretrained" and m["setting"] == "MLP" and m["protocol"] == "MC-MLM"


def test_zero_shot_point_equals_the_engine_mask_logit(informative_bert, probe, tmp_path):
    loaded = load(informative_bert)
    m = mlm_curve.run(model="tiny", data=probe / "original", out=tmp_path / "out", setting="linear", sizes=[8],
                      seeds=[1], hp=FAST, load=lambda: loaded, progress=False)
    rows = [json.loads(line) for line in (probe / "original" / "dev.jsonl").read_text().splitlines()]
    predictions, zs = evaluate(Engine(loaded.model, loaded.tokenizer, "mlm"), rows)
    written = [json.loads(line) for line in (tmp_path / "out" / "original" / "predictions.jsonl").read_text()
               .splitlines()]
    assert [r["zero_shot"] for r in written] == [p["correct"] for p in predictions]
    assert m["zero_shot"]["accuracy"] == zs["accuracy"]
    assert m["controls"] == {} and m["sensitivity"] == {}


def test_cached_features_train_the_same_head_as_reencoding(informative_bert, probe):
    loaded = load(informative_bert)
    variants = learning_curve.read_variants(probe / "original", "dev")
    runs = {}
    for reencode in (False, True):
        inputs = mlm_curve.lm_inputs(loaded, variants, split="dev", features_dir=None, device="cpu",
                                     batch_size=16, reencode=reencode, progress=False)
        train_split, dev, make_head = inputs.splits("")
        head = curve.fit(make_head(1), train_split, learning_curve.nested_order(300, 1)[:62], "MLP", FAST, 1)
        runs[reencode] = (head.state_dict(), curve.correct(head, dev))
    cached, reencoded = runs[False], runs[True]
    assert (cached[1] == reencoded[1]).all()
    for name, tensor in cached[0].items():
        torch.testing.assert_close(tensor, reencoded[0][name], atol=1e-5, rtol=1e-4)


def test_sliced_decoder_trains_like_the_whole_vocabulary(informative_bert, probe):
    loaded = load(informative_bert)
    inputs = mlm_curve.lm_inputs(loaded, learning_curve.read_variants(probe / "original", "dev"), split="dev",
                                 features_dir=None, device="cpu", progress=False)
    train_split, dev, make_head = inputs.splits("")
    sliced = make_head(1)
    yes_no = loaded.tokenizer.convert_tokens_to_ids(["no", "yes"])  # the union, sorted by id
    assert sorted(yes_no) == yes_no
    full = heads.MaskedLMHead(loaded.model, range(loaded.tokenizer.vocab_size))
    full_split = curve.Split(train_split.features, torch.as_tensor(yes_no)[train_split.candidates],
                             train_split.gold)
    rows = learning_curve.nested_order(300, 3)[:40]
    curve.fit(sliced, train_split, rows, "MLP", FAST, 3)
    curve.fit(full, full_split, rows, "MLP", FAST, 3)
    x = dev.features(np.arange(len(dev)))
    torch.testing.assert_close(sliced(x), full(x)[:, yes_no], atol=1e-5, rtol=1e-4)


def test_linear_trains_only_the_final_projection(informative_bert, probe):
    loaded = load(informative_bert)
    inputs = mlm_curve.lm_inputs(loaded, learning_curve.read_variants(probe / "original", "dev"), split="dev",
                                 features_dir=None, device="cpu", progress=False)
    train_split, _, make_head = inputs.splits("")
    before = make_head(1).state_dict()
    after = curve.fit(make_head(1), train_split, np.arange(62), "LINEAR", FAST, 1).state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and changed <= {"head.cls.predictions.decoder.weight", "head.cls.predictions.decoder.bias", "head.cls.predictions.bias"}, changed


def test_a_newly_initialised_head_is_trained_from_its_seeded_start_and_reported(informative_bert_no_head, probe,
                                                                                  tmp_path):
    loaded = load(informative_bert_no_head, seed=5)
    m = mlm_curve.run(model="tiny", data=probe / "original", out=tmp_path / "out", setting="mlp", sizes=[250],
                      seeds=[1], hp=FAST, load=lambda: loaded, progress=False)
    assert m["lm_head"] == "newly_initialised" and m["curve"]["250"]["mean"] > 0.8


def test_feature_cache_is_used_only_for_its_key(informative_bert, probe, tmp_path, monkeypatch):
    loaded = load(informative_bert)
    cache = tmp_path / "features"
    args = dict(model="tiny", data=probe, setting="linear", sizes=[8], seeds=[1], hp=FAST,
                load=lambda: loaded, features_dir=cache, progress=False)
    first = mlm_curve.run(out=tmp_path / "a", **args)
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["key"]["data_fingerprints"] == {"nolang": "fp-nolang", "original": "fp-original",
                                                "perturbed": "fp-perturbed"}
    assert np.load(cache / "original" / "train.npy").shape == (8, 32)   # the rows the curve trains on
    assert meta["key"]["train_rows"]["original"]["n"] == 8

    def no_encoder(*_args, **_kwargs):
        raise AssertionError("the encoder ran although the cache matches")

    monkeypatch.setattr(mlm_curve, "hidden_at", no_encoder)
    assert mlm_curve.run(out=tmp_path / "b", **args) == first
    assert (tmp_path / "a" / "metrics.json").read_bytes() == (tmp_path / "b" / "metrics.json").read_bytes()
    # another dtype is another key: recomputed
    key = meta["key"] | {"dtype": "bfloat16"}
    assert features.read(cache, key) is None


def test_features_of_the_rows_a_curve_uses_give_the_curve_of_every_row(informative_bert, probe, tmp_path):
    """Only the training rows of some (N, seed) subset are encoded; the curve is the one of a full cache."""
    loaded = load(informative_bert)
    variants = learning_curve.read_variants(probe, "dev")
    sizes, seeds = [4, 8], [1, 2]
    rows = learning_curve.curve_train_rows(variants, sizes, seeds)
    by_hand = sorted({int(i) for seed in seeds for i in np.random.default_rng(seed).permutation(300)[:8]})
    assert rows["original"].tolist() == by_hand and 8 < len(by_hand) <= 16
    for name in ("nolang", "perturbed"):   # the controls' rows derived from the same original rows
        derived = learning_curve.control_rows([r["id"] for r in variants["original"]["train"]],
                                              variants[name]["train"])[by_hand]
        assert rows[name].tolist() == sorted(derived[derived >= 0].tolist())
    common = dict(split="dev", device="cpu", progress=False)
    full = mlm_curve.lm_inputs(loaded, variants, features_dir=tmp_path / "all", **common)
    some = mlm_curve.lm_inputs(loaded, variants, features_dir=tmp_path / "some", train_rows=rows, **common)
    stored = np.load(tmp_path / "some" / "original" / "train.npy")
    assert stored.shape == (len(by_hand), 32)
    assert np.allclose(np.load(tmp_path / "all" / "original" / "train.npy")[by_hand], stored, atol=1e-5)
    args = dict(model_name="tiny", variants=variants, setting="MLP", sizes=sizes, seeds=seeds, hp=FAST, split="dev",
                progress=False)
    a = curve.run_curve(inputs=full, out=tmp_path / "a", **args)
    b = curve.run_curve(inputs=some, out=tmp_path / "b", **args)
    assert a == b
    train_split = some.splits("original")[0]
    outside = next(i for i in range(300) if i not in by_hand)
    with pytest.raises(RuntimeError, match="outside the cached features"):
        train_split.features(np.asarray([by_hand[0], outside]))


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_both_settings_in_one_run_equal_two_runs(informative_bert, probe, tmp_path):
    """``--setting mlp --setting linear``: one model load and one feature cache, each setting's files the bytes of
    its own run."""
    loaded = load(informative_bert)
    args = dict(model="tiny", data=probe, sizes=[4, 8], seeds=[1, 2], hp=FAST, load=lambda: loaded, progress=False)
    both = mlm_curve.run(out=tmp_path / "both", setting=["mlp", "linear"], features_dir=tmp_path / "f", **args)
    assert set(both) == {"mlp", "linear"} and both["mlp"]["setting"] == "MLP"
    for setting in ("mlp", "linear"):
        alone = mlm_curve.run(out=tmp_path / setting, setting=setting, features_dir=tmp_path / f"f-{setting}", **args)
        assert alone == both[setting]
        assert files_of(tmp_path / setting) == files_of(tmp_path / "both" / setting)
    from probekit.errors import UsageError

    with pytest.raises(UsageError, match="at most once"):
        mlm_curve.run(out=tmp_path / "x", setting=["mlp", "mlp"], **args)


def test_a_curve_needs_a_masked_lm_and_a_train_split(tiny_gpt2, probe, tmp_path):
    from probekit.errors import DataError, UsageError

    gpt2 = load_lm(ModelRef("gpt2", str(tiny_gpt2), str(tiny_gpt2)))
    with pytest.raises(UsageError, match="masked LM"):
        mlm_curve.run(model="gpt2", data=probe, out=tmp_path / "o", setting="mlp", sizes=[8], seeds=[1], hp=FAST,
                      load=lambda: gpt2, progress=False)
    with pytest.raises(UsageError, match="--setting"):
        mlm_curve.run(model="x", data=probe, out=tmp_path / "o", setting="deep", sizes=[8], seeds=[1], hp=FAST)
    (probe / "original" / "train.jsonl").unlink()
    with pytest.raises(DataError, match="train"):
        learning_curve.read_variants(probe, "dev")


@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "distilbert", "electra", "deberta-v2"])
def test_the_head_on_features_is_the_checkpoints_own_head_for_every_mlm_family(family):
    import transformers as t

    small = dict(vocab_size=120, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                 max_position_embeddings=64)
    torch.manual_seed(0)
    model = {
        "bert": lambda: t.BertForMaskedLM(t.BertConfig(**small)),
        "roberta": lambda: t.RobertaForMaskedLM(t.RobertaConfig(**small)),
        "albert": lambda: t.AlbertForMaskedLM(t.AlbertConfig(embedding_size=16, **small)),
        "distilbert": lambda: t.DistilBertForMaskedLM(t.DistilBertConfig(
            vocab_size=120, dim=32, n_layers=1, n_heads=2, hidden_dim=64, max_position_embeddings=64)),
        "electra": lambda: t.ElectraForMaskedLM(t.ElectraConfig(embedding_size=16, **small)),
        "deberta-v2": lambda: t.DebertaV2ForMaskedLM(t.DebertaV2Config(**small)),
    }[family]().eval()
    ids = torch.randint(5, 100, (3, 7))
    with torch.no_grad():
        full = model(input_ids=ids).logits[:, 3]
        features = model.base_model(input_ids=ids).last_hidden_state[:, 3]
        head = heads.MaskedLMHead(model, [7, 11, 50])
        torch.testing.assert_close(head(features), full[:, [7, 11, 50]], atol=1e-5, rtol=1e-5)
        # BERT's and RoBERTa's head module is called directly: what the whole forward gives, bit for bit
        assert (head._module is not None) >= (family in ("bert", "roberta"))
        torch.testing.assert_close(head(features), head.head(inputs_embeds=features[:, None]).logits[:, 0],
                                   atol=0, rtol=0)
    # the copy is the head alone, and training it leaves the model untouched
    assert sum(p.numel() for p in head.parameters()) < sum(p.numel() for p in model.parameters()) / 2
    before = {k: v.clone() for k, v in model.state_dict().items()}
    curve.fit(head, curve.Split(lambda idx: features[idx], torch.tensor([[0, 1]] * 3), torch.tensor([0, 1, 0])),
              np.arange(3), "MLP", FAST, 1)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_the_heads_optimizer_steps_every_parameter_at_once_with_the_same_arithmetic(monkeypatch):
    """AdamW runs ``foreach`` (one call per step for all the head's parameters): a curve's numbers are those of the
    one-parameter-at-a-time loop, bit for bit."""
    from evaluators.shared import training

    def trained() -> dict:
        torch.manual_seed(0)
        head = heads.BaselineHead(16, 5)
        x, y = torch.randn(64, 16), torch.randint(0, 5, (64,))
        training.train(head, lambda b: torch.nn.functional.cross_entropy(head(x[b]), y[b]), 64, FAST, 1)
        return head.state_dict()

    foreach = trained()
    plain = torch.optim.AdamW
    monkeypatch.setattr(torch.optim, "AdamW", lambda *a, **k: plain(*a, **{**k, "foreach": False}))
    single = trained()
    assert all(torch.equal(foreach[k], single[k]) for k in foreach)


def test_runs_spread_over_processes_are_bit_for_bit_the_runs_one_after_another(informative_bert, probe):
    """A curve's (N, seed) runs on cached CPU features go to forked processes of one thread each
    (``evaluators.shared.parallel``): the trained heads, the curve and early stopping's choices are those of the
    runs one after another in this process, bit for bit."""
    from evaluators.shared import parallel
    from evaluators.shared.params import MlmBaselineParams
    from evaluators.shared.training import one_thread

    loaded = load(informative_bert)
    inputs = mlm_curve.lm_inputs(loaded, learning_curve.read_variants(probe / "original", "dev"), split="dev",
                                 features_dir=None, device="cpu", progress=False)
    train_split, dev, make_head = inputs.splits("")
    orders = {seed: learning_curve.nested_order(300, seed) for seed in (1, 2)}
    jobs = [(seed, n) for seed in orders for n in (20, 62)]

    def weights(i: int) -> dict:
        seed, n = jobs[i]
        return curve.fit(make_head(seed), train_split, orders[seed][:n], "MLP", FAST, seed).state_dict()

    with one_thread(True):
        alone = parallel.each(weights, len(jobs), 1)
        spread = parallel.each(weights, len(jobs), 2)
        assert all(torch.equal(a[k], b[k]) for a, b in zip(alone, spread) for k in a)
        for hp in (FAST, MlmBaselineParams(epochs=4, patience=2, lr=1e-2)):
            one, two = (curve.variant_curve(make_head, train_split, dev, orders, [20, 62], "MLP", hp, "", False, p)
                        for p in (1, 2))
            assert (one[0] == two[0]).all() and (one[1] == two[1]).all() and one[2] == two[2]
    assert spread and parallel.can_fork()   # the children did run (Linux): the comparison was not of one way twice


def test_a_run_that_fails_in_a_child_is_raised_and_a_dead_child_is_an_error_not_a_hang():
    from concurrent.futures.process import BrokenProcessPool

    from evaluators.shared import parallel

    def fails(i: int) -> int:
        if i == 2:
            raise ValueError(f"run {i} failed")
        return i * i

    assert parallel.each(lambda i: i * i, 4, 2) == [0, 1, 4, 9]
    with pytest.raises(ValueError, match="run 2 failed"):
        parallel.each(fails, 4, 2)
    with pytest.raises(BrokenProcessPool):
        parallel.each(lambda i: os._exit(3) if i == 1 else i, 3, 2)
