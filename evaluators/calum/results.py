"""The CALUM runs behind the report, read and indexed: every ``<run>/metrics.json`` (``probes evaluate calum``)
under a results folder, checked; the runs indexed by table row (model, split, capping, scale), setting and task,
and the rows, settings and tasks in the paper's order with their labels; and the paper's published numbers
(``published.yaml``) for a run's checkpoint, task and setting."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, NamedTuple


from evaluators.shared import applies, smoke
from probekit import yamlfile
from probekit.data.jsonl import read_json
from probekit.errors import DataError, shown

PUBLISHED = Path(__file__).with_name("published.yaml")
ENGLISH = ("mnli", "qnli", "rte", "qqp", "mrpc")        # Table 2's order
KOREAN = ("kornli", "klue_nli", "klue_sts")             # Table 5's order
SYMMETRIC = ("mrpc", "qqp", "klue_sts")
METRICS = ("accuracy", "C_R", "C_S")                    # the paper's columns, in its order
STATS = METRICS + ("C_sym",)
SINGLE = "Single"
PAPER_GROUPS = ("Single", "Para", "All")                # Table 6's settings, in its order


class Row(NamedTuple):
    """A table row: the runs of one model (id), evaluation split, capping and scale (smoke profile or not)."""
    model: str
    model_id: str
    split: str
    capped: bool
    smoke: bool = False


def load_published() -> dict:
    return yamlfile.read(PUBLISHED)


# --- reading ------------------------------------------------------------------------------------------------

def _is_share(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def check(m, where) -> None:
    """Raise a DataError naming ``where`` unless ``m`` has the fields the report reads, of the right types."""
    if not isinstance(m, dict):
        raise DataError(f"{where}: not a JSON object (not a CALUM metrics.json?)")
    if m.get("protocol", "calum") != "calum":
        raise DataError(f"{where}: protocol {shown(m['protocol'])}, not 'calum'")
    missing = [k for k in ("task", "model", "model_id", "setting") if not isinstance(m.get(k), str) or not m[k]]
    if missing:
        raise DataError(f"{where}: missing or empty field(s) {missing} (not a CALUM metrics.json?)")
    trained = m.get("tasks_trained")
    if trained is not None and (not isinstance(trained, list) or not trained or trained[0] != m["task"]
                                or not all(isinstance(t, str) for t in trained)):
        raise DataError(f"{where}: tasks_trained must list the task names, the main task {shown(m['task'])} first")
    for key in STATS:
        stat = m.get(key)
        if stat is None:
            continue
        if not isinstance(stat, dict) or not (stat.get("mean") is None or _is_share(stat["mean"])) or not (
                stat.get("std") is None or (_is_share(stat["std"]))):
            raise DataError(f"{where}: {key} must be {{mean, std, n, per_seed}} with shares in [0, 1], "
                            f"not {shown(stat)}")
    if m.get("majority") is not None and not _is_share(m["majority"]):
        raise DataError(f"{where}: majority must be a share in [0, 1], not {shown(m['majority'])}")
    for key in ("split", "language", "profile"):
        if m.get(key) is not None and not isinstance(m[key], str):
            raise DataError(f"{where}: {key} must be a string, not {shown(m[key])}")
    if not isinstance(m.get("capped", False), bool):
        raise DataError(f"{where}: capped must be true or false, not {shown(m['capped'])}")
    if not isinstance(m.get("per_seed", []), list) or not all(isinstance(s, dict) for s in m.get("per_seed", [])):
        raise DataError(f"{where}: per_seed must be a list of objects")


def read_results(folder: Path, skipped: list | None = None) -> dict[str, dict]:
    """``{run: metrics}`` of every ``<run>/metrics.json`` one level under ``folder``, in sorted order. A run folder
    (hidden ones aside) without a metrics.json, or with a malformed one, is a DataError naming the file; a run
    that skipped its model (:mod:`evaluators.shared.applies`) is no result: appended to ``skipped`` when given."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (run: probes evaluate calum)")
    results = {}
    for run in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        path = run / "metrics.json"
        if not path.is_file():
            raise DataError(f"{path}: missing (an unfinished run? re-run it, or move {run} out of {folder})")
        m = read_json(path)
        if applies.is_skipped(m):
            if skipped is not None:
                skipped.append(m)
            continue
        check(m, path)
        results[run.name] = m
        if isinstance(m.get("test"), dict):   # the test split evaluated beside the validation split: its own row
            results[f"{run.name}:{m['test'].get('split')}"] = test = with_test(m)
            check(test, f"{path} (test)")
    return _checked(results, skipped, folder)


