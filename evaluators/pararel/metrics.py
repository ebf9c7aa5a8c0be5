"""ParaRel's knowledge and consistency metrics (Elazar et al. 2021, papers/002, §5.2 and §6), from predictions.

Inputs: ``predictions`` (relation, tuple_id, pattern_id, prediction, gold), ``patterns`` (relation,
pattern_id, pattern, first) and ``edges`` (relation, source, target, syntactic_change, lexical_change,
determiner_change). A cell is one (tuple, pattern) prediction. A tuple is scored on the patterns it has
cells for: its pairs are all unordered pairs of those patterns (the paper's n(n−1)/2); a missing cell is
neither right nor wrong. Pair counts are pooled over a relation's tuples, then relations are macro-averaged.

Where this departs from the original (github yanaiela/pararel, pararel/consistency/encode_consistency_probe.py,
``analyze_results``), it follows the paper: tuples are keyed by ``tuple_id`` (the original keys by subject
label and silently keeps only the last of a repeated subject: ``tuple_key="subject"`` does that); each unordered pair counts once (the original
walks both directed edges, so every pair twice: same ratios); undefined values are ``None`` (the original logs
0 for Know-/Unk-Const and -1 for the others); pairs are all pattern pairs, typed by ``edges`` where an edge
exists (the original scores only pairs joined by an edge: the same on ParaRel, whose graphs are complete).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from probekit.errors import shown

METRICS = ("Accuracy", "Consistency", "Consistent-Acc", "Succ-Patt", "Succ-Objs", "Know-Const", "Unk-Const")
EDGE_TYPES = ("syntactic", "lexical", "both", "none")
"""Pair types of §6.3 / Table 5, as ``analyze_results`` assigns them: syntactic change only, lexical change
only, both, no change. An edge with ``determiner_change`` set (alone or with others) has no type: it counts in
Consistency but in no entry of ``consistency_by_edge``; "none" means no change of any of the three flags."""
DETERMINISM = "Determinism"
EDGE_FLAGS = ("syntactic_change", "lexical_change", "determiner_change")
_VOWELS = tuple("aeiou")


def _article(pattern: str) -> str:
    """The lower-cased word right before ``[Y]`` (words split on single spaces); "" when ``[Y]`` opens it."""
    words = pattern.split(" ")
    at = [k for k, word in enumerate(words) if "[Y]" in word]
    if len(at) != 1:
        raise ValueError(f"a pattern needs exactly one [Y]: {shown(pattern)}")
    return words[at[0] - 1].lower() if at[0] else ""


def _misfit(article, vowel):
    """True where "a" precedes a vowel-initial object or "an" a consonant-initial one (elementwise)."""
    vowel = np.asarray(vowel)
    return ((article == "a") & vowel) | ((article == "an") & ~vowel)


def a_an_fits(pattern: str, obj: str) -> bool:
    """The original's a/an rule (``filter_a_an_vowel_mismatch``, negated): False when the word before ``[Y]``
    is "a" and ``obj`` starts with a vowel letter (a, e, i, o, u, any case), or is "an" and ``obj`` does not;
    True otherwise, also when ``[Y]`` opens the pattern. By letter, not sound: "an hour" is a misfit, as there.
    Two differences: "A"/"An" count too (the original compares case-sensitively; no ParaRel pattern has a
    capital article before ``[Y]``), and the rule sees the plain gold label (the original gets RoBERTa's
    " "-prefixed and ALBERT's "▁"-prefixed label, which never starts with a vowel: for those models it dropped
    every "an [Y]" cell and kept every "a [Y]" one)."""
    return not _misfit(_article(pattern), obj.lower().startswith(_VOWELS))


def original_a_an_labels(golds, model_type: str, tokenize) -> dict[str, str]:
    """The string the original's a/an rule reads for each gold object of a ``model_type`` model
    (``pararel/consistency/lm_pipeline.py`` lines 82-89): RoBERTa's ``' ' + obj``, ALBERT's ``tokenize(obj)[0]``
    (its "▁"-marked first piece), any other model's plain label. The first two never start with a vowel letter, so
    with them the rule drops every "an [Y]" cell and keeps every "a [Y]" one (``pararel_eval.a_an_label:
    model_token``)."""
    if model_type == "roberta":
        return {g: " " + g for g in golds}
    if model_type == "albert":
        return {g: (tokenize(g) or [g])[0] for g in golds}
    return {g: g for g in golds}


def _ratio(num, den) -> float | None:
    return float(num / den) if den else None


def _cells(predictions: pd.DataFrame, patterns: pd.DataFrame, edges: pd.DataFrame, a_an_filter: bool,
           a_an_label: Mapping[str, str] | None = None, tuple_key: str = "tuple") -> dict:
    """One relation as tuples × patterns arrays, plus every unordered pattern pair ``(i, j)`` and its type;
    ``keyed``: the tuples the subject-keyed measures count (:func:`keyed_tuples`)."""
    relations = predictions["relation"].unique()
    if len(relations) != 1:
        raise ValueError(f"relation_metrics takes one relation's predictions, got {list(relations)}")
    if predictions[["prediction", "gold"]].isna().any(axis=None):
        raise ValueError("predictions and gold objects must be strings, not missing")
    if (predictions.groupby("tuple_id")["gold"].nunique() > 1).any():
        raise ValueError("a tuple_id has several gold objects")
    labels = pd.Index(pd.unique(np.concatenate([predictions["prediction"], predictions["gold"]])))
    coded = predictions.assign(code=labels.get_indexer(predictions["prediction"]))
    wide = coded.pivot(index="tuple_id", columns="pattern_id", values="code")  # raises on a repeated cell
    codes = wide.fillna(-1).to_numpy(int)
    gold = predictions.drop_duplicates("tuple_id").set_index("tuple_id")["gold"].reindex(wide.index)
    rel_patterns = patterns[patterns["relation"] == relations[0]].set_index("pattern_id")
    if not wide.columns.isin(rel_patterns.index).all():
        raise ValueError(f"{relations[0]}: predictions name patterns missing from the patterns table")
    present = codes >= 0
    correct = codes == labels.get_indexer(gold)[:, None]
    valid = present.copy()
    if a_an_filter:
        articles = np.array([_article(p) for p in rel_patterns.loc[wide.columns, "pattern"]])
        read = gold if a_an_label is None else gold.map(lambda g: a_an_label.get(g, g))
        vowel = read.str.lower().str.startswith(_VOWELS).to_numpy()[:, None]
        valid &= ~_misfit(articles[None, :], vowel)
    i, j = np.triu_indices(len(wide.columns), 1)
    first = rel_patterns.index[rel_patterns["first"].astype(bool)]
    return {"codes": codes, "present": present, "correct": correct, "valid": valid, "i": i, "j": j,
            "first": [wide.columns.get_loc(p) for p in first if p in wide.columns],
            "types": _pair_types(edges[edges["relation"] == relations[0]], wide.columns, i, j),
            "keyed": wide.index.isin(keyed_tuples(predictions, tuple_key))}


TUPLE_KEYS = ("tuple", "subject")


def keyed_tuples(predictions: pd.DataFrame, tuple_key: str = "tuple") -> list:
    """The tuple ids the pair metrics, Succ-Patt, Succ-Objs, Know-/Unk-Const and Determinism count: every tuple
    (``tuple``, the paper's "for all its KB tuples"), or (``subject``) one per subject, the last in the
    predictions' order (the cloze set's file order), as the original: ``parse_lm_results`` stores
    ``output_dic[pattern][subj] = (first_object, obj)`` (``encode_consistency_probe.py`` line 82), so a repeated
    subject's later tuple overwrites the earlier, and ``analyze_results`` walks that dict. Needs a ``subject``
    column."""
    ids = predictions.drop_duplicates("tuple_id")
    if tuple_key == "tuple":
        return ids["tuple_id"].tolist()
    if tuple_key != "subject":
        raise ValueError(f"tuple_key must be one of {TUPLE_KEYS}, got {tuple_key!r}")
    if "subject" not in predictions:
        raise ValueError("tuple_key 'subject' needs the predictions' subject column")
    return ids.drop_duplicates("subject", keep="last")["tuple_id"].tolist()


def _pair_types(edges: pd.DataFrame, ids: pd.Index, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Index into EDGE_TYPES of each pair ``(ids[i], ids[j])``; -1 for a determiner change or no edge."""
    syn, lex, det = (edges[flag].astype(bool).to_numpy() for flag in EDGE_FLAGS)
    kind = np.where(det, -1, np.select([syn & ~lex, lex & ~syn, syn & lex], [0, 1, 2], 3))
    src, tgt = ids.get_indexer(edges["source"]), ids.get_indexer(edges["target"])
    keyed = pd.DataFrame({"lo": np.minimum(src, tgt), "hi": np.maximum(src, tgt), "kind": kind})
    keyed = keyed[(src >= 0) & (tgt >= 0) & (src != tgt)].drop_duplicates()
    if keyed.duplicated(["lo", "hi"]).any():
        raise ValueError("the two directions of an edge carry different change flags")
    table = np.full((len(ids), len(ids)), -1)
    table[keyed["lo"].to_numpy(), keyed["hi"].to_numpy()] = keyed["kind"].to_numpy()
    return table[i, j]


