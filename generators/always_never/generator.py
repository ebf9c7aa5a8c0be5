"""ALWAYS-NEVER (oLMpics §4.2): how often does a statement hold? Gold comes from people, never from here.

The generator turns the annotation store (:mod:`generators.always_never.annotations`) into rows: the release's annotated
statements (params ``release``, parsed back and fixed, each keeping its train/dev split) and the gold tables
of ``probes annotate import`` (params ``annotations``; a statement also in the release keeps the release's
split and takes the newer gold; a new one goes to dev with probability ``dev_share``, by a hash of its key,
so its split never changes when other statements are added). Only annotated statements become rows: a
template without annotations yields none and is reported (``probes annotate export`` lists its statements
for crowdworkers). Every row keeps ``args`` ({x, y}) and ``facts`` (where its gold came from), which
:func:`rule` checks against that source.

**Statements to annotate** (``probes annotate export`` without ``--candidates``; :func:`export_candidates`):
params ``export.types`` declare, per template, the ConceptNet type(s) of each slot (``has_part: {x: [animal,
...], y: [body part, organ]}``); a slot's candidate words are the heads of an ``IsA`` edge to one of its
types in the ``conceptnet`` table set's ``edges`` (``export.hops: 2``: also the heads of an ``IsA`` edge to
such a head), single words by default (``export.single_words``), with a wordfreq Zipf frequency within
[``export.min_zipf``, ``export.max_zipf``] (the upper bound drops the function words ConceptNet lists as
heads: ``this``, ``there``, ``be``). Per template, ``export.per_template`` pairs (x, y), x != y, are drawn
from all pairs of the two pools in an order seeded by ``export.seed`` (and the template id), skipping the
statements already annotated (the release's and the gold tables'), so a later export, after more gold came
in, draws the next ones. The paper instantiated only the subject slot from ConceptNet and took the objects
from BERT-L's top-20 completions of the masked template, filtered by type; that model filter is left to the
user (e.g. an evaluator scoring the exported statements with BERT-L before they go to crowdworkers): here
both slots come from ConceptNet types, and nothing pretends to be BERT-L's choice.

**Release defects** (:func:`release_problems`, read by the fidelity report): the release parse counted per
split (word fixes such as ``tune -> tuna``, stray spaces, duplicate statements, statements matching no
template, conflicting gold...): what generating from the release fixes.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Mapping

from generators.shared.build import register
from generators.always_never.params import AlwaysNeverParams, ExportParams
from generators.always_never.statements import annotation_store, describe
from probekit.data.examples import SPLITS, answer_text, make_example
from probekit.errors import DataError, shown
from generators.always_never import annotations
from generators.always_never.annotations import Gold
from probekit.probes.lexicon import zipf
from probekit.probes.templates import ProbeSpec, Variant

log = logging.getLogger("probekit.always_never")
OUTCOMES = ("never", "rarely", "sometimes", "often", "always")   # the gold of an annotation: how often it holds


# version 2: PERTURBED-LANG's draws seeded by each example's key, not its text (probekit/probes/controls.py)
@register("always_never", version="2", params=AlwaysNeverParams, sources=("olmpics",), outcomes=OUTCOMES)
def generate(spec: ProbeSpec, variant: Variant, params: AlwaysNeverParams, tables: Mapping) -> dict[str, list[dict]]:
    """One row per annotated statement of the variant's templates, in its annotation's split."""
    ids = list(variant.templates)
    store, report = annotation_store(spec, params)
    for line in describe(report):
        log.info("%s: %s", spec.probe, line)
    splits: dict[str, list[dict]] = {split: [] for split in SPLITS}
    for key in sorted(store):
        g = store[key]
        if g.template_id not in ids:
            continue
        template = spec.template(g.template_id)
        args = {"x": g.x, "y": g.y}
        rng = random.Random(f"{params.seed}:{spec.probe}:{variant.name}:{json.dumps(list(key))}")
        row = make_example(probe=spec.probe, variant=variant.name, template_id=g.template_id,
                           stem=template.fill(args), choices=list(template.answers.values()),
                           answer=template.answers[g.gold], args=args, rng=rng)
        row["facts"] = g.facts()
        splits[g.split].append(row)
    for split, rows in splits.items():
        random.Random(f"{params.seed}:{spec.probe}:{variant.name}:{split}").shuffle(rows)
    return splits


def annotated_keys(spec: ProbeSpec, params: AlwaysNeverParams) -> set[tuple]:
    """The statements that have gold already (what ``probes annotate export`` leaves out)."""
    return set(annotation_store(spec, params)[0])


# --- statements to annotate, drawn from ConceptNet types (probes annotate export) -------------------------

EXPORT_TABLES = ("conceptnet",)  # the table sets export_candidates reads (probes tables NAME)
WORD = re.compile(r"[a-z]+")


def isa_index(edges) -> dict[str, set[str]]:
    """``{type: heads}`` of the ``IsA`` edges of an ``edges`` table."""
    isa = edges[edges["relation"] == "IsA"]
    below: dict[str, set[str]] = defaultdict(set)
    for head, tail in zip(isa["head"], isa["tail"]):
        below[tail].add(head)
    return below


def isa_members(index: Mapping[str, set[str]], types: Iterable[str], hops: int = 1) -> set[str]:
    """Heads of an ``IsA`` edge to one of ``types`` (``index``: :func:`isa_index`); with ``hops=2`` also heads
    of an ``IsA`` edge to such a head (a type itself is a member only where an edge says so)."""
    members: set[str] = set()
    frontier = set(types)
    for _ in range(hops):
        frontier = set().union(*(index.get(t, set()) for t in frontier)) - members
        members |= frontier
    return members


def candidate_words(members: Iterable[str], export: ExportParams) -> list[str]:
    """A slot's candidate words of its type members: single words if asked, within the Zipf bounds; sorted."""
    return sorted(w for w in members if (not export.single_words or WORD.fullmatch(w))
                  and export.min_zipf <= zipf(w) <= export.max_zipf)


