"""Controls (oLMpics §3) as perturbations ``row -> row | None``, applied by one generic driver.

A control variant is declared in the probe YAML (``nolang: {control: nolang, base: original}``); every
derived row keeps ``source_id``, the id of the base row it came from.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Mapping

from probekit.data.examples import answer_text, make_example
from probekit.errors import shown
from probekit.probes.templates import MASK, ProbeSpec, Template, TemplateError, Variant

Perturbation = Callable[[dict], "dict | None"]


def apply(splits: Mapping[str, list[dict]], perturbation: Perturbation) -> dict[str, list[dict]]:
    """Apply ``perturbation`` to every row of every split, dropping the ``None``s, keeping order."""
    return {split: [p for p in map(perturbation, rows) if p is not None] for split, rows in splits.items()}


def _rebuild(example: dict, *, variant: str, stem: str, answer_map: Mapping[str, str] | None = None) -> dict:
    """Same example, new stem (and answer words), same choice order and gold label, linked to its source."""
    choices = [c["text"] for c in example["question"]["choices"]]
    gold = answer_text(example)
    if answer_map is not None:  # closed answer words only; choices that come from the data stay
        choices, gold = [answer_map.get(c, c) for c in choices], answer_map.get(gold, gold)
    row = make_example(probe=example["probe"], variant=variant, template_id=example["template_id"],
                       stem=stem, choices=choices, answer=gold, args=example["args"])
    row.update({k: v for k, v in example.items() if k not in row})  # what the row came from (facts, ...)
    row["source_id"] = example.get("source_id", example["id"])
    return row


def nolang_text(template: Template) -> str:
    """The NO-LANG form of a template: its slots and the mask only, in order (``{age1} [MASK] {age2}``; an
    MC-QA template has no mask: ``{p1} {o1} {p2} {o2}``)."""
    return " ".join(MASK if p == MASK else f"{{{p}}}" for p in template.pieces())


def no_lang(spec: ProbeSpec, variant: Variant, seed: int) -> Perturbation:
    """NO-LANG (oLMpics §3.3: "We remove all tokens, except for [MASK] and the arguments of the task, i.e., the
    tokens that are necessary for computing the output"): keep only the arguments (and, in MC-MLM, the mask), in
    template order. MC-MLM's closed answer words become nonsense words (``controls.nolang_answers``); an MC-QA
    probe's choices stay as they are (they are the candidates, not language around the arguments)."""
    if spec.format not in ("mc_mlm", "mc_qa"):
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: NO-LANG needs format mc_mlm or mc_qa, "
                            f"got {shown(spec.format)}")
    if spec.format == "mc_qa" and spec.nolang_answers:
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: controls.nolang_answers applies to MC-MLM "
                            f"answer words; NO-LANG of an MC-QA probe keeps its choices (remove the mapping)")
    if spec.format == "mc_mlm" and any(t.answers for t in spec.templates.values()) and not spec.nolang_answers:
        raise TemplateError(f"{spec.path}: variant {shown(variant.name)}: NO-LANG needs controls.nolang_answers "
                            f"for the closed answer words")
    answer_map = spec.nolang_answers if spec.format == "mc_mlm" else None

    def perturb(example: dict) -> dict:
        template = spec.template(example["template_id"])
        stem = template.fill(example["args"], text=nolang_text(template))
        return _rebuild(example, variant=variant.name, stem=stem, answer_map=answer_map)

    return perturb


def perturbed_lang(spec: ProbeSpec, variant: Variant, seed: int) -> Perturbation:
    """PERTURBED-LANG: the template's key words replaced by nonsense words, sampled per example with a seed.

    The generator for an example is seeded by (seed, example id), so the output does not depend on order.
    """

    def perturb(example: dict) -> dict:
        template = spec.template(example["template_id"])
        if not template.perturb:
            raise TemplateError(f"{spec.path}: template {shown(template.id)} declares no 'perturb' words "
                             f"(needed by variant {shown(variant.name)})")
        rng = random.Random(f"{seed}:{example['id']}")
        text = template.perturbed_text(lambda _word: rng.choice(spec.nonsense_words))
        return _rebuild(example, variant=variant.name, stem=template.fill(example["args"], text=text))

    return perturb


def _describe_nolang(spec: ProbeSpec, template: Template, seed: int) -> str:
    words = ", ".join(f"`{a}` → `{b}`" for a, b in spec.nolang_answers.items())
    answers = (f"answer words replaced by nonsense words: {words}" if words
               else "the choices (taken from the data) are unchanged")
    kept = "the arguments and the mask" if spec.format == "mc_mlm" else "the arguments"
    return f"NO-LANG control (oLMpics §3): only {kept} are kept, `{nolang_text(template)}`; {answers}."


def _describe_perturbed(spec: ProbeSpec, template: Template, seed: int) -> str:
    keys = ", ".join(f"`{w}`" for w in template.perturb)
    return (f"PERTURBED-LANG control (oLMpics §3): the key words {keys} of `{template.text.strip()}` are each "
            f"replaced by a word drawn per example (seed {seed}, with the example id) from "
            f"{', '.join(spec.nonsense_words)}. Answers unchanged.")


@dataclass(frozen=True)
class Control:
    perturbation: Callable[[ProbeSpec, Variant, int], Perturbation]
    describe: Callable[[ProbeSpec, Template, int], str]  # one markdown paragraph for the dataset card


CONTROLS = {"nolang": Control(no_lang, _describe_nolang), "perturbed": Control(perturbed_lang, _describe_perturbed)}


# --- sentence-pair variants (CALUM, BECEL): a row holds `segments`, its two (indicator, text) pieces in the
# order the model reads them, and `sentence1`/`sentence2`, those pieces written in the row's style ---------

def write_segments(row: dict, variant: str, segments: list[dict], style: str) -> dict:
    """``row`` as ``variant`` with ``segments`` written in ``style`` (``{indicator}``, ``{text}``); it keeps
    ``pair_id``, so the variants of one example pair up."""
    written = [style.format(indicator=s["indicator"], text=s["text"]) for s in segments]
    return {**row, "variant": variant, "sentence1": written[0], "sentence2": written[1], "segments": segments,
            "style": style}


def reverse(variant: str, style: str | None = None) -> Perturbation:
    """REVERSE (CALUM): the two segments swapped, each keeping its indicator."""
    return lambda row: write_segments(row, variant, row["segments"][::-1], style or row["style"])


def signal(variant: str, style: str | None = None) -> Perturbation:
    """SIGNAL (CALUM): the same segments, the indicators written in another ``style`` (``[X] text``)."""
    if not style:
        raise TemplateError(f"variant {shown(variant)}: SIGNAL needs the `style` its indicators are written in")
    return lambda row: write_segments(row, variant, row["segments"], style)


def symmetric(variant: str, style: str | None = None) -> Perturbation:
    """Symmetric (BECEL), for symmetric tasks: the texts swapped, the indicators left in place."""
    def perturb(row: dict) -> dict:
        first, second = row["segments"]
        return write_segments(row, variant, [{**first, "text": second["text"]}, {**second, "text": first["text"]}],
                              style or row["style"])
    return perturb


PAIR_CONTROLS = {"reverse": reverse, "signal": signal, "symmetric": symmetric}
