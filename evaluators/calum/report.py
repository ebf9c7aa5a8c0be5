"""The CALUM report: every ``<run>/metrics.json`` (``probes evaluate calum``) under a results folder in the
layout of the paper's tables (papers/004), mean ± std over seeds in %:

- Table 2 (English) and Table 5 (Korean): one row per model's single-task runs, per task Acc_val, C_R, C_S
  (C_sym on symmetric tasks, where measured) and the majority-class share;
- Table 6: for every model with a multitask run, a row per setting (Single, then the groups: Para, All, ...),
  per main task Acc_val, C_R, C_S;
- the runs themselves (tasks trained, split, seeds, best epochs).

Under a row whose model id is a checkpoint the paper evaluated (``hub_ids`` in published.yaml), a
``paper:`` row gives its published numbers (Table 2, or Table 6 for the same group); the Korean table lists the
paper's Korean rows for reference (they name no checkpoint). ``plot`` draws C_R and C_S per task."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping, NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

from evaluators import smoke  # noqa: E402
from evaluators.report import save  # noqa: E402
from probekit import atomic  # noqa: E402
from probekit.errors import DataError  # noqa: E402

PUBLISHED = Path(__file__).with_name("published.yaml")
ENGLISH = ("mnli", "qnli", "rte", "qqp", "mrpc")        # Table 2's order
KOREAN = ("kornli", "klue_nli", "klue_sts")             # Table 5's order
SYMMETRIC = ("mrpc", "qqp", "klue_sts")
TASK_NAMES = {"mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "qqp": "QQP", "mrpc": "MRPC",
              "kornli": "KorNLI", "klue_nli": "KLUE-NLI", "klue_sts": "KLUE-STS"}
METRICS = ("accuracy", "C_R", "C_S")                    # the paper's columns, in its order
STATS = METRICS + ("C_sym",)
HEADS = {"accuracy": "Acc_val", "C_R": "C_R", "C_S": "C_S", "C_sym": "C_sym"}
SINGLE = "Single"
PAPER_GROUPS = ("Single", "Para", "All")                # Table 6's settings, in its order
REFERENCE = "RoBERTa-base"                              # the plot's reference row (Table 2)
DASH = "–"
CAPPED = ("† capped settings (`capped: true`: a smaller eval/train limit, fewer epochs or max_steps than the "
          "paper's 10 epochs, lr 1e-5, batch 64, early stopping, 5 runs): a smoke/offline check, not comparable "
          "with the paper's numbers.")


class Row(NamedTuple):
    """A table row: the runs of one model (id), evaluation split, capping and scale (smoke profile or not)."""
    model: str
    model_id: str
    split: str
    capped: bool
    smoke: bool = False


def load_published() -> dict:
    return yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))


# --- reading ------------------------------------------------------------------------------------------------

def _is_share(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def check(m, where) -> None:
    """Raise a DataError naming ``where`` unless ``m`` has the fields the report reads, of the right types."""
    if not isinstance(m, dict):
        raise DataError(f"{where}: not a JSON object (not a CALUM metrics.json?)")
    if m.get("protocol", "calum") != "calum":
        raise DataError(f"{where}: protocol {m['protocol']!r}, not 'calum'")
    missing = [k for k in ("task", "model", "model_id", "setting") if not isinstance(m.get(k), str) or not m[k]]
    if missing:
        raise DataError(f"{where}: missing or empty field(s) {missing} (not a CALUM metrics.json?)")
    trained = m.get("tasks_trained")
    if trained is not None and (not isinstance(trained, list) or not trained or trained[0] != m["task"]
                                or not all(isinstance(t, str) for t in trained)):
        raise DataError(f"{where}: tasks_trained must list the task names, the main task {m['task']!r} first")
    for key in STATS:
        stat = m.get(key)
        if stat is None:
            continue
        if not isinstance(stat, dict) or not (stat.get("mean") is None or _is_share(stat["mean"])) or not (
                stat.get("std") is None or (_is_share(stat["std"]))):
            raise DataError(f"{where}: {key} must be {{mean, std, n, per_seed}} with shares in [0, 1], not {stat!r}")
    if m.get("majority") is not None and not _is_share(m["majority"]):
        raise DataError(f"{where}: majority must be a share in [0, 1], not {m['majority']!r}")
    for key in ("split", "language", "profile"):
        if m.get(key) is not None and not isinstance(m[key], str):
            raise DataError(f"{where}: {key} must be a string, not {m[key]!r}")
    if not isinstance(m.get("capped", False), bool):
        raise DataError(f"{where}: capped must be true or false, not {m['capped']!r}")
    if not isinstance(m.get("per_seed", []), list) or not all(isinstance(s, dict) for s in m.get("per_seed", [])):
        raise DataError(f"{where}: per_seed must be a list of objects")


def read_results(folder: Path) -> dict[str, dict]:
    """``{run: metrics}`` of every ``<run>/metrics.json`` one level under ``folder``, in sorted order. A run folder
    (hidden ones aside) without a metrics.json, or with a malformed one, is a DataError naming the file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (run: probes evaluate calum)")
    results = {}
    for run in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        path = run / "metrics.json"
        if not path.is_file():
            raise DataError(f"{path}: missing (an unfinished run? re-run it, or move {run} out of {folder})")
        try:
            m = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not valid JSON: {exc}") from None
        check(m, path)
        results[run.name] = m
    if not results:
        raise DataError(f"{folder}: no <run>/metrics.json (run: probes evaluate calum)")
    return results


