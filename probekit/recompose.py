"""params.yaml and conf/'s composition: what params.yaml was composed with, and what was written into it by hand.

params.yaml is conf/'s composition (DVC's Hydra support: ``dvc exp run``), and a user may still edit it, since plain
``dvc repro`` reads it as it is. A hand edit is any difference between params.yaml and the composition of the current
conf/ with the profile params.yaml names (:func:`made_with`): a key added, changed or removed, at any depth; a list is
one value. A command that composes params.yaml again writes only what the new composition changes, each hand edit
kept or the change refused naming it (:func:`probekit.outputs.userfile.edit_yaml`, the one writer of the user's files)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from probekit.errors import SHOWN, clipped
from probekit.params import ParamsFile, compose

GONE = object()
"""An :class:`Edit`'s value when the edit removed the key."""

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


def listed_once(params: Mapping, label: str) -> None:
    """Refuse probe lists the pipeline cannot run (a probe in both ``probes.mc_mlm`` and ``probes.mc_qa``, a list
    given twice): probekit's own line, before DVC's advice (``use `dvc remove```) on the stages they would make
    twice. ``label``: where ``params`` comes from."""
    ParamsFile(Path(label), params).probes("mc_mlm")