def with_test(m: Mapping) -> dict:
    """A run's ``test`` summary (``calum_eval.evaluate_test``) as a run of its own on that split: the report's
    ``model (test)`` row beside the validation split's (the group's other tasks' test summaries stay in
    ``aux``'s ``test``)."""
    dropped = set(STATS) | {"majority", "per_seed", "test", "aux", "constant_predictor"}
    return {k: v for k, v in m.items() if k not in dropped} | m["test"]


def _checked(results: dict, skipped: list | None, folder: Path) -> dict:
    if not results and not skipped:
        raise DataError(f"{folder}: no <run>/metrics.json (run: probes evaluate calum)")
    return results


# --- indexing -----------------------------------------------------------------------------------------------

def _row(m: Mapping) -> Row:
    return Row(m["model"], m["model_id"], m.get("split") or "dev", bool(m.get("capped", False)), smoke.is_smoke(m))


def is_single(setting: str) -> bool:
    return setting.casefold() == SINGLE.casefold()


def task_order(tasks) -> list[str]:
    known = ENGLISH + KOREAN
    return sorted(set(tasks), key=lambda t: (known.index(t) if t in known else len(known), t))


def setting_order(settings) -> list[str]:
    def key(s):
        folded = [g.casefold() for g in PAPER_GROUPS]
        return (folded.index(s.casefold()) if s.casefold() in folded else len(folded), s)
    return sorted(set(settings), key=key)


def index(results: Mapping[str, Mapping]) -> dict[tuple[Row, str, str], tuple[str, Mapping]]:
    """``{(row, setting, task): (run, metrics)}``; two runs in one cell are a DataError naming both."""
    cells: dict = {}
    for run in sorted(results):
        m = results[run]
        check(m, f"run {run}")
        key = (_row(m), m["setting"], m["task"])
        if key in cells:
            raise DataError(f"runs {cells[key][0]} and {run}: both {m['model']} (`{m['model_id']}`), task {m['task']}, "
                            f"setting {m['setting']}, split {key[0].split}: keep one")
        cells[key] = (run, m)
    return cells


def row_order(rows, published: Mapping) -> list[Row]:
    """Rows of models the paper evaluated first, in its order (Table 2's, then Table 5's); then the others by name."""
    paper = list(published["table2"]) + list(published["table5"])
    def key(r: Row):
        name = published["hub_ids"].get(r.model_id)
        return (paper.index(name) if name in paper else len(paper), r.model, r.model_id, r.split, r.capped,
                r.smoke)
    return sorted(set(rows), key=key)


def row_label(row: Row, setting: str = "") -> str:
    """``model[-setting][ (split)][ ‡][ (smoke)]``: the split when not a dev split, ``smoke.CAPPED`` (‡) on capped
    runs, the smoke marker on smoke-scale runs."""
    split = "" if row.split.startswith("dev") else f" ({row.split})"
    return (f"{row.model}{'-' + setting if setting else ''}{split}{' ' + smoke.CAPPED if row.capped else ''}"
            f"{' ' + smoke.MARK if row.smoke else ''}")


# --- published numbers --------------------------------------------------------------------------------------

def published_for(m: Mapping, published: Mapping) -> dict | None:
    """The paper's numbers (in %) for this run's checkpoint, task and setting, or None: Table 2's (English) or
    Table 5's (Korean) for a single-task run, Table 6's for its group."""
    name = published["hub_ids"].get(m["model_id"])
    if is_single(m["setting"]):
        table = "table5" if m["task"] in KOREAN else "table2"
        values = published[table].get(name, {}).get(m["task"])
    else:
        group = {g.casefold(): g for g in PAPER_GROUPS}.get(m["setting"].casefold())
        values, table = published["table6"].get(name, {}).get(group, {}).get(m["task"]), "table6"
    if not values:
        return None
    return {"table": table, "row": name, **dict(zip(METRICS, values))}
