"""The splits of ANTONYM NEGATION: the candidate pairs shared out into dev (pairs among a hashed random set
of words, each word in few dev rows) and train (the pairs without a dev word), half antonyms and half
synonyms per part of speech, each pair in a hashed direction (reversed to fill when asked), with a report.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections import Counter, defaultdict
from typing import Mapping

from generators.antonym_negation.pairs import Pair
from generators.antonym_negation.params import POS, PROBE, RELATIONS, AntonymParams


def _unit(*key: object) -> float:
    """A number in [0, 1) fixed by ``key``."""
    digest = hashlib.sha256(":".join(map(str, key)).encode("utf-8")).hexdigest()
    return int(digest[:15], 16) / 16 ** 15


def largest_remainder(n: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``n`` split over the keys in proportion to ``weights`` (sums to ``n``; ties go to earlier keys)."""
    total = sum(weights.values())
    if n <= 0 or total <= 0:
        return {k: 0 for k in weights}
    quota = {k: n * w / total for k, w in weights.items()}
    out = {k: int(q) for k, q in quota.items()}
    keys = list(weights)
    for k in sorted(keys, key=lambda k: (-(quota[k] - out[k]), keys.index(k)))[: n - sum(out.values())]:
        out[k] += 1
    return out


def allocate(n: int, avail: Mapping[str, Mapping[str, int]], cap: Mapping[str, Mapping[str, int]]
             ) -> dict[str, dict[str, int]]:
    """Rows per part of speech and relation: ``n // 2`` synonyms, as many antonyms, each part of speech with
    as many of both (shares in proportion to ``min(avail)``, within ``cap``), and an odd ``n``'s extra row an
    antonym. A shortfall caps both relations alike."""
    weight = {p: min(avail[p][r] for r in RELATIONS) for p in avail}
    limit = {p: min(cap[p][r] for r in RELATIONS) for p in cap}
    take = {p: 0 for p in avail}
    while True:
        left = n // 2 - sum(take.values())
        room = {p: weight[p] or 1 for p in take if take[p] < limit[p]}
        if left <= 0 or not room:
            break
        for p, k in largest_remainder(left, room).items():
            take[p] = min(limit[p], take[p] + k)
    out = {p: {r: t for r in RELATIONS} for p, t in take.items()}
    if n % 2 and sum(take.values()) == n // 2:
        spare = [p for p in out if cap[p][RELATIONS[0]] > out[p][RELATIONS[0]]]
        if spare:
            out[max(spare, key=lambda p: weight[p])][RELATIONS[0]] += 1
    return out


def _pick(ordered: list[Pair], t: int, reverse: bool, seed: int) -> list[tuple[Pair, bool]]:
    """The first ``t`` pairs, each in its own direction (flipped or not by a hash of the pair); past the
    end, with ``reverse``, the same pairs again the other way round."""
    flips = [_unit(seed, PROBE, "direction", *p.words) < 0.5 for p in ordered]
    chosen = list(zip(ordered, flips))[:t]
    if reverse and t > len(ordered):
        chosen += [(p, not f) for p, f in zip(ordered, flips)][: t - len(ordered)]
    return chosen


def _spread(ordered: list[Pair], t: int, uses: Counter, limit: int) -> list[Pair]:
    """``ordered`` with the pairs whose words are still under ``limit`` uses (counted in ``uses`` as the first
    ``t`` are taken) moved to the front, in order; the others follow, so ``t`` is never cut short."""
    first, rest = [], []
    for p in ordered:
        if len(first) < t and all(uses[w] < limit for w in p.words):
            first.append(p)
            uses.update(p.words)
        else:
            rest.append(p)
    for p in rest[: max(0, t - len(first))]:
        uses.update(p.words)
    return first + rest


def split_pairs(pairs: list[Pair], params: AntonymParams) -> tuple[dict[str, list[tuple[Pair, str, bool]]], dict]:
    """{split: [(pair, pos, flipped)]} (dev first, then train from the pairs without a dev word) and a report."""
    groups: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for p in pairs:
        groups[p.relation, p.pos[0]].append(p)
    served = sorted({p.pos[0] for p in pairs}, key=POS.index)
    u = functools.lru_cache(maxsize=None)(lambda w: _unit(params.seed, PROBE, "word", w))
    factor = 2 if params.reverse_to_fill else 1
    out: dict[str, list[tuple[Pair, str, bool]]] = {}
    report: dict = {}
    dev_words: set[str] = set()
    uses: Counter = Counter()  # dev rows per word so far
    for split in ("dev", "train"):
        pool = {k: [p for p in g if not (dev_words & set(p.words))] for k, g in groups.items()}
        avail = {pos: {r: len(pool.get((r, pos), [])) for r in RELATIONS} for pos in served}
        cap = {pos: {r: factor * n for r, n in rel.items()} for pos, rel in avail.items()}
        counts = allocate(params.size[split], avail, cap)
        rows: list[tuple[Pair, str, bool]] = []
        reversed_ = 0
        for pos in served:
            for rel in RELATIONS:
                group = sorted(pool.get((rel, pos), []), key=lambda p: p.words)
                if split == "dev":
                    group.sort(key=lambda p: (max(u(w) for w in p.words), p.words))
                    group = _spread(group, counts[pos][rel], uses, params.dev_word_limit)
                else:
                    random.Random(f"{params.seed}:{PROBE}:{split}:{rel}:{pos}").shuffle(group)
                chosen = _pick(group, counts[pos][rel], params.reverse_to_fill, params.seed)
                reversed_ += max(0, len(chosen) - len(group))
                rows += [(p, pos, f) for p, f in chosen]
        random.Random(f"{params.seed}:{PROBE}:{split}:order").shuffle(rows)
        out[split] = rows
        words = {w for p, _, _ in rows for w in p.words}
        report[split] = {"asked": params.size[split], "rows": len(rows),
                         "rows_by_pos_relation": {f"{pos}/{r}": counts[pos][r] for pos in served for r in RELATIONS},
                         "pairs_available": {f"{pos}/{r}": n for pos, rel in avail.items() for r, n in rel.items()},
                         "reversed_rows": reversed_, "words": len(words)}
        if split == "dev":
            dev_words = words
            report["train_pairs_lost_to_dev_words"] = sum(
                1 for p in pairs if dev_words & set(p.words)) - len({p.words for p, _, _ in rows})
    return out, report
