"""Shared by the synthetic number probes: tuples of distinct values, balanced sampling, full grids."""

from __future__ import annotations

import itertools
import random
from typing import Callable, Mapping

from datasets import DatasetDict

from probekit.examples import SPLITS, make_example, to_dataset_dict
from probekit.templates import ProbeSpec, Variant

MODES = ("sample", "grid")


def split_range(params: Mapping, values: str, split: str) -> range:
    """The inclusive value range ``params.values.<values>.<split>`` as a ``range``; errors name the key."""
    key = f"values.{values}.{split}"
    try:
        low, high = params["values"][values][split]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"params: {key} must be a pair [low, high]") from None
    if not (isinstance(low, int) and isinstance(high, int) and low <= high):
        raise ValueError(f"params: {key} must be integers with low <= high, got {[low, high]}")
    return range(low, high + 1)


def check_disjoint(params: Mapping, values: str) -> None:
    """Train and dev values must not overlap (the probes test generalisation to unseen numbers)."""
    train, dev = (split_range(params, values, s) for s in SPLITS)
    if set(train) & set(dev):
        raise ValueError(f"params: values.{values}.train {[train[0], train[-1]]} overlaps "
                         f"values.{values}.dev {[dev[0], dev[-1]]}")


def balanced_sample(population: list[tuple], outcome: Callable[[tuple], str], outcomes: list[str], n: int,
                    rng: random.Random, where: str) -> list[tuple]:
    """``n`` tuples without replacement, outcome counts differing by at most one, shuffled."""
    groups = {o: [] for o in outcomes}
    for t in population:
        groups[outcome(t)].append(t)
    chosen = []
    for i, o in enumerate(outcomes):
        k = n // len(outcomes) + (i < n % len(outcomes))
        if k > len(groups[o]):
            raise ValueError(f"{where}: asked for {k} examples with answer {o!r}, the range has only "
                             f"{len(groups[o])}")
        chosen += rng.sample(groups[o], k)
    rng.shuffle(chosen)
    return chosen


def instantiate(spec: ProbeSpec, variant: Variant, params: Mapping, *, arity: int,
                outcome: Callable[[tuple], str]) -> DatasetDict:
    """Fill ``variant``'s template with tuples of ``arity`` distinct values per split.

    ``mode: sample`` draws ``size.<split>`` tuples balanced over the answers; ``mode: grid`` takes every
    ordered tuple of the split's range, in order (for heatmaps).
    """
    template = spec.template(variant.template)
    mode = params.get("mode", "sample")
    if mode not in MODES:
        raise ValueError(f"params: mode must be one of {MODES}, got {mode!r}")
    if len(template.slots) != arity:
        raise ValueError(f"{spec.path}: template {template.id!r} needs {arity} slots, has {template.slots}")
    check_disjoint(params, variant.values)
    outcomes = list(template.answers)
    splits = {}
    for split in SPLITS:
        rng = random.Random(f"{params['seed']}:{spec.probe}:{variant.name}:{split}")
        population = list(itertools.permutations(split_range(params, variant.values, split), arity))
        if mode == "grid":
            chosen = population
        else:
            chosen = balanced_sample(population, outcome, outcomes, int(params["size"][split]), rng,
                                     where=f"{spec.probe}/{variant.name}/{split}")
        splits[split] = [
            make_example(probe=spec.probe, variant=variant.name, template_id=template.id,
                         stem=template.fill(dict(zip(template.slots, t))), choices=list(template.answers.values()),
                         answer=template.answers[outcome(t)], args=dict(zip(template.slots, t)), rng=rng)
            for t in chosen
        ]
    return to_dataset_dict(splits)
