"""Zero-shot MC-MLM evaluation against independent, one-example-at-a-time computations on tiny random models."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
import transformers
from transformers import AutoModelForMaskedLM, AutoTokenizer

from evaluators.engine.masked import CandidateError, check_candidates
from evaluators.engine.masked_queries import encode_masked
from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from evaluators.olmpics.zeroshot import chance_level, evaluate, run
from probekit.errors import DataError
from probekit.probes.dataset import read_split
from probekit.tokens.refs import ModelRef

from helpers import MIRROR, REPO

transformers.logging.set_verbosity_error()


def load(path, *, name=None, seed=0, **kwargs):
    """A model folder loaded the way the CLI does, once its spec is resolved."""
    return load_lm(ModelRef(name or str(path), str(path), str(path)), seed=seed, **kwargs)


def mc_mlm(model, tok, examples, *, batch_size=32, multi_token="error"):
    """Zero-shot MC-MLM (the mask-logit rule) of ``examples``: predictions and metrics."""
    return evaluate(Engine(model, tok, "mlm", batch_size=batch_size, multi_token=multi_token), examples)


def candidate_token_ids(tok, stems, choices, ids, *, multi_token="error"):
    """The token id the mask-logit rule scores for each choice, per example."""
    queries = encode_masked(tok, stems, choices, ids)
    check_candidates(tok, queries, multi_token)
    return [[c for c in row if c >= 0] for row in queries.candidates().tolist()]

AGE = ["older", "younger"]
ORDINAL = ["first", "second", "third"]
MIXED = ["younger", "third", "older"]
RELEASE_FILE = MIRROR / "olmpics" / "number_comparison_age_compare_masked_dev.jsonl"

# Stems of varied lengths (so that batches pad and the length sort reorders them); the mask is always
# preceded by a space, so a byte-level BPE uses the space-prefixed answer tokens.
_STEMS = [
    ("He is [MASK] .", AGE),
    ("A 24 year old person is [MASK] than me in age , If I am a 55 year old person .", AGE),
    ("the [MASK] is oldest", ORDINAL),
    ("When comparing a 23 year old , a 38 year old and a 31 year old , the [MASK] is oldest .", ORDINAL),
    ("A 31 year old person is younger than me , so I am [MASK]", AGE),
    ("When comparing a 23 year old , a 38 year old and a 31 year old , and then again a 23 year old , "
     "a 38 year old and a 31 year old and one more 44 year old person , the [MASK] is oldest .", ORDINAL),
    ("It is [MASK] than that", MIXED),
    ("A 19 year old person is [MASK] than me in age , If I am a 31 year old person , they say .", AGE),
    ("the [MASK] one", ORDINAL),
    ("If I am a 55 year old person , then a 24 year old person is [MASK] than me in age .", MIXED),
    ("[MASK] , said the third .", ORDINAL),  # the mask first: BERT only (a BPE needs the bare token)
    ("A 38 year old and a 23 year old : the [MASK] is older , if one asks me about their age .", ORDINAL),
]


def make_example(n: int, stem: str, words, answer: int = 0) -> dict:
    labels = "ABCDE"
    return {"id": f"ex{n:02d}", "question": {"stem": stem, "choices": [
        {"label": labels[i], "text": w} for i, w in enumerate(words)]}, "answerKey": labels[answer]}


def examples_for(kind: str) -> list[dict]:
    stems = _STEMS if kind == "bert" else [s for s in _STEMS if not s[0].startswith("[MASK]")]
    return [make_example(n, stem, words) for n, (stem, words) in enumerate(stems)]


def bpe_word(word: str) -> str:
    return "Ġ" + word


def bert_word(word: str) -> str:
    return word


def randomise_bias(model):
    """A fresh MLM head has a zero output bias; make it non-zero so that scores depend on it."""
    torch.manual_seed(1)
    with torch.no_grad():
        model.get_output_embeddings().bias.normal_()
    return model


@pytest.fixture(scope="module")
def bert(tiny_bert):
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    model = randomise_bias(AutoModelForMaskedLM.from_pretrained(str(tiny_bert)).eval())
    return model, tok, bert_word


@pytest.fixture(scope="module")
def roberta(tiny_roberta):
    tok = AutoTokenizer.from_pretrained(str(tiny_roberta))
    model = randomise_bias(AutoModelForMaskedLM.from_pretrained(str(tiny_roberta)).eval())
    return model, tok, bpe_word


@pytest.fixture(params=["bert", "roberta"])
def mlm(request):
    return request.param, request.getfixturevalue(request.param)


def mask_logits(model, tok, stem: str) -> torch.Tensor:
    """The model's full vocabulary logits at the mask of ``stem``, computed on that example alone."""
    enc = tok(stem.replace("[MASK]", tok.mask_token), return_tensors="pt")
    positions = (enc["input_ids"][0] == tok.mask_token_id).nonzero()
    assert positions.numel() == 1
    with torch.no_grad():
        return model(**enc).logits[0, positions.item()]


