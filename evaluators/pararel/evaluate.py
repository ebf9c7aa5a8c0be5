"""ParaRel evaluation: every (pattern, tuple) query of each relation scored over the relation's candidate
set on the scoring engine (any family), then ParaRel's metrics (``pararel_metrics.py``).

A masked LM scores a candidate by its logit at the mask (the candidate-restricted prediction of the paper), its
token read by the rule the cloze set was filtered by (its ``params.object_token``, :func:`object_rule`):
``leading_space``, as the original ``encode_consistency_probe.py``, the object alone after a space (RoBERTa's
``Ġobj`` also where ``[Y]`` opens the pattern), or ``in_context``, where ``[Y]`` stands. A candidate that is not
one token for this model is dropped for it, with the tuples whose object it is, and recorded: the cloze set was
filtered for the tokenizers of its params, not necessarily this one.
Two candidates sharing their token (an uncased vocabulary) keep the first in the relation's order. The
other rules (PLL, causal and seq2seq log-likelihoods) score multi-token objects as they are. A tie goes to
the first candidate in the relation's order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from evaluators.engine.models import LoadedModel
from evaluators.engine.scorer import Engine
from evaluators.pararel import metrics as pararel_metrics
from probekit.outputs import atomic
from probekit.data.cloze import ClozeSet, Queries, queries
from probekit.errors import shown
from probekit.tokens.one_token import object_tokens

NOT_ONE_TOKEN = {"leading_space": "not one token after a space", "in_context": "not one token in every pattern"}


def object_rule(data: ClozeSet) -> str:
    """How the cloze set read its objects' one token (``params.object_token`` in its meta.json); a set written
    before the rule was recorded read them in context."""
    return (data.meta.get("params") or {}).get("object_token", "in_context")


def candidates_for(engine: Engine, data: ClozeSet,
                   relation: str) -> tuple[tuple[str, ...], dict[str, str], dict[str, int] | None]:
    """The relation's candidates this model can score, why each other one was dropped, and (``leading_space``)
    the kept candidates' token ids at the mask (None: the engine reads them in context)."""
    candidates = list(data.relation(relation)["candidates"])
    if engine.scoring.rule != "mask-logit":
        return tuple(candidates), {}, None
    rule = object_rule(data)
    patterns = [p["pattern"] for p in data.patterns if p["relation"] == relation]
    subject = next((t["subject"] for t in data.tuples if t["relation"] == relation), "X")
    single = object_tokens(rule, engine.tokenizer, patterns, subject, candidates)
    dropped = {c: NOT_ONE_TOKEN[rule] for c in candidates if c not in single}
    kept, seen = [], {}
    for c in (c for c in candidates if c in single):
        token = single[c]
        if token in seen:
            dropped[c] = f"same token as {shown(seen[token])}"
        else:
            seen[token] = c
            kept.append(c)
    return tuple(kept), dropped, ({c: single[c] for c in kept} if rule == "leading_space" else None)


def scorable(q: Queries, candidates: tuple[str, ...],
             token_ids: dict[str, int] | None = None) -> tuple[Queries, int]:
    """The queries whose gold object is among ``candidates`` (over those candidates, their ``token_ids`` if
    given), and how many tuples were left out."""
    keep = set(candidates)
    rows = [i for i, g in enumerate(q.gold) if g in keep]
    lost = len({t for t, g in zip(q.tuple_ids, q.gold) if g not in keep})
    pick = (lambda column: [column[i] for i in rows])
    return Queries(q.relation, pick(q.stems), candidates, pick(q.ids), pick(q.tuple_ids), pick(q.pattern_ids),
                   pick(q.gold), token_ids), lost


def score_relation(engine: Engine, q: Queries, top_k: int) -> list[dict]:
    """Prediction rows of one relation's queries (input order), each with its ``top_k`` candidates."""
    scores = engine.scores(q.stems, [q.candidates] * len(q.stems), q.ids, token_ids=q.token_ids)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]  # stable: a tie goes to the first candidate
    top = np.take_along_axis(scores, order, axis=1)
    rows = []
    for i, (ranked, values) in enumerate(zip(order.tolist(), top.tolist())):
        prediction = q.candidates[ranked[0]]
        rows.append({"relation": q.relation, "tuple_id": q.tuple_ids[i], "pattern_id": q.pattern_ids[i],
                     "prediction": prediction, "gold": q.gold[i], "correct": prediction == q.gold[i],
                     "top_k": [[q.candidates[c], round(float(v), 6)] for c, v in zip(ranked, values)]})
    return rows


