"""Intervals resample the unit the data repeats (issue 52, item 6): on data built with repeated units (20 units of
10 rows each, every row of a unit with one outcome) the row bootstrap is too narrow by about sqrt(10), and every
report's caller passes its unit: the zero-shot report and the oLMpics curves the fact (a repeated id, with its
control rows), ``probes diff`` the fact, the ParaRel tuple and the CALUM pair. Where no unit repeats, the
intervals are the row bootstrap's, number for number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluators.olmpics import results as olmpics_results
from evaluators.shared import flips
from evaluators.shared import report as zeroshot_report
from evaluators.shared.bootstrap import (accuracy_statistic, bootstrap, paired_bootstrap, resample_weights,
                                         unit_codes, weighted_means)
from probekit.data import keys, units as data_units
from probekit.data.keys import mc_key

UNITS, ROWS = 20, 10
RESAMPLES = 4000


def repeated(share: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(outcomes, units)``: ``UNITS`` units of ``ROWS`` rows each, all rows of a unit right or all wrong."""
    fate = np.random.default_rng(seed).permutation(np.arange(UNITS) < round(share * UNITS))
    return np.repeat(fate, ROWS), np.repeat([f"fact{i}" for i in range(UNITS)], ROWS)


def width(ci: dict) -> float:
    return ci["high"] - ci["low"]


def test_the_row_bootstrap_is_too_narrow_by_the_square_root_of_the_rows_per_unit():
    correct, units = repeated()
    rows = bootstrap(accuracy_statistic(correct), len(correct), resamples=RESAMPLES)
    clustered = bootstrap(accuracy_statistic(correct), len(correct), resamples=RESAMPLES, units=units)
    assert rows["estimate"] == clustered["estimate"] == 0.5
    assert 2.5 < width(clustered) / width(rows) < 4.0           # sqrt(10) = 3.16
    # the standard errors behind them: sqrt(p(1 - p) / units) against sqrt(p(1 - p) / rows)
    se = [weighted_means(correct, resample_weights(len(correct), RESAMPLES, 0, u)).std() for u in (None, units)]
    assert se[1] / se[0] == pytest.approx(np.sqrt(ROWS), rel=0.1)
    assert se[1] == pytest.approx(np.sqrt(0.25 / UNITS), rel=0.1)


def test_a_paired_test_draws_a_unit_on_both_sides_together():
    a, units = repeated(0.6, seed=1)
    b = np.roll(a, ROWS)   # another system, also one fate per unit
    rows = paired_bootstrap(accuracy_statistic(a), accuracy_statistic(b), len(a), resamples=RESAMPLES)
    clustered = paired_bootstrap(accuracy_statistic(a), accuracy_statistic(b), len(a), resamples=RESAMPLES,
                                 units=units)
    assert rows["diff"] == clustered["diff"]
    assert width(clustered) / width(rows) > 2.5


def test_a_drawn_unit_brings_all_its_rows():
    units = ["x", "x", "x", "y", "z", "z"]
    weights = resample_weights(6, 50, 3, units)
    assert (weights[:, 0] == weights[:, 1]).all() and (weights[:, 1] == weights[:, 2]).all()
    assert (weights[:, 4] == weights[:, 5]).all()
    assert (weights[:, [0, 3, 4]].sum(axis=1) == 3).all()   # three units drawn per resample
    assert unit_codes(units).tolist() == [0, 0, 0, 1, 2, 2]


def test_with_no_repeated_unit_the_intervals_are_the_row_bootstraps_number_for_number():
    correct = np.random.default_rng(4).random((2, 3, 137)) < 0.6
    other = np.random.default_rng(5).random(137) < 0.4
    ids = [f"id{i}" for i in np.random.default_rng(6).permutation(137)]
    assert bootstrap(accuracy_statistic(correct), 137, seed=2, units=ids) == \
        bootstrap(accuracy_statistic(correct), 137, seed=2)
    assert paired_bootstrap(accuracy_statistic(correct), accuracy_statistic(other), 137, units=ids) == \
        paired_bootstrap(accuracy_statistic(correct), accuracy_statistic(other), 137)


def test_a_unit_per_row_is_required():
    with pytest.raises(ValueError, match="one unit per row"):
        bootstrap(accuracy_statistic([True, False]), 2, units=["a"])


# --- the callers ---------------------------------------------------------------------------------------------------

def zero_shot_run(folder: Path, model: str, correct: np.ndarray, ids: list[str]) -> None:
    """A zero-shot result folder: metrics.json and predictions.jsonl, as ``probes evaluate zeroshot`` writes them."""
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps({
        "model": model, "probe": "multihop_comparison", "variant": "release", "accuracy": float(correct.mean()),
        "n": len(correct), "chance": 0.5, "zero_shot": True, "data_fingerprint": "f"}))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(
        {"id": i, "prediction": "A" if c else "B", "choice": "a" if c else "b", "gold": "A", "correct": bool(c)})
        + "\n" for i, c in zip(ids, correct)))


