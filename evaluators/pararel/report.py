"""The ParaRel report: every ``results/<model>/metrics.json`` (``probes evaluate pararel``) in the layout of
the paper's Table 3 (Accuracy, Consistency, Consistent-Acc) and Table 2 (Succ-Patt, Succ-Objs, Unk-Const,
Know-Const), macro mean ± std in % over the N-1 relations evaluated, the published numbers beside ours when
the model id is one the paper evaluated; Table 4 (the RoBERTas pretrained on less data) where one of its models
ran; then consistency by edge type and determinism on N-M relations; the §8 table of consistency training, with
Table 7's layout where an ablation ran (:mod:`evaluators.pararel.tables`)."""

from __future__ import annotations

import json
from pathlib import Path


from evaluators.shared import applies, smoke
from evaluators.pararel.metrics import EDGE_TYPES
from evaluators.pararel.plots import correlation, plot
from evaluators.pararel.tables import TABLE3, cell as _cell, published_cell as _published, table7_row, table7 as _table7
from probekit import yamlfile
from probekit.data.jsonl import read_json
from probekit.outputs import atomic
from probekit.errors import DataError

PUBLISHED = Path(__file__).with_name("published.yaml")
TABLE2 = ("Succ-Patt", "Succ-Objs", "Unk-Const", "Know-Const")


CONSTANT = "⚠"


def constant_in(record: dict | None, relations) -> list[str]:
    """The ``relations`` on which a run predicted one object for every query (``constant_predictor`` of its
    metrics.json, :func:`evaluators.pararel.metrics.constant_relations`)."""
    constant = ((record or {}).get("constant_predictor") or {}).get("relations") or {}
    return [r for r in relations if r in constant]


def _count(n: int, record: dict | None, relations) -> str:
    """A relations column: ``n``, and how many of ``relations`` the run predicted one object throughout."""
    k = len(constant_in(record, relations))
    return f"{n} ({CONSTANT} {k} constant)" if k else str(n)


def _n_m(m: dict) -> list[str]:
    """The N-M relations a run scored (its ``determinism``, less the macro average)."""
    return [r for r in m["determinism"] if r != "macro"]


def constant_lines(results: dict[str, dict]) -> list[str]:
    """One line per run that predicted one object for every query of some relations: which, of how many."""
    lines = []
    for name, m in results.items():
        groups = [(kind, constant_in(m, of), of) for kind, of in (("N-1", list(m["relations"])), ("N-M", _n_m(m)))]
        if not any(found for _, found, _ in groups):
            continue
        objects = m["constant_predictor"]["relations"]
        parts = [f"{len(found)} of {len(of)} {kind} relations ({', '.join(f'{r}: {objects[r]}' for r in found)})"
                 for kind, found, of in groups if found]
        lines.append(f"**{CONSTANT} constant predictor**: {name} predicted one object for every query of "
                     f"{' and '.join(parts)}. There its Consistency (Determinism) is 100 by construction and its "
                     f"Accuracy that object's share of the gold objects: those numbers measure no consistency.")
    return lines + [""] if lines else []


def read_results(folder: Path, skipped: list | None = None) -> dict[str, dict]:
    """``{model: metrics}`` of every ``<model>/metrics.json`` under ``folder``; a run that skipped its model
    (:mod:`evaluators.shared.applies`) is no result: appended to ``skipped`` when given, else passed over."""
    files = sorted(Path(folder).glob("*/metrics.json"))
    if not files:
        raise DataError(f"{folder}: no <model>/metrics.json (run: probes evaluate pararel)")
    results = {}
    for f in files:
        m = read_json(f)
        if applies.is_skipped(m):
            if skipped is not None:
                skipped.append(m)
        else:
            results[f.parent.name] = m
    return results


def _smoke_flag(m: dict) -> str:
    return f" {smoke.MARK}" if smoke.is_smoke(m) else ""


def majority_rows(results: dict[str, dict]) -> list[tuple[str, dict, list[str]]]:
    """``(label, macro, runs)`` of the majority baseline (§5.1: "a majority baseline that always predicts the most
    common object for a relation. By construction, this baseline is perfectly consistent."), computed by each run
    on the cells it scored (``metrics.json``'s ``majority``): one row when every run scored the same tuples, else
    one per distinct set of cells, labelled with its runs."""
    distinct: dict[str, list[str]] = {}
    for name, m in results.items():
        if m.get("majority"):
            distinct.setdefault(json.dumps(m["majority"]["macro"], sort_keys=True), []).append(name)
    return [("majority" if len(distinct) == 1 else f"majority ({', '.join(names)}'s tuples)",
             results[names[0]]["majority"]["macro"], names) for names in distinct.values()]


