"""One model's results in tables, read from the reports the pipeline writes (``results/metrics.json``,
``olmpics.json``, ``pararel.json``, ``calum.json``) and from the protocols it skipped: what ``probes run`` prints at
the end, as lm-evaluation-harness prints its results table. Each number is the report's own. oLMpics' rows set each
statistic (zero-shot accuracy, WS, MAX, sensitivity) of the original beside its NO-LANG and PERTURBED controls, each
with its 95% interval (:mod:`evaluators.shared.controls_table`); ParaRel and CALUM give a mean with its standard
deviation over relations or seeds, as their papers report them.

Every column has one meaning, said in the legend under the table: the count a number is over is in the column
that names it (dev examples, relations or seeds, the training size of MAX). Beside each number stands the line it
must beat (chance, the probe's baseline, the majority baseline or class, or what a constant predictor scores), and
the notes flag what makes a number mean less than it seems: a newly initialised MLM head, a constant predictor's
perfect consistency, an accuracy at the majority class, capped settings and smoke scale.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluators.shared import controls_table, smoke
from probekit.data.jsonl import loads

REPORTS = {"olmpics": ("results/report.md", "results/olmpics.md", "results/grid_report.md"),
           "pararel": ("results/pararel.md",), "calum": ("results/calum.md",)}
CONSTANT = "⚠ constant predictor"
AT_MAJORITY = "≤ majority"
COLUMNS = ("protocol", "task", "metric", "value", "± std (over)", "reference", "notes")


@dataclass(frozen=True)
class Row:
    protocol: str
    task: str
    metric: str
    value: float
    std: float | None = None        # the standard deviation over `over`, where the report gives one
    over: str = ""                  # what the std is over: "3 seeds", "31 relations"
    reference: str = ""             # the line to beat: "majority 0.335 ± 0.218", "constant predictor 1.000"
    notes: tuple[str, ...] = ()
    smoke: bool = False


def _read(path: Path) -> dict:
    try:
        return loads(path.read_bytes(), str(path))   # NaN or a key twice: refused, not passed over
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}


def _notes(*flags: str) -> tuple[str, ...]:
    return tuple(f for f in flags if f)


def _majority(m: dict | None, n) -> str:
    """ParaRel's majority baseline for a macro metric (§5.1: "a majority baseline that always predicts the most
    common object for a relation"), on the same tuples: its mean ± std, and its relation count where it differs
    from the model's (Know-Const averages over the relations the model knows something of)."""
    if not (isinstance(m, dict) and isinstance(m.get("mean"), (int, float))):
        return ""
    std = f" ± {m['std']:.3f}" if isinstance(m.get("std"), (int, float)) else ""
    over = f" over {m['n']} relations" if m.get("n") is not None and m.get("n") != n else ""
    return f"majority {m['mean']:.3f}{std}{over}"


