"""The ``probes`` subcommands of CALUM: ``evaluate calum`` and ``calum-report`` (argparse and checks only; the
work is in ``evaluators.calum.runs`` through :func:`evaluators.evaluate`, and ``evaluators.calum.report``)."""

from __future__ import annotations

from pathlib import Path

from probes.calls import call
from probes.options import MODEL_HELP, Read, Written, WrittenReport, add_force, device, out_file, protocol_options, report_out


def _evaluate(args) -> int:
    def cells(s: dict) -> str:
        return ", ".join(f"{k} {100 * s[k]['mean']:.1f}" + (f"±{100 * s[k]['std']:.1f}" if s[k]["std"] else "")
                         for k in ("accuracy", "C_R", "C_S", "C_sym") if k in s)

    from evaluators.calum import runs  # noqa: F401  (declares the protocol)

    for run in call("calum", args):
        m = run.metrics
        test = m.get("test")
        print(f"{args.model} {args.task} ({m['setting']}, {len(m['per_seed'])} seed(s), {m['split']}): {cells(m)}; "
              f"majority class {100 * m['majority']:.1f}" + (f"; {test['split']}: {cells(test)}" if test else ""))
    return 0


def _report(args) -> int:
    from evaluators.calum import report as calum_report

    out = report_out(args.out, force=args.force)
    out_file(args.plot, "the PNG plot", "--plot", force=args.force)
    calum_report.write(Path(args.results), out, Path(args.plot) if args.plot else None)
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


def add_commands(sub, evaluate, command, params_help: str) -> None:
    """``calum`` under ``evaluate``, and ``calum-report``."""
    ev = command(evaluate, "calum", "CALUM: fine-tune a sequence classifier on a task's original training split "
                                    "(early stopping on validation accuracy), predict every variant of the "
                                    "validation split (and a drawn test split, calum_eval.evaluate_test); accuracy, "
                                    "C_R, C_S (C_sym) per seed and mean ± std. T5 runs text-to-text as the paper "
                                    "(calum_eval.seq2seq, text_to_text)")
    ev.add_argument("--model", required=True, type=Read, help=MODEL_HELP + " (any AutoModelForSequenceClassification)")
    ev.add_argument("--task", required=True, help="the main task: rte, mrpc, qnli, qqp, mnli, ...")
    ev.add_argument("--data", default="data/calum", help="the task's dataset (probes generate calum --task T) or "
                                                         "a folder of them, <task>/ each (default: data/calum)",
                    type=Read)
    ev.add_argument("--out", required=True, help="folder for predictions.jsonl, metrics.json, history.jsonl, model/",
                    type=Written)
    ev.add_argument("--multitask", metavar="GROUP", help="train MT-DNN-style on the main task and the tasks of "
                                                         "this calum_eval.multitask group (e.g. Para, All)")
    ev.add_argument("--device", default="auto", type=device,
                    help="cpu, cuda (every visible GPU), cuda:1, ..., or auto (cuda when torch sees a GPU, else cpu)")
    ev.add_argument("--params", type=Read, help=params_help + "; section calum_eval (the paper's settings by default)")
    protocol_options(ev, "calum", "calum")
    add_force(ev)
    ev.set_defaults(func=_evaluate)

    rep = command(sub, "calum-report", "CALUM results in the layout of the paper's Table 2 (and Table 6 for "
                                       "multitask runs), the published numbers beside ours where the model id "
                                       "matches")
    rep.add_argument("results", type=Read, help="folder of <run>/metrics.json (probes evaluate calum)")
    rep.add_argument("--out", required=True, type=WrittenReport, help="the markdown report; its JSON is written beside it")
    rep.add_argument("--plot", type=Written, help="PNG: C_R and C_S per task and model")
    add_force(rep)
    rep.set_defaults(func=_report)
