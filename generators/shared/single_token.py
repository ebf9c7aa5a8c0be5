"""The one-token filters of the generators: whose tokenizers they read (:func:`masked_lms`, the masked LMs among
the params' models that run a protocol: ParaRel's objects, TAXONOMY CONJUNCTION's choices, the MC-MLM probes' answer
words) and :class:`OneToken`, whether a word is one token at the mask for every tokenizer listed, as the zero-shot
evaluator tokenizes a candidate (TAXONOMY CONJUNCTION's ``single_token``; :func:`check_answer_words`, at a row's own
mask); tokenizers are loaded (``transformers``) on first use only."""

from __future__ import annotations

from typing import Mapping

from probekit.errors import DataError, ParamsError, UsageError, shown
from probekit.params import ParamsFile
from probekit.probes.templates import TemplateError
from probekit.tokens.family import family_of
from probekit.tokens.one_token import load_tokenizer
from probekit.tokens.refs import resolve_model


def masked_lms(params_file: ParamsFile, protocol: str, key: str, why: str | None = None) -> list[str]:
    """The aliases of the masked LMs among the models that run ``protocol`` (``olmpics`` or ``pararel``:
    :meth:`~probekit.params.ParamsFile.evaluated_models`), whose mask-logit rule reads one token (causal and
    seq2seq LMs score a multi-token word by its log-likelihood, so they narrow nothing), one per tokenizer (the
    first alias of each :func:`tokenizer_key`). The family comes from each model's config and tokenizer, no
    weights read. ``key``: the param whose null asked (named in errors);
    ``why``: what reads them, where no param asked."""
    aliases, masked = params_file.models(), {}
    for alias in params_file.evaluated_models(protocol):
        try:
            if family_of(resolve_model(alias, aliases, params_file.label, needs="tokenizer")) == "mlm":
                masked.setdefault(tokenizer_key(load_tokenizer(alias, aliases, params_file.label)), alias)
        except UsageError as exc:
            raise ParamsError(f"{params_file.label}: models.{alias} "
                              f"({why or f'{key}: null reads every masked LM of models'}): {exc}") from None
    return list(masked.values())


def tokenizer_key(tokenizer) -> str:
    """A sha256 of what decides how a tokenizer splits a word at the mask: its class, its special tokens, and (a fast
    tokenizer) its pipeline as ``tokenizers`` serialises it less the truncation and padding settings, which split
    nothing; a slow one, its vocabulary and init settings less file paths. Two models with the same key pass and
    fail the same words, so :func:`masked_lms` reads one of them: a model added beside one with its tokenizer (a
    fine-tuned BERT beside BERT) changes no one-token filter, and no dataset."""
    import hashlib
    import json

    if getattr(tokenizer, "is_fast", False):
        pipeline = json.loads(tokenizer.backend_tokenizer.to_str())
        pipeline.pop("truncation", None), pipeline.pop("padding", None)
    else:
        pipeline = {"vocab": sorted(tokenizer.get_vocab().items()),
                    "init": {k: str(v) for k, v in tokenizer.init_kwargs.items()
                             if not (k.endswith("_file") or k.endswith("name_or_path"))}}
    what = {"class": type(tokenizer).__name__, "special": {k: str(v) for k, v in tokenizer.special_tokens_map.items()},
            "pipeline": pipeline}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


class OneToken:
    """``word -> bool``: one token, at the mask, for every tokenizer of ``specs`` (an alias of ``aliases``, i.e. of
    the params' ``models``; ``pkg:<module>``, a model folder, or a Hub id in the local cache), as the zero-shot
    evaluator tokenizes a candidate (in context, after a space: RoBERTa's ``Ġword``); always true without specs.
    ``key``: the param that lists them (named in errors)."""

    STEM = "A thing and a thing are both a type of [MASK] ."

    def __init__(self, specs: list[str], key: str = "single_token",
                 aliases: Mapping[str, str | Mapping] | None = None):
        self.specs, self.key, self.aliases = list(specs), key, dict(aliases or {})
        self._tokenizers, self._memo = None, {}

    def _load(self) -> list:
        tokenizers = []
        for spec in self.specs:
            try:
                tokenizers.append(load_tokenizer(spec, self.aliases, self.key))
            except UsageError as e:
                raise DataError(f"{self.key}: {e} (or leave {shown(spec)} out of the list)") from None
        return tokenizers

    def __call__(self, word: str) -> bool:
        return not self.not_one_token(word)

    def not_one_token(self, word: str, stem: str | None = None) -> dict[str, list[str]]:
        """``{spec: the word's tokens}`` of the tokenizers that do not read ``word`` as one token at the mask of
        ``stem`` (default :data:`STEM`); empty when every one does."""
        key = (word, stem or self.STEM)
        if self.specs and key not in self._memo:
            from probekit.tokens.statements import encode_statements

            if self._tokenizers is None:
                self._tokenizers = self._load()
            self._memo[key] = {}
            for spec, tokenizer in zip(self.specs, self._tokenizers):
                st = encode_statements(tokenizer, [key[1]], [[word]], [word])
                if not st.single[0]:
                    self._memo[key][spec] = st.pieces(tokenizer, 0)
        return self._memo.get(key, {})


