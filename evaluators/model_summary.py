"""One model's results in one table, read from the reports the pipeline writes (``results/metrics.json``,
``olmpics.json``, ``pararel.json``, ``calum.json``) and from the protocols it skipped: what ``probes run`` prints at
the end, as lm-evaluation-harness prints its results table. Each number is the report's own, with its 95%
interval where the report has one (the percentile bootstrap of the zero-shot accuracy and of the curves' MAX);
ParaRel and CALUM give a mean with its standard deviation over relations or seeds, as their papers report them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

REPORTS = {"olmpics": ("results/report.md", "results/olmpics.md", "results/grid_report.md"),
           "pararel": ("results/pararel.md",), "calum": ("results/calum.md",)}


@dataclass(frozen=True)
class Row:
    protocol: str
    task: str
    metric: str
    value: float
    low: float | None = None    # the 95% interval, where the report has one
    high: float | None = None
    spread: str = ""            # "± std (n)" where the report gives a standard deviation instead
    n: int | None = None


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def zero_shot_rows(results: Path, key: str) -> list[Row]:
    """Zero-shot accuracy per probe: the ``original`` variant and the released file (results/metrics.json)."""
    rows = []
    for probe, variants in sorted((_read(results / "metrics.json").get(key) or {}).items()):
        for variant in ("original", "release"):
            m = variants.get(variant)
            if isinstance(m, dict) and "accuracy" in m:
                note = "" if m.get("zero_shot", True) else " †"
                rows.append(Row("zero-shot", f"{probe} ({variant}){note}", "accuracy", m["accuracy"],
                                m.get("accuracy_low"), m.get("accuracy_high"), n=m.get("n")))
    return rows


def curve_rows(results: Path, key: str) -> list[Row]:
    """MAX of the MC-MLM learning curves (MLP, LINEAR) and of MC-QA, per probe (results/olmpics.json)."""
    rows = []
    for probe, models in sorted(_read(results / "olmpics.json").items()):
        settings = models.get(key) if isinstance(models, dict) else None
        if not isinstance(settings, dict):
            continue
        for setting, m in settings.items():
            if isinstance(m, dict) and "MAX" in m:
                rows.append(Row("oLMpics curves", f"{probe} {setting}", "MAX", m["MAX"], m.get("MAX_low"),
                                m.get("MAX_high"), n=m.get("MAX_at_n")))
    return rows


def pararel_rows(results: Path, key: str) -> list[Row]:
    """ParaRel's macro averages over relations (results/pararel.json), mean ± std as the paper's Table 2."""
    macro = ((_read(results / "pararel.json").get(key) or {}).get("macro")) or {}
    return [Row("ParaRel", "macro over relations", name, m["mean"],
                spread=f"± {m['std']:.3f}" if m.get("std") is not None else "", n=m.get("n"))
            for name, m in macro.items() if isinstance(m, dict) and m.get("mean") is not None]


def calum_rows(results: Path, key: str) -> list[Row]:
    """CALUM's consistency and accuracy per fine-tuning run ``<model>-<task>[-<group>]`` (results/calum.json),
    mean over seeds."""
    rows = []
    for run, metrics in sorted((_read(results / "calum.json").get("runs") or {}).items()):
        if not run.startswith(f"{key}-"):
            continue
        for name in ("C_R", "C_S", "C_sym", "accuracy"):
            m = metrics.get(name)
            if isinstance(m, dict) and m.get("mean") is not None:
                std = f"± {m['std']:.3f}" if m.get("std") is not None else ""
                rows.append(Row("CALUM", run[len(key) + 1:], name, m["mean"], spread=std, n=m.get("n")))
    return rows


def skipped(results: Path, key: str) -> list[tuple[str, str]]:
    """``(where, why)`` for each result of the model that its protocol skipped (a ``metrics.json`` with
    ``skipped``): MC-MLM curves for a causal LM, fine-tuning for a decoder, ..."""
    seen, out = set(), []
    for path in sorted(results.rglob("metrics.json")):
        parts = path.relative_to(results).parts
        if not any(p == key or p.startswith(f"{key}-") for p in parts[:-1]):
            continue
        reason = _read(path).get("skipped")
        if reason and reason not in seen:
            seen.add(reason)
            out.append(("/".join(parts[:-1]), str(reason)))
    return out


def rows_of(results: Path, key: str, protocols: tuple[str, ...]) -> list[Row]:
    rows = []
    if "olmpics" in protocols:
        rows += zero_shot_rows(results, key) + curve_rows(results, key)
    if "pararel" in protocols:
        rows += pararel_rows(results, key)
    if "calum" in protocols:
        rows += calum_rows(results, key)
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table: protocol, task, metric, value, 95% interval (or ± std), n."""
    lines = ["| protocol | task | metric | value | 95% CI / ± std | n |", "|---|---|---|---:|---|---:|"]
    for r in rows:
        interval = f"[{r.low:.3f}, {r.high:.3f}]" if r.low is not None and r.high is not None else r.spread
        lines.append(f"| {r.protocol} | {r.task} | {r.metric} | {r.value:.3f} | {interval} | "
                     f"{'' if r.n is None else r.n} |")
    return "\n".join(lines)


def summary(project: Path, key: str, protocols: tuple[str, ...]) -> str:
    """What ``probes run`` prints: the model's table, what it skipped and why, and where the full reports are
    (they put the model beside every other model already in the results)."""
    results = project / "results"
    rows = rows_of(results, key, protocols)
    parts = [f"## {key}", "", table(rows) if rows else "(no result of this model in the reports)"]
    if any(r.task.endswith("†") for r in rows):
        parts += ["", "† the MLM head was newly initialised: not a zero-shot result (the report says more)."]
    gaps = skipped(results, key)
    if gaps:
        parts += ["", "Skipped:"] + [f"- {where}: {why}" for where, why in gaps]
    reports = [r for p in protocols for r in REPORTS[p] if (project / r).is_file()]
    if reports:
        parts += ["", "Full reports, every model in the results side by side: " + ", ".join(reports)]
    return "\n".join(parts)