def export_candidates(spec: ProbeSpec, params: AlwaysNeverParams, tables: Mapping[str, Mapping],
                      annotated: Iterable[tuple] = ()) -> tuple[list[tuple], dict]:
    """Statements ``(template_id, x, y)`` to annotate, drawn per template from its slots' ConceptNet types
    (params ``export``; ``tables``: ``{"conceptnet": {"edges": DataFrame}}``), leaving out ``annotated``;
    and a report per template: pool sizes, pairs, drawn, skipped as annotated, and how many of the
    annotated statements of the template have both words of the declared types (``typed``) and in the
    pools (``in_pools``). A template without declared types draws nothing (``"types": None``)."""
    export = params.export
    try:
        index = isa_index(tables["conceptnet"]["edges"])
    except KeyError:
        raise DataError("export_candidates needs the conceptnet table set's edges table "
                        "(probes tables conceptnet --out data/tables/conceptnet)") from None
    annotated = set(annotated)
    keys: list[tuple] = []
    report: dict[str, dict] = {}
    for tid in spec.templates:
        annotations.annotated_template(spec, tid)
        types = export.types.get(tid)
        mine = sorted(k for k in annotated if k[0] == tid)
        if not types:
            report[tid] = {"types": None, "annotated": len(mine)}
            continue
        typed = {s: isa_members(index, types[s], export.hops) for s in annotations.SLOTS}
        xs, ys = (candidate_words(typed[s], export) for s in annotations.SLOTS)
        order = list(range(len(xs) * len(ys)))
        random.Random(f"{export.seed}:{spec.probe}:{tid}").shuffle(order)
        drawn, skipped = [], 0
        for i in order:
            if len(drawn) == export.per_template:
                break
            x, y = xs[i // len(ys)], ys[i % len(ys)]
            if x == y:
                continue
            if (tid, x, y) in annotated:
                skipped += 1
                continue
            drawn.append((tid, x, y))
        keys += sorted(drawn)
        in_x, in_y = set(xs), set(ys)
        report[tid] = {"types": {s: list(types[s]) for s in annotations.SLOTS}, "x_words": len(xs),
                       "y_words": len(ys), "pairs": len(xs) * len(ys) - len(in_x & in_y),
                       "drawn": len(drawn), "skipped_annotated": skipped, "annotated": len(mine),
                       "typed": sum(x in typed["x"] and y in typed["y"] for _, x, y in mine),
                       "in_pools": sum(x in in_x and y in in_y for _, x, y in mine)}
    return keys, report


# --- the release's defects that generation fixes (fidelity report) ----------------------------------------


def effective_params(params_path: str | Path | None = None) -> AlwaysNeverParams:
    """The probe's params as ``probes generate`` reads them (``params_path``, else ./params.yaml if present,
    over the YAML's defaults)."""
    from probekit.params import probe_section, read_params

    return probe_section(read_params(params_path), _spec(), AlwaysNeverParams)


def release_problems(rows_by_split: Mapping[str, list[dict]]) -> dict[str, Counter]:
    """Per split, the release's defects that generating from it fixes or leaves out, counted as the parse of
    :func:`generators.always_never.annotations.parse_release_rows` finds them with the probe's ``release_fixes``: word
    fixes (``word fixed (tune -> tuna)``), stray spaces, duplicate statements, a statement in train and dev,
    conflicting gold, no or two matching templates. Malformed rows and duplicate ids are left to the fidelity
    report's generic rules."""
    _, report = annotations.parse_release_rows(rows_by_split, _spec(), effective_params().release_fixes)
    return {split: Counter(report["by_split"].get(split, {})) for split in rows_by_split}


# --- the construction rule (fidelity report) ------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _spec() -> ProbeSpec:
    from generators.shared import registry

    return registry.get("always_never").probe_spec()


@functools.lru_cache(maxsize=None)
def _matcher() -> annotations.Matcher:
    return annotations.Matcher(_spec())


@functools.lru_cache(maxsize=None)
def _release_lines(path: str) -> dict[int, dict]:
    from probekit.data.jsonl import read_jsonl

    rows, lines = read_jsonl(path, with_lines=True)
    return dict(zip(lines, rows))


@functools.lru_cache(maxsize=None)
def _gold_table(path: str) -> dict[tuple, Gold]:
    return {g.key: g for g in annotations.read_gold(path, _spec())}


def _annotation(facts: Mapping, key: tuple) -> Gold | str:
    """The annotation ``facts`` point to, read again from its source; or what is wrong."""
    source = str(facts.get("source", ""))
    if not Path(source).is_file():
        return f"annotation source {shown(source)} not found (run from the project folder)"
    if facts.get("kind") == "release":
        row = _release_lines(source).get(facts.get("line"))
        if row is None:
            return f"{source}: no row at line {facts.get('line')}"
        gold, problem, _ = annotations.release_gold_of(row, _matcher(), facts.get("fixes", {}))
        return gold if gold is not None else f"{source}:{facts['line']}: {problem}"
    found = _gold_table(source).get(key)
    return found if found is not None else f"{source}: no gold for {key}"


def rule(row: Mapping) -> str | None:
    """ALWAYS-NEVER's construction rule: the gold is one of the five words, and the statement's
    (template, x, y) and gold are those of the annotation its ``facts`` name (re-read from that source)."""
    spec = _spec()
    template = spec.templates.get(row.get("template_id"))
    if template is None:
        return f"unknown template {shown(row.get('template_id'))}"
    gold = answer_text(row)
    if gold not in template.answers.values():
        return f"gold {shown(gold)} is not one of {', '.join(template.answers.values())}"
    args = row.get("args") or {}
    if set(args) != set(template.slots) or row["question"]["stem"] != template.fill(args):
        return "stem is not the template filled with args"
    facts = row.get("facts")
    if not isinstance(facts, Mapping):
        return "no facts (the annotation the gold came from)"
    key = (template.id, args["x"], args["y"])
    found = _annotation(facts, key)
    if isinstance(found, str):
        return found
    if found.key != key:
        return f"annotation at {facts['source']}:{facts.get('line')} is {found.key}, not {key}"
    if template.answers[found.gold] != gold:
        return f"gold {shown(gold)} but the annotation says {shown(template.answers[found.gold])}"
    return None
