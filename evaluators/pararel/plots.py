"""The ParaRel figure: per N-1 relation, Accuracy against Consistency, one colour per model, with the Pearson
correlation the paper reports (§6.2: 67.3% for RoBERTa-base to 82.1% for BERT-large)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

from evaluators.shared.report import save  # noqa: E402


def points(metrics: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Relations with both values, their Accuracy and Consistency."""
    rows = [(r, m["Accuracy"], m["Consistency"]) for r, m in metrics["relations"].items()
            if m.get("Accuracy") is not None and m.get("Consistency") is not None]
    return [r for r, _, _ in rows], np.array([a for _, a, _ in rows]), np.array([c for _, _, c in rows])


def correlation(metrics: dict) -> float | None:
    """Pearson r of per-relation Accuracy and Consistency (None under three relations or a constant)."""
    _, acc, cons = points(metrics)
    if len(acc) < 3 or acc.std() == 0 or cons.std() == 0:
        return None
    return float(np.corrcoef(acc, cons)[0, 1])


def plot(results: dict[str, dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    for name, m in results.items():
        _, acc, cons = points(m)
        r = correlation(m)
        label = f"{name} (r = {r:.2f})" if r is not None else name
        if not m.get("zero_shot", True):
            label += " — LM head newly initialised: not a zero-shot result"
        ax.scatter(acc, cons, s=22, alpha=0.8, label=label)
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="Accuracy (first pattern)",
           ylabel="Consistency (all pattern pairs)", title="ParaRel: one point per N-1 relation")
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save(fig, path)
