"""CALUM (Jang, Kwon & Lukasiewicz 2021): a sentence-pair task (GLUE, KLUE) with a sentence-type indicator
before each segment (``original``), and its variants as perturbations on the controls' driver (``probekit.probes.controls``):
``reverse`` (segments swapped with their indicators), ``signal`` (``[X] text`` instead of ``X: text``) and
BECEL's ``symmetric`` (texts swapped, indicators in place; symmetric tasks only).

The tasks are data, one file per language (``generators/calum/<language>.yaml``: its tasks' indicators, labels,
symmetric flag and the table set they are read from); the task picks the table set the generator reads.

Every row: ``pair_id`` (shared by an example's variants), ``variant``, ``sentence1``, ``sentence2`` (the
segments as the model reads them, indicators included), ``label`` (None on unlabelled test rows), ``task``,
``split``, ``idx`` (the table's id), ``segments`` (the (indicator, text) pieces in reading order) and
``style``. The segment order is the params' ``order``, recorded in ``meta.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Mapping

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError, field_validator

from generators import register
from probekit.data.cards import fingerprint_line, source_list
from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile, section
from probekit.probes import controls

HERE = Path(__file__).resolve().parent
SPLITS = ("train", "dev", "test")


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")
    indicators: tuple[str, str]
    labels: list[str]
    symmetric: bool = False
    name: str | None = None  # as the dataset card names it (default: the task id, upper-cased)


class Language(BaseModel):
    """``generators/calum/<language>.yaml``: one language's tasks and the table set they are read from."""

    model_config = ConfigDict(extra="forbid")
    benchmark: str  # as the dataset card names the task's source (GLUE, KLUE)
    tables: str  # the table set (probes tables NAME) holding the tasks' ``pairs``
    tasks: dict[str, Task]


class VariantSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    style: str | None = None
    control: Literal["reverse", "signal", "symmetric"] | None = None
    base: str | None = None


class Spec(BaseModel):
    """``generators/calum.yaml``, with ``languages`` from ``generators/calum/<language>.yaml``."""

    model_config = ConfigDict(extra="forbid")
    probe: str
    format: str
    version: str
    styles: dict[str, str]
    variants: dict[str, VariantSpec]
    params: dict
    languages: dict[str, Language]  # by language code, the stem of its file

    @property
    def tasks(self) -> dict[str, Task]:
        """Every language's tasks, in file order."""
        return {name: t for lang in self.languages.values() for name, t in lang.tasks.items()}

    def language_of(self, task: str) -> tuple[str, Language]:
        """The code and definition of ``task``'s language."""
        return next((code, lang) for code, lang in self.languages.items() if task in lang.tasks)

    def style(self, name: str | None) -> str | None:
        if name is None:
            return None
        if name not in self.styles:
            raise DataError(f"{HERE / 'calum.yaml'}: unknown style {name!r} (styles: {', '.join(self.styles)})")
        return self.styles[name]


class CalumParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: str = "rte"
    order: tuple[int, int] = (1, 2)
    splits: list[Literal["train", "dev", "test", "dev_matched", "dev_mismatched", "test_matched",
                         "test_mismatched"]] = list(SPLITS)
    limit: PositiveInt | None = None

    @field_validator("order")
    @classmethod
    def _order(cls, value):
        if sorted(value) != [1, 2]:
            raise ValueError("must be [1, 2] or [2, 1]")
        return value


def load_spec(path: Path | None = None) -> Spec:
    """``path`` (default ``generators/calum.yaml``) and the language files in the folder beside it of its name."""
    path = path or HERE / "calum.yaml"
    languages, seen = {}, {}
    for file in sorted(path.with_suffix("").glob("*.yaml")):
        try:
            languages[file.stem] = lang = Language.model_validate(yaml.safe_load(file.read_text(encoding="utf-8")))
        except yaml.YAMLError as err:
            raise DataError(f"{file}: not YAML ({err})") from None
        except ValidationError as err:
            raise DataError(f"{file}: " + "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg']}"
                                                    for e in err.errors())) from None
        for task in lang.tasks:
            if task in seen:
                raise DataError(f"{file}: task {task!r} is already defined in {seen[task]}")
            seen[task] = file
    if not languages:
        raise DataError(f"{path.with_suffix('')}: no language files (<language>.yaml with the tasks)")
    return Spec.model_validate({**yaml.safe_load(path.read_text(encoding="utf-8")), "languages": languages})


