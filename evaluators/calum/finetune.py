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
import math
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from evaluators.calum import metrics as calum_metrics
from evaluators.engine.models import resolve_dtype
from probekit import atomic
from probekit.data.pairs import read_meta, read_pairs
from probekit.errors import DataError, UsageError
from probekit.tokens.refs import ModelRef

log = logging.getLogger("probekit")
HISTORY_KEYS = ("step", "epoch", "loss", "grad_norm", "learning_rate", "eval_loss", "eval_accuracy")


class CalumEvalParams(BaseModel):
    """``calum_eval``: CALUM fine-tuning (papers/004 §4.3) and its multitask groups (§6). The defaults are the
    paper's settings; ``params.yaml`` caps them for the offline CPU pipeline."""

    model_config = ConfigDict(extra="forbid")

    split: str = "dev"                     # validation: early stopping, Acc_val, C_R and C_S (as the paper)
    train_split: str = "train"
    seeds: list[int] = [1, 2, 3, 4, 5]     # the paper trains each model five times
    lr: PositiveFloat = 1e-5
    weight_decay: float = 1e-3
    batch_size: PositiveInt = 64           # examples per update
    device_batch_size: PositiveInt = 16    # per forward pass and device; accumulation makes up batch_size
    epochs: PositiveInt = 10
    warmup: float = 0.1                    # share of the planned updates spent in linear warm-up
    patience: PositiveInt = 3              # epochs without a better validation accuracy before stopping
    max_length: PositiveInt = 256          # tokens per pair (longest-first truncation, counted in metrics)
    limit: PositiveInt | None = None       # the first N training examples (per task in multitask)
    eval_limit: PositiveInt | None = None  # the first N validation examples (each variant)
    max_steps: PositiveInt | None = None   # stop after N updates (smoke runs): evaluated once, at the end
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "float32"  # bf16/fp16: mixed precision
    save_models: Literal["all", "first", "none"] = "first"  # the best checkpoint of every seed, the first, none
    multitask: dict[str, list[str]] = {"Para": ["qqp", "mrpc"], "All": ["mnli", "qnli", "rte", "qqp", "mrpc"]}
    # group -> tasks trained beside the main task (MT-DNN: shared encoder, one head per task)

    def capped(self) -> dict:
        """The settings below the paper's (limit, max_steps, fewer epochs or seeds...): empty for a full run."""
        paper = CalumEvalParams()
        keys = ("lr", "weight_decay", "batch_size", "epochs", "warmup", "patience", "limit", "eval_limit",
                "max_steps")
        caps = {k: getattr(self, k) for k in keys if getattr(self, k) != getattr(paper, k)}
        return caps | ({"seeds": len(self.seeds)} if len(self.seeds) < len(paper.seeds) else {})


def task_folder(data: str | Path, task: str) -> Path:
    """``data`` is one task's dataset (``probes generate calum --task T``) or a folder of them (``<task>/``)."""
    data = Path(data)
    folder = data if (data / "meta.json").is_file() else data / task
    meta = read_meta(folder)
    if meta.get("task") != task:
        raise UsageError(f"--data {data}: {folder} holds {meta.get('task')!r}, not {task!r}")
    return folder