def _pairs(cells: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """Tuples × pairs masks: pairs scored (both cells valid) and agreeing; and pairs dropped by the filter."""
    codes, valid, present, i, j = (cells[k] for k in ("codes", "valid", "present", "i", "j"))
    keyed = cells["keyed"][:, None]
    scored = valid[:, i] & valid[:, j] & keyed
    dropped = int((present[:, i] & present[:, j] & keyed).sum() - scored.sum())
    return scored, scored & (codes[:, i] == codes[:, j]), dropped


def relation_metrics(predictions: pd.DataFrame, patterns: pd.DataFrame, edges: pd.DataFrame, *,
                     a_an_filter: bool = True, a_an_label: Mapping[str, str] | None = None,
                     tuple_key: str = "tuple") -> dict:
    """One relation's METRICS (fractions, or None where the denominator is empty), ``consistency_by_edge``
    and counts (``n_pairs`` = pairs scored, ``n_pairs_filtered`` = pairs the a/an filter dropped).

    Paper §5.2: Accuracy = acc@1 of the first (LAMA) pattern over the tuples it has a cell for; Consistency =
    share of agreeing pairs over all tuples' pairs; Consistent-Acc = share of tuples all of whose cells are
    right. §6.1: Succ-Patt = share of patterns right for at least one tuple; Succ-Objs = share of tuples right
    under at least one pattern ("known"); Know-/Unk-Const = Consistency over known / other tuples' pairs.

    ``a_an_filter`` (on by default, as the original) drops cells whose pattern's a/an misfits the gold object
    (:func:`a_an_fits`) from the pair metrics, Succ-Patt and Succ-Objs (and so the known split), whose
    denominators are the patterns / tuples with at least one kept cell; as in the original (``evaluate_lama``,
    ``group_score_lama_eval``) and the paper, Accuracy and Consistent-Acc use every cell. ``a_an_label``: the string
    the rule reads for each gold object (:func:`original_a_an_labels`; None: the gold label itself).
    ``tuple_key`` (:func:`keyed_tuples`): ``subject`` counts one tuple per subject, its last, in every measure but
    Accuracy and Consistent-Acc, which the original computes over every row (``evaluate_lama``,
    ``group_score_lama_eval``); ``n_tuples`` still counts every tuple.
    """
    cells = _cells(predictions, patterns, edges, a_an_filter, a_an_label, tuple_key)
    present, correct, first = cells["present"], cells["correct"], cells["first"]
    valid = cells["valid"] & cells["keyed"][:, None]
    scored, agree, dropped = _pairs(cells)
    hit = correct & valid
    known = hit.any(axis=1)
    has_cell, has_valid, col_valid = present.any(axis=1), valid.any(axis=1), valid.any(axis=0)
    by_edge = {name: _ratio(agree[:, cells["types"] == k].sum(), scored[:, cells["types"] == k].sum())
               for k, name in enumerate(EDGE_TYPES)}
    return {
        "Accuracy": _ratio(correct[:, first].sum(), present[:, first].sum()) if first else None,
        "Consistency": _ratio(agree.sum(), scored.sum()),
        "Consistent-Acc": _ratio((correct | ~present).all(axis=1)[has_cell].sum(), has_cell.sum()),
        "Succ-Patt": _ratio(hit.any(axis=0)[col_valid].sum(), col_valid.sum()),
        "Succ-Objs": _ratio(known[has_valid].sum(), has_valid.sum()),
        "Know-Const": _ratio(agree[known].sum(), scored[known].sum()),
        "Unk-Const": _ratio(agree[~known].sum(), scored[~known].sum()),
        "consistency_by_edge": by_edge,
        "n_tuples": len(present), "n_patterns": present.shape[1],
        "n_pairs": int(scored.sum()), "n_pairs_filtered": dropped,
    }


def determinism(predictions: pd.DataFrame, patterns: pd.DataFrame, edges: pd.DataFrame, *,
                a_an_filter: bool = True, a_an_label: Mapping[str, str] | None = None,
                tuple_key: str = "tuple") -> dict:
    """Determinism of an N-M relation (§3.1, §6.2): Consistency's measure, the share of pattern pairs that
    agree whatever the gold object, since different answers may both be right. The a/an filter still uses the
    tuple's gold object, as the original (the same script runs on N-M relations). A subject with k objects is
    k tuples with the same predictions, so it weighs k times (the original kept one of them: ``tuple_key``
    ``subject``, :func:`keyed_tuples`)."""
    scored, agree, dropped = _pairs(_cells(predictions, patterns, edges, a_an_filter, a_an_label, tuple_key))
    return {DETERMINISM: _ratio(agree.sum(), scored.sum()), "n_tuples": len(scored),
            "n_pairs": int(scored.sum()), "n_pairs_filtered": dropped}


def macro(per_relation: Mapping[str, dict], relations: Sequence[str], keys: Sequence[str] = METRICS) -> dict:
    """``{key: {mean, std, n}}`` over ``relations`` (macro average, §5.2), skipping None; n = relations with a
    value. std is the sample std (ddof 1; None below 2 values): the repository holds no aggregation code, but
    ddof 1 reproduces the majority baseline's Succ-Patt 97.3±7.3 of Table 2 (ddof 0 gives ±7.2)."""
    out = {}
    for key in keys:
        values = np.array([v for v in (per_relation[r][key] for r in relations) if v is not None], float)
        out[key] = {"mean": float(values.mean()) if len(values) else None,
                    "std": float(values.std(ddof=1)) if len(values) > 1 else None, "n": len(values)}
    return out


def constant_relations(predictions: pd.DataFrame) -> dict[str, str]:
    """``{relation: object}`` of every relation whose queries scored (every pattern of every tuple, two at least)
    all got one and the same prediction: a **constant predictor** there, whose Consistency (Determinism) is 1
    by construction and whose Accuracy is that object's share of the gold objects, as CALUM's report flags a model
    that predicts one label for every example (:mod:`evaluators.calum.metrics`)."""
    counts = predictions.groupby("relation", sort=False)["prediction"].agg(["nunique", "size", "first"])
    return {str(rel): str(row["first"]) for rel, row in counts.iterrows() if row["nunique"] == 1 and row["size"] > 1}


def majority_predictions(predictions: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """The majority baseline on the same cells, and its object per relation. §5.1: "We also report a majority
    baseline that always predicts the most common object for a relation. By construction, this baseline is
    perfectly consistent." The most common gold object over the relation's tuples scored (a tuple counts once,
    whatever its number of cells); a tie goes to the object whose first tuple comes first."""
    from collections import Counter

    tuples = predictions.drop_duplicates(["relation", "tuple_id"])
    objects = {rel: Counter(group["gold"]).most_common(1)[0][0]
               for rel, group in tuples.groupby("relation", sort=False)}
    return predictions.assign(prediction=predictions["relation"].map(objects)), objects


def majority(predictions: pd.DataFrame, patterns: pd.DataFrame, edges: pd.DataFrame, *,
             n1_relations: Sequence[str], a_an_filter: bool = True, a_an_label: Mapping[str, str] | None = None,
             tuple_key: str = "tuple") -> dict:
    """The majority baseline's METRICS per N-1 relation (with its ``object``) and macro-averaged, scored by
    :func:`relation_metrics` as any model (so the a/an filter leaves it Succ-Patt below 100%, as Table 2's
    97.3; with ``tuple_key: subject`` its Succ-Objs is Table 2's 23.2, where every tuple counted gives 23.1)."""
    table, objects = majority_predictions(predictions[predictions["relation"].isin(n1_relations)])
    groups = dict(tuple(table.groupby("relation", sort=False)))
    rel = {r: {**{k: v for k, v in relation_metrics(groups[r], patterns, edges, a_an_filter=a_an_filter,
                                                                 a_an_label=a_an_label, tuple_key=tuple_key).items()
                  if k in METRICS}, "object": objects[r]} for r in n1_relations}
    return {"relations": rel, "macro": macro(rel, n1_relations)}


def evaluate(predictions: pd.DataFrame, patterns: pd.DataFrame, edges: pd.DataFrame, *,
             n1_relations: Sequence[str], nm_relations: Sequence[str], a_an_filter: bool = True,
             a_an_label: Mapping[str, str] | None = None, tuple_key: str = "tuple") -> dict:
    """Metrics of each N-1 relation with their macro average (METRICS and ``consistency_by_edge``), the
    determinism of each N-M relation with its macro average, and the majority baseline on the same N-1 cells
    (:func:`majority`). Other relations' predictions are ignored."""
    groups = dict(tuple(predictions.groupby("relation", sort=False)))
    missing = [r for r in (*n1_relations, *nm_relations) if r not in groups]
    if missing:
        raise ValueError(f"no predictions for relations {missing}")
    rule = {"a_an_filter": a_an_filter, "a_an_label": a_an_label, "tuple_key": tuple_key}
    rel = {r: relation_metrics(groups[r], patterns, edges, **rule) for r in n1_relations}
    det = {r: determinism(groups[r], patterns, edges, **rule) for r in nm_relations}
    by_edge = {r: m["consistency_by_edge"] for r, m in rel.items()}
    return {"relations": rel,
            "macro": {**macro(rel, n1_relations), "consistency_by_edge": macro(by_edge, n1_relations, EDGE_TYPES)},
            "determinism": {**det, "macro": macro(det, nm_relations, (DETERMINISM,))},
            "majority": majority(predictions, patterns, edges, n1_relations=n1_relations, **rule)}
