"""The ParaRel protocols, each declared on its run (:mod:`evaluators.protocols`), as :func:`evaluators.evaluate` runs
them: the evaluation (any family) and §8's consistency training (a masked LM). Each reads its params sections, its
call's options over them (:meth:`evaluators.protocols.Protocol.settings`), checks its inputs and output folder
before any work, writes the skipped ``metrics.json`` for a model it does not apply to, and returns one
:class:`evaluators.shared.calls.Run`."""

from __future__ import annotations

from pathlib import Path

from evaluators.pararel.params import ConsistencyParams
from evaluators import protocols
from evaluators.protocols import protocol
from evaluators.shared.calls import Run, params_file
from evaluators.shared.params import ParaRelEvalParams, ScoringParams
from probekit.device import resolve_device
from probekit.outputs.paths import out_folder


@protocol("pararel", title="ParaRel evaluation", paper="pararel",
          reads={"scoring": ScoringParams, "pararel_eval": ParaRelEvalParams}, profiled=True,
          options={"relations": "pararel_eval.relations", "limit": "pararel_eval.limit", "top_k": "pararel_eval.top_k",
                   "a_an_filter": "pararel_eval.a_an_filter", "scoring": "scoring.family",
                   "batch_size": "scoring.batch_size", "dtype": "scoring.dtype"},
          stages=("pararel_report",), limits=("pararel_eval.limit",), results=("results/pararel",))
def pararel(model: str, data, out, *, params=None, device: str = "auto", force: bool = False,
            rule: str | None = None, **options) -> list[Run]:
    """Every (pattern, tuple) query of a cloze set (``data``) scored over its relation's candidates; Accuracy,
    Consistency, Consistent-Acc... per relation and macro-averaged. ``options``: the record's (``relations``: only
    these, P19, ...; ``limit``, ``top_k``...)."""
    out_folder(out, "predictions.jsonl and metrics.json are written inside it", kind="results", force=force)
    from probekit.data.cloze import read_cloze_set

    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    sections = protocols.get("pararel").settings(params, **{**options, "relations": options.get("relations") or None})
    sp, pp = sections["scoring"], sections["pararel_eval"]
    cloze = read_cloze_set(data)
    relations = pp.relations
    for rel in relations or ():
        cloze.relation(rel)
    from evaluators.engine.kept_models import scoring_lm
    from probekit.tokens.refs import resolve_model

    ref = resolve_model(model, params.models(), params.label)
    from evaluators.shared import applies

    device = resolve_device(device)
    if applies.skip("pararel", ref, device, [Path(out)], params):
        return []
    from evaluators.pararel import evaluate

    loaded = scoring_lm(ref, scoring=sp.family, device=device, seed=sp.seed, dtype=sp.dtype)
    m = evaluate.run(loaded, cloze, Path(out), relations=relations, limit=pp.limit, top_k=pp.top_k,
                     a_an_filter=pp.a_an_filter, a_an_label=pp.a_an_label, tuple_key=pp.tuple_key, rule=rule or getattr(sp.rules, loaded.family),
                     batch_size=sp.batch_size, profile=profile)
    return [Run(Path(out), Path(data), m)]


@protocol("consistency", title="consistency training", families=("mlm",), paper="consistency",
          reported="pararel", reads={"scoring": ScoringParams, "consistency": ConsistencyParams}, profiled=True,
          options={"eval_relations": "consistency.test_relations", "ablation": "consistency.ablation"},
          limits=("consistency.limit", "consistency.eval_limit"), results=("results/consistency",))
def consistency(model: str, data, out, *, params=None, device: str = "auto", force: bool = False,
                **options) -> list[Run]:
    """ParaRel §8: continued MLM pretraining with the consistency loss on the params' relations, ParaRel before
    and after; ``options``: ``eval_relations``, the test relations (default: the params' ``test_relations``, else
    every N-1 relation left); ``ablation``: one of Table 7's (``-typed``...), applied over the params."""
    out_folder(out, "metrics.json, history.jsonl and the trained model are written inside it", kind="results",
               force=force)
    from evaluators.engine.models import load_lm
    from evaluators.pararel.consistency_training import run
    from probekit.data.cloze import read_cloze_set
    from probekit.tokens.refs import resolve_model

    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    sections = protocols.get("consistency").settings(params, **options)
    sp, cp = sections["scoring"], sections["consistency"]
    cloze = read_cloze_set(data)
    cp.split(cloze)  # an unknown or overlapping relation fails before any work
    ref = resolve_model(model, params.models(), params.label)
    from evaluators.shared import applies

    device = resolve_device(device)
    if applies.skip("consistency", ref, device, [Path(out)], params):
        return []
    loaded = load_lm(ref, scoring="mlm", device=device, seed=sp.seed, dtype="float32")
    m = run(loaded, cloze, Path(out), cp, device=device, profile=profile)
    return [Run(Path(out), Path(data), m)]
