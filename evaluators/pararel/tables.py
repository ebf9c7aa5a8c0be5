"""The ParaRel report's cells and its §8 table in the layout of the paper's Table 7 (papers/002 §8.3): the
majority baseline, BERT-base (before consistency training), BERT-ft (after) and the three ablations, each run's
macro over its test relations, the paper's figures beside a run only where it is on Table 7's footing (the report
decides which: :func:`evaluators.pararel.report.unlike_table7`)."""

from __future__ import annotations

from evaluators.shared import smoke

UNDEFINED = "—"   # a std over one relation: undefined, not 0.0
TABLE3 = ("Accuracy", "Consistency", "Consistent-Acc")
BASE, TRAINED = "BERT-base", "BERT-ft"
ROWS = ("majority", BASE, TRAINED, "-consistency", "-typed", "-MLM")
"""Table 7's rows in its order: the baselines, the trained model, the ablations (§8.3)."""
OTHER = "≠"
"""Marks a run not on Table 7's footing: the paper's figures are not set beside it."""


def cell(stat: dict | None) -> str:
    """``mean±std`` in %; ``mean±—`` where the std is undefined (one value); ``–`` where there is no value."""
    if not stat or stat.get("mean") is None:
        return "–"
    std = stat.get("std")
    return f"{100 * stat['mean']:.1f}±" + (f"{100 * std:.1f}" if std is not None else UNDEFINED)


def published_cell(values) -> str:
    """A published ``[mean, std]`` in % as ``mean±std``; ``–`` where the paper has none."""
    return f"{values[0]:.1f}±{values[1]:.1f}" if values else "–"


def table7_row(m: dict) -> str:
    """The row of Table 7 a consistency-training run stands for: its ``ablation`` (``-consistency``, ``-typed``,
    ``-MLM``); ``-typed`` where it trained Lc over the whole vocabulary without naming the ablation (``typed:
    false``, runs before the option); else BERT-ft."""
    if m.get("ablation"):
        return m["ablation"]
    return "-typed" if m.get("params", {}).get("typed", True) is False else TRAINED


def table7(results: dict[str, dict], published: dict, footing: dict[str, bool]) -> list[str]:
    """Table 7's layout for every model that ran one of its ablations (none: no lines, the §8 table above says it
    all): per model, the paper's six rows, ours on the test relations (majority and BERT-base: the before of its
    BERT-ft run, else of an ablation's; every other row: the after of the run standing for it, :func:`table7_row`),
    the paper's beside each where that run is on the footing (``footing[name]``), a row no run stands for with the
    paper's figures alone. ``published``: published.yaml's ``table7``."""
    groups: dict[str, dict[str, tuple[str, dict]]] = {}
    for name, m in results.items():
        if (m.get("before") or {}).get("test"):
            groups.setdefault(m.get("model") or m.get("model_id"), {}).setdefault(table7_row(m), (name, m))
    groups = {model: runs for model, runs in groups.items() if set(runs) - {TRAINED}}
    if not groups:
        return []
    head = " | ".join(f"{k} | {k} (paper)" for k in TABLE3)
    lines = ["### Table 7: consistency training and its ablations", "",
             f"Each model's test relations, macro mean ± std in %: BERT-base before training, BERT-ft after (§8.2), "
             f"each ablation after its own training (§8.3: -consistency without Lc, λ 0; -typed with Lc over the "
             f"whole vocabulary; -MLM without the MLM steps). {OTHER}: a run not on Table 7's footing (the lines "
             f"under the table above say why), the paper's figures not set beside it.", "",
             f"| model | Table 7 row | run | n | {head} |",
             "| --- | --- | --- | --- | " + " | ".join("---" for _ in range(2 * len(TABLE3))) + " |"]
    for model, runs in groups.items():
        first = runs.get(TRAINED) or next(iter(runs.values()))
        for row in ROWS:
            name, m = first if row in ("majority", BASE) else runs.get(row, (None, None))
            paper = published["rows"][row]
            if m is None:
                lines.append(f"| {model} | {row} | not run | – | " +
                             " | ".join(f"– | {published_cell(p)}" for p in paper) + " |")
                continue
            test = m["before" if row in ("majority", BASE) else "after"]["test"]
            stats = test["majority"] if row == "majority" else test["macro"]
            on = footing.get(name, False)
            flag = ("" if on else f" {OTHER}") + (f" {smoke.MARK}" if smoke.is_smoke(m) else "")
            when = "before" if row in ("majority", BASE) else "after"
            lines.append(f"| {model} | {row} | {name} ({when}){flag} | {stats['Consistency']['n']} | " +
                         " | ".join(f"{cell(stats.get(k))} | {published_cell(p) if on else '–'}"
                                    for k, p in zip(TABLE3, paper)) + " |")
    return lines + [""]