def original_rows(pairs, tables: str, task: str, spec: Task, order: tuple[int, int], style: str,
                  split: str) -> list[dict]:
    """The ``original`` rows of one split of table set ``tables``: each example's two segments behind their
    indicators, in ``order``."""
    rows = []
    for r in pairs.itertuples():
        label = None if pd.isna(r.label) else r.label   # unlabelled (test) rows
        if label is not None and label not in spec.labels:
            raise DataError(f"{tables} {task} {split}, line {r.line}: label {label!r} is not one of {spec.labels}")
        texts = (r.sentence1, r.sentence2)
        segments = [{"indicator": spec.indicators[k - 1], "text": texts[k - 1]} for k in order]
        row = {"pair_id": f"{task}-{split}-{r.idx}", "task": task, "split": split, "idx": str(r.idx),
               "label": label}
        rows.append(controls.write_segments(row, "original", segments, style))
    return rows


@register("calum", version="1", tables=("glue", "klue"))
def build(params_file: ParamsFile, tables: Mapping, section_name: str | None = None, task: str | None = None):
    """``(variants, meta)``: ``{variant: {split: rows}}`` of one task, and what ``meta.json`` records; reads only
    the table set of the task's language from ``tables``."""
    spec = load_spec()
    params = section(params_file, section_name or "calum", CalumParams, spec.params, f"{HERE / 'calum.yaml'}")
    task = task or params.task
    if task not in spec.tasks:
        raise ParamsError(f"--task {task}: CALUM's tasks are {', '.join(spec.tasks)}")
    t, source = spec.tasks[task], spec.language_of(task)[1].tables
    pairs = tables[source]["pairs"]
    pairs = pairs[pairs.task == task]
    splits = [s for s in params.splits if (pairs.split == s).any()]
    if not splits:
        raise DataError(f"the {source} tables hold no {task} rows for splits {params.splits} "
                        f"(probes tables {source} with tables.{source}.tasks including {task})")
    base = spec.variants["original"]
    variants = {"original": {s: original_rows(pairs[pairs.split == s].head(params.limit or len(pairs)), source,
                                              task, t, params.order, spec.style(base.style), s) for s in splits}}
    for name, v in spec.variants.items():
        if v.control is None or (v.control == "symmetric" and not t.symmetric):
            continue
        perturbation = controls.PAIR_CONTROLS[v.control](name, spec.style(v.style))
        variants[name] = controls.apply(variants[v.base], perturbation)
    meta = {"probe": "calum", "format": spec.format, "task": task, "definition_version": spec.version,
            "generator_version": "1", "params": {**params.model_dump(mode="json"), "task": task},
            "indicators": list(t.indicators), "labels": t.labels, "order": list(params.order),
            "styles": {name: spec.style(v.style or base.style)
                       for name, v in spec.variants.items() if name in variants},
            "counts": {name: {s: len(rows) for s, rows in v.items()} for name, v in variants.items()}}
    return variants, meta


def card(meta: dict) -> str:
    """The dataset card: the variants as the model reads them, counts, params, licences (the task's language,
    benchmark and name from its language file)."""
    language, lang = load_spec().language_of(meta["task"])
    name = lang.tasks[meta["task"]].name or meta["task"].upper()
    counts = "\n".join(f"| {v} | " + " | ".join(str(c.get(s, "–")) for s in meta["params"]["splits"]) + " |"
                       for v, c in meta["counts"].items())
    i1, i2 = meta["indicators"][meta["order"][0] - 1], meta["indicators"][meta["order"][1] - 1]
    def shown(variant: str, style: str) -> str:
        first, second = (i2, i1) if variant == "reverse" else (i1, i2)
        text1, text2 = ("text 2", "text 1") if variant in ("reverse", "symmetric") else ("text 1", "text 2")
        return f"`{style.format(indicator=first, text='<' + text1 + '>')}` | " \
               f"`{style.format(indicator=second, text='<' + text2 + '>')}`"

    styles = "\n".join(f"- `{v}`: {shown(v, style)}" for v, style in meta["styles"].items())
    sources = source_list(meta["sources"])
    return f"""---
pretty_name: "CALUM {meta['task']} (probekit)"
license: {meta['license']}
language: [{language}]
task_categories: [text-classification]
---
# CALUM — {name} with REVERSE and SIGNAL variants

Generated by probekit (definition version {meta['definition_version']}). Every example of {lang.benchmark}
{name} once per variant; `pair_id` pairs an example's variants. Segment order: {meta['order']}
({lang.benchmark}'s sentence{meta['order'][0]} first; `text 1` below is the segment read first in the original). Labels: {', '.join(meta['labels'])}; unlabelled test rows have `label: null` (C_R and C_S need no labels).

{styles}

| variant | {' | '.join(meta['params']['splits'])} |
| --- | {' | '.join('---' for _ in meta['params']['splits'])} |
{counts}

Sources:
{sources}

{fingerprint_line(meta)}
"""