# --- indexing -----------------------------------------------------------------------------------------------

def _row(m: Mapping) -> Row:
    return Row(m["model"], m["model_id"], m.get("split") or "dev", bool(m.get("capped", False)), smoke.is_smoke(m))


def _single(setting: str) -> bool:
    return setting.casefold() == SINGLE.casefold()


def _korean(m: Mapping) -> bool:
    return m["task"] in KOREAN or (m.get("language") or "").casefold() == "ko"


def _task_order(tasks) -> list[str]:
    known = ENGLISH + KOREAN
    return sorted(set(tasks), key=lambda t: (known.index(t) if t in known else len(known), t))


def _setting_order(settings) -> list[str]:
    def key(s):
        folded = [g.casefold() for g in PAPER_GROUPS]
        return (folded.index(s.casefold()) if s.casefold() in folded else len(folded), s)
    return sorted(set(settings), key=key)


def index(results: Mapping[str, Mapping]) -> dict[tuple[Row, str, str], tuple[str, Mapping]]:
    """``{(row, setting, task): (run, metrics)}``; two runs in one cell are a DataError naming both."""
    cells: dict = {}
    for run in sorted(results):
        m = results[run]
        check(m, f"run {run}")
        key = (_row(m), m["setting"], m["task"])
        if key in cells:
            raise DataError(f"runs {cells[key][0]} and {run}: both {m['model']} (`{m['model_id']}`), task {m['task']}, "
                            f"setting {m['setting']}, split {key[0].split}: keep one")
        cells[key] = (run, m)
    return cells


def _row_order(rows, published: Mapping) -> list[Row]:
    """Rows of models the paper evaluated first, in its order; then the others by name."""
    paper = list(published["table2"])
    def key(r: Row):
        name = published["hub_ids"].get(r.model_id)
        return (paper.index(name) if name in paper else len(paper), r.model, r.model_id, r.split, r.capped,
                r.smoke)
    return sorted(set(rows), key=key)


def _label(row: Row, setting: str = "") -> str:
    """``model[-setting][ (split)][ †][ (smoke)]``: the split when not a dev split, † on capped runs, the smoke
    marker on smoke-scale runs."""
    split = "" if row.split.startswith("dev") else f" ({row.split})"
    return (f"{row.model}{'-' + setting if setting else ''}{split}{' †' if row.capped else ''}"
            f"{' ' + smoke.MARK if row.smoke else ''}")


# --- cells --------------------------------------------------------------------------------------------------

def _cell(stat: Mapping | None) -> str:
    if not stat or stat.get("mean") is None:
        return DASH
    std = stat.get("std")
    return f"{100 * stat['mean']:.1f}" + (f"±{100 * std:.1f}" if std is not None else "")


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

