"""Fig. 2A / 3 of oLMpics: the zero-shot prediction over a grid of (value 1, value 2), one panel a variant."""

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

from probekit import atomic  # noqa: E402
from probekit.probe_dataset import read_jsonl  # noqa: E402

from .report import iter_metrics  # noqa: E402

COLORS = ("#2b6cb0", "#f6e05e", "#e53e3e", "#38a169", "#805ad5")


def pair_panels(folders: Iterable[Path]) -> dict[str, list[dict]]:
    """``{model: [panel]}`` for every evaluated variant whose examples have exactly two integer arguments.

    A panel: ``title``, ``accuracy``, ``points`` (value 1, value 2, predicted word) and ``words`` (all choices).
    """
    panels: dict[str, list[dict]] = {}
    for metrics_path, metrics in iter_metrics(folders):
        data = Path(metrics["data"])
        if not data.is_file():
            continue
        args = {r["id"]: (list(r.get("args", {}).values()), r["question"]["choices"]) for r in read_jsonl(data)}
        points, words = [], set()
        for p in read_jsonl(metrics_path.parent / "predictions.jsonl"):
            values, choices = args[p["id"]]
            if len(values) != 2 or not all(isinstance(v, int) for v in values):
                break
            points.append((*values, next(c["text"] for c in choices if c["label"] == p["prediction"])))
            words.update(c["text"] for c in choices)
        else:
            if points:
                panels.setdefault(metrics["model"], []).append(
                    {"title": f"{metrics['probe']}/{metrics['variant']}", "accuracy": metrics["accuracy"],
                     "points": points, "words": sorted(words)})
    return panels


def draw(model: str, panels: list[dict], path: Path) -> None:
    """One figure per model: a coloured pixel per (value 1, value 2) for the predicted answer word."""
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        xs, ys, _ = zip(*panel["points"])
        vocab = panel["words"]  # every choice word, so a word keeps its colour whatever the model predicts
        x0, y0 = min(xs), min(ys)
        grid = np.full((max(ys) - y0 + 1, max(xs) - x0 + 1), np.nan)
        for x, y, w in panel["points"]:
            grid[y - y0, x - x0] = vocab.index(w)
        ax.imshow(grid, origin="lower", extent=(x0 - .5, max(xs) + .5, y0 - .5, max(ys) + .5), aspect="auto",
                  cmap=ListedColormap(COLORS[:len(vocab)]), vmin=-.5, vmax=len(vocab) - .5, interpolation="nearest")
        ax.set_title(f"{panel['title']}  acc {panel['accuracy']:.2f}", fontsize=9)
        ax.set_xlabel("value 1", fontsize=8)
        ax.set_ylabel("value 2", fontsize=8)
        ax.legend(handles=[Patch(color=COLORS[i], label=w) for i, w in enumerate(vocab)], fontsize=7,
                  loc="upper left")
    fig.suptitle(f"{model}: zero-shot prediction per pair of values")
    fig.tight_layout()
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)


def run(folders: Iterable[Path], out_dir: Path) -> list[Path]:
    """Write ``out_dir/<model>.png`` for every model with two-argument variants; returns the paths."""
    written = []
    with atomic.atomic_path(out_dir) as tmp:
        tmp.mkdir(parents=True)
        for model, panels in pair_panels(folders).items():
            draw(model, panels, tmp / f"{model}.png")
            written.append(out_dir / f"{model}.png")
    return written
