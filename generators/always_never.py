"""ALWAYS-NEVER (oLMpics §4.2): how often does a statement hold? Gold comes from people, never from here.

The generator turns the annotation store (:mod:`probekit.annotations`) into rows: the release's annotated
statements (params ``release``, parsed back and fixed, each keeping its train/dev split) and the gold tables
of ``probes annotate import`` (params ``annotations``; a statement also in the release keeps the release's
split and takes the newer gold; a new one goes to dev with probability ``dev_share``, by a hash of its key,
so its split never changes when other statements are added). Only annotated statements become rows: a
template without annotations yields none and is reported (``probes annotate export`` lists its statements
for crowdworkers). Every row keeps ``args`` ({x, y}) and ``facts`` (where its gold came from), which
:func:`rule` checks against that source.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import random
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Literal, Mapping

from pydantic import Field, ValidationInfo, field_validator

from generators import register
from probekit import annotations
from probekit.annotations import Gold
from probekit.errors import DataError
from probekit.examples import SPLITS, answer_text, make_example
from probekit.params import ProbeParams
from probekit.templates import ProbeSpec, TemplateError, Variant

log = logging.getLogger("probekit.always_never")
Split = Literal["train", "dev"]


class AlwaysNeverParams(ProbeParams):
    """Where the annotations are: the release files, gold tables, and the word fixes of the release."""

    release: dict[Split, str] = Field(default_factory=dict)  # {train, dev} jsonl files, or {} for none
    release_fixes: dict[str, str] = Field(default_factory=dict)  # whole-word typo fixes of release stems
    annotations: list[str] = Field(default_factory=list)  # gold CSVs (probes annotate import)
    candidates: list[str] = Field(default_factory=list)  # candidate CSVs: to count the unannotated
    dev_share: float = Field(0.22, ge=0, le=1)

    @field_validator("release")
    @classmethod
    def _both_splits(cls, release):
        if release and set(release) != set(SPLITS):
            raise ValueError(f"give both train and dev files, or {{}} to leave the release out; got {sorted(release)}")
        return release

    @field_validator("release_fixes")
    @classmethod
    def _words(cls, fixes, info: ValidationInfo):
        bad = [w for w, r in fixes.items() if not w.strip() or not str(r).strip()]
        if bad:
            raise ValueError(f"empty word or fix for {bad}")
        return fixes


def hash_split(key: tuple, dev_share: float) -> str:
    """dev with probability ``dev_share``, by a hash of the statement key (stable, order-independent)."""
    digest = hashlib.sha256(json.dumps(list(key), ensure_ascii=False).encode("utf-8")).hexdigest()
    return "dev" if int(digest[:12], 16) / 16 ** 12 < dev_share else "train"


def annotation_store(spec: ProbeSpec, params: AlwaysNeverParams) -> tuple[dict[tuple, Gold], dict]:
    """Every annotated statement ``{(template_id, x, y): Gold}`` (with its split) and a report: the release
    parse, each gold table, per template the annotated and still unannotated counts, concept overlap."""
    store: dict[tuple, Gold] = {}
    report: dict = {"release": None, "annotations": {}}
    if params.release:
        missing = [f"{s}: {p}" for s, p in params.release.items() if not Path(p).is_file()]
        if missing:
            raise DataError(f"{spec.probe}.release: file(s) missing ({'; '.join(missing)}); fetch them: "
                            f"probes sources fetch olmpics")
        gold, report["release"] = annotations.parse_release(params.release, spec, params.release_fixes)
        store.update((g.key, g) for g in gold)
    for path in params.annotations:
        counts = Counter()
        for g in annotations.read_gold(path, spec):
            old = store.get(g.key)
            if old is None:
                counts["new"] += 1
                store[g.key] = replace(g, split=hash_split(g.key, params.dev_share))
            else:
                counts["replaced"] += 1
                counts["gold_changed"] += old.gold != g.gold
                store[g.key] = replace(g, split=old.split)
        report["annotations"][str(path)] = dict(counts)
    wanted: dict[str, set] = defaultdict(set)
    for path in params.candidates:
        for key in annotations.read_candidates(path, spec):
            wanted[key[0]].add(key)
    per_template = {}
    for tid in spec.templates:
        splits = Counter(g.split for g in store.values() if g.template_id == tid)
        entry = {split: splits[split] for split in SPLITS}
        if params.candidates:
            entry["unannotated"] = sum(k not in store for k in wanted[tid])
        per_template[tid] = entry
    report["templates"] = per_template
    report["overlap"] = concept_overlap(store.values())
    return store, report


def concept_overlap(golds) -> dict:
    """How many dev subjects (x), objects (y) and (x, y) pairs also occur in train (any template)."""
    seen = {s: defaultdict(set) for s in SPLITS}
    for g in golds:
        for name, value in (("x", g.x), ("y", g.y), ("pair", (g.x, g.y))):
            seen[g.split][name].add(value)
    return {name: {"dev": len(seen["dev"][name]), "also_in_train": len(seen["dev"][name] & seen["train"][name])}
            for name in ("x", "y", "pair")}


def describe(report: Mapping) -> list[str]:
    """The report as log lines."""
    lines = []
    rel = report.get("release")
    if rel:
        rows = ", ".join(f"{s} {n}" for s, n in rel["rows"].items())
        lines.append(f"release: {sum(rel['rows'].values())} rows ({rows}) -> {rel['statements']} annotated "
                     f"statements; matched per template: " + ", ".join(f"{t} {n}" for t, n in rel["matched"].items()))
        lines.append(f"release defects: stray spaces fixed {rel['spaces_fixed']}, word fixes {rel['word_fixes'] or 0}, "
                     f"duplicate ids {rel['duplicate_ids']}, exact duplicates {rel['exact_duplicates']}, "
                     f"conflicting statements {rel['conflicting_statements']}, "
                     f"in train and dev {rel['in_train_and_dev']}, matching no template {rel['unmatched']}, "
                     f"ambiguous {rel['ambiguous']}, rows left out {len(rel['left_out'])}")
        lines += [f"release: left out {x}" for x in rel["left_out"][:5]]
    for path, counts in report["annotations"].items():
        lines.append(f"annotations {path}: {counts.get('new', 0)} new statements, {counts.get('replaced', 0)} "
                     f"re-annotated ({counts.get('gold_changed', 0)} with a different gold)")
    for tid, n in report["templates"].items():
        todo = (f", {n['unannotated']} candidate(s) unannotated (probes annotate export)" if "unannotated" in n
                else "" if n["train"] + n["dev"] else ": no annotations (probes annotate export lists its statements)")
        lines.append(f"template {tid}: annotated train {n['train']}, dev {n['dev']}{todo}")
    o = report["overlap"]
    lines.append("train/dev concepts (not disjoint in the release): " + ", ".join(
        f"{name} {v['also_in_train']} of {v['dev']} dev also in train" for name, v in o.items()))
    return lines


@register("always_never", version="1", params=AlwaysNeverParams, sources=("olmpics",))
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


# --- the construction rule (fidelity report) ------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _spec() -> ProbeSpec:
    import generators
    from probekit.templates import load_probe_spec

    return load_probe_spec(generators.get("always_never").template_path)


@functools.lru_cache(maxsize=None)
def _matcher() -> annotations.Matcher:
    return annotations.Matcher(_spec())


@functools.lru_cache(maxsize=None)
def _release_lines(path: str) -> dict[int, dict]:
    from probekit.probe_dataset import read_jsonl

    rows, lines = read_jsonl(path, with_lines=True)
    return dict(zip(lines, rows))


@functools.lru_cache(maxsize=None)
def _gold_table(path: str) -> dict[tuple, Gold]:
    return {g.key: g for g in annotations.read_gold(path, _spec())}


def _annotation(facts: Mapping, key: tuple) -> Gold | str:
    """The annotation ``facts`` point to, read again from its source; or what is wrong."""
    source = str(facts.get("source", ""))
    if not Path(source).is_file():
        return f"annotation source {source!r} not found (run from the project folder)"
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
        return f"unknown template {row.get('template_id')!r}"
    gold = answer_text(row)
    if gold not in template.answers.values():
        return f"gold {gold!r} is not one of {', '.join(template.answers.values())}"
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
        return f"gold {gold!r} but the annotation says {template.answers[found.gold]!r}"
    return None
