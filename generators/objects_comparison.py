"""OBJECTS COMPARISON (oLMpics §4.1): is OBJ-1 usually much larger or smaller than OBJ-2?

``The size of a {obj1} is usually much [MASK] than the size of a {obj2} .``, answers larger / smaller. The
paper buckets objects by their DoQ median size (then fixes errors by hand), pairs objects of different buckets
and trains on animals, evaluating on general objects (127 and 35 objects). Here the objects and sizes come
from the ``object_sizes`` table set and the split from the ``wordnet`` table set.

Offline (the mirror's BREDS / size-comparisons anchors and ViPhy / VerbPhysics pairs, no DoQ) the defaults
give 57 usable animals (24 with an absolute size), so train holds ~640 rows, not 5000 (logged); dev has
plenty (~190 objects over its 500 rows, all pairs of absolute sizes).

Sizes and how far apart two objects must be
-------------------------------------------
``sizes.size_m`` is an *absolute* size (a length in metres) when ``source`` is ``breds``,
``size_comparisons``, ``breds+size_comparisons`` or ``doq``; with ``source`` ``fit`` it was fitted from
pairwise labels (ViPhy, VerbPhysics) around those anchors and is only an ordering estimate (ViPhy compares
apparent sizes in photographs: a kitten comes out at ~7 m, a giraffe at ~60 m; see
:mod:`probekit.loaders.object_sizes`). Every object gets a bucket on a log10 scale: bucket ``k`` holds
``[10^(k*w), 10^((k+1)*w))`` metres with ``w = bucket_decades`` (or the buckets between ``bucket_edges_m``,
the first and last open-ended). A pair is kept only when

* its buckets are at least ``min_gap`` apart when both sizes are absolute, at least ``min_gap_fitted`` apart
  when either is fitted (fitted objects with fewer than ``min_pairs_fitted`` labels, or all of them when
  ``min_gap_fitted`` is null, are never used): with half-decade buckets, 2 buckets means a ratio above
  10^0.5 (~3.2), 4 buckets above 10^1.5 (~32), wide enough for the fitted sizes' median error of half a
  decade (the loader's cross-validation) and most of their tail; and
* every direct label of the pair in ``pairs`` (either source, either order) agrees with the sizes; a pair
  one of whose labels disagrees is dropped and counted.

The gold follows the sizes: ``larger`` when obj1's ``size_m`` is the larger.

Train: animals; dev: general objects (WordNet)
----------------------------------------------
A sense (a noun synset of the object in the ``hypernyms`` table) is an *animal* when its lexname is
``noun.animal`` and so is that of every hypernym the table lists for it (``noun.Tops`` allowed: animal,
organism; a hypernym with no row of its own is a root and allowed too). This keeps organisms (dog, moose,
bacteria) and leaves out the animal parts WordNet also files under ``noun.animal`` (claw, hoof, feather,
tail: their hypernyms are ``noun.body``). ``animal_sense`` decides which senses count:

* ``first`` (default): the object's *first* noun sense is an animal. WordNet's sense order is not in the
  table, but a synset name carries it for its head lemma (``dog.n.01`` is sense 1 of "dog"): when the
  object has a synset ``<object>.n.01`` that is its first sense; otherwise its first sense is one of the
  synsets named after another lemma (human -> ``homo.n.02``, moose -> ``elk.n.01``), and the object counts
  only when all of those agree. Polysemous words whose first sense is not the animal (alligator, turtle,
  chicken: their first senses are leather, turtleneck, meat) are left out; so are words with a rare animal
  sense (pen: a female swan).
* ``any``: some noun sense is an animal. More animals, but also pen, crane, seal, kite, head (of cattle).

A dev object has no animal sense (an animal part, like the hood of a cobra, does not count) and its first
noun sense (read as above; every candidate when it is not known) is in ``object_lexnames`` (artifacts,
natural objects, places, food, plants, ...; people are left out by default: "human" is a train animal). An
object that is neither (domain ``other``), or absent from WordNet (``unknown``), is left out and counted;
train and dev objects are disjoint by construction.

Rows
----
``size.<split>`` rows per split (default the release's 5000 / 500), capped by what the pairs allow (the
counts are logged; :func:`availability` returns them). Each kept pair gives two rows, (big, small) ->
``larger`` and (small, big) -> ``smaller``; each outcome is sampled apart, so the answers are balanced (to
one). With ``prefer_absolute`` the pairs of two absolute sizes are taken first and pairs with a fitted size
only fill what they leave. Everything is seeded by ``seed`` (``seed:probe:variant:split``).

Articles: the release writes "a" before every object ("a owl", "a airplane"; 758 of its 10,000 train slots
start with a vowel), so does the paper's template; the template keeps it, so stems match the release's.
An "an" would have to live in the slot values, and NO-LANG (which keeps the slots) would then keep it.

Each row has ``args`` ``{obj1, obj2}`` and ``facts``: per object ``size_m``, ``source``, ``n_pairs``,
``bucket`` and its range ``bucket_m`` ``[low, high)`` (``high`` null for an open last bucket), its WordNet
``domain`` (animal / object) and ``first_sense`` (the candidate synsets), then the bucket ``gap``, the
``min_gap`` it had to reach and the direct ``labels`` (``{source, label}``, obj1 against obj2). :func:`rule`
checks a row from these alone.
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Literal, Mapping

import numpy as np
from pydantic import Field, field_validator, model_validator

from generators import register
from probekit.errors import DataError
from probekit.examples import SPLITS, answer_text, example_problem, make_example
from probekit.params import ProbeParams, SplitSizes
from probekit.templates import ProbeSpec, TemplateError, Variant

PROBE = "objects_comparison"
log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]
ABSOLUTE = ("breds", "size_comparisons", "breds+size_comparisons", "doq")  # sizes.source of a measured size
FITTED = "fit"
ANIMAL = "animal"
OUTCOMES = ("larger", "smaller")
DOMAIN = {"train": "animal", "dev": "object"}


class ObjectsParams(ProbeParams):
    """See the module docstring; the defaults are in ``objects_comparison.yaml``."""

    size: SplitSizes
    animal_sense: Literal["first", "any"] = "first"
    object_lexnames: list[str] = Field(min_length=1)
    bucket_decades: float = Field(0.5, gt=0)
    bucket_edges_m: list[float] | None = None
    min_gap: int = Field(2, ge=1)
    min_gap_fitted: int | None = Field(4, ge=1)
    min_pairs_fitted: int = Field(5, ge=0)
    prefer_absolute: bool = True

    @field_validator("object_lexnames")
    @classmethod
    def _lexnames(cls, names):
        bad = [n for n in names if not n.startswith("noun.")]
        if bad:
            raise ValueError(f"not noun lexicographer files (noun.artifact, ...): {bad}")
        if "noun.animal" in names:
            raise ValueError("noun.animal is the train domain; dev objects must not be animals")
        return names

    @field_validator("bucket_edges_m")
    @classmethod
    def _edges(cls, edges):
        if edges is not None:
            if not edges or any(not (e > 0 and math.isfinite(e)) for e in edges):
                raise ValueError(f"must be positive sizes in metres, got {edges}")
            if any(b <= a for a, b in zip(edges, edges[1:])):
                raise ValueError(f"must be strictly ascending, got {edges}")
        return edges

    @model_validator(mode="after")
    def _gaps(self):
        if self.min_gap_fitted is not None and self.min_gap_fitted < self.min_gap:
            raise ValueError(f"min_gap_fitted ({self.min_gap_fitted}) is below min_gap ({self.min_gap}): fitted "
                             f"sizes are an ordering only, they need at least the gap of absolute ones")
        return self


# --- buckets -------------------------------------------------------------------------------------


def bucket(size_m: float, params: ObjectsParams) -> tuple[int, list]:
    """``(k, [low, high))``: the bucket of ``size_m`` and its range in metres (``high`` None when open)."""
    if params.bucket_edges_m is not None:
        edges = params.bucket_edges_m
        k = bisect.bisect_right(edges, size_m)
        return k, [edges[k - 1] if k > 0 else 0.0, edges[k] if k < len(edges) else None]
    w = params.bucket_decades
    k = math.floor(math.log10(size_m) / w)
    while 10 ** (k * w) > size_m:  # float rounding at a bucket edge: the range must hold the size
        k -= 1
    while 10 ** ((k + 1) * w) <= size_m:
        k += 1
    return k, [10 ** (k * w), 10 ** ((k + 1) * w)]


# --- WordNet: animals and general objects --------------------------------------------------------


def _head(synset: str) -> str:
    """The lemma a synset is named after (``shepherd_dog.n.01`` -> ``shepherd_dog``)."""
    return synset.rsplit(".", 2)[0].lower()


def wordnet_domains(hypernyms, objects: set[str], params: ObjectsParams) -> dict[str, tuple[str, list[str]]]:
    """``{object: (domain, first_sense)}``: domain ``animal`` (train), ``object`` (dev), ``other`` (neither:
    an animal sense that does not count, or a first sense outside ``object_lexnames``) or ``unknown`` (not a
    WordNet noun); ``first_sense`` the synsets that may be the object's first noun sense."""
    h = hypernyms[["concept", "concept_synset", "hypernym_synset", "lexname"]]
    mine = h[h["concept"].isin(objects)]
    known = h[h["concept_synset"].isin(set(mine["concept_synset"]) | set(mine["hypernym_synset"]))]
    known = known.drop_duplicates("concept_synset")
    lexname = dict(zip(known["concept_synset"], known["lexname"]))  # the senses and their hypernyms'
    hyper: dict[str, set[str]] = defaultdict(set)
    senses: dict[str, set[str]] = defaultdict(set)
    for concept, synset, parent in zip(mine["concept"], mine["concept_synset"], mine["hypernym_synset"]):
        hyper[synset].add(parent)
        senses[concept].add(synset)

    def kind(synset: str) -> str:
        lex = lexname[synset]
        if lex == "noun.animal" and all(lexname.get(p, "noun.Tops") in ("noun.animal", "noun.Tops")
                                        for p in hyper[synset]):
            return ANIMAL
        return lex

    out = {}
    for obj in sorted(objects):
        if obj not in senses:
            out[obj] = ("unknown", [])
            continue
        synsets = sorted(senses[obj])
        key = obj.replace(" ", "_")
        named_first = [s for s in synsets if s.lower() == f"{key}.n.01"]
        if named_first:
            first = named_first
        else:  # sense 1 is named after another lemma: one of the synsets not named after this one
            first = [s for s in synsets if _head(s) != key] or synsets
        kinds, first_kinds = {kind(s) for s in synsets}, {kind(s) for s in first}
        is_animal = first_kinds == {ANIMAL} if params.animal_sense == "first" else ANIMAL in kinds
        if is_animal:
            out[obj] = (ANIMAL, first)
        elif ANIMAL not in kinds and first_kinds <= set(params.object_lexnames):
            out[obj] = ("object", first)
        else:
            out[obj] = ("other", first)
    return out


