"""ALWAYS-NEVER's annotation store (the probe's module docstring tells where gold comes from): every annotated
statement, from the release (parsed back and fixed, keeping its split) and the gold tables of ``probes
annotate import`` (a new statement split by a hash of its key), with a report of that reading (the release
parse, each gold table, per template the annotated and unannotated counts, the train/dev concept overlap)
and its log lines."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from generators.always_never.params import AlwaysNeverParams
from generators.shared.hashed_split import hashed_split
from probekit.data.examples import SPLITS
from probekit.errors import DataError
from generators.always_never import annotations
from generators.always_never.annotations import Gold
from probekit.probes.templates import ProbeSpec


def hash_split(key: tuple, dev_share: float) -> str:
    """dev with probability ``dev_share``, by a hash of the statement key (stable, order-independent)."""
    return hashed_split(json.dumps(list(key), ensure_ascii=False), dev_share)


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
