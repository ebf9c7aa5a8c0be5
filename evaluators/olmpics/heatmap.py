"""Fig. 2A / 3 of oLMpics: the MC-MLM prediction over a grid of (value 1, value 2), one panel a variant."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from evaluators.shared.report import iter_metrics, save, setup_title  # noqa: E402
from probekit.outputs import atomic  # noqa: E402
from probekit.data.jsonl import read_jsonl  # noqa: E402
from probekit.errors import DataError  # noqa: E402

COLORS = ("#2b6cb0", "#f6e05e", "#e53e3e", "#38a169", "#805ad5")
MISSING = "#d9d9d9"


def pair_panels(folders: Iterable[Path]) -> dict[str, list[dict]]:
    """``{model: [panel]}`` for every evaluated variant whose examples have exactly two integer arguments.

    A panel: ``title``, ``accuracy``, ``points`` (value 1, value 2, predicted word) and ``words`` (all choices).
    """
    panels: dict[str, list[dict]] = {}
    for metrics_path, metrics in iter_metrics(folders):
        data = Path(metrics["data"])
        if not data.is_file():
            continue
        rows = read_jsonl(data)
        points, words = [], set()
        # predictions are in input order: join by position (ids repeat in some release files)
        for n, p in enumerate(read_jsonl(metrics_path.parent / "predictions.jsonl")):
            if n >= len(rows) or rows[n]["id"] != p["id"]:
                raise DataError(f"{metrics_path.parent / 'predictions.jsonl'}:{n + 1}: id {p['id']!r} is not row "
                                f"{n + 1} of {data}")
            values, choices = list(rows[n].get("args", {}).values()), rows[n]["question"]["choices"]
            if len(values) != 2 or not all(isinstance(v, int) for v in values):
                break
            points.append((*values, next(c["text"] for c in choices if c["label"] == p["prediction"])))
            words.update(c["text"] for c in choices)
        else:
            if points:
                panels.setdefault(metrics["model"], []).append(
                    {"title": f"{metrics['probe']}/{metrics['variant']}", "accuracy": metrics["accuracy"],
                     "zero_shot": metrics["zero_shot"], "setup": setup_title(metrics), "points": points,
                     "words": sorted(words)})
    return panels


def figure(model: str, panels: list[dict]) -> plt.Figure:
    """One figure per model: a coloured cell per (value 1, value 2) for the predicted answer word; pairs
    the data does not hold (``mode: sample`` draws a subset) are grey."""
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.6 * rows + 0.6), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        xs, ys, _ = zip(*panel["points"])
        vocab = panel["words"]  # every choice word, so a word keeps its colour whatever the model predicts
        x0, y0 = min(xs), min(ys)
        grid = np.full((max(ys) - y0 + 1, max(xs) - x0 + 1), np.nan)
        for x, y, w in panel["points"]:
            grid[y - y0, x - x0] = vocab.index(w)
        cells = int((~np.isnan(grid)).sum())
        diagonal = max(0, min(max(xs), max(ys)) - max(x0, y0) + 1)  # value 1 == value 2: never a pair
        off_diagonal = grid.size - diagonal
        cmap = ListedColormap(COLORS[:len(vocab)]).with_extremes(bad=MISSING)
        ax.imshow(np.ma.masked_invalid(grid), origin="lower", extent=(x0 - .5, max(xs) + .5, y0 - .5, max(ys) + .5),
                  aspect="auto", cmap=cmap, vmin=-.5, vmax=len(vocab) - .5, interpolation="nearest")
        ax.set_title(f"{panel['title']}\nacc {panel['accuracy']:.2f}, {cells} of {off_diagonal} pairs", fontsize=9)
        ax.set_xlabel("value 1 (first slot)", fontsize=8)
        ax.set_ylabel("value 2 (second slot)", fontsize=8)
        handles = [Patch(color=COLORS[i], label=f"predicts {w}") for i, w in enumerate(vocab)]
        handles.append(Patch(color=MISSING, label="pair not in the data"))
        ax.legend(handles=handles, fontsize=7, loc="upper left", framealpha=0.9)
    zero_shot = all(p["zero_shot"] for p in panels)
    fig.suptitle(f"{model}: predicted answer per pair of values — " +
                 (" / ".join(dict.fromkeys(p["setup"] for p in panels)) if zero_shot
                  else "† MLM head newly initialised: not a zero-shot result"),
                 color="black" if zero_shot else "#c53030")
    fig.tight_layout()
    return fig


def run(folders: Iterable[Path], out_dir: Path) -> list[Path]:
    """Write ``out_dir/<model>.png`` for every model with two-argument variants; returns the paths."""
    written = []
    with atomic.atomic_path(out_dir, kind="figures") as tmp:
        tmp.mkdir(parents=True)
        for model, panels in pair_panels(folders).items():
            save(figure(model, panels), tmp / f"{model}.png", dpi=90)
            written.append(out_dir / f"{model}.png")
    return written
