"""The CALUM report: every ``<run>/metrics.json`` (``probes evaluate calum``) under a results folder in the
layout of the paper's tables (papers/004), mean ± std over seeds in %:

- Table 2 (English) and Table 5 (Korean): one row per model's single-task runs, per task Acc_val, C_R, C_S
  (C_sym on symmetric tasks, where measured) and the majority-class share;
- Table 6: for every model with a multitask run, a row per setting (Single, then the groups: Para, All, ...),
  per main task Acc_val, C_R, C_S;
- the runs themselves (tasks trained, split, seeds, best epochs);
- above the tables, a warning naming every run whose REVERSE accuracy is above its ``original`` accuracy by more
  than its interval, the sign of a swapped segment order (``order_check`` in the JSON:
  :mod:`evaluators.calum.order_check`).

Under a row whose model id is a checkpoint the paper evaluated (``hub_ids`` in published.yaml: the Korean ones
as the original code names them), a ``paper:`` row gives its published numbers (Table 2 or 5, or Table 6 for the
same group); the Korean table lists the paper's other Korean rows (Human, and models no run matched) for
reference. A mean over one seed has no deviation: ``±—``, not ``±0.0``. The runs are read by ``calum_results``,
the tables laid out by ``calum_tables``, the figure drawn by ``calum_plot``."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from evaluators.shared import applies, smoke
from evaluators.calum import order_check
from evaluators.calum.plot import plot
from evaluators.calum.results import (
    KOREAN,
    STATS,
    index,
    is_single,
    load_published,
    published_for,
    read_results,
    task_order,
)
from evaluators.calum.tables import multitask, runs_table, single_task
from evaluators.calum.ttests import section as ttest_section, ttests
from probekit.outputs import atomic

CAPPED = (f"{smoke.CAPPED} capped settings (`capped: true`: a smaller eval/train limit, fewer epochs or max_steps "
          "than the paper's 10 epochs, lr 1e-5, batch 64, early stopping, 5 runs): a smoke/offline check, not "
          "comparable with the paper's numbers.")


def constant_runs(results: Mapping[str, Mapping]) -> list[str]:
    """``run (k of n seeds)`` for every run whose model predicted one label for every example of every variant
    in some seed (``constant_predictor`` from :mod:`evaluators.calum.metrics`)."""
    return [f"{run} ({c['seeds']} of {c['of']} seeds)" for run, m in sorted(results.items())
            if (c := m.get("constant_predictor")) and c.get("seeds")]


def constant_line(runs: list[str]) -> str:
    return (f"**⚠ constant predictor**: {', '.join(runs)} predicted one label for every example: C_R = C_S = C_sym "
            "= 100 by construction and Acc_val at most the majority class's share. Those numbers measure no "
            "consistency.")


def _korean(m: Mapping) -> bool:
    return m["task"] in KOREAN or (m.get("language") or "").casefold() == "ko"


def render(results: Mapping[str, Mapping], order: Mapping[str, Mapping] | None = None) -> tuple[str, dict]:
    """The markdown report and its JSON (per run: our stats as shares, the published numbers in %); ``order``:
    the runs' :func:`evaluators.calum.order_check.check_runs`, flagged above the tables and in the JSON
    (``order_check``)."""
    order = order or {}
    published = load_published()
    cells = index(results)
    tasks = task_order(m["task"] for m in results.values())
    english = [t for t in tasks if not any(_korean(m) for m in results.values() if m["task"] == t)]
    korean = [t for t in tasks if t not in english]
    small = smoke.any_smoke(results.values())
    lines = ["# CALUM results", "",
             "Mean ± std (sample std over seeds) in %; ± — : one seed, whose deviation is undefined. "
             "**Acc_val**: accuracy on the evaluated split's labelled originals; **C_R** / **C_S**: share of "
             "examples whose prediction on the REVERSE (segments swapped with their indicators) / SIGNAL "
             "(`[X] text` for `X: text`) variant equals that on the original; "
             "**C_sym**: BECEL's symmetric consistency (texts swapped, indicators in place; symmetric tasks only); "
             "**Maj.**: share of the split's most frequent gold class (an Acc_val near it: the model learned "
             "little beyond the prior, and a constant prediction is trivially consistent). "
             "`paper:` rows: the published numbers (Jang, Kwon and Lukasiewicz 2021; means of five runs, no std) "
             "for the same Hub checkpoint.", ""]
    lines = smoke.with_banner(lines, small)
    if any(m.get("capped") for m in results.values()):
        lines += [CAPPED, ""]
    if constant_runs(results):
        lines += [constant_line(constant_runs(results)), ""]
    if order_check.flag_line(order, results):
        lines += [order_check.flag_line(order, results), ""]
    if small:
        lines += [f"{smoke.MARK}: {smoke.LEGEND}.", ""]
    t5 = [m for m in results.values() if published["hub_ids"].get(m["model_id"], "").startswith("T5")]
    if t5:
        ours = sorted({"a new classification head" if "text_to_text" not in m else
                       f"text-to-text, {'fine-tuned' if m['text_to_text']['fine_tuned'] else 'as it is'}, answers "
                       f"{'generated' if m['text_to_text']['predict'] == 'generate' else 'by label-word score'}"
                       for m in t5})
        lines += ["The paper's T5 rows are the Hub's multitask-fine-tuned checkpoints, evaluated as text "
                  f"generation without further fine-tuning; our T5 runs here: {'; '.join(ours)} "
                  "(calum_eval.seq2seq, text_to_text).", ""]
    if any(is_single(s) and t in english for (_, s, t) in cells):
        lines += single_task("English tasks (Table 2)", english, cells, published, "table2", ("Human",))
    if any(is_single(s) and t in korean for (_, s, t) in cells):
        lines += single_task("Korean tasks (Table 5)", korean, cells, published, "table5",
                             tuple(published["table5"]))
    tests = ttests(cells, published)   # §5.1.1, per model: evaluators/calum/ttests.py
    lines += ttest_section(tests)
    lines += multitask(cells, published)
    lines += runs_table(results)
    summary = {"source": published["source"], "runs": {run: {
        **{k: m.get(k) for k in ("model", "model_id", "task", "setting", "split", "language", "majority")},
        "tasks_trained": m.get("tasks_trained") or [m["task"]], "capped": bool(m.get("capped", False)),
        "profile": m.get("profile"), "constant_predictor": m.get("constant_predictor"),
        **{k: m[k] for k in STATS if m.get(k)}, "published_pct": published_for(m, published),
        **({"order_check": order[run]} if run in order else {})}
        for run, m in sorted(results.items())}, "ttests": tests}
    return "\n".join(lines), summary


def write(results_folder: Path, out_md: Path, plot_path: Path | None = None) -> None:
    """The report (``out_md``), its JSON beside it (``.json``) and, when ``plot_path`` is given, the figure;
    every file written atomically."""
    skipped: list[dict] = []
    results = read_results(results_folder, skipped)
    write_results(results, out_md, plot_path, skipped, order_check.check_runs(results_folder, results))


def write_results(results: Mapping[str, Mapping], out_md: Path, plot_path: Path | None = None,
                  skipped: list[dict] = (), order: Mapping[str, Mapping] | None = None) -> None:
    """:func:`write` of ``{run: metrics}``; ``skipped``: the runs that skipped their model, listed at the end;
    ``order``: the runs' order checks (:mod:`evaluators.calum.order_check`)."""
    if results:
        text, summary = render(results, order)
    else:
        text, summary = "# CALUM results\n\nNo results.\n", {"runs": {}}
    if plot_path is not None:
        plot(results, plot_path) if results else applies.empty_plot(plot_path)
    text = applies.with_skipped(text, skipped)
    if skipped:
        summary["skipped"] = {f"{m.get('model')}/{m.get('protocol')}": m["skipped"] for m in skipped}
    atomic.write_text(out_md, text)
    atomic.write_json(Path(out_md).with_suffix(".json"), summary)
