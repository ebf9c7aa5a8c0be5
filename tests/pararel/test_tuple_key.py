"""``pararel_eval.tuple_key``: the original (yanaiela/pararel) keys its results by subject label
(``encode_consistency_probe.py`` line 82, ``output_dic[pattern][subj] = (first_object, obj)``), so a repeated
subject's last tuple is the one its pair and success measures count, while Accuracy and Consistent-Acc walk every
row; ``subject`` reproduces that (Table 2's majority Succ-Objs 23.2, where every tuple gives 23.1)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from evaluators.pararel import metrics
from evaluators.pararel.metrics import determinism, evaluate, relation_metrics

PATTERNS = pd.DataFrame({"relation": "P19", "pattern_id": [0, 1], "pattern": ["[X] was born in [Y] .",
                                                                            "[X] is native to [Y] ."],
                         "first": [True, False]})
EDGES = pd.DataFrame([("P19", 0, 1, True, False, False), ("P19", 1, 0, True, False, False)],
                     columns=["relation", "source", "target", "syntactic_change", "lexical_change",
                              "determiner_change"])


def _table(rows, relation="P19"):
    """``[(tuple_id, subject, gold, [prediction per pattern])]`` in file order, pattern-major as evaluation writes."""
    out = [(relation, t, p, preds[p], gold, subject) for p in range(2) for t, subject, gold, preds in rows]
    return pd.DataFrame(out, columns=["relation", "tuple_id", "pattern_id", "prediction", "gold", "subject"])


# Ann is born in Paris (t1) and, later in the file, in Rome (t2): the same queries, so the same predictions.
# Bob (t3): Oslo under pattern 0, Kiev under 1, gold Oslo.
TABLE = _table([("t1", "Ann", "Paris", ["Rome", "Rome"]), ("t2", "Ann", "Rome", ["Rome", "Rome"]),
                ("t3", "Bob", "Oslo", ["Oslo", "Kiev"])])


def test_every_tuple_counts_by_default():
    got = relation_metrics(TABLE, PATTERNS, EDGES)
    assert got["Succ-Objs"] == pytest.approx(2 / 3)     # t2, t3 right somewhere; t1 never
    assert got["Consistency"] == pytest.approx(2 / 3)   # t1 y, t2 y, t3 n
    assert got["Unk-Const"] == pytest.approx(1.0)       # t1 (unknown): its one pair agrees


def test_subject_key_counts_a_repeated_subject_once_by_its_last_tuple():
    got = relation_metrics(TABLE, PATTERNS, EDGES, tuple_key="subject")
    assert metrics.keyed_tuples(TABLE, "subject") == ["t2", "t3"]   # Ann's later tuple overwrites the earlier
    assert got["Succ-Objs"] == pytest.approx(2 / 2)     # Ann (gold Rome) and Bob are both known
    assert got["Consistency"] == pytest.approx(1 / 2)   # Ann y, Bob n
    assert got["Know-Const"] == pytest.approx(1 / 2) and got["Unk-Const"] is None
    assert got["n_pairs"] == 2 and got["n_tuples"] == 3
    # Accuracy and Consistent-Acc walk every row in the original (evaluate_lama, group_score_lama_eval)
    assert got["Accuracy"] == pytest.approx(2 / 3) and got["Consistent-Acc"] == pytest.approx(1 / 3)


def test_subject_key_weighs_an_n_m_subject_once_in_determinism():
    # an N-M subject with three objects is three tuples with the same predictions
    table = _table([("t1", "Ann", "Paris", ["Rome", "Rome"]), ("t2", "Ann", "Rome", ["Rome", "Rome"]),
                    ("t3", "Ann", "Nice", ["Rome", "Rome"]), ("t4", "Bob", "Oslo", ["Oslo", "Kiev"])])
    assert determinism(table, PATTERNS, EDGES)["Determinism"] == pytest.approx(3 / 4)
    assert determinism(table, PATTERNS, EDGES, tuple_key="subject")["Determinism"] == pytest.approx(1 / 2)


def test_the_majority_baseline_is_keyed_too():
    # majority object Rome (2 of 3 tuples): by tuple t1, t3 right (2/3); by subject Ann is t2 (Paris, wrong), 1/2
    table = _table([("t1", "Ann", "Rome", ["x", "x"]), ("t2", "Ann", "Paris", ["x", "x"]),
                    ("t3", "Bob", "Rome", ["x", "x"])])
    by = {key: evaluate(table, PATTERNS, EDGES, n1_relations=["P19"], nm_relations=[], tuple_key=key)
          ["majority"]["relations"]["P19"]["Succ-Objs"] for key in ("tuple", "subject")}
    assert by == {"tuple": pytest.approx(2 / 3), "subject": pytest.approx(1 / 2)}


def test_subject_key_needs_subjects_and_a_known_key():
    with pytest.raises(ValueError, match="subject column"):
        relation_metrics(TABLE.drop(columns="subject"), PATTERNS, EDGES, tuple_key="subject")
    with pytest.raises(ValueError, match="tuple_key"):
        relation_metrics(TABLE, PATTERNS, EDGES, tuple_key="label")


def test_evaluation_passes_the_subjects_and_records_the_key(tiny_roberta, tmp_path):
    """``evaluate.run`` reads each tuple's subject from the cloze set; metrics.json records ``tuple_key`` when it is
    ``subject``; a subject asked twice is one tuple's pairs, not two."""
    from evaluators.engine.models import load_lm
    from evaluators.pararel import evaluate as ev
    from probekit.data.cloze import read_cloze_set
    from probekit.tokens.refs import ModelRef

    from helpers import write_toy_cloze_set

    relation = (["[X] is [Y] .", "[X] was [Y] ."], [("Ann", "older"), ("Ann", "younger"), ("Bob", "older")])
    data = read_cloze_set(write_toy_cloze_set(tmp_path / "set", {"P1": relation},
                                              {"params": {"object_token": "leading_space"}}))
    loaded = load_lm(ModelRef(str(tiny_roberta), str(tiny_roberta), str(tiny_roberta)), scoring="auto")
    got = {key: ev.run(loaded, data, tmp_path / key, relations=["P1"], tuple_key=key, progress=False)
           for key in ("tuple", "subject")}
    assert "tuple_key" not in got["tuple"] and got["subject"]["tuple_key"] == "subject"
    assert [got[key]["relations"]["P1"]["n_pairs"] for key in ("tuple", "subject")] == [3, 2]


