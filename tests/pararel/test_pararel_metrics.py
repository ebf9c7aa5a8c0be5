"""ParaRel metrics on hand-made prediction tables; every expected value is worked out in a comment."""

from __future__ import annotations

import pandas as pd
import pytest

from evaluators.pararel.metrics import (
    DETERMINISM,
    EDGE_TYPES,
    METRICS,
    a_an_fits,
    determinism,
    evaluate,
    macro,
    relation_metrics,
)

FLAGS = ("syntactic_change", "lexical_change", "determiner_change")


def _predictions(table: dict, relation: str = "P19") -> pd.DataFrame:
    """``{tuple_id: (gold, [prediction of pattern 0, 1, 2, ...])}``; None = no cell."""
    rows = [(relation, tuple_id, pattern_id, prediction, gold) for tuple_id, (gold, predictions) in table.items()
            for pattern_id, prediction in enumerate(predictions) if prediction is not None]
    return pd.DataFrame(rows, columns=["relation", "tuple_id", "pattern_id", "prediction", "gold"])


def _patterns(texts, relation: str = "P19") -> pd.DataFrame:
    return pd.DataFrame({"relation": relation, "pattern_id": range(len(texts)), "pattern": texts,
                         "first": [k == 0 for k in range(len(texts))]})


def _edges(pairs: dict, relation: str = "P19", both_directions: bool = True) -> pd.DataFrame:
    """``{(source, target): (syntactic, lexical, determiner)}``, written in both directions by default."""
    rows = [(relation, s, t, *flags) for (a, b), flags in pairs.items()
            for s, t in ([(a, b), (b, a)] if both_directions else [(a, b)])]
    return pd.DataFrame(rows, columns=["relation", "source", "target", *FLAGS])


PLAIN = _patterns(["[X] was born in [Y] .", "[X] is native to [Y] .", "[X] , born in [Y] ."])
# pattern pairs (0,1), (0,2), (1,2); agreements per tuple:
# t1 Paris: Paris Paris Paris -> all right; (0,1) y (0,2) y (1,2) y = 3/3
# t2 Rome:  Rome  Oslo  Oslo  -> p0 right;  (0,1) n (0,2) n (1,2) y = 1/3
# t3 Lima:  Oslo  Oslo  Kiev  -> none right; (0,1) y (0,2) n (1,2) n = 1/3
# t4 Nice:  Rome  Oslo  Kiev  -> none right; (0,1) n (0,2) n (1,2) n = 0/3
MAIN = _predictions({"t1": ("Paris", ["Paris", "Paris", "Paris"]), "t2": ("Rome", ["Rome", "Oslo", "Oslo"]),
                     "t3": ("Lima", ["Oslo", "Oslo", "Kiev"]), "t4": ("Nice", ["Rome", "Oslo", "Kiev"])})
TYPED = _edges({(0, 1): (False, True, False), (0, 2): (True, False, False), (1, 2): (True, True, False)})


def test_every_metric_on_the_main_table():
    got = relation_metrics(MAIN, PLAIN, TYPED)
    assert got["Accuracy"] == pytest.approx(2 / 4)        # first pattern right for t1, t2
    assert got["Consistency"] == pytest.approx(5 / 12)    # (3 + 1 + 1 + 0) agreeing of 4 x 3 pairs
    assert got["Consistent-Acc"] == pytest.approx(1 / 4)  # only t1 is right under every pattern
    assert got["Succ-Patt"] == pytest.approx(3 / 3)       # each pattern is right for t1
    assert got["Succ-Objs"] == pytest.approx(2 / 4)       # t1, t2 are right somewhere: "known"
    assert got["Know-Const"] == pytest.approx(4 / 6)      # t1 3/3 + t2 1/3
    assert got["Unk-Const"] == pytest.approx(1 / 6)       # t3 1/3 + t4 0/3
    assert {k: got[k] for k in ("n_tuples", "n_patterns", "n_pairs", "n_pairs_filtered")} == {
        "n_tuples": 4, "n_patterns": 3, "n_pairs": 12, "n_pairs_filtered": 0}
    assert set(METRICS) <= set(got)