def reference_scores(model, tok, example: dict, token_of) -> list[float]:
    ids = [tok.convert_tokens_to_ids(token_of(c["text"])) for c in example["question"]["choices"]]
    assert tok.unk_token_id not in ids, ids
    logits = mask_logits(model, tok, example["question"]["stem"])
    return [logits[i].item() for i in ids]


def assert_scores_match(predictions, references, examples):
    assert [p["id"] for p in predictions] == [e["id"] for e in examples]
    for p, ref, e in zip(predictions, references, examples):
        assert p["scores"] == pytest.approx(ref, abs=1e-4), e["id"]


# --- the tiny models are what the tests assume ----------------------------------------------------------


def test_tiny_bert_has_the_real_wordpiece_vocabulary(bert):
    _, tok, _ = bert
    assert len(tok) > 30000
    for word in AGE + ORDINAL:
        assert tok.tokenize(word) == [word]
    assert len(tok.tokenize("xylophonist")) > 1


def test_tiny_roberta_distinguishes_bare_and_space_prefixed_tokens(roberta):
    _, tok, _ = roberta
    for word in AGE + ORDINAL:
        assert tok.tokenize(" " + word) == ["Ġ" + word]


# --- 1. batched scores equal one-example-at-a-time scores ---------------------------------------------


def test_scores_equal_single_example_computation(mlm):
    kind, (model, tok, token_of) = mlm
    examples = examples_for(kind)
    references = [reference_scores(model, tok, e, token_of) for e in examples]
    # Gold: the reference argmax for even examples, another choice for odd ones.
    for n, (e, ref) in enumerate(zip(examples, references)):
        best = max(range(len(ref)), key=ref.__getitem__)
        e["answerKey"] = "ABCDE"[best if n % 2 == 0 else (best + 1) % len(ref)]
    lengths = [len(tok(e["question"]["stem"])["input_ids"]) for e in examples]
    assert lengths != sorted(lengths, reverse=True) and len(set(lengths)) > 6  # the sort reorders, pads

    predictions, metrics = mc_mlm(model, tok, examples, batch_size=4)

    assert_scores_match(predictions, references, examples)
    for p, ref, e in zip(predictions, references, examples):
        labels = [c["label"] for c in e["question"]["choices"]]
        assert p["prediction"] == labels[max(range(len(ref)), key=ref.__getitem__)]
        assert p["choice"] == e["question"]["choices"][labels.index(p["prediction"])]["text"]   # the word chosen
        assert p["gold"] == e["answerKey"]
        assert p["correct"] == (p["prediction"] == e["answerKey"])
    assert [p["correct"] for p in predictions] == [n % 2 == 0 for n in range(len(examples))]
    assert metrics["n"] == len(examples)
    assert metrics["accuracy"] == pytest.approx(sum(n % 2 == 0 for n in range(len(examples))) / len(examples))
    assert metrics["chance"] == pytest.approx(
        sum(1 / len(e["question"]["choices"]) for e in examples) / len(examples))


def test_batch_size_does_not_change_scores(mlm):
    _, (model, tok, _) = mlm
    examples = examples_for(mlm[0])
    one, _ = mc_mlm(model, tok, examples, batch_size=1)
    for size in (7, 64):
        many, _ = mc_mlm(model, tok, examples, batch_size=size)
        for a, b in zip(one, many):
            assert a["id"] == b["id"] and a["prediction"] == b["prediction"]
            assert a["scores"] == pytest.approx(b["scores"], abs=1e-5)


