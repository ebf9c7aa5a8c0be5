"""``results/zeroshot.png``: the zero-shot accuracies of every model side by side, per probe and variant, each with
its 95% percentile bootstrap interval over dev examples (the interval the report's table prints).

A dot plot, one panel per probe: a row per variant (the original, its NO-LANG and PERTURBED controls, the released
file, the other phrasings), and in that row one dot per model with its interval as a horizontal bar, beside the
variant's chance level. Dots rather than bars: an accuracy near chance is read against the chance line, not against
0, and eight models' intervals stay apart. Panel heights grow with models and variants, so one model and eight are
both legible. A hollow dot is a † row (a newly initialised MLM head: not a zero-shot result), an ✕ a constant
predictor (one answer to every example)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

NAMES = {"nolang": "NO-LANG", "perturbed": "PERTURBED", "release": "release file"}
"""Variants in the papers' words (the rest keep their names: our generated phrasings)."""
NOT_ZERO_SHOT = "† MLM head newly initialised: not a zero-shot result"
CONSTANT = "✕ constant predictor: one answer to every example"
PANEL_WIDTH = 6.4   # inches per panel column


def _colors(n: int) -> list:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def _group_height(models: int) -> float:
    """Inches per variant row: room for each model's dot and interval."""
    return 0.3 + 0.13 * models


def _panel(ax, sub: pd.DataFrame, models: list[str], colors: dict) -> None:
    variants = list(dict.fromkeys(sub.variant))
    step = min(0.8 / len(models), 0.3)
    for k, variant in enumerate(variants):
        rows = sub[sub.variant == variant]
        for chance in dict.fromkeys(rows.chance):
            ax.vlines(chance, k - 0.46, k + 0.46, colors="black", linestyles="dashed", linewidth=1, zorder=2)
        for r in rows.itertuples():
            y = k + (models.index(r.model) - (len(models) - 1) / 2) * step
            constant = isinstance(r.constant, str)
            ax.errorbar(r.accuracy, y, xerr=[[r.accuracy - r.low], [r.high - r.accuracy]], fmt="X" if constant
                        else "o", color=colors[r.model], markerfacecolor=colors[r.model] if r.zero_shot else "white",
                        markersize=7 if constant else 5.5, capsize=2.5, elinewidth=1.4, zorder=3)
        if k:
            ax.axhline(k - 0.5, color="0.85", linewidth=0.8, zorder=0)
    ax.set_yticks(range(len(variants)), [NAMES.get(v, v) for v in variants])
    ax.set_ylim(len(variants) - 0.5, -0.5)   # the first variant (the original) on top
    ax.set_xlim(0, 1)
    ax.set_axisbelow(True)   # the grid under the chance lines (chance 0.2 is a grid line)
    ax.grid(axis="x", color="0.92")
    ax.tick_params(axis="y", length=0)


def _handles(df: pd.DataFrame, models: list[str], colors: dict) -> list[Line2D]:
    handles = [Line2D([], [], color=colors[m], marker="o", linestyle="-", markersize=5.5,
                      markerfacecolor=colors[m] if df[df.model == m].zero_shot.all() else "white",
                      label=m if df[df.model == m].zero_shot.all() else f"{m} †") for m in models]
    handles.append(Line2D([], [], color="black", linestyle="dashed", linewidth=1, label="chance"))
    if not df.zero_shot.all():
        handles.append(Line2D([], [], color="0.3", marker="o", linestyle="", markerfacecolor="white",
                              label=NOT_ZERO_SHOT))
    if any(isinstance(c, str) for c in df.constant):
        handles.append(Line2D([], [], color="0.3", marker="X", linestyle="", markersize=7, label=CONSTANT))
    return handles


def figure(df: pd.DataFrame) -> plt.Figure:
    """The dot plot of a report's rows (:func:`evaluators.shared.report.frame`: model, probe, variant, accuracy,
    low, high, chance, zero_shot, setup, constant)."""
    models, probes = list(dict.fromkeys(df.model)), sorted(dict.fromkeys(df.probe))
    colors = dict(zip(models, _colors(len(models))))
    columns = 1 if len(probes) == 1 else 2
    rows = math.ceil(len(probes) / columns)
    heights = [max(df[df.probe.isin(probes[i * columns:(i + 1) * columns])].groupby("probe").variant.nunique())
               * _group_height(len(models)) + 0.7 for i in range(rows)]
    handles = _handles(df, models, colors)
    legend_rows = math.ceil(len(handles) / (ncol := min(len(handles), 4 if columns == 2 else 2)))
    top = 0.75 + 0.25 * legend_rows   # inches: the title and the legend under the panels
    fig = plt.figure(figsize=(PANEL_WIDTH * columns + 1.2, sum(heights) + top + 0.3), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, probe in zip(axes.flat, probes):
        _panel(ax, df[df.probe == probe], models, colors)
        ax.set_title(probe, fontsize="medium", loc="left")
        ax.set_xlabel("accuracy (dev), 95% bootstrap interval", fontsize="small")
    for ax in axes.flat[len(probes):]:
        ax.set_visible(False)
    setups = " / ".join(dict.fromkeys(df.setup))
    fig.suptitle(f"Zero-shot accuracy per probe and variant, the models side by side ({setups})",
                 color="black" if df.zero_shot.all() else "#c53030")
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize="small", frameon=False)
    return fig
