"""CALUM (Jang, Kwon & Lukasiewicz 2021): a sentence-pair task (GLUE, KLUE, KorNLI) with a sentence-type
indicator before each segment (``original``), and its variants as perturbations on the controls' driver
(``probekit.probes.controls``):
``reverse`` (segments swapped with their indicators), ``signal`` (``[X] text`` instead of ``X: text``) and
BECEL's ``symmetric`` (texts swapped, indicators in place; symmetric tasks only).

The tasks are data, one file per language (``generators/calum/<language>.yaml``: its tasks' indicators, labels,
symmetric flag and the table set they are read from); the task picks the table set the generator reads. A task
with ``test_from`` (the Korean ones) gets its test split drawn from that split (``draw_test``, ``calum.test_draw``),
the drawn rows removed from it and the draw recorded in ``meta.json`` (``test_draw``), or keeps the test split its
table set cut (``calum.test_draw.size.<task>: tables``, with ``tables.<set>.splits_as: original_code``). A
task with ``combine`` (MNLI) builds a split from several of the table's (``dev`` = GLUE's ``dev_matched`` +
``dev_mismatched``, as the original code's inference), recorded in ``meta.json`` (``combined``); ``calum.splits``
may name GLUE's own.

Every row: ``pair_id`` (shared by an example's variants), ``variant``, ``sentence1``, ``sentence2`` (the
segments as the model reads them, indicators included), ``label`` (None on unlabelled test rows), ``task``,
``split``, ``idx`` (the table's id), ``segments`` (the (indicator, text) pieces in reading order) and
``style``. The segment order is the one the task is trained in (the params' ``train_order`` for the task, else
``order``), recorded in ``meta.json`` (``order``), for every split: ``eval_order: original_code_swapped`` alone
evaluates another (recorded as ``eval_order``).
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path
from typing import Annotated, Literal, Mapping

import pandas as pd
import yaml
from pydantic import ConfigDict, Field, PositiveInt, ValidationError, ValidationInfo, field_validator

from generators.calum import order as ordering
from generators.shared.registry import DatasetSpec, Request, register_dataset
from probekit import yamlfile
from probekit.data.card import CardText, render
from probekit.data.writer import Dataset, Part
from probekit.errors import DataError, ParamsError
from probekit.names import Distinct, Name, check_distinct
from probekit.probes.schema import validation_line
from probekit.params import ParamsFile, section
from probekit.probes import controls
from probekit.typed import Typed

HERE = Path(__file__).resolve().parent
SPLITS = ("train", "dev", "test")


class Task(Typed):
    model_config = ConfigDict(extra="forbid")
    indicators: tuple[str, str]
    labels: list[str]
    symmetric: bool = False
    name: str | None = None  # as the dataset card names it (default: the task id, upper-cased)
    tables: str | None = None  # the table set of its ``pairs``, where not the language's
    benchmark: str | None = None  # as the dataset card names its source, where not the language's
    test_from: Literal["train", "dev"] | None = None  # the split its test is drawn from (calum.test_draw)
    combine: dict[str, list[str]] = {}  # a split built from the table's splits, in order (MNLI's dev: matched
                                        # + mismatched); its rows keep their table split in ``pair_id``
    inference_order: tuple[int, int] = (1, 2)  # the segment order the original code's inference fed as `original`:
                                               # a task where it is not (1, 2) is one calum.eval_order:
                                               # original_code_swapped evaluates in the order it was not trained on


class Language(Typed):
    """``generators/calum/<language>.yaml``: one language's tasks and the table set they are read from."""

    model_config = ConfigDict(extra="forbid")
    benchmark: str  # as the dataset card names the task's source (GLUE, KLUE)
    tables: str  # the table set (probes tables NAME) holding the tasks' ``pairs``
    tasks: Annotated[dict[Name, Task], Distinct]  # a task is a folder (data/calum/<task>) and in its Hub configs' names


class VariantSpec(Typed):
    model_config = ConfigDict(extra="forbid")
    style: str | None = None
    control: Literal["reverse", "signal", "symmetric"] | None = None
    base: str | None = None


