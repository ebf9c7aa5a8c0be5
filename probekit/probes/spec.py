"""A probe's YAML file read and validated once: its templates (:mod:`probekit.probes.templates`), its variants
(base variants on templates, control variants on a base, the controls of :mod:`probekit.probes.controls`), the
answer words of NO-LANG and the nonsense words of PERTURBED-LANG. Every error names the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from probekit.data.card import ROLES, citation
from probekit.errors import shown
from probekit.names import check_distinct, check_name
from probekit.probes import schema
from probekit.probes.controls import CONTROLS
from probekit.probes.templates import (
    FORMATS,
    PAPER_NONSENSE_WORDS,
    ProbeSpec,
    Template,
    TemplateError,
    Variant,
    parse_template,
)


def load_probe_spec(path: str | Path, *, outcomes: Sequence[str] | None = None,
                    options: Sequence[str] | None = None) -> ProbeSpec:
    """Read and validate a probe YAML file: its keys (:mod:`probekit.probes.schema`) and names
    (:mod:`probekit.names`). What its generator declares (:func:`generators.shared.build.register`) is checked when
    given: ``outcomes``, those it uses (every template's ``answers`` maps exactly them; ``()``: its choices come
    from the data, so no template has ``answers``), and ``options``, what its base variants may set besides their
    templates."""
    path = Path(path)
    raw = schema.read_mapping(path, TemplateError)
    schema.refuse_unknown(raw, schema.TOP, str(path), TemplateError)
    for key in ("probe", "version", "format", "templates", "variants"):
        if key not in raw:
            raise TemplateError(f"{path}: missing field {shown(key)}")
    check_name(raw["probe"], f"{path}: probe", TemplateError)
    if raw["format"] not in FORMATS:
        raise TemplateError(f"{path}: format must be one of {list(FORMATS)}, got {shown(raw['format'])}")
    if not isinstance(raw["templates"], list) or not raw["templates"]:
        raise TemplateError(f"{path}: templates: must be a non-empty list of templates, got {shown(raw['templates'])}")
    templates: dict[str, Template] = {}
    for item in raw["templates"]:
        template = parse_template(item, source=str(path), default_slots=raw.get("slots", ()), format=raw["format"])
        if template.id in templates:
            raise TemplateError(f"{path}: template {shown(template.id)}: duplicate id")
        templates[template.id] = template
    check_distinct(templates, f"{path}: templates: id", TemplateError)
    if outcomes is not None:
        check_outcomes(templates, tuple(outcomes), path)
    variants = parse_variants(raw["variants"], templates, path, options)
    controls = raw.get("controls", {}) or {}
    if not isinstance(controls, Mapping):
        raise TemplateError(f"{path}: controls: must be a mapping ({', '.join(schema.CONTROLS)}), got "
                            f"{shown(controls)}")
    schema.refuse_unknown(controls, schema.CONTROLS, f"{path}: controls", TemplateError)
    nolang = dict(controls.get("nolang_answers", {}))
    answer_words = {w for t in templates.values() for w in t.answers.values()}
    if nolang and set(nolang) != answer_words:  # open choices (no `answers`) are kept as they are
        raise TemplateError(f"{path}: controls.nolang_answers must map exactly the closed answer words "
                            f"{sorted(answer_words)}, got {sorted(nolang)}")
    fillers = nolang_fillers(controls.get("nolang_fillers"), templates, path)
    words = tuple(controls.get("nonsense_words", PAPER_NONSENSE_WORDS))
    if not words:
        raise TemplateError(f"{path}: controls.nonsense_words is empty")
    citation(raw.get("citation"), f"{path}: citation")   # a known paper or a BibTeX entry
    defaults = raw.get("params", {}) or {}
    if not isinstance(defaults, Mapping):
        raise TemplateError(f"{path}: 'params' must be a mapping (the probe's default params)")
    return ProbeSpec(probe=raw["probe"], version=str(raw["version"]), path=path, format=raw["format"],
                     templates=templates,
                     variants=variants, nolang_answers=nolang, nolang_fillers=fillers, nonsense_words=words,
                     license=raw.get("license"), citation=raw.get("citation"), params=dict(defaults),
                     multi_token=multi_token_words(raw.get("multi_token"), answer_words | set(nolang.values()), path))


def check_outcomes(templates: Mapping[str, Template], outcomes: tuple[str, ...], path: Path) -> None:
    """Every template's ``answers`` maps exactly ``outcomes``, the generator's (none when ``()``: its choices come
    from the data)."""
    for template in templates.values():
        where = f"{path}: template {shown(template.id)}: answers"
        have = tuple(template.answers)
        if not outcomes and have:
            raise TemplateError(f"{where}: this probe's generator takes its choices from the data and uses no "
                                f"outcomes: leave 'answers' out")
        if outcomes and set(have) != set(outcomes):
            missing, unknown = [o for o in outcomes if o not in have], [o for o in have if o not in outcomes]
            raise TemplateError(f"{where}: must map exactly the generator's outcomes {', '.join(outcomes)} to their "
                                f"words" + (f"; missing: {', '.join(map(str, missing))}" if missing else "")
                                + (f"; not an outcome: {', '.join(map(str, unknown))}" if unknown else ""))


def nolang_fillers(raw: Any, templates: Mapping[str, Template], path: Path) -> dict[str, dict[str, str]]:
    """``controls.nolang_fillers``: ``{slot: {filler: kept words}}``, for a slot filled with a phrase (PROPERTY
    CONJUNCTION's predicates): NO-LANG keeps of the phrase only the words that name it. Each slot is a template's,
    the kept words of a phrase are its own words in their order, and no two phrases of a slot keep the same words
    (the argument they name would be lost)."""
    if raw is None:
        return {}
    where = f"{path}: controls.nolang_fillers"
    slots = {s for t in templates.values() for s in t.slots}
    if not isinstance(raw, Mapping) or not raw:
        raise TemplateError(f"{where}: must map a slot to {{phrase: the words of it NO-LANG keeps}}, got {shown(raw)}")
    out: dict[str, dict[str, str]] = {}
    for slot, words in raw.items():
        if slot not in slots:
            raise TemplateError(f"{where}: {shown(slot)} is no slot of a template (slots: {sorted(slots)})")
        if not isinstance(words, Mapping) or not words or not all(
                isinstance(k, str) and isinstance(v, str) and v.split() for k, v in words.items()):
            raise TemplateError(f"{where}.{slot}: must map each phrase to the words of it NO-LANG keeps, got "
                                f"{shown(words)}")
        for phrase, kept in words.items():
            rest = iter(phrase.split())
            if not all(word in rest for word in kept.split()):   # a subsequence of the phrase's words
                raise TemplateError(f"{where}.{slot}: {shown(kept)} is not words of the phrase {shown(phrase)}, in "
                                    f"its order")
        same = next((v for v in words.values() if list(words.values()).count(v) > 1), None)
        if same is not None:
            raise TemplateError(f"{where}.{slot}: two phrases keep {shown(same)}: NO-LANG could not tell them apart")
        out[str(slot)] = dict(words)
    return out


def multi_token_words(raw: Any, answer_words: set[str], path: Path) -> tuple[str, ...]:
    """``multi_token``: the answer words (of ``answers`` or ``controls.nolang_answers``) meant to be several tokens,
    which ``probes generate`` does not refuse (:func:`generators.shared.single_token.check_answer_words`)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(w, str) for w in raw):
        raise TemplateError(f"{path}: multi_token: must be a list of answer words, got {shown(raw)}")
    stray = next((w for w in raw if w not in answer_words), None)
    if stray is not None:
        raise TemplateError(f"{path}: multi_token: {shown(stray)} is no answer word of this probe (answers and "
                            f"controls.nolang_answers: {shown(sorted(answer_words))})")
    return tuple(raw)


