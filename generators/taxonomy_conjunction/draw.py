"""The rows of TAXONOMY CONJUNCTION drawn from the :class:`~generators.taxonomy_conjunction.index.Taxonomy` (the probe's
module docstring tells the construction): the picks (x, y, gold, one distractor per concept) of each split,
golds balanced by round robin, dev before train, with the counts of what was kept and rejected."""

from __future__ import annotations

import itertools
import logging
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterator, Mapping

from generators.taxonomy_conjunction.index import Fact, Taxonomy, taxonomy
from generators.taxonomy_conjunction.params import PROBE, TaxonomyParams

log = logging.getLogger(f"probekit.{PROBE}")
PAIR_ENUMERATION = 60  # a gold with at most this many concepts tries all their pairs; above, random pairs
MAX_MISSES = 300  # consecutive invalid random pairs after which a gold counts as exhausted


@dataclass(frozen=True)
class Pick:
    x: str
    y: str
    gold: str
    dx: str  # hypernym of x only
    dy: str  # hypernym of y only


def same_sense(facts_x: list[Fact], facts_y: list[Fact]) -> bool:
    """When WordNet puts the gold above both concepts, it is the same synset above both (``meal`` above
    ``oatmeal`` is ground grain, above ``refreshment`` an occasion of eating: no conjunction). A gold that one
    concept has from ConceptNet only (no sense) passes."""
    sx, sy = _wordnet_synsets(facts_x), _wordnet_synsets(facts_y)
    return not sx or not sy or bool(sx & sy)


def _wordnet_synsets(facts) -> set[str]:
    """The hypernym synsets of WordNet facts (``via`` ``a.n.01 > b.n.02 (depth 2)`` -> ``b.n.02``)."""
    out = set()
    for f in facts:
        if (f.source if isinstance(f, Fact) else f["source"]) == "wordnet":
            via = f.via if isinstance(f, Fact) else f["via"]
            out.add(via.split(" > ", 1)[1].split(" ", 1)[0])
    return out


def _pairs(members: list[str], rng: random.Random) -> Iterator[tuple[str, str]]:
    """Every pair of a small gold in a seeded order; random pairs (endless) for a large one."""
    if len(members) <= PAIR_ENUMERATION:
        pairs = list(itertools.combinations(members, 2))
        rng.shuffle(pairs)
        yield from pairs
        return
    while True:
        x, y = rng.sample(members, 2)
        yield x, y