class Spec(DatasetSpec):
    """``generators/calum/probe.yaml``, with ``languages`` from ``generators/calum/<language>.yaml``."""

    styles: dict[str, str]
    # a variant is a folder (<task>/<variant>/) and in its Hub config's name
    variants: Annotated[dict[Name, VariantSpec], Distinct]
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
            raise DataError(f"{HERE / 'probe.yaml'}: unknown style {name!r} (styles: {', '.join(self.styles)})")
        return self.styles[name]


KEEP = "tables"
"""``calum.test_draw.size.<task>: tables``: no draw, the task's test is the one its table set cut as the original
code (``tables.<set>.splits_as: original_code``: KorNLI's last 10,000 SNLI training rows, KLUE's second half of
dev)."""


class TestDraw(Typed):
    """``calum.test_draw``: the test split of a task without one (``test_from`` in its language file), drawn
    with ``seed``; ``size`` per task, a number of rows or a fraction of the split it is drawn from, or ``tables``
    (:data:`KEEP`): the table set's own test split, kept."""

    model_config = ConfigDict(extra="forbid")
    seed: int = 0
    size: dict[str, Annotated[float, Field(gt=0, lt=1)] | PositiveInt | Literal["tables"]] = {}

    @field_validator("size")
    @classmethod
    def _drawn(cls, size: dict, info: ValidationInfo) -> dict:
        """Sizes of tasks whose test is drawn only (those of the spec :func:`build` passes)."""
        spec = (info.context or {}).get("spec")
        drawn = [n for n, d in spec.tasks.items() if d.test_from] if spec is not None else list(size)
        unknown = sorted(set(size) - set(drawn))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a task whose test is drawn ({', '.join(drawn)})")
        return size


class CalumParams(Typed):
    model_config = ConfigDict(extra="forbid")
    task: str = "rte"
    order: tuple[int, int] = (1, 2)      # the segment order of every task not in train_order
    # per task, the order its model is trained in where not `order` (the paper profile: the three NLI tasks
    # hypothesis-first, as the original code's training read them: docs/limits.md)
    train_order: dict[str, tuple[int, int]] = {}
    splits: list[Literal["train", "dev", "test", "dev_matched", "dev_mismatched", "test_matched",
                         "test_mismatched"]] = list(SPLITS)
    limit: PositiveInt | None = None
    test_draw: TestDraw = TestDraw()
    eval_order: Literal["as_trained", "original_code_swapped"] = ordering.AS_TRAINED

    @field_validator("order")
    @classmethod
    def _order(cls, value):
        return ordering.pair(value)

    @field_validator("train_order")
    @classmethod
    def _train_order(cls, value: dict, info: ValidationInfo) -> dict:
        spec = (info.context or {}).get("spec")
        return ordering.per_task(value, spec.tasks if spec is not None else None)

    @field_validator("eval_order", mode="before")
    @classmethod
    def _renamed(cls, value):
        return ordering.renamed(value)

    def trained(self, task: str) -> tuple[int, int]:
        """The segment order ``task``'s model is trained in: ``train_order``'s, else ``order``."""
        return tuple(self.train_order.get(task, self.order))


def load_spec(path: Path | None = None) -> Spec:
    """``path`` (default ``generators/calum/probe.yaml``) and the language files beside it (every other YAML)."""
    path = path or HERE / "probe.yaml"
    languages, seen = {}, {}
    for file in sorted(f for f in path.parent.glob("*.yaml") if f.name != path.name):
        try:
            languages[file.stem] = lang = Language.model_validate(yamlfile.load(file))
        except yaml.YAMLError as err:
            raise DataError(f"{file}: not YAML ({err})") from None
        except ValidationError as err:
            raise DataError(validation_line(err, Language, str(file))) from None
        for task in lang.tasks:   # a task is a folder data/calum/<task>: one per name, case aside
            again, where = seen.get(task.casefold(), (None, None))
            if again == task:
                raise DataError(f"{file}: task {task!r} is already defined in {where}")
            if again is not None:
                check_distinct([again, task], f"{file}: tasks (with {where})", DataError)
            seen[task.casefold()] = (task, file)
    if not languages:
        raise DataError(f"{path.parent}: no language files (<language>.yaml with the tasks)")
    return Spec.read(path, languages=languages)


