"""The effect of a dataset change on a model's scores (issue 33, item 3): given the example-level diff of two
versions (:mod:`probekit.versions.diff`) and a model's predictions on each side, per config and split

- the examples whose answer flipped (right -> wrong, wrong -> right) and those whose predicted choice changed;
- the accuracy on the keys both sides hold (old and new), on the added keys (new side) and the removed ones (old);
- the change on the common keys, new - old, with a paired bootstrap interval (:func:`.bootstrap.paired_bootstrap`,
  both accuracies on the same resampled units: the unit the data repeats, :func:`probekit.data.units.unit`) and
  McNemar's exact test: under no change a discordant key is as
  likely right -> wrong as wrong -> right, so ``b`` of the ``b + c`` discordant keys is Binomial(b + c, 1/2)
  (McNemar 1947; the exact form of Edwards 1948), two-sided;
- how many unchanged keys (identical rows) got a different prediction: 0, or the two runs did not score alike;
- every added, removed and changed example's prediction on each side (label, text, gold, margin, scores, and
  whether this diff scored it: :func:`view`), flipped or not, which ``probes diff --examples`` writes beside it.

The predictions come from two ``predictions.jsonl`` files (as ``probes evaluate zeroshot`` writes them), or from a
model: its zero-shot predictions on disk at the old side are reused, and on the new side only the changed and
added rows are scored anew (the unchanged keys reuse the old prediction)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from evaluators.shared.bootstrap import accuracy_statistic, paired_bootstrap
from probekit.data.jsonl import decoded, loads, read_json, text_lines
from probekit.data.units import unit
from probekit.errors import UsageError

SHOWN = 20
"""Flipped keys a record lists in ``flipped_keys`` (``flipped`` holds all of them)."""
PREDICTIONS = {"main": "results/zeroshot/{model}/{probe}/{variant}/predictions.jsonl",
               "grid": "results/zeroshot_grid/{model}/{probe}/{variant}/predictions.jsonl"}
"""Where the zero-shot stages write a model alias's predictions of a config (by its role; else ``main``)."""
SETTINGS = ("model_id", "scoring", "rule", "multi_token", "dtype")
"""What must match between predictions on disk and the model scoring anew for the two to be mixed."""
COMMON = ("changed", "unchanged")


@dataclass
class Predictions:
    """A predictions file: ``label`` (its path), ``rows`` ({id: prediction}, file order) and ``meta`` (the
    ``metrics.json`` beside it; {} when absent)."""

    label: str
    rows: dict[str, dict]
    meta: dict


def parse_predictions(text: str, label: str, meta: dict | None = None) -> Predictions:
    """The predictions of a ``predictions.jsonl`` text: one JSON object per line with ``id`` and ``prediction``
    (and ``correct`` or ``gold``); a bad line is one :class:`UsageError` naming ``label`` and the line."""
    rows: dict[str, dict] = {}
    for n, line in text_lines(text, label, UsageError):
        try:
            row = loads(line, f"{label}:{n}", UsageError)
        except json.JSONDecodeError:
            raise UsageError(f"{label}:{n}: not JSON (a predictions file has one JSON object per line)") from None
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or "prediction" not in row:
            raise UsageError(f"{label}:{n}: not a prediction (a JSON object with 'id' and 'prediction')")
        if not isinstance(row.get("correct"), bool) and "gold" not in row:
            raise UsageError(f"{label}:{n}: no 'correct' or 'gold' to tell whether the prediction is right")
        if row["id"] in rows:
            raise UsageError(f"{label}:{n}: id {row['id']} predicted twice")
        rows[row["id"]] = row
    return Predictions(label, rows, meta or {})


def read_predictions(path: str | Path | Predictions) -> Predictions:
    """A ``predictions.jsonl`` file and the ``metrics.json`` beside it (when there is one); one read already is
    returned as it is."""
    if isinstance(path, Predictions):
        return path
    path = Path(path)
    try:
        text = decoded(path.read_bytes(), path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror or exc.__class__.__name__})") from None
    meta = {}
    if (path.parent / "metrics.json").is_file():
        try:
            meta = read_json(path.parent / "metrics.json", UsageError)
        except OSError:
            raise UsageError(f"{path.parent / 'metrics.json'}: cannot be read") from None
        meta = meta if isinstance(meta, dict) else {}
    return parse_predictions(text, str(path), meta)


