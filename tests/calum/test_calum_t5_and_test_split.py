"""CALUM beside the classification head: T5 run text-to-text as the paper ran it (labels as words, T5's GLUE
input format, the checkpoint as it is or fine-tuned, answers generated or label words scored), on a tiny T5 with
a real T5 tokenizer built here; and the split behind C_R / C_S: a drawn test split (KLUE, KorNLI) is evaluated
and reported beside the validation split."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

import generators.calum.generator as calum_generator
from evaluators.calum import finetune as calum
from evaluators.calum import report as calum_report
from evaluators.calum.params import CalumEvalParams
from probekit.data.pairs import write_pair_dataset
from probekit.errors import UsageError
from probekit.params import ParamsFile
from probekit.tokens.refs import ModelRef

from helpers import save_tiny_t5

SENTENCES = ["the cat sat on the mat", "a dog ran in the park"]   # the label follows the first segment


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    """A random T5ForConditionalGeneration with a Unigram T5 tokenizer whose pieces include the label words."""
    from transformers import T5TokenizerFast

    text = " ".join(SENTENCES + ["rte sentence1: sentence2: [sentence1] [sentence2] a year old person",
                                 "entailment not_entailment"])
    words = sorted(set(text.split()))
    chars = sorted({c for w in words for c in w} | set("0123456789"))
    vocab = ([("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -9.0)] + [("▁" + w, -8.0) for w in words]
             + [(c, -10.0) for c in chars])
    tokenizer = T5TokenizerFast(vocab=vocab, extra_ids=10)
    path = save_tiny_t5(tmp_path_factory.mktemp("tiny-t5-words"), tokenizer)
    return ModelRef("t5", str(path), str(path))


@pytest.fixture(scope="module")
def rte(tmp_path_factory):
    rows = [{"task": "rte", "split": s, "idx": str(i), "sentence1": SENTENCES[i % 2],
             "sentence2": f"a {i} year old person", "label": None if s == "test" else
             ["entailment", "not_entailment"][i % 2], "line": i + 2}
            for s in ("train", "dev", "test") for i in range(8)]
    variants, meta = calum_generator.build(ParamsFile(None, {"calum": {"task": "rte"}}),
                                           {"glue": {"pairs": pd.DataFrame(rows)}})
    root = tmp_path_factory.mktemp("calum")
    write_pair_dataset(root / "rte", variants, meta | {"license": "other", "sources": {}}, calum_generator.card)
    return root


TEXT = {"seeds": [1], "batch_size": 8, "device_batch_size": 8, "save_models": "none", "seq2seq": "text-to-text"}


def _predictions(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "predictions.jsonl").read_text().splitlines()]


def test_t5_reads_glues_text_to_text_format_in_each_variant(rte):
    from evaluators.calum import text_to_text as t2t

    rows = {v: json.loads((rte / f"rte/{v}/dev.jsonl").read_text().splitlines()[1]) for v in
            ("original", "reverse", "signal")}
    assert t2t.text(rows["original"], "rte") == "rte sentence1: a dog ran in the park sentence2: a 1 year old person"
    assert t2t.text(rows["reverse"], "rte") == "rte sentence2: a 1 year old person sentence1: a dog ran in the park"
    assert t2t.text(rows["signal"], "rte") == "rte [sentence1] a dog ran in the park [sentence2] a 1 year old person"


def test_t5_fine_tuned_text_to_text_writes_the_label_words(tmp_path, rte, t5):
    cp = CalumEvalParams(**TEXT | {"max_steps": 20, "lr": 1e-2, "warmup": 0.0, "save_models": "first",
                                   "text_to_text": {"fine_tune": True, "predict": "generate"}})
    m = calum.run(t5, rte, "rte", tmp_path / "out", cp, progress=False)
    assert m["text_to_text"] == {"fine_tuned": True, "predict": "generate"} and m["head_pretrained"]
    assert m["accuracy"]["mean"] == 1.0 and m["per_seed"][0]["steps"] == 20
    rows = _predictions(tmp_path / "out")
    assert {r["prediction"] for r in rows} == {"entailment", "not_entailment"}   # generated words, not ids
    from transformers import AutoModelForSeq2SeqLM

    assert type(AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "out/model")).__name__ == "T5ForConditionalGeneration"
    scored = calum.run(t5, rte, "rte", tmp_path / "scored", cp.model_copy(update={
        "text_to_text": cp.text_to_text.model_copy(update={"predict": "score"}), "save_models": "none"}),
        progress=False)
    assert scored["accuracy"]["mean"] == 1.0


def test_the_checkpoint_as_it_is_runs_once_scored_by_its_label_words(tmp_path, rte, t5):
    """The paper's T5: no fine-tuning, one run whatever the seeds. Scored: each label word's summed
    log-probability, checked by hand; generated: a random T5's answers are no label, so never right."""
    cp = CalumEvalParams(**TEXT | {"seeds": [1, 2, 3], "text_to_text": {"predict": "score"}})
    m = calum.run(t5, rte, "rte", tmp_path / "score", cp, progress=False)
    assert m["text_to_text"] == {"fine_tuned": False, "predict": "score"} and len(m["per_seed"]) == 1
    assert (tmp_path / "score/history.jsonl").read_text() == "" and not (tmp_path / "score/model").exists()
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from evaluators.calum import text_to_text as t2t

    model, tokenizer = AutoModelForSeq2SeqLM.from_pretrained(t5.location), AutoTokenizer.from_pretrained(t5.location)
    row = json.loads((rte / "rte/signal/dev.jsonl").read_text().splitlines()[0])
    source = tokenizer(t2t.text(row, "rte"), return_tensors="pt")
    by_hand = []
    for word in ("entailment", "not_entailment"):
        target = tokenizer(word, return_tensors="pt").input_ids
        with torch.no_grad():
            logp = model(**source, labels=target).logits.log_softmax(-1)
        by_hand.append(logp[0, torch.arange(target.shape[1]), target[0]].sum().item())
    wrapped = t2t.load(t5, tokenizer, ["entailment", "not_entailment"]).eval()
    with torch.no_grad():
        scores = wrapped(**source).logits[0].tolist()
    assert scores == pytest.approx(by_hand, abs=1e-4)
    chosen = next(r for r in _predictions(tmp_path / "score")
                  if r["variant"] == "signal" and r["pair_id"] == row["pair_id"])
    assert chosen["prediction"] == ["entailment", "not_entailment"][by_hand.index(max(by_hand))]

    generated = calum.run(t5, rte, "rte", tmp_path / "gen", cp.model_copy(update={
        "text_to_text": cp.text_to_text.model_copy(update={"predict": "generate"})}), progress=False)
    answers = {r["prediction"] for r in _predictions(tmp_path / "gen")}
    assert not answers & {"entailment", "not_entailment"} and generated["accuracy"]["mean"] == 0.0


