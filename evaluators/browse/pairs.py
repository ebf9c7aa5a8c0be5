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

from functools import lru_cache

import numpy as np

from evaluators.shared.bootstrap import accuracy_statistic, paired_bootstrap, resample_indices, resample_means

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


def pair_table(correct: np.ndarray, answered: np.ndarray, *, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """``[M, M, 8]`` float64 (:data:`FIELDS`) for runs' ``correct`` and ``answered`` (bool ``[M, n]``)."""
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
    groups: dict[bytes, list[int]] = {}
    for a in range(m):
        groups.setdefault(np.packbits(answered[a]).tobytes(), []).append(a)
    for members in groups.values():   # runs that answered the same examples: all their pairs from one product
        rows = np.flatnonzero(answered[members[0]])
        if not len(rows):
            for a in members:
                out[a, members, 4:7] = np.nan
            continue
        idx = indices(len(rows), resamples, seed)
        acc = resample_means(right[np.ix_(members, rows)], idx).reshape(resamples, -1)
        for i, a in enumerate(members):
            low, high = np.quantile(acc[:, i:i + 1] - acc, q, axis=0)
            out[a, members, 5], out[a, members, 6] = low, high
    same = {a: key for key, members in groups.items() for a in members}
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
                                 resamples=resamples, seed=seed, level=LEVEL)
            out[a, b, 5], out[a, b, 6] = r["low"], r["high"]
    return out


@lru_cache(maxsize=8)
def indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's resample indices (:func:`resample_indices`), drawn once per size in a build."""
    return resample_indices(n, resamples, seed)
