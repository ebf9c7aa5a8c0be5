"""Learning-curve plots of the oLMpics report: per probe a PNG (accuracy vs N, one panel per setting) and the
``dvc plots`` rows behind it."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import NullLocator, PercentFormatter  # noqa: E402

from evaluators.olmpics.results import Probe, Result  # noqa: E402
from evaluators.shared.report import save  # noqa: E402
from probekit.outputs import atomic  # noqa: E402

STYLES = {"original": "-", "nolang": "--", "perturbed": ":"}
NAMES = {"original": "original", "nolang": "NO-LANG", "perturbed": "PERTURBED-LANG"}
PANELS = {"MLP": "MC-MLM, MLP", "LINEAR": "MC-MLM, LINEAR", "MC-QA": "MC-QA"}


def curves(result: Result):
    """``(variant, sizes, mean, std)`` over seeds for the original data and each control, from metrics.json."""
    meta, sizes = result.meta, [int(s) for s in result.meta["sizes"]]
    variants = [("original", meta["curve"])] + [(name, meta["controls"][name]["curve"])
                                               for name in sorted(meta["controls"], key=list(STYLES).index)]
    for variant, curve in variants:
        yield (variant, sizes, np.array([curve[str(n)]["mean"] for n in sizes]),
               np.array([curve[str(n)]["std"] for n in sizes]))


def plot_rows(probe: Probe) -> list[dict]:
    """``dvc plots`` data: one ``{model, setting, variant, N, accuracy}`` row per curve point (mean over seeds)."""
    return [{"model": label, "setting": setting, "variant": variant, "N": n, "accuracy": round(float(acc), 4)}
            for label in probe.rows for setting in probe.settings() if setting in probe.results[label]
            for variant, sizes, mean, _ in curves(probe.results[label][setting]) for n, acc in zip(sizes, mean)]


def figure(probe: Probe) -> plt.Figure:
    """Accuracy vs N (log axis), one colour per row (baselines black), solid = original, dashed = NO-LANG,
    dotted = PERTURBED-LANG, band = ± std over seeds, grey line = chance; one panel per setting."""
    settings = probe.settings()
    colours = {label: "black" if probe.is_baseline(label) else f"C{i}" for i, label in enumerate(probe.rows)}
    fig, axes = plt.subplots(1, len(settings), figsize=(5.4 * len(settings) + 2.4, 4.4), squeeze=False,
                             sharey=True)
    variants: set[str] = set()
    for ax, setting in zip(axes[0], settings):
        ticks: set[int] = set()
        chances: set[float] = set()
        for label in probe.rows:
            result = probe.results[label].get(setting)
            if result is None:
                continue
            for variant, sizes, mean, std in curves(result):
                original = variant == "original"
                ax.plot(sizes, mean, STYLES[variant], color=colours[label], lw=1.8 if original else 1.2,
                        alpha=1 if original else 0.8, marker="o" if original else None, markersize=3.5)
                ax.fill_between(sizes, mean - std, mean + std, color=colours[label], alpha=0.15 if original else 0.07,
                                linewidth=0)
                variants.add(variant)
            ticks.update(int(s) for s in result.meta["sizes"])
            chances.add(result.meta["chance"])
        for chance in sorted(chances):
            ax.axhline(chance, color="0.55", lw=1.2, zorder=0)
        ax.set_xscale("log")
        ax.set_xticks(sorted(ticks), [str(t) for t in sorted(ticks)])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_ylim(-0.02, 1.02)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(alpha=0.3)
        ax.set_title(PANELS[setting])
        ax.set_xlabel("training examples N")
    axes[0, 0].set_ylabel("accuracy (dev), mean over seeds")
    new_head = {label for label in probe.rows
                if any(r.meta.get("lm_head") == "newly_initialised" for r in probe.results[label].values())}
    handles = [Line2D([], [], color=colours[label], lw=2, label=label + (" † new MLM head" if label in new_head else ""))
               for label in probe.rows]
    handles += [Line2D([], [], color="dimgray", ls=STYLES[v], lw=1.6, label=NAMES[v]) for v in STYLES if v in variants]
    handles += [Patch(color="dimgray", alpha=0.25, label="± std over seeds"),
                Line2D([], [], color="0.55", lw=1.2, label="chance")]
    axes[0, -1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.03, 1), fontsize="small", frameon=False)
    fig.suptitle(probe.title, fontweight="bold")
    fig.tight_layout()
    return fig


def slug(title: str) -> str:
    """A file name for a probe title (``taxonomy (MC-QA)`` -> ``taxonomy_MC-QA``)."""
    return re.sub(r"[^\w.-]+", "_", title).strip("_")


def write_plots(probes: list[Probe], folder: Path) -> list[Path]:
    """Replace ``folder`` (atomically, as a whole) by ``<probe>.png`` per probe and, for ``dvc plots`` (one line
    per file, x ``N``, y ``accuracy``), ``<probe>/<model>-<setting>-<variant>.json`` per curve."""
    written = []
    with atomic.atomic_path(folder, kind="figures") as tmp:
        tmp.mkdir()
        for probe in probes:
            name = slug(probe.title)
            save(figure(probe), tmp / f"{name}.png")
            written.append(folder / f"{name}.png")
            series: dict[str, list[dict]] = {}
            for row in plot_rows(probe):
                key = slug(f"{row['model']}-{row['setting']}-{row['variant']}").lower()
                series.setdefault(key, []).append({"N": row["N"], "accuracy": row["accuracy"]})
            for key, rows in series.items():
                atomic.write_json(tmp / name / f"{key}.json", rows)
                written.append(folder / name / f"{key}.json")
    return written
