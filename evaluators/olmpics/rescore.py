"""Scoring a list of MC-MLM rows with one model, as ``probes evaluate zeroshot`` scores a dataset: the model alias
resolved through the params' ``models``, loaded and scored with the params' ``scoring`` settings on ``device``,
each row's prediction the record :func:`evaluators.olmpics.zeroshot.evaluate` writes to ``predictions.jsonl``
(id, scores, prediction, gold, correct, rule). The effect of a dataset change on scores
(:mod:`evaluators.shared.flips`) scores only the rows a change touched with it."""

from __future__ import annotations

from evaluators.shared.calls import params_file
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
        from evaluators.olmpics import zeroshot   # torch: imported when a model scores, not when one is checked

        if not rows:
            return []
        return zeroshot.evaluate(self.engine, rows)[0]


def check(model: str, *, params=None):
    """``model`` (an alias of the params' ``models``, a folder, ``pkg:...`` or a Hub id) resolved and checked
    before any work, as the zero-shot stage checks it: it exists, its config, tokenizer and weights are whole, its
    params entry runs oLMpics, and a probekit rule scores it (its family read from its config and tokenizer: XLNet is
    refused); else one line. Returns its :class:`~probekit.tokens.refs.ModelRef`, the params file and its
    ``scoring`` section."""
    from evaluators.olmpics import runs   # noqa: F401  (declares the zero-shot protocol, whose checks these are)
    from evaluators.shared import applies
    from evaluators.shared.params import ScoringParams
    from probekit.tokens.family import family_of
    from probekit.tokens.refs import resolve_model

    params = params_file(params)
    sp = section(params, "scoring", ScoringParams)
    ref = resolve_model(model, params.models(), params.label)
    why = applies.left_out("zeroshot", ref.name, params)
    if why is None:
        why = applies.check("zeroshot", ref)[0]
    if why is not None:
        raise UsageError(f"--model {model}: {why}")
    if sp.family == "auto":   # a model no rule scores (XLNet) or whose family is not told: refused now, not at load
        try:
            family_of(ref)
        except UsageError as exc:
            raise UsageError(str(exc) if str(exc).startswith("--model") else f"--model {model}: {exc}") from None
    return ref, params, sp


def load(model: str, *, params=None, device: str = "auto", progress: bool = False) -> Rescorer:
    """``model`` (checked by :func:`check`) loaded as the zero-shot stage loads it, with the params' ``scoring``
    section (family, rule of the model's family, multi_token, dtype, seed, batch_size)."""
    from evaluators.engine.scorer import Engine
    from evaluators.engine.kept_models import scoring_lm

    ref, params, sp = check(model, params=params)
    loaded = scoring_lm(ref, scoring=sp.family, device=resolve_device(device), seed=sp.seed, dtype=sp.dtype)
    engine = Engine(loaded.model, loaded.tokenizer, loaded.family, rule=getattr(sp.rules, loaded.family),
                    batch_size=sp.batch_size, multi_token=sp.multi_token, progress=progress)
    return Rescorer(loaded, engine)


def effect_of(result, **options) -> list[dict]:
    """:func:`evaluators.shared.flips.effect_of` with this module's :func:`load` as its scorer (the shared layer
    cannot import a protocol's module): what ``probes diff --model`` calls."""
    options.setdefault("scorer", load)
    return _effect_of(result, **options)