def test_consistency_by_edge_type():
    by_edge = relation_metrics(MAIN, PLAIN, TYPED)["consistency_by_edge"]
    assert by_edge["lexical"] == pytest.approx(2 / 4)    # pair (0,1): t1 y, t2 n, t3 y, t4 n
    assert by_edge["syntactic"] == pytest.approx(1 / 4)  # pair (0,2): t1 y only
    assert by_edge["both"] == pytest.approx(2 / 4)       # pair (1,2): t1 y, t2 y
    assert by_edge["none"] is None                       # no pair without a change
    assert list(by_edge) == list(EDGE_TYPES)


def test_determiner_edges_count_in_consistency_but_in_no_edge_type():
    # (0,1) no change at all; (0,2) determiner only; (1,2) syntactic + lexical + determiner; one direction given
    edges = _edges({(0, 1): (False, False, False), (0, 2): (False, False, True), (1, 2): (True, True, True)},
                   both_directions=False)
    got = relation_metrics(MAIN, PLAIN, edges)
    assert got["consistency_by_edge"] == {"syntactic": None, "lexical": None, "both": None,
                                          "none": pytest.approx(2 / 4)}  # pair (0,1): t1, t3 agree
    assert got["Consistency"] == pytest.approx(5 / 12)                   # every pair still counts


def test_conflicting_edge_directions_are_refused():
    edges = pd.concat([_edges({(0, 1): (True, False, False)}, both_directions=False),
                       _edges({(1, 0): (False, True, False)}, both_directions=False)])
    with pytest.raises(ValueError, match="directions"):
        relation_metrics(MAIN, PLAIN, edges)


def test_succ_patt_counts_a_pattern_never_right():
    # u1 Oslo: Oslo Rome Rome (p0 right); u2 Rome: Lima Rome Lima (p1 right); p2 never right -> 2/3
    table = _predictions({"u1": ("Oslo", ["Oslo", "Rome", "Rome"]), "u2": ("Rome", ["Lima", "Rome", "Lima"])})
    assert relation_metrics(table, PLAIN, TYPED)["Succ-Patt"] == pytest.approx(2 / 3)


def test_tuples_are_scored_on_the_patterns_they_have():
    # v1 Oslo: Oslo Oslo Rome -> pairs (0,1) y (0,2) n (1,2) n; v2 Rome: Rome - Rome -> only (0,2) y
    table = _predictions({"v1": ("Oslo", ["Oslo", "Oslo", "Rome"]), "v2": ("Rome", ["Rome", None, "Rome"])})
    got = relation_metrics(table, PLAIN, TYPED)
    assert got["Consistency"] == pytest.approx(2 / 4)     # (1 + 1) agreeing of (3 + 1) pairs
    assert got["n_pairs"] == 4
    assert got["Consistent-Acc"] == pytest.approx(1 / 2)  # v2 is right on both its patterns; v1 misses p2
    assert got["consistency_by_edge"]["syntactic"] == pytest.approx(1 / 2)  # pair (0,2): v1 n, v2 y
    assert got["Accuracy"] == pytest.approx(2 / 2)        # p0 right for v1 and v2


def test_accuracy_is_none_without_cells_of_the_first_pattern():
    table = _predictions({"w1": ("Oslo", [None, "Oslo", "Oslo"])})
    assert relation_metrics(table, PLAIN, TYPED)["Accuracy"] is None


