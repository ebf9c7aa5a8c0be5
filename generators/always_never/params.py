"""The params of ALWAYS-NEVER (:mod:`generators.always_never`): where the annotations are
(:class:`AlwaysNeverParams`: the release files and their word fixes, the gold and candidate tables, the dev
share of new statements) and how ``probes annotate export`` draws statements from ConceptNet types
(:class:`ExportParams`)."""

from __future__ import annotations

from typing import Literal, Mapping

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from probekit.data.examples import SPLITS
from probekit.errors import shown
from probekit.params import ProbeParams
from probekit.pathfields import READ
from generators.always_never import annotations
from probekit.probes.templates import ProbeSpec
from probekit.typed import Typed

Split = Literal["train", "dev"]


class ExportParams(Typed):
    """How ``probes annotate export`` draws statements from ConceptNet types (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    types: dict[str, dict[str, list[str]]] = Field(default_factory=dict)  # template -> slot -> IsA type(s)
    hops: int = Field(1, ge=1, le=2)  # 2: also heads of an IsA edge to a head of the type
    single_words: bool = True  # only one-word candidates ([a-z]+)
    min_zipf: float = Field(3.0, ge=0)  # wordfreq Zipf frequency bounds of a candidate word
    max_zipf: float = Field(6.2, gt=0)
    per_template: int = Field(200, ge=1)  # statements drawn per template
    seed: int = 13  # the draw order (with the template id)

    @field_validator("types", mode="before")
    @classmethod
    def _lists(cls, types):
        """A slot's type may be given as one string."""
        if not isinstance(types, Mapping):
            return types
        return {t: ({s: [v] if isinstance(v, str) else v for s, v in slots.items()}
                    if isinstance(slots, Mapping) else slots) for t, slots in types.items()}

    @field_validator("types")
    @classmethod
    def _templates(cls, types, info: ValidationInfo):
        spec: ProbeSpec | None = (info.context or {}).get("spec")
        for tid, slots in types.items():
            if spec is not None and tid not in spec.templates:
                raise ValueError(f"no template {shown(tid)} in {spec.path} (have: {', '.join(spec.templates)})")
            if set(slots) != set(annotations.SLOTS):
                raise ValueError(f"{tid}: give the type(s) of exactly the slots {list(annotations.SLOTS)}, "
                                 f"got {shown(sorted(slots))}")
            empty = [s for s, names in slots.items() if not names or not all(str(n).strip() for n in names)]
            if empty:
                raise ValueError(f"{tid}: empty type for slot(s) {empty}")
        return types


class AlwaysNeverParams(ProbeParams):
    """Where the annotations are: the release files, gold tables, and the word fixes of the release; how
    ``probes annotate export`` draws new statements (``export``)."""

    release: dict[Split, str] = Field(default_factory=dict, json_schema_extra=READ)  # {train, dev} jsonl, or {}
    release_fixes: dict[str, str] = Field(default_factory=dict)  # whole-word typo fixes of release stems
    annotations: list[str] = Field(default_factory=list, json_schema_extra=READ)  # gold CSVs (probes annotate import)
    candidates: list[str] = Field(default_factory=list, json_schema_extra=READ)  # candidate CSVs: the unannotated
    dev_share: float = Field(0.22, ge=0, le=1)
    export: ExportParams = Field(default_factory=ExportParams)

    @field_validator("release")
    @classmethod
    def _both_splits(cls, release):
        if release and set(release) != set(SPLITS):
            raise ValueError(f"give both train and dev files, or {{}} to leave the release out; "
                             f"got {shown(sorted(release))}")
        return release

    @field_validator("release_fixes")
    @classmethod
    def _words(cls, fixes, info: ValidationInfo):
        bad = [w for w, r in fixes.items() if not w.strip() or not str(r).strip()]
        if bad:
            raise ValueError(f"empty word or fix for {bad}")
        return fixes
