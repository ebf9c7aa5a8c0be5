"""The settings of CALUM fine-tuning (papers/004 §4.3 and §6): ``CalumEvalParams``, the params file's
``calum_eval`` section, whose defaults are the paper's (five seeds, AdamW lr 1e-5, batch 64, ten epochs with
early stopping) and the multitask groups; ``capped`` names the settings a run keeps below the paper's."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt


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
