"""A probe's YAML file read and validated once: its templates (:mod:`probekit.probes.templates`), its variants
(base variants on templates, control variants on a base, the controls of :mod:`probekit.probes.controls`), the
answer words of NO-LANG and the nonsense words of PERTURBED-LANG. Every error names the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml

from probekit import yamlfile
from probekit.data.card import ROLES, citation
from probekit.errors import shown
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


def load_probe_spec(path: str | Path) -> ProbeSpec:
    """Read and validate a probe YAML file."""
    path = Path(path)
    try:
        raw = yamlfile.load(path)
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise TemplateError(f"{path}: expected a mapping at top level")
    for key in ("probe", "version", "format", "templates", "variants"):
        if key not in raw:
            raise TemplateError(f"{path}: missing field {shown(key)}")
    if raw["format"] not in FORMATS:
        raise TemplateError(f"{path}: format must be one of {list(FORMATS)}, got {shown(raw['format'])}")
    templates: dict[str, Template] = {}
    for item in raw["templates"]:
        template = parse_template(item, source=str(path), default_slots=raw.get("slots", ()), format=raw["format"])
        if template.id in templates:
            raise TemplateError(f"{path}: template {shown(template.id)}: duplicate id")
        templates[template.id] = template
    variants = parse_variants(raw["variants"], templates, path)
    controls = raw.get("controls", {}) or {}
    nolang = dict(controls.get("nolang_answers", {}))
    answer_words = {w for t in templates.values() for w in t.answers.values()}
    if nolang and set(nolang) != answer_words:  # open choices (no `answers`) are kept as they are
        raise TemplateError(f"{path}: controls.nolang_answers must map exactly the closed answer words "
                            f"{sorted(answer_words)}, got {sorted(nolang)}")
    words = tuple(controls.get("nonsense_words", PAPER_NONSENSE_WORDS))
    if not words:
        raise TemplateError(f"{path}: controls.nonsense_words is empty")
    citation(raw.get("citation"), f"{path}: citation")   # a known paper or a BibTeX entry
    defaults = raw.get("params", {}) or {}
    if not isinstance(defaults, Mapping):
        raise TemplateError(f"{path}: 'params' must be a mapping (the probe's default params)")
    return ProbeSpec(probe=raw["probe"], version=str(raw["version"]), path=path, format=raw["format"],
                     templates=templates,
                     variants=variants, nolang_answers=nolang, nonsense_words=words,
                     license=raw.get("license"), citation=raw.get("citation"), params=dict(defaults))


def parse_variants(raw: Any, templates: Mapping[str, Template], path: Path) -> dict[str, Variant]:
    """The ``variants`` mapping: each ``{template: ID, ...options}`` or ``{control: NAME, base: VARIANT}``, either
    with an optional ``role`` (:data:`ROLES`)."""
    if not isinstance(raw, Mapping) or not raw:
        raise TemplateError(f"{path}: 'variants' must be a non-empty mapping name -> definition")
    variants: dict[str, Variant] = {}
    for name, v in raw.items():
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
        unknown = sorted(set(v) - {"control", "base"})
        if unknown:
            raise TemplateError(f"{where}: unknown key(s) {unknown} for a control variant")
        if not isinstance(base, str) or not isinstance(raw.get(base), Mapping) or "control" in raw[base]:
            raise TemplateError(f"{where}: base must name a declared base (template) variant, got {shown(base)}")
        variants[name] = Variant(name, control=control, base=base, role=role)
    return variants
