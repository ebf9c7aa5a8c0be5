"""The questions of PROPERTY CONJUNCTION drawn from the edge :class:`~generators.property_conjunction.index.Index` (the
probe's module docstring tells the sampling): per split, answers visited round-robin, each question a pair of
the answer's properties with one distractor per property; the plan of both splits, shared by the base
variants of one build, and its counts."""

from __future__ import annotations

import logging
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Mapping

from generators.property_conjunction.index import Index, Prop, index
from generators.property_conjunction.params import PROBE, ConjunctionParams
from probekit.data.examples import SPLITS

log = logging.getLogger(f"probekit.{PROBE}")
ENUMERATE_BELOW = 40  # answers with fewer properties try every pair; others sample pairs at random
RANDOM_TRIES = 400  # pairs tried per question for an answer with many properties


@dataclass(frozen=True)
class Question:
    answer: str  # has P1 and P2
    first: str  # D1: has P1, lacks P2
    second: str  # D2: has P2, lacks P1
    p1: Prop
    p2: Prop

    def facts(self, gold: str) -> dict:
        (r1, o1), (r2, o2) = self.p1, self.p2
        return {"gold": gold, "properties": [[r1, o1], [r2, o2]],
                "has": [[self.answer, r1, o1], [self.answer, r2, o2], [self.first, r1, o1], [self.second, r2, o2]],
                "lacks": [[self.first, r2, o2], [self.second, r1, o1]]}


def _pool(ix: Index, split: str, has: Prop, lacks: Prop, exclude: set[str]) -> list[str]:
    """The split's concepts with the edge ``has`` that lack ``lacks`` (sorted), less ``exclude``."""
    r, o = lacks
    return [c for c in ix.by_prop[split].get(has, ()) if (c, r, o) not in ix.holds and c not in exclude]


def _pairs(props: list[Prop], rng: random.Random):
    """Ordered pairs of distinct properties with distinct objects, in random order (all of them for few
    properties, else up to RANDOM_TRIES random draws)."""
    if len(props) < ENUMERATE_BELOW:
        pairs = [(a, b) for a in props for b in props if a != b]
        rng.shuffle(pairs)
        yield from pairs
        return
    for _ in range(RANDOM_TRIES):
        a, b = rng.sample(props, 2)
        yield a, b


def nested(o1: str, o2: str) -> bool:
    """One object's words all among the other's ("desk" / "your desk", or the same object): a pair that asks
    one thing twice."""
    w1, w2 = set(o1.split()), set(o2.split())
    return w1 <= w2 or w2 <= w1


def _question(ix: Index, split: str, answer: str, asked: set, rng: random.Random) -> Question | None:
    """A new question for ``answer`` (not an already ``asked`` pair, in either order), or None."""
    for p1, p2 in _pairs(ix.props[answer], rng):
        if frozenset((p1, p2)) in asked or nested(p1[1], p2[1]):
            continue
        exclude = {answer, p1[1], p2[1]}
        first = _pool(ix, split, p1, p2, exclude)
        if not first:
            continue
        second = _pool(ix, split, p2, p1, exclude)
        if not second:
            continue
        asked.add(frozenset((p1, p2)))
        return Question(answer, rng.choice(first), rng.choice(second), p1, p2)
    return None


@dataclass(frozen=True)
class Plan:
    splits: dict[str, list[Question]]
    counts: dict


def make_plan(tables: Mapping, params: ConjunctionParams) -> Plan:
    """The questions of each split (shared by every base variant) and the counts."""
    ix = index(tables, params)
    splits: dict[str, list[Question]] = {}
    counts = dict(ix.counts, asked=dict(params.size))
    for split in SPLITS:
        rng = random.Random(f"{params.seed}:{PROBE}:{split}")
        answers = sorted(c for c, p in ix.props.items() if ix.split_of[c] == split and len(p) >= 2)
        rng.shuffle(answers)
        asked: dict[str, set] = defaultdict(set)
        questions: list[Question] = []
        active = answers
        while active and len(questions) < params.size[split]:
            still = []
            for a in active:
                if len(questions) >= params.size[split]:
                    break
                q = _question(ix, split, a, asked[a], rng)
                if q is None:
                    continue
                questions.append(q)
                if len(asked[a]) < params.max_per_answer:
                    still.append(a)
            active = still
        splits[split] = questions
    counts["built"] = {s: len(q) for s, q in splits.items()}
    counts["answers"] = {s: len({q.answer for q in qs}) for s, qs in splits.items()}
    counts["predicates"] = {s: dict(Counter(r for q in qs for r in (q.p1[0], q.p2[0])).most_common())
                            for s, qs in splits.items()}
    return Plan(splits, counts)


def _log(counts: dict) -> None:
    for s in SPLITS:
        log.info("%s/%s: %d concepts (%d with two properties or more); %d questions over %d answers; predicates: "
                 "%s", PROBE, s, counts["concepts"][s], counts["answer_candidates"][s], counts["built"][s],
                 counts["answers"][s], ", ".join(f"{r} {n}" for r, n in counts["predicates"][s].items()))
    short = [s for s in SPLITS if counts["built"][s] < counts["asked"][s]]
    if short:
        log.warning("%s: the edges give %s questions, fewer than size asks (%s)", PROBE,
                    ", ".join(f"{s} {counts['built'][s]}" for s in SPLITS),
                    ", ".join(f"{s} {counts['asked'][s]}" for s in SPLITS))


_LAST: list = []  # (tables, params, plan) of the last plan: the variants of one build share it


def cached_plan(tables: Mapping, params: ConjunctionParams) -> Plan:
    """The plan of ``tables`` under ``params``, made and logged once for the base variants of one build."""
    if _LAST and _LAST[0] is tables and _LAST[1] == params:
        return _LAST[2]
    plan = make_plan(tables, params)
    _log(plan.counts)
    _LAST[:] = [tables, params.model_copy(deep=True), plan]
    return plan
