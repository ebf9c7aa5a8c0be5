"""oLMpics' learning-curve statistics (§3.2): WS, MAX and language sensitivity, per seed and over seeds."""

from __future__ import annotations

from typing import Sequence

import numpy as np

WS_WEIGHTS = (0.23, 0.2, 0.17, 0.14, 0.11, 0.08, 0.07)
"""The paper's decreasing weights, smallest N first (they sum to 1)."""


def ws_weights(n_points: int) -> np.ndarray:
    """The weights of a curve of ``n_points`` sizes: the paper's first ``n_points``, renormalised to sum 1
    (a capped curve keeps the emphasis on small N)."""
    if not 1 <= n_points <= len(WS_WEIGHTS):
        raise ValueError(f"WS is defined for 1 to {len(WS_WEIGHTS)} curve points, got {n_points}")
    weights = np.asarray(WS_WEIGHTS[:n_points])
    return weights / weights.sum()


def weighted_score(accuracies: Sequence[float]) -> float:
    """WS: the weighted mean of a curve's accuracies, smallest N first."""
    return float(np.dot(ws_weights(len(accuracies)), accuracies))


def max_score(accuracies: Sequence[float]) -> float:
    """MAX: the best point of the curve."""
    return float(np.max(accuracies))


def sensitivity(full: Sequence[float], control: Sequence[float]) -> float:
    """Language sensitivity: the WS formula over max(0, acc(full) − acc(control)) along the curve."""
    return weighted_score(np.maximum(0.0, np.asarray(full) - np.asarray(control)))


def summary(per_seed: Sequence[float]) -> dict:
    """``{mean, std, per_seed}`` of a statistic over seeds (std with ddof 1; 0 for one seed)."""
    values = np.asarray(per_seed, float)
    return {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
            "per_seed": values.tolist()}
