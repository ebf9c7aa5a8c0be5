"""One-token filters: which words a tokenizer reads as exactly one token, and which token that is. ParaRel's cloze
set keeps only objects that are one token for every tokenizer of the models evaluated, and its evaluation
restricts candidates the same way (:func:`object_tokens`, by one of :data:`OBJECT_TOKEN_RULES`); taxonomy
conjunction keeps one-token hypernyms."""

from __future__ import annotations

from typing import Mapping

from probekit.data.cloze import fill
from probekit.tokens.refs import resolve_model

OBJECT_TOKEN_RULES = ("leading_space", "in_context")
"""How ParaRel reads an object's token (``pararel.object_token``):

- ``leading_space``: the object alone after a space, ``tokenizer.tokenize(" " + obj)``, wherever ``[Y]`` stands in
  the pattern (the original code: ``filter_data.py``'s ``filter_oov`` keeps an object when
  ``len(tokenizer.tokenize(f' {obj}')) == 1``; ``encode_consistency_probe.py`` scores RoBERTa's ``' ' + obj``, i.e.
  ``Ġobj``, ALBERT's ``tokenize(obj)[0]``, ``▁obj``, BERT's ``obj``: the same token for each).
- ``in_context``: the object's token where it stands in the filled pattern, in every pattern of the relation (a
  byte-level BPE reads ``obj`` at the start of a sentence, ``Ġobj`` after a space)."""


def load_tokenizer(spec: str, aliases: Mapping[str, str], params_label: str):
    """The fast tokenizer of ``spec`` (an alias of ``aliases``, a folder, ``pkg:<module>``, or a Hub id in the local
    cache); a spec that resolves to nothing raises :class:`~probekit.errors.UsageError` naming what was tried."""
    from transformers import AutoTokenizer

    ref = resolve_model(spec, aliases, params_label, needs="tokenizer")
    return AutoTokenizer.from_pretrained(ref.location, **ref.pinned)


def single_token_objects(tokenizer, patterns: list[str], subject: str, objects: list[str]) -> dict[str, int]:
    """``{object: token id}`` of the objects that are exactly one token at ``[Y]`` of every pattern (in
    context, as the engine scores them; the id is the one at the first pattern)."""
    from probekit.tokens.statements import encode_statements  # transformers: only when a tokenizer is used

    stems = [fill(p, subject) for p in patterns]
    st = encode_statements(tokenizer, stems, [objects] * len(stems), [f"pattern {i}" for i in range(len(stems))])
    n = len(objects)
    return {o: int(st.first[k]) for k, o in enumerate(objects) if st.single[k::n].all()}


def leading_space_objects(tokenizer, objects: list[str]) -> dict[str, int]:
    """``{object: token id}`` of the objects that are exactly one token read alone after a space, as the original
    ParaRel's ``len(tokenizer.tokenize(f' {obj}')) == 1`` (an unknown word's one ``[UNK]`` passes there too)."""
    if not objects:
        return {}
    enc = tokenizer([" " + o for o in objects], add_special_tokens=False, return_attention_mask=False,
                    return_token_type_ids=False, verbose=False)
    return {o: ids[0] for o, ids in zip(objects, enc["input_ids"]) if len(ids) == 1}


def object_tokens(rule: str, tokenizer, patterns: list[str], subject: str, objects: list[str]) -> dict[str, int]:
    """``{object: token id}`` of the ``objects`` that are one token for ``tokenizer`` by ``rule`` (one of
    :data:`OBJECT_TOKEN_RULES`); ``patterns`` and ``subject`` (the relation's) matter only ``in_context``."""
    if rule == "leading_space":
        return leading_space_objects(tokenizer, objects)
    if rule == "in_context":
        return single_token_objects(tokenizer, patterns, subject, objects)
    raise ValueError(f"object_token must be one of {', '.join(OBJECT_TOKEN_RULES)}, got {rule!r}")
