"""One model's results in one table, read from the reports the pipeline writes (``results/metrics.json``,
``olmpics.json``, ``pararel.json``, ``calum.json``) and from the protocols it skipped: what ``probes run`` prints at
the end, as lm-evaluation-harness prints its results table. Each number is the report's own, with its 95%
interval where the report has one (the percentile bootstrap of the zero-shot accuracy and of the curves' MAX);
ParaRel and CALUM give a mean with its standard deviation over relations or seeds, as their papers report them.

Every column has one meaning, said in the legend under the table: the count a number is over is in the column
that names it (dev examples, relations or seeds, the training size of MAX). Beside each number stands the line it
must beat (chance, the probe's baseline, the majority class, or what a constant predictor scores), and the notes
flag what makes a number mean less than it seems: a newly initialised MLM head, a constant predictor's perfect
consistency, an accuracy at the majority class, capped settings and smoke scale.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluators.shared import smoke

REPORTS = {"olmpics": ("results/report.md", "results/olmpics.md", "results/grid_report.md"),
           "pararel": ("results/pararel.md",), "calum": ("results/calum.md",)}
BASELINES = ("MLM-BASELINE", "ESIM")   # the oLMpics baseline rows' labels (results written before `baseline`)
NEW_HEAD = "† new MLM head"
CONSTANT = "⚠ constant predictor"
AT_MAJORITY = "≤ majority"
COLUMNS = ("protocol", "task", "metric", "value", "95% CI", "± std (over)", "dev examples", "N of MAX",
           "reference", "notes")


@dataclass(frozen=True)
class Row:
    protocol: str
    task: str
    metric: str
    value: float
    low: float | None = None        # the 95% interval, where the report has one
    high: float | None = None
    std: float | None = None        # the standard deviation over `over`, where the report gives one
    over: str = ""                  # what the std is over: "3 seeds", "31 relations"
    examples: int | None = None     # dev examples the number is over
    at_n: int | None = None         # MAX only: the training size where the curve reached it
    reference: str = ""             # the line to beat: "chance 0.500", "majority 0.690", "MLM-BASELINE 0.532"
    notes: tuple[str, ...] = ()
    smoke: bool = False


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _notes(*flags: str) -> tuple[str, ...]:
    return tuple(f for f in flags if f)


def zero_shot_rows(results: Path, key: str) -> list[Row]:
    """Zero-shot accuracy per probe: the ``original`` variant and the released file (results/metrics.json),
    beside chance (the mean of 1/#choices)."""
    rows = []
    for probe, variants in sorted((_read(results / "metrics.json").get(key) or {}).items()):
        for variant in ("original", "release"):
            m = variants.get(variant)
            if isinstance(m, dict) and "accuracy" in m:
                chance = f"chance {m['chance']:.3f}" if isinstance(m.get("chance"), (int, float)) else ""
                constant = f"{CONSTANT} ({m['constant_predictor']})" if m.get("constant_predictor") else ""
                rows.append(Row("zero-shot", f"{probe} ({variant})", "accuracy", m["accuracy"],
                                m.get("accuracy_low"), m.get("accuracy_high"), examples=m.get("n"),
                                reference=chance, notes=_notes("" if m.get("zero_shot", True) else NEW_HEAD,
                                                               constant)))
    return rows


def _baseline(models: dict, setting: str, label: str) -> tuple[str, dict] | None:
    """The probe's baseline row in ``setting`` (MLM-BASELINE, ESIM), for a model's row ``label``."""
    for name, entry in sorted(models.items()):
        if name == label or not isinstance(entry, dict):
            continue
        if entry.get("baseline", name in BASELINES) and isinstance(entry.get(setting), dict) \
                and "MAX" in entry[setting]:
            return name, entry[setting]
    return None


def curve_rows(results: Path, key: str) -> list[Row]:
    """MAX of the MC-MLM learning curves (MLP, LINEAR) and of MC-QA, per probe (results/olmpics.json), beside chance
    and the probe's baseline row's MAX in the same setting."""
    rows = []
    for probe, models in sorted(_read(results / "olmpics.json").items()):
        entry = models.get(key) if isinstance(models, dict) else None
        if not isinstance(entry, dict):
            continue
        for setting, m in entry.items():
            if not (isinstance(m, dict) and "MAX" in m):
                continue
            lines = [f"chance {m['chance']:.3f}"] if isinstance(m.get("chance"), (int, float)) else []
            base = _baseline(models, setting, key)
            if base:
                lines.append(f"{base[0]} {base[1]['MAX']:.3f}")
            runs = sum(len(f.get("runs") or ()) for f in (m.get("constant_predictor") or {}).values())
            constant = f"{CONSTANT} ({runs} run{'s' if runs != 1 else ''})" if runs else ""
            rows.append(Row("oLMpics curves", f"{probe} {setting}", "MAX", m["MAX"], m.get("MAX_low"),
                            m.get("MAX_high"), examples=m.get("n"), at_n=m.get("MAX_at_n"),
                            reference="; ".join(lines), notes=_notes(constant),
                            smoke=entry.get("profile") == smoke.SMOKE))
    return rows


def pararel_rows(results: Path, key: str) -> list[Row]:
    """ParaRel's macro averages over relations (results/pararel.json), mean ± std as the paper's Table 2."""
    entry = _read(results / "pararel.json").get(key) or {}
    constant = len(((entry.get("constant_predictor") or {}).get("relations")) or {})
    flag = f"{CONSTANT} ({constant} relation{'s' if constant != 1 else ''})" if constant else ""
    return [Row("ParaRel", "macro over relations", name, m["mean"], std=m.get("std"),
                over=f"{m['n']} relations" if m.get("n") is not None else "", smoke=entry.get("profile") == smoke.SMOKE,
                notes=_notes(flag))
            for name, m in (entry.get("macro") or {}).items() if isinstance(m, dict) and m.get("mean") is not None]


def calum_rows(results: Path, key: str) -> list[Row]:
    """CALUM's consistency and accuracy per fine-tuning run ``<model>-<task>[-<group>]`` (results/calum.json),
    mean over seeds: accuracy beside the majority class's share, C_R/C_S/C_sym beside the 1.000 a constant
    predictor scores, and the run flagged when it was one."""
    rows = []
    for run, metrics in sorted((_read(results / "calum.json").get("runs") or {}).items()):
        if not run.startswith(f"{key}-"):
            continue
        majority = metrics.get("majority")
        constant = metrics.get("constant_predictor") or {}
        flag = f"{CONSTANT} ({constant['seeds']} of {constant['of']} seeds)" if constant.get("seeds") else ""
        capped = f"{smoke.CAPPED} capped" if metrics.get("capped") else ""
        for name in ("C_R", "C_S", "C_sym", "accuracy"):
            m = metrics.get(name)
            if not (isinstance(m, dict) and m.get("mean") is not None):
                continue
            if name == "accuracy":
                reference = f"majority {majority:.3f}" if isinstance(majority, (int, float)) else ""
                low = AT_MAJORITY if reference and round(m["mean"], 3) <= round(majority, 3) else ""
                notes = _notes(flag, low, capped)
            else:
                reference, notes = "constant predictor 1.000", _notes(flag, capped)
            seeds = m.get("n")
            rows.append(Row("CALUM", run[len(key) + 1:], name, m["mean"], std=m.get("std"),
                            over=f"{seeds} seed{'s' if seeds != 1 else ''}" if seeds is not None else "",
                            reference=reference, notes=notes, smoke=metrics.get("profile") == smoke.SMOKE))
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
    """The model's rows of each report in ``protocols`` (``probes run --probes``' choices), in the reports' order."""
    rows = {"olmpics": lambda: zero_shot_rows(results, key) + curve_rows(results, key),
            "pararel": lambda: pararel_rows(results, key), "calum": lambda: calum_rows(results, key)}
    return [row for report in REPORTS if report in protocols for row in rows[report]()]


def _spread(r: Row) -> str:
    if r.std is not None:
        return f"± {r.std:.3f} over {r.over}" if r.over else f"± {r.std:.3f}"
    return f"{r.over}, no std" if r.over.startswith("1 ") else ""


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table, one meaning per column (:data:`COLUMNS`, defined by :func:`legend`)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---:|---|---|---:|---:|---|---|"]
    for r in rows:
        interval = f"[{r.low:.3f}, {r.high:.3f}]" if r.low is not None and r.high is not None else ""
        notes = "; ".join(r.notes + ((smoke.MARK,) if r.smoke else ()))
        cells = [r.protocol, r.task, r.metric, f"{r.value:.3f}", interval, _spread(r),
                 "" if r.examples is None else str(r.examples), "" if r.at_n is None else str(r.at_n),
                 r.reference, notes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def legend(rows: list[Row]) -> list[str]:
    """What every column means, and each note that the rows use."""
    lines = ["Columns: **value**: the number, a share (0-1); **95% CI**: its percentile bootstrap interval over dev "
             "examples; **± std (over)**: its standard deviation over what is named (relations for ParaRel, "
             "seeds for CALUM); **dev examples**: the dev examples it is measured on; **N of MAX**: the training "
             "size at which the learning curve reached its MAX; **reference**: the line to beat beside it (chance: "
             "a uniform guess; the probe's baseline row's MAX in the same setting; majority: the share of the "
             "most frequent gold class; constant predictor: what a model that predicts one label for every example "
             "scores on C_R/C_S/C_sym)."]
    notes = {n for r in rows for n in r.notes}
    if any(n == NEW_HEAD for n in notes):
        lines.append(f"{NEW_HEAD}: the checkpoint has no MLM head; a newly initialised one scored, so not a "
                     "zero-shot result (no knowledge is measured).")
    if any(n.startswith(CONSTANT) for r in rows if r.protocol == "CALUM" for n in r.notes):
        lines.append(f"{CONSTANT}: the fine-tuned model predicted one label for every example in that many seeds: "
                     "its C_R = C_S = 1 by construction, a perfect-looking consistency that measures nothing.")
    if any(n.startswith(CONSTANT) for r in rows if r.protocol == "ParaRel" for n in r.notes):
        lines.append(f"{CONSTANT} (ParaRel): the model predicted one object for every query of that many relations: "
                     "their Consistency is 100 by construction, their Accuracy that object's share.")
    if any(n.startswith(CONSTANT) for r in rows if r.protocol not in ("CALUM", "ParaRel") for n in r.notes):
        lines.append(f"{CONSTANT} (oLMpics): the model gave one answer (that word or choice) to every dev example at "
                     "zero-shot, or in that many (N, seed) runs of a curve's variants: the number measures no "
                     "knowledge.")
    if AT_MAJORITY in notes:
        lines.append(f"{AT_MAJORITY}: the accuracy is no better than always predicting the majority class.")
    if any(n.startswith(smoke.CAPPED) for n in notes):
        lines.append(f"{smoke.CAPPED} capped: fewer steps or examples than the paper's settings (`capped: true`).")
    if any(r.smoke for r in rows):
        lines.append(f"{smoke.MARK}: {smoke.LEGEND}.")
    return lines


def summary(project: Path, key: str, protocols: tuple[str, ...]) -> str:
    """What ``probes run`` prints: the model's table with its legend, what it skipped and why, and where the full
    reports are (they put the model beside every other model already in the results)."""
    results = project / "results"
    rows = rows_of(results, key, protocols)
    parts = [f"## {key}", ""]
    if any(r.smoke for r in rows):
        parts += [smoke.BANNER, ""]
    parts += [table(rows), "", *legend(rows)] if rows else ["(no result of this model in the reports)"]
    gaps = skipped(results, key)
    if gaps:
        parts += ["", "Skipped:"] + [f"- {where}: {why}" for where, why in gaps]
    reports = [r for p in protocols for r in REPORTS[p] if (project / r).is_file()]
    if reports:
        parts += ["", "Full reports, every model in the results side by side: " + ", ".join(reports)]
    return "\n".join(parts)
