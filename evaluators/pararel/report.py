"""The ParaRel report: every ``results/<model>/metrics.json`` (``probes evaluate pararel``) in the layout of
the paper's Table 3 (Accuracy, Consistency, Consistent-Acc) and Table 2 (Succ-Patt, Succ-Objs, Unk-Const,
Know-Const), macro mean ± std in % over the N-1 relations evaluated, the published numbers beside ours when
the model id is one the paper evaluated; then consistency by edge type and determinism on N-M relations."""

from __future__ import annotations

import json
from pathlib import Path


from evaluators import applies, smoke
from evaluators.pararel.metrics import EDGE_TYPES
from evaluators.pararel.plots import correlation, plot
from probekit import atomic, yamlfile
from probekit.errors import DataError

PUBLISHED = Path(__file__).with_name("published.yaml")
TABLE3 = ("Accuracy", "Consistency", "Consistent-Acc")
TABLE2 = ("Succ-Patt", "Succ-Objs", "Unk-Const", "Know-Const")


def _cell(stat: dict | None) -> str:
    if not stat or stat.get("mean") is None:
        return "–"
    std = stat.get("std")
    return f"{100 * stat['mean']:.1f}" + (f"±{100 * std:.1f}" if std is not None else "")


def _published(values) -> str:
    return f"{values[0]:.1f}±{values[1]:.1f}" if values else "–"


def read_results(folder: Path, skipped: list | None = None) -> dict[str, dict]:
    """``{model: metrics}`` of every ``<model>/metrics.json`` under ``folder``; a run that skipped its model
    (:mod:`evaluators.applies`) is no result: appended to ``skipped`` when given, else passed over."""
    files = sorted(Path(folder).glob("*/metrics.json"))
    if not files:
        raise DataError(f"{folder}: no <model>/metrics.json (run: probes evaluate pararel)")
    results = {}
    for f in files:
        m = json.loads(f.read_text(encoding="utf-8"))
        if applies.is_skipped(m):
            if skipped is not None:
                skipped.append(m)
        else:
            results[f.parent.name] = m
    return results


def _smoke_flag(m: dict) -> str:
    return f" {smoke.MARK}" if smoke.is_smoke(m) else ""


def _table(title: str, keys: tuple[str, ...], results: dict, published: dict) -> list[str]:
    head = " | ".join(f"{k} | {k} (paper)" for k in keys)
    lines = [f"### {title}", "", f"| model | model id | N-1 relations | {head} |",
             "| --- | --- | --- | " + " | ".join("---" for _ in range(2 * len(keys))) + " |"]
    for name, m in results.items():
        paper = published.get(m["model_id"], {})
        n = m["macro"].get(keys[0], {}).get("n", 0)
        cells = " | ".join(f"{_cell(m['macro'].get(k))} | {_published(paper.get(k))}" for k in keys)
        flag = ("" if m.get("lm_head", "pretrained") == "pretrained" else " †") + _smoke_flag(m)
        lines.append(f"| {name}{flag} | `{m['model_id']}` | {n} | {cells} |")
    return lines + [""]


def render(results: dict[str, dict], consistency: dict[str, dict] | None = None) -> tuple[str, dict]:
    """The markdown report and its JSON (ours and the published numbers per model); ``consistency``: the
    consistency-training results the §8 table will show (their smoke scale, if any, is said under the title)."""
    published = yamlfile.read(PUBLISHED)["models"]
    small = smoke.any_smoke([*results.values(), *(consistency or {}).values()])
    lines = smoke.with_banner([
        "# ParaRel results", "",
        "Macro mean ± std (sample std over relations) in %, over the N-1 relations each run evaluated; the paper's "
        "numbers (Elazar et al. 2021) are over its 31 N-1 relations, with objects filtered to one token for all of "
        "its models, so they compare only when the data and model match.", ""], small)
    if any(m.get("lm_head", "pretrained") != "pretrained" for m in results.values()):
        lines += ["† the checkpoint has no MLM head: a newly initialised one scored, so not a zero-shot result "
                  "(no knowledge is measured).", ""]
    if small:
        lines += [f"{smoke.MARK}: {smoke.LEGEND}.", ""]
    lines += _table("Knowledge and consistency (Table 3)", TABLE3, results, published)
    lines += _table("Extractability (Table 2)", TABLE2, results, published)
    lines += ["### Consistency by edge type", "", "| model | " + " | ".join(EDGE_TYPES) + " |",
              "| --- | " + " | ".join("---" for _ in EDGE_TYPES) + " |"]
    for name, m in results.items():
        by_edge = m["macro"].get("consistency_by_edge", {})
        lines.append(f"| {name} | " + " | ".join(_cell(by_edge.get(t)) for t in EDGE_TYPES) + " |")
    lines += ["", "### Determinism on the N-M relations", "", "| model | relations | Determinism |", "| --- | --- | --- |"]
    for name, m in results.items():
        det = m["determinism"].get("macro", {}).get("Determinism", {})
        lines.append(f"| {name} | {det.get('n', 0)} | {_cell(det)} |")
    lines += ["", "Settings: " + "; ".join(
        f"{name}: rule {m['rule']}, a/an filter {'on' if m['a_an_filter'] else 'off'}, {m['queries']} queries, "
        f"LM head {m['lm_head']}" for name, m in results.items()), ""]
    lines += ["Pearson r of per-relation Accuracy and Consistency (the paper: 0.67 to 0.82): " + "; ".join(
        f"{name} {r:.2f}" if (r := correlation(m)) is not None else f"{name} –" for name, m in results.items()), ""]
    summary = {name: {"model_id": m["model_id"], "macro": m["macro"], "determinism": m["determinism"].get("macro"),
                      "accuracy_consistency_r": correlation(m), "published": published.get(m["model_id"]),
                      "profile": m.get("profile")}
               for name, m in results.items()}
    return "\n".join(lines), summary


def consistency_training(folder: Path | dict[str, dict]) -> list[str]:
    """Paper §8: macro Consistency and Accuracy before and after consistency training, per model and group
    (``folder``: the results folder, or its ``{model: metrics}``)."""
    lines = ["### Consistency training (§8)", "",
             "| model | relations | n | Consistency before | after | Accuracy before | after |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    results = folder if isinstance(folder, dict) else read_results(folder)
    for name, m in results.items():
        for group in ("train", "held_out"):
            if group not in m["before"]:
                continue
            before, after = m["before"][group]["macro"], m["after"][group]["macro"]
            lines.append(f"| {name}{_smoke_flag(m)} | {group} | {before['Consistency']['n']} | "
                         f"{_cell(before['Consistency'])} | {_cell(after['Consistency'])} | "
                         f"{_cell(before['Accuracy'])} | {_cell(after['Accuracy'])} |")
    return lines + ["", "The paper (bert-base-cased, λ=0.1–1, 3 epochs on P138, P37, P449): Consistency 58.2 → 64.0 "
                        "on 25 unseen relations.", ""]


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
