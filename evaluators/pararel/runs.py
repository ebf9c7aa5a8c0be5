"""The ParaRel protocols as :func:`evaluators.shared.api.evaluate` runs them: the evaluation (any family) and §8's
consistency training (a masked LM). Each reads its params sections, checks its inputs and output folder before any
work, writes the skipped ``metrics.json`` for a model it does not apply to, and returns one
:class:`evaluators.shared.api.Run`."""

from __future__ import annotations

from pathlib import Path

from evaluators.shared.api import Run, params_file
from probekit.device import resolve_device
from probekit.outputs.paths import out_folder
from probekit.params import section


def pararel(model: str, data, out, *, params=None, device: str = "auto", force: bool = False, relations=None,
            limit: int | None = None, top_k: int | None = None, a_an_filter: bool | None = None,
            scoring: str | None = None, rule: str | None = None, batch_size=None,
            dtype: str | None = None) -> list[Run]:
    """Every (pattern, tuple) query of a cloze set (``data``) scored over its relation's candidates; Accuracy,
    Consistency, Consistent-Acc... per relation and macro-averaged. ``relations``: only these (P19, ...)."""
    out_folder(out, "predictions.jsonl and metrics.json are written inside it", kind="results", force=force)
    from evaluators.shared.params import ParaRelEvalParams, ScoringParams
    from probekit.data.cloze import read_cloze_set

    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    sp, pp = section(params, "scoring", ScoringParams), section(params, "pararel_eval", ParaRelEvalParams)
    cloze = read_cloze_set(data)
    relations = relations or pp.relations
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

    loaded = scoring_lm(ref, scoring=scoring or sp.family, device=device, seed=sp.seed, dtype=dtype or sp.dtype)
    a_an = pp.a_an_filter if a_an_filter is None else a_an_filter
    m = evaluate.run(loaded, cloze, Path(out), relations=relations, limit=limit or pp.limit, top_k=top_k or pp.top_k,
                     a_an_filter=a_an, rule=rule or getattr(sp.rules, loaded.family),
                     batch_size=batch_size or sp.batch_size, profile=profile)
    return [Run(Path(out), Path(data), m)]


def consistency(model: str, data, out, *, params=None, device: str = "auto", force: bool = False,
                eval_relations=None) -> list[Run]:
    """ParaRel §8: continued MLM pretraining with the consistency loss on the params' relations, ParaRel before
    and after; ``eval_relations``: the test relations (default: the params', else every N-1 relation left)."""
    out_folder(out, "metrics.json, history.jsonl and the trained model are written inside it", kind="results",
               force=force)
    from evaluators.engine.models import load_lm
    from evaluators.shared.params import ScoringParams
    from evaluators.pararel.consistency_training import ConsistencyParams, run
    from probekit.data.cloze import read_cloze_set
    from probekit.tokens.refs import resolve_model

    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    sp, cp = section(params, "scoring", ScoringParams), section(params, "consistency", ConsistencyParams)
    cloze = read_cloze_set(data)
    cp.split(cloze, eval_relations)  # an unknown or overlapping relation fails before any work
    ref = resolve_model(model, params.models(), params.label)
    from evaluators.shared import applies

    device = resolve_device(device)
    if applies.skip("consistency", ref, device, [Path(out)], params):
        return []
    loaded = load_lm(ref, scoring="mlm", device=device, seed=sp.seed, dtype="float32")
    m = run(loaded, cloze, Path(out), cp, eval_relations=eval_relations, device=device, profile=profile)
    return [Run(Path(out), Path(data), m)]
