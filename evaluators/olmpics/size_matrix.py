"""oLMpics Table 4: a model's zero-shot OBJECTS COMPARISON predictions over every ordered pair of a few objects (one
per size bucket, from small to large), as a matrix beside the paper's (RoBERTa-L's, ``table4`` in published.yaml).

The data is the probe built with ``matrix`` (``objects_comparison_grid`` in the params: every ordered pair of the
listed objects, each row's ``facts.rank`` and ``facts.matrix``; :func:`generators.objects_comparison.generator.matrix`);
the predictions are ``probes evaluate zeroshot``'s on it. Rows are OBJ-1, columns OBJ-2 of "The size of a OBJ-1 is
usually much [MASK] than the size of a OBJ-2.", so the gold is ``larger`` below the diagonal. Each cell gives our
predicted word, then the paper's where the paper has that pair; the summary counts our right cells, the paper's
on the same pairs, and the cells where our word is the paper's."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from evaluators.shared import smoke
from evaluators.shared.report import iter_metrics, setup_title
from probekit import yamlfile
from probekit.data.jsonl import read_jsonl
from probekit.errors import DataError
from probekit.outputs import atomic

SHORT = {"larger": "L", "smaller": "S"}
NOT_ZERO_SHOT = "† MLM head newly initialised: not a zero-shot result"
PUBLISHED = Path(__file__).with_name("published.yaml")   # read here, not through the oLMpics report's module


def load_published() -> dict:
    return yamlfile.read(PUBLISHED)


def _published() -> dict:
    """``{(obj1, obj2): word}`` of the paper's Table 4, and its model's name."""
    table = load_published()["table4"]
    objects = table["objects"]
    cells = {(a, objects[j]): word for a in objects for j, word in enumerate(table["rows"][a]) if word is not None}
    return {"model": table["model"], "cells": cells}


def matrices(folders: Iterable[Path]) -> list[dict]:
    """One matrix per evaluated variant whose data rows were built with ``matrix``, in the order found:
    ``{model, variant, objects, zero_shot, setup, cells: {(obj1, obj2): {prediction, gold}}}``. A prediction file
    out of step with its data file is a DataError naming both."""
    out = []
    for metrics_path, metrics in iter_metrics(folders):
        data = Path(metrics.get("data") or "")
        if metrics.get("probe") != "objects_comparison" or not data.is_file():
            continue
        rows = read_jsonl(data)
        if not rows or not all(isinstance((r.get("facts") or {}).get("rank"), dict) for r in rows):
            continue
        predictions = read_jsonl(metrics_path.parent / "predictions.jsonl")
        cells = {}
        for n, p in enumerate(predictions):   # in input order: join by position
            if n >= len(rows) or rows[n]["id"] != p["id"]:
                raise DataError(f"{metrics_path.parent / 'predictions.jsonl'}:{n + 1}: id {p['id']!r} is not row "
                                f"{n + 1} of {data}")
            words = {c["label"]: c["text"] for c in rows[n]["question"]["choices"]}
            args = rows[n]["args"]
            cells[(args["obj1"], args["obj2"])] = {"prediction": words[p["prediction"]],
                                                   "gold": words[rows[n]["answerKey"]]}
        out.append({"model": metrics["model"], "variant": metrics.get("variant"), "objects": rows[0]["facts"]["matrix"],
                    "zero_shot": metrics.get("zero_shot", True), "setup": setup_title(metrics),
                    "smoke": smoke.is_smoke(metrics), "cells": cells})
    return out


def summary(matrix: dict, paper: dict) -> dict:
    """Counts over the matrix's cells: ours right, the paper's right and our word the paper's (on the pairs the
    paper has), with each count's denominator."""
    cells = matrix["cells"]
    shared = [k for k in cells if k in paper["cells"]]
    return {"n": len(cells), "right": sum(c["prediction"] == c["gold"] for c in cells.values()),
            "paper_n": len(shared), "paper_right": sum(paper["cells"][k] == cells[k]["gold"] for k in shared),
            "same_as_paper": sum(paper["cells"][k] == cells[k]["prediction"] for k in shared)}


def _word(word: str | None, gold: str | None) -> str:
    """``L`` / ``S`` (``✗`` where it is not the gold); ``–`` for no word."""
    return "–" if word is None else SHORT.get(word, word) + ("✗" if gold is not None and word != gold else "")


def _cell(matrix: dict, paper: dict, a: str, b: str) -> str:
    if a == b:
        return "·"
    c = matrix["cells"].get((a, b)) or {}
    return f"{_word(c.get('prediction'), c.get('gold'))} / {_word(paper['cells'].get((a, b)), c.get('gold'))}"


def _pct(k: int, n: int) -> str:
    return f"{k} of {n} ({100 * k / n:.0f}%)" if n else "–"


def render(found: list[dict]) -> tuple[str, dict]:
    """The markdown report and its JSON (per model and variant: the counts and every cell)."""
    paper = _published()
    lines = ["# oLMpics Table 4: zero-shot size comparison over pairs of objects", "",
             'Each cell: our predicted word for "The size of a ROW is usually much [MASK] than the size of a '
             f"COLUMN.\" (L: larger, S: smaller; ✗: wrong), then the paper's ({paper['model']}'s, Talmor et al. "
             "2020, Table 4; –: a pair it does not have). Objects from small to large: the gold is L below the "
             "diagonal, S above it.", ""]
    lines = smoke.with_banner(lines, any(m["smoke"] for m in found))
    summaries = {}
    if not found:
        lines += ["No zero-shot results on a matrix of objects (data built with `objects_comparison.matrix`).", ""]
    for m in found:
        s = summary(m, paper)
        key = f"{m['model']}/{m['variant']}"
        summaries[key] = {**s, "objects": m["objects"], "zero_shot": m["zero_shot"], "smoke": m["smoke"],
                          "cells": [{"obj1": a, "obj2": b, **c, "paper": paper["cells"].get((a, b))}
                                    for (a, b), c in m["cells"].items()]}
        lines += [f"## {m['model']}{' ' + smoke.MARK if m['smoke'] else ''} ({m['variant']}, {m['setup']})", ""]
        if not m["zero_shot"]:
            lines += [f"**{NOT_ZERO_SHOT}**", ""]
        lines += [f"Ours right: {_pct(s['right'], s['n'])}; the paper's right on the same pairs: "
                  f"{_pct(s['paper_right'], s['paper_n'])}; our word the paper's: "
                  f"{_pct(s['same_as_paper'], s['paper_n'])}.", "",
                  "| OBJ-1 \\ OBJ-2 | " + " | ".join(m["objects"]) + " |",
                  "| --- |" + " --- |" * len(m["objects"])]
        lines += [f"| {a} | " + " | ".join(_cell(m, paper, a, b) for b in m["objects"]) + " |" for a in m["objects"]]
        lines.append("")
    return "\n".join(lines), {"source": load_published()["source"], "table": "table4", "matrices": summaries}


def write(folders: Iterable[Path], out_md: Path) -> list[Path]:
    """The report (``out_md``) and its JSON beside it, atomically; returns both paths."""
    text, data = render(matrices(folders))
    atomic.write_text(out_md, text)
    atomic.write_json(Path(out_md).with_suffix(".json"), data)
    return [Path(out_md), Path(out_md).with_suffix(".json")]