def parse_variants(raw: Any, templates: Mapping[str, Template], path: Path,
                   options: Sequence[str] | None = None) -> dict[str, Variant]:
    """The ``variants`` mapping: each ``{template: ID, ...options}`` or ``{control: NAME, base: VARIANT}``, either
    with an optional ``role`` (:data:`ROLES`); ``options``: those a base variant may set (None: any)."""
    if not isinstance(raw, Mapping) or not raw:
        raise TemplateError(f"{path}: 'variants' must be a non-empty mapping name -> definition")
    check_distinct(raw, f"{path}: variants", TemplateError)
    variants: dict[str, Variant] = {}
    for name, v in raw.items():
        check_name(name, f"{path}: variants", TemplateError)
        where = f"{path}: variant {shown(name)}"
        if not isinstance(v, Mapping):
            raise TemplateError(f"{where}: must be a mapping ({{template: ID}} or {{control: NAME, base: VARIANT}})")
        role = v.get("role", "control" if "control" in v else "main")
        if role not in ROLES:
            raise TemplateError(f"{where}: role must be one of {', '.join(ROLES)}, got {shown(role)}")
        v = {k: x for k, x in v.items() if k != "role"}
        kinds = [k for k in ("template", "templates", "control") if k in v]
        if len(kinds) != 1:
            raise TemplateError(f"{where}: give exactly one of 'template' / 'templates' (a base variant) or "
                                f"'control'")
        if kinds[0] != "control":
            if options is not None:
                schema.refuse_unknown(v, [*schema.BASE_VARIANT, *options], where, TemplateError)
            wanted = v[kinds[0]]
            ids = list(templates) if wanted == "all" and kinds[0] == "templates" else (
                [wanted] if kinds[0] == "template" else wanted)
            if not isinstance(ids, list) or not ids or not all(isinstance(t, str) and t in templates for t in ids):
                raise TemplateError(f"{where}: {kinds[0]} must be {'one template id' if kinds[0] == 'template' else 'all or a list of template ids'} "
                                    f"of {list(templates)}, got {shown(wanted)}")
            variants[name] = Variant(name, templates=tuple(ids), role=role,
                                     options={k: x for k, x in v.items() if k not in ("template", "templates")})
            continue
        control, base = v.get("control"), v.get("base")
        if not isinstance(control, str) or control not in CONTROLS:
            raise TemplateError(f"{where}: control must be one of {list(CONTROLS)}, got {shown(control)}")
        schema.refuse_unknown(v, schema.CONTROL_VARIANT, where, TemplateError)
        if not isinstance(base, str) or not isinstance(raw.get(base), Mapping) or "control" in raw[base]:
            raise TemplateError(f"{where}: base must name a declared base (template) variant, got {shown(base)}")
        variants[name] = Variant(name, control=control, base=base, role=role)
    return variants