def _table(title: str, keys: tuple[str, ...], results: dict, published: dict) -> list[str]:
    head = " | ".join(f"{k} | {k} (paper)" for k in keys)
    lines = [f"### {title}", "", f"| model | model id | N-1 relations | {head} |",
             "| --- | --- | --- | " + " | ".join("---" for _ in range(2 * len(keys))) + " |"]
    for label, stats, runs in majority_rows(results):
        cells = " | ".join(f"{_cell(stats.get(k))} | {_published(published.get('majority', {}).get(k))}" for k in keys)
        flag = f" {smoke.MARK}" if smoke.any_smoke(results[r] for r in runs) else ""
        lines.append(f"| {label}{flag} | – | {stats.get(keys[0], {}).get('n', 0)} | {cells} |")
    for name, m in results.items():
        paper = published.get(m["model_id"], {})
        n = m["macro"].get(keys[0], {}).get("n", 0)
        cells = " | ".join(f"{_cell(m['macro'].get(k))} | {_published(paper.get(k))}" for k in keys)
        flag = ("" if m.get("lm_head", "pretrained") == "pretrained" else " †") + _smoke_flag(m)
        lines.append(f"| {name}{flag} | `{m['model_id']}` | {_count(n, m, m['relations'])} | {cells} |")
    return lines + [""]


def table4(results: dict[str, dict], published: dict, ids: list[str]) -> list[str]:
    """Table 4 (§6.2, "Effect of Pretraining Corpus Size"), where a run's model id is one of its ``ids``: those
    runs in the table's order (1M to 1B tokens), the majority baseline on their cells, the paper's numbers beside;
    a line naming the rows not run. No lines where none ran."""
    ours = {name: m for i in ids for name, m in results.items() if m["model_id"] == i}
    if not ours:
        return []
    lines = _table("Pretraining data (Table 4)", TABLE3, ours, published)
    missing = [i for i in ids if i not in {m["model_id"] for m in ours.values()}]
    return lines[:2] + [
        "RoBERTas pretrained on 1M to 1B tokens of Wikipedia and books (Warstadt et al. 2020; \"We use one of the "
        "three published models for each configuration\": the original's `nyu-mll` checkpoints), in Table 4's order."
        + (f" Not run: {', '.join(missing)}." if missing else ""), ""] + lines[2:]


def render(results: dict[str, dict], consistency: dict[str, dict] | None = None) -> tuple[str, dict]:
    """The markdown report and its JSON (ours and the published numbers per model); ``consistency``: the
    consistency-training results the §8 table will show (their smoke scale, if any, is said under the title)."""
    file = yamlfile.read(PUBLISHED)
    published = file["models"]
    small = smoke.any_smoke([*results.values(), *(consistency or {}).values()])
    lines = smoke.with_banner([
        "# ParaRel results", "",
        "Macro mean ± std (sample std over relations; ±— over a single relation, where it is undefined) in %, over "
        "the N-1 relations each run evaluated; the paper's numbers (Elazar et al. 2021) are over its 31 N-1 "
        "relations, with objects filtered to one token for all of its models, so they compare only when the data "
        "and model match.", ""], small)
    if any(m.get("lm_head", "pretrained") != "pretrained" for m in results.values()):
        lines += ["† the checkpoint has no MLM head: a newly initialised one scored, so not a zero-shot result "
                  "(no knowledge is measured).", ""]
    lines += constant_lines(results)
    if small:
        lines += [f"{smoke.MARK}: {smoke.LEGEND}.", ""]
    lines += _table("Knowledge and consistency (Table 3)", TABLE3, results, published)
    lines += _table("Extractability (Table 2)", TABLE2, results, published)
    lines += table4(results, published, file["table4"])
    lines += ["### Consistency by edge type", "", "| model | " + " | ".join(EDGE_TYPES) + " |",
              "| --- | " + " | ".join("---" for _ in EDGE_TYPES) + " |"]
    for name, m in results.items():
        by_edge = m["macro"].get("consistency_by_edge", {})
        lines.append(f"| {name} | " + " | ".join(_cell(by_edge.get(t)) for t in EDGE_TYPES) + " |")
    lines += ["", "### Determinism on the N-M relations", "", "| model | relations | Determinism |", "| --- | --- | --- |"]
    for name, m in results.items():
        det = m["determinism"].get("macro", {}).get("Determinism", {})
        lines.append(f"| {name} | {_count(det.get('n', 0), m, _n_m(m))} | {_cell(det)} |")
    lines += ["", "Settings: " + "; ".join(
        f"{name}: rule {m['rule']}, a/an filter {'on' if m['a_an_filter'] else 'off'}, {m['queries']} queries, "
        f"LM head {m['lm_head']}" for name, m in results.items()), ""]
    lines += ["Pearson r of per-relation Accuracy and Consistency (the paper: 0.67 to 0.82): " + "; ".join(
        f"{name} {r:.2f}" if (r := correlation(m)) is not None else f"{name} –" for name, m in results.items()), ""]
    summary = {name: {"model_id": m["model_id"], "macro": m["macro"], "determinism": m["determinism"].get("macro"),
                      "accuracy_consistency_r": correlation(m), "published": published.get(m["model_id"]),
                      "majority": (m.get("majority") or {}).get("macro"), "profile": m.get("profile"),
                      "constant_predictor": m.get("constant_predictor")}
               for name, m in results.items()}
    return "\n".join(lines), summary


