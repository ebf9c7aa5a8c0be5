"""One probekit Hub config (:func:`probekit.hub.export.export`) as lm-evaluation-harness task configs, so that the
harness scores each probe exactly as a probekit rule does:

| format | task | harness request | probekit rule |
| --- | --- | --- | --- |
| ``mc_mlm`` | ``olmpics_<config>`` | empty context, each filled statement | causal ``statement`` |
| ``mc_mlm`` | ``olmpics_<config>_choice`` | the text before the blank, each choice | causal ``harness`` |
| ``mc_qa`` | ``olmpics_<config>`` | the question, ``" "`` + each answer | none (no zero-shot rule) |
| ``cloze_set`` | ``pararel_<relation>`` | empty context, the query filled with each candidate | causal ``statement`` |
| ``pair_cls`` | ``calum_<task>_<variant>`` | GLUE's RTE/MRPC prompt, True/False or no/yes | none |

The ``olmpics_`` names are for a probe whose dataset card cites oLMpics (``citation: olmpics``); any other MC
probe (a user's own) is ``probekit_<config>`` (and ``_choice``), in the groups ``probekit_mc`` and
``probekit_mc_choice`` (:func:`mc_names`).

Every template is Jinja, rendered by the harness (``lm_eval.utils.apply_template``); a ``doc_to_choice`` template
renders a Python list that the harness reads back with ``ast.literal_eval``. :func:`self_check` renders the first
rows the same way and compares them with what probekit scores, so a template that drifts fails the export, not a
run. Nothing here imports ``lm_eval``: probekit works without the extra.
"""

from __future__ import annotations

import ast
import logging
import re
from dataclasses import dataclass, field, replace
from typing import Callable

from probekit.data.examples import MASK
from probekit.errors import DataError, shown

log = logging.getLogger("probekit")

CHECKED = 5
"""Rows of each task's test split rendered by :func:`self_check`."""

VERSION = 1.0
"""The task configs' own version (``metadata.version``): bump it when a template changes."""

_FILLED = ("{% set ns = namespace(x=[]) %}{% for c in question.choices %}"
           "{% set ns.x = ns.x + [question.stem.replace('[MASK]', c.text)] %}{% endfor %}{{ ns.x }}")
_ANSWER = "{% for c in question.choices %}{% if c.label == answerKey %}{{ loop.index0 }}{% endif %}{% endfor %}"
_TEXTS = "{{ question.choices | map(attribute='text') | list }}"
_BEFORE = "{{ question.stem.split('[MASK]')[0] }}"
_QUERIES = ("{% set ns = namespace(x=[]) %}{% for c in CANDIDATES %}"
            "{% set ns.x = ns.x + [query.replace('[MASK]', c)] %}{% endfor %}{{ ns.x }}")
_OBJECT = "{{ CANDIDATES.index(obj_label) }}"
_ACC = [{"metric": "acc", "aggregation": "mean", "higher_is_better": True},
        {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True}]


@dataclass(frozen=True)
class PairPrompt:
    """A GLUE prompt of the harness's own ``glue`` tasks, for CALUM pairs with these labels."""

    text: str
    choices: tuple[str, ...]
    labels: tuple[str, ...]  # label of each choice, in choice order
    metrics: tuple[str, ...] = ("acc",)


PAIR_PROMPTS = {
    frozenset({"entailment", "not_entailment"}): PairPrompt(  # lm_eval/tasks/glue/rte/default.yaml
        "{{sentence1}}\nQuestion: {{sentence2}} True or False?\nAnswer:", ("True", "False"),
        ("entailment", "not_entailment")),
    frozenset({"equivalent", "not_equivalent"}): PairPrompt(  # lm_eval/tasks/glue/mrpc/default.yaml
        "Sentence 1: {{sentence1}}\nSentence 2: {{sentence2}}\nQuestion: Do both sentences mean the same thing?"
        "\nAnswer:", ("no", "yes"), ("not_equivalent", "equivalent"), ("acc", "f1")),
}

