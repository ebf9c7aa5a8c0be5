"""C_R, C_S, symmetric consistency, accuracy and per-class values on hand-made predictions."""

import pytest

from evaluators.calum.metrics import consistency, over_seeds

E, N = "entailment", "not_entailment"


def _rows(variant, predictions, labels=None):
    labels = labels or [None] * len(predictions)
    return [{"pair_id": f"p{i}", "variant": variant, "prediction": p, "label": y}
            for i, (p, y) in enumerate(zip(predictions, labels))]


def test_consistency_by_hand():
    gold = [E, E, N, N]
    rows = (_rows("original", [E, N, N, N], gold) + _rows("reverse", [E, E, N, E], gold)
            + _rows("signal", [E, N, N, N], gold))
    m = consistency(rows)
    assert m["accuracy"] == 3 / 4            # p1 wrong
    assert m["C_R"] == 2 / 4                 # p1 and p3 flip under REVERSE
    assert m["C_S"] == 1.0 and "C_sym" not in m
    # per gold class, the first class included: entailment pairs p0 (same), p1 (flips) -> 1/2
    assert m["by_class"] == {E: {"C_R": 0.5, "C_S": 1.0}, N: {"C_R": 0.5, "C_S": 1.0}}
    assert (m["n"], m["n_labelled"], m["n_C_R"]) == (4, 4, 4)


def test_unlabelled_test_rows_and_class_zero():
    rows = _rows("original", [0, 1, 0]) + _rows("symmetric", [0, 0, 0])
    m = consistency(rows)
    assert m["accuracy"] is None and m["C_sym"] == 2 / 3 and m["by_class"] == {}
    labelled = _rows("original", [0, 1], [0, 1]) + _rows("reverse", [1, 1], [0, 1])
    assert consistency(labelled)["by_class"] == {"0": {"C_R": 0.0}, "1": {"C_R": 1.0}}   # class 0 is counted


def test_errors_and_seeds():
    with pytest.raises(ValueError, match="no predictions on the original"):
        consistency(_rows("reverse", [E]))
    with pytest.raises(ValueError, match="two original predictions"):
        consistency(_rows("original", [E]) * 2)
    s = over_seeds([{"accuracy": 0.5, "C_R": 0.6}, {"accuracy": 0.7, "C_R": 0.8}])
    assert s["accuracy"]["mean"] == pytest.approx(0.6) and s["accuracy"]["std"] == pytest.approx(0.1414213562)
    assert s["C_R"]["per_seed"] == [0.6, 0.8] and "C_S" not in s
    assert over_seeds([{"C_R": 0.6}])["C_R"]["std"] is None