GROUPS = ("train", "validation", "test", "held_out")   # held_out: results written before the §8.2 split
PAPER_LAMBDAS = [0.1, 0.5, 1.0]   # §8.2: "λ ∈ 0.1, 0.5, 1"


def unlike_table7(m: dict, table7: dict) -> list[str]:
    """Why a consistency-training run is not on the footing of the paper's Table 7 (empty: it is): another model,
    other training relations, other than 25 test relations scored, fewer tuples, another λ protocol or epochs."""
    params, why = m.get("params", {}), []
    if m.get("model_id") != table7["model_id"]:
        why.append(f"model {m.get('model_id')}, the paper's {table7['model_id']}")
    if sorted(m.get("train_relations", [])) != sorted(table7["train_relations"]):
        why.append(f"trained on {', '.join(m.get('train_relations', []))}, the paper on "
                   f"{', '.join(table7['train_relations'])}")
    test = (m["after"].get("test") or {}).get("macro", {}).get("Consistency", {}).get("n", 0)
    if test != table7["test_relations"] or len(m.get("validation_relations", [])) != 3:
        why.append(f"{test} test relations scored (the paper: {table7['test_relations']}, after 3 validation ones)")
    if params.get("eval_limit") is not None:
        why.append(f"the first {params['eval_limit']} tuples of each relation evaluated, the paper every tuple")
    weights = (m.get("selection") or {}).get("candidates")
    lambdas = [0.0] if m.get("ablation") == "-consistency" else PAPER_LAMBDAS   # -consistency: λ 0, no Lc
    if weights is None or [c["consistency_weight"] for c in weights] != lambdas or params.get("epochs") != 3:
        why.append("λ not 0 (-consistency) after 3 epochs" if lambdas != PAPER_LAMBDAS else
                   "λ not selected among 0.1, 0.5, 1 after 3 epochs")
    if smoke.is_smoke(m):
        why.append("smoke scale")
    return why


def _lambda_line(name: str, m: dict) -> str:
    selection = m.get("selection")
    if not selection:
        return f"{name}: λ {m.get('params', {}).get('consistency_weight')} (fixed)"
    typed = "" if m.get("params", {}).get("typed", True) else "; -typed: Lc over the whole vocabulary"
    typed += f"; ablation {m['ablation']}" if m.get("ablation") and m["ablation"] != "-typed" else ""
    if selection["fixed"]:
        return f"{name}: λ {selection['consistency_weight']:g} (fixed, not selected){typed}"
    tried = ", ".join(f"{c['consistency_weight']:g} ({_cell(c['validation'][selection['metric']])})"
                      for c in selection["candidates"])
    scores = {c["validation"][selection["metric"]]["mean"] for c in selection["candidates"]}
    tie = " (all tied: the first listed)" if len(scores) == 1 else ""
    return (f"{name}: λ {selection['consistency_weight']:g} chosen by validation {selection['metric']} on "
            f"{', '.join(selection['validation_relations'])} among {tried}{tie}{typed}")


def _paper_rows(table7: dict, after: str) -> list[str]:
    rows = table7["rows"]
    n = table7["test_relations"]

    def row(label, first, then):
        return (f"| paper: {label} (Table 7) | test | {n} | " +
                " | ".join(f"{_published(a)} | {_published(b)}" for a, b in zip(first, then)) + " |")
    return [row(f"BERT-base → {after}", rows["BERT-base"], rows[after]), row("majority", rows["majority"],
                                                                            rows["majority"])]


