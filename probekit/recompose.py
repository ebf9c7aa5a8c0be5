"""params.yaml composed again from conf/ without losing what was written into it by hand (``probes new``).

params.yaml is conf/'s composition (DVC's Hydra support: ``dvc exp run``), and a user may still edit it, since plain
``dvc repro`` reads it as it is. A hand edit is any difference between params.yaml and the composition of the current
conf/ with the profile params.yaml names (:func:`made_with`): a key added, changed or removed, at any depth; a list is
one value. Composing again keeps each edit (:func:`reapplied`), unless the new composition changes that same key, or
a mapping above it: then the edit cannot be kept, and the recomposition is refused naming the keys."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from probekit.errors import SHOWN, ParamsError, clipped
from probekit.params import ParamsFile, compose

GONE = object()
"""An :class:`Edit`'s value when the edit removed the key."""
KEYS = 5
"""A refusal names at most this many edited keys (then how many more)."""


@dataclass(frozen=True)
class Edit:
    """One hand edit of params.yaml: the key at ``path`` set to ``value``, or removed (``value is GONE``)."""

    path: tuple
    value: Any = GONE

    @property
    def key(self) -> str:
        return ".".join(clipped(str(part), SHOWN) for part in self.path)


def made_with(conf: Path, params: Mapping) -> tuple[list[str], dict]:
    """The overrides params.yaml was composed with, as far as ``params`` tells (its profile: ``profile=paper`` when
    it names another than conf/'s default), and the composition of the folder ``conf`` with them."""
    base = compose(conf)
    profile = params.get("profile")
    if profile is None or profile == base.get("profile"):
        return [], base
    sets = [f"profile={profile}"]
    return sets, compose(conf, sets)


def hand_edits(params: Mapping, composed: Mapping, path: tuple = ()) -> list[Edit]:
    """What ``params`` (params.yaml) holds beyond ``composed`` (conf/'s composition): every key added, changed or
    removed, at any depth of mappings both have."""
    edits = []
    for key in [*composed, *(k for k in params if k not in composed)]:
        here = (*path, key)
        if key not in params:
            edits.append(Edit(here))
        elif key not in composed:
            edits.append(Edit(here, params[key]))
        elif isinstance(params[key], Mapping) and isinstance(composed[key], Mapping):
            edits += hand_edits(params[key], composed[key], here)
        elif params[key] != composed[key] or type(params[key]) is not type(composed[key]):   # 1 is not 1.0, nor True
            edits.append(Edit(here, params[key]))
    return edits


_MISSING = object()


def _at(data: Any, path: tuple) -> Any:
    for part in path:
        if not isinstance(data, Mapping) or part not in data:
            return _MISSING
        data = data[part]
    return data


def reapplied(edits: Sequence[Edit], before: Mapping, after: Mapping, label: str, command: str) -> dict:
    """``after`` (conf/'s new composition) with ``edits`` (params.yaml's hand edits over ``before``, the composition
    they were made on) applied; a :class:`ParamsError` naming the edited keys, in ``label``, that ``command``
    changes too (the key itself, or a mapping above it that is one no more)."""
    lost = [e.key for e in edits
            if _at(before, e.path) != _at(after, e.path) != (_MISSING if e.value is GONE else e.value)
            or not all(isinstance(_at(after, e.path[:i]), Mapping) for i in range(1, len(e.path)))]
    if lost:
        more = f" and {len(lost) - KEYS} more" if len(lost) > KEYS else ""
        raise ParamsError(f"{label}: {command} would lose your edit of {', '.join(lost[:KEYS])}{more} (not what "
                          f"conf/ composes, and {command} changes {'that key' if len(lost) == 1 else 'those keys'} "
                          f"too): make the edit in conf/ instead, then run {command} again; nothing was changed")
    out = copy.deepcopy(dict(after))
    for edit in edits:
        parent = _at(out, edit.path[:-1])
        if edit.value is GONE:
            parent.pop(edit.path[-1], None)
        else:
            parent[edit.path[-1]] = copy.deepcopy(edit.value)
    return out


def yaml_text(params: Mapping) -> str:
    """``params`` as params.yaml's text, written as DVC's composition writes it (OmegaConf's YAML)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.create(dict(params)))


def listed_once(params: Mapping, label: str) -> None:
    """Refuse probe lists the pipeline cannot run (a probe in both ``probes.mc_mlm`` and ``probes.mc_qa``, a list
    given twice): probekit's own line, before DVC's advice (``use `dvc remove```) on the stages they would make
    twice. ``label``: where ``params`` comes from."""
    ParamsFile(Path(label), params).probes("mc_mlm")
