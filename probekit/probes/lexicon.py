"""Word facts the generators share: English word frequency on wordfreq's Zipf scale, and the a/an rule."""

from __future__ import annotations

import functools
import math
import re
from typing import Iterable

PLAIN = re.compile(r"[a-z]+")
VOWELS = ("a", "e", "i", "o", "u")


@functools.lru_cache(maxsize=None)
def zipf(text: str) -> float:
    """wordfreq's ``zipf_frequency(text, "en")`` (a phrase: wordfreq's combined estimate), cached."""
    from wordfreq import zipf_frequency

    return zipf_frequency(text, "en")


@functools.lru_cache(maxsize=None)
def _frequencies() -> dict[str, float]:
    from wordfreq import get_frequency_dict

    return get_frequency_dict("en")


@functools.lru_cache(maxsize=None)
def at_least(word: str, min_zipf: float) -> bool:
    """``zipf(word) >= min_zipf``, decided from wordfreq's list without its tokenizer unless the word lies
    within 0.02 of the bound (a plain ``[a-z]`` word is its own single token: its zipf is ``log10(frequency)
    + 9`` up to wordfreq's rounding; unlisted: 0). Exact, and fast over hundreds of thousands of words."""
    if min_zipf <= 0:
        return True
    if not PLAIN.fullmatch(word):
        return zipf(word) >= min_zipf
    f = _frequencies().get(word, 0.0)
    if f <= 0:
        return False
    z = math.log10(f) + 9
    return z > min_zipf if abs(z - min_zipf) > 0.02 else zipf(word) >= min_zipf


def article(word: str, vowel_but_a: Iterable[str] = (), consonant_but_an: Iterable[str] = ()) -> str:
    """``an`` before a word starting with a vowel letter, else ``a``; the listed beginnings are exceptions
    (``a unicorn``, ``an hour``: a probe declares them in its YAML)."""
    w = word.lower()
    if any(w.startswith(b) for b in consonant_but_an):
        return "an"
    if any(w.startswith(b) for b in vowel_but_a):
        return "a"
    return "an" if w[:1] in VOWELS else "a"
