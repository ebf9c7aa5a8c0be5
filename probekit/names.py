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
RULE = f"a letter or digit, then letters, digits, '_' or '-' (ASCII, at most {LONGEST} characters)"


def why_invalid(name, longest: int = LONGEST) -> str | None:
    """Why ``name`` is not a :data:`NAME` (None: it is one)."""
    if not isinstance(name, str):
        return f"a name is a string, not a {type(name).__name__}"
    if not name:
        return "it is empty"
    if len(name) > longest:
        return f"it is {len(name)} characters long, the most is {longest}"
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


def _valid(name: str) -> str:
    why = why_invalid(name)
    if why is not None:
        raise ValueError(f"{shown(name)} is not a valid name: {why}")
    return name


Name = Annotated[str, AfterValidator(_valid)]
"""A :data:`NAME` in a pydantic model (a key of a ``dict[Name, ...]`` too): the model's error says why not."""