# --- 2. RoBERTa scores the token the model sees in context ---------------------------------------------


def test_roberta_scores_space_prefixed_token(roberta):
    model, tok, _ = roberta
    older, bare_older = tok.convert_tokens_to_ids("Ġolder"), tok.convert_tokens_to_ids("older")
    assert older != bare_older and tok.unk_token_id not in (older, bare_older)
    stem = "A 24 year old person is [MASK] than me in age ."
    ids = candidate_token_ids(tok, [stem], [AGE], ["r1"])
    assert ids == [[older, tok.convert_tokens_to_ids("Ġyounger")]]
    (prediction,), _ = mc_mlm(model, tok, [make_example(1, stem, AGE)])
    logits = mask_logits(model, tok, stem)
    assert prediction["scores"][0] == pytest.approx(logits[older].item(), abs=1e-4)
    assert prediction["scores"][0] != pytest.approx(logits[bare_older].item(), abs=1e-4)


def test_roberta_mask_at_start_gets_bare_token(roberta):
    model, tok, _ = roberta
    stem = "[MASK] is older than me ."
    choices = ["older", "the"]  # both are single tokens without the space marker
    ids = candidate_token_ids(tok, [stem], [choices], ["r2"])
    assert ids == [[tok.convert_tokens_to_ids("older"), tok.convert_tokens_to_ids("the")]]
    assert ids[0][0] != tok.convert_tokens_to_ids("Ġolder")
    example = make_example(2, stem, choices)
    (prediction,), _ = mc_mlm(model, tok, [example])
    assert prediction["scores"] == pytest.approx(reference_scores(model, tok, example, lambda w: w), abs=1e-4)
    # Without the sentence start, "younger" is not a token (only "Ġyounger" is).
    with pytest.raises(CandidateError, match="younger"):
        candidate_token_ids(tok, [stem], [["younger"]], ["r3"])


# --- 3. multi-token answers ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind, word, context", [("bert", "xylophonist", ""), ("roberta", "xylophonist", " ")])
def test_multi_token_candidate(kind, word, context, request):
    model, tok, token_of = request.getfixturevalue(kind)
    pieces = tok.tokenize(context + word)
    assert len(pieces) > 1
    stem = "He is [MASK] than me ."
    example = make_example(7, stem, ["older", word])
    with pytest.raises(CandidateError) as info:
        mc_mlm(model, tok, [example])
    assert "ex07" in str(info.value) and word in str(info.value)

    (prediction,), _ = mc_mlm(model, tok, [example], multi_token="first")
    logits = mask_logits(model, tok, stem)
    first = next(p for p in pieces if p not in ("Ġ", "▁"))  # a lone space piece is no word's first piece
    expected = [logits[tok.convert_tokens_to_ids(token_of("older"))].item(),
                logits[tok.convert_tokens_to_ids(first)].item()]
    assert prediction["scores"] == pytest.approx(expected, abs=1e-4)


def test_first_pieces_that_tie_are_refused(roberta):
    """"olderly" starts with the token of "older": scored by first pieces, the two would tie."""
    model, tok, _ = roberta
    assert tok.tokenize(" olderly")[0] == "Ġolder"
    example = make_example(8, "He is [MASK] than me .", ["older", "olderly"])
    with pytest.raises(CandidateError, match=r"example ex08: candidates \['older', 'olderly'\] share a token"):
        mc_mlm(model, tok, [example], multi_token="first")


def test_unknown_multi_token_rule_is_refused(bert):
    _, tok, _ = bert
    with pytest.raises(ValueError, match="multi_token"):
        candidate_token_ids(tok, ["He is [MASK] ."], [AGE], ["x"], multi_token="last")