class TaskData:
    """One task's dataset folder: its labels and the variants of a split, read and checked."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.meta = read_meta(folder)
        self.task, self.labels = self.meta["task"], list(self.meta["labels"])
        self.variants = list(self.meta["counts"])

    def rows(self, variant: str, split: str, *, labelled: bool = False, limit: int | None = None) -> list[dict]:
        rows = read_pairs(self.folder, variant, split)[:limit]
        path = self.folder / variant / f"{split}.jsonl"
        for n, row in enumerate(rows, start=1):
            if row["label"] is None and labelled:
                raise DataError(f"{path}:{n}: no label, and {split} is trained or validated on "
                                f"(unlabelled splits can only be predicted)")
            if row["label"] is not None and row["label"] not in self.labels:
                raise DataError(f"{path}:{n}: label {row['label']!r} is not one of {self.labels} (meta.json)")
        if not rows:
            raise DataError(f"{path}: no rows")
        return rows


def encode(tokenizer, rows: Sequence[dict], labels: list[str], max_length: int, task_id: int | None = None):
    """A ``datasets.Dataset`` of the pairs as the model reads them (``sentence1``, ``sentence2``), with
    ``labels`` (ids; -100 where unlabelled), ``length`` and, for a multitask model, ``task_id``; and how many
    pairs were truncated to ``max_length``."""
    import datasets

    enc = tokenizer([r["sentence1"] for r in rows], [r["sentence2"] for r in rows], truncation="longest_first",
                    max_length=max_length)
    full = tokenizer([r["sentence1"] for r in rows], [r["sentence2"] for r in rows])["input_ids"]
    columns = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
    columns["labels"] = [-100 if r["label"] is None else labels.index(r["label"]) for r in rows]
    columns["length"] = [len(ids) for ids in enc["input_ids"]]
    if task_id is not None:
        columns["task_id"] = [task_id] * len(rows)
    return datasets.Dataset.from_dict(columns), sum(len(ids) > max_length for ids in full)


def _tokenizer(ref: ModelRef):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ref.location)
    if tokenizer.pad_token is None:   # GPT-2: pad with the end-of-text token (the model reads the last real one)
        if tokenizer.eos_token is None:
            raise UsageError(f"--model {ref.name}: its tokenizer has neither a padding nor an end-of-text token")
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_classifier(ref: ModelRef, tokenizer, labels: list[str], seed: int):
    """The checkpoint with a new classification head for ``labels``, drawn under ``seed`` (a head of another
    size in the checkpoint is replaced); it pads with ``tokenizer``'s padding token."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(ref.location, num_labels=len(labels), id2label=dict(enumerate(labels)),
                                        label2id={name: i for i, name in enumerate(labels)},
                                        pad_token_id=tokenizer.pad_token_id)
    transformers.set_seed(seed)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            ref.location, config=config, ignore_mismatched_sizes=True, dtype=torch.float32)
    except ValueError as exc:
        raise UsageError(f"--model {ref.name}: no sequence classifier for it ({exc})") from None
    return model


