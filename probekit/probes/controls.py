"""Controls (oLMpics §3) as perturbations ``row -> row | None``, applied by one generic driver.

A control variant is declared in the probe YAML (``nolang: {control: nolang, base: original}``); every
derived row keeps ``source_id``, the id of the base row it came from.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Mapping

from probekit.data.examples import answer_text, make_example
from probekit.data.keys import mc_key
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
    """The NO-LANG form of a template: its slots, the mask and its declared ``nolang`` words only, in order
    (``{age1} [MASK] {age2}``; ALWAYS-NEVER's ``{x} [MASK] larger {y}``; an MC-QA template has no mask:
    ``{p1} {o1} {p2} {o2}``)."""
    return " ".join(MASK if kind == "mask" else f"{{{piece}}}" if kind == "slot" else piece
                    for kind, piece in template.pieces())


def nolang_args(spec: ProbeSpec, args: Mapping) -> dict:
    """The slot fillers as NO-LANG keeps them: a phrase filler of a slot in ``controls.nolang_fillers`` reduced to
    the words that name it (PROPERTY CONJUNCTION: "is usually located at" -> "located"), the others as they are."""
    out = dict(args)
    for slot, words in spec.nolang_fillers.items():
        if slot in out:
            filler = str(out[slot])
            if filler not in words:
                raise TemplateError(f"{spec.path}: controls.nolang_fillers.{slot}: no words for the filler "
                                    f"{shown(filler)} (add `{filler}: <the words of it NO-LANG keeps>`)")
            out[slot] = words[filler]
    return out


def no_lang(spec: ProbeSpec, variant: Variant, seed: int) -> Perturbation:
    """NO-LANG (oLMpics §3.3: "We remove all input tokens, except for [MASK] and the arguments of the task, namely,
    the tokens that are necessary for computing the output"). One rule for every probe: NO-LANG keeps, in template
    order, the mask (MC-MLM) and the arguments: the slot fillers, a phrase filler reduced to the words that name it
    (``controls.nolang_fillers``), and the template words declared ``nolang``, which name the relation where the
    base variant mixes templates whose answers differ for the same fillers and choices (ALWAYS-NEVER's "larger" /
    "smaller"). Every other word is dropped, even one the answer depends on when it is the same in every row (the
    paper's "24 [MASK] 55" drops "than me in age"). MC-MLM's closed answer words become nonsense words
    (``controls.nolang_answers``); an MC-QA probe's choices stay as they are (they are the candidates, part of what
    the output is computed from). :func:`check_no_lang` refuses a build where the rule lost an argument."""
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
        stem = template.fill(nolang_args(spec, example["args"]), text=nolang_text(template))
        return _rebuild(example, variant=variant.name, stem=stem, answer_map=answer_map)

    return perturb


def check_no_lang(spec: ProbeSpec, variant: Variant, base: Mapping[str, list[dict]],
                  rows: Mapping[str, list[dict]]) -> None:
    """The rule's test on the data: no two NO-LANG rows (any splits) may read the same (stem and choices) with
    different golds when their base rows read differently, for then NO-LANG dropped a token necessary for computing
    the output (rows whose base stems are the same too are the data's own disagreement, not NO-LANG's)."""
    base_stem = {r["id"]: r["question"]["stem"] for split in base.values() for r in split}
    by_input: dict[tuple, dict[str, set]] = {}
    for split in rows.values():
        for r in split:
            read = (r["question"]["stem"], tuple(sorted(c["text"] for c in r["question"]["choices"])))
            by_input.setdefault(read, {}).setdefault(answer_text(r), set()).add(base_stem[r["source_id"]])
    lost = [(read, golds) for read, golds in by_input.items()
            if len(golds) > 1 and len(set().union(*golds.values())) > 1]
    if lost:
        (stem, _), golds = lost[0]
        (a, stems_a), (b, stems_b) = sorted(golds.items())[:2]
        stem_b = next(iter(sorted(stems_b - stems_a) or sorted(stems_b)))
        raise TemplateError(
            f"{spec.path}: variant {shown(variant.name)} (NO-LANG of {shown(variant.base)}): {len(lost)} NO-LANG "
            f"input(s) stand for base rows with different answers, e.g. {shown(stem)}: {shown(sorted(stems_a)[0])} "
            f"(gold {shown(a)}) and {shown(stem_b)} (gold {shown(b)}). NO-LANG dropped a token necessary for "
            f"computing the output: declare the template words that tell them apart as the templates' `nolang` "
            f"words (or a phrase filler's in controls.nolang_fillers)")


def perturbed_lang(spec: ProbeSpec, variant: Variant, seed: int) -> Perturbation:
    """PERTURBED-LANG: the template's key words replaced by nonsense words, sampled per example with a seed.

    Each key word's draws come from a generator seeded by (seed, the example's key, the word): the key is the one
    ``probes diff`` matches examples on (:func:`probekit.data.keys.mc_key`, its args and facts, never its text), so
    the draws depend neither on row order nor on the template's other words: rewording a template changes only the
    words it changes."""

    def perturb(example: dict) -> dict:
        template = spec.template(example["template_id"])
        if not template.perturb:
            raise TemplateError(f"{spec.path}: template {shown(template.id)} declares no 'perturb' words "
                             f"(needed by variant {shown(variant.name)})")
        key, draws = mc_key(example), {}

        def pick(word: str) -> str:
            rng = draws.setdefault(word, random.Random(f"{seed}:{key}:{word}"))
            return rng.choice(spec.nonsense_words)

        text = template.perturbed_text(pick)
        return _rebuild(example, variant=variant.name, stem=template.fill(example["args"], text=text))

    return perturb


def _describe_nolang(spec: ProbeSpec, template: Template, seed: int) -> str:
    words = ", ".join(f"`{a}` → `{b}`" for a, b in spec.nolang_answers.items())
    answers = (f"answer words replaced by nonsense words: {words}" if words
               else "the choices (taken from the data) are unchanged")
    kept = "the arguments and the mask" if spec.format == "mc_mlm" else "the arguments"
    if template.nolang:
        kept += f" and the template's {', '.join(f'`{w}`' for w in template.nolang)} (its relation)"
    slots = [slot for slot in spec.nolang_fillers if slot in template.slots]
    fillers = (f"; a {', '.join(f'`{{{slot}}}`' for slot in slots)} phrase is reduced to the words that name it ("
               f"{', '.join(f'`{p}` → `{w}`' for p, w in list(spec.nolang_fillers[slots[0]].items())[:3])}, ...)"
               if slots else "")
    return f"NO-LANG control (oLMpics §3): only {kept} are kept, `{nolang_text(template)}`{fillers}; {answers}."


def _describe_perturbed(spec: ProbeSpec, template: Template, seed: int) -> str:
    keys = ", ".join(f"`{w}`" for w in template.perturb)
    return (f"PERTURBED-LANG control (oLMpics §3): the key words {keys} of `{template.text.strip()}` are each "
            f"replaced by a word drawn per example (seed {seed}, with the example's key: its args and facts, as "
            f"`probes diff` matches examples) from {', '.join(spec.nonsense_words)}. Answers unchanged.")


@dataclass(frozen=True)
class Control:
    perturbation: Callable[[ProbeSpec, Variant, int], Perturbation]
    describe: Callable[[ProbeSpec, Template, int], str]  # one markdown paragraph for the dataset card
    check: Callable[[ProbeSpec, Variant, Mapping, Mapping], None] | None = None  # the rows built, against their base


CONTROLS = {"nolang": Control(no_lang, _describe_nolang, check_no_lang),
            "perturbed": Control(perturbed_lang, _describe_perturbed)}


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