def draw(tax: Taxonomy, p: TaxonomyParams, split: str, banned: set[str], counts: dict) -> list[Pick]:
    """``size.<split>`` picks (fewer when the data run out), golds balanced by round robin."""
    size, seed = p.size[split], p.seed
    concepts = sorted(c for c in tax.concepts[split] if c not in banned)
    hypers = {c: {h: f for h, f in tax.positive.get(c, {}).items() if h not in banned} for c in concepts}
    members: dict[str, list[str]] = defaultdict(list)
    for c in concepts:
        for h in hypers[c]:
            members[h].append(c)
    golds = sorted(g for g, m in members.items() if len(m) >= p.min_gold_concepts)
    rng = random.Random(f"{seed}:{PROBE}:{split}:golds")
    rng.shuffle(golds)
    streams = {g: (_pairs(members[g], random.Random(f"{seed}:{PROBE}:{split}:{g}")),
                   random.Random(f"{seed}:{PROBE}:{split}:{g}:draw")) for g in golds}
    uses: Counter = Counter()
    used_pairs: set[frozenset] = set()
    skipped: Counter = Counter()
    picks: list[Pick] = []
    per_gold: Counter = Counter()

    def valid(g: str, x: str, y: str, r: random.Random) -> Pick | None:
        if uses[x] >= p.max_concept_uses or uses[y] >= p.max_concept_uses:
            skipped["concept used max_concept_uses times"] += 1
            return None
        if frozenset((x, y)) in used_pairs:
            skipped["pair already used"] += 1
            return None
        ax, ay = tax.above(x), tax.above(y)
        if x in ay or y in ax:
            skipped["one concept is a hypernym of the other"] += 1
            return None
        words = set(x.split()) | set(y.split())
        if g in words:
            skipped["gold is a word of a concept"] += 1
            return None
        if not same_sense(hypers[x][g], hypers[y][g]):
            skipped["gold names different WordNet synsets for the two concepts"] += 1
            return None

        def only(c: str, other: str, above_other: frozenset[str]) -> list[str]:
            return sorted(h for h in hypers[c] if h != g and h != other and h not in above_other
                          and h not in words)

        dxs, dys = only(x, y, ay), only(y, x, ax)
        if not dxs or not dys:
            skipped["no distractor for " + ("either concept" if not dxs and not dys else "one concept")] += 1
            return None
        if r.random() < 0.5:  # which concept comes first in the stem
            x, y, dxs, dys = y, x, dys, dxs
        return Pick(x, y, g, r.choice(dxs), r.choice(dys))

    active = list(golds)
    while active and len(picks) < size:
        still = []
        for g in active:
            if len(picks) >= size:
                still.append(g)
                continue
            pairs, r = streams[g]
            misses, found = 0, None
            for x, y in pairs:
                found = valid(g, x, y, r)
                if found:
                    break
                misses += 1
                if len(members[g]) > PAIR_ENUMERATION and misses >= MAX_MISSES:
                    break
            if found is None:
                continue  # exhausted
            picks.append(found)
            per_gold[g] += 1
            uses[found.x] += 1
            uses[found.y] += 1
            used_pairs.add(frozenset((found.x, found.y)))
            still.append(g)
        active = still
    random.Random(f"{seed}:{PROBE}:{split}:order").shuffle(picks)
    counts.update({
        "asked": size, "built": len(picks), "concepts": len(concepts),
        "concepts_with_a_hypernym": sum(1 for c in concepts if hypers[c]),
        "golds_with_enough_concepts": len(golds), "golds_used": len(per_gold),
        "rows_per_gold": {"max": max(per_gold.values(), default=0), "min": min(per_gold.values(), default=0)},
        "concepts_used": len(uses), "pairs_rejected": dict(sorted(skipped.items())),
    })
    return picks


@dataclass(frozen=True)
class Plan:
    splits: dict[str, list[Pick]]
    taxonomy: Taxonomy
    counts: dict


def make_plan(tables: Mapping, params: TaxonomyParams) -> Plan:
    """Dev first (food and animal concepts), then train without any word of the dev rows."""
    tax = taxonomy(tables, params)
    counts: dict = {"facts": dict(sorted(tax.counts.items())), "splits": {}}
    dev = draw(tax, params, "dev", set(), counts["splits"].setdefault("dev", {}))
    dev_words = {w for pk in dev for w in (pk.x, pk.y, pk.gold, pk.dx, pk.dy)}
    train = draw(tax, params, "train", dev_words, counts["splits"].setdefault("train", {}))
    return Plan({"train": train, "dev": dev}, tax, counts)


def log_counts(counts: dict) -> None:
    log.info("%s: facts %s", PROBE, ", ".join(f"{k}: {v}" for k, v in counts["facts"].items()))
    for split, c in counts["splits"].items():
        log.info("%s/%s: %d rows of %d asked; %d concepts (%d with a hypernym), %d golds with min_gold_concepts, "
                 "%d used (rows per gold %d..%d); pairs rejected: %s", PROBE, split, c["built"], c["asked"],
                 c["concepts"], c["concepts_with_a_hypernym"], c["golds_with_enough_concepts"], c["golds_used"],
                 c["rows_per_gold"]["min"], c["rows_per_gold"]["max"],
                 ", ".join(f"{k}: {v}" for k, v in c["pairs_rejected"].items()) or "none")
        if c["built"] < c["asked"]:
            log.warning("%s/%s: the tables give %d rows, fewer than the %d asked", PROBE, split, c["built"],
                        c["asked"])
