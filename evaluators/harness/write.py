"""``probes export lm-eval``: every dataset folder under ``--data`` as lm-evaluation-harness task configs in one
folder (``--out``), written atomically and byte-identically on any machine.

Layout: ``<folder>/<task>.yaml`` per task, ``<folder>/_<group>.yaml`` per group (the paper groups ``olmpics``,
``olmpics_choice``, ``pararel``, ``calum``, and ``probekit_mc``, ``probekit_mc_choice`` for a user's own MC
probes; the folder is the group's first word; a group holds the main variants' tasks, a probe's controls and grids
left out of the average), ``_probekit.yaml`` over them, ``README.md``; in local mode also
``pararel/<relation>.jsonl`` (ParaRel's folder keeps tuples and patterns apart, so its rows are written out).
Local data paths are relative to the project root as ``--data``/``--out`` were given: run ``lm_eval`` from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import yaml

from evaluators.harness.tasks import GROUPS, VERSION, Task, self_check, tasks_of
from probekit.outputs import atomic
from probekit.errors import DataError

TOP = "probekit"
_AGGREGATE = {"olmpics": ("acc", "acc_norm"), "olmpics_choice": ("acc", "acc_norm"), "pararel": ("acc", "acc_norm"),
              "calum": ("acc",), "probekit_mc": ("acc", "acc_norm"), "probekit_mc_choice": ("acc", "acc_norm"),
              TOP: ("acc",)}


@dataclass
class Written:
    """What an export wrote: the tasks by group and the files (relative to ``out``)."""

    groups: dict[str, list[str]]
    files: list[str]


def dump(obj: dict) -> str:
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)


def group_config(name: str, members: list[str]) -> dict:
    """A harness group (``group:`` + ``task:``), its accuracy the size-weighted mean of its members' (a paper
    group's members: its main tasks, not the controls and grids)."""
    return {"group": name, "task": members,
            "aggregate_metric_list": [{"metric": m, "aggregation": "mean", "weight_by_size": True}
                                      for m in _AGGREGATE[name]],
            "metadata": {"version": VERSION}}


def collect(data: str, out: str, probes: Iterable[str] | None = None, hub: str | None = None,
            revision: str | None = None) -> list[Task]:
    """Every task of the configs under ``data`` (``--probes`` chooses), each self-checked."""
    from probekit.hub import export as hub_export
    from probekit.outputs import overlap

    root = Path(data)
    tasks = []
    configs = hub_export.discover(root, probes)
    overlap.check([("--out", out)], [("--data", c.folder) for c in configs])   # before any work
    for config in configs:
        for task in tasks_of(hub_export.export(config, root), out, hub, revision):
            self_check(task)
            tasks.append(task)
    return tasks


def files_of(tasks: list[Task], data: str, out: str, hub: str | None, revision: str | None) -> dict[str, str]:
    """``{relative path: text}`` of the whole output folder."""
    _check_names(tasks)
    files: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    for task in tasks:
        files[f"{task.group.split('_')[0]}/{task.name}.yaml"] = dump(task.config)
        if task.data_file:
            files[task.data_file] = atomic.jsonl_text(task.rows)
        if task.role == "main":
            groups.setdefault(task.group, []).append(task.name)
    present = [g for g in GROUPS if g in groups]
    for g in present:
        files[f"{g.split('_')[0]}/_{g}.yaml"] = dump(group_config(g, sorted(groups[g])))
    files[f"_{TOP}.yaml"] = dump(group_config(TOP, present))
    files["README.md"] = readme(tasks, groups, data, out, hub, revision)
    return dict(sorted(files.items()))


def _check_names(tasks: list[Task]) -> None:
    """Every task name is used once and is no group's (the harness reads tasks and groups as one set of names): a
    probe named ``mc`` would be the task ``probekit_mc``."""
    seen: dict[str, str] = {name: f"the group {name}" for name in (*GROUPS, TOP)}
    for task in tasks:
        dataset = f"the dataset {task.config['metadata']['dataset']}"
        if task.name in seen:
            raise DataError(f"lm-eval task {task.name} of {dataset} has the name of {seen[task.name]}; rename the "
                            f"probe")
        seen[task.name] = dataset


def write(data: str, out: str, probes: Iterable[str] | None = None, hub: str | None = None,
          revision: str | None = None) -> Written:
    """Build every task, check it, and replace ``out`` with the new folder in one rename."""
    tasks = collect(data, out, probes, hub, revision)
    files = files_of(tasks, data, out, hub, revision)
    with atomic.atomic_path(Path(out), kind="export") as tmp:
        tmp.mkdir(parents=True)
        for rel, text in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
    groups: dict[str, list[str]] = {}
    for task in tasks:
        groups.setdefault(task.group, []).append(task.name)
    return Written(groups, list(files))


def readme(tasks: list[Task], groups: dict[str, list[str]], data: str, out: str, hub: str | None,
           revision: str | None) -> str:
    """The folder's README: how to run the tasks, and every task with its group and probekit rule."""
    where = (f"the Hub dataset `{hub}`" + (f" at revision `{revision}`" if revision else "") if hub
             else f"the dataset folders under `{data}` (paths relative to the project root)")
    lines = [
        "# probekit probes as lm-evaluation-harness tasks", "",
        f"Generated by `probes export lm-eval` from {where}; do not edit. Run from the project root:", "",
        "```",
        f"lm_eval --model hf --model_args pretrained=gpt2 --tasks {TOP} --include_path {out} --log_samples "
        "--output_path results/lm_eval",
        "```", "",
        "Groups: " + ", ".join(f"`{g}` ({len(groups[g])} tasks)" for g in GROUPS if g in groups)
        + f", and `{TOP}` over them. See docs/lm-eval.md for which probekit rule each task equals.", "",
        "| task | group | probekit rule | dataset version |", "| --- | --- | --- | --- |",
    ]
    for task in tasks:
        meta = task.config["metadata"]
        lines.append(f"| `{task.name}` | `{task.group}` | {meta['probekit_rule'] or '—'} | "
                     f"`{meta['dataset_version']}` |")
    return "\n".join(lines) + "\n"
