"""Shared by the synthetic number probes: their params, tuples of distinct values, balanced sampling, grids."""

from __future__ import annotations

import itertools
import math
import random
from typing import Callable, Literal, Mapping

from pydantic import ValidationInfo, field_validator

from probekit.data.examples import SPLITS, make_example
from probekit.errors import ParamsError, shown
from probekit.params import ProbeParams, SplitSizes
from probekit.probes.templates import ProbeSpec, TemplateError, Variant

Split = Literal["train", "dev"]
VARIANT_OPTIONS = ("values",)   # a base variant's `values`: the key of params `values` it fills its template with


class NumberParams(ProbeParams):
    """``mode: sample`` draws ``size.<split>`` tuples balanced over the answers; ``mode: grid`` takes every
    ordered tuple of the split's range, in order (for heatmaps). ``values.<name>.<split>`` is an inclusive
    ``[low, high]``; a variant names the ``values`` it fills its template with."""

    mode: Literal["sample", "grid"] = "sample"
    size: SplitSizes
    values: dict[str, dict[Split, tuple[int, int]]]

    @field_validator("values")
    @classmethod
    def _ranges(cls, values, info: ValidationInfo):
        for name, splits in values.items():
            for split, (low, high) in splits.items():
                if low > high:
                    raise ValueError(f"{name}.{split}: low > high in {[low, high]}")
            if set(SPLITS) - set(splits):
                raise ValueError(f"{name}: needs both train and dev ranges, has {sorted(splits)}")
            (a, b), (c, d) = splits["train"], splits["dev"]
            if a <= d and c <= b:  # train and dev must not overlap: the probes test unseen numbers
                raise ValueError(f"{name}: train {[a, b]} overlaps dev {[c, d]}")
        spec: ProbeSpec | None = (info.context or {}).get("spec")
        if spec is not None:  # the keys are exactly the ones the probe's variants use
            used = {v.name: v.options.get("values") for v in spec.variants.values() if not v.control}
            unset = sorted(n for n, u in used.items() if u is None)
            if unset:
                raise ValueError(f"{spec.path}: variant(s) {unset} set no `values` (the key of these values their "
                                 f"template is filled with: {', '.join(values)})")
            missing = {n: u for n, u in used.items() if u not in values}
            if missing:
                raise ValueError(f"no key {sorted(set(missing.values()))}, used by variant(s) {sorted(missing)} "
                                 f"of {spec.path} (have: {', '.join(values)})")
            unused = sorted(set(values) - set(used.values()))
            if unused:
                raise ValueError(f"unknown key(s) {unused}: no variant of {spec.path} uses them "
                                 f"(variants use: {', '.join(sorted(set(used.values())))})")
        return values


ENUMERATE_UP_TO = 50_000  # larger ranges are sampled without listing every tuple


def balanced_sample(values: range, arity: int, outcome: Callable[[tuple], str], outcomes: list[str], n: int,
                    rng: random.Random, where: str) -> list[tuple]:
    """``n`` distinct ordered tuples of distinct ``values``, outcome counts differing by at most one, shuffled.

    A small range is listed whole and sampled per outcome; a large one (multi-hop train: 456k triples) is
    drawn tuple by tuple until every outcome has its quota, so nothing proportional to the range is built."""
    quotas = {o: n // len(outcomes) + (i < n % len(outcomes)) for i, o in enumerate(outcomes)}
    if math.perm(len(values), arity) <= ENUMERATE_UP_TO:
        groups = {o: [] for o in outcomes}
        for t in itertools.permutations(values, arity):
            groups[outcome(t)].append(t)
        for o, k in quotas.items():
            if k > len(groups[o]):
                raise ParamsError(f"{where}: size asks for {k} examples with answer {shown(o)}, the value range has "
                                  f"only {len(groups[o])}")
        chosen = [t for o in outcomes for t in rng.sample(groups[o], quotas[o])]
    else:
        groups, seen = {o: [] for o in outcomes}, set()
        while any(len(groups[o]) < k for o, k in quotas.items()):
            t = tuple(rng.sample(values, arity))
            if t not in seen:
                seen.add(t)
                if len(groups[outcome(t)]) < quotas[outcome(t)]:
                    groups[outcome(t)].append(t)
            if len(seen) > n * 50 + 1000:  # a quota no tuple of this range can fill
                short = {o: k for o, k in quotas.items() if len(groups[o]) < k}
                raise ParamsError(f"{where}: size asks for {short} examples by answer, the value range yields "
                                  f"too few")
        chosen = [t for o in outcomes for t in groups[o]]
    rng.shuffle(chosen)
    return chosen


def instantiate(spec: ProbeSpec, variant: Variant, params: NumberParams, *, arity: int,
                outcome: Callable[[tuple], str]) -> dict[str, list[dict]]:
    """Fill ``variant``'s template with tuples of ``arity`` distinct values per split."""
    template = spec.template(variant.template)
    if len(template.slots) != arity:
        raise TemplateError(f"{spec.path}: template {shown(template.id)} needs {arity} slots, has {template.slots}")
    ranges: Mapping[str, tuple[int, int]] = params.values[variant.options["values"]]
    outcomes = list(template.answers)
    splits = {}
    for split in SPLITS:
        rng = random.Random(f"{params.seed}:{spec.probe}:{variant.name}:{split}")
        low, high = ranges[split]
        values = range(low, high + 1)
        if params.mode == "grid":
            chosen = list(itertools.permutations(values, arity))
        else:
            chosen = balanced_sample(values, arity, outcome, outcomes, params.size[split], rng,
                                     where=f"{spec.probe}/{variant.name}/{split}")
        splits[split] = [
            make_example(probe=spec.probe, variant=variant.name, template_id=template.id,
                         stem=template.fill(dict(zip(template.slots, t))), choices=list(template.answers.values()),
                         answer=template.answers[outcome(t)], args=dict(zip(template.slots, t)), rng=rng)
            for t in chosen
        ]
    return splits
