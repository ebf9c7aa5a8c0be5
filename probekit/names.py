"""The one rule for a name that becomes a folder or a Hugging Face Hub config name: a probe (its folder and its YAML's
``probe:``), a variant, a template id, a CALUM task or variant, a ParaRel relation. Checked where the name is
declared, so a variant ``../../always_never/original`` never writes over another probe's dataset and a variant
``a/b`` never makes a Hub config (``age_comparison-a/b``) that ``datasets.load_dataset`` refuses.

:data:`NAME`: a letter or digit, then letters, digits, ``_`` and ``-``; ASCII; at most :data:`LONGEST` characters.
That is one path component on every system (no ``/`` or ``\\``, never ``.`` or ``..``, no leading dot, nothing
Windows reserves) and a config name the Hub and ``datasets`` take: ``datasets`` refuses ``<>:/\\|?*`` in a config
name (``BuilderConfig``'s check, for Windows cache folders), the Hub's viewer fails on spaces (huggingface/datasets
#5989), and the Hub's own names (``validate_repo_id``) are ``[\\w.-]``. A Hub config name joins such names with
``-`` (``<probe>-<variant>``, ``calum-<task>-<variant>``, ``pararel-<relation>``), so it matches :data:`NAME` too
(:func:`probekit.hub.export.discover` checks it, with :data:`LONGEST_CONFIG`).

Two more refusals, for the disks a project is cloned to: a name Windows reserves for a device (:data:`RESERVED`:
``con``, ``nul``, ``com1``... in any case, also with an extension: a folder ``nul`` cannot be made there, and opening
it opens the device), and, where several names are declared together (a probe YAML's variants and templates, CALUM's
tasks and variants, the model aliases of params), two that differ only by case (:func:`check_distinct`): on a
case-insensitive disk (macOS's and Windows' defaults) their folders are one, and one run would overwrite the other.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from probekit.errors import ProbekitError, shown

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
LONGEST = 64
"""A declared name's length at most: a Hub config joins up to three of them."""
LONGEST_CONFIG = 255
"""A Hub config name's length at most (a folder of a published repo: one path component)."""
RESERVED = re.compile(r"(con|prn|aux|nul|com[1-9]|lpt[1-9])(\.[^.]*)*", re.IGNORECASE)
"""The names Windows reserves for devices (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM1``-``COM9``, ``LPT1``-``LPT9``),
in any case, also followed by an extension (``nul.txt``): none of them can be a file or a folder there."""
RULE = f"a letter or digit, then letters, digits, '_' or '-' (ASCII, at most {LONGEST} characters)"


def why_invalid(name, longest: int = LONGEST) -> str | None:
    """Why ``name`` is not a :data:`NAME` (None: it is one)."""
    if not isinstance(name, str):
        return f"a name is a string, not a {type(name).__name__}"
    if not name:
        return "it is empty"
    if len(name) > longest:
        return f"it is {len(name)} characters long, the most is {longest}"
    if RESERVED.fullmatch(name):
        return (f"{name.split('.')[0].upper()} is a device name on Windows (CON, PRN, AUX, NUL, COM1-COM9, "
                f"LPT1-LPT9, in any case): no folder can have it there")
    if NAME.fullmatch(name):
        return None
    bad = next((c for c in name if not (c.isascii() and (c.isalnum() or c in "_-"))), None)
    if bad is not None:
        return f"{bad!r} is not allowed: a name is {RULE}"
    return f"it must start with a letter or digit: a name is {RULE}"


def check_name(name, where: str, error: type[Exception] = ProbekitError, longest: int = LONGEST) -> str:
    """``name`` when it is a :data:`NAME`; else ``error`` with one line ``<where>: <name> is not a valid name: <why>``
    (``where``: the file and the key that declare it)."""
    why = why_invalid(name, longest)
    if why is not None:
        raise error(f"{where}: {shown(name)} is not a valid name: {why}")
    return name


def case_twins(names) -> tuple[str, str] | None:
    """The first two of ``names`` that differ only by case (``original``, ``Original``), or None."""
    seen: dict[str, str] = {}
    for name in names:
        if isinstance(name, str):
            first = seen.setdefault(name.casefold(), name)
            if first != name:
                return first, name
    return None


def _twins_text(twins: tuple[str, str]) -> str:
    return (f"{shown(twins[0])} and {shown(twins[1])} differ only by case: on a case-insensitive disk (macOS, "
            f"Windows) they are one folder, and one would overwrite the other; rename one")


def check_distinct(names, where: str, error: type[Exception] = ProbekitError) -> None:
    """``error`` with one line ``<where>: <a> and <b> differ only by case: ...`` where two of ``names`` (declared
    together, each a folder beside the others) differ only by case."""
    twins = case_twins(names)
    if twins is not None:
        raise error(f"{where}: {_twins_text(twins)}")


def _distinct(names):
    twins = case_twins(names)
    if twins is not None:
        raise ValueError(_twins_text(twins))
    return names


Distinct = AfterValidator(_distinct)
"""A pydantic mapping (or list) of names that must differ by more than case: ``Annotated[dict[Name, X], Distinct]``."""


def _valid(name: str) -> str:
    why = why_invalid(name)
    if why is not None:
        raise ValueError(f"{shown(name)} is not a valid name: {why}")
    return name


Name = Annotated[str, AfterValidator(_valid)]
"""A :data:`NAME` in a pydantic model (a key of a ``dict[Name, ...]`` too): the model's error says why not."""