def _task_name(task: str) -> str:
    return TASK_NAMES.get(task, task.upper())


def _header(first: list[str], tasks: list[str], columns: Mapping[str, list[str]], majority: bool) -> list[str]:
    heads = []
    for t in tasks:
        heads += [f"{_task_name(t)} {HEADS[c]}" for c in columns[t]] + ([f"{_task_name(t)} Maj."] if majority else [])
    return ["| " + " | ".join(first + heads) + " |", "|" + " --- |" * (len(first) + len(heads))]


def single_task(title: str, tasks: list[str], cells: Mapping, published: Mapping, table: str,
                reference_rows: tuple[str, ...] = ()) -> list[str]:
    """Table 2/5 layout: a row per model's single-task runs; under a model the paper evaluated, its numbers;
    then the paper's ``reference_rows`` (e.g. Human)."""
    runs = {(row, task): m for (row, setting, task), (_, m) in cells.items() if _single(setting) and task in tasks}
    tasks = [t for t in tasks if any(task == t for _, task in runs)]
    columns = {t: _columns([m for (_, task), m in runs.items() if task == t]) for t in tasks}
    lines = [f"### {title}", ""] + _header(["model", "model id"], tasks, columns, majority=True)
    paper_rows = published.get(table, {})
    for row in _row_order({row for row, _ in runs}, published):
        values = []
        for t in tasks:
            m = runs.get((row, t), {})
            values += [_cell(m.get(c)) for c in columns[t]] + [_share(m.get("majority"))]
        lines.append(f"| {_label(row)} | `{row.model_id}` | " + " | ".join(values) + " |")
        name = published["hub_ids"].get(row.model_id)
        if name in paper_rows:
            lines.append(_paper_row(f"↳ paper: {name}", paper_rows[name], tasks, columns))
    for name in reference_rows:
        if any(t in paper_rows.get(name, {}) for t in tasks):
            lines.append(_paper_row(f"paper: {name}", paper_rows[name], tasks, columns))
    return lines + [""]


def _paper_row(label: str, values: Mapping, tasks: list[str], columns: Mapping, majority: bool = True) -> str:
    out = []
    for t in tasks:
        out += _paper(values.get(t)) + [DASH] * (len(columns[t]) - len(METRICS) + int(majority))
    return f"| {label} | | " + " | ".join(out) + " |"


def multitask(cells: Mapping, published: Mapping) -> list[str]:
    """Table 6 layout: for every model (row) with a multitask run, a row per setting, per main task."""
    multi_rows = {row for (row, setting, _) in cells if not _single(setting)}
    if not multi_rows:
        return []
    tasks = _task_order(task for (row, setting, task) in cells if row in multi_rows and not _single(setting))
    runs = {(row, setting, task): m for (row, setting, task), (_, m) in cells.items()
            if row in multi_rows and task in tasks}
    columns = {t: _columns([m for (_, _, task), m in runs.items() if task == t]) for t in tasks}
    lines = ["### Multitask training (Table 6)", ""] + _header(["model-setting", "model id"], tasks, columns,
                                                              majority=False)
    folded = {g.casefold(): g for g in PAPER_GROUPS}
    for row in _row_order(multi_rows, published):
        name = published["hub_ids"].get(row.model_id)
        paper = published["table6"].get(name, {})
        for setting in _setting_order(s for (r, s, _) in runs if r == row):
            values = [_cell(runs.get((row, setting, t), {}).get(c)) for t in tasks for c in columns[t]]
            lines.append(f"| {_label(row, setting)} | `{row.model_id}` | " + " | ".join(values) + " |")
            group = folded.get(setting.casefold())
            if group in paper:
                lines.append(_paper_row(f"↳ paper: {name}-{group}", paper[group], tasks, columns, majority=False))
    return lines + ["", "Tasks trained per run: see Runs below (Para: the main task + QQP + MRPC; All: the five "
                        "English tasks, in the paper).", ""]