def load_multitask(ref: ModelRef, tasks: dict[str, list[str]], seed: int):
    """A ``MultitaskClassifier``: the checkpoint's encoder and one new head per task (in ``tasks``' order)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModel

    from evaluators.calum.multitask import MultitaskClassifier

    config = AutoConfig.from_pretrained(ref.location)
    if config.is_encoder_decoder:
        raise UsageError(f"--model {ref.name}: the multitask model shares an encoder or a decoder-only model; "
                         f"a {type(config).__name__} model is encoder-decoder")
    transformers.set_seed(seed)
    encoder = AutoModel.from_pretrained(ref.location, config=config, dtype=torch.float32)
    last = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.architectures or ())
    return MultitaskClassifier(encoder, tasks, pool_last=last)


def devices(device: str, dtype: str) -> int:
    """How many devices a Trainer run uses (call once per process): ``cuda:N`` pins GPU N by
    ``CUDA_VISIBLE_DEVICES``, set before CUDA starts; ``cuda`` takes every visible GPU (DataParallel; launch
    with ``torchrun`` for DDP)."""
    import torch

    if device == "cpu":
        if dtype == "float16":
            raise UsageError("--dtype float16: fp16 mixed precision needs a CUDA device (bfloat16 runs on CPU)")
        return 1
    if not device.startswith("cuda"):
        raise UsageError(f"--device {device}: fine-tuning runs on cpu, cuda or cuda:N")
    if ":" in device:
        index = int(device.split(":", 1)[1])
        if torch.cuda.is_initialized():
            raise UsageError(f"--device {device}: CUDA has started; set CUDA_VISIBLE_DEVICES={index} instead")
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = visible.split(",")[index] if visible else str(index)
    if not torch.cuda.is_available():
        raise UsageError(f"--device {device}: no CUDA device is available")
    return 1 if ":" in device else torch.cuda.device_count()


def arguments(cp: CalumEvalParams, workdir: Path, seed: int, n_train: int, device: str, n_devices: int):
    """The Trainer's arguments: the paper's optimisation, early-stopping bookkeeping, no reporting."""
    from transformers import TrainingArguments

    per_update = cp.device_batch_size * n_devices * int(os.environ.get("WORLD_SIZE", "1"))
    if cp.batch_size % per_update:
        raise UsageError(f"calum_eval.batch_size {cp.batch_size} is not a multiple of device_batch_size "
                         f"{cp.device_batch_size} x {per_update // cp.device_batch_size} device(s)")
    accumulation = cp.batch_size // per_update
    updates = cp.max_steps or cp.epochs * math.ceil(math.ceil(n_train / per_update) / accumulation)
    dtype = str(resolve_dtype(cp.dtype, device)).removeprefix("torch.")
    every = {"eval_strategy": "steps", "save_strategy": "steps", "eval_steps": cp.max_steps,
             "save_steps": cp.max_steps} if cp.max_steps else {"eval_strategy": "epoch", "save_strategy": "epoch"}
    return TrainingArguments(
        output_dir=str(workdir), seed=seed, data_seed=seed, learning_rate=cp.lr, weight_decay=cp.weight_decay,
        per_device_train_batch_size=cp.device_batch_size, per_device_eval_batch_size=2 * cp.device_batch_size,
        gradient_accumulation_steps=accumulation, num_train_epochs=cp.epochs, max_steps=cp.max_steps or -1,
        lr_scheduler_type="linear", warmup_steps=math.ceil(cp.warmup * updates), optim="adamw_torch",
        load_best_model_at_end=True, metric_for_best_model="accuracy", greater_is_better=True,
        save_total_limit=1, save_only_model=True, logging_strategy="steps", logging_steps=1,
        report_to="none", disable_tqdm=True, use_cpu=device == "cpu", bf16=dtype == "bfloat16",
        fp16=dtype == "float16", dataloader_num_workers=0, **every)


def _trainer_classes():
    from transformers import TrainerCallback

    class LossBar(TrainerCallback):
        """A progress bar over the updates with the running (exponentially averaged) loss and the last
        validation accuracy."""

        def __init__(self, desc: str, enabled: bool):
            self.desc, self.enabled, self.bar, self.postfix, self.loss = desc, enabled, None, {}, None

        def on_train_begin(self, args, state, control, **kw):
            from tqdm.auto import tqdm

            self.bar = tqdm(total=state.max_steps, desc=self.desc, unit="update", disable=not self.enabled,
                            leave=False)

        def on_step_end(self, args, state, control, **kw):
            self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                self.loss = logs["loss"] if self.loss is None else 0.9 * self.loss + 0.1 * logs["loss"]
                self.postfix["loss"] = f"{self.loss:.4f}"
            if logs and "eval_accuracy" in logs:
                self.postfix["val acc"] = f"{logs['eval_accuracy']:.3f}"
            self.bar.set_postfix(self.postfix, refresh=False)

        def on_train_end(self, args, state, control, **kw):
            self.bar.close()

    return LossBar


def _logits(output) -> np.ndarray:
    """The logits of a Trainer prediction (the first output when the model returns several)."""
    return np.asarray(output.predictions[0] if isinstance(output.predictions, tuple) else output.predictions)


def _accuracy(prediction) -> dict:
    return {"accuracy": float((_logits(prediction).argmax(-1) == prediction.label_ids).mean())}


def fine_tune(model, tokenizer, train, validation, cp: CalumEvalParams, args, desc: str, progress: bool):
    """Train with early stopping on validation accuracy (patience ``cp.patience`` evaluations); the Trainer
    restores the best checkpoint. Returns the Trainer (its ``state`` holds the log history)."""
    from transformers import DataCollatorWithPadding, EarlyStoppingCallback, PrinterCallback, Trainer

    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=validation,
                      data_collator=DataCollatorWithPadding(tokenizer), compute_metrics=_accuracy,
                      callbacks=[EarlyStoppingCallback(cp.patience), _trainer_classes()(desc, progress)])
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    return trainer


def predict(trainer, dataset) -> np.ndarray:
    """Predicted class ids in ``dataset`` order, run longest pair first."""
    order = np.argsort(-np.asarray(dataset["length"]), kind="stable")
    ids = np.empty(len(order), dtype=np.int64)
    ids[order] = _logits(trainer.predict(dataset.select(order))).argmax(-1)
    return ids


def history(trainer, seed: int) -> list[dict]:
    """The Trainer's log: loss per update and validation accuracy per evaluation (no timings)."""
    return [{"seed": seed, **{k: e[k] for k in HISTORY_KEYS if k in e}} for e in trainer.state.log_history
            if "loss" in e or "eval_accuracy" in e]


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
    _quiet()
    log.info("%s: %s", ref.name, "one new head per task (MT-DNN)" if group else "a new classification head")
    tokenizer = _tokenizer(ref)
    ids = {t: k for k, t in enumerate(tasks)} if group else {task: None}   # the multitask heads, in tasks' order
    encoded = {t: encode(tokenizer, train_rows[t], sets[t].labels, cp.max_length, ids[t]) for t in tasks}
    train = _concatenate([e for e, _ in encoded.values()])
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
                per_seed[t].append({"seed": seed, **calum_metrics.consistency(rows), **_progress(trainer)})
            if cp.save_models == "all" or (cp.save_models == "first" and k == 0):
                _save(trainer, tokenizer, tmp / "model" / (f"seed-{seed}" if cp.save_models == "all" else ""),
                      {t: d.labels for t, d in sets.items()} if group else None)
            record = {"truncated": dict(sorted(truncated.items())), **_provenance(model, args)}
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