def draw_test(pairs: pd.DataFrame, tables: str, task: str, source: str, size: float | int,
              seed: int) -> tuple[pd.DataFrame, dict]:
    """``pairs`` of ``task`` with a test split drawn from split ``source`` and removed from it, and the draw's
    record for ``meta.json``. The paper (§4.1): "The three Korean datasets do not provide test sets. Therefore,
    we randomly sampled test sets from the validation set for KLUE datasets and from training set for KorNLI".

    The drawn rows are the ``n`` (``size`` rows, or ``int(size * rows)`` for a fraction) of smallest
    ``sha256("<seed>:<idx>")``: the same ids give the same draw whatever the row order or library version.
    Test rows keep their order in the source split; ``ids_sha256`` is the sha256 of their ids, one a line."""
    where = f"the {tables} tables' {task}"
    if (pairs.split == "test").any():
        raise DataError(f"{where} already has a test split; its test is drawn from {source} (calum.test_draw): "
                        f"read the {tables} tables without test, or keep theirs (calum.test_draw.size.{task}: "
                        f"{KEEP})")
    pool = pairs[pairs.split == source]
    if pool.idx.duplicated().any():
        raise DataError(f"{where} {source}: repeated idx {pool.idx[pool.idx.duplicated()].iloc[0]!r}: "
                        f"the test draw needs unique ids")
    n = int(size * len(pool)) if isinstance(size, float) else size
    if not 0 < n < len(pool):
        raise DataError(f"calum.test_draw.size.{task}: {size} draws {n} of the {len(pool)} {source} rows "
                        f"(at least 1 and fewer than all)")
    keys = {i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest() for i in pool.idx}
    chosen = set(sorted(keys, key=keys.__getitem__)[:n])
    drawn = pool.idx.isin(chosen)
    test = pool[drawn].assign(split="test")
    ids = "".join(f"{i}\n" for i in test.idx)
    record = {"from": source, "size": size, "seed": seed, "rows": n, "of": len(pool),
              "ids_sha256": hashlib.sha256(ids.encode()).hexdigest()}
    return pd.concat([pairs.drop(pool.index[drawn]), test]), record


def kept_test(pairs: pd.DataFrame, tables: str, task: str) -> dict:
    """The record for ``meta.json`` of the test split ``pairs`` holds, kept as the task's test
    (``calum.test_draw.size.<task>: tables``): its rows and the sha256 of their ids, one a line, as a draw's."""
    test = pairs[pairs.split == "test"]
    if test.empty:
        raise DataError(f"calum.test_draw.size.{task}: {KEEP} keeps the {tables} tables' own {task} test split, but "
                        f"they have none (tables.{tables}.splits_as: original_code cuts one, as the original code; "
                        f"or give a size to draw)")
    ids = "".join(f"{i}\n" for i in test.idx)
    return {"from": "test", "size": KEEP, "rows": len(test), "ids_sha256": hashlib.sha256(ids.encode()).hexdigest()}


def original_rows(pairs, tables: str, task: str, spec: Task, order: tuple[int, int], style: str,
                  split: str) -> list[dict]:
    """The ``original`` rows of one split of table set ``tables``: each example's two segments behind their
    indicators, in ``order``; ``pair_id`` names the table's split of the row (``mnli-dev_matched-0`` in MNLI's
    combined ``dev``), so ids stay unique where a split combines several."""
    rows = []
    for r in pairs.itertuples():
        label = None if pd.isna(r.label) else r.label   # unlabelled (test) rows
        if label is not None and label not in spec.labels:
            raise DataError(f"{tables} {task} {split}, line {r.line}: label {label!r} is not one of {spec.labels}")
        texts = (r.sentence1, r.sentence2)
        segments = [{"indicator": spec.indicators[k - 1], "text": texts[k - 1]} for k in order]
        row = {"pair_id": f"{task}-{r.split}-{r.idx}", "task": task, "split": split, "idx": str(r.idx),
               "label": label}
        rows.append(controls.write_segments(row, "original", segments, style))
    return rows