def check_pair(old: Predictions, new: Predictions) -> None:
    """Two files of one model on one dataset: their ``metrics.json`` (where both have one) name the same model
    and model id, probe, variant and split."""
    for fields, what in ((("model", "model_id"), "models"), (("probe", "variant", "split"), "datasets")):
        a = [old.meta.get(f) for f in fields]
        b = [new.meta.get(f) for f in fields]
        if any(x is not None and y is not None and x != y for x, y in zip(a, b)):
            raise UsageError(f"prediction files of different {what}: {'/'.join(str(x) for x in a if x is not None)} "
                             f"({old.label}) and {'/'.join(str(y) for y in b if y is not None)} ({new.label})")


def locate(result, preds: Predictions, side: str):
    """The split diff (one config and split) whose ``side`` (``old`` or ``new``) rows hold every id of
    ``preds``."""
    ids = set(preds.rows)
    best, found = None, -1
    for sd in result.splits:
        k = len(ids & set(sd.merged[f"id_{side}"].dropna()))
        if k > found:
            best, found = sd, k
    if best is not None and found == len(ids) and ids:
        return best
    label = result.old if side == "old" else result.new
    where = (f"{best.record['config']} {best.record['split']} ({side} side, {label}), the config holding most of "
             f"them" if found > 0 else f"any config and split of the {side} side ({label})")
    raise UsageError(f"{preds.label}: {len(ids) - max(found, 0)} of {len(ids)} prediction ids are not rows of "
                     f"{where}")


def keyed(sd, rows: dict[str, dict], side: str) -> dict[str, dict]:
    """``rows`` ({id: prediction}) by example key, through the split diff's ``id_<side>``."""
    m = sd.merged
    out = {}
    for key, id_ in zip(m["key"], m[f"id_{side}"]):
        if isinstance(id_, str) and id_ in rows and key not in out:
            out[key] = rows[id_]
    return out


def right(p: dict) -> bool:
    return bool(p["correct"]) if isinstance(p.get("correct"), bool) else p["prediction"] == p.get("gold")


def _choices(rows: list[dict], i) -> list[dict]:
    if i is None or (isinstance(i, float) and math.isnan(i)):
        return []
    return list((rows[int(i)].get("question") or {}).get("choices") or [])


def _texts(rows: list[dict], i) -> dict:
    return {c.get("label"): c.get("text") for c in _choices(rows, i)}


def margin(p: dict, labels: list) -> float | None:
    """The gold choice's score minus the best other choice's (``scores`` in the order of the row's choices,
    ``labels``): above 0 the prediction is right, and by how much; None without scores or gold."""
    scores, gold = p.get("scores"), p.get("gold")
    if not isinstance(scores, list) or len(scores) != len(labels) or gold not in labels or len(labels) < 2:
        return None
    g = labels.index(gold)
    return float(scores[g]) - max(float(x) for k, x in enumerate(scores) if k != g)


def view(p: dict | None, choices: list[dict], scored: bool) -> dict | None:
    """One side's prediction of an example as ``--examples`` keeps it: the predicted label and its text, whether
    it is right, the gold label, the ``margin`` (:func:`margin`), the scores, and whether this diff scored it
    (``scored``: False when it was read from a predictions file or reused from the old side)."""
    if p is None:
        return None
    texts = {c.get("label"): c.get("text") for c in choices}
    return {"prediction": p["prediction"], "text": texts.get(p["prediction"], p.get("choice")), "gold": p.get("gold"),
            "correct": right(p), "margin": margin(p, [c.get("label") for c in choices]),
            "scores": p.get("scores"), "scored": scored}


def _accuracy(preds: list[dict]) -> float | None:
    return sum(map(right, preds)) / len(preds) if preds else None


