"""The evaluators' params sections, typed (pydantic only: parsed before any model is loaded)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, PositiveInt


class Rules(BaseModel):
    """The scoring rule per model family (``--rule`` overrides it for one run)."""

    model_config = ConfigDict(extra="forbid")

    mlm: Literal["mask-logit", "pll"] = "mask-logit"
    causal: Literal["statement", "choice"] = "statement"
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
