"""Bootstrap confidence intervals over dev examples, for any accuracy-like statistic.

A statistic is vectorised: it receives an int array ``idx`` of shape ``[R, n]`` (row r = the example indices of
resample r) and returns ``R`` values. The point estimate is the statistic on ``np.arange(n)[None]``. Resamples are
drawn as ``np.random.default_rng(seed).integers(0, n, size=(resamples, n))``, so results are reproducible."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Statistic = Callable[[np.ndarray], np.ndarray]

MAX_INTERVAL = (
    "Intervals of a maximum (MAX, and a sensitivity, which floors each point at 0): the bootstrap recomputes the "
    "maximum over N on every resample, and each resample's maximum is at least its own value at the N that won on "
    "all examples, often higher, because another N may win on that resample. So the resampled maxima sit at or "
    "above the value: the percentile interval is not centred on it, and with a flat curve (several N about equally "
    "good) or a value at a bound (a sensitivity of 0, an accuracy of 1) its lower bound equals the value. That is "
    "how far the maximum could rise or fall with other dev examples, not a sign that the value is exact. Compare "
    "models by WS, a weighted mean with no such bias; the medals do.")
"""What a percentile bootstrap interval of a maximum means: the footnote of every table that prints one."""


def resample_indices(n: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``[resamples, n]`` example indices drawn with replacement, deterministic for ``seed``."""
    if n < 1 or resamples < 1:
        raise ValueError(f"bootstrap needs n >= 1 and resamples >= 1, got n={n}, resamples={resamples}")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def resample_means(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The mean over the last axis of ``values`` (``[..., n]``) on each resample: ``[R, ...]``.

    Counts how often each example is drawn and takes one matrix product, instead of gathering ``R × n`` values
    per leading row."""
    values = np.asarray(values, float)
    r, n = idx.shape
    counts = np.bincount((idx + n * np.arange(r)[:, None]).ravel(), minlength=r * n).reshape(r, n)
    return (counts @ values.reshape(-1, n).T / n).reshape(r, *values.shape[:-1])


def streamed_means(values: np.ndarray, resamples: int = 1000, seed: int = 0, *, chunk: int = 4_000_000
                   ) -> np.ndarray:
    """``resample_means(values, resample_indices(n, resamples, seed))`` (``[R, ...]``, the same numbers) drawn and
    reduced a few resamples at a time, so memory stays near ``chunk`` indices however large ``n`` is: a
    :class:`numpy.random.Generator` draws the same stream in pieces as at once."""
    values = np.asarray(values, float)
    n = values.shape[-1]
    if n < 1 or resamples < 1:
        raise ValueError(f"bootstrap needs n >= 1 and resamples >= 1, got n={n}, resamples={resamples}")
    rng, step, parts = np.random.default_rng(seed), max(1, chunk // n), []
    for start in range(0, resamples, step):
        idx = rng.integers(0, n, size=(min(step, resamples - start), n))
        parts.append(resample_means(values, idx))
    return np.concatenate(parts)


def accuracy_statistic(correct: np.ndarray) -> Statistic:
    """A statistic giving the mean accuracy of ``correct`` (bool ``[..., n]``, averaged over the leading axes)."""
    correct = np.asarray(correct, bool)
    return lambda idx: resample_means(correct, idx).reshape(len(idx), -1).mean(axis=1)


def _evaluate(statistic: Statistic, idx: np.ndarray) -> np.ndarray:
    values = np.asarray(statistic(idx), float)
    if values.shape != (len(idx),):
        raise ValueError(f"a statistic must return one value per resample, shape ({len(idx)},), got {values.shape}")
    return values


def _bounds(values: np.ndarray, level: float) -> tuple[float, float]:
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bootstrap(statistic: Statistic, n: int, *, resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """``{estimate, low, high}``: the statistic on all ``n`` examples and its percentile interval."""
    idx = resample_indices(n, resamples, seed)
    low, high = _bounds(_evaluate(statistic, idx), level)
    estimate = float(_evaluate(statistic, np.arange(n)[None])[0])
    return {"estimate": estimate, "low": low, "high": high}


def paired_bootstrap(statistic_a: Statistic, statistic_b: Statistic, n: int, *, resamples: int = 1000,
                     seed: int = 0, level: float = 0.95) -> dict:
    """``{diff, low, high, p_value, holds}`` for A − B, both statistics on the SAME resampled examples.

    ``p_value`` is two-sided: 2 × the smaller share of resampled differences ≤ 0 or ≥ 0, capped at 1 (its
    resolution is 2 / resamples); ``holds`` is whether the interval excludes 0."""
    idx = resample_indices(n, resamples, seed)
    diffs = _evaluate(statistic_a, idx) - _evaluate(statistic_b, idx)
    low, high = _bounds(diffs, level)
    everything = np.arange(n)[None]
    diff = float(_evaluate(statistic_a, everything)[0] - _evaluate(statistic_b, everything)[0])
    p_value = min(1.0, 2 * min(float(np.mean(diffs <= 0)), float(np.mean(diffs >= 0))))
    return {"diff": diff, "low": low, "high": high, "p_value": p_value, "holds": bool(low > 0 or high < 0)}