# --- the pairs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Obj:
    name: str
    size_m: float
    source: str
    n_pairs: int
    bucket: int
    bucket_m: list
    domain: str
    first_sense: list

    @property
    def fitted(self) -> bool:
        return self.source == FITTED

    def facts(self) -> dict:
        return {"size_m": self.size_m, "source": self.source, "n_pairs": self.n_pairs, "bucket": self.bucket,
                "bucket_m": list(self.bucket_m), "domain": self.domain, "first_sense": list(self.first_sense)}


FLIP = {"larger": "smaller", "smaller": "larger"}


@dataclass
class SplitPlan:
    """The usable objects of one split (``names`` sorted, index ``i``) and, per tier, how many kept partners
    ``j > i`` each has. Pairs are never listed: a split of n objects has n(n-1)/2 candidates (DoQ: millions),
    so :func:`partners` recomputes a row's partners when a sample needs them."""

    names: list[str]
    objects: dict[str, Obj]
    bucket: np.ndarray
    fitted: np.ndarray
    bad: dict[int, set[int]]  # i -> {j}: a direct label of (i, j) disagrees with the sizes
    labels: dict[tuple[int, int], tuple]  # (i, j) -> ((source, label of i against j), ...)
    per_row: list[np.ndarray]  # per tier: kept partners j > i of each i
    counts: Counter


