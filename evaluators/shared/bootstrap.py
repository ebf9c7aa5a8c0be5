"""Bootstrap confidence intervals over dev examples, for any accuracy-like statistic, resampling the unit the data
repeats (a cluster bootstrap).

A row of a dev set is not always an independent draw: ParaRel asks every tuple under every pattern, an oLMpics
fact appears in its controls and, in a release file, more than once, a CALUM pair in three variants. Rows of one
unit share their fate (a model that knows the fact gets all of its rows right), so resampling rows treats ten
copies of one outcome as ten pieces of evidence, and the interval is too narrow by up to the square root of the
rows per unit. Every interval here resamples **units** with replacement and takes all rows of a drawn unit
together (the cluster bootstrap; Miller 2024, "Adding Error Bars to Evals", arXiv:2411.00640, on clustered
questions; Inspect's ``stderr(cluster=...)``, https://inspect.aisi.org.uk/metrics.html); a paired statistic resamples the unit on both sides together. The
caller names the unit: ``units``, one key per row (:func:`unit_codes`); ``None`` is the row bootstrap, each row its
own unit, right only where the rows are independent.

A statistic is vectorised: it receives an int array ``weights`` of shape ``[R, n]`` (how often resample r drew
example i: the rows of a unit drawn twice count twice) and returns ``R`` values; :func:`weighted_means` is the
mean it averages with. The point estimate is the statistic on ``np.ones((1, n))``. A resample draws the ``k``
units as ``np.random.default_rng(seed).integers(0, k, size=(resamples, k))``, with units numbered by first
appearance, so results are reproducible, and where every row is its own unit (``k = n``) the draw is the row
bootstrap's, number for number: data with no repeated unit keeps its intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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


def unit_codes(keys: Sequence | None, n: int | None = None) -> np.ndarray:
    """Each row's unit as an int, numbered by first appearance (rows with equal keys are one unit): the form the
    resampling takes. ``keys`` None is the row bootstrap's units, ``arange(n)``."""
    if keys is None:
        if n is None:
            raise ValueError("unit_codes needs keys or n")
        return np.arange(n)
    keys = list(keys)
    if n is not None and len(keys) != n:
        raise ValueError(f"one unit per row: {len(keys)} units for {n} rows")
    first: dict = {}
    return np.fromiter((first.setdefault(k, len(first)) for k in keys), np.int64, len(keys))


