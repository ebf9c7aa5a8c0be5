"""A score's answer distribution over answer *texts*: how often each choice text was the model's answer. Labels hide
a constant answer when choices are shuffled per row ("0.500 on 500" can be `younger` on every row), texts do not."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

TOP = 10
"""The texts a distribution lists by name (the most frequent first); the rest are counted together."""


def distribution(texts: Iterable[str], top: int = TOP) -> dict:
    """``{n, distinct, top: [[text, count], ...], other}``: the ``top`` most frequent answer texts (ties by text),
    and how many answers the others got."""
    counts = Counter(str(t) for t in texts)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ranked[:top]
    return {"n": sum(counts.values()), "distinct": len(counts), "top": [[t, c] for t, c in shown],
            "other": sum(c for _, c in ranked[top:])}


def described(found: dict, top: int = 3) -> str:
    """A distribution in a table cell: ``larger 312 · smaller 188``, ``younger 500 (all)``, ``a 40 · b 30 · c 20
    +5 more (10)``: the ``top`` first texts, then how many other texts and their answers."""
    if not found["n"]:
        return "—"
    if found["distinct"] == 1:
        return f"{found['top'][0][0]} {found['n']} (all)"
    shown = found["top"][:top]
    rest = found["distinct"] - len(shown)
    tail = f" +{rest} more ({found['n'] - sum(c for _, c in shown)})" if rest else ""
    return " · ".join(f"{t} {c}" for t, c in shown) + tail
