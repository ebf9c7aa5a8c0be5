"""CALUM fine-tuning (``probes evaluate calum``) on tiny models built here and real RTE/MRPC slices of the
mirror: learning, variants predicted and paired, GPT-2's padding, the multitask heads, errors, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import generators.calum.generator as calum_generator
from evaluators.calum import finetune as calum
from evaluators.calum.multitask import MASKED_LOGIT, MultitaskClassifier
from evaluators.calum.params import CalumEvalParams
from probekit.data.pairs import write_pair_dataset
from probekit.errors import DataError, UsageError
from probekit.params import ParamsFile
from probekit.tokens.refs import ModelRef
from probes.main import main

SMOKE = {"seeds": [1], "max_length": 128, "batch_size": 8, "device_batch_size": 8, "save_models": "none"}


@pytest.fixture(scope="module")
def calum_data(tmp_path_factory, source_tables):
    """``data/calum``-like: the first 64 examples of each split of RTE and MRPC from the mirror."""
    root = tmp_path_factory.mktemp("calum")
    for task in ("rte", "mrpc"):
        variants, meta = calum_generator.build(ParamsFile(None, {"calum": {"task": task, "limit": 64}}),
                                               {"glue": source_tables("glue")})
        write_pair_dataset(root / task, variants, meta | {"license": "other", "sources": {}}, calum_generator.card)
    return root


def _ref(path) -> ModelRef:
    return ModelRef("tiny", str(path), str(path))


@pytest.mark.slow   # a real fine-tuning (13 s)
def test_a_tiny_bert_beats_the_majority_class_on_its_real_rte_training_slice(tmp_path, calum_data, tiny_bert_no_head):
    cp = CalumEvalParams(**SMOKE | {"split": "train", "lr": 1e-3, "epochs": 30, "patience": 30, "warmup": 0.0})
    m = calum.run(_ref(tiny_bert_no_head), calum_data, "rte", tmp_path / "out", cp, progress=False)
    assert m["majority"] < 0.6 and m["accuracy"]["mean"] > m["majority"] + 0.2
    assert m["setting"] == "Single" and m["capped"] and m["caps"]["epochs"] == 30
    rows = [json.loads(line) for line in (tmp_path / "out/predictions.jsonl").read_text().splitlines()]
    assert {r["variant"] for r in rows} == {"original", "reverse", "signal"} and len(rows) == 3 * 64
    by = {(r["variant"], r["pair_id"]): r["prediction"] for r in rows}
    same = sum(by[("reverse", p)] == by[("original", p)] for v, p in by if v == "original")
    assert m["C_R"]["mean"] == same / 64 and 0 <= m["C_S"]["mean"] <= 1
    history = [json.loads(line) for line in (tmp_path / "out/history.jsonl").read_text().splitlines()]
    assert sum("eval_accuracy" in h for h in history) == m["per_seed"][0]["epochs"] == 30


def test_gpt2_pads_with_its_end_token_and_runs_are_deterministic(tmp_path, calum_data, tiny_gpt2):
    cp = CalumEvalParams(**SMOKE | {"max_steps": 2, "eval_limit": 8, "save_models": "first"})
    first = calum.run(_ref(tiny_gpt2), calum_data, "mrpc", tmp_path / "a", cp, progress=False)
    assert {"accuracy", "C_R", "C_S", "C_sym"} <= set(first) and first["per_seed"][0]["steps"] == 2
    config = json.loads((tmp_path / "a/model/config.json").read_text())
    assert config["pad_token_id"] == config["eos_token_id"] and config["id2label"]["1"] == "equivalent"
    calum.run(_ref(tiny_gpt2), calum_data, "mrpc", tmp_path / "b", cp, progress=False)
    for name in ("metrics.json", "predictions.jsonl", "history.jsonl", "model/model.safetensors"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize("family", ["tiny_roberta", "tiny_bart", "tiny_t5", "tiny_llama"])
def test_every_family_fine_tunes_as_a_sequence_classifier(tmp_path, calum_data, family, request):
    cp = CalumEvalParams(**SMOKE | {"max_steps": 1, "eval_limit": 4, "limit": 8, "seq2seq": "classification"})
    m = calum.run(_ref(request.getfixturevalue(family)), calum_data, "rte", tmp_path / "out", cp, progress=False)
    assert m["per_seed"][0]["steps"] == 1 and m["C_R"]["n"] == 1 and m["per_seed"][0]["n_C_S"] == 4
    assert "text_to_text" not in m and not m["head_pretrained"]


def test_the_multitask_model_routes_each_task_to_its_own_head(tiny_bert_no_head):
    from transformers import BertModel

    model = MultitaskClassifier(BertModel.from_pretrained(tiny_bert_no_head), {"a": ["x", "y"], "b": ["p", "q", "r"]},
                                pool_last=False).eval()
    with torch.no_grad():
        for k, head in enumerate(model.heads):
            head.out.weight.zero_()
            head.out.bias.copy_(torch.arange(head.out.bias.numel()) + 10.0 * (k + 1))
    ids = torch.tensor([[101, 2000, 102], [101, 2001, 102], [101, 2002, 102]])
    out = model(ids, torch.ones_like(ids), task_id=torch.tensor([1, 0, 1]))
    assert out.logits.tolist() == [[20, 21, 22], [10, 11, MASKED_LOGIT], [20, 21, 22]]
    model.train()
    model(ids[:2], torch.ones_like(ids[:2]), task_id=torch.tensor([0, 0]), labels=torch.tensor([1, 0])).loss.backward()
    assert model.heads[0].out.weight.grad.abs().sum() > 0 and model.heads[1].out.weight.grad is None


def test_a_multitask_run_from_the_cli(tmp_path, calum_data, tiny_bert_no_head, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(json.dumps({"models": {"tiny": str(tiny_bert_no_head)}, "calum_eval": SMOKE | {
        "max_steps": 1, "eval_limit": 8, "limit": 16, "save_models": "first", "multitask": {"Para-MRPC": ["mrpc"]}}}))
    assert main(["evaluate", "calum", "--params", str(params), "--model", "tiny", "--task", "rte", "--data",
                 str(calum_data), "--out", str(tmp_path / "mt"), "--multitask", "Para-MRPC"]) == 0
    assert "tiny rte (Para-MRPC, 1 seed(s), dev): accuracy" in capsys.readouterr().out
    m = json.loads((tmp_path / "mt/metrics.json").read_text())
    assert m["tasks_trained"] == ["rte", "mrpc"] and m["train_examples"] == {"rte": 16, "mrpc": 16}
    assert "C_sym" in m["aux"]["mrpc"] and "C_sym" not in m
    rows = [json.loads(line) for line in (tmp_path / "mt/predictions.jsonl").read_text().splitlines()]
    assert {(r["task"], r["variant"]) for r in rows} == {("rte", "original"), ("rte", "reverse"), ("rte", "signal"),
                                                         ("mrpc", "original"), ("mrpc", "reverse"), ("mrpc", "signal"),
                                                         ("mrpc", "symmetric")}
    assert json.loads((tmp_path / "mt/model/tasks.json").read_text())[0] == {"task": "rte",
                                                                               "labels": ["entailment", "not_entailment"]}
    assert main(["evaluate", "calum", "--params", str(params), "--model", "tiny", "--task", "rte", "--data",
                 str(calum_data), "--out", str(tmp_path / "x"), "--multitask", "All"]) == 2
    assert "the groups in" in capsys.readouterr().err


def test_bad_input_names_the_file_and_line(tmp_path, calum_data, tiny_bert_no_head):
    import shutil

    data = tmp_path / "rte"
    shutil.copytree(calum_data / "rte", data)
    lines = (data / "original/train.jsonl").read_text().splitlines()
    row = json.loads(lines[2]) | {"label": "maybe"}
    (data / "original/train.jsonl").write_text("\n".join(lines[:2] + [json.dumps(row)] + lines[3:]) + "\n")
    with pytest.raises(DataError, match=r"original/train.jsonl:3: label 'maybe' is not one of"):
        calum.run(_ref(tiny_bert_no_head), data, "rte", tmp_path / "out", CalumEvalParams(**SMOKE))
    with pytest.raises(UsageError, match=r"holds 'rte', not 'mrpc'"):
        calum.run(_ref(tiny_bert_no_head), data, "mrpc", tmp_path / "out", CalumEvalParams(**SMOKE))
    with pytest.raises(DataError, match=r"test.jsonl:1: no label"):
        calum.run(_ref(tiny_bert_no_head), calum_data, "rte", tmp_path / "out",
                  CalumEvalParams(**SMOKE | {"split": "test"}))
    with pytest.raises(UsageError, match=r"batch_size 8 is not a multiple of device_batch_size 3"):
        calum.run(_ref(tiny_bert_no_head), calum_data, "rte", tmp_path / "out",
                  CalumEvalParams(**SMOKE | {"device_batch_size": 3}))
    with pytest.raises(UsageError, match=r"fp16 mixed precision needs a CUDA device"):
        calum.run(_ref(tiny_bert_no_head), calum_data, "rte", tmp_path / "out",
                  CalumEvalParams(**SMOKE | {"dtype": "float16"}))
    assert not (tmp_path / "out").exists()


def test_a_calum_grid_reports_each_task_in_its_column(tmp_path, calum_data, tiny_bert_no_head, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(json.dumps({"models": {"tiny": str(tiny_bert_no_head)},
                                  "calum_eval": SMOKE | {"max_steps": 1, "eval_limit": 8, "limit": 16}}))
    spec = tmp_path / "grid.yaml"
    spec.write_text(f"protocol: calum\nmodels: [tiny]\ndata: [{calum_data}]\ntask: [rte, mrpc]\nseeds: [1, 2]\n")
    assert main(["grid", "--spec", str(spec), "--out", str(tmp_path / "store"), "--params", str(params)]) == 0
    assert "4 cells: 4 run, 0 cached, 0 failed" in capsys.readouterr().out
    runs = json.loads((tmp_path / "store/report.json").read_text())["runs"]
    assert sorted((r["model"], r["task"]) for r in runs.values()) == [
        ("tiny · seeds=1", "mrpc"), ("tiny · seeds=1", "rte"), ("tiny · seeds=2", "mrpc"), ("tiny · seeds=2", "rte")]
    report = (tmp_path / "store/report.md").read_text()
    assert "English tasks (Table 2)" in report and "tiny · seeds=2 ‡" in report   # ‡ capped
    assert (tmp_path / "store/report.png").read_bytes()[:4] == b"\x89PNG"


def test_a_causal_lm_is_fine_tuned_as_the_paper_did_and_a_skipped_run_is_reported(tmp_path, calum_data, tiny_gpt2,
                                                                                    capsys):
    """CALUM applies to every family (the paper fine-tuned GPT2 and BART beside the encoders): the CLI runs a causal
    LM; a run recorded as skipped (evaluators/shared/applies.py) is listed by the report, not read as a result."""
    from evaluators.shared import applies
    from probekit.tokens.refs import ModelRef

    params = tmp_path / "params.yaml"
    params.write_text(json.dumps({"models": {"gpt": str(tiny_gpt2)}, "calum_eval": SMOKE}))
    (tmp_path / "res").mkdir()
    out = tmp_path / "res" / "gpt-rte"
    assert main(["evaluate", "calum", "--params", str(params), "--model", "gpt", "--task", "rte", "--data",
                 str(calum_data), "--out", str(out), "--device", "cpu"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert "skipped" not in m and m["device"] == "cpu" and "C_R" in m
    why = "CALUM (a fine-tuned classifier): for a masked LM only; other is a causal LM"
    applies.write_skipped([tmp_path / "res" / "other-rte"],
                          applies.record("calum", ModelRef("other", "x", "x"), "causal", why, "cpu"))
    assert main(["calum-report", str(tmp_path / "res"), "--out", str(tmp_path / "calum.md"), "--plot",
                 str(tmp_path / "calum.png")]) == 0
    text = (tmp_path / "calum.md").read_text()
    assert "## Skipped" in text and f"- other: calum skipped ({why})" in text and "gpt" in text.split("## Skipped")[0]
    assert (tmp_path / "calum.png").read_bytes()[:4] == b"\x89PNG"


def _scripted(monkeypatch, accuracies) -> tuple[list, list]:
    """Validation accuracies as scripted (the early stopping they drive is then known); the model's weights at each
    evaluation (its epoch's) and when it predicts the variants (the checkpoint evaluated)."""
    from evaluators.calum import trainer as calum_trainer

    epochs, evaluated = [], []
    classes, predict = calum_trainer._trainer_classes, calum.predict

    def weights(model) -> dict:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def recording():
        class Recording(classes()):
            def on_evaluate(self, args, state, control, model=None, **kw):
                epochs.append(weights(model))

        return Recording

    def predicting(trainer, dataset):
        evaluated.append(weights(trainer.model))
        return predict(trainer, dataset)

    # the Trainer computes an evaluation's metrics before its callbacks' on_evaluate: len(epochs) evaluations done
    monkeypatch.setattr(calum_trainer, "_accuracy", lambda prediction: {"accuracy": accuracies[len(epochs)]})
    monkeypatch.setattr(calum_trainer, "_trainer_classes", recording)
    monkeypatch.setattr(calum, "predict", predicting)
    return epochs, evaluated


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow   # two real fine-tunings (4 epochs each)
@pytest.mark.parametrize("checkpoint,evaluated", [("last", 4), ("best", 1)])
def test_the_evaluated_checkpoint_is_the_last_epoch_as_the_original_or_the_best(
        tmp_path, calum_data, monkeypatch, tiny_bert_no_head, checkpoint, evaluated):
    """The original keeps the last epoch (a ModelCheckpoint without a monitor, early stopping with patience 3): with
    dev accuracy peaking at epoch 1, training stops after epoch 4 and epoch 4's model predicts every variant;
    ``best`` restores epoch 1's."""
    epochs, predicted = _scripted(monkeypatch, [0.9, 0.5, 0.4, 0.3, 0.2, 0.1])
    cp = CalumEvalParams(**SMOKE | {"lr": 1e-3, "epochs": 6, "patience": 3, "warmup": 0.0, "eval_limit": 64,
                                    "checkpoint": checkpoint, "evaluate_test": "never"})
    m = calum.run(_ref(tiny_bert_no_head), calum_data, "rte", tmp_path / "out", cp, progress=False)
    stop = m["per_seed"][0]
    assert len(epochs) == 4 and stop["epochs"] == 4 and stop["best_epoch"] == 1   # three without a better accuracy
    assert stop["evaluated_epoch"] == evaluated
    assert not _same(epochs[0], epochs[3])   # training moved the weights: the two choices differ
    assert len(predicted) == 3 and all(_same(w, epochs[evaluated - 1]) for w in predicted)   # each variant


def test_the_original_early_stopping_counts_evaluations_without_a_better_accuracy():
    """``checkpoint: last``'s stopping rule is Lightning's EarlyStopping (patience 3, strictly better resets):
    it stops where transformers' EarlyStoppingCallback stops, without restoring anything."""
    from transformers import TrainerControl, TrainingArguments

    from evaluators.calum.trainer import _patience_stop, arguments

    stop, control, stops = _patience_stop(3), TrainerControl(), []
    for accuracy in (0.5, 0.6, 0.6, 0.55, 0.7, 0.7, 0.7, 0.7):
        stop.on_evaluate(None, None, control, metrics={"eval_accuracy": accuracy})
        stops.append(control.should_training_stop)
    assert stops == [False] * 7 + [True]   # 0.6 = 0.6 is no better; 0.7 resets; three 0.7s after it stop
    last = arguments(CalumEvalParams(**SMOKE), Path("w"), 1, 64, "cpu", 1)
    best = arguments(CalumEvalParams(**SMOKE | {"checkpoint": "best"}), Path("w"), 1, 64, "cpu", 1)
    assert isinstance(last, TrainingArguments) and not last.load_best_model_at_end and last.save_strategy == "no"
    assert best.load_best_model_at_end and best.save_strategy == "epoch"
    assert CalumEvalParams().checkpoint == "last"


def test_gradients_are_clipped_only_where_the_params_say():
    """The original code clips no gradient (Lightning ``gradient_clip_val: 0.0``, conf/trainer/glue.yaml); the
    transformers Trainer clips at 1.0 unless told otherwise. ``max_grad_norm: null`` (the paper profile) reaches the
    Trainer as 0, which turns its clipping off; the default keeps the Trainer's 1.0 (the smoke profile's outputs)."""
    from transformers import TrainingArguments

    from evaluators.calum.trainer import arguments

    default = arguments(CalumEvalParams(**SMOKE), Path("w"), 1, 64, "cpu", 1)
    unclipped = arguments(CalumEvalParams(**SMOKE | {"max_grad_norm": None}), Path("w"), 1, 64, "cpu", 1)
    assert isinstance(unclipped, TrainingArguments)
    assert default.max_grad_norm == 1.0 and unclipped.max_grad_norm == 0.0
    assert CalumEvalParams().max_grad_norm == 1.0 and "max_grad_norm" not in CalumEvalParams().capped()
