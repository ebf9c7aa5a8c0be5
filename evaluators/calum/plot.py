"""The CALUM report's figure: per task a panel of Acc_val, C_R and C_S (mean, std error bars) per model and
setting, with the majority class's share and the paper's RoBERTa-base C_R (Table 2) as reference lines."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

from evaluators.shared import smoke  # noqa: E402
from evaluators.calum.results import (  # noqa: E402
    index,
    load_published,
    row_label,
    row_order,
    setting_order,
    task_order,
)
from evaluators.calum.tables import task_name  # noqa: E402
from evaluators.shared.report import save  # noqa: E402

REFERENCE = "RoBERTa-base"                              # the plot's reference row (Table 2)


def plot(results: Mapping[str, Mapping], path: Path) -> None:
    """Per task a panel: Acc_val, C_R and C_S (mean, std error bars) per model and setting, grouped bars, with
    the majority class's share marked on the accuracy bar (consistency is trivial for a model that predicts it
    always); the paper's RoBERTa-base C_R (Table 2) as a dashed reference line where the paper has the task."""
    published = load_published()
    cells = index(results)
    tasks = task_order(m["task"] for m in results.values())
    ncols = min(len(tasks), 3)
    nrows = math.ceil(len(tasks) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols + 0.4, 4.0 * nrows), squeeze=False)
    colours = {"accuracy": "tab:gray", "C_R": "tab:blue", "C_S": "tab:orange"}
    handles = {}
    for ax, task in zip(axes.flat, tasks):
        bars = [(row, setting, m) for row in row_order({r for (r, _, t) in cells if t == task}, published)
                for setting in setting_order(s for (r, s, t) in cells if r == row and t == task)
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
        ax.set_xticks(x, [f"{row_label(row)}\n{setting}" for row, setting, _ in bars], fontsize=7,
                      rotation=30 if len(bars) > 3 else 0, ha="right" if len(bars) > 3 else "center")
        span = max(len(bars), 3)                          # a panel with few bars keeps their width
        ax.set(xlim=((len(bars) - 1 - span) / 2, (len(bars) - 1 + span) / 2), ylim=(0, 1.05),
               title=task_name(task), ylabel="share of examples")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    note = f" ({smoke.CAPPED} capped settings: not the paper's)" if any(m.get("capped") for m in results.values()) else ""
    fig.suptitle(f"CALUM: Acc_val, C_R (REVERSE) and C_S (SIGNAL), mean ± std over seeds{note}",
                 fontsize=10)
    fig.legend(list(handles.values()), [h.get_label() for h in handles.values()], loc="lower center",
               ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    save(fig, path)
