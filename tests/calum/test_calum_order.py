"""CALUM's NLI tasks in the order they are trained in (issue 52 item 1): the composed paper profile trains MNLI,
KLUE-NLI and KorNLI hypothesis-first, as the original code did (its text_classification/data.py line 28 reads the
input order from ``dataset["train"].features``, sorted by name by ``datasets`` until mid-2021), and scores
``original`` and SIGNAL in that order, REVERSE in the other; what a tiny model is fed in training, early stopping and
prediction, checked on MNLI rows in GLUE's own files; and T5's answers as long as the original's
``generate(max_length=16)`` lets them be."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

import generators.calum.generator as calum_generator
from evaluators.calum import finetune
from evaluators.calum import text_to_text as t2t
from evaluators.calum.params import CalumEvalParams
from probekit.data.pairs import write_pair_dataset
from probekit.params import ParamsFile, section
from probekit.sources.loaders import glue
from probekit.tokens.refs import ModelRef

from helpers import REPO

NLI = {"mnli": ("Premise", "Hypothesis"), "klue_nli": ("전제", "가정"), "kornli": ("전제", "가정")}
LABELS = ["entailment", "neutral", "contradiction"]
# MNLI rows as GLUE's MNLI/<split>.tsv holds them (its dev_matched opens with the first)
MNLI_ROWS = [("The new rights are nice enough", "Everyone really likes the newest benefits", "neutral"),
             ("This site includes a list of all award winners.", "The Government Executive articles housed on the "
              "website are not able to be searched.", "contradiction"),
             ("uh i don't know i i have mixed emotions about him", "I like him for the most part.", "entailment"),
             ("yeah i i think my favorite restaurant is always been the one closest", "My favorite restaurants are "
              "always at least a hundred miles away from my house.", "contradiction")]
HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
          "sentence2_parse\tsentence1\tsentence2")


@pytest.fixture(scope="module")
def paper(tmp_path_factory) -> ParamsFile:
    """The paper profile as `dvc exp run -S profile=paper` composes it."""
    from dvc.utils.hydra import compose_and_dump

    folder = tmp_path_factory.mktemp("paper")
    out = folder / "params.yaml"
    compose_and_dump(out, str(REPO / "conf"), None, "config", str(folder / "no-plugins"), ["profile=paper"])
    return ParamsFile(out, yaml.safe_load(out.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def mnli_tables(tmp_path_factory) -> dict:
    """The glue tables of MNLI read from GLUE's own files (``raw/glue/MNLI/<split>.tsv``)."""
    raw = tmp_path_factory.mktemp("raw")
    (raw / "glue" / "MNLI").mkdir(parents=True)
    for split in ("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"):
        labelled = not split.startswith("test")
        lines = [HEADER + ("\tlabel1\tgold_label" if labelled else "")] + [
            f"{i}\t{i}\t{i}n\tfiction\t( a )\t( b )\t(ROOT a)\t(ROOT b)\t{p}\t{h}" + (f"\t{g}\t{g}" if labelled else "")
            for i, (p, h, g) in enumerate(MNLI_ROWS)]
        (raw / "glue" / "MNLI" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    params = section(ParamsFile(None, {"tables": {"glue": {"tasks": ["mnli"]}}}), "tables.glue", glue.GlueParams)
    return {"glue": glue.load(raw, params).tables}


def _korean(task: str, splits: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([{"task": task, "split": s, "idx": f"{task}-{s}-{i}", "sentence1": f"{s} 전제 문장 {i}.",
                          "sentence2": f"{s} 가정 문장 {i}.", "label": LABELS[i % 3], "line": i + 2}
                         for s in splits for i in range(4)])


def _first_indicators(variants: dict, variant: str, split: str) -> list[str]:
    return [s["indicator"] for s in variants[variant][split][0]["segments"]]


def test_the_paper_profile_scores_every_nli_task_in_the_order_it_trains_it(paper, mnli_tables):
    """Train, dev and test ``original`` (and SIGNAL) hypothesis-first, REVERSE premise-first, for the three NLI
    tasks; every other task sentence1-first throughout. Before issue 52 the paper profile trained premise-first
    and scored ``original`` hypothesis-first."""
    tables = mnli_tables | {"klue": {"pairs": _korean("klue_nli", ("train", "dev"))},
                            "kornli": {"pairs": _korean("kornli", ("train", "dev", "test"))}}
    for task, (premise, hypothesis) in NLI.items():
        variants, meta = calum_generator.build(paper, tables, task=task)
        assert meta["order"] == [2, 1] and "eval_order" not in meta, task
        assert set(variants["original"]) == {"train", "dev", "test"}
        for split in ("train", "dev", "test"):
            assert _first_indicators(variants, "original", split) == [hypothesis, premise], (task, split)
            assert _first_indicators(variants, "signal", split) == [hypothesis, premise], (task, split)
            assert _first_indicators(variants, "reverse", split) == [premise, hypothesis], (task, split)
        assert variants["signal"]["dev"][0]["sentence1"].startswith(f"[{hypothesis}] ")
    rte = pd.DataFrame([{"task": "rte", "split": s, "idx": str(i), "sentence1": "a.", "sentence2": "b.",
                         "label": "entailment", "line": i + 2} for s in ("train", "dev") for i in range(2)])
    variants, meta = calum_generator.build(paper, {"glue": {"pairs": rte}}, task="rte")
    assert meta["order"] == [1, 2] and _first_indicators(variants, "original", "dev") == ["Sentence1", "Sentence2"]


def test_a_tiny_model_trains_stops_early_and_predicts_on_the_order_it_was_trained_on(tmp_path, paper, mnli_tables,
                                                                                      tiny_bert_no_head, monkeypatch):
    """The paper profile's MNLI, generated from GLUE's files and fine-tuned: the training batches, the dev split
    early stopping reads, and the predicted ``original`` and SIGNAL all read the hypothesis first; REVERSE the
    premise."""
    variants, meta = calum_generator.build(paper, mnli_tables, task="mnli")
    write_pair_dataset(tmp_path / "data" / "mnli", variants, meta | {"license": "other", "sources": {}},
                       calum_generator.card)
    fed: dict[str, list[str]] = {}
    real_fine_tune, real_predict = finetune.fine_tune, finetune.predict

    def fine_tune(model, tokenizer, train, validation, *args, **kwargs):
        fed["train"] = [tokenizer.decode(ids) for ids in train["input_ids"]]
        fed["early stopping"] = [tokenizer.decode(ids) for ids in validation["input_ids"]]
        fed["tokenizer"] = tokenizer
        return real_fine_tune(model, tokenizer, train, validation, *args, **kwargs)

    def predict(trainer, dataset):
        fed.setdefault("predicted", []).append([fed["tokenizer"].decode(ids) for ids in dataset["input_ids"]])
        return real_predict(trainer, dataset)

    monkeypatch.setattr(finetune, "fine_tune", fine_tune)
    monkeypatch.setattr(finetune, "predict", predict)
    cp = CalumEvalParams(seeds=[1], batch_size=4, device_batch_size=4, max_steps=1, save_models="none")
    ref = ModelRef("tiny", str(tiny_bert_no_head), str(tiny_bert_no_head))
    m = finetune.run(ref, tmp_path / "data", "mnli", tmp_path / "out", cp, progress=False)
    original, reverse, signal = fed["predicted"]   # the dev split's variants, in meta.json's order
    assert m["data"]["mnli"]["order"] == [2, 1] and "eval_order" not in m["data"]["mnli"]
    first = MNLI_ROWS[0]
    assert fed["train"][0] == f"[CLS] hypothesis : {first[1].lower()} [SEP] premise : {first[0].lower()} [SEP]"
    assert len(fed["train"]) == 4 and len(fed["early stopping"]) == len(original) == 8   # matched + mismatched
    for text in fed["train"] + fed["early stopping"] + original:
        assert text.startswith("[CLS] hypothesis :") and "[SEP] premise :" in text
    assert sorted(original) == sorted(fed["early stopping"])
    assert all(t.startswith("[CLS] premise :") and "[SEP] hypothesis :" in t for t in reverse)
    assert all(t.startswith("[CLS] [ hypothesis ]") and "[SEP] [ premise ]" in t for t in signal)


def test_t5_generates_at_most_15_new_tokens_as_the_originals_max_length_16(tiny_t5, paper):
    """The original code: ``self.model.generate(**inputs, max_length=16)`` (DSincerity/CALM inference/inference.py
    line 79), whose 16 count T5's decoder start token: our answers are the original's, token for token, where a
    random T5 runs on to the limit."""
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    cp = section(paper, "calum_eval", CalumEvalParams)
    assert cp.text_to_text.max_new_tokens == 15 == CalumEvalParams().text_to_text.max_new_tokens
    tokenizer = AutoTokenizer.from_pretrained(tiny_t5)
    model = T5ForConditionalGeneration.from_pretrained(tiny_t5).eval()
    # a random T5 answers <pad> throughout: kept from <pad> and </s>, it writes words up to the limit
    model.generation_config.suppress_tokens = [tokenizer.pad_token_id, tokenizer.eos_token_id]
    pairs = pd.DataFrame([{"task": "rte", "split": "dev", "idx": str(i), "sentence1": f"the {w} sat on a mat.",
                           "sentence2": f"a {w} is here.", "label": "entailment", "line": i + 2}
                          for i, w in enumerate(["cat", "dog", "child", "man"])])
    variants, _ = calum_generator.build(ParamsFile(None, {"calum": {"task": "rte", "splits": ["dev"]}}),
                                        {"glue": {"pairs": pairs}})
    rows = variants["original"]["dev"]
    ours = t2t.generate(model, tokenizer, rows, "rte", 128, cp.text_to_text.max_new_tokens, 8, "cpu")
    theirs = []
    with torch.no_grad():
        for row in rows:   # the original, one row at a time (no padding to tell apart)
            out = model.generate(**tokenizer([t2t.text(row, "rte")], return_tensors="pt"), max_length=16)
            theirs.append(t2t.TAGS.sub("", tokenizer.decode(out[0])).strip())
            assert out.shape[1] == 16   # the decoder start and 15 words
    assert ours == theirs and all(ours)


def test_the_setting_before_issue_52_is_one_named_switch_away(tmp_path, mnli_tables):
    """`dvc exp run -S profile=paper -S '~calum.train_order' -S '+calum.eval_order=original_code_swapped'`, as
    conf/profile/paper.yaml and docs/limits.md give it: MNLI trained premise-first, scored hypothesis-first."""
    from dvc.utils.hydra import compose_and_dump

    out = tmp_path / "params.yaml"
    compose_and_dump(out, str(REPO / "conf"), None, "config", str(tmp_path / "no-plugins"),
                     ["profile=paper", "~calum.train_order", "+calum.eval_order=original_code_swapped"])
    before = ParamsFile(out, yaml.safe_load(out.read_text(encoding="utf-8")))
    variants, meta = calum_generator.build(before, mnli_tables, task="mnli")
    assert _first_indicators(variants, "original", "train") == ["Premise", "Hypothesis"]
    assert _first_indicators(variants, "original", "dev") == ["Hypothesis", "Premise"]
    assert _first_indicators(variants, "reverse", "dev") == ["Premise", "Hypothesis"]
    assert meta["order"] == [1, 2] and meta["eval_order"] == [2, 1]
