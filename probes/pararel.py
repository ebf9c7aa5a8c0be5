"""The ``probes`` subcommands of ParaRel: ``evaluate pararel``, ``train consistency`` and ``pararel-report``
(argparse and checks only; the work is in ``evaluators``)."""

from __future__ import annotations

from pathlib import Path

from probekit.scoring import ALL_RULES
from probes.calls import call
from probes.options import (DEVICE_HELP, MODEL_HELP, Read, Written, WrittenReport, add_force, device, out_file, protocol_options,
                            report_out)



def _evaluate(args) -> int:
    from evaluators.pararel import runs  # noqa: F401  (declares the protocol)

    for run in call("pararel", args):
        macro = run.metrics["macro"]
        print(f"{args.model}: {run.metrics['queries']} queries; N-1 macro " + ", ".join(
            f"{k} {macro[k]['mean']:.3f}" for k in ("Accuracy", "Consistency", "Consistent-Acc")
            if macro.get(k, {}).get("mean") is not None))
    return 0


def _train(args) -> int:
    from evaluators.pararel import runs  # noqa: F401  (declares the protocol)

    for run in call("consistency", args):
        m, selection = run.metrics, run.metrics["selection"]
        weights = [c["consistency_weight"] for c in selection["candidates"]]   # every λ tried, in order
        print(f"λ {selection['consistency_weight']:g} " + ("(fixed)" if selection["fixed"] else
              f"(best validation {selection['metric']} of {', '.join(f'{w:g}' for w in weights)})"))
        value = (lambda stat: "–" if stat["mean"] is None else f"{stat['mean']:.3f}")
        for group in ("train", "validation", "test"):
            if group in m["before"]:
                before, after = m["before"][group]["macro"], m["after"][group]["macro"]
                print(f"{group} relations: " + ", ".join(f"{k} {value(before[k])} -> {value(after[k])}"
                                                         for k in ("Consistency", "Accuracy", "Consistent-Acc")))
    return 0


def _report(args) -> int:
    from evaluators.pararel import report as pararel_report

    out = report_out(args.out, force=args.force)
    out_file(args.plot, "the PNG plot", "--plot", force=args.force)
    pararel_report.write(Path(args.results), out, Path(args.consistency) if args.consistency else None,
                         Path(args.plot) if args.plot else None)
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


def add_commands(sub, evaluate, command, params_help: str) -> None:
    """``pararel`` under ``evaluate``, and ``pararel-report``."""
    ev = command(evaluate, "pararel", "ParaRel: every (pattern, tuple) query scored over its relation's candidate "
                                      "set; Accuracy, Consistency, Consistent-Acc, Succ-Patt, Succ-Objs, Know-Const, "
                                      "Unk-Const per relation and macro-averaged; determinism on N-M relations")
    ev.add_argument("--model", required=True, type=Read, help=MODEL_HELP)
    ev.add_argument("--data", required=True, type=Read, help="a cloze-set folder (probes generate pararel)")
    ev.add_argument("--out", required=True, type=Written, help="folder for predictions.jsonl and metrics.json")
    ev.add_argument("--rule", choices=ALL_RULES,
                    help="the scoring rule (default: the params' scoring.rules for the family)")
    ev.add_argument("--device", default="auto", type=device, help=DEVICE_HELP)
    ev.add_argument("--params", type=Read, help=params_help)
    protocol_options(ev, "pararel", "pararel")
    add_force(ev)
    ev.set_defaults(func=_evaluate)

    rep = command(sub, "pararel-report", "ParaRel results in the layout of the paper's Table 3, the published "
                                         "numbers beside ours where the model id matches")
    rep.add_argument("results", type=Read, help="folder of results/<model>/metrics.json (probes evaluate pararel)")
    rep.add_argument("--out", required=True, type=WrittenReport, help="the markdown report; its JSON is written beside it")
    rep.add_argument("--consistency", help="folder of <model>/metrics.json of probes train consistency: adds "
                                           "the before/after table (paper §8)", type=Read)
    rep.add_argument("--plot", help="PNG: per N-1 relation, Accuracy against Consistency, one colour per model",
                     type=Written)
    add_force(rep)
    rep.set_defaults(func=_report)

    tr = command(sub, "train", "continue training a model")
    tr_sub = tr.add_subparsers(dest="objective", required=True, metavar="OBJECTIVE")
    co = command(tr_sub, "consistency", "ParaRel §8: continue MLM pretraining with L = λ·Lc + L_MLM (Lc: symmetric KL "
                                        "between the candidate distributions of a tuple's patterns) on the params' "
                                        "consistency.train_relations, once per λ of consistency.consistency_weight, "
                                        "keeping the best validation Consistent-Acc (§8.2); ParaRel before and after "
                                        "on the train, validation and test relations")
    co.add_argument("--model", required=True, type=Read, help=MODEL_HELP + " (a masked LM)")
    co.add_argument("--data", required=True, type=Read, help="a cloze-set folder (probes generate pararel)")
    co.add_argument("--out", required=True, help="folder for metrics.json, history.jsonl and the trained model/",
                    type=Written)
    co.add_argument("--device", default="auto", type=device, help=DEVICE_HELP)
    co.add_argument("--params", help=params_help + "; section consistency (λ, lr, epochs, relations, limits)",
                    type=Read)
    protocol_options(co, "consistency", "pararel")
    add_force(co)
    co.set_defaults(func=_train)
