"""The ESIM baseline of MC-QA (oLMpics §2.3): the stem is the premise, a choice the hypothesis, one logit per
pair, softmax over the example's choices; trained by the original's trainer (params ``mcqa.esim_training``) or the
LM runs' loop (``mcqa.esim_trainer: slanted_triangular``).

Its embeddings (params ``mcqa.esim_embeddings``): ``glove``, as the paper ("We use the ESIM architecture over GLOVE
representations"), each text read as ``mcqa.glove_tokens`` says (``glove.py``; ``original``: a ``[MASK]`` in a
stem is text, as the original ESIM reader leaves it); or ``random``, the original config as released (its
``pretrained_file`` line is commented out: ``config/esim_baseline.jsonnet`` line 37): 50-d Xavier-uniform vectors
of the run's own vocabulary, every token its own row. Trainable unless ``mcqa.esim_trainable_embeddings: false``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from evaluators.engine.collator import Device
from evaluators.olmpics.esim import ESIM
from evaluators.olmpics.glove import Lexicon
from evaluators.olmpics.mcqa_inputs import Encoded, pair_texts
from probekit import __version__
from probekit.errors import UsageError
from probekit.sources.vectors import load_glove

EVAL_BATCH = 256
"""Pairs per inference batch (ESIM's logit does not depend on padding, so batching changes no score)."""
EMBEDDINGS = ("glove", "random")
RANDOM_DIM = 50
"""The original config's ``embedding_dim``."""


class EsimBackend:
    """ESIM runs: every run draws a new ESIM under its seed over the embedding matrix of every text encoded."""

    def __init__(self, glove: str, device: str, *, tokens: str = "original", embeddings: str = "glove",
                 trainable: bool = True):
        if embeddings not in EMBEDDINGS:
            raise UsageError(f"mcqa.esim_embeddings must be one of {', '.join(EMBEDDINGS)}, got {embeddings!r}")
        self.source = glove if embeddings == "glove" else None
        self.lexicon = Lexicon(load_glove(glove) if embeddings == "glove" else None, tokens, mask=None)
        self.embeddings, self.trainable = embeddings, trainable
        self.device = torch.device(device)
        self.to_device = Device(self.device)

    def record(self) -> dict:
        return {"model": "ESIM", "model_id": "ESIM", "baseline": "ESIM", "lm_head": None, "glove": self.source,
                "glove_tokens": self.lexicon.reading, "embeddings": self.embeddings,
                "trainable_embeddings": self.trainable, "dtype": "float32",
                "versions": {"probekit": __version__, "torch": torch.__version__}}

    def encode(self, rows: Sequence[dict]) -> Encoded:
        stems, choices, starts, gold = pair_texts(rows)
        return Encoded(starts, gold, (*self.lexicon.encode(stems), *self.lexicon.encode(choices)))

    def matrix(self) -> np.ndarray:
        """The initial embeddings: GloVe's (``Lexicon.matrix``), or under ``random`` AllenNLP's Xavier-uniform draw
        (its vocabulary: the tokens, padding and unknown), padding zero; call after ``torch.manual_seed``."""
        if self.embeddings == "glove":
            return self.lexicon.matrix()
        n = len(self.lexicon.ids) + 1
        bound = math.sqrt(6 / (n + 1 + RANDOM_DIM))
        out = torch.empty(n, RANDOM_DIM).uniform_(-bound, bound).numpy()
        out[0] = 0
        return out

    def fresh(self, seed: int) -> ESIM:
        torch.manual_seed(seed)
        return ESIM(self.matrix(), freeze_embeddings=not self.trainable).to(self.device)

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
