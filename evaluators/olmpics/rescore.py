"""Scoring a list of MC-MLM rows with one model, as ``probes evaluate zeroshot`` scores a dataset: the model alias
resolved through the params' ``models``, loaded and scored with the params' ``scoring`` settings on ``device``,
each row's prediction the record :func:`evaluators.olmpics.zeroshot.evaluate` writes to ``predictions.jsonl``
(id, scores, prediction, gold, correct, rule). The effect of a dataset change on scores
(:mod:`evaluators.shared.flips`) scores only the rows a change touched with it."""

from __future__ import annotations

from evaluators.olmpics import zeroshot
from evaluators.shared.api import params_file
from evaluators.shared.flips import effect_of as _effect_of
from probekit.device import resolve_device
from probekit.errors import UsageError
from probekit.params import section


class Rescorer:
    """A model loaded once; :meth:`score` gives the zero-shot predictions of rows. ``settings``: what a zero-shot
    ``metrics.json`` records of the model and its scoring (model, model_id, scoring, rule, multi_token, dtype),
    the record that says whether predictions on disk were made the same way."""

    def __init__(self, loaded, engine):
        self.loaded, self.engine = loaded, engine
        self.settings = {"model": loaded.name, "model_id": loaded.model_id, "dtype": loaded.dtype,
                         **engine.scoring.record()}

    def score(self, rows: list[dict]) -> list[dict]:
        """The predictions of ``rows`` (MC-MLM examples), in their order."""
        if not rows:
            return []
        return zeroshot.evaluate(self.engine, rows)[0]


def load(model: str, *, params=None, device: str = "auto", progress: bool = False) -> Rescorer:
    """``model`` (an alias of the params' ``models``, a folder, ``pkg:...`` or a Hub id) loaded as the zero-shot
    stage loads it, with the params' ``scoring`` section (family, rule of the model's family, multi_token, dtype,
    seed, batch_size); a model zero-shot MC does not apply to is refused in one line."""
    from evaluators.engine.scorer import Engine
    from evaluators.engine.kept_models import scoring_lm
    from evaluators.shared import applies
    from evaluators.shared.params import ScoringParams
    from probekit.tokens.refs import resolve_model

    params = params_file(params)
    sp = section(params, "scoring", ScoringParams)
    ref = resolve_model(model, params.models(), params.label)
    why = applies.left_out("zeroshot", ref.name, params)
    if why is None:
        why = applies.check("zeroshot", ref)[0]
    if why is not None:
        raise UsageError(f"--model {model}: {why}")
    loaded = scoring_lm(ref, scoring=sp.family, device=resolve_device(device), seed=sp.seed, dtype=sp.dtype)
    engine = Engine(loaded.model, loaded.tokenizer, loaded.family, rule=getattr(sp.rules, loaded.family),
                    batch_size=sp.batch_size, multi_token=sp.multi_token, progress=progress)
    return Rescorer(loaded, engine)


def effect_of(result, **options) -> list[dict]:
    """:func:`evaluators.shared.flips.effect_of` with this module's :func:`load` as its scorer (the shared layer
    cannot import a protocol's module): what ``probes diff --model`` calls."""
    options.setdefault("scorer", load)
    return _effect_of(result, **options)

