"""CALUM fine-tuning (papers/004 §4.3 and §6) with the transformers ``Trainer``: train a sequence classifier on a
task's ``original`` training split, stop early on validation accuracy and keep the last checkpoint (the original
code's; ``calum_eval.checkpoint: best`` restores the best), predict every variant of the validation split (and of
the test split, ``calum_eval.evaluate_test``), and report accuracy, C_R and C_S (``calum_metrics``) per seed and as
mean ± std over the seeds.

- Single task: any ``AutoModelForSequenceClassification`` with a new head for the task's labels (BERT,
  RoBERTa, ELECTRA, BART, T5, GPT-2: a model without a padding token pads with its end-of-text token).
- Text-to-text (``calum_eval.seq2seq: text-to-text``, ``text_to_text``): a seq2seq LM (T5) reads T5's GLUE
  format and writes the label as a word, as the paper ran T5: the checkpoint as it is, evaluated once (the
  paper's), or fine-tuned on the label words; answers generated (the paper's) or label words scored.
- Multitask (``group``): MT-DNN's shared encoder with one head per task (``multitask.MultitaskClassifier``),
  trained on the main task's and the group's tasks' training splits together (shuffled, so batches mix
  tasks; MT-DNN draws one task per batch, the same objective in expectation), early stopping on the main
  task's validation accuracy; every task of the group is then evaluated.

The Trainer does the optimisation (AdamW, linear schedule with warm-up, gradient accumulation, mixed
precision with ``dtype`` bfloat16/float16, every visible GPU), seeded per run: ``transformers.set_seed(seed)``
before the head is drawn, and the Trainer's own seed for shuffling and dropout. Predictions run length-sorted
(longest first), so padding costs little and memory fails early if it fails.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from pathlib import Path

from evaluators.calum import metrics as calum_metrics
from evaluators.calum import text_to_text as t2t
from evaluators.calum.classifiers import load_classifier, load_multitask, load_own_heads, load_tokenizer, quiet
from evaluators.calum.data import TaskData, concatenate, encode, task_folder
from evaluators.calum.params import CalumEvalParams
from evaluators.calum.trainer import (
    arguments,
    devices,
    fine_tune,
    history,
    predict,
    predictor,
    provenance,
    save_checkpoint,
    stopping_point,
)
from probekit.outputs import atomic
from probekit.errors import UsageError
from probekit.tokens.refs import ModelRef

log = logging.getLogger("probekit")


def test_split(data: TaskData, cp: CalumEvalParams) -> str | None:
    """The test split also evaluated for ``data`` (``cp.evaluate_test``), or None: ``test`` where the dataset
    has it and it is the paper's §4.1 test, drawn or kept from the table set (``meta.json`` ``test_draw``: KLUE,
    KorNLI), or with ``always`` wherever it is."""
    has = "test" in data.meta["counts"].get("original", {}) and cp.split != "test"
    if cp.evaluate_test == "never" or not has:
        return None
    return "test" if cp.evaluate_test == "always" or data.meta.get("test_draw") else None


def run(ref: ModelRef, data: str | Path, task: str, out: str | Path, cp: CalumEvalParams, *,
        group: str | None = None, device: str = "cpu", progress: bool = True, profile: str | None = None) -> dict:
    """Fine-tune per seed (single task, or multitask ``group`` of ``cp.multitask``), evaluate, and write
    ``predictions.jsonl``, ``metrics.json``, ``history.jsonl`` and the saved models under ``out`` atomically;
    ``profile``: the params file's profile (``smoke``, ``paper``), recorded in metrics.json."""
    text = cp.seq2seq == "text-to-text" or (cp.seq2seq == "paper" and not group and t2t.is_t5(ref))
    if text and group:
        raise UsageError(f"--multitask {group}: calum_eval.seq2seq text-to-text runs one task at a time (MT-DNN's "
                         f"shared encoder has one classification head per task)")
    trained = not text or cp.text_to_text.fine_tune
    tasks = [task] + ([t for t in cp.multitask[group] if t != task] if group else [])
    sets = {t: TaskData(task_folder(data, t)) for t in tasks}
    main = sets[task]
    splits = {t: [cp.split] + [s for s in [test_split(d, cp)] if s] for t, d in sets.items()}
    train_rows = {t: d.rows("original", cp.train_split, labelled=True, limit=cp.limit) for t, d in sets.items()
                  } if trained else {}
    eval_rows = {t: {s: {v: d.rows(v, s, labelled=v == "original" and s == cp.split, limit=cp.eval_limit)
                         for v in d.variants} for s in splits[t]} for t, d in sets.items()}
    per_seed, predictions, logs = {(t, s): [] for t in tasks for s in splits[t]}, [], []
    record: dict = {}
    n_devices = devices(device, cp.dtype)
    quiet()
    log.info("%s: %s", ref.name, "one new head per task (MT-DNN)" if group else "text-to-text, labels as words"
             if text else "a new classification head")
    tokenizer = load_tokenizer(ref)
    ids = {t: k for k, t in enumerate(tasks)} if group else {task: None}   # the multitask heads, in tasks' order

    def encoded_rows(t: str, rows: list[dict]):
        if text:
            return t2t.encode(tokenizer, rows, sets[t].labels, cp.max_length, t)
        return encode(tokenizer, rows, sets[t].labels, cp.max_length, ids[t])

    encoded = {t: encoded_rows(t, rows) for t, rows in train_rows.items()}
    train = concatenate([e for e, _ in encoded.values()]) if trained else None
    evaluated = {t: {s: {v: encoded_rows(t, vrows) for v, vrows in by.items()} for s, by in eval_rows[t].items()}
                 for t in tasks}
    validation = evaluated[task][cp.split]["original"][0]
    truncated = {f"{t}/{v}" if s == cp.split else f"{t}/{s}/{v}": n for t, by_split in evaluated.items()
                 for s, by in by_split.items() for v, (_, n) in by.items()} | {
        f"{t}/train": n for t, (_, n) in encoded.items()}
    generate = text and cp.text_to_text.predict == "generate"
    with atomic.atomic_path(Path(out), kind="results") as tmp:
        for k, seed in enumerate(cp.seeds if trained else cp.seeds[:1]):   # the checkpoint as it is: once
            if text:
                model = t2t.load(ref, tokenizer, main.labels)
            elif group:
                labels = {t: d.labels for t, d in sets.items()}
                model = load_own_heads(ref, tokenizer, labels, seed) if cp.multitask_heads == "own" \
                    else load_multitask(ref, labels, seed)
            else:
                model = load_classifier(ref, tokenizer, main.labels, seed)
            args = arguments(cp, tmp / ".checkpoints", seed, len(train) if trained else 1, device, n_devices)
            desc = f"{ref.name} {task}{'-' + group if group else ''} seed {seed}"
            if trained:
                trainer = fine_tune(model, tokenizer, train, validation, cp, args, desc, progress)
                logs += history(trainer, seed)
            else:
                trainer = predictor(model, tokenizer, args, validation)
            for t in tasks:
                for s in splits[t]:
                    rows = []
                    for variant, vrows in eval_rows[t][s].items():
                        if generate:
                            answers = t2t.generate(trainer.model.model, tokenizer, vrows, t, cp.max_length,
                                                   cp.text_to_text.max_new_tokens, 2 * cp.device_batch_size, device)
                        else:
                            answers = [sets[t].labels[i] for i in predict(trainer, evaluated[t][s][variant][0])]
                        rows += [{"seed": seed, "task": t, **({} if s == cp.split else {"split": s}),
                                  "pair_id": r["pair_id"], "variant": variant, "prediction": a, "label": r["label"]}
                                 for r, a in zip(vrows, answers)]
                    predictions += rows
                    per_seed[(t, s)].append({"seed": seed, **calum_metrics.consistency(rows),
                                             **(stopping_point(trainer) if trained else {})})
            if trained and (cp.save_models == "all" or (cp.save_models == "first" and k == 0)):
                save_checkpoint(trainer, tokenizer, tmp / "model" / (f"seed-{seed}" if cp.save_models == "all" else ""),
                          {t: d.labels for t, d in sets.items()} if group else None)
            record = {"truncated": dict(sorted(truncated.items())), **provenance(model, args, ref.revision, device)}
            shutil.rmtree(tmp / ".checkpoints", ignore_errors=True)
        metrics = {"protocol": "calum", "task": task, "model": ref.name, "model_id": ref.spec,
                   "setting": group or "Single", "tasks_trained": tasks, "split": cp.split,
                   "labels": main.labels, "head_pretrained": text,
                   "capped": bool(cp.capped()), "caps": cp.capped(), "profile": profile,
                   "params": cp.model_dump(mode="json"),
                   "data": {t: {"folder": str(d.folder), "fingerprint": d.meta["fingerprint"],
                                "order": d.meta.get("order"), **({"eval_order": d.meta["eval_order"]}
                                                                 if "eval_order" in d.meta else {})}
                            for t, d in sets.items()},
                   "train_examples": {t: len(r) for t, r in train_rows.items()}, **record,
                   **_summaries(per_seed, eval_rows, task, cp.split)}
        if text:
            metrics["text_to_text"] = {"fine_tuned": trained, "predict": cp.text_to_text.predict}
        if group:
            metrics["aux"] = {t: _summaries(per_seed, eval_rows, t, cp.split) for t in tasks[1:]}
        atomic.write_jsonl(tmp / "predictions.jsonl", predictions)
        atomic.write_jsonl(tmp / "history.jsonl", logs)
        atomic.write_json(tmp / "metrics.json", metrics)
    return metrics


def _summaries(per_seed: dict, eval_rows: dict, task: str, split: str) -> dict:
    """``task``'s summary on the validation ``split`` and, where evaluated, ``test``: its own summary with
    its split's name."""
    out = _summary(per_seed[(task, split)], eval_rows[task][split]["original"])
    for s in eval_rows[task]:
        if s != split:
            out["test"] = {"split": s, **_summary(per_seed[(task, s)], eval_rows[task][s]["original"])}
    return out


def _summary(per_seed: list[dict], originals: list[dict]) -> dict:
    """Mean ± std over seeds of accuracy, C_R, C_S (C_sym), the majority class's share (None without labels),
    and each seed's."""
    gold = Counter(r["label"] for r in originals if r["label"] is not None)
    return {**calum_metrics.over_seeds(per_seed),
            "majority": max(gold.values()) / sum(gold.values()) if gold else None, "per_seed": per_seed}
