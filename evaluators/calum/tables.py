"""The tables of the CALUM report in the layout of the paper's (papers/004), as markdown lines, mean ± std over
seeds in %: Table 2/5 (a row per model's single-task runs, per task Acc_val, C_R, C_S, C_sym where measured,
and the majority-class share), Table 6 (a row per model and multitask setting), the paper's published rows
under the checkpoints it evaluated, and the table of the runs themselves."""

from __future__ import annotations

from typing import Mapping

from evaluators.shared import smoke
from evaluators.calum.results import (
    METRICS,
    PAPER_GROUPS,
    STATS,
    is_single,
    row_label,
    row_order,
    setting_order,
    task_order,
)

TASK_NAMES = {"mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "qqp": "QQP", "mrpc": "MRPC",
              "kornli": "KorNLI", "klue_nli": "KLUE-NLI", "klue_sts": "KLUE-STS"}
HEADS = {"accuracy": "Acc_val", "C_R": "C_R", "C_S": "C_S", "C_sym": "C_sym"}
DASH = "–"
UNDEFINED = "—"
"""The deviation of a mean over one seed: undefined, not 0 (the sample std needs two)."""


# --- cells --------------------------------------------------------------------------------------------------

def _cell(stat: Mapping | None) -> str:
    """``mean±std`` in %; ``mean±—`` where the deviation is undefined (one seed, whatever std a file holds)."""
    if not stat or stat.get("mean") is None:
        return DASH
    std = stat.get("std")
    one = std is None or stat.get("n") == 1
    return f"{100 * stat['mean']:.1f}±" + (UNDEFINED if one else f"{100 * std:.1f}")


def _share(value) -> str:
    return DASH if value is None else f"{100 * value:.1f}"


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else DASH


def _paper(values) -> list[str]:
    return [f"{v:.1f}" for v in values] if values else [DASH] * len(METRICS)


def _columns(runs: list[Mapping]) -> list[str]:
    extra = ["C_sym"] if any(m.get("C_sym") for m in runs) else []
    return list(METRICS) + extra


# --- tables -------------------------------------------------------------------------------------------------

def task_name(task: str) -> str:
    return TASK_NAMES.get(task, task.upper())


def _header(first: list[str], tasks: list[str], columns: Mapping[str, list[str]], majority: bool) -> list[str]:
    heads = []
    for t in tasks:
        heads += [f"{task_name(t)} {HEADS[c]}" for c in columns[t]] + ([f"{task_name(t)} Maj."] if majority else [])
    return ["| " + " | ".join(first + heads) + " |", "|" + " --- |" * (len(first) + len(heads))]


def single_task(title: str, tasks: list[str], cells: Mapping, published: Mapping, table: str,
                reference_rows: tuple[str, ...] = ()) -> list[str]:
    """Table 2/5 layout: a row per model's single-task runs; under a model the paper evaluated, its numbers;
    then those of the paper's ``reference_rows`` (e.g. Human) not shown under a run."""
    runs = {(row, task): m for (row, setting, task), (_, m) in cells.items() if is_single(setting) and task in tasks}
    tasks = [t for t in tasks if any(task == t for _, task in runs)]
    columns = {t: _columns([m for (_, task), m in runs.items() if task == t]) for t in tasks}
    lines = [f"### {title}", ""] + _header(["model", "model id"], tasks, columns, majority=True)
    paper_rows, shown = published.get(table, {}), set()
    for row in row_order({row for row, _ in runs}, published):
        values = []
        for t in tasks:
            m = runs.get((row, t), {})
            values += [_cell(m.get(c)) for c in columns[t]] + [_share(m.get("majority"))]
        lines.append(f"| {row_label(row)} | `{row.model_id}` | " + " | ".join(values) + " |")
        name = published["hub_ids"].get(row.model_id)
        if name in paper_rows:
            lines.append(_paper_row(f"↳ paper: {name}", paper_rows[name], tasks, columns))
            shown.add(name)
    for name in reference_rows:
        if name not in shown and any(t in paper_rows.get(name, {}) for t in tasks):
            lines.append(_paper_row(f"paper: {name}", paper_rows[name], tasks, columns))
    return lines + [""]


def _paper_row(label: str, values: Mapping, tasks: list[str], columns: Mapping, majority: bool = True) -> str:
    out = []
    for t in tasks:
        out += _paper(values.get(t)) + [DASH] * (len(columns[t]) - len(METRICS) + int(majority))
    return f"| {label} | | " + " | ".join(out) + " |"


def multitask(cells: Mapping, published: Mapping) -> list[str]:
    """Table 6 layout: for every model (row) with a multitask run, a row per setting, per main task."""
    multi_rows = {row for (row, setting, _) in cells if not is_single(setting)}
    if not multi_rows:
        return []
    tasks = task_order(task for (row, setting, task) in cells if row in multi_rows and not is_single(setting))
    runs = {(row, setting, task): m for (row, setting, task), (_, m) in cells.items()
            if row in multi_rows and task in tasks}
    columns = {t: _columns([m for (_, _, task), m in runs.items() if task == t]) for t in tasks}
    lines = ["### Multitask training (Table 6)", ""] + _header(["model-setting", "model id"], tasks, columns,
                                                              majority=False)
    folded = {g.casefold(): g for g in PAPER_GROUPS}
    for row in row_order(multi_rows, published):
        name = published["hub_ids"].get(row.model_id)
        paper = published["table6"].get(name, {})
        for setting in setting_order(s for (r, s, _) in runs if r == row):
            values = [_cell(runs.get((row, setting, t), {}).get(c)) for t in tasks for c in columns[t]]
            lines.append(f"| {row_label(row, setting)} | `{row.model_id}` | " + " | ".join(values) + " |")
            group = folded.get(setting.casefold())
            if group in paper:
                lines.append(_paper_row(f"↳ paper: {name}-{group}", paper[group], tasks, columns, majority=False))
    return lines + ["", "Tasks trained per run: see Runs below (Para: the main task + QQP + MRPC; All: the five "
                        "English tasks, in the paper).", ""]


def checkpoint(m: Mapping) -> str:
    """The checkpoint a run evaluated: ``last`` (the original code's), ``best`` (a run from before the choice
    restored the best); none for a checkpoint evaluated as it is (no epochs trained)."""
    if not m.get("per_seed") or "epochs" not in m["per_seed"][0]:
        return DASH
    return (m.get("params") or {}).get("checkpoint", "best")


def runs_table(results: Mapping[str, Mapping]) -> list[str]:
    lines = ["### Runs", "", "| run | model | model id | task | setting | tasks trained | split | seeds | majority | "
             "checkpoint | best epoch / epochs | capped |", "|" + " --- |" * 12]
    for run in sorted(results):
        m = results[run]
        seeds = m.get("per_seed", [])
        epochs = ", ".join(f"{_number(s.get('best_epoch'))}/{_number(s.get('epochs'))}" for s in seeds) or DASH
        n = max((m[k].get("n") or 0 for k in STATS if m.get(k)), default=0)
        mark = f" {smoke.MARK}" if smoke.is_smoke(m) else ""
        lines.append(f"| {run}{mark} | {m['model']} | `{m['model_id']}` | {m['task']} | {m['setting']} | "
                     f"{', '.join(m.get('tasks_trained') or [m['task']])} | {m.get('split') or 'dev'} | {n} | "
                     f"{_share(m.get('majority'))} | {checkpoint(m)} | {epochs} | "
                     f"{smoke.CAPPED + ' yes' if m.get('capped') else 'no'} |")
    return lines + [""]
