"""The shared word facts: wordfreq's Zipf scale (the fast threshold agrees with wordfreq) and the a/an rule."""

from __future__ import annotations

import math

from wordfreq import get_frequency_dict, zipf_frequency

from probekit.probes import lexicon


def test_at_least_decides_as_wordfreq_does_near_the_bound():
    freqs = get_frequency_dict("en")
    for bound in (2.5, 3.0, 3.5):
        near = sorted(w for w, f in freqs.items() if w.isalpha() and w.isascii() and w.islower()
                      and abs(math.log10(f) + 9 - bound) < 0.05)[:400]
        assert near
        for w in near:
            assert lexicon.at_least(w, bound) == (zipf_frequency(w, "en") >= bound), (w, bound)
    assert lexicon.at_least("zzxqv", 1.0) is False and lexicon.at_least("anything", 0) is True
    assert lexicon.at_least("ice cream", 3.0) == (zipf_frequency("ice cream", "en") >= 3.0)


def test_zipf_is_wordfreqs():
    for text in ("dog", "ice cream", "sesquipedalian"):
        assert lexicon.zipf(text) == zipf_frequency(text, "en")


def test_article_rule_and_exceptions():
    assert [lexicon.article(w) for w in ("owl", "hour", "University", "cat")] == ["an", "a", "an", "a"]
    assert lexicon.article("university", vowel_but_a=["uni"]) == "a"
    assert lexicon.article("hour", consonant_but_an=["hour"]) == "an"