def test_sentencepiece_first_piece_skips_the_lone_space_and_ties_are_refused(tmp_path):
    """A Metaspace tokenizer splits an unseen word as ``▁`` + letters: the lone ``▁`` is no word's first piece."""
    from tokenizers import SentencePieceBPETokenizer
    from transformers import PreTrainedTokenizerFast

    sp = SentencePieceBPETokenizer()
    sp.train_from_iterator(["he is older than me", "he is younger than me", "aqa aza"] * 50, vocab_size=60,
                           special_tokens=["<unk>", "<mask>"], min_frequency=1)
    tok = PreTrainedTokenizerFast(tokenizer_object=sp._tokenizer, mask_token="<mask>", unk_token="<unk>")
    qaz, zaq = tok.tokenize(" qaz"), tok.tokenize(" zaq")
    assert qaz[0] == zaq[0] == "▁" and qaz[1] != zaq[1]  # the old rule gave both the id of the lone ▁
    [[q, z]] = candidate_token_ids(tok, ["he is [MASK] than me"], [["qaz", "zaq"]], ["sp1"], multi_token="first")
    assert tok.convert_ids_to_tokens([q, z]) == [qaz[1], zaq[1]]
    assert tok.tokenize(" qaa")[1] == qaz[1]
    with pytest.raises(CandidateError, match=r"example sp2: candidates \['qaz', 'qaa'\] share a token .* would tie"):
        candidate_token_ids(tok, ["he is [MASK] than me"], [["qaz", "qaa"]], ["sp2"], multi_token="first")


# --- 4. whether the MLM head is pretrained ---------------------------------------------------------------


def test_head_status(tiny_bert, tiny_bert_no_head, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="probekit"):
        headless = load(tiny_bert_no_head, name="headless")
    assert headless.head_pretrained is False
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["headless"]  # logged once, by name
    assert "newly initialised" in caplog.records[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="probekit"):
        full = load(tiny_bert)
    assert full.head_pretrained is True and not caplog.records

    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for e in examples_for("bert")[:3]), encoding="utf-8")
    for loaded, head, out in [(headless, "newly_initialised", tmp_path / "headless"),
                              (full, "pretrained", tmp_path / "full")]:
        run(loaded, read_split(data, "dev"), out, probe="toy", progress=False)
        metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
        assert metrics["lm_head"] == head
        assert metrics["zero_shot"] is (head == "pretrained")
        assert metrics["n"] == 3 and metrics["probe"] == "toy"