def partners(sp: SplitPlan, i: int, tier: int, params: ObjectsParams) -> np.ndarray:
    """Indices ``j > i`` (ascending) that form a kept pair with ``i`` in ``tier`` (0: both sizes absolute, 1: a
    fitted one; without ``prefer_absolute`` everything is tier 0)."""
    b, either = sp.bucket[i + 1:], sp.fitted[i + 1:] | sp.fitted[i]
    fitted_gap = params.min_gap_fitted if params.min_gap_fitted is not None else params.min_gap
    keep = np.abs(b - sp.bucket[i]) >= np.where(either, fitted_gap, params.min_gap)
    if params.prefer_absolute:
        keep &= either if tier == 1 else ~either
    elif tier == 1:
        return np.zeros(0, dtype=np.int64)
    js = np.nonzero(keep)[0] + i + 1
    if i in sp.bad:
        js = js[~np.isin(js, sorted(sp.bad[i]))]
    return js


@dataclass
class Plan:
    splits: dict[str, SplitPlan] = field(default_factory=dict)
    counts: dict = field(default_factory=dict)


def _tables(tables: Mapping):
    sizes = (tables.get("object_sizes") or {})
    wordnet = (tables.get("wordnet") or {})
    if "sizes" not in sizes or "pairs" not in sizes:
        raise DataError(f"{PROBE} reads the object_sizes table set (tables sizes and pairs): run "
                        f"`probes tables object_sizes` (dvc repro tables-object_sizes)")
    if "hypernyms" not in wordnet:
        raise DataError(f"{PROBE} reads the wordnet table set (table hypernyms): run `probes tables wordnet` "
                        f"(dvc repro tables-wordnet)")
    return sizes["sizes"], sizes["pairs"], wordnet["hypernyms"]