@register_dataset("calum", version="1", tables=("glue", "klue", "kornli"), tasks=True)
def generate(request: Request) -> Dataset:
    """One task's pair set as the one writer takes it: one part, ``<variant>/<split>.jsonl``."""
    variants, meta = build(request.params, request.tables, request.section, request.task)
    file, first = next(((f"{v}/{s}.jsonl", rows[0]) for v, splits in variants.items() for s, rows in splits.items()
                        if rows), ("", None))
    return Dataset((Part("", {f"{v}/{s}.jsonl": rows for v, splits in variants.items() for s, rows in splits.items()},
                         meta, partial(card, example=first, example_file=file)),), license="other",
                   summary=tuple(f"calum {meta['task']}/{name}: " + ", ".join(f"{s} {n}" for s, n in splits.items())
                                 for name, splits in meta["counts"].items()))


def build(params_file: ParamsFile, tables: Mapping, section_name: str | None = None, task: str | None = None):
    """``(variants, meta)``: ``{variant: {split: rows}}`` of one task, and what ``meta.json`` records; reads only
    the table set of the task's language from ``tables``."""
    spec = load_spec()
    params = section(params_file, section_name or "calum", CalumParams, spec.params, f"{HERE / 'probe.yaml'}",
                     {"spec": spec})
    task = task or params.task
    if task not in spec.tasks:
        raise ParamsError(f"--task {task}: CALUM's tasks are {', '.join(spec.tasks)}")
    t = spec.tasks[task]
    source = t.tables or spec.language_of(task)[1].tables
    pairs = tables[source]["pairs"]
    pairs, drawn = pairs[pairs.task == task], None
    if t.test_from and (pairs.split == t.test_from).any():
        if task not in params.test_draw.size:
            raise ParamsError(f"calum.test_draw.size: no size for {task} (its test is drawn from {t.test_from})")
        if params.test_draw.size[task] == KEEP:
            drawn = kept_test(pairs, source, task)
        else:
            pairs, drawn = draw_test(pairs, source, task, t.test_from, params.test_draw.size[task],
                                     params.test_draw.seed)
    def rows_of(split: str) -> pd.DataFrame:   # a combined split: its table splits' rows, in order
        return pd.concat([pairs[pairs.split == s] for s in t.combine.get(split, [split])])

    splits = [s for s in params.splits if len(rows_of(s))]
    if not splits:
        raise DataError(f"the {source} tables hold no {task} rows for splits {params.splits} "
                        f"(probes tables {source} with tables.{source}.tasks including {task}; a task whose files "
                        f"the source lacks is left out and listed under `missing` in the tables' report.json)")
    # recorded only where set: the meta.json of the default is as before the switches
    unrecorded = {"test_draw"} | ({"eval_order"} if params.eval_order == ordering.AS_TRAINED else set()) | (
        {"train_order"} if not params.train_order else set())
    base = spec.variants["original"]
    orders = {s: ordering.of(params, task, t.inference_order, s) for s in splits}
    variants = {"original": {s: original_rows(rows_of(s).head(params.limit or len(pairs)), source, task, t,
                                              orders[s], spec.style(base.style), s) for s in splits}}
    for name, v in spec.variants.items():
        if v.control is None or (v.control == "symmetric" and not t.symmetric):
            continue
        perturbation = controls.PAIR_CONTROLS[v.control](name, spec.style(v.style))
        variants[name] = controls.apply(variants[v.base], perturbation)
    meta = {"probe": "calum", "format": spec.format, "task": task, "definition_version": spec.version,
            "generator_version": "1", "params": {**params.model_dump(mode="json", exclude=unrecorded),
                                                 "task": task},
            "indicators": list(t.indicators), "labels": t.labels, "order": list(params.trained(task)),
            "styles": {name: spec.style(v.style or base.style)
                       for name, v in spec.variants.items() if name in variants},
            "counts": {name: {s: len(rows) for s, rows in v.items()} for name, v in variants.items()}}
    if params.eval_order != ordering.AS_TRAINED:   # only then: the meta.json of the default is as before the switch
        evaluated = {tuple(o) for s, o in orders.items() if s != "train"}
        meta["eval_order"] = list(evaluated.pop() if evaluated else params.trained(task))
    combined = {s: t.combine[s] for s in splits if s in t.combine}
    if combined:   # only then (MNLI): the meta.json of the other tasks is as before
        meta["combined"] = combined
    if drawn:   # only then: the params and meta.json of a task with its own test are as before the draw existed
        meta["params"]["test_draw"] = {"seed": params.test_draw.seed, "size": drawn["size"]}
        meta["test_draw"] = drawn
    return variants, meta