def check_answer_words(built, params_file: ParamsFile) -> None:
    """An MC-MLM probe's closed answer words (its templates' ``answers``, ``controls.nolang_answers``) in the rows
    ``built`` (:class:`~probekit.probes.dataset.BuiltProbe`) are one token at each row's mask for the tokenizer of
    every masked LM of the params' models that runs oLMpics, as the zero-shot mask-logit rule reads a choice; a word
    the YAML lists under ``multi_token`` is not checked. So a multi-token answer word is refused by ``probes
    generate``, naming the file, the key and the model, not later by the zero-shot stage. One row per variant and
    template is read (the text around the mask is the template's). A model whose tokenizer cannot be read (not a
    folder, not cached, the Hub unreachable) is an error naming it, as ParaRel's one-token filter's."""
    spec = built.spec
    words = {w for t in spec.templates.values() for w in t.answers.values()} | set(spec.nolang_answers.values())
    words -= set(spec.multi_token)
    if spec.format != "mc_mlm" or not words:
        return
    rows = {}   # (variant, template id) -> its first row
    for variant, splits in built.variants.items():
        for split_rows in splits.values():
            for row in split_rows:
                rows.setdefault((variant, row["template_id"]), row)
    if not rows:
        return
    aliases = masked_lms(params_file, "olmpics", "models", f"{spec.probe}'s answer words are read by every "
                                                           f"masked LM of models that runs olmpics")
    one_token = OneToken(aliases, "models", params_file.models())
    for (variant, template_id), row in rows.items():
        for word in (c["text"] for c in row["question"]["choices"] if c["text"] in words):
            failing = one_token.not_one_token(word, row["question"]["stem"])
            if failing:
                alias, pieces = next(iter(failing.items()))
                template = spec.templates.get(template_id)
                key = (f"template {shown(template_id)}: answers" if template and word in template.answers.values()
                       else "controls.nolang_answers")
                raise TemplateError(f"{spec.path}: {key}: {shown(word)} is not one token at the mask for the "
                                    f"tokenizer of {alias}, a masked LM of params models (variant {shown(variant)}: "
                                    f"{shown(pieces)}), so zero-shot's mask-logit rule cannot score it: choose a "
                                    f"one-token word, or list it under multi_token: (then score it with --rule pll, "
                                    f"--multi-token first or a causal LM)")


FILTERED = ("olmpics", "pararel")
"""The papers whose datasets a one-token filter narrows to the tokenizers of the masked LMs that run them: oLMpics'
MC-MLM probes (answer words checked, TAXONOMY CONJUNCTION's choices filtered) and ParaRel (objects filtered)."""


def filter_tokenizers(params_file: ParamsFile) -> dict[str, dict[str, str | dict]]:
    """``{paper: {alias: model}}``: the tokenizers the one-token filters of :data:`FILTERED` read (:func:`masked_lms`,
    one alias per tokenizer), what ``probes tokenizers`` writes (``data/tokenizers.json``, the generate stages'
    dependency in place of the whole ``models`` and ``runs`` params): a model added with a tokenizer already
    there, or a causal LM, leaves the file's bytes, so no dataset is generated again and no other model's stage
    re-runs."""
    models = params_file.models()
    return {paper: {alias: models[alias] for alias in masked_lms(params_file, paper, "models",
                                                                 f"the masked LMs that run {paper}")}
            for paper in FILTERED}


def pinned(params_file: ParamsFile, tokenizers: dict) -> ParamsFile:
    """``params_file`` as a generator reads it with the tokenizers of a ``probes tokenizers`` file: ``runs`` of each
    paper of :data:`FILTERED` its aliases there, each alias's ``models`` entry the file's, so the datasets depend
    on that file and not on the params' whole ``models`` and ``runs`` (other entries stay: an explicit
    ``pararel.tokenizers`` or ``taxonomy_conjunction.single_token`` alias is read from ``models``)."""
    if not isinstance(tokenizers, dict) or set(tokenizers) != set(FILTERED) or not all(
            isinstance(v, dict) for v in tokenizers.values()):
        raise DataError(f"the tokenizers file: expected {{{', '.join(FILTERED)}: {{alias: model}}}} as probes "
                        f"tokenizers writes it, got {shown(tokenizers)}")
    data = dict(params_file.data)
    data["models"] = {**(data.get("models") or {}), **{a: m for v in tokenizers.values() for a, m in v.items()}}
    data["runs"] = {**(data.get("runs") or {}), **{paper: list(v) for paper, v in tokenizers.items()}}
    return ParamsFile(params_file.path, data)
