"""``probes diff PATH [--old SIDE] [--new SIDE]``: the example-level diff of a dataset folder or a data tree
between two versions, and with ``--model`` or two prediction files its effect on a model's answers. Argparse and
output only: the work is in :mod:`probekit.versions` (the diff) and :mod:`evaluators.shared.flips` (the effect)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

from probekit.errors import UsageError
from probes.options import DEVICE_HELP, MODEL_HELP, PARAMS_HELP, Read, Written, add_force, device, out_file, positive

SIDE_HELP = ("a folder (standing for PATH), a git revision of this project (PATH at that commit: its DVC-tracked "
             "data read from the DVC cache) or a published Hub revision hf://datasets/ORG/NAME[@REV]")


def _clean(value):
    """JSON-ready: NaN (pandas' missing value) as null, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def example_rows(result) -> list[dict]:
    """Every added, removed and changed example of the diff, with both sides' rows as they are in the files."""
    out = []
    for s in result.splits:
        r = s.record
        part = s.merged[s.merged["status"] != "unchanged"]
        for _, m in part.iterrows():
            old = s.old_rows[int(m["row_old"])] if m["status"] != "added" else None
            new = s.new_rows[int(m["row_new"])] if m["status"] != "removed" else None
            out.append({"config": r["config"], "dataset": r["dataset"], "variant": r["variant"], "split": r["split"],
                        "status": m["status"], "key": m["key"],
                        "what": m["what_new"] if m["status"] != "removed" else m["what_old"],
                        "fields": m["fields"].split(",") if m["fields"] else [], "old": old, "new": new})
    return out


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def effects_markdown(effects: list[dict]) -> str:
    """The effect on a model's answers: per config and split, flips, accuracies and the paired tests."""
    lines = ["## Effect on the model's answers", "",
             "| config | split | model | common | right→wrong | wrong→right | accuracy on common: old → new (Δ, 95% "
             "paired bootstrap; McNemar p) | added: accuracy | removed: accuracy | unchanged: identical |",
             "| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- | --- |"]
    for e in effects:
        a, c, mc, n = e["accuracy"], e["change"], e["mcnemar"], e["n"]
        same = e["unchanged_identical"]
        delta = ("–" if c.get("diff") is None else
                 f"{100 * c['diff']:+.1f} [{100 * c['low']:+.1f}, {100 * c['high']:+.1f}]; p {mc['p_value']:.3g}")
        lines.append(f"| {e['config']} | {e['split']} | {e['model']} | {n['common']} | {e['flips']['right_to_wrong']} "
                     f"| {e['flips']['wrong_to_right']} | {_pct(a['common_old'])} → {_pct(a['common_new'])} ({delta}) "
                     f"| {n['added']}: {_pct(a['added'])} | {n['removed']}: {_pct(a['removed'])} | "
                     f"{same['n'] - same['differing']} of {same['n']} |")
    scored = [e for e in effects if e.get("scored")]
    if scored:
        lines += ["", "Scored anew: " + "; ".join(
            f"{e['config']} {e['split']}: {e['scored']['changed']} changed + {e['scored']['added']} added "
            f"(reused {e['scored']['reused']})" for e in scored) + "."]
    return "\n".join(lines) + "\n"


def _diff(args) -> int:
    from probekit.outputs import atomic
    from probekit.versions.diff import diff
    from probekit.versions.sides import check_path, open_side
    from probekit.versions.summary import markdown

    path = Path(args.path)
    check_path(path, args.old, args.new)   # inside its project when a side is a git revision: before reading it
    json_out = out_file(args.json, "the diff as JSON", "--json", suffix=".json", force=args.force)
    examples_out = out_file(args.examples, "every changed example, one JSON object per line", "--examples",
                            suffix=".jsonl", force=args.force)
    predictions = (args.old_predictions, args.new_predictions)
    if any(predictions) and not all(predictions):
        raise UsageError("give both --old-predictions and --new-predictions (the two versions' prediction files)")
    if args.model and all(predictions):
        raise UsageError("give --model or the two prediction files, not both")
    if args.check_unchanged and not args.model:
        raise UsageError("--check-unchanged goes with --model (it scores unchanged examples anew)")
    from evaluators.shared import flips

    scorer = None
    if args.model:   # it exists, is whole and scores MC-MLM: checked before any diff work
        from evaluators.olmpics import rescore

        rescore.check(args.model, params=args.params)
        scorer = rescore.load
    if all(predictions):
        predictions = flips.read_pair(*predictions)   # read, and of one model and dataset: before any diff work
    new = open_side(args.new, path)   # the working tree by default: its errors before a revision is copied out
    try:
        old = open_side(args.old, path)
        try:
            formats = {e.format for side in (old, new) for e in side.entries.values()}
            if args.model and formats:   # from the datasets' meta.json, before their rows are read
                flips.scores_formats(args.model, formats)
            result = diff(old, new, show=args.show, progress=True)
            effects = []
            if args.model or all(predictions):
                effects = flips.effect_of(result, old_predictions=predictions[0], new_predictions=predictions[1],
                                          model=args.model, params=args.params, scorer=scorer,
                                          device=args.device if args.model else "cpu", split=args.split,
                                          old_side=old, new_side=new, check_unchanged=args.check_unchanged,
                                          log=logging.getLogger("probekit").info)
        finally:
            old.close()
    finally:
        new.close()
    text = markdown(result, examples=args.show * 2)
    flipped = {(e["config"], e["split"]): {f["key"]: f for f in e.pop("flipped", [])} for e in effects}
    predicted = {(e["config"], e["split"]): (e["model"], {p["key"]: p for p in e.pop("predictions", [])})
                 for e in effects}
    if effects:
        text += "\n" + effects_markdown(effects)
        if not examples_out:
            text += ("\nEach example's predictions on both sides (label, text, margin, scores) are kept in "
                     "`--examples FILE`.\n")
    if json_out:
        atomic.write_json(json_out, _clean({**result.json(), **({"effects": effects} if effects else {})}))
    if examples_out:
        rows = example_rows(result)
        for row in rows:   # a flip of a changed example, beside it
            flip = flipped.get((row["config"], row["split"]), {}).get(row["key"])
            if flip:
                row["flip"] = {k: v for k, v in flip.items() if k not in ("key", "what", "status")}
            model, by_key = predicted.get((row["config"], row["split"]), (None, {}))
            if row["key"] in by_key:   # each side's prediction, scored anew or read: every one kept
                p = by_key[row["key"]]
                row["predictions"] = {"model": model, "old": p["old"], "new": p["new"]}
        atomic.write_jsonl(examples_out, _clean(rows))
    print(text, end="")
    return 0


def add_commands(sub, command) -> None:
    """``probes diff``."""
    p = command(sub, "diff", "what changed between two versions of a dataset: examples added, removed and changed, "
                             "the answer balance, templates, controls, and a model's flips", """\
Compares PATH (a dataset folder, e.g. data/probes/age_comparison, or a whole data tree) between two versions,
example by example: each example is matched on a key derived from the facts it was built from, never its text
(probekit/data/keys.py; docs/versions.md), so a reworded template changes stems but keeps every example.
Prints a Markdown summary; --json and --examples write the whole result.""")
    p.add_argument("path", metavar="PATH", type=Read, help="a dataset folder or a data tree of this project")
    p.add_argument("--old", metavar="SIDE", default="HEAD", type=Read, help=f"the old version: {SIDE_HELP}")
    p.add_argument("--new", metavar="SIDE", help=f"the new version (default: PATH in the working tree): {SIDE_HELP}",
                   type=Read)
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON (its `datasets` list: one record per "
                                                  "config, i.e. dataset and variant, and split)", type=Written)
    p.add_argument("--examples", metavar="FILE", help="write every added, removed and changed example as JSONL, both "
                                                      "versions' rows side by side (with --model or prediction "
                                                      "files: each side's prediction, margin and scores, and the "
                                                      "flip)", type=Written)
    p.add_argument("--show", type=positive, default=3, help="examples of each kind per dataset in the summary")
    p.add_argument("--model", help=f"score the change's effect with this model (MC-MLM zero-shot): {MODEL_HELP}; "
                                   "only changed and added examples are scored, the old version's predictions on "
                                   "disk are reused for the rest", type=Read)
    p.add_argument("--old-predictions", metavar="FILE", type=Read, help="the old version's predictions.jsonl (with "
                                                             "--new-predictions: the effect without scoring)")
    p.add_argument("--new-predictions", metavar="FILE", type=Read, help="the new version's predictions.jsonl")
    p.add_argument("--split", default="dev", help="the split whose predictions are compared")
    p.add_argument("--check-unchanged", type=int, default=0, metavar="N",
                   help="with --model: also score N unchanged examples anew and count the predictions that differ "
                        "from the reused ones (0 expected)")
    p.add_argument("--params", type=Read, help=PARAMS_HELP)
    p.add_argument("--device", type=device, default="auto", help=DEVICE_HELP)
    add_force(p)
    p.set_defaults(func=_diff)