def test_a_model_without_mlm_head_or_mask_token_is_a_clear_error(tiny_bert, tmp_path, minilm_vocab):
    from transformers import BertTokenizerFast, GPT2Config, GPT2LMHeadModel

    from probekit.errors import UsageError

    gpt2 = tmp_path / "gpt2"
    GPT2LMHeadModel(GPT2Config(vocab_size=200, n_embd=16, n_layer=1, n_head=2, n_positions=32)).save_pretrained(gpt2)
    BertTokenizerFast(str(minilm_vocab)).save_pretrained(gpt2)  # a tokenizer with a mask token
    with pytest.raises(UsageError, match=r"--model g: a GPT2Config model has no masked-LM head"):
        load(gpt2, name="g", scoring="mlm")
    no_mask = tmp_path / "no-mask"
    shutil.copytree(tiny_bert, no_mask)
    config = json.loads((no_mask / "tokenizer_config.json").read_text())
    config["mask_token"] = None
    (no_mask / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(UsageError, match=r"its tokenizer has no mask token"):
        load(no_mask, name="n")


def test_dtype_is_explicit_and_recorded(tiny_bert, tmp_path):
    fp32, bf16 = load(tiny_bert), load(tiny_bert, name="t", dtype="bfloat16")
    assert next(fp32.model.parameters()).dtype == torch.float32 and next(bf16.model.parameters()).dtype == torch.bfloat16
    examples = examples_for("bert")
    a, _ = mc_mlm(fp32.model, fp32.tokenizer, examples)
    b, _ = mc_mlm(bf16.model, bf16.tokenizer, examples)
    for x, y in zip(a, b):  # bf16 keeps ~3 significant digits
        assert y["scores"] == pytest.approx(x["scores"], abs=0.1)
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    metrics = run(bf16, read_split(data, "dev"), tmp_path / "out", progress=False)[""]
    assert metrics["dtype"] == "bfloat16" and metrics["versions"]["torch"] == torch.__version__
    assert "model_revision" in metrics


def test_missing_head_is_initialised_deterministically(tiny_bert_no_head):
    a, b, c = (load(tiny_bert_no_head, seed=seed) for seed in (3, 3, 4))
    stem = examples_for("bert")[1]["question"]["stem"]
    la, lb, lc = (mask_logits(m.model, m.tokenizer, stem) for m in (a, b, c))
    assert torch.equal(la, lb)  # the same seed: the same head
    assert not torch.equal(la, lc)  # another seed: another head (a constant initialisation would pass neither)
    assert la.std() > 0  # the head's output varies over the vocabulary


# --- 5. run() on the original release file and on a probe folder -----------------------------------------


def test_run_on_release_file(tiny_roberta, tmp_path):
    assert RELEASE_FILE.is_file(), RELEASE_FILE
    rows = [json.loads(line) for line in RELEASE_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    loaded = load(tiny_roberta, name="tiny-roberta")
    out = tmp_path / "release"
    results = run(loaded, read_split(RELEASE_FILE, "dev", limit=20), out, limit=20, probe="age_comparison",
                  batch_size=8, progress=False)

    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(predictions) == 20
    assert [p["id"] for p in predictions] == [r["id"] for r in rows[:20]]
    assert [p["gold"] for p in predictions] == [r["answerKey"] for r in rows[:20]]
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["n"] == 20 and metrics["limit"] == 20
    assert metrics["variant"] == "release" and metrics["probe"] == "age_comparison"
    assert metrics["data_fingerprint"] == hashlib.sha256(RELEASE_FILE.read_bytes()).hexdigest()
    assert metrics["model"] == "tiny-roberta" and metrics["lm_head"] == "pretrained"
    assert metrics["accuracy"] == pytest.approx(sum(p["correct"] for p in predictions) / 20)
    assert results == {"": metrics}
    # The first row scored alone, with the space-prefixed answer tokens.
    model, tok = loaded.model, loaded.tokenizer
    assert predictions[0]["scores"] == pytest.approx(reference_scores(model, tok, rows[0], bpe_word), abs=1e-4)


def write_variant(folder: Path, probe: str, variant: str, dev: list[dict], train: list[dict]) -> None:
    folder.mkdir(parents=True)
    for split, rows in (("dev", dev), ("train", train)):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps({"probe": probe, "variant": variant,
                                                  "fingerprint": f"fp-{variant}"}), encoding="utf-8")


def test_run_on_probe_folder_writes_one_result_per_variant(tiny_bert, tmp_path):
    examples = examples_for("bert")
    probe = tmp_path / "toy_probe"
    write_variant(probe / "base", "toy", "base", dev=examples[:3], train=examples[3:8])
    write_variant(probe / "no_lang", "toy", "no_lang", dev=examples[8:10], train=examples[:1])
    loaded = load(tiny_bert)
    out = tmp_path / "results"
    results = run(loaded, read_split(probe, "dev"), out, batch_size=2, progress=False)

    assert sorted(results) == ["base", "no_lang"]
    assert sorted(p.name for p in out.iterdir()) == [".probekit.json", "base", "no_lang"]
    for variant, dev in (("base", examples[:3]), ("no_lang", examples[8:10])):
        metrics = json.loads((out / variant / "metrics.json").read_text(encoding="utf-8"))
        assert metrics == results[variant]
        assert metrics["probe"] == "toy" and metrics["variant"] == variant
        assert metrics["data_fingerprint"] == f"fp-{variant}" and metrics["split"] == "dev"
        assert metrics["n"] == len(dev)
        predictions = [json.loads(line) for line in
                       (out / variant / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
        assert [p["id"] for p in predictions] == [e["id"] for e in dev]

    train = run(loaded, read_split(probe, "train"), tmp_path / "train-results", split="train", progress=False)
    assert {v: m["n"] for v, m in train.items()} == {"base": 5, "no_lang": 1}


def test_several_probes_and_release_files_in_one_call_equal_one_call_each(tiny_bert, tmp_path):
    """``probes evaluate zeroshot --data A --data B --release-of P --out OUT/{probe}``: one model load, each written
    to OUT/<folder or probe> with the bytes of its own call."""
    from probes.main import main

    examples = examples_for("bert")
    for name, rows in (("toy_a", examples[:3]), ("toy_b", examples[3:6])):
        write_variant(tmp_path / name / "base", name, "base", dev=rows, train=rows)
    raw = tmp_path / "raw" / "olmpics"   # the release file where the manifest says
    (raw / RELEASE_FILE.name).parent.mkdir(parents=True)
    manifest = tmp_path / "raw" / "sources.yaml"
    manifest.write_text((REPO / "raw" / "sources.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    from probekit.sources.manifest import load_manifest, release_file

    target = raw / release_file(load_manifest(manifest), "olmpics", "age_comparison", "dev").path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(RELEASE_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:6]),
                      encoding="utf-8")
    common = ["evaluate", "zeroshot", "--model", str(tiny_bert), "--manifest", str(manifest), "--batch-size", "2"]
    assert main([*common, "--data", str(tmp_path / "toy_a"), "--data", str(tmp_path / "toy_b"),
                 "--release-of", "age_comparison", "--out", str(tmp_path / "all" / "{probe}")]) == 0
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == ["age_comparison", "toy_a", "toy_b"]
    for args, name in ((["--data", str(tmp_path / "toy_a")], "toy_a"), (["--data", str(tmp_path / "toy_b")], "toy_b"),
                       (["--release-of", "age_comparison"], "age_comparison")):
        single = tmp_path / "one-each" / name
        assert main([*common, *args, "--out", str(single)]) == 0
        alone = {str(p.relative_to(single)): p.read_bytes() for p in single.rglob("*") if p.is_file()}
        together = {str(p.relative_to(tmp_path / "all" / name)): p.read_bytes()
                    for p in (tmp_path / "all" / name).rglob("*") if p.is_file()}
        assert alone == together and alone
    assert main([*common, "--data", str(tmp_path / "toy_a"), "--data", str(tmp_path / "toy_a"),
                 "--out", str(tmp_path / "twice" / "{probe}")]) == 2
    assert main([*common, "--data", str(tmp_path / "toy_a"), "--data", str(tmp_path / "toy_b"),
                 "--out", str(tmp_path / "no-placeholder")]) == 2 and not (tmp_path / "no-placeholder").exists()


# --- 6. every MLM family: the model's own head at the mask, exact ----------------------------------------


def _family(kind: str, tok):
    """A tiny random masked LM of ``kind`` for the WordPiece tokenizer ``tok`` (heads differ per family)."""
    from transformers import (
        AlbertConfig,
        AlbertForMaskedLM,
        DebertaV2Config,
        DebertaV2ForMaskedLM,
        DistilBertConfig,
        DistilBertForMaskedLM,
        ElectraConfig,
        ElectraForMaskedLM,
    )

    torch.manual_seed(0)
    v, common = tok.vocab_size, dict(num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=128)
    if kind == "albert":  # embedding size != hidden size: the head projects back through it
        return AlbertForMaskedLM(AlbertConfig(vocab_size=v, embedding_size=16, hidden_size=32, **common))
    if kind == "distilbert":
        return DistilBertForMaskedLM(DistilBertConfig(vocab_size=v, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                                      max_position_embeddings=128))
    if kind == "electra":  # a generator: its head is generator_predictions + generator_lm_head
        return ElectraForMaskedLM(ElectraConfig(vocab_size=v, embedding_size=16, hidden_size=32, **common))
    # DeBERTa-v2/v3 with legacy=False: get_output_embeddings() is an H x H layer, not the vocabulary
    return DebertaV2ForMaskedLM(DebertaV2Config(vocab_size=v, hidden_size=32, legacy=False, **common))


@pytest.mark.parametrize("kind", ["albert", "distilbert", "electra", "deberta-v2"])
def test_every_mlm_family_matches_the_single_example_reference(kind, bert):
    _, tok, token_of = bert
    model = _family(kind, tok).eval()
    with torch.no_grad():  # a non-zero head so that scores depend on all of it
        for name, param in model.named_parameters():
            if "bias" in name and param.ndim == 1 and param.shape[0] == tok.vocab_size:
                param.normal_()
    examples = examples_for("bert")
    predictions, _ = mc_mlm(model, tok, examples, batch_size=4)
    assert_scores_match(predictions, [reference_scores(model, tok, e, token_of) for e in examples], examples)


def test_left_padding_tokenizer_scores_the_same(mlm):
    """A tokenizer set to pad on the left must not shift positions: the scorer pads on the right."""
    kind, (model, tok, token_of) = mlm
    examples = examples_for(kind)
    side = tok.padding_side
    try:
        tok.padding_side = "left"
        predictions, _ = mc_mlm(model, tok, examples, batch_size=4)
    finally:
        tok.padding_side = side
    assert_scores_match(predictions, [reference_scores(model, tok, e, token_of) for e in examples], examples)


def test_a_mask_truncated_away_is_named(bert):
    model, tok, _ = bert
    long = "A " + "very " * 200 + "long story , then it is [MASK] ."
    with pytest.raises(DataError, match=r"example long-1: the statement with choice 'older' is \d+ tokens and the "
                                        r"model reads at most 128 \(the mask would be truncated away\)"):
        mc_mlm(model, tok, [{**make_example(1, long, AGE), "id": "long-1"}])


# --- 7. stems without exactly one mask -------------------------------------------------------------------


@pytest.mark.parametrize("stem", ["He is older than me .", "He is [MASK] than [MASK] ."])
def test_stem_needs_exactly_one_mask(stem, mlm):
    _, (model, tok, _) = mlm
    examples = [make_example(1, "He is [MASK] .", AGE),
                {**make_example(2, stem, AGE), "id": "bad-stem-42"}]
    with pytest.raises(ValueError, match="bad-stem-42"):
        mc_mlm(model, tok, examples)


def test_ties_go_to_the_first_choice_and_are_counted(bert):
    model, tok, _ = bert
    engine = Engine(model, tok, "mlm")
    engine.score = lambda stems, choices, ids: [[0.5, 1.0, 1.0][:len(c)] for c in choices]  # a forced tie
    examples = [make_example(1, "He is [MASK] .", AGE), make_example(2, "It is [MASK] .", MIXED)]
    (two, three), metrics = evaluate(engine, examples)
    assert (two["prediction"], three["prediction"], metrics["ties"]) == ("B", "B", 1)


def test_chance_is_exact():
    assert sum([1 / 5] * 280) / 280 != 0.2  # what a float sum gives
    assert chance_level([5] * 280) == 0.2
    assert chance_level([2, 3]) == float(5 / 12) and chance_level([]) == 0.0


def test_the_command_records_the_device_and_the_report_lists_a_skipped_run(tiny_bert, tmp_path, capsys):
    """``--device`` defaults to auto, resolved before the model loads; metrics.json records the device used. A
    skipped run's metrics.json beside the results is listed by the report, not read as a result."""
    from evaluators.shared import applies
    from probes.main import main

    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for e in examples_for("bert")), encoding="utf-8")
    assert main(["evaluate", "zeroshot", "--model", str(tiny_bert), "--data", str(data), "--device", "cpu",
                 "--out", str(tmp_path / "results" / "tiny" / "toy")]) == 0
    metrics = json.loads((tmp_path / "results/tiny/toy/metrics.json").read_text())
    assert metrics["device"] == "cpu" and metrics["revision"] is None
    assert main(["evaluate", "zeroshot", "--model", str(tiny_bert), "--data", str(data),
                 "--out", str(tmp_path / "auto")]) == 0   # no --device: auto
    assert json.loads((tmp_path / "auto/metrics.json").read_text())["device"] == \
        ("cuda" if torch.cuda.is_available() else "cpu")
    applies.write_skipped([tmp_path / "results" / "other" / "toy"], {
        "skipped": "a reason", "model": "other", "family": "causal", "protocol": "zeroshot"})
    assert main(["report", str(tmp_path / "results"), "--out", str(tmp_path / "report.md"), "--metrics",
                 str(tmp_path / "metrics.json")]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "## Skipped" in text and "- other: zeroshot skipped (a reason)" in text and "| toy " in text.replace(
        str(tiny_bert), "tiny")
    assert list(json.loads((tmp_path / "metrics.json").read_text())) == [str(tiny_bert)]