GROUPS = {"olmpics": "oLMpics probes: the filled statements (probekit's causal statement rule), and MC-QA",
          "olmpics_choice": "oLMpics MC-MLM probes: the choice after the text before the blank (probekit's "
                            "causal harness rule)",
          "pararel": "ParaRel relations: the query filled with each candidate (probekit's causal statement rule)",
          "calum": "CALUM sentence pairs as GLUE RTE/MRPC prompts (no probekit zero-shot counterpart)",
          "probekit_mc": "your own MC probes (not citing oLMpics): the filled statements, and MC-QA",
          "probekit_mc_choice": "your own MC-MLM probes: the choice after the text before the blank"}
"""The groups in their order in the project-wide group; a group without tasks is not written."""

OLMPICS = "olmpics"
"""The key of oLMpics in ``probekit/data/papers.yaml``: a probe citing it is exported under oLMpics' names."""


@dataclass
class Task:
    """One task config, its group, the test split's rows (for :func:`self_check`, and ParaRel's data file)
    and what the harness must render for a row: ``(context, choices, gold index)``."""

    name: str
    group: str
    config: dict
    rows: list[dict]
    expected: Callable[[dict], tuple[str, list[str], int]]
    data_file: str | None = None  # relative to the output folder: the rows written there (ParaRel, local mode)
    notes: list[str] = field(default_factory=list)
    role: str = "main"  # its dataset's role (main | control | grid): a group averages its main tasks only


def task_name(text: str) -> str:
    """A harness task name: lower case, runs of other characters than ``a-z0-9`` as one ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def test_split(rows: dict[str, list[dict]], fmt: str) -> str:
    """The split a task is scored on: ParaRel's ``test``; else ``dev`` when there is one, else ``test``."""
    order = ("test",) if fmt == "cloze_set" else ("dev", "test")
    for split in order:
        if rows.get(split):
            return split
    raise DataError(f"no {' or '.join(order)} split with rows (splits: {', '.join(rows) or 'none'})")


def _source(exp, split: str, local: str | None, hub: str | None, revision: str | None) -> dict:
    """Where the harness reads the rows: the Hub config, or a local JSON Lines file (relative to the project)."""
    if hub:
        kwargs = {"revision": revision} if revision else None
        return {"dataset_path": hub, "dataset_name": exp.name, **({"dataset_kwargs": kwargs} if kwargs else {})}
    return {"dataset_path": "json", "dataset_kwargs": {"data_files": {split: local}}}


def _metadata(exp, rule: str | None, note: str | None = None) -> dict:
    b = exp.block
    return {"version": VERSION, "dataset_version": b["version"], "fingerprint": b["fingerprint"],
            "probekit_rule": rule, "dataset": b["dataset"], "config": exp.name,
            **({"note": note} if note else {})}


def _mc_answer(row: dict) -> int:
    labels = [c["label"] for c in row["question"]["choices"]]
    if row.get("answerKey") not in labels:
        raise DataError(f"example {row.get('id')}: answerKey {shown(row.get('answerKey'))} is none of the labels "
                        f"{shown(labels)}")
    return labels.index(row["answerKey"])


def mc_names(exp) -> tuple[str, str, str]:
    """An MC config's task name prefix, group and ``_choice`` group: oLMpics' when its dataset card cites oLMpics,
    else a user's own probe's (``probekit_``, ``probekit_mc``, ``probekit_mc_choice``)."""
    if exp.block.get("paper") == OLMPICS:
        return "olmpics", "olmpics", "olmpics_choice"
    return "probekit", "probekit_mc", "probekit_mc_choice"


