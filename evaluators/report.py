"""The report stage: every ``metrics.json`` under the result folders -> a markdown table, dvc metrics, a plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from probekit import atomic  # noqa: E402

VARIANT_ORDER = ("original", "nolang", "perturbed", "release", "release_phrasing")


def iter_metrics(folders: Iterable[Path]) -> Iterator[tuple[Path, dict]]:
    """``(path, metrics)`` for every ``metrics.json`` under ``folders``, in sorted order."""
    for folder in folders:
        for path in sorted(Path(folder).rglob("metrics.json")):
            yield path, json.loads(path.read_text(encoding="utf-8"))


def collect(folders: Iterable[Path]) -> pd.DataFrame:
    """One row per metrics.json: model, probe, variant, accuracy, n, chance, zero_shot."""
    rows = [{k: m[k] for k in ("model", "probe", "variant", "accuracy", "n", "chance", "zero_shot")}
            for _, m in iter_metrics(folders)]
    if not rows:
        raise FileNotFoundError(f"no metrics.json under {', '.join(map(str, folders))}")
    df = pd.DataFrame(rows)
    order = {v: i for i, v in enumerate(VARIANT_ORDER)}
    df["_order"] = df["variant"].map(lambda v: order.get(v, len(order)))
    return df.sort_values(["model", "probe", "_order", "variant"]).drop(columns="_order").reset_index(drop=True)


def markdown(df: pd.DataFrame) -> str:
    """Accuracy table: a row per model and probe, a column per variant; † marks a newly initialised head."""
    cells = df.assign(cell=[f"{a:.3f}" + ("" if z else " †") for a, z in zip(df.accuracy, df.zero_shot)])
    table = cells.pivot(index=["model", "probe"], columns="variant", values="cell")
    table = table[list(dict.fromkeys(cells["variant"]))].fillna("–")
    lines = ["# Zero-shot MC-MLM accuracy (dev)", "",
             "`original`/`nolang`/`perturbed` are our generated variants, `release` the original oLMpics file.", "",
             table.reset_index().to_markdown(index=False), ""]
    if not df.zero_shot.all():
        lines += ["† the model's MLM head was newly initialised (not in the checkpoint): a sanity run of the "
                  "pipeline, not a zero-shot result.", ""]
    return "\n".join(lines)


def plot(df: pd.DataFrame, path: Path) -> None:
    """Grouped bars per model: accuracy by probe and variant, with each probe's chance level."""
    models = list(dict.fromkeys(df.model))
    fig, axes = plt.subplots(len(models), 1, figsize=(8, 3.2 * len(models)), squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        sub = df[df.model == model]
        table = sub.pivot(index="probe", columns="variant", values="accuracy")[list(dict.fromkeys(sub.variant))]
        table.plot.bar(ax=ax, rot=0, width=0.8)
        for i, chance in enumerate(sub.groupby("probe", sort=True)["chance"].first().reindex(table.index)):
            ax.hlines(chance, i - 0.45, i + 0.45, colors="black", linestyles="dashed", linewidth=1)
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy")
        ax.set_title(f"{model}" + ("" if sub.zero_shot.all() else " (MLM head newly initialised)"))
        ax.legend(fontsize="small", ncol=4)
    fig.tight_layout()
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


def run(folders: Iterable[Path], out: Path, metrics: Path, plot_path: Path) -> pd.DataFrame:
    df = collect(list(folders))
    atomic.write_text(out, markdown(df))
    nested: dict = {}
    for r in df.itertuples():
        nested.setdefault(r.model, {}).setdefault(r.probe, {})[r.variant] = round(r.accuracy, 4)
    atomic.write_json(metrics, nested)
    plot(df, plot_path)
    return df