def runs_table(results: Mapping[str, Mapping]) -> list[str]:
    lines = ["### Runs", "", "| run | model | model id | task | setting | tasks trained | split | seeds | majority | "
             "best epoch / epochs | capped |", "|" + " --- |" * 11]
    for run in sorted(results):
        m = results[run]
        seeds = m.get("per_seed", [])
        epochs = ", ".join(f"{_number(s.get('best_epoch'))}/{_number(s.get('epochs'))}" for s in seeds) or DASH
        n = max((m[k].get("n") or 0 for k in STATS if m.get(k)), default=0)
        mark = f" {smoke.MARK}" if smoke.is_smoke(m) else ""
        lines.append(f"| {run}{mark} | {m['model']} | `{m['model_id']}` | {m['task']} | {m['setting']} | "
                     f"{', '.join(m.get('tasks_trained') or [m['task']])} | {m.get('split') or 'dev'} | {n} | "
                     f"{_share(m.get('majority'))} | {epochs} | {'† yes' if m.get('capped') else 'no'} |")
    return lines + [""]


def published_for(m: Mapping, published: Mapping) -> dict | None:
    """The paper's numbers (in %) for this run's checkpoint, task and setting, or None."""
    name = published["hub_ids"].get(m["model_id"])
    if _single(m["setting"]):
        values, table = published["table2"].get(name, {}).get(m["task"]), "table2"
    else:
        group = {g.casefold(): g for g in PAPER_GROUPS}.get(m["setting"].casefold())
        values, table = published["table6"].get(name, {}).get(group, {}).get(m["task"]), "table6"
    if not values:
        return None
    return {"table": table, "row": name, **dict(zip(METRICS, values))}


def render(results: Mapping[str, Mapping]) -> tuple[str, dict]:
    """The markdown report and its JSON (per run: our stats as shares, the published numbers in %)."""
    published = load_published()
    cells = index(results)
    tasks = _task_order(m["task"] for m in results.values())
    english = [t for t in tasks if not any(_korean(m) for m in results.values() if m["task"] == t)]
    korean = [t for t in tasks if t not in english]
    small = smoke.any_smoke(results.values())
    lines = ["# CALUM results", "",
             "Mean ± std (sample std over seeds) in %. **Acc_val**: accuracy on the evaluated split's labelled "
             "originals; **C_R** / **C_S**: share of examples whose prediction on the REVERSE (segments swapped "
             "with their indicators) / SIGNAL (`[X] text` for `X: text`) variant equals that on the original; "
             "**C_sym**: BECEL's symmetric consistency (texts swapped, indicators in place; symmetric tasks only); "
             "**Maj.**: share of the split's most frequent gold class (an Acc_val near it: the model learned "
             "little beyond the prior, and a constant prediction is trivially consistent). "
             "`paper:` rows: the published numbers (Jang, Kwon and Lukasiewicz 2021; means of five runs, no std) "
             "for the same Hub checkpoint.", ""]
    lines = smoke.with_banner(lines, small)
    if any(m.get("capped") for m in results.values()):
        lines += [CAPPED, ""]
    if small:
        lines += [f"{smoke.MARK}: {smoke.LEGEND}.", ""]
    if any(published["hub_ids"].get(m["model_id"], "").startswith("T5") for m in results.values()):
        lines += ["The paper's T5 rows are the Hub's multitask-fine-tuned checkpoints, evaluated as text "
                  "generation without further fine-tuning; a run here trains a new classification head.", ""]
    if any(_single(s) and t in english for (_, s, t) in cells):
        lines += single_task("English tasks (Table 2)", english, cells, published, "table2", ("Human",))
    if any(_single(s) and t in korean for (_, s, t) in cells):
        lines += single_task("Korean tasks (Table 5)", korean, cells, published, "table5",
                             tuple(published["table5"]))
    lines += multitask(cells, published)
    lines += runs_table(results)
    summary = {"source": published["source"], "runs": {run: {
        **{k: m.get(k) for k in ("model", "model_id", "task", "setting", "split", "language", "majority")},
        "tasks_trained": m.get("tasks_trained") or [m["task"]], "capped": bool(m.get("capped", False)),
        "profile": m.get("profile"),
        **{k: m[k] for k in STATS if m.get(k)}, "published_pct": published_for(m, published)}
        for run, m in sorted(results.items())}}
    return "\n".join(lines), summary


