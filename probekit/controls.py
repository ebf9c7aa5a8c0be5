"""Controls (oLMpics §3) as perturbations ``example -> example | None``, applied by one generic driver."""

from __future__ import annotations

import random
from typing import Callable, Mapping

from datasets import DatasetDict

from .examples import make_example, to_dataset_dict
from .templates import MASK, ProbeSpec

Perturbation = Callable[[dict], "dict | None"]


def apply(dataset: DatasetDict, perturbation: Perturbation) -> DatasetDict:
    """Apply ``perturbation`` to every example of every split, dropping the ``None``s, keeping order."""
    out = {}
    for split, ds in dataset.items():
        out[split] = [p for p in map(perturbation, ds.to_list()) if p is not None]
    return to_dataset_dict(out)


def _rebuild(example: dict, *, variant: str, stem: str, answer_map: Mapping[str, str] | None = None) -> dict:
    """Same example, new stem (and answer words), same choice order and gold label."""
    choices = [c["text"] for c in example["question"]["choices"]]
    gold = next(c["text"] for c in example["question"]["choices"] if c["label"] == example["answerKey"])
    if answer_map is not None:
        choices, gold = [answer_map[c] for c in choices], answer_map[gold]
    return make_example(probe=example["probe"], variant=variant, template_id=example["template_id"],
                        stem=stem, choices=choices, answer=gold, args=example["args"])


def no_lang(spec: ProbeSpec) -> Perturbation:
    """NO-LANG: keep only the arguments and the mask, in template order; answers become nonsense words."""
    if not spec.nolang_answers:
        raise ValueError(f"{spec.path}: NO-LANG needs controls.nolang_answers")

    def perturb(example: dict) -> dict:
        template = spec.template(example["template_id"])
        stem = " ".join(MASK if p == MASK else str(example["args"][p]) for p in template.pieces())
        return _rebuild(example, variant="nolang", stem=stem, answer_map=spec.nolang_answers)

    return perturb


def perturbed_lang(spec: ProbeSpec, seed: int) -> Perturbation:
    """PERTURBED-LANG: the template's key words replaced by nonsense words, sampled per example with a seed.

    The generator for an example is seeded by (seed, example id), so the output does not depend on order.
    """

    def perturb(example: dict) -> dict:
        template = spec.template(example["template_id"])
        if not template.perturb:
            raise ValueError(f"{spec.path}: template {template.id!r} declares no 'perturb' words")
        rng = random.Random(f"{seed}:{example['id']}")
        text = template.perturbed_text(lambda _word: rng.choice(spec.nonsense_words))
        return _rebuild(example, variant="perturbed", stem=template.fill(example["args"], text=text))

    return perturb


CONTROLS = {"nolang": lambda spec, seed: no_lang(spec), "perturbed": perturbed_lang}