def resample_indices(n: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``[resamples, n]`` example indices drawn with replacement, deterministic for ``seed``: the row bootstrap's
    draw (:func:`resample_weights` with every row its own unit counts these)."""
    if n < 1 or resamples < 1:
        raise ValueError(f"bootstrap needs n >= 1 and resamples >= 1, got n={n}, resamples={resamples}")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _counts(idx: np.ndarray, k: int) -> np.ndarray:
    """``[R, k]``: how often each of ``k`` values occurs in each row of ``idx``."""
    r = len(idx)
    return np.bincount((idx + k * np.arange(r)[:, None]).ravel(), minlength=r * k).reshape(r, k)


def resample_weights(n: int, resamples: int = 1000, seed: int = 0, units: Sequence | None = None) -> np.ndarray:
    """``[resamples, n]`` int weights: how often each row is drawn when ``resamples`` times the units are drawn
    with replacement (as many draws as there are units), every row of a drawn unit with it. ``units``: one key per
    row (:func:`unit_codes`), None for each row its own unit; then, and whenever every key differs, the weights
    count :func:`resample_indices` (the same stream, the same numbers)."""
    codes = unit_codes(units, n)
    k = int(codes.max()) + 1 if len(codes) else 0   # k = 0 (no row) is refused by resample_indices
    return _counts(resample_indices(k, resamples, seed), k)[:, codes]


def weighted_means(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean over the last axis of ``values`` (``[..., n]``) for each row of ``weights`` (``[R, n]``,
    a resample's draw counts): ``[R, ...]``. One matrix product, not a gather of every resample's rows."""
    values = np.asarray(values, float)
    r, n = weights.shape
    return (weights @ values.reshape(-1, n).T / weights.sum(axis=1)[:, None]).reshape(r, *values.shape[:-1])


def resample_means(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The mean over the last axis of ``values`` (``[..., n]``) on each resample of indices ``idx`` (``[R, n]``):
    ``[R, ...]``, through the draw counts (:func:`weighted_means`)."""
    return weighted_means(values, _counts(idx, idx.shape[1]))


def streamed_means(values: np.ndarray, resamples: int = 1000, seed: int = 0, *, chunk: int = 4_000_000,
                   units: Sequence | None = None) -> np.ndarray:
    """``weighted_means(values, resample_weights(n, resamples, seed, units))`` (``[R, ...]``, the same numbers)
    drawn and reduced a few resamples at a time, so memory stays near ``chunk`` weights however large ``n`` is: a
    :class:`numpy.random.Generator` draws the same stream in pieces as at once."""
    values = np.asarray(values, float)
    n = values.shape[-1]
    if n < 1 or resamples < 1:
        raise ValueError(f"bootstrap needs n >= 1 and resamples >= 1, got n={n}, resamples={resamples}")
    codes = unit_codes(units, n)
    k = int(codes.max()) + 1
    rng, step, parts = np.random.default_rng(seed), max(1, chunk // n), []
    for start in range(0, resamples, step):
        drawn = _counts(rng.integers(0, k, size=(min(step, resamples - start), k)), k)
        parts.append(weighted_means(values, drawn[:, codes]))
    return np.concatenate(parts)


def accuracy_statistic(correct: np.ndarray) -> Statistic:
    """A statistic giving the mean accuracy of ``correct`` (bool ``[..., n]``, averaged over the leading axes)."""
    correct = np.asarray(correct, bool)
    return lambda weights: weighted_means(correct, weights).reshape(len(weights), -1).mean(axis=1)


def _evaluate(statistic: Statistic, weights: np.ndarray) -> np.ndarray:
    values = np.asarray(statistic(weights), float)
    if values.shape != (len(weights),):
        raise ValueError(f"a statistic must return one value per resample, shape ({len(weights)},), "
                         f"got {values.shape}")
    return values


def _bounds(values: np.ndarray, level: float) -> tuple[float, float]:
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def bootstrap(statistic: Statistic, n: int, *, resamples: int = 1000, seed: int = 0, level: float = 0.95,
              units: Sequence | None = None) -> dict:
    """``{estimate, low, high}``: the statistic on all ``n`` examples and its percentile interval, resampling
    ``units`` (one key per example; None: each example its own unit)."""
    weights = resample_weights(n, resamples, seed, units)
    low, high = _bounds(_evaluate(statistic, weights), level)
    estimate = float(_evaluate(statistic, np.ones((1, n), np.int64))[0])
    return {"estimate": estimate, "low": low, "high": high}


def paired_bootstrap(statistic_a: Statistic, statistic_b: Statistic, n: int, *, resamples: int = 1000,
                     seed: int = 0, level: float = 0.95, units: Sequence | None = None) -> dict:
    """``{diff, low, high, p_value, holds}`` for A − B, both statistics on the SAME resampled examples: a drawn
    unit (``units``, as :func:`bootstrap`'s) counts on both sides together.

    ``p_value`` is two-sided: 2 × the smaller share of resampled differences ≤ 0 or ≥ 0, capped at 1 (its
    resolution is 2 / resamples); ``holds`` is whether the interval excludes 0."""
    weights = resample_weights(n, resamples, seed, units)
    diffs = _evaluate(statistic_a, weights) - _evaluate(statistic_b, weights)
    low, high = _bounds(diffs, level)
    everything = np.ones((1, n), np.int64)
    diff = float(_evaluate(statistic_a, everything)[0] - _evaluate(statistic_b, everything)[0])
    p_value = min(1.0, 2 * min(float(np.mean(diffs <= 0)), float(np.mean(diffs >= 0))))
    return {"diff": diff, "low": low, "high": high, "p_value": p_value, "holds": bool(low > 0 or high < 0)}