def _split_plan(split: str, sizes, domains, labels, params: ObjectsParams) -> SplitPlan:
    c = Counter()
    objs: dict[str, Obj] = {}
    for name, size_m, source, n_pairs in zip(sizes["object"], sizes["size_m"], sizes["source"], sizes["n_pairs"]):
        domain, first = domains[name]
        if domain != DOMAIN[split]:
            continue
        c["objects in the domain"] += 1
        if not (size_m > 0 and math.isfinite(size_m)):
            c["left out: size not positive"] += 1
            continue
        if source == FITTED and (params.min_gap_fitted is None or n_pairs < params.min_pairs_fitted):
            c["left out: fitted size (min_gap_fitted null or fewer than min_pairs_fitted labels)"] += 1
            continue
        k, range_m = bucket(float(size_m), params)
        objs[name] = Obj(name, float(size_m), source, int(n_pairs), k, range_m, domain, first)
    names = sorted(objs)
    index = {name: i for i, name in enumerate(names)}
    c["objects usable, absolute size"] = sum(not o.fitted for o in objs.values())
    c["objects usable, fitted size"] = sum(o.fitted for o in objs.values())
    sp = SplitPlan(names, objs, np.array([objs[n].bucket for n in names], dtype=np.int64),
                   np.array([objs[n].fitted for n in names], dtype=bool), {}, {}, [], c)
    fitted_gap = params.min_gap_fitted if params.min_gap_fitted is not None else params.min_gap
    for (a, b), direct in sorted(labels.items()):  # a < b, so index[a] < index[b]
        if a not in index or b not in index:
            continue
        oa, ob = objs[a], objs[b]
        if abs(oa.bucket - ob.bucket) < (fitted_gap if oa.fitted or ob.fitted else params.min_gap):
            continue  # not a candidate anyway
        if any((label == "larger") != (oa.size_m > ob.size_m) for _, label in direct):
            sp.bad.setdefault(index[a], set()).add(index[b])
            c["pairs dropped: a direct label disagrees with the sizes"] += 1
        else:
            sp.labels[(index[a], index[b])] = tuple(sorted(direct))
            c["pairs kept with a direct label (all agree)"] += 1
    sp.per_row = [np.array([len(partners(sp, i, tier, params)) for i in range(len(names))], dtype=np.int64)
                  for tier in (0, 1)]
    kept = [int(r.sum()) for r in sp.per_row]
    n = len(names)
    c["pairs left out: buckets closer than the minimum gap"] = (
        n * (n - 1) // 2 - sum(kept) - c["pairs dropped: a direct label disagrees with the sizes"])
    if params.prefer_absolute:
        c["pairs kept, both sizes absolute"], c["pairs kept, a fitted size"] = kept
    else:
        c["pairs kept"] = kept[0]
    return sp


def make_plan(tables: Mapping, params: ObjectsParams) -> Plan:
    """Objects of each split with their buckets, and the kept pairs (implicitly: see :class:`SplitPlan`)."""
    sizes, pairs, hypernyms = _tables(tables)
    unknown_sources = sorted(set(sizes["source"]) - set(ABSOLUTE) - {FITTED})
    if unknown_sources:
        raise DataError(f"{PROBE}: object_sizes.sizes has source(s) {unknown_sources}, neither absolute "
                        f"{list(ABSOLUTE)} nor {FITTED!r}")
    domains = wordnet_domains(hypernyms, set(sizes["object"]), params)
    labels: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)  # (a, b), a < b -> [(source, label)]
    for a, b, label, source in zip(pairs["obj1"], pairs["obj2"], pairs["label"], pairs["source"]):
        if a == b:
            continue
        if a > b:
            a, b, label = b, a, FLIP[label]
        labels[(a, b)].append((source, label))
    plan = Plan()
    plan.splits = {split: _split_plan(split, sizes, domains, labels, params) for split in SPLITS}
    plan.counts = {"sizes": len(sizes),
                   "wordnet": dict(sorted(Counter(d for d, _ in domains.values()).items())),
                   "splits": {split: dict(sp.counts) for split, sp in plan.splits.items()}}
    return plan