def mc_tasks(exp, split: str, source: dict) -> list[Task]:
    """``mc_mlm``: the statement task and the ``_choice`` task; ``mc_qa``: the question answered."""
    prefix, group, choice_group = mc_names(exp)
    rows, base = exp.rows[split], task_name(f"{prefix}_{exp.name}")
    common = {**source, "output_type": "multiple_choice", "test_split": split, "doc_to_target": _ANSWER,
              "metric_list": _ACC}
    if exp.block["format"] == "mc_qa":
        config = {"task": base, **common, "doc_to_text": "{{question.stem}}", "target_delimiter": " ",
                  "doc_to_choice": _TEXTS,
                  "metadata": _metadata(exp, None, "MC-QA: probekit has no zero-shot rule for it (it is "
                                                   "scored by fine-tuning); the harness's own context + choice")}
        return [Task(base, group, _ordered(config), rows, lambda r: (
            r["question"]["stem"], [c["text"] for c in r["question"]["choices"]], _mc_answer(r)))]
    statement = {"task": base, **common, "doc_to_text": "", "target_delimiter": "", "doc_to_choice": _FILLED,
                 "metadata": _metadata(exp, "statement")}
    choice = {"task": f"{base}_choice", **common, "doc_to_text": _BEFORE, "target_delimiter": "",
              "doc_to_choice": _TEXTS, "metadata": _metadata(exp, "harness")}

    def filled(r):
        stem = r["question"]["stem"]
        return "", [stem.replace(MASK, c["text"]) for c in r["question"]["choices"]], _mc_answer(r)

    def before(r):
        return r["question"]["stem"].split(MASK)[0], [c["text"] for c in r["question"]["choices"]], _mc_answer(r)

    return [Task(base, group, _ordered(statement), rows, filled),
            Task(f"{base}_choice", choice_group, _ordered(choice), rows, before)]


def cloze_task(exp, split: str, source: dict, data_file: str | None) -> Task:
    """``cloze_set`` (ParaRel): one relation, each query filled with each of its candidates. The relation's
    candidates (the same for every query) are written once, as a list literal in the templates, so the rows
    need not carry them: a local data file holds only ``id``, ``query`` and ``obj_label`` (the Hub rows keep
    their ``candidates`` column; the task does not read it)."""
    name = task_name(exp.name.replace("-", "_"))
    rows = exp.rows[split]
    candidates = list(rows[0]["candidates"]) if rows else []
    for r in rows:
        if list(r["candidates"]) != candidates:
            raise DataError(f"{exp.name}: example {r['id']} has other candidates than example {rows[0]['id']}; "
                            f"a relation's queries share one candidate list")
    literal = repr(candidates)
    config = {"task": name, **source, "output_type": "multiple_choice", "test_split": split, "doc_to_text": "",
              "target_delimiter": "", "doc_to_choice": _QUERIES.replace("CANDIDATES", literal),
              "doc_to_target": _OBJECT.replace("CANDIDATES", literal), "metric_list": _ACC,
              "metadata": _metadata(exp, "statement")}

    def filled(r):
        if r["obj_label"] not in candidates:
            raise DataError(f"example {r['id']}: obj_label {shown(r['obj_label'])} is not among its candidates")
        return "", [r["query"].replace(MASK, c) for c in candidates], candidates.index(r["obj_label"])

    kept = [{"id": r["id"], "query": r["query"], "obj_label": r["obj_label"]} for r in rows] if data_file else rows
    return Task(name, "pararel", _ordered(config), kept, filled, data_file)


def pair_task(exp, split: str, source: dict) -> Task | None:
    """``pair_cls`` (CALUM): the harness's GLUE prompt for the labels; None (logged) for labels it has none for."""
    labels = frozenset(exp.config.meta.get("labels") or [])
    prompt = PAIR_PROMPTS.get(labels)
    if prompt is None:
        log.info("lm-eval: %s skipped: no GLUE prompt for labels %s", exp.name, shown(sorted(labels)))
        return None
    target = "{{ " + repr(list(prompt.labels)) + ".index(label) }}"
    name = task_name(exp.name)
    config = {"task": name, **source, "output_type": "multiple_choice", "test_split": split,
              "doc_to_text": prompt.text, "doc_to_choice": list(prompt.choices), "doc_to_target": target,
              "metric_list": [{"metric": m} for m in prompt.metrics],
              "metadata": _metadata(exp, None, "CALUM pairs: probekit scores them by fine-tuning, no zero-shot "
                                               "rule; the harness's GLUE prompt")}

    def expected(r):
        if r.get("label") not in prompt.labels:
            raise DataError(f"example {r.get('pair_id')}: label {shown(r.get('label'))} is none of "
                            f"{shown(list(prompt.labels))}")
        text = prompt.text.replace("{{sentence1}}", r["sentence1"]).replace("{{sentence2}}", r["sentence2"])
        return text, list(prompt.choices), prompt.labels.index(r["label"])

    return Task(name, "calum", _ordered(config), exp.rows[split], expected)