def compare(sd, old: dict[str, dict], new: dict[str, dict], *, resamples: int = 1000, seed: int = 0,
            scored: dict[str, set] | None = None) -> dict:
    """The statistics of one split diff from each side's predictions by key (see the module's docstring).
    A key is counted where its side has a prediction (``unpredicted`` counts the rows that have none).
    ``predictions``: every added, removed and changed example's prediction on each side it has (:func:`view`;
    ``scored``: the keys each side scored anew, ``{"old": keys, "new": keys}``)."""
    from scipy.stats import binomtest

    m = sd.merged
    rows = list(zip(m["key"], m["status"], m["what_old"], m["what_new"], m["row_old"], m["row_new"]))
    common = [r for r in rows if r[1] in COMMON and r[0] in old and r[0] in new]
    a = np.array([right(old[r[0]]) for r in common], bool)
    b = np.array([right(new[r[0]]) for r in common], bool)
    flipped, changed = [], 0
    for (key, status, what_old, what_new, i, j), x, y in zip(common, a, b):
        to, tn = _texts(sd.old_rows, i), _texts(sd.new_rows, j)
        po, pn = old[key]["prediction"], new[key]["prediction"]
        po, pn = to.get(po, po), tn.get(pn, pn)
        changed += po != pn
        if x != y or po != pn:
            go, gn = old[key].get("gold"), new[key].get("gold")
            flipped.append({"key": key, "what": what_new if isinstance(what_new, str) else what_old,
                            "status": status, "flip": "right->wrong" if x and not y else "wrong->right" if y and not x
                            else "prediction", "old_prediction": po, "new_prediction": pn,
                            "gold_old": to.get(go, go), "gold_new": tn.get(gn, gn)})
    n = len(common)
    b_, c_ = int((a & ~b).sum()), int((~a & b).sum())
    mcnemar = {"b": b_, "c": c_, "p_value": float(binomtest(b_, b_ + c_, 0.5).pvalue) if b_ + c_ else 1.0}
    change = None
    if n:
        fmt = sd.record.get("format")
        units = [unit(fmt, sd.new_rows[int(j)]) for *_, j in common]   # a common key's row on the new side
        boot = paired_bootstrap(accuracy_statistic(b), accuracy_statistic(a), n, resamples=resamples, seed=seed,
                                units=units)
        change = {k: boot[k] for k in ("diff", "low", "high", "p_value")}
    added = [new[r[0]] for r in rows if r[1] == "added" and r[0] in new]
    removed = [old[r[0]] for r in rows if r[1] == "removed" and r[0] in old]
    scored = scored or {}
    predictions = [{"key": key, "status": status,
                    "old": view(old.get(key) if status != "added" else None, _choices(sd.old_rows, i),
                                key in scored.get("old", ())),
                    "new": view(new.get(key) if status != "removed" else None, _choices(sd.new_rows, j),
                                key in scored.get("new", ()))}
                   for key, status, _, _, i, j in rows if status != "unchanged"]
    same = [r[0] for r in common if r[1] == "unchanged"]
    differing = [k for k in same if old[k]["prediction"] != new[k]["prediction"]]
    return {"n_common": n, "n": {"common": n, "added": len(added), "removed": len(removed)},
            "flips": {"right_to_wrong": b_, "wrong_to_right": c_, "prediction_changed": int(changed)},
            "flipped_keys": [f["key"] for f in flipped if f["flip"] != "prediction"][:SHOWN],
            "flipped": flipped, "predictions": predictions,
            "accuracy": {"common_old": _accuracy([old[r[0]] for r in common]),
                         "common_new": _accuracy([new[r[0]] for r in common]),
                         "added": _accuracy(added), "removed": _accuracy(removed)},
            "change": change, "mcnemar": mcnemar,
            "unchanged_identical": {"n": len(same), "differing": len(differing), "differing_keys": differing[:SHOWN]},
            "unpredicted": {"old": sum(1 for r in rows if r[1] != "added" and r[0] not in old),
                            "new": sum(1 for r in rows if r[1] != "removed" and r[0] not in new)}}


def read_pair(old_path, new_path) -> tuple[Predictions, Predictions]:
    """Two prediction files (or two read already), read and checked to be one model's on one dataset: what
    ``probes diff`` checks before any diff work."""
    old, new = read_predictions(old_path), read_predictions(new_path)
    check_pair(old, new)
    return old, new


