"""The params fields that name files a command reads (``json_schema_extra=READ``): an ALWAYS-NEVER gold table, a
release file, GloVe vectors. The gate keeps every output off them (:func:`paths_of`, read by the commands'
declarations: :mod:`probes.options`), and a protocol's option for one is typed as read."""

from __future__ import annotations

from pydantic import BaseModel


READ = {"role": "read"}
"""A params field naming files a command reads (``json_schema_extra=READ``): the gate keeps every output off them
(:func:`paths_of`), and its command-line option is typed so (:class:`probes.options.Read`)."""


def paths_of(model: BaseModel, prefix: str = "") -> list[tuple[str, str]]:
    """The paths a params model names as files to read: its fields marked ``json_schema_extra={"role": "read"}``
    (a string, or a list or mapping of strings), and those of the models nested in it; each with its dotted key
    (``annotations[0]``, ``release.dev``). A ``pkg:`` value names an installed package, not a path."""
    found = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name, None)
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            found += paths_of(value, key + ".")
            continue
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("role") != "read":
            continue
        items = (value.items() if isinstance(value, dict) else
                 ((f"[{i}]", v) for i, v in enumerate(value)) if isinstance(value, (list, tuple)) else [("", value)])
        for sub, v in items:
            if isinstance(v, str) and v and not v.startswith("pkg:"):
                found.append((key + (f".{sub}" if sub and not sub.startswith("[") else sub), v))
    return found