def pararel_rows(results: Path, key: str) -> list[Row]:
    """ParaRel's macro averages over relations (results/pararel.json), mean ± std as the paper's Table 2, each
    beside the majority baseline's on the same tuples (the report's ``majority`` row, pararel.json's ``majority``)."""
    entry = _read(results / "pararel.json").get(key) or {}
    constant = len(((entry.get("constant_predictor") or {}).get("relations")) or {})
    flag = f"{CONSTANT} ({constant} relation{'s' if constant != 1 else ''})" if constant else ""
    majority = entry.get("majority") or {}
    return [Row("ParaRel", "macro over relations", name, m["mean"], std=m.get("std"),
                over=f"{m['n']} relations" if m.get("n") is not None else "", smoke=entry.get("profile") == smoke.SMOKE,
                reference=_majority(majority.get(name), m.get("n")), notes=_notes(flag))
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


def olmpics_rows(results: Path, key: str) -> list[controls_table.ControlRow]:
    """oLMpics' rows: zero-shot, the random-init baseline's zero-shot (the ``zeroshot_random`` stage's ``random:<key>``,
    where the model is not one itself) and each curve's WS, MAX and sensitivities, original beside NO-LANG and
    PERTURBED (:mod:`evaluators.shared.controls_table`)."""
    zero_shot = _read(results / "metrics.json")
    own = zero_shot.get(key) or {}
    fresh = any(isinstance(m, dict) and m.get("random_init") for v in own.values() if isinstance(v, dict)
                for m in v.values())   # the model is a random init itself (its metrics say so, whatever its alias)
    random = {} if fresh else zero_shot.get(f"random:{key}") or {}
    rows = controls_table.zero_shot_rows(own) + controls_table.random_init_rows(random) + \
        controls_table.curve_rows(_read(results / "olmpics.json"), key)
    return sorted(rows, key=lambda r: r.probe.split(" (")[0])   # a probe's zero-shot, random init, curves (stable)


def rows_of(results: Path, key: str, protocols: tuple[str, ...]) -> list[Row]:
    """The model's rows of ParaRel's and CALUM's reports in ``protocols`` (``probes run --probes``' choices), in the
    reports' order (oLMpics' have columns of their own: :func:`olmpics_rows`)."""
    rows = {"pararel": lambda: pararel_rows(results, key), "calum": lambda: calum_rows(results, key)}
    return [row for report in REPORTS if report in protocols and report in rows for row in rows[report]()]


def _spread(r: Row) -> str:
    if r.std is not None:
        return f"± {r.std:.3f} over {r.over}" if r.over else f"± {r.std:.3f}"
    return f"{r.over}, no std" if r.over.startswith("1 ") else ""


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table, one meaning per column (:data:`COLUMNS`, defined by :func:`legend`)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---:|---|---|---|"]
    for r in rows:
        notes = "; ".join(r.notes + ((smoke.MARK,) if r.smoke else ()))
        cells = [r.protocol, r.task, r.metric, f"{r.value:.3f}", _spread(r), r.reference, notes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def legend(rows: list[Row]) -> list[str]:
    """What every column means, and each note that the rows use."""
    lines = ["Columns: **value**: the number, a share (0-1); **± std (over)**: its standard deviation over what is "
             "named (relations for ParaRel, seeds for CALUM); **reference**: the line to beat beside it (majority, "
             "ParaRel: the paper's majority baseline, each relation's most common object predicted for every query, "
             "on the same tuples; majority, CALUM: the share of the most frequent gold class; constant predictor: "
             "what a model that predicts one label for every example scores on C_R/C_S/C_sym)."]
    notes = {n for r in rows for n in r.notes}
    if any(n.startswith(CONSTANT) for r in rows if r.protocol == "CALUM" for n in r.notes):
        lines.append(f"{CONSTANT}: the fine-tuned model predicted one label for every example in that many seeds: "
                     "its C_R = C_S = 1 by construction, a perfect-looking consistency that measures nothing.")
    if any(n.startswith(CONSTANT) for r in rows if r.protocol == "ParaRel" for n in r.notes):
        lines.append(f"{CONSTANT} (ParaRel): the model predicted one object for every query of that many relations: "
                     "their Consistency is 100 by construction, their Accuracy that object's share.")
    if AT_MAJORITY in notes:
        lines.append(f"{AT_MAJORITY}: the accuracy is no better than always predicting the majority class.")
    if any(n.startswith(smoke.CAPPED) for n in notes):
        lines.append(f"{smoke.CAPPED} capped: fewer steps or examples than the paper's settings (`capped: true`).")
    return lines


def summary(project: Path, key: str, protocols: tuple[str, ...]) -> str:
    """What ``probes run`` prints: the model's table with its legend, what it skipped and why, and where the full
    reports are (they put the model beside every other model already in the results)."""
    results = project / "results"
    rows = rows_of(results, key, protocols)
    olmpics = olmpics_rows(results, key) if "olmpics" in protocols else []
    parts = [f"## {key}", ""]
    if any(r.smoke for r in [*olmpics, *rows]):
        parts += [smoke.BANNER, ""]
    if olmpics:
        parts += [controls_table.table(olmpics), "", *controls_table.legend(olmpics), ""]
    if rows:
        parts += [table(rows), "", *legend(rows), ""]
    if any(r.smoke for r in [*olmpics, *rows]):
        parts += [f"{smoke.MARK}: {smoke.LEGEND}.", ""]
    if not olmpics and not rows:
        parts += ["(no result of this model in the reports)", ""]
    parts.pop()
    gaps = skipped(results, key)
    if gaps:
        parts += ["", "Skipped:"] + [f"- {where}: {why}" for where, why in gaps]
    reports = [r for p in protocols for r in REPORTS[p] if (project / r).is_file()]
    if reports:
        parts += ["", "Full reports, every model in the results side by side: " + ", ".join(reports)]
    return "\n".join(parts)
