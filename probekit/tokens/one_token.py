"""One-token filters: which words a tokenizer reads as exactly one token where the engine scores them (in context,
after a space: RoBERTa's ``Ġword``). ParaRel's cloze set keeps only objects that are one token for every tokenizer
of the models evaluated, and its evaluation restricts candidates the same way; taxonomy conjunction keeps one-token
hypernyms."""

from __future__ import annotations

from typing import Mapping

from probekit.data.cloze import fill
from probekit.tokens.refs import resolve_model


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
