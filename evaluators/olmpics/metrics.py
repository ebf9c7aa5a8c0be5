"""oLMpics' learning-curve statistics (§3.2): WS, MAX and language sensitivity of the seed-averaged curve.

The paper's learning curve is the mean over seeds at each N: "To account for optimization instabilities, we
fine-tune several times with different seeds, and report average accuracy across seeds." Every statistic here is
a statistic of that curve (seeds averaged first, then the statistic), never a mean of per-seed statistics: for a
nonlinear step (MAX, the max(0, ·) of the sensitivity) the two differ, and the mean of per-seed maxima is biased
upward by seed noise. Their uncertainty is the report's bootstrap over dev examples, which recomputes the whole
statistic on each resample (:mod:`evaluators.olmpics.results`), not a std over per-seed values.

Arrays are ``[..., seeds, sizes]`` (a curve: ``[..., sizes]``, smallest N first); the leading axes (the report's
bootstrap resamples) pass through, so the report and ``metrics.json`` apply one definition.

The quotes are the paper's English: the stored copy (``papers/001``) is a machine translation into Spanish that
left these sentences mostly in English ("MAX, eso es, the maximal accuracy ...", "identical to WS, excepto
that ..."); the quotes put the few translated words back."""

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


def seed_mean(accuracy) -> np.ndarray:
    """The learning curve of per-seed accuracies ``[..., seeds, sizes]``: the mean over seeds, ``[..., sizes]``
    ("report average accuracy across seeds")."""
    return np.asarray(accuracy, float).mean(axis=-2)


def weighted_score(curve):
    """WS of a curve ``[..., sizes]``: "a weighted average of accuracies across the learning curve, where higher
    weights are given to points where N is small". Linear, so the WS of the seed-averaged curve equals the mean
    of the per-seed WS."""
    curve = np.asarray(curve, float)
    return curve @ ws_weights(curve.shape[-1])


def max_score(curve):
    """MAX of a curve ``[..., sizes]``: "the maximal accuracy on the learning curve"."""
    return np.asarray(curve, float).max(axis=-1)


def sensitivity(full, control):
    """Language sensitivity of two aligned curves ``[..., sizes]``: "the metric we use is identical to WS, except
    that instead of averaging accuracies, we average the difference in accuracies between the standard model and
    NO LANG. (rounding negative numbers to zero)" — the WS formula over max(0, acc(full) − acc(control))."""
    return weighted_score(np.maximum(0.0, np.asarray(full, float) - np.asarray(control, float)))


def curve_ws(accuracy):
    """WS of the seed-averaged curve of ``[..., seeds, sizes]`` (= the mean of the per-seed WS)."""
    return weighted_score(seed_mean(accuracy))


def curve_max(accuracy):
    """MAX of the seed-averaged curve of ``[..., seeds, sizes]``: the maximum over N of the mean over seeds."""
    return max_score(seed_mean(accuracy))


def curve_sensitivity(full, control):
    """Language sensitivity of the seed-averaged curves of aligned ``[..., seeds, sizes]`` arrays: max(0, ·) on
    the difference of the seed averages. The paper does not say in which order max(0, ·) and the seed average
    come; it rounds "the difference in accuracies" to zero, and the accuracies it reports are averages across
    seeds (its example: "For ROBERTA-L the value is 51, because ROBERTA-L gets almost 100% acc. in the presence
    of language, and is random (50% acc.) without language"), so we average seeds first. max(0, ·) is convex:
    this is at most the mean of per-seed sensitivities, where seed noise of either sign would count as a gap."""
    return sensitivity(seed_mean(full), seed_mean(control))


def summary(per_seed: Sequence[float]) -> dict:
    """``{mean, std, per_seed}`` of one curve point's accuracies over seeds (std with ddof 1; 0 for one seed)."""
    values = np.asarray(per_seed, float)
    return {"mean": float(values.mean()), "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
            "per_seed": values.tolist()}


def ws_summary(accuracy) -> dict:
    """metrics.json's ``WS`` of ``[seeds, sizes]``: ``value`` (the WS of the seed-averaged curve), ``std`` (ddof 1)
    and ``per_seed``, the WS of each seed's curve: WS is linear, so ``value`` is their mean and ``std`` their
    seed-to-seed spread."""
    per_seed = weighted_score(accuracy)
    return {"value": float(curve_ws(accuracy)), "std": summary(per_seed)["std"], "per_seed": per_seed.tolist()}


def max_summary(accuracy, sizes: Sequence[int]) -> dict:
    """metrics.json's ``MAX`` of ``[seeds, sizes]``: ``value`` (the maximum of the seed-averaged curve), ``at_n``
    (the N where it is reached, the smallest on a tie) and ``per_seed``, each seed's own maximum, kept as
    information: ``value`` is not their mean (that mean is biased upward by seed noise), and no std over them is
    its uncertainty (the report's bootstrap interval is)."""
    curve = seed_mean(accuracy)
    return {"value": float(max_score(curve)), "at_n": int(sizes[int(np.argmax(curve))]),
            "per_seed": max_score(accuracy).tolist()}


def sensitivity_summary(full, control) -> dict:
    """metrics.json's language sensitivity of aligned ``[seeds, sizes]`` arrays: ``value`` (of the seed-averaged
    curves, :func:`curve_sensitivity`) and ``per_seed``, each seed's own, kept as information (not averaged)."""
    return {"value": float(curve_sensitivity(full, control)), "per_seed": sensitivity(full, control).tolist()}