def _draw(sp: SplitPlan, tier: int, k: int, rng: random.Random, params: ObjectsParams) -> list[tuple[int, int]]:
    """``k`` distinct kept pairs ``(i, j)`` of ``tier``, uniformly (all of them when there are no more)."""
    counts = sp.per_row[tier]
    total = int(counts.sum())
    if k <= 0 or total == 0:
        return []
    picks = np.arange(total) if k >= total else np.array(sorted(rng.sample(range(total), k)), dtype=np.int64)
    ends = np.cumsum(counts)
    rows = np.searchsorted(ends, picks, side="right")
    out, row, js = [], -1, None
    for p, r in zip(picks.tolist(), rows.tolist()):
        if r != row:
            row, js = r, partners(sp, r, tier, params)
        out.append((r, int(js[p - (ends[r] - counts[r])])))
    return out


def choose(plan: Plan, params: ObjectsParams, split: str, rng: random.Random) -> list[tuple[str, str, str, tuple]]:
    """``(obj1, obj2, outcome, labels)`` rows of ``split``: ``size // 2`` per outcome (to one; capped by the
    kept pairs), drawn from tier 0 first, shuffled. ``labels``: the direct labels, obj1 against obj2."""
    sp = plan.splits[split]
    n = params.size[split]
    rows = []
    for o, outcome in enumerate(OUTCOMES):
        k = n // 2 + (o < n % 2)
        drawn = _draw(sp, 0, k, rng, params)
        drawn += _draw(sp, 1, k - len(drawn), rng, params)
        for i, j in drawn:
            a, b = sp.names[i], sp.names[j]
            labels = sp.labels.get((i, j), ())
            if sp.objects[a].size_m < sp.objects[b].size_m:
                a, b, labels = b, a, tuple((s, FLIP[lab]) for s, lab in labels)
            if outcome == "smaller":  # a is the larger one
                a, b, labels = b, a, tuple((s, FLIP[lab]) for s, lab in labels)
            rows.append((a, b, outcome, labels))
    rng.shuffle(rows)
    return rows