def test_the_paper_profile_keys_by_subject_as_the_original(tmp_path):
    from evaluators.shared.params import ParaRelEvalParams
    from helpers import profile_section

    got = {profile: profile_section(tmp_path, profile, "pararel_eval", ParaRelEvalParams).tuple_key
           for profile in ("smoke", "paper")}
    assert got == {"smoke": "tuple", "paper": "subject"}


def test_subject_keying_gives_table_2s_majority_row_on_the_papers_tuples(source_tables):
    """On the paper's 26,813 tuples the majority baseline keyed by subject, as the original, is Table 2's row
    exactly, Succ-Objs 23.2±21.0 included (every tuple counted gives 23.1: tests/pararel/test_pararel.py)."""
    import generators.pararel.generator as gen
    from evaluators.pararel import report as pararel_report
    from probekit.params import ParamsFile

    rows, _ = gen.build(ParamsFile(None, {"pararel": {"tokenizers": []}}), {"pararel": source_tables("pararel")})
    assert len(rows["tuples"]) == 26813
    n1 = [r["relation"] for r in rows["relations"] if r["class"] == "N-1"]
    patterns = pd.DataFrame(rows["patterns"])[["relation", "pattern_id", "pattern", "first"]]
    by_relation = patterns.groupby("relation")["pattern_id"].apply(list).to_dict()
    cells = pd.DataFrame([(t["relation"], t["tuple_id"], p, t["object"], t["object"], t["subject"])
                          for t in rows["tuples"] if t["relation"] in n1 for p in by_relation[t["relation"]]],
                         columns=["relation", "tuple_id", "pattern_id", "prediction", "gold", "subject"])
    edges = pd.DataFrame(rows["edges"])[["relation", "source", "target", *metrics.EDGE_FLAGS]]
    got = metrics.majority(cells, patterns, edges, n1_relations=n1, tuple_key="subject")["macro"]
    published = yaml.safe_load(pararel_report.PUBLISHED.read_text(encoding="utf-8"))["models"]["majority"]
    for key in ("Succ-Patt", "Succ-Objs", "Unk-Const", "Know-Const"):
        assert [round(100 * got[key]["mean"], 1), round(100 * got[key]["std"], 1)] == published[key], key
