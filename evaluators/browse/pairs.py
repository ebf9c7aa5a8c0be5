"""Two runs compared on a shard's examples, for every pair of runs at once, with the project's statistics:

- the right/wrong crosstab;
- McNemar's exact test (as :func:`evaluators.shared.flips.compare`): under no difference a discordant example is as
  likely A-right-B-wrong as the reverse, so ``b`` of the ``b + c`` discordant ones is Binomial(b + c, 1/2),
  two-sided;
- the accuracy difference A − B with its 95% paired bootstrap interval, both accuracies on the same resampled
  examples: the numbers :func:`evaluators.shared.bootstrap.paired_bootstrap` gives for the pair (same resamples,
  same seed), computed for all pairs from one matrix product.

An example that either run left unanswered is left out of the pair; runs that answered the same examples are
computed together; a pair whose runs did not is computed on its own, with :func:`paired_bootstrap` on the examples both answered."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from evaluators.shared.bootstrap import accuracy_statistic, paired_bootstrap, streamed_means

FIELDS = ("n_both_right", "n_a_right_b_wrong", "n_a_wrong_b_right", "n_both_wrong", "diff", "low", "high", "p")
LEVEL = 0.95


def mcnemar_p(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """McNemar's exact two-sided p for discordant counts ``b`` and ``c`` (arrays): ``min(1, 2 P[X <= min(b, c)])``,
    X ~ Binomial(b + c, 1/2), which is :func:`scipy.stats.binomtest`'s two-sided p at 1/2; 1 where b + c = 0."""
    from scipy.stats import binom

    b, c = np.asarray(b, float), np.asarray(c, float)
    n = b + c
    p = np.minimum(1.0, 2 * binom.cdf(np.minimum(b, c), n, 0.5))
    return np.where(n > 0, p, 1.0)


def resampled_groups(correct: np.ndarray, answered: np.ndarray, *, resamples: int = 1000, seed: int = 0,
                     units: Sequence | None = None) -> list[tuple[list[int], np.ndarray]]:
    """Runs grouped by the examples they answered, each group with its runs' accuracies on every resample of those
    examples (``[R, len(group)]``; None for a group that answered none): what a run's interval and a pair's paired
    interval are read from, drawn once per shard. ``units``: one per example, the unit resampled
    (:mod:`evaluators.shared.bootstrap`; :attr:`evaluators.browse.shards.Shard.units`), None for rows."""
    correct = np.asarray(correct, bool) & np.asarray(answered, bool)
    answered = np.asarray(answered, bool)
    groups: dict[bytes, list[int]] = {}
    for a in range(len(answered)):
        groups.setdefault(np.packbits(answered[a]).tobytes(), []).append(a)
    out = []
    for members in groups.values():
        rows = np.flatnonzero(answered[members[0]])
        acc = (streamed_means(correct[np.ix_(members, rows)].astype(np.float64), resamples, seed,
                              units=None if units is None else [units[i] for i in rows])
               .reshape(resamples, -1) if len(rows) else None)
        out.append((members, acc))
    return out


def pair_table(correct: np.ndarray, answered: np.ndarray, *, resamples: int = 1000, seed: int = 0,
               groups: list[tuple[list[int], np.ndarray]] | None = None, units: Sequence | None = None
               ) -> np.ndarray:
    """``[M, M, 8]`` float64 (:data:`FIELDS`) for runs' ``correct`` and ``answered`` (bool ``[M, n]``), the
    intervals resampling ``units`` (as :func:`resampled_groups`); ``groups``: :func:`resampled_groups` of the same
    arrays and units, when drawn already."""
    correct = np.asarray(correct, bool) & np.asarray(answered, bool)
    answered = np.asarray(answered, bool)
    m, n = correct.shape
    right = correct.astype(np.float64)
    wrong = (answered & ~correct).astype(np.float64)
    out = np.zeros((m, m, 8))
    out[..., 0] = right @ right.T
    out[..., 1] = right @ wrong.T
    out[..., 2] = wrong @ right.T
    out[..., 3] = wrong @ wrong.T
    total = out[..., :4].sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[..., 4] = np.where(total > 0, (out[..., 1] - out[..., 2]) / total, np.nan)
    out[..., 7] = mcnemar_p(out[..., 1], out[..., 2])
    q = ((1 - LEVEL) / 2, (1 + LEVEL) / 2)
    groups = groups if groups is not None else resampled_groups(correct, answered, resamples=resamples, seed=seed,
                                                                units=units)
    for members, acc in groups:   # runs that answered the same examples: all their pairs from one product
        if acc is None:
            for a in members:
                out[a, members, 4:7] = np.nan
            continue
        for i, a in enumerate(members):
            low, high = np.quantile(acc[:, i:i + 1] - acc, q, axis=0)
            out[a, members, 5], out[a, members, 6] = low, high
    same = {a: g for g, (members, _) in enumerate(groups) for a in members}
    for a in range(m):
        for b in range(m):
            if same[a] == same[b]:
                continue
            both = answered[a] & answered[b]
            k = int(both.sum())
            if not k:
                out[a, b, 4:7] = np.nan
                continue
            r = paired_bootstrap(accuracy_statistic(correct[a][both]), accuracy_statistic(correct[b][both]), k,
                                 resamples=resamples, seed=seed, level=LEVEL,
                                 units=None if units is None else [units[i] for i in np.flatnonzero(both)])
            out[a, b, 5], out[a, b, 6] = r["low"], r["high"]
    return out
