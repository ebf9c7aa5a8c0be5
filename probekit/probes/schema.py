"""The keys a probe YAML takes, level by level, and the one refusal of any other: a line naming the file, where in it,
the key and the known key closest to it (difflib), so a misspelt ``citaton:`` or ``answer:`` is an error instead of
a key read by nothing. An MC probe's YAML is read by hand (:mod:`probekit.probes.spec`) with these key lists; a
whole-dataset generator's (ParaRel's, CALUM's) is a pydantic model, whose errors :func:`validation_line` words the
same way. The generator adds its variants' own options (:func:`generators.shared.build.register`)."""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from probekit import yamlfile
from probekit.errors import SHOWN, ProbekitError, clipped, shown

TOP = ("probe", "version", "format", "license", "citation", "slots", "templates", "variants", "controls",
       "multi_token", "params")
"""An MC probe's YAML, at the top."""
TEMPLATE = ("id", "text", "slots", "answers", "perturb", "nolang")
"""Each template of ``templates:``."""
BASE_VARIANT = ("template", "templates", "role")
"""A base variant of ``variants:``, besides the options its generator declares."""
CONTROL_VARIANT = ("control", "base", "role")
"""A control variant of ``variants:``."""
CONTROLS = ("nolang_answers", "nolang_fillers", "nonsense_words")
"""``controls:``."""


def read_mapping(path: Path, error: type[Exception] = ProbekitError) -> Mapping:
    """The YAML mapping in the file at ``path``; YAML that is not valid, or not a mapping, is ``error`` naming it."""
    try:
        raw = yamlfile.load(path)
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise error(f"{path}: expected a mapping at top level")
    return raw


def key_text(key: Any) -> str:
    """A key as an error names it: a string as it is (cut to :data:`probekit.errors.SHOWN`), anything else its repr."""
    return clipped(key, SHOWN) if isinstance(key, str) else shown(key)


def unknown_key(key: Any, known: Iterable[str]) -> str:
    """``<key>: unknown key (did you mean <closest>?); known: ...``."""
    known = list(known)
    near = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    return (f"{key_text(key)}: unknown key" + (f" (did you mean {near[0]}?)" if near else "")
            + f"; known: {', '.join(known)}")


def refuse_unknown(given: Mapping, known: Iterable[str], where: str, error: type[Exception] = ProbekitError) -> None:
    """``error`` naming the first key of ``given`` that is not ``known`` (``where``: the file and the place in it)."""
    known = list(known)
    stray = next((k for k in given if k not in known), None)
    if stray is not None:
        raise error(f"{where}: {unknown_key(stray, known)}")


def validation_line(exc: ValidationError, model: type[BaseModel], where: str) -> str:
    """A pydantic model's validation errors as one line: ``<where>: <dotted key>: <problem>`` for the first of them
    (and how many more); an unknown key with the closest key the model takes there."""
    errors = exc.errors()
    first = errors[0]
    loc = [str(p) for p in first["loc"]]
    if loc[-1:] == ["[key]"]:   # a mapping's key itself (a name): the error is the mapping's
        loc = loc[:-2]
    if first["type"] == "extra_forbidden":
        problem = unknown_key(loc[-1], _fields_at(model, loc[:-1]))
        key = ".".join(key_text(p) for p in loc[:-1])
    else:
        problem = clipped(first["msg"].removeprefix("Value error, "), 4 * SHOWN)
        if first["type"] != "value_error" and first["type"] != "missing":
            problem += f", got {shown(first['input'])}"
        key = ".".join(key_text(p) for p in loc) or "the file"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: " + (f"{key}: " if key else "") + problem + more


def _fields_at(model: Any, loc: list[str]) -> list[str]:
    """The keys the model takes at ``loc`` (through nested models, ``dict[str, Model]``, lists and optionals)."""
    for part in loc:
        model = _unoptional(model)
        if _is_model(model):
            field = model.model_fields.get(part)
            model = field.annotation if field is not None else None
        else:
            args = typing.get_args(model)
            model = args[-1] if args else None
    model = _unoptional(model)
    return list(model.model_fields) if _is_model(model) else []


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def _unoptional(t: Any) -> Any:
    """``X`` of ``X | None``; anything else as it is."""
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return args[0] if len(args) == 1 else t
    return t