def _quiet() -> None:
    """transformers' load reports and bars say the head is new, which is the protocol here (logged once)."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


def _concatenate(parts):
    import datasets

    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)


def _progress(trainer) -> dict:
    """Where training stopped and which evaluation was best."""
    state = trainer.state
    evals = [e for e in state.log_history if "eval_accuracy" in e]
    best = max(range(len(evals)), key=lambda i: (evals[i]["eval_accuracy"], -i)) if evals else None
    return {"steps": state.global_step, "epochs": round(state.epoch or 0, 3),
            "best_epoch": None if best is None else round(evals[best]["epoch"], 3),
            "best_val_accuracy": None if best is None else evals[best]["eval_accuracy"]}


def _summary(per_seed: list[dict], originals: list[dict]) -> dict:
    """Mean ± std over seeds of accuracy, C_R, C_S (C_sym), the majority class's share, and each seed's."""
    gold = Counter(r["label"] for r in originals)
    return {**calum_metrics.over_seeds(per_seed), "majority": max(gold.values()) / len(originals),
            "per_seed": per_seed}


def _provenance(model, args) -> dict:
    import torch
    import transformers

    from probekit import __version__

    config = getattr(model, "config", None) or model.encoder.config
    precision = "bfloat16" if args.bf16 else "float16" if args.fp16 else "float32"
    return {"dtype": precision, "model_revision": getattr(config, "_commit_hash", None),
            "versions": {"probekit": __version__, "torch": torch.__version__,
                         "transformers": transformers.__version__}}


def _save(trainer, tokenizer, folder: Path, tasks: dict[str, list[str]] | None) -> None:
    """The best checkpoint (restored) as a model folder: ``from_pretrained``-ready for a single task; for a
    multitask model its state dict (``model.safetensors``) with ``tasks.json`` (tasks and labels, head order)."""
    model = trainer.model
    if tasks is None:
        model.save_pretrained(folder)
    else:
        from safetensors.torch import save_model

        folder.mkdir(parents=True, exist_ok=True)
        save_model(model, str(folder / "model.safetensors"), metadata={"format": "pt"})
        atomic.write_json(folder / "tasks.json", [{"task": t, "labels": labels} for t, labels in tasks.items()])
    tokenizer.save_pretrained(folder)