def test_the_zero_shot_report_resamples_a_fact_asked_again_as_one(tmp_path):
    """A release file asks a fact more than once, under one id (multihop_comparison's has 480 ids in 500 rows):
    its rows are one unit, in the accuracy's interval and in the paired differences."""
    correct, units = repeated()
    other = np.roll(correct, ROWS)
    zero_shot_run(tmp_path / "a", "model-a", correct, list(units))
    zero_shot_run(tmp_path / "b", "model-b", other, list(units))
    df = zeroshot_report.collect([tmp_path])
    row = df[df.model == "model-a"].iloc[0]
    clustered = bootstrap(accuracy_statistic(correct), len(correct), units=units)
    assert (row.low, row.high) == (clustered["low"], clustered["high"])
    assert row.high - row.low > 2.5 * width(bootstrap(accuracy_statistic(correct), len(correct)))
    test = paired_bootstrap(accuracy_statistic(correct), accuracy_statistic(other), len(correct), units=units)
    shown = zeroshot_report.paired_differences(df).iloc[0]["A − B"]
    assert shown == f"{test['diff']:+.3f} [{test['low']:+.3f}, {test['high']:+.3f}]"
    assert "resampling the fact" in zeroshot_report.markdown(df)


def curve_result(correct: np.ndarray, ids: list[str], control: np.ndarray) -> olmpics_results.Result:
    """A learning curve (one seed, one size) on rows ``ids``, with a NO-LANG control row per original row."""
    meta = {"seeds": [1], "sizes": [62], "chance": 0.5, "lm_head": "pretrained", "baseline": None, "model": "m"}
    positions = np.arange(len(ids))
    return olmpics_results.Result(Path("m.json"), meta, ids, correct[None, None], correct.copy(),
                                  {"nolang": (positions, control[None, None])}, {},
                                  {"nolang": (positions, control.copy())})


def test_the_olmpics_curves_resample_facts_with_their_controls():
    correct, units = repeated()
    control = np.zeros_like(correct)
    cells = olmpics_results.cells(curve_result(correct, list(units), control), resamples=1000, seed=0)
    n = len(correct)
    for key in ("WS", "MAX"):
        expected = bootstrap(olmpics_results.curve_statistics(correct[None, None])[key], n, units=units)
        assert (cells[key]["low"], cells[key]["high"]) == (expected["low"], expected["high"])
    # the sensitivity: each original row with its control row, one fact's rows together
    sens = bootstrap(olmpics_results.sensitivity_statistic(correct[None, None], control[None, None]), n, units=units)
    assert (cells["nolang"]["low"], cells["nolang"]["high"]) == (sens["low"], sens["high"])
    assert cells["zero_shot"]["high"] - cells["zero_shot"]["low"] > \
        2.5 * width(bootstrap(accuracy_statistic(correct), n))
    paired = cells["zero_shot"]["vs_control"]["nolang"]
    assert paired["high"] - paired["low"] > \
        2.5 * width(paired_bootstrap(accuracy_statistic(correct), accuracy_statistic(control), n))


def test_the_olmpics_paired_tests_resample_facts():
    correct, units = repeated()
    a = curve_result(correct, list(units), np.zeros_like(correct))
    b = curve_result(np.roll(correct, ROWS), list(units), np.zeros_like(correct))
    test = olmpics_results.paired(a, b, "WS", resamples=1000, seed=0)
    expected = paired_bootstrap(olmpics_results.curve_statistics(a.correct)["WS"],
                                olmpics_results.curve_statistics(b.correct)["WS"], len(correct), units=units)
    assert (test["low"], test["high"]) == (expected["low"], expected["high"])
    zero = olmpics_results.paired_zero_shot(a, b, resamples=1000, seed=0)
    assert zero["high"] - zero["low"] > 2.5 * width(paired_bootstrap(
        accuracy_statistic(a.zero_shot), accuracy_statistic(b.zero_shot), len(correct)))


SEP = "\x1f"
FACT = {"args": {"age1": 32, "age2": 28}}


@pytest.mark.parametrize("fmt, rows, units", [
    ("cloze_set",    # ParaRel: every pattern asks the tuple
     [{"relation": "P17", "sub_label": "Paris", "obj_label": "France", "pattern_id": f"P17-{p}"} for p in range(3)]
     + [{"relation": "P17", "sub_label": "Rome", "obj_label": "Italy", "pattern_id": "P17-0"}],
     ["P17\x1fParis\x1fFrance"] * 3 + ["P17\x1fRome\x1fItaly"]),
    ("mc_mlm",       # a fact under two templates, and its control row: one unit
     [{**FACT, "id": "a", "template_id": "paper"}, {**FACT, "id": "b", "template_id": "birth_year"},
      {**FACT, "id": "c", "source_id": "a"}, {"id": "d", "args": {"age1": 18, "age2": 30}}],
     [mc_key(FACT)] * 3 + [mc_key({"args": {"age1": 18, "age2": 30}})]),
    ("pair_cls", [{"pair_id": "mrpc-dev-0", "variant": v} for v in ("original", "reverse")]
     + [{"pair_id": "mrpc-dev-1", "variant": "original"}], ["mrpc-dev-0", "mrpc-dev-0", "mrpc-dev-1"]),
])
def test_one_function_names_each_familys_unit(fmt, rows, units):
    assert [data_units.unit(fmt, r) for r in rows] == units


