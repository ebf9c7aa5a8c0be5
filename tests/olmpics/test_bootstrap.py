"""Bootstrap intervals over dev examples: coverage of the estimate, width, determinism, paired tests."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.shared.bootstrap import (
    accuracy_statistic,
    bootstrap,
    paired_bootstrap,
    resample_indices,
    resample_means,
    resample_weights,
    weighted_means,
)


def _weights(idx: np.ndarray, n: int) -> np.ndarray:
    """A statistic's input for resamples of indices ``idx``: how often each example is drawn."""
    return np.stack([np.bincount(row, minlength=n) for row in idx])


def _correct(n: int, share: float) -> np.ndarray:
    """``n`` outcomes, the first ``round(share * n)`` correct, spread evenly."""
    return np.random.default_rng(7).permutation(np.arange(n) < round(share * n))


def test_interval_contains_the_estimate_and_narrows_with_n():
    widths = []
    for n in (50, 200, 800):
        ci = bootstrap(accuracy_statistic(_correct(n, 0.7)), n)
        assert ci["estimate"] == pytest.approx(0.7, abs=1 / n)
        assert ci["low"] <= ci["estimate"] <= ci["high"]
        widths.append(ci["high"] - ci["low"])
    assert widths[0] > widths[1] > widths[2]


def test_deterministic_for_a_seed():
    stat = accuracy_statistic(_correct(100, 0.6))
    assert bootstrap(stat, 100, seed=3) == bootstrap(stat, 100, seed=3)
    assert bootstrap(stat, 100, seed=3) != bootstrap(stat, 100, seed=4)


def test_agrees_with_a_hand_computation():
    values = np.array([0.0, 1.0, 1.0])
    idx = np.random.default_rng(5).integers(0, 3, size=(20, 3))
    by_hand = [values[row].mean() for row in idx]
    assert np.allclose(resample_means(values, idx), by_hand)
    ci = bootstrap(accuracy_statistic(values.astype(bool)), 3, resamples=20, seed=5, level=0.8)
    assert ci == pytest.approx({"estimate": 2 / 3, "low": np.quantile(by_hand, 0.1),
                                "high": np.quantile(by_hand, 0.9)})
    assert bootstrap(accuracy_statistic([True]), 1) == {"estimate": 1.0, "low": 1.0, "high": 1.0}


def test_accuracy_statistic_averages_leading_axes():
    correct = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], bool)  # two seeds
    idx = np.array([[0, 1, 2, 3], [0, 0, 0, 0], [3, 3, 2, 2]])
    assert accuracy_statistic(correct)(_weights(idx, 4)) == pytest.approx([5 / 8, 1.0, 1 / 4])


def test_paired_bootstrap_detects_a_real_difference():
    a, b = _correct(400, 0.8), _correct(400, 0.5)
    test = paired_bootstrap(accuracy_statistic(a), accuracy_statistic(b), 400)
    assert test["diff"] == pytest.approx(0.3)
    assert test["holds"] and test["low"] > 0 and test["p_value"] < 0.01


def test_paired_bootstrap_on_identical_systems_finds_nothing():
    a = _correct(400, 0.7)
    test = paired_bootstrap(accuracy_statistic(a), accuracy_statistic(a.copy()), 400)
    assert test == {"diff": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0, "holds": False}


def test_paired_uses_the_same_resamples_for_both():
    seen = []
    paired_bootstrap(lambda idx: seen.append(idx) or np.zeros(len(idx)),
                     lambda idx: seen.append(idx) or np.zeros(len(idx)), 10, resamples=5, seed=2)
    assert np.array_equal(seen[0], seen[1]) and np.array_equal(seen[0], _weights(resample_indices(10, 5, 2), 10))
    assert np.array_equal(seen[0], resample_weights(10, 5, 2))


def test_rejects_bad_arguments():
    stat = accuracy_statistic(_correct(10, 0.5))
    with pytest.raises(ValueError, match="n >= 1"):
        bootstrap(stat, 0)
    with pytest.raises(ValueError, match="level"):
        bootstrap(stat, 10, level=95)
    with pytest.raises(ValueError, match="one value per resample"):
        bootstrap(lambda idx: np.zeros((len(idx), 2)), 10)


def test_a_whole_learning_curve_is_one_vectorised_pass():
    """The statistic sees all resamples in one call (no loop over resamples, the part that made a curve slow;
    its speed is a benchmark's business, not a test's), and the counting shortcut of resample_means gives what
    gathering each resample's outcomes gives."""
    correct = np.random.default_rng(0).random((3, 7, 500)) < 0.7  # seeds x sizes x examples
    weights = np.array([0.23, 0.2, 0.17, 0.14, 0.11, 0.08, 0.07])
    shapes = []

    def curve(drawn):
        shapes.append(drawn.shape)
        return (weighted_means(correct, drawn) @ weights).mean(axis=1)

    ci = bootstrap(curve, 500)
    assert shapes == [(1000, 500), (1, 500)]   # every resample at once, then the estimate
    assert ci["low"] < ci["estimate"] < ci["high"]
    idx = resample_indices(500, 1000, 0)
    gathered = np.stack([correct[..., row].mean(axis=-1) for row in idx])   # [R, seeds, sizes], one by one
    assert np.allclose(resample_means(correct, idx), gathered)
    by_hand = (gathered @ weights).mean(axis=1)
    assert ci == pytest.approx({"estimate": (correct.mean(axis=-1) @ weights).mean(),
                                "low": np.quantile(by_hand, 0.025), "high": np.quantile(by_hand, 0.975)})


def test_streamed_means_are_the_resample_means_in_pieces():
    import numpy as np

    from evaluators.shared.bootstrap import resample_indices, resample_means, streamed_means

    values = np.random.default_rng(3).random((3, 257)) < 0.6
    whole = resample_means(values, resample_indices(257, 40, seed=7))
    for chunk in (257, 1000, 257 * 40, 10**9):   # one resample at a time, a few, all at once
        assert np.array_equal(streamed_means(values, 40, 7, chunk=chunk), whole)