FIELDS = {"pair_id": "the example's id, shared by its variants", "variant": "the variant (below)",
          "sentence1": "the first segment as the model reads it (indicator and text)",
          "sentence2": "the second segment as the model reads it", "label": "the gold label (null: unlabelled test)"}


def card(meta: dict, example: dict | None = None, example_file: str = "") -> str:
    """The dataset card: the variants as the model reads them, counts, params, licences (the task's language,
    benchmark and name from its language file)."""
    language, lang = load_spec().language_of(meta["task"])
    task = lang.tasks[meta["task"]]
    name, benchmark = task.name or meta["task"].upper(), task.benchmark or lang.benchmark
    d = meta.get("test_draw")
    drawn = "" if d is None else (f" Test: {d['rows']} of the {d['of']} {d['from']} rows, drawn with seed "
                                  f"{d['seed']} and removed from {d['from']} (the paper's test, §4.1)."
                                  if d["size"] != KEEP else f" Test: the table set's own test split, {d['rows']} "
                                  f"rows, as the paper's test (§4.1), not drawn (calum.test_draw.size: {KEEP}).")
    counts = "\n".join(f"| {v} | " + " | ".join(str(c.get(s, "–")) for s in meta["params"]["splits"]) + " |"
                       for v, c in meta["counts"].items())
    i1, i2 = meta["indicators"][meta["order"][0] - 1], meta["indicators"][meta["order"][1] - 1]
    def shown(variant: str, style: str) -> str:
        first, second = (i2, i1) if variant == "reverse" else (i1, i2)
        text1, text2 = ("text 2", "text 1") if variant in ("reverse", "symmetric") else ("text 1", "text 2")
        return f"`{style.format(indicator=first, text='<' + text1 + '>')}` | " \
               f"`{style.format(indicator=second, text='<' + text2 + '>')}`"

    styles = "\n".join(f"- `{v}`: {shown(v, style)}" for v, style in meta["styles"].items())
    evaluated = "" if meta.get("eval_order", meta["order"]) == meta["order"] else (
        f"; the evaluated splits' originals: {meta['eval_order']}, the order the model was not trained on "
        f"(calum.eval_order: {ordering.SWAPPED}, not the paper's)")
    summary = f"""Generated by probekit (definition version {meta['definition_version']}). Every example of {benchmark}
{name} once per variant; `pair_id` pairs an example's variants. Segment order: {meta['order']}
({benchmark}'s sentence{meta['order'][0]} first; `text 1` below is the segment read first in the original){evaluated}. Labels: {', '.join(meta['labels'])}; unlabelled test rows have `label: null` (C_R and C_S need no labels).{drawn}

{styles}"""
    body = f"""| variant | {' | '.join(meta['params']['splits'])} |
| --- | {' | '.join('---' for _ in meta['params']['splits'])} |
{counts}"""
    return render(CardText(pretty_name=f"CALUM {meta['task']} (probekit)", task_categories=("text-classification",),
                           title=f"CALUM — {name} with REVERSE and SIGNAL variants", summary=summary, body=body,
                           section="calum", citation=load_spec().citation, fields=FIELDS, example=example,
                           example_file=example_file, language=(language,)), meta)