def consistency_training(folder: Path | dict[str, dict]) -> list[str]:
    """Paper §8 in Table 7's layout: macro Accuracy, Consistency and Consistent-Acc before and after consistency
    training, per model and relation group (train, validation, test), the majority baseline on the same test
    tuples, the λ chosen; the paper's Table 7 rows beside a run only where :func:`unlike_table7` finds nothing,
    else a line naming why not (``folder``: the results folder, or its ``{model: metrics}``)."""
    table7 = yamlfile.read(PUBLISHED)["table7"]
    lines = ["### Consistency training (§8, Table 7)", "",
             "Macro mean ± std in % over each group's relations, before → after training. Consistent-Acc (§5.2) "
             "\"evaluates individual objects as correct only if all patterns of the corresponding relation predict "
             "the object correctly\". The majority row predicts each relation's most common object on the same "
             "test tuples (§5.1).", "",
             "| model | relations | n | " + " | ".join(f"{k} before | after" for k in TABLE3) + " |",
             "| --- | --- | --- | " + " | ".join("--- | ---" for _ in TABLE3) + " |"]
    results = folder if isinstance(folder, dict) else read_results(folder)
    notes, comparable, constant, footing = [], [], [], {}
    for name, m in results.items():
        for group in (g for g in GROUPS if g in m["before"]):
            before, after = m["before"][group]["macro"], m["after"][group]["macro"]
            rels = list(m["before"][group].get("relations") or ())
            held = [constant_in(m[when][group], rels) for when in ("before", "after")]
            if any(held):
                constant.append(f"{name}'s {group} relations: {len(held[0])} of {len(rels)} before training, "
                                f"{len(held[1])} after")
            n = before["Consistency"]["n"]
            count = f"{n} ({CONSTANT} {len(held[0])} → {len(held[1])} constant)" if any(held) else str(n)
            lines.append(f"| {name}{_smoke_flag(m)} | {group} | {count} | " +
                         " | ".join(f"{_cell(before.get(k))} | {_cell(after.get(k))}" for k in TABLE3) + " |")
        if (m["before"].get("test") or {}).get("majority"):
            maj = m["before"]["test"]["majority"]
            lines.append(f"| majority ({name}'s test tuples){_smoke_flag(m)} | test | {maj['Consistency']['n']} | " +
                         " | ".join(f"{_cell(maj.get(k))} | {_cell(maj.get(k))}" for k in TABLE3) + " |")
        why = unlike_table7(m, table7)
        footing[name] = not why
        if why:
            notes.append(f"{name}: {'; '.join(why)}")
        else:
            comparable.append(name)
            lines += _paper_rows(table7, table7_row(m))
    lines += ["", "λ (§8.2: \"select the best model based on Consistent-Acc on the validation set\"): " +
              "; ".join(_lambda_line(name, m) for name, m in results.items()) + ".", ""]
    if constant:
        lines += [f"**{CONSTANT} constant predictor** (one object predicted for every query of a relation: its "
                  f"Consistency 100 by construction): " + "; ".join(constant) + ".", ""]
    if comparable:
        lines += [f"The paper's rows stand beside {', '.join(comparable)}: the paper's split of its 31 N-1 relations "
                  f"(3 training, 3 validation, 25 test), but the paper does not name its validation relations, so up "
                  f"to 3 of its 25 test relations may differ from ours.", ""]
    if notes:
        lines += ["The paper's Table 7 (bert-base-cased: Consistency 58.2 → 64.0, Consistent-Acc 27.3 → 33.2, "
                  "averaged over its 25 test relations) is not set beside these runs, which are on another footing: "
                  + " — ".join(notes) + ".", ""]
    return lines + _table7(results, table7, footing)


def write(results_dir: Path, out: Path, consistency: Path | None = None, plot_path: Path | None = None) -> None:
    """The report of every ``<model>/metrics.json`` under ``results_dir`` (see :func:`write_results`)."""
    skipped: list[dict] = []
    write_results(read_results(results_dir, skipped), out, consistency, plot_path, skipped)


def write_results(results: dict[str, dict], out: Path, consistency: Path | None = None,
                  plot_path: Path | None = None, skipped: list[dict] | None = None) -> None:
    """The report of ``{row label: metrics}`` to ``out``, its JSON beside it, the plot when asked; with
    ``consistency``, the §8 table of the consistency-training results there; ``skipped``: the runs that skipped
    their model, listed at the end (with those of ``consistency``)."""
    skipped = list(skipped or ())
    trained = read_results(consistency, skipped) if consistency is not None else None
    text, summary = render(results, trained)
    if plot_path is not None:
        plot(results, plot_path)
    if trained is not None:
        text += "\n" + "\n".join(consistency_training(trained))
    atomic.write_text(out, applies.with_skipped(text, skipped))
    atomic.write_json(out.with_suffix(".json"), summary)