def test_by_default_t5_runs_text_to_text_as_the_paper_and_bart_gets_a_head(tmp_path, rte, t5, tiny_bart):
    cp = CalumEvalParams(**TEXT | {"max_steps": 1}).model_copy(update={"seq2seq": CalumEvalParams().seq2seq})
    assert cp.seq2seq == "paper" and not CalumEvalParams().text_to_text.fine_tune
    m = calum.run(t5, rte, "rte", tmp_path / "t5", cp, progress=False)
    assert m["text_to_text"] == {"fine_tuned": False, "predict": "generate"} and "steps" not in m["per_seed"][0]
    bart = calum.run(ModelRef("bart", str(tiny_bart), str(tiny_bart)), rte, "rte", tmp_path / "bart", cp,
                     progress=False)
    assert "text_to_text" not in bart and bart["per_seed"][0]["steps"] == 1


def test_text_to_text_needs_a_seq2seq_lm_and_one_task(tmp_path, rte, t5, tiny_bert_no_head):
    cp = CalumEvalParams(**TEXT | {"max_steps": 1})
    with pytest.raises(UsageError, match=r"text-to-text needs a seq2seq LM \(T5\); a BertConfig model"):
        calum.run(ModelRef("bert", str(tiny_bert_no_head), str(tiny_bert_no_head)), rte, "rte", tmp_path / "a", cp)
    with pytest.raises(UsageError, match=r"--multitask Para: calum_eval.seq2seq text-to-text runs one task"):
        calum.run(t5, rte, "rte", tmp_path / "b", cp, group="Para")


def _klue(tmp_path):
    rows = [{"task": "klue_nli", "split": s, "idx": f"{s}-{i}", "sentence1": f"{SENTENCES[i % 2]} {i}",
             "sentence2": "a year old person", "label": ["entailment", "neutral", "contradiction"][i % 3],
             "line": i + 2} for s in ("train", "dev") for i in range(20)]
    variants, meta = calum_generator.build(ParamsFile(None, {"calum": {"task": "klue_nli"}}),
                                           {"klue": {"pairs": pd.DataFrame(rows)}})
    write_pair_dataset(tmp_path / "klue_nli", variants, meta | {"license": "other", "sources": {}},
                       calum_generator.card)
    return meta


SMOKE = {"seeds": [1], "max_length": 64, "batch_size": 8, "device_batch_size": 8, "save_models": "none",
         "max_steps": 1}


def test_a_drawn_test_split_is_evaluated_and_reported_beside_the_validation_split(tmp_path, rte, tiny_bert_no_head):
    meta = _klue(tmp_path / "data")
    assert meta["counts"]["original"] == {"train": 20, "dev": 10, "test": 10}
    ref = ModelRef("tiny", str(tiny_bert_no_head), str(tiny_bert_no_head))
    m = calum.run(ref, tmp_path / "data", "klue_nli", tmp_path / "res/tiny-klue_nli", CalumEvalParams(**SMOKE),
                  progress=False)
    assert m["split"] == "dev" and m["per_seed"][0]["n"] == 10
    test = m["test"]
    assert test["split"] == "test" and test["per_seed"][0]["n"] == test["per_seed"][0]["n_labelled"] == 10
    assert {"accuracy", "C_R", "C_S"} <= set(test) and test["majority"] is not None
    rows = _predictions(tmp_path / "res/tiny-klue_nli")
    assert sum(r.get("split") == "test" for r in rows) == 30 and sum("split" not in r for r in rows) == 30
    drawn = (tmp_path / "data/klue_nli/original/test.jsonl").read_text().splitlines()
    assert {r["pair_id"] for r in rows if r.get("split") == "test"} == {json.loads(line)["pair_id"] for line in drawn}
    # GLUE's own (unlabelled) test: not by default; with `always`, C_R / C_S only
    glue_run = calum.run(ref, rte, "rte", tmp_path / "res/tiny-rte", CalumEvalParams(**SMOKE), progress=False)
    assert "test" not in glue_run
    always = calum.run(ref, rte, "rte", tmp_path / "always", CalumEvalParams(**SMOKE | {"evaluate_test": "always"}),
                       progress=False)
    assert always["test"]["majority"] is None and "accuracy" not in always["test"] and "C_R" in always["test"]
    text, summary = calum_report.render(calum_report.read_results(tmp_path / "res"))
    assert "tiny-klue_nli:test" in summary["runs"] and summary["runs"]["tiny-klue_nli:test"]["split"] == "test"
    korean = text.split("Korean tasks (Table 5)")[1]
    assert "| tiny (test) " in korean and "| tiny " in korean