def availability(tables: Mapping, params: ObjectsParams) -> dict:
    """The counts behind a build: WordNet domains, objects and pairs per split, what was left out and why."""
    return availability_of(make_plan(tables, params), params)


def availability_of(plan: Plan, params: ObjectsParams) -> dict:
    counts = {"sizes": plan.counts["sizes"], "wordnet": plan.counts["wordnet"],
              "splits": {s: dict(c) for s, c in plan.counts["splits"].items()}}
    for split, sp in plan.splits.items():
        counts["splits"][split]["rows available (2 per kept pair)"] = 2 * int(sum(r.sum() for r in sp.per_row))
        counts["splits"][split]["rows asked"] = params.size[split]
    return counts


def _log(counts: dict, built: Mapping[str, list]) -> None:
    log.info("%s: WordNet domains of the sized objects: %s", PROBE, counts["wordnet"])
    for split in SPLITS:
        c = counts["splits"][split]
        objects = {o for r in built[split] for o in (r["args"]["obj1"], r["args"]["obj2"])}
        log.info("%s/%s: %s; built %d rows over %d objects", PROBE, split,
                 ", ".join(f"{k} {v}" for k, v in c.items()), len(built[split]), len(objects))
        if len(built[split]) < c["rows asked"]:
            log.warning("%s/%s: the sizes allow %d rows, fewer than size asks (%d)", PROBE, split,
                        len(built[split]), c["rows asked"])


@register(PROBE, version="1", params=ObjectsParams, tables=("object_sizes", "wordnet"))
def generate(spec: ProbeSpec, variant: Variant, params: ObjectsParams, tables: Mapping) -> dict[str, list[dict]]:
    """Balanced pairs of animals (train) and of general objects (dev), a bucket gap apart, gold from sizes."""
    template = spec.template(variant.template)
    if len(variant.templates) != 1 or set(template.slots) != {"obj1", "obj2"}:
        raise TemplateError(f"{spec.path}: variant {variant.name!r} needs one template with slots obj1 and obj2")
    if set(template.answers) != set(OUTCOMES):
        raise TemplateError(f"{spec.path}: template {template.id!r}: answers must map exactly the outcomes "
                            f"{list(OUTCOMES)}, got {sorted(template.answers)}")
    plan = make_plan(tables, params)
    counts = availability_of(plan, params)
    splits = {}
    for split in SPLITS:
        rng = random.Random(f"{params.seed}:{spec.probe}:{variant.name}:{split}")
        objs = plan.splits[split].objects
        rows = []
        for obj1, obj2, outcome, labels in choose(plan, params, split, rng):
            o1, o2 = objs[obj1], objs[obj2]
            args = {"obj1": obj1, "obj2": obj2}
            row = make_example(probe=spec.probe, variant=variant.name, template_id=template.id,
                               stem=template.fill(args), choices=list(template.answers.values()),
                               answer=template.answers[outcome], args=args, rng=rng)
            row["facts"] = {"obj1": o1.facts(), "obj2": o2.facts(), "gap": abs(o1.bucket - o2.bucket),
                            "min_gap": params.min_gap_fitted if o1.fitted or o2.fitted else params.min_gap,
                            "labels": [{"source": s, "label": lab} for s, lab in labels]}
            rows.append(row)
        splits[split] = rows
    _log(counts, splits)
    return splits