# --- plot ---------------------------------------------------------------------------------------------------

def plot(results: Mapping[str, Mapping], path: Path) -> None:
    """Per task a panel: Acc_val, C_R and C_S (mean, std error bars) per model and setting, grouped bars, with
    the majority class's share marked on the accuracy bar (consistency is trivial for a model that predicts it
    always); the paper's RoBERTa-base C_R (Table 2) as a dashed reference line where the paper has the task."""
    published = load_published()
    cells = index(results)
    tasks = _task_order(m["task"] for m in results.values())
    ncols = min(len(tasks), 3)
    nrows = math.ceil(len(tasks) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols + 0.4, 4.0 * nrows), squeeze=False)
    colours = {"accuracy": "tab:gray", "C_R": "tab:blue", "C_S": "tab:orange"}
    handles = {}
    for ax, task in zip(axes.flat, tasks):
        bars = [(row, setting, m) for row in _row_order({r for (r, _, t) in cells if t == task}, published)
                for setting in _setting_order(s for (r, s, t) in cells if r == row and t == task)
                for m in [cells[(row, setting, task)][1]]]
        x = np.arange(len(bars))
        width = 0.27
        for offset, key in ((-width, "accuracy"), (0.0, "C_R"), (width, "C_S")):
            means = [(m.get(key) or {}).get("mean") for _, _, m in bars]
            stds = [(m.get(key) or {}).get("std") or 0.0 for _, _, m in bars]
            drawn = ax.bar(x + offset, [np.nan if v is None else v for v in means], width, yerr=stds, capsize=3,
                           color=colours[key], label="Acc_val" if key == "accuracy" else key,
                           error_kw={"elinewidth": 1})
            handles.setdefault(key, drawn)
        majority = [m.get("majority") for _, _, m in bars]
        handles.setdefault("majority", ax.hlines([np.nan if v is None else v for v in majority], x - 1.5 * width,
                                                 x - 0.5 * width, color="black", linewidth=2,
                                                 label="majority class"))
        reference = published["table2"].get(REFERENCE, {}).get(task)
        if reference:
            line = ax.axhline(reference[1] / 100, color="black", linestyle="--", linewidth=1,
                              label=f"paper {REFERENCE} C_R (Table 2)")
            handles.setdefault("reference", line)
            ax.annotate(f"{reference[1]:.1f}", (1.0, reference[1] / 100), xycoords=("axes fraction", "data"),
                        xytext=(2, 0), textcoords="offset points", va="center", fontsize=7)
        ax.set_xticks(x, [f"{_label(row)}\n{setting}" for row, setting, _ in bars], fontsize=7,
                      rotation=30 if len(bars) > 3 else 0, ha="right" if len(bars) > 3 else "center")
        span = max(len(bars), 3)                          # a panel with few bars keeps their width
        ax.set(xlim=((len(bars) - 1 - span) / 2, (len(bars) - 1 + span) / 2), ylim=(0, 1.05),
               title=_task_name(task), ylabel="share of examples")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    note = " († capped settings: not the paper's)" if any(m.get("capped") for m in results.values()) else ""
    fig.suptitle(f"CALUM: Acc_val, C_R (REVERSE) and C_S (SIGNAL), mean ± std over seeds{note}",
                 fontsize=10)
    fig.legend(list(handles.values()), [h.get_label() for h in handles.values()], loc="lower center",
               ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    save(fig, path)


def write(results_folder: Path, out_md: Path, plot_path: Path | None = None) -> None:
    """The report (``out_md``), its JSON beside it (``.json``) and, when ``plot_path`` is given, the figure;
    every file written atomically."""
    write_results(read_results(results_folder), out_md, plot_path)


def write_results(results: Mapping[str, Mapping], out_md: Path, plot_path: Path | None = None) -> None:
    """:func:`write` of ``{run: metrics}``."""
    text, summary = render(results)
    if plot_path is not None:
        plot(results, plot_path)
    atomic.write_text(out_md, text)
    atomic.write_json(Path(out_md).with_suffix(".json"), summary)