def tasks_of(exp, out: str, hub: str | None = None, revision: str | None = None) -> list[Task]:
    """The tasks of one exported config, with its role; ``out``: the output folder as given (ParaRel's local rows
    go there)."""
    return [replace(task, role=exp.block.get("role", "main")) for task in _tasks(exp, out, hub, revision)]


def _tasks(exp, out: str, hub: str | None, revision: str | None) -> list[Task]:
    fmt, folder = exp.block["format"], exp.config.folder
    try:
        split = test_split(exp.rows, fmt)
    except DataError as exc:
        raise DataError(f"{folder / 'meta.json'} ({exp.name}): {exc}") from None
    if fmt in ("mc_mlm", "mc_qa"):
        return mc_tasks(exp, split, _source(exp, split, (folder / f"{split}.jsonl").as_posix(), hub, revision))
    if fmt == "cloze_set":
        relation = exp.name.split("-", 1)[1]
        data_file = None if hub else f"pararel/{relation}.jsonl"
        local = None if hub else f"{out.rstrip('/')}/{data_file}"
        return [cloze_task(exp, split, _source(exp, split, local, hub, revision), data_file)]
    if fmt == "pair_cls":
        variant = exp.name[len(f"{exp.config.probe}-{exp.config.meta.get('task') or folder.name}-"):]
        task = pair_task(exp, split, _source(exp, split, (folder / variant / f"{split}.jsonl").as_posix(), hub,
                                             revision))
        return [task] if task else []
    return []


def _ordered(config: dict) -> dict:
    """The keys in the harness's reading order (task, data, prompt, metrics, metadata): stable YAML."""
    order = ("task", "dataset_path", "dataset_name", "dataset_kwargs", "output_type", "test_split", "doc_to_text",
             "target_delimiter", "doc_to_choice", "doc_to_target", "metric_list", "metadata")
    return {k: config[k] for k in order if k in config}


def self_check(task: Task, n: int = CHECKED) -> None:
    """Render the first ``n`` rows' context, choices and gold index with the harness's Jinja environment and
    ``ast.literal_eval`` (``lm_eval/api/task.py``) and compare them with probekit's; a mismatch is a
    DataError naming the task and the example."""
    from jinja2 import BaseLoader, Environment, StrictUndefined

    env = Environment(loader=BaseLoader, undefined=StrictUndefined, keep_trailing_newline=True)
    c = task.config

    def render(template, row):
        return env.from_string(template).render(**row)

    for row in task.rows[:n]:
        rid = row.get("id", row.get("pair_id"))
        text, choices, gold = task.expected(row)
        try:
            got_text = render(c["doc_to_text"], row)
            got = c["doc_to_choice"] if isinstance(c["doc_to_choice"], list) else \
                ast.literal_eval(render(c["doc_to_choice"], row))
            target = render(c["doc_to_target"], row)
        except Exception as exc:  # noqa: BLE001 - any template failure is the task's data error
            raise DataError(f"lm-eval task {task.name}, example {rid}: a template fails: {exc}") from None
        for what, want, have in (("context", text, got_text), ("choices", choices, got),
                                 ("target", str(gold), target)):
            if want != have:
                raise DataError(f"lm-eval task {task.name}, example {rid}: the harness would read {what} "
                                f"{shown(have)}, probekit scores {shown(want)}")