def _from_files(result, old_path, new_path, resamples: int, seed: int) -> list[dict]:
    old, new = read_pair(old_path, new_path)
    sd, sd_new = locate(result, old, "old"), locate(result, new, "new")
    if sd is not sd_new:
        raise UsageError(f"prediction files of different datasets: {old.label} holds {sd.record['config']} "
                         f"{sd.record['split']} rows, {new.label} {sd_new.record['config']} {sd_new.record['split']}")
    stats = compare(sd, keyed(sd, old.rows, "old"), keyed(sd, new.rows, "new"), resamples=resamples, seed=seed)
    return [{"config": sd.record["config"], "split": sd.record["split"],
             "model": old.meta.get("model") or new.meta.get("model"), "source": "prediction files",
             "predictions": {"old": old.label, "new": new.label}, **stats}]


def scores_formats(model: str, formats) -> None:
    """A model scores MC-MLM datasets only: a diff of ``formats`` without one is an error (``probes diff`` checks
    its sides' formats before any diff work)."""
    if "mc_mlm" not in formats:
        raise UsageError(f"--model {model}: scores MC-MLM datasets only, and this diff holds "
                         f"{', '.join(sorted(formats)) or 'no dataset'}")


def effect_of(result, *, old_predictions=None, new_predictions=None, model: str | None = None, params=None,
              device: str = "auto", split: str = "dev", log: Callable[[str], None] = print, old_side=None,
              new_side=None, scorer=None, check_unchanged: int = 0, resamples: int = 1000,
              seed: int = 0) -> list[dict]:
    """One record per config and split (see :func:`compare`, plus config, split, model and, with a model,
    ``scored``): from two prediction files, or from ``model`` on every MC-MLM config's ``split``.

    With a model: ``scorer(model, params=, device=)`` (:func:`evaluators.olmpics.rescore.load`) loads it, once,
    when a row needs scoring; the old side's zero-shot predictions of the model (``old_side.project_file``,
    :data:`PREDICTIONS`; or ``old_predictions``, for the config its ids belong to) are reused where they were
    scored with the same settings, else the old rows are scored. ``check_unchanged``: that many unchanged keys
    are also scored anew, to check that the reused predictions are what scoring gives now."""
    if model is None:
        if old_predictions is None or new_predictions is None:
            raise UsageError("give --model M, or two prediction files (the old side's and the new side's)")
        return _from_files(result, old_predictions, new_predictions, resamples, seed)
    if new_predictions is not None:
        raise UsageError("with --model the new side is scored: give no new predictions file")
    if scorer is None:
        raise TypeError("effect_of(model=...) needs scorer= (evaluators.olmpics.rescore.load)")
    picked = [sd for sd in result.splits if sd.record["format"] == "mc_mlm" and sd.record["split"] == split]
    if not picked:
        scores_formats(model, {sd.record["format"] for sd in result.splits})
        raise UsageError(f"--model {model}: no MC-MLM config of this diff has a {split} split")
    given = read_predictions(old_predictions) if old_predictions is not None else None
    given_sd = locate(result, given, "old") if given is not None else None
    if given_sd is not None and not any(sd is given_sd for sd in picked):
        raise UsageError(f"{given.label}: predictions of {given_sd.record['config']} {given_sd.record['split']}, "
                         f"not of an MC-MLM config's {split} split")
    loaded = []

    def rescorer():
        if not loaded:
            loaded.append(scorer(model, params=params, device=device))
        return loaded[0]

    out = []
    for sd in picked:
        on_disk = given if sd is given_sd else _on_disk(old_side, sd, model, log)
        old, old_ids, reused = _old_side(sd, on_disk, rescorer, log)
        new, scored, new_keys = _new_side(sd, old, rescorer, check_unchanged)
        scored_old = len(old_ids)
        r = sd.record
        log(f"{r['config']} {r['split']}: scored {scored['changed'] + scored['added']} of {len(sd.new_rows)}: "
            f"{scored['changed']} changed, {scored['added']} added; reused {scored['reused']}")
        old_keys = {k for k, i in zip(sd.merged["key"], sd.merged["id_old"]) if i in old_ids}
        stats = compare(sd, old, new, resamples=resamples, seed=seed, scored={"old": old_keys, "new": new_keys})
        if scored.get("checked"):
            stats["unchanged_identical"].update(checked=scored["checked"], differing_anew=scored["differing_anew"])
        out.append({"config": r["config"], "split": r["split"], "model": model, "source": "model",
                    "scored": {**scored, "old": scored_old, "old_predictions": reused}, **stats})
    return out