def test_a_release_row_without_facts_is_its_id():
    """A release row has no ``args`` or ``facts`` (its keys, ``<k>``, ``<k>#2``, ..., name rows, not facts): its
    unit is its id, which the release repeats for a fact asked again, and a control row's is its original's."""
    rows = [{"id": "q1"}, {"id": "q2"}, {"id": "q1"}, {"id": "n1", "source_id": "q1", "args": None, "facts": None}]
    assert [data_units.unit("mc_mlm", r) for r in rows] == ["q1", "q2", "q1", "q1"]


class _Split:
    """The slice of a split diff (:mod:`probekit.versions.diff`) that :func:`flips.compare` reads."""

    def __init__(self, fmt: str, rows: list[dict]):
        frame = keys.frame(fmt, rows)
        self.record = {"format": fmt}
        self.merged = pd.DataFrame({"key": frame["key"], "status": ["changed"] * len(rows), "what_old": frame["what"],
                                    "what_new": frame["what"], "row_old": range(len(rows)),
                                    "row_new": range(len(rows)), "id_old": frame["id"], "id_new": frame["id"]})
        self.old_rows = self.new_rows = rows


def test_diff_resamples_a_pararel_tuple_under_all_its_patterns_together():
    old, _ = repeated(0.5, seed=2)
    new, _ = repeated(0.7, seed=3)
    rows = [{"relation": "P17", "sub_label": f"s{u}", "obj_label": f"o{u}", "pattern_id": f"P17-{p}"}
            for u in range(UNITS) for p in range(ROWS)]
    sd = _Split("cloze_set", rows)
    names = list(sd.merged["key"])
    side = {k: {"prediction": "x", "correct": bool(c)} for k, c in zip(names, old)}
    other = {k: {"prediction": "x", "correct": bool(c)} for k, c in zip(names, new)}
    change = flips.compare(sd, side, other, resamples=1000, seed=0)["change"]
    tuples = [k.rsplit(SEP, 1)[0] for k in names]
    expected = paired_bootstrap(accuracy_statistic(new), accuracy_statistic(old), len(names), units=tuples)
    assert (change["low"], change["high"]) == (expected["low"], expected["high"])
    assert change["high"] - change["low"] > 2.5 * width(
        paired_bootstrap(accuracy_statistic(new), accuracy_statistic(old), len(names)))


def test_the_browser_resamples_a_pararel_tuple_under_all_its_patterns_and_a_calum_pair_once():
    """A ParaRel shard holds a relation's tuples × patterns (``group``: the tuple), a CALUM shard a pair (``group``:
    its ``pair_id``), an oLMpics control row its base (``source_id``): the run's interval and the pairs' are the
    cluster bootstrap's."""
    from types import SimpleNamespace

    from evaluators.browse.pairs import pair_table, resampled_groups
    from evaluators.browse.shards import Shard

    rows = [{"id": f"t{u}/p{p}", "group": f"t{u}", "source_id": None} for u in range(UNITS) for p in range(ROWS)]
    units = Shard.units.fget(SimpleNamespace(rows=rows))
    assert units == [f"t{u}" for u in range(UNITS) for _ in range(ROWS)]
    assert Shard.units.fget(SimpleNamespace(rows=[{"id": "c1", "group": None, "source_id": "o1"},
                                                 {"id": "o2", "group": None, "source_id": None}])) == ["o1", "o2"]
    fact = {"group": None, "source_id": None, "args": {"age1": 32, "age2": 28}}   # one fact, two templates
    two = Shard.units.fget(SimpleNamespace(rows=[{**fact, "id": "paper"}, {**fact, "id": "birth_year"},
                                                {**fact, "id": "other", "args": {"age1": 18, "age2": 30}}]))
    assert two[0] == two[1] != two[2]
    a, _ = repeated(0.5, seed=4)
    b = np.roll(a, ROWS)
    correct, answered = np.stack([a, b]), np.ones((2, len(a)), bool)
    (members, acc), = resampled_groups(correct, answered, resamples=1000, seed=0, units=units)
    low, high = np.quantile(acc[:, 0], [0.025, 0.975])
    expected = bootstrap(accuracy_statistic(a), len(a), units=units)
    assert (low, high) == pytest.approx((expected["low"], expected["high"]))
    table = pair_table(correct, answered, resamples=1000, seed=0, units=units)
    test = paired_bootstrap(accuracy_statistic(a), accuracy_statistic(b), len(a), units=units)
    assert table[0, 1, 5:7] == pytest.approx([test["low"], test["high"]])
    row = np.quantile(resampled_groups(correct, answered, resamples=1000, seed=0)[0][1][:, 0], [0.025, 0.975])
    assert high - low > 2.5 * (row[1] - row[0])
