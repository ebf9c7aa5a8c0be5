"""Probe definitions: a YAML file of templates, answer words, control words and variants, validated once.

A template text has named slots written ``{slot}``; an MC-MLM probe's templates hold exactly one ``[MASK]``,
an MC-QA probe's none (the choices follow the question). ``answers`` is a closed outcome -> word map; a
probe whose choices come from the data (taxonomy conjunction, composition) leaves it out. Every error names
the file and the template (or field) at fault, so a user editing a template sees at once what to fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from probekit.data.examples import MASK
from probekit.errors import ProbekitError, shown
from probekit.names import check_name
from probekit.probes import schema

FORMATS = ("mc_mlm", "mc_qa")  # MC-MLM: one [MASK] filled by a choice; MC-QA: a question, choices apart
SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Nonsense words of the PERTURBED-LANG control (oLMpics, footnote 4).
PAPER_NONSENSE_WORDS = ("blah", "ya", "foo", "snap", "woo", "boo", "da", "wee", "foe", "fee")


def _whole_word(word: str) -> re.Pattern:
    """``word`` as a whole word outside slot braces."""
    return re.compile(rf"(?<![\w{{]){re.escape(word)}(?![\w}}])")


class TemplateError(ProbekitError, ValueError):
    """A probe definition or a template fill is invalid; the message names file and template."""


@dataclass(frozen=True)
class Template:
    """One phrasing of a probe: ``text`` with ``{slot}``s (and one ``[MASK]`` in MC-MLM); ``answers`` maps
    outcome -> word when the answer set is closed, else it is empty and the choices come from the data."""

    id: str
    text: str
    slots: tuple[str, ...]
    answers: Mapping[str, str]
    perturb: tuple[str, ...] = ()
    nolang: tuple[str, ...] = ()  # the template words NO-LANG keeps beside the slots and the mask (controls.py)
    source: str = "<string>"

    def fill(self, values: Mapping[str, Any], text: str | None = None) -> str:
        """Substitute every slot in ``text`` (default: the template's) in one pass; no slot may be left."""
        missing = [s for s in self.slots if s not in values]
        if missing:
            raise TemplateError(f"{self.source}: template {shown(self.id)}: unfilled slot(s) {missing}")
        return SLOT.sub(lambda m: str(values[m.group(1)]), self.text if text is None else text)

    def pieces(self) -> list[tuple[str, str]]:
        """What NO-LANG keeps, in the order it appears in the text: ``("mask", "[MASK]")``, ``("slot", name)`` and
        ``("word", word)`` for each occurrence of a declared ``nolang`` word."""
        words = "".join(f"|{_whole_word(w).pattern}" for w in self.nolang)
        return [("mask", MASK) if m.group(0) == MASK else ("slot", m.group(1)) if m.group(1) else ("word", m.group(0))
                for m in re.finditer(r"\[MASK\]|" + SLOT.pattern + words, self.text)]

    def perturbed_text(self, pick) -> str:
        """The text with every declared key word replaced by ``pick(word)`` (whole words only)."""
        text = self.text
        for word in self.perturb:
            text = _whole_word(word).sub(lambda _m, w=word: pick(w), text)
        return text


@dataclass(frozen=True)
class Variant:
    """A named way to instantiate a probe, declared in its YAML: a base variant fills its ``templates``
    (``template: ID``, ``templates: [ID, ...]`` or ``templates: all``), with generator-specific ``options``
    (e.g. the number probes' ``values``); a control variant applies ``control`` to the rows of the base
    variant ``base``. ``role``: what the variant is to the probe (``main``, ``control``, ``grid``; by default
    ``control`` for a control variant, else ``main``): the lm-eval groups average the main variants only."""

    name: str
    templates: tuple[str, ...] = ()
    control: str | None = None
    base: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    role: str = "main"

    @property
    def template(self) -> str | None:
        """The first (for most probes the only) template of a base variant."""
        return self.templates[0] if self.templates else None


@dataclass(frozen=True)
class ProbeSpec:
    """A probe's whole definition as read from its YAML file."""

    probe: str
    version: str
    path: Path
    format: str  # one of FORMATS
    templates: Mapping[str, Template]
    variants: Mapping[str, Variant]
    nolang_answers: Mapping[str, str] = field(default_factory=dict)
    nolang_fillers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # slot -> phrase -> kept words
    nonsense_words: tuple[str, ...] = PAPER_NONSENSE_WORDS
    license: str | None = None  # of a synthetic probe's data; a probe with sources takes theirs
    citation: str | None = None  # a key of probekit/data/papers.yaml or a BibTeX entry; None: the card cites none
    params: Mapping[str, Any] = field(default_factory=dict)  # built-in defaults of the probe's params
    multi_token: tuple[str, ...] = ()  # answer words meant to be several tokens: generate does not refuse them

    def template(self, template_id: str) -> Template:
        try:
            return self.templates[template_id]
        except KeyError:
            raise TemplateError(f"{self.path}: no template {shown(template_id)} "
                                f"(have: {', '.join(self.templates)})") from None


def parse_template(raw: Mapping[str, Any], *, source: str, default_slots=(), format: str = "mc_mlm") -> Template:
    """Validate one template mapping from a YAML file (its keys: :data:`probekit.probes.schema.TEMPLATE`)."""
    if not isinstance(raw, Mapping):
        raise TemplateError(f"{source}: templates: each template must be a mapping {{id: ..., text: ...}}, got "
                            f"{shown(raw)}")
    tid = raw.get("id")
    if not isinstance(tid, str) or not tid:
        raise TemplateError(f"{source}: a template has no 'id'")
    where = f"{source}: template {shown(tid)}"
    schema.refuse_unknown(raw, schema.TEMPLATE, where, TemplateError)
    check_name(tid, f"{source}: templates: id", TemplateError)
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise TemplateError(f"{where}: 'text' must be a non-empty string")
    n_masks, wanted = text.count(MASK), 1 if format == "mc_mlm" else 0
    if n_masks != wanted:
        raise TemplateError(f"{where}: a {format} text must contain {'exactly one' if wanted else 'no'} {MASK}, "
                            f"found {n_masks}")
    stray = re.sub(SLOT, "", text)
    if "{" in stray or "}" in stray:
        raise TemplateError(f"{where}: malformed slot (a brace that is not {{name}}) in text")
    slots = tuple(raw.get("slots", default_slots))
    used = SLOT.findall(text)
    unknown = sorted(set(used) - set(slots))
    if unknown:
        raise TemplateError(f"{where}: unknown slot(s) {unknown} in text (declared: {list(slots)})")
    unfilled = [s for s in slots if s not in used]
    if unfilled:
        raise TemplateError(f"{where}: declared slot(s) {unfilled} never appear in text")
    answers = raw.get("answers", {})
    if not isinstance(answers, Mapping) or ("answers" in raw and not answers):
        raise TemplateError(f"{where}: 'answers' must be a non-empty mapping outcome -> word (or be left out "
                            f"when the choices come from the data)")
    if any(not isinstance(w, str) or not w.strip() for w in answers.values()):
        raise TemplateError(f"{where}: every answer must be a non-empty word")
    if len(set(answers.values())) != len(answers):
        raise TemplateError(f"{where}: answer words must be distinct")
    perturb, nolang = (_words(raw, key, where, text) for key in ("perturb", "nolang"))
    return Template(id=tid, text=text, slots=slots, answers=dict(answers), perturb=perturb, nolang=nolang,
                    source=source)


def _words(raw: Mapping[str, Any], key: str, where: str, text: str) -> tuple[str, ...]:
    """A template's ``perturb`` or ``nolang`` words: a list of distinct words, each a whole word of ``text``
    outside its slots."""
    words = raw.get(key, [])
    if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
        raise TemplateError(f"{where}: {key} must be a list of words of the text, got {shown(words)}")
    if len(set(words)) != len(words):
        raise TemplateError(f"{where}: {key} names a word twice")
    for word in words:
        if not _whole_word(word).search(text):
            raise TemplateError(f"{where}: {key} word {shown(word)} does not occur in text")
    return tuple(words)
