"""The ESIM baseline of MC-QA (oLMpics §2.2): the stem is the premise, a choice the hypothesis, one logit per
pair over frozen GloVe vectors, softmax over the example's choices; trained by the same curve as the encoders.

A ``[MASK]`` in a stem stays one position with the zero (out-of-vocabulary) vector (``glove.py``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from evaluators.engine.collator import Device
from evaluators.olmpics.esim import ESIM
from evaluators.olmpics.glove import embedding_matrix, encode_tokens
from evaluators.olmpics.mcqa_inputs import Encoded, pair_texts
from probekit import __version__
from probekit.sources.vectors import load_glove

EVAL_BATCH = 256
"""Pairs per inference batch (ESIM's logit does not depend on padding, so batching changes no score)."""


class EsimBackend:
    """ESIM runs: every run draws a new ESIM under its seed over the same (frozen) embedding matrix."""

    def __init__(self, glove: str, device: str):
        self.glove = load_glove(glove)
        self.embeddings = embedding_matrix(self.glove)
        self.device = torch.device(device)
        self.to_device = Device(self.device)

    def record(self) -> dict:
        return {"model": "ESIM", "model_id": "ESIM", "baseline": "ESIM", "lm_head": None, "glove": self.glove.source,
                "dtype": "float32", "versions": {"probekit": __version__, "torch": torch.__version__}}

    def encode(self, rows: Sequence[dict]) -> Encoded:
        stems, choices, starts, gold = pair_texts(rows)
        return Encoded(starts, gold, (*encode_tokens(self.glove, stems), *encode_tokens(self.glove, choices)))

    def fresh(self, seed: int) -> ESIM:
        torch.manual_seed(seed)
        return ESIM(self.embeddings).to(self.device)

    def logits(self, model: ESIM, enc: Encoded, pairs: np.ndarray) -> torch.Tensor:
        inputs = []
        for ids, mask in (enc.pairs[:2], enc.pairs[2:]):
            width = int(mask[pairs].sum(1).max())
            inputs += [self.to_device(ids[pairs, :width]), self.to_device(mask[pairs, :width])]
        return model(*inputs)

    @torch.inference_mode()
    def evaluate(self, model: ESIM, enc: Encoded) -> np.ndarray:
        n = len(enc.pairs[0])
        batches = [np.arange(i, min(i + EVAL_BATCH, n)) for i in range(0, n, EVAL_BATCH)]
        return torch.cat([self.logits(model, enc, b) for b in batches]).cpu().numpy()