def test_know_and_unk_const_are_none_on_an_empty_side():
    # x1 Oslo: Rome Rome Lima, x2 Rome: Lima Lima Lima: nothing right -> no known tuple; pairs 1/3 + 3/3
    unknown = _predictions({"x1": ("Oslo", ["Rome", "Rome", "Lima"]), "x2": ("Rome", ["Lima", "Lima", "Lima"])})
    got = relation_metrics(unknown, PLAIN, TYPED)
    assert got["Know-Const"] is None and got["Succ-Objs"] == 0.0
    assert got["Unk-Const"] == pytest.approx(4 / 6)
    # y1 Oslo: Oslo Oslo Rome is known (pairs 1/3) -> no unknown tuple
    known = _predictions({"y1": ("Oslo", ["Oslo", "Oslo", "Rome"])})
    got = relation_metrics(known, PLAIN, TYPED)
    assert got["Unk-Const"] is None and got["Know-Const"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(("pattern", "obj", "fits"), [
    ("[X] is a [Y] .", "Paris", True),
    ("[X] is a [Y] .", "Oslo", False),                 # "a" before a vowel letter
    ("[X] is an [Y] .", "Oslo", True),
    ("[X] is an [Y] .", "Paris", False),               # "an" before a consonant letter
    ("[X] is an [Y]-born person .", "Paris", False),   # the word holding [Y] may carry more
    ("playing as a [Y], [X]", "attacker", False),
    ("[X] is the [Y] .", "Oslo", True),                # no article before [Y]
    ("[Y] is the capital of [X] .", "Oslo", True),     # [Y] opens the pattern
    ("[X] is an [Y] .", "hour", False),                # by letter, not sound, as the original
    ("An [Y] , [X] .", "Paris", False),                # a capital article counts too
])
def test_a_an_fits(pattern, obj, fits):
    assert a_an_fits(pattern, obj) is fits


ARTICLES = _patterns(["[X] was born in [Y] .", "[X] is a [Y]-born person .", "[X] is an [Y]-born person ."])


def test_a_an_filter_changes_consistency():
    # z1 Oslo:  Oslo Rome Oslo;  p1 ("a Oslo") misfits -> only (0,2) is kept: y
    # z2 Paris: Paris Paris Oslo; p2 ("an Paris") misfits -> only (0,1) is kept: y
    # unfiltered: z1 (0,1) n (0,2) y (1,2) n; z2 (0,1) y (0,2) n (1,2) n -> 2/6
    table = _predictions({"z1": ("Oslo", ["Oslo", "Rome", "Oslo"]), "z2": ("Paris", ["Paris", "Paris", "Oslo"])})
    filtered = relation_metrics(table, ARTICLES, TYPED)
    assert filtered["Consistency"] == pytest.approx(2 / 2)
    assert (filtered["n_pairs"], filtered["n_pairs_filtered"]) == (2, 4)
    unfiltered = relation_metrics(table, ARTICLES, TYPED, a_an_filter=False)
    assert unfiltered["Consistency"] == pytest.approx(2 / 6)
    assert (unfiltered["n_pairs"], unfiltered["n_pairs_filtered"]) == (6, 0)


def test_the_originals_a_an_label_drops_every_an_cell_for_roberta_and_albert(tiny_roberta):
    """``pararel_eval.a_an_label: model_token``: the rule reads the label as the original's ``lm_pipeline.py``
    passes it (RoBERTa ``' ' + obj``, ALBERT ``tokenize(obj)[0]``): no such label starts with a vowel, so every
    "an [Y]" cell goes and every "a [Y]" cell stays, whatever the object; a BERT's label is the gold one."""
    from transformers import AutoTokenizer

    from evaluators.pararel.metrics import original_a_an_labels

    roberta = original_a_an_labels(["Oslo", "Paris"], "roberta", AutoTokenizer.from_pretrained(tiny_roberta).tokenize)
    assert roberta == {"Oslo": " Oslo", "Paris": " Paris"}
    assert original_a_an_labels(["Oslo"], "albert", lambda text: ["▁oslo"]) == {"Oslo": "▁oslo"}
    assert original_a_an_labels(["Oslo"], "bert", str.split) == {"Oslo": "Oslo"}
    # z1 Oslo: Oslo Rome Oslo; z2 Paris: Paris Paris Oslo. The label never vowel-initial: p2 ("an") misfits for
    # both -> pairs (0,1) only: z1 n, z2 y -> 1/2 (the gold label's rule: 2/2, test above)
    table = _predictions({"z1": ("Oslo", ["Oslo", "Rome", "Oslo"]), "z2": ("Paris", ["Paris", "Paris", "Oslo"])})
    got = relation_metrics(table, ARTICLES, TYPED, a_an_label=roberta)
    assert got["Consistency"] == pytest.approx(1 / 2)
    assert (got["n_pairs"], got["n_pairs_filtered"]) == (2, 4)


def test_a_an_filter_on_the_majority_baseline():
    # Always "Paris". m1, m2 Paris: p2 ("an") misfits; m3 Oslo: p1 ("a") misfits.
    table = _predictions({"m1": ("Paris", ["Paris"] * 3), "m2": ("Paris", ["Paris"] * 3),
                          "m3": ("Oslo", ["Paris"] * 3)})
    got = relation_metrics(table, ARTICLES, TYPED)
    assert got["Consistency"] == pytest.approx(3 / 3)     # m1 (0,1), m2 (0,1), m3 (0,2): all agree
    assert got["Succ-Patt"] == pytest.approx(2 / 3)       # p2 keeps only m3, where Paris is wrong
    assert got["Succ-Objs"] == pytest.approx(2 / 3)       # m1, m2
    assert got["Accuracy"] == pytest.approx(2 / 3)        # unfiltered: p0 right for m1, m2
    assert got["Consistent-Acc"] == pytest.approx(2 / 3)  # unfiltered: m1, m2 right under all three
    off = relation_metrics(table, ARTICLES, TYPED, a_an_filter=False)
    assert off["Succ-Patt"] == pytest.approx(3 / 3)       # p2 is right for m1


def test_determinism_ignores_gold():
    nm = _patterns(["[X] shares border with [Y] .", "[Y] borders [X] .", "[X] borders [Y] ."], "P47")
    # Greece: Albania Albania Turkey -> (0,1) y only = 1/3; Serbia: Kosovo x3 -> 3/3; none is gold
    table = _predictions({"g": ("Greece", ["Albania", "Albania", "Turkey"]),
                          "s": ("Serbia", ["Kosovo", "Kosovo", "Kosovo"])}, "P47")
    got = determinism(table, nm, _edges({}, "P47"))
    assert got == {DETERMINISM: pytest.approx(4 / 6), "n_tuples": 2, "n_pairs": 6, "n_pairs_filtered": 0}


def test_macro_mean_and_sample_std_skip_none():
    per = {"P1": {"Accuracy": 0.2}, "P2": {"Accuracy": 0.4}, "P3": {"Accuracy": 0.9}, "P4": {"Accuracy": None},
           "P5": {"Accuracy": 0.0}}
    got = macro(per, ["P1", "P2", "P3", "P4"], keys=("Accuracy",))["Accuracy"]
    # mean (0.2 + 0.4 + 0.9) / 3 = 0.5; deviations -0.3 -0.1 0.4 -> squares sum 0.26; / (3 - 1) -> sqrt(0.13)
    assert got == {"mean": pytest.approx(0.5), "std": pytest.approx(0.13 ** 0.5), "n": 3}
    assert macro(per, ["P1", "P4"], keys=("Accuracy",))["Accuracy"] == {"mean": pytest.approx(0.2), "std": None,
                                                                       "n": 1}
    assert macro(per, ["P4"], keys=("Accuracy",))["Accuracy"] == {"mean": None, "std": None, "n": 0}


def test_evaluate_macro_averages_n1_and_reports_determinism():
    other = _predictions({"k1": ("Oslo", ["Oslo", "Oslo", "Oslo"])}, "P20")       # every metric 1
    nm = _predictions({"g": ("Greece", ["Albania", "Albania", "Turkey"])}, "P47")  # determinism 1/3
    patterns = pd.concat([PLAIN, _patterns(list(PLAIN["pattern"]), "P20"), _patterns(list(PLAIN["pattern"]), "P47")])
    edges = pd.concat([TYPED, _edges({(0, 1): (False, True, False)}, "P20")])
    got = evaluate(pd.concat([MAIN, other, nm]), patterns, edges, n1_relations=["P19", "P20"], nm_relations=["P47"])
    assert set(got["relations"]) == {"P19", "P20"}
    # Consistency: P19 5/12, P20 1 -> mean 17/24; std |1 - 5/12| / sqrt(2)
    assert got["macro"]["Consistency"] == {"mean": pytest.approx(17 / 24), "std": pytest.approx((7 / 12) / 2 ** 0.5),
                                           "n": 2}
    # lexical edges: P19 pair (0,1) 2/4, P20 pair (0,1) 1 -> mean 3/4; syntactic: P19 only (P20 has no such edge)
    assert got["macro"]["consistency_by_edge"]["lexical"]["mean"] == pytest.approx(3 / 4)
    assert got["macro"]["consistency_by_edge"]["syntactic"] == {"mean": pytest.approx(1 / 4), "std": None, "n": 1}
    assert got["determinism"]["P47"][DETERMINISM] == pytest.approx(1 / 3)
    assert got["determinism"]["macro"][DETERMINISM]["mean"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="P99"):
        evaluate(MAIN, patterns, edges, n1_relations=["P19", "P99"], nm_relations=[])


def test_a_repeated_cell_is_refused():
    with pytest.raises(ValueError):
        relation_metrics(pd.concat([MAIN, MAIN.head(1)]), PLAIN, TYPED)


def test_the_majority_baseline_predicts_each_relations_most_common_object():
    """§5.1: "a majority baseline that always predicts the most common object for a relation. By construction,
    this baseline is perfectly consistent." Scored on the model's own cells, with the a/an filter."""
    from evaluators.pararel.metrics import majority, majority_predictions

    # P19 golds Paris, Rome, Rome, Oslo (t4 has one cell only: a tuple counts once, not per cell) -> Rome;
    # P20 golds Oslo, Kiev: a tie -> Oslo, whose tuple comes first
    p19 = _predictions({"t1": ("Paris", ["Paris"] * 3), "t2": ("Rome", ["Oslo"] * 3), "t3": ("Rome", ["Kiev"] * 3),
                        "t4": ("Oslo", ["Oslo", None, None])})
    p20 = _predictions({"k1": ("Oslo", ["Kiev"] * 3), "k2": ("Kiev", ["Kiev"] * 3)}, "P20")
    table, objects = majority_predictions(pd.concat([p19, p20]))
    assert objects == {"P19": "Rome", "P20": "Oslo"}
    assert set(table[table.relation == "P19"]["prediction"]) == {"Rome"}
    patterns = pd.concat([PLAIN, _patterns(list(PLAIN["pattern"]), "P20")])
    edges = pd.concat([TYPED, _edges({(0, 1): (False, True, False)}, "P20")])
    got = majority(pd.concat([p19, p20]), patterns, edges, n1_relations=["P19", "P20"])
    assert got["relations"]["P19"]["object"] == "Rome"
    assert got["relations"]["P19"]["Accuracy"] == pytest.approx(2 / 4)        # t2, t3 under the first pattern
    assert got["relations"]["P19"]["Consistent-Acc"] == pytest.approx(2 / 4)
    assert got["relations"]["P20"]["Accuracy"] == pytest.approx(1 / 2)
    assert got["macro"]["Consistency"] == {"mean": 1.0, "std": 0.0, "n": 2}    # perfectly consistent
    assert got["macro"]["Accuracy"]["mean"] == pytest.approx((2 / 4 + 1 / 2) / 2)
    # evaluate() reports it beside the model's metrics, on the same cells
    full = evaluate(pd.concat([p19, p20]), patterns, edges, n1_relations=["P19", "P20"], nm_relations=[])
    assert full["majority"] == got
    assert full["macro"]["Accuracy"]["mean"] == pytest.approx((2 / 4 + 1 / 2) / 2)   # the model: t1, t4; k2
    assert full["macro"]["Consistent-Acc"]["mean"] == pytest.approx((2 / 4 + 1 / 2) / 2)  # t1, t4 (its one cell); k2


def test_the_majority_baseline_keeps_the_a_an_filter():
    """Table 2's majority Succ-Patt is 97.3, not 100: an "an [Y]" pattern never predicts a consonant-initial
    majority object right once the a/an filter drops its cells."""
    from evaluators.pararel.metrics import majority

    articles = _patterns(["[X] is a [Y] .", "[X] works as an [Y] .", "[X] , a [Y] ."], "P106")
    table = _predictions({"j1": ("lawyer", ["actor"] * 3), "j2": ("lawyer", ["actor"] * 3),
                          "j3": ("actor", ["actor"] * 3)}, "P106")
    edges = _edges({(0, 1): (False, True, False), (0, 2): (True, False, False), (1, 2): (True, True, False)}, "P106")
    got = majority(table, articles, edges, n1_relations=["P106"])["relations"]["P106"]
    assert got["object"] == "lawyer" and got["Accuracy"] == pytest.approx(2 / 3)
    assert got["Succ-Patt"] == pytest.approx(2 / 3)     # p1 "an [Y]" keeps only j3 (actor), where lawyer is wrong
    assert got["Consistency"] == pytest.approx(1.0)
