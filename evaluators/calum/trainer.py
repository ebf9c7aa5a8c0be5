"""CALUM's runs of the transformers ``Trainer`` (papers/004 §4.3): the devices and the Trainer's arguments (the
paper's optimisation: AdamW, linear schedule with warm-up, gradient accumulation, mixed precision), training
with early stopping on validation accuracy and a progress bar, length-sorted predictions, and what a run
records of its training: the log history, where it stopped, its provenance and the checkpoint it evaluated, saved."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from evaluators.calum.params import CalumEvalParams
from evaluators.engine.models import provenance as model_provenance
from evaluators.engine.models import resolve_dtype
from probekit.outputs import atomic
from probekit.errors import UsageError

HISTORY_KEYS = ("step", "epoch", "loss", "grad_norm", "learning_rate", "eval_loss", "eval_accuracy")


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
    best = cp.checkpoint == "best"   # else the last checkpoint: nothing to save during training, nothing restored
    every = {"eval_strategy": "steps", "eval_steps": cp.max_steps} if cp.max_steps else {"eval_strategy": "epoch"}
    every |= ({"save_strategy": every["eval_strategy"]} | ({"save_steps": cp.max_steps} if cp.max_steps else {})
              if best else {"save_strategy": "no"})
    return TrainingArguments(
        output_dir=str(workdir), seed=seed, data_seed=seed, learning_rate=cp.lr, weight_decay=cp.weight_decay,
        per_device_train_batch_size=cp.device_batch_size, per_device_eval_batch_size=2 * cp.device_batch_size,
        gradient_accumulation_steps=accumulation, num_train_epochs=cp.epochs, max_steps=cp.max_steps or -1,
        lr_scheduler_type="linear", warmup_steps=math.ceil(cp.warmup * updates), optim="adamw_torch",
        max_grad_norm=cp.max_grad_norm or 0.0,   # 0: the Trainer clips nothing
        load_best_model_at_end=best, metric_for_best_model="accuracy", greater_is_better=True,
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


def _patience_stop(patience: int):
    """A callback that stops training after ``patience`` evaluations without a better validation accuracy and
    leaves the model as the last epoch left it: Lightning's ``EarlyStopping(monitor="val_accuracy", mode="max",
    patience=3)`` of the original code (strictly better counts, as there and in ``EarlyStoppingCallback``, which
    would also require restoring the best checkpoint)."""
    from transformers import TrainerCallback

    class PatienceStop(TrainerCallback):
        def __init__(self):
            self.best, self.waited = None, 0

        def on_evaluate(self, args, state, control, metrics=None, **kw):
            accuracy = (metrics or {}).get("eval_accuracy")
            if accuracy is None:
                return
            if self.best is None or accuracy > self.best:
                self.best, self.waited = accuracy, 0
            else:
                self.waited += 1
                if self.waited >= patience:
                    control.should_training_stop = True

    return PatienceStop()


def fine_tune(model, tokenizer, train, validation, cp: CalumEvalParams, args, desc: str, progress: bool):
    """Train with early stopping on validation accuracy (patience ``cp.patience`` evaluations), then keep the
    checkpoint ``cp.checkpoint`` names: the last (the original code's) or the best, which the Trainer restores.
    Returns the Trainer (its ``state`` holds the log history)."""
    from transformers import DataCollatorWithPadding, EarlyStoppingCallback, PrinterCallback, Trainer

    stop = EarlyStoppingCallback(cp.patience) if cp.checkpoint == "best" else _patience_stop(cp.patience)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=validation,
                      data_collator=DataCollatorWithPadding(tokenizer), compute_metrics=_accuracy,
                      callbacks=[stop, _trainer_classes()(desc, progress)])
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    return trainer


def predictor(model, tokenizer, args, validation):
    """A Trainer that only predicts (a checkpoint evaluated as it is: T5 text-to-text, as the paper)."""
    from transformers import DataCollatorWithPadding, Trainer

    return Trainer(model=model, args=args, eval_dataset=validation, data_collator=DataCollatorWithPadding(tokenizer),
                   compute_metrics=_accuracy)


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


def stopping_point(trainer) -> dict:
    """Where training stopped, which evaluation was best and which epoch's model was evaluated."""
    state = trainer.state
    evals = [e for e in state.log_history if "eval_accuracy" in e]
    best = max(range(len(evals)), key=lambda i: (evals[i]["eval_accuracy"], -i)) if evals else None
    best_epoch = None if best is None else round(evals[best]["epoch"], 3)
    return {"steps": state.global_step, "epochs": round(state.epoch or 0, 3), "best_epoch": best_epoch,
            "best_val_accuracy": None if best is None else evals[best]["eval_accuracy"],
            "evaluated_epoch": best_epoch if trainer.args.load_best_model_at_end else round(state.epoch or 0, 3)}


def provenance(model, args, revision: str | None = None, device: str | None = None) -> dict:
    """The model's provenance (``models.provenance``) with the precision the Trainer ran in, the revision the
    params pinned and the device, without the attention implementation (not recorded in CALUM's metrics.json)."""
    config = getattr(model, "config", None) or model.encoder.config
    precision = "bfloat16" if args.bf16 else "float16" if args.fp16 else "float32"
    return model_provenance(config, precision, attn_implementation=False, revision=revision, device=device)


def save_checkpoint(trainer, tokenizer, folder: Path, tasks: dict[str, list[str]] | None) -> None:
    """The evaluated checkpoint (the last, or the best restored) as a model folder: ``from_pretrained``-ready for a
    single task; for a multitask model its state dict (``model.safetensors``) with ``tasks.json`` (tasks and labels,
    head order)."""
    model = trainer.model
    if tasks is None:   # a classifier, or the seq2seq LM inside a text-to-text LabelWordModel
        (model if hasattr(model, "save_pretrained") else model.model).save_pretrained(folder)
    else:
        from safetensors.torch import save_model

        folder.mkdir(parents=True, exist_ok=True)
        save_model(model, str(folder / "model.safetensors"), metadata={"format": "pt"})
        atomic.write_json(folder / "tasks.json", [{"task": t, "labels": labels} for t, labels in tasks.items()])
    tokenizer.save_pretrained(folder)
