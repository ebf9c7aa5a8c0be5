"""The one base of every typed model probekit reads a user's file into (params sections, a probe YAML's schema, a
loader's or a protocol's options): pydantic's model, less one coercion. In its lax mode pydantic takes ``True`` for
the integer 1 and ``False`` for 0, so ``seed: true`` would run seed 1 and ``limit: true`` a one-row evaluation, in
silence. A :class:`Typed` model refuses a boolean wherever a number belongs (an ``int`` or ``float`` field, also
constrained, optional, in a union with other types, or an item of a list or a value of a mapping), with the error
type :data:`BOOL_NOT_NUMBER`, which each reader words as one line naming its file and the key (``params.yaml:
zeroshot.limit: a boolean where a number belongs ..., got True``). Where a field takes a boolean too (``bool |
int``), a boolean stays a boolean. Everything else pydantic's lax mode takes stays as it is: ``"3"`` is still 3, as
the command line's options (:class:`probes.options.FieldValue`) give their values as text.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import PydanticCustomError
from pydantic_core import core_schema as cs

BOOL_NOT_NUMBER = "bool_not_number"
"""The error type of a boolean given where a number belongs."""

_NUMBERS = ("int", "float")
_WRAPPERS = ("nullable", "function-after", "function-before", "function-wrap", "lax-or-strict")
"""Core schemas that hold one ``schema`` and take what it takes (a boolean refused there is refused by them)."""
_KEPT = ("metadata", "serialization", "ref", "json_schema_input_schema")


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError(BOOL_NOT_NUMBER, "a boolean where a number belongs (YAML reads true and false as "
                                                   "booleans: write the number itself)")
    return value


def _rewritten(schema: Any) -> tuple[Any, bool]:
    """``schema`` with every place that takes a number and no boolean refusing a boolean, and whether ``schema``
    itself takes a number and no boolean (its caller wraps it, so a union's error names the key, not a choice)."""
    if isinstance(schema, (list, tuple)):
        return type(schema)(_wrapped(s) for s in schema), False
    if not isinstance(schema, dict):
        return schema, False
    kind = schema.get("type")
    if kind == "function-before" and schema.get("function", {}).get("function") is _no_bool:
        return schema, False   # a nested Typed model's, rewritten already
    if kind in _NUMBERS:
        return schema, True
    if kind == "default":   # stays outermost, where the model finds the field's default: what it holds is wrapped
        return {**schema, "schema": _wrapped(schema["schema"])}, False
    if kind in _WRAPPERS and isinstance(schema.get("schema"), dict):
        inner, numeric = _rewritten(schema["schema"])
        return {**schema, "schema": inner}, numeric
    if kind == "union":
        choices, numeric, takes_bool = [], False, False
        for choice in schema["choices"]:
            part, label = (choice, None) if isinstance(choice, dict) else choice
            part, number = _rewritten(part)
            numeric |= number
            takes_bool |= part.get("type") == "bool"
            choices.append(part if label is None else (part, label))
        return {**schema, "choices": choices}, numeric and not takes_bool
    return {k: (v if k in _KEPT else _wrapped(v)) for k, v in schema.items()}, False


def _wrapped(schema: Any) -> Any:
    inner, numeric = _rewritten(schema)
    return cs.no_info_before_validator_function(_no_bool, inner) if numeric else inner


class Typed(BaseModel):
    """A pydantic model that refuses a boolean where a number belongs (see the module). Every model of a user's file
    derives from it (a test checks: ``tests/core/test_typed.py``)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
        return _wrapped(handler(source))