def _on_disk(side, sd, model: str, log) -> Predictions | None:
    """The zero-shot predictions of ``model`` (an alias) for ``sd``'s config and split at ``side``; None when
    the side has none."""
    entry = side.entries.get(sd.record["config"]) if side is not None else None
    if entry is None:
        return None
    rel = PREDICTIONS.get(entry.role, PREDICTIONS["main"]).format(model=model, probe=entry.probe,
                                                                   variant=entry.variant)
    try:
        text = side.project_file(rel)
        meta = side.project_file(rel.rsplit("/", 1)[0] + "/metrics.json")
    except UsageError as exc:   # not in the DVC cache: scored instead
        log(f"{rel} at {side.label}: {exc}")
        return None
    if text is None:
        return None
    try:
        meta = loads(meta, f"{rel} ({side.label}): metrics.json", UsageError) if meta else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        meta = {}
    preds = parse_predictions(text, f"{rel} ({side.label})", meta if isinstance(meta, dict) else {})
    if preds.meta.get("split") not in (None, sd.record["split"]):
        return None
    return preds


def _old_side(sd, on_disk: Predictions | None, rescorer, log) -> tuple[dict[str, dict], set, str | None]:
    """The old side's predictions by key: those on disk where they fit (rows of this side, scored with the
    model's settings when anything is scored beside them), the other old rows scored; the ids of those scored;
    the predictions file reused (None: none)."""
    r = sd.record
    where = f"{r['config']} {r['split']}"
    rows = {}
    if on_disk is None:
        log(f"{where}: no zero-shot predictions of the model at the old side: scoring its {len(sd.old_rows)} rows")
    else:
        stray = len(set(on_disk.rows) - set(sd.merged["id_old"].dropna()))
        anew = int(sd.merged["status"].isin(("changed", "added")).sum())
        if stray:
            log(f"{where}: {on_disk.label}: {stray} of {len(on_disk.rows)} ids are not rows of the old side "
                f"(another version of the data): not reused")
        elif anew or len(on_disk.rows) < len(sd.old_rows):
            rows = _fitting(on_disk, rescorer, where, log)
        else:
            rows = on_disk.rows
    reused = on_disk.label if rows and on_disk is not None else None
    missing = [row for row in sd.old_rows if row.get("id") not in rows]
    if missing:
        rows = {**rows, **{p["id"]: p for p in rescorer().score(missing)}}
    return keyed(sd, rows, "old"), {row.get("id") for row in missing}, reused


def _fitting(on_disk: Predictions, rescorer, where: str, log) -> dict[str, dict]:
    """``on_disk``'s rows when they were scored as the model scores now (:data:`SETTINGS`), else none."""
    now = rescorer().settings
    diff = [f"{k} {on_disk.meta[k]} there, {now[k]} now" for k in SETTINGS
            if on_disk.meta.get(k) is not None and now.get(k) is not None and on_disk.meta[k] != now[k]]
    if diff:
        log(f"{where}: {on_disk.label} was scored otherwise ({'; '.join(diff)}): not reused")
        return {}
    return on_disk.rows


def _new_side(sd, old: dict[str, dict], rescorer, check_unchanged: int) -> tuple[dict[str, dict], dict, set]:
    """The new side's predictions by key: unchanged keys the old prediction, changed and added rows scored (their
    keys returned)."""
    m = sd.merged
    new, todo, kinds, same = {}, [], {"changed": 0, "added": 0}, []
    for key, status, j, id_new in zip(m["key"], m["status"], m["row_new"], m["id_new"]):
        if status == "removed":
            continue
        if status == "unchanged" and key in old:
            new[key] = {**old[key], "id": id_new}
            same.append((key, int(j)))
        else:
            todo.append((key, int(j)))
            kinds["changed" if status != "added" else "added"] += 1
    if todo:
        for (key, _), p in zip(todo, rescorer().score([sd.new_rows[j] for _, j in todo])):
            new[key] = p
    scored = {**kinds, "reused": len(same)}
    if check_unchanged and same:
        picked = same[:check_unchanged]
        anew = rescorer().score([sd.new_rows[j] for _, j in picked])
        scored.update(checked=len(picked), differing_anew=sum(
            p["prediction"] != new[k]["prediction"] for (k, _), p in zip(picked, anew)))
    return new, scored, {key for key, _ in todo}