def evaluate(engine: Engine, data: ClozeSet, relations: Sequence[str], *, limit: int | None = None,
             top_k: int = 5, a_an_filter: bool = True, a_an_label: str = "gold", tuple_key: str = "tuple",
             progress: bool = True) -> tuple[list[dict], dict]:
    """Predictions of every query of ``relations`` and the metrics: per relation, macro over the N-1
    relations evaluated, determinism over the N-M ones. ``a_an_label``: what the a/an filter reads, the ``gold``
    label or, as the original, the ``model_token`` (:func:`pararel_metrics.original_a_an_labels`). ``tuple_key``:
    ``subject`` counts one tuple per subject in the pair and success measures, as the original
    (:func:`pararel_metrics.keyed_tuples`). A relation left with no query this model can score is listed under
    ``unscored``, not averaged."""
    import pandas as pd

    predictions, dropped, scored = [], {}, []
    for rel in tqdm(relations, desc="relations", unit="relation", disable=not progress):
        candidates, why, token_ids = candidates_for(engine, data, rel)
        q, lost = scorable(queries(data, rel, limit), candidates, token_ids)
        dropped[rel] = {"candidates": len(candidates), "dropped_objects": why, "dropped_tuples": lost}
        if q.stems:
            predictions += score_relation(engine, q, top_k)
            scored.append(rel)
    classes = {r["relation"]: r["class"] for r in data.relations}
    table = pd.DataFrame(predictions, columns=["relation", "tuple_id", "pattern_id", "prediction", "gold"])
    subjects = {(t["relation"], t["tuple_id"]): t["subject"] for t in data.tuples}
    table["subject"] = [subjects[key] for key in zip(table["relation"], table["tuple_id"])]
    patterns = pd.DataFrame([p for p in data.patterns if p["relation"] in scored],
                            columns=["relation", "pattern_id", "pattern", "first"])
    edges = pd.DataFrame([e for e in data.edges if e["relation"] in scored],
                         columns=["relation", "source", "target", *pararel_metrics.EDGE_FLAGS])
    labels = None if a_an_label == "gold" else pararel_metrics.original_a_an_labels(
        table["gold"].unique(), getattr(engine.runner.model.config, "model_type", ""), engine.tokenizer.tokenize)
    metrics = pararel_metrics.evaluate(table, patterns, edges, a_an_filter=a_an_filter, a_an_label=labels,
                                       tuple_key=tuple_key,
                                       n1_relations=[r for r in scored if classes[r] == "N-1"],
                                       nm_relations=[r for r in scored if classes[r] == "N-M"])
    for rel in scored:
        target = metrics["determinism"] if classes[rel] == "N-M" else metrics["relations"]
        target[rel] |= {"class": classes[rel], "queries": int((table.relation == rel).sum()), **dropped[rel]}
    metrics["unscored"] = {rel: {"class": classes[rel], **dropped[rel]} for rel in relations if rel not in scored}
    metrics["constant_predictor"] = {"relations": pararel_metrics.constant_relations(table), "of": len(scored)}
    return predictions, metrics


def run(loaded: LoadedModel, data: ClozeSet, out: Path, *, relations: Sequence[str] | None = None,
        limit: int | None = None, top_k: int = 5, a_an_filter: bool = True, a_an_label: str = "gold",
        tuple_key: str = "tuple", rule: str | None = None,
        batch_size: int | str = "auto", progress: bool = True, profile: str | None = None) -> dict:
    """Evaluate and write ``predictions.jsonl`` and ``metrics.json`` under ``out`` (atomically); ``profile``: the
    params file's profile (``smoke``, ``paper``), recorded in metrics.json."""
    engine = Engine(loaded.model, loaded.tokenizer, loaded.family, rule=rule, batch_size=batch_size)
    relations = list(relations or [r["relation"] for r in data.relations])
    for rel in relations:
        data.relation(rel)  # an unknown relation fails before any scoring
    predictions, metrics = evaluate(engine, data, relations, limit=limit, top_k=top_k, a_an_filter=a_an_filter,
                                    a_an_label=a_an_label, tuple_key=tuple_key, progress=progress)
    metrics |= {"model": loaded.name, "model_id": loaded.model_id,
                "lm_head": "pretrained" if loaded.head_pretrained else "newly_initialised",
                "zero_shot": loaded.head_pretrained, "data": str(data.folder),
                "data_fingerprint": data.meta["fingerprint"], "relations_evaluated": relations, "limit": limit,
                "a_an_filter": a_an_filter, **({"a_an_label": a_an_label} if a_an_label != "gold" else {}),
                **({"tuple_key": tuple_key} if tuple_key != "tuple" else {}),
                "object_token": object_rule(data), "top_k": top_k,
                "queries": len(predictions),
                **engine.scoring.record(), **loaded.provenance(), "profile": profile}
    with atomic.atomic_path(Path(out), kind="results") as tmp:
        atomic.write_jsonl(tmp / "predictions.jsonl", predictions)
        atomic.write_json(tmp / "metrics.json", metrics)
    return metrics