# --- the construction rule (fidelity report) ------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _outcome_of_word() -> dict[str, dict[str, str]]:
    """template id -> {answer word (also its NO-LANG word): outcome}."""
    import generators
    from probekit.templates import load_probe_spec

    spec = load_probe_spec(generators.get(PROBE).template_path)
    out = {}
    for tid, t in spec.templates.items():
        words = {w: o for o, w in t.answers.items()}
        words.update({spec.nolang_answers[w]: o for o, w in t.answers.items() if w in spec.nolang_answers})
        out[tid] = words
    return out


def _object_problem(which: str, f) -> str | None:
    if not isinstance(f, Mapping):
        return f"facts.{which} missing"
    size, b, rng_m = f.get("size_m"), f.get("bucket"), f.get("bucket_m")
    if not isinstance(size, (int, float)) or isinstance(size, bool) or not (size > 0 and math.isfinite(size)):
        return f"facts.{which}.size_m is not a positive size"
    if f.get("source") not in (*ABSOLUTE, FITTED):
        return f"facts.{which}.source {f.get('source')!r} is neither absolute nor {FITTED!r}"
    if not isinstance(b, int) or not (isinstance(rng_m, list) and len(rng_m) == 2):
        return f"facts.{which}: bucket and bucket_m [low, high) missing"
    low, high = rng_m
    if not (isinstance(low, (int, float)) and low <= size and (high is None or size < high)):
        return f"facts.{which}.size_m {size} is not in its bucket_m {rng_m}"
    return None


def rule(row: Mapping) -> str | None:
    """A problem of one of our rows, from the row alone: the gold agrees with the sizes in its facts (obj1
    larger iff its size is), the bucket gap reaches the minimum (at least one bucket), each size lies in
    its bucket's range, and no direct pair label contradicts the gold."""
    if example_problem(row):
        return None  # counted by the generic rules
    words = _outcome_of_word().get(row.get("template_id"))
    if words is None:
        return f"template_id {row.get('template_id')!r} is not a template of {PROBE}"
    facts, args = row.get("facts"), row.get("args") or {}
    if not isinstance(facts, Mapping):
        return "no facts (the sizes the gold came from)"
    for which in ("obj1", "obj2"):
        problem = _object_problem(which, facts.get(which))
        if problem:
            return problem
        if not isinstance(args.get(which), str) or args[which] not in row["question"]["stem"]:
            return f"args.{which} missing or not in the stem"
    if args["obj1"] == args["obj2"]:
        return "an object compared with itself"
    gold = words.get(answer_text(row))
    if gold is None:
        return f"gold {answer_text(row)!r} is not an answer word of template {row['template_id']!r}"
    s1, s2 = facts["obj1"]["size_m"], facts["obj2"]["size_m"]
    if s1 == s2:
        return "the two objects have the same size"
    if gold != ("larger" if s1 > s2 else "smaller"):
        return f"gold {gold!r}, but the sizes are {s1} m and {s2} m"
    gap, min_gap = abs(facts["obj1"]["bucket"] - facts["obj2"]["bucket"]), facts.get("min_gap")
    if not isinstance(min_gap, int) or min_gap < 1:
        return "facts.min_gap missing or below 1"
    if facts.get("gap") != gap or gap < min_gap:
        return f"bucket gap {gap} is below the minimum {min_gap}"
    labels = facts.get("labels")
    if not isinstance(labels, list) or not all(isinstance(x, Mapping) for x in labels):
        return "facts.labels is not a list of {source, label}"
    bad = [x for x in labels if x.get("label") != gold]
    if bad:
        return f"a direct pair label contradicts the gold: {bad[0]}"
    return None
