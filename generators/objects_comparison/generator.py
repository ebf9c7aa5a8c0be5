"""OBJECTS COMPARISON (oLMpics §4.1): is OBJ-1 usually much larger or smaller than OBJ-2?

``The size of a {obj1} is usually much [MASK] than the size of a {obj2} .``, answers larger / smaller. The
paper buckets objects by their DoQ median size (then fixes errors by hand), fills the slots "using objects
that are in the same bucket" (``pairing`` below: ours pairs objects buckets apart) and trains on animals, evaluating on general objects (127 and 35 objects). Here the objects and sizes come
from the ``object_sizes`` table set and the split from the ``wordnet`` table set.

Offline (the mirror's BREDS / size-comparisons anchors and ViPhy / VerbPhysics pairs, no DoQ) the defaults
give 58 usable animals (25 with an absolute size), so train holds 674 rows, not 5000 (logged; 586 with
``pairing: paper_literal``); dev has plenty (~190 objects over its 500 rows, all pairs of absolute sizes).

Sizes and how far apart two objects must be
-------------------------------------------
``sizes.size_m`` is an *absolute* size (a length in metres) when ``source`` is ``breds``,
``size_comparisons``, ``breds+size_comparisons`` or ``doq``; with ``source`` ``fit`` it was fitted from
pairwise labels (ViPhy, VerbPhysics) around those anchors and is only an ordering estimate (ViPhy compares
apparent sizes in photographs: a kitten comes out at ~7 m, a giraffe at ~60 m; see
:mod:`probekit.sources.loaders.object_sizes`). Every object gets a bucket on a log10 scale: bucket ``k`` holds
``[10^(k*w), 10^((k+1)*w))`` metres with ``w = bucket_decades`` (or the buckets between ``bucket_edges_m``,
the first and last open-ended). A pair is kept only when

* its buckets are at least ``min_gap`` apart when both sizes are absolute, at least ``min_gap_fitted`` apart
  when either is fitted (fitted objects with fewer than ``min_pairs_fitted`` labels, or all of them when
  ``min_gap_fitted`` is null, are never used): with half-decade buckets, 2 buckets means a ratio above
  10^0.5 (~3.2), 4 buckets above 10^1.5 (~32), wide enough for the fitted sizes' median error of half a
  decade (the loader's cross-validation) and most of their tail; and
* every direct label of the pair in ``pairs`` (either source, either order) agrees with the sizes; a pair
  one of whose labels disagrees is dropped and counted.

That gap is our reading of §4.1, ``pairing: ours`` (default). The paper says "We automatically instantiate
object slots using objects that are in the same bucket"; ``pairing: paper_literal`` reads it as written: both
objects in one bucket, of unequal sizes (``min_gap`` unused, fitted objects used as above), each row's facts
carrying ``pairing: paper_literal`` in place of ``min_gap``.

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

import functools
import logging
import math
import random
from typing import Literal, Mapping

from generators.shared.build import register
from generators.objects_comparison.pairs import OUTCOMES, Plan, choose, make_plan
from generators.objects_comparison.params import ABSOLUTE, FITTED, PROBE, ObjectsParams
from probekit.data.examples import SPLITS, answer_text, example_problem, make_example
from probekit.errors import shown
from probekit.probes.templates import ProbeSpec, TemplateError, Variant

log = logging.getLogger(f"probekit.{PROBE}")
Split = Literal["train", "dev"]


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


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register(PROBE, version="2", params=ObjectsParams, tables=("object_sizes", "wordnet"), outcomes=OUTCOMES)
def generate(spec: ProbeSpec, variant: Variant, params: ObjectsParams, tables: Mapping) -> dict[str, list[dict]]:
    """Balanced pairs of animals (train) and of general objects (dev), a bucket gap apart, gold from sizes."""
    template = spec.template(variant.template)
    if len(variant.templates) != 1 or set(template.slots) != {"obj1", "obj2"}:
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)} needs one template with slots obj1 and obj2")
    if params.mode == "grid":
        return matrix(spec, variant, params)
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
            pairing = ({"min_gap": params.min_gap_fitted if o1.fitted or o2.fitted else params.min_gap}
                       if params.pairing == "ours" else {"pairing": params.pairing})
            row["facts"] = {"obj1": o1.facts(), "obj2": o2.facts(), "gap": abs(o1.bucket - o2.bucket), **pairing,
                            "labels": [{"source": s, "label": lab} for s, lab in labels]}
            rows.append(row)
        splits[split] = rows
    _log(counts, splits)
    return splits


def matrix(spec: ProbeSpec, variant: Variant, params: ObjectsParams) -> dict[str, list[dict]]:
    """oLMpics Table 4's probe: every ordered pair of ``params.matrix`` (objects from small to large), row-major
    (obj1 the row, obj2 the column, the diagonal left out) on the dev split, no train split; the gold is ``larger``
    where obj1 comes later in the list. Each row's ``facts.rank`` gives both objects' places in the list, which
    ``facts.matrix`` holds (the report lays the matrix out from them); no sizes or tables are read."""
    template = spec.template(variant.template)
    rng = random.Random(f"{params.seed}:{spec.probe}:{variant.name}:dev")
    rows = []
    for i, obj1 in enumerate(params.matrix):
        for j, obj2 in enumerate(params.matrix):
            if i == j:
                continue
            args = {"obj1": obj1, "obj2": obj2}
            row = make_example(probe=spec.probe, variant=variant.name, template_id=template.id,
                               stem=template.fill(args), choices=list(template.answers.values()),
                               answer=template.answers["larger" if i > j else "smaller"], args=args, rng=rng)
            row["facts"] = {"rank": {"obj1": i, "obj2": j}, "matrix": list(params.matrix)}
            rows.append(row)
    log.info("%s/%s: the matrix of %d objects, %d ordered pairs (dev)", PROBE, variant.name, len(params.matrix),
             len(rows))
    return {"dev": rows}


# --- the construction rule (fidelity report) ------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _outcome_of_word() -> dict[str, dict[str, str]]:
    """template id -> {answer word (also its NO-LANG word): outcome}."""
    from generators.shared import registry

    spec = registry.get(PROBE).probe_spec()
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
        return f"facts.{which}.source {shown(f.get('source'))} is neither absolute nor {shown(FITTED)}"
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
        return f"template_id {shown(row.get('template_id'))} is not a template of {PROBE}"
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
        return f"gold {shown(answer_text(row))} is not an answer word of template {shown(row['template_id'])}"
    s1, s2 = facts["obj1"]["size_m"], facts["obj2"]["size_m"]
    if s1 == s2:
        return "the two objects have the same size"
    if gold != ("larger" if s1 > s2 else "smaller"):
        return f"gold {shown(gold)}, but the sizes are {s1} m and {s2} m"
    gap, min_gap = abs(facts["obj1"]["bucket"] - facts["obj2"]["bucket"]), facts.get("min_gap")
    if facts.get("gap") != gap:
        return f"facts.gap {shown(facts.get('gap'))} is not the buckets' gap {gap}"
    if facts.get("pairing", "ours") == "paper_literal":
        if gap != 0:
            return f"pairing paper_literal, but the objects are {gap} buckets apart"
    elif facts.get("pairing", "ours") != "ours":
        return f"facts.pairing {shown(facts.get('pairing'))} is neither ours nor paper_literal"
    elif not isinstance(min_gap, int) or min_gap < 1:
        return "facts.min_gap missing or below 1"
    elif gap < min_gap:
        return f"bucket gap {gap} is below the minimum {min_gap}"
    labels = facts.get("labels")
    if not isinstance(labels, list) or not all(isinstance(x, Mapping) for x in labels):
        return "facts.labels is not a list of {source, label}"
    bad = [x for x in labels if x.get("label") != gold]
    if bad:
        return f"a direct pair label contradicts the gold: {bad[0]}"
    return None
