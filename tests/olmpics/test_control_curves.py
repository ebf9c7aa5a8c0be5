"""olmpics.json carries each control curve's own WS and MAX with their 95% intervals, on the original examples that
have a control row, so that `probes run` can set them beside the original's (a model that scores the same on
PERTURBED as on the original reads no template). Curves written by hand in the evaluators' format."""

from __future__ import annotations

import numpy as np

from olmpics.test_olmpics_report_flags import choose, dev_rows, gold_word, report, write_curve


def test_a_control_curve_has_its_own_ws_and_max_with_intervals(tmp_path):
    rows = dev_rows(200)

    def right_in(tenths: int):   # right on that many of every ten examples, neither one word nor one position
        return choose(rows, lambda i, r: gold_word(r) if (7 * i) % 10 < tenths else
                      ("older" if gold_word(r) == "younger" else "younger"))

    small, large, wrong = right_in(6), right_in(7), right_in(3)
    original = np.stack([np.stack([small, large])] * 2)   # seeds x sizes: 0.6 at N=62, 0.7 at N=125
    runs = {"original": original, "perturbed": original.copy(), "nolang": np.stack([np.stack([wrong, small])] * 2)}
    write_curve(tmp_path / "res", "random", rows, runs)
    _, js = report(tmp_path / "res", tmp_path / "out")
    m = js["age"]["random"]["MLP"]
    # PERTURBED scores what the original scores: the same WS and MAX, the same intervals, no sensitivity
    for key in ("WS", "MAX"):
        assert [m[f"perturbed_control_{key}{s}"] for s in ("", "_low", "_high")] == \
            [m[f"{key}{s}"] for s in ("", "_low", "_high")]
    assert m["perturbed"] == 0.0
    # NO-LANG: 0.3 then 0.6, so its MAX is 0.6 (at N = 125), inside an interval of its own
    assert m["nolang_control_MAX"] == 0.6 and m["nolang_control_MAX_low"] < 0.6 < m["nolang_control_MAX_high"]
    assert m["nolang_control_WS_low"] < m["nolang_control_WS"] < m["nolang_control_WS_high"]


def test_the_report_explains_the_interval_of_a_maximum(tmp_path):
    """olmpics.md prints MAX with its interval: its legend says why a maximum's lower bound can be the value."""
    rows = dev_rows(40)
    right = choose(rows, lambda i, r: gold_word(r))
    write_curve(tmp_path / "res", "perfect", rows, {"original": np.stack([np.stack([right, right])] * 2)})
    md, js = report(tmp_path / "res", tmp_path / "out")
    assert js["age"]["perfect"]["MLP"]["MAX_low"] == js["age"]["perfect"]["MLP"]["MAX"] == 1.0
    assert "recomputes the maximum over N on every resample" in md and "its lower bound equals the value" in md
