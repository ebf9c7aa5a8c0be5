"""CALUM fine-tuning (papers/004 §4.3 and §6) with the transformers ``Trainer``: train a sequence classifier on
a task's ``original`` training split, stop early on validation accuracy and restore the best checkpoint,
predict every variant of the validation split, and report accuracy, C_R and C_S (``calum_metrics``) per seed
and as mean ± std over the seeds.

- Single task: any ``AutoModelForSequenceClassification`` with a new head for the task's labels (BERT,
  RoBERTa, ELECTRA, BART, T5, GPT-2: a model without a padding token pads with its end-of-text token).
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
from evaluators.calum.classifiers import load_classifier, load_multitask, load_tokenizer, quiet
from evaluators.calum.data import TaskData, concatenate, encode, task_folder
from evaluators.calum.params import CalumEvalParams
from evaluators.calum.trainer import (
    arguments,
    devices,
    fine_tune,
    history,
    predict,
    provenance,
    save_best,
    stopping_point,
)
from probekit import atomic
from probekit.tokens.refs import ModelRef

log = logging.getLogger("probekit")


def run(ref: ModelRef, data: str | Path, task: str, out: str | Path, cp: CalumEvalParams, *,
        group: str | None = None, device: str = "cpu", progress: bool = True, profile: str | None = None) -> dict:
    """Fine-tune per seed (single task, or multitask ``group`` of ``cp.multitask``), evaluate, and write
    ``predictions.jsonl``, ``metrics.json``, ``history.jsonl`` and the saved models under ``out`` atomically;
    ``profile``: the params file's profile (``smoke``, ``paper``), recorded in metrics.json."""
    tasks = [task] + ([t for t in cp.multitask[group] if t != task] if group else [])
    sets = {t: TaskData(task_folder(data, t)) for t in tasks}
    main = sets[task]
    train_rows = {t: d.rows("original", cp.train_split, labelled=True, limit=cp.limit) for t, d in sets.items()}
    eval_rows = {t: {v: d.rows(v, cp.split, labelled=v == "original", limit=cp.eval_limit) for v in d.variants}
                 for t, d in sets.items()}
    per_seed, predictions, logs = {t: [] for t in tasks}, [], []
    record: dict = {}
    n_devices = devices(device, cp.dtype)
    quiet()
    log.info("%s: %s", ref.name, "one new head per task (MT-DNN)" if group else "a new classification head")
    tokenizer = load_tokenizer(ref)
    ids = {t: k for k, t in enumerate(tasks)} if group else {task: None}   # the multitask heads, in tasks' order
    encoded = {t: encode(tokenizer, train_rows[t], sets[t].labels, cp.max_length, ids[t]) for t in tasks}
    train = concatenate([e for e, _ in encoded.values()])
    evaluated = {t: {v: encode(tokenizer, vrows, sets[t].labels, cp.max_length, ids[t])
                     for v, vrows in eval_rows[t].items()} for t in tasks}
    validation = evaluated[task]["original"][0]
    truncated = {f"{t}/{v}": n for t, by in evaluated.items() for v, (_, n) in by.items()} | {
        f"{t}/train": n for t, (_, n) in encoded.items()}
    with atomic.atomic_path(Path(out)) as tmp:
        for k, seed in enumerate(cp.seeds):
            if group:
                model = load_multitask(ref, {t: d.labels for t, d in sets.items()}, seed)
            else:
                model = load_classifier(ref, tokenizer, main.labels, seed)
            args = arguments(cp, tmp / ".checkpoints", seed, len(train), device, n_devices)
            desc = f"{ref.name} {task}{'-' + group if group else ''} seed {seed}"
            trainer = fine_tune(model, tokenizer, train, validation, cp, args, desc, progress)
            logs += history(trainer, seed)
            for t in tasks:
                rows = []
                for variant, vrows in eval_rows[t].items():
                    rows += [{"seed": seed, "task": t, "pair_id": r["pair_id"], "variant": variant,
                              "prediction": sets[t].labels[i], "label": r["label"]}
                             for r, i in zip(vrows, predict(trainer, evaluated[t][variant][0]))]
                predictions += rows
                per_seed[t].append({"seed": seed, **calum_metrics.consistency(rows), **stopping_point(trainer)})
            if cp.save_models == "all" or (cp.save_models == "first" and k == 0):
                save_best(trainer, tokenizer, tmp / "model" / (f"seed-{seed}" if cp.save_models == "all" else ""),
                      {t: d.labels for t, d in sets.items()} if group else None)
            record = {"truncated": dict(sorted(truncated.items())), **provenance(model, args, ref.revision, device)}
            shutil.rmtree(tmp / ".checkpoints", ignore_errors=True)
        metrics = {"protocol": "calum", "task": task, "model": ref.name, "model_id": ref.spec,
                   "setting": group or "Single", "tasks_trained": tasks, "split": cp.split,
                   "labels": main.labels, "head_pretrained": False,
                   "capped": bool(cp.capped()), "caps": cp.capped(), "profile": profile,
                   "params": cp.model_dump(mode="json"),
                   "data": {t: {"folder": str(d.folder), "fingerprint": d.meta["fingerprint"],
                                "order": d.meta.get("order")} for t, d in sets.items()},
                   "train_examples": {t: len(r) for t, r in train_rows.items()}, **record,
                   **_summary(per_seed[task], eval_rows[task]["original"])}
        if group:
            metrics["aux"] = {t: _summary(per_seed[t], eval_rows[t]["original"]) for t in tasks[1:]}
        atomic.write_jsonl(tmp / "predictions.jsonl", predictions)
        atomic.write_jsonl(tmp / "history.jsonl", logs)
        atomic.write_json(tmp / "metrics.json", metrics)
    return metrics


def _summary(per_seed: list[dict], originals: list[dict]) -> dict:
    """Mean ± std over seeds of accuracy, C_R, C_S (C_sym), the majority class's share, and each seed's."""
    gold = Counter(r["label"] for r in originals)
    return {**calum_metrics.over_seeds(per_seed), "majority": max(gold.values()) / len(originals),
            "per_seed": per_seed}
