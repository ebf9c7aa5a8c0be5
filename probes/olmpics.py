"""The ``probes`` subcommands of the oLMpics few-shot protocol: ``evaluate features``, ``evaluate curve``,
``evaluate curve-lr``, ``evaluate mcqa`` and ``olmpics-report`` (argparse and checks only; the work is in
``evaluators``)."""

from __future__ import annotations

from probekit.errors import UsageError
from probes.calls import call
from probes.options import (
    DEVICE_HELP,
    MANIFEST_HELP,
    MODEL_HELP,
    Read,
    ReadPath,
    Added,
    Written,
    WrittenPath,
    add_force,
    device,
    out_file,
    out_folder,
    protocol_options,
)



def _features(args) -> int:
    from evaluators.olmpics import runs  # noqa: F401  (declares the protocol)

    for run in call("features", args):
        print(f"wrote {args.out}: features {run.metrics['shape']}")
    return 0


def _curve(args) -> int:
    from evaluators.olmpics import runs  # noqa: F401  (declares the protocol)

    for run in call("curve", args):
        for curve in (run.metrics.values() if len(args.setting) > 1 else [run.metrics]):
            _print_curve(curve)
    return 0


def _curve_lr(args) -> int:
    from evaluators.olmpics import runs  # noqa: F401  (declares the protocol)
    from evaluators.olmpics.lr_selection import describe, summary

    for run in call("curve-lr", args):
        print(f"wrote {run.out}: {run.metrics['model']} {describe(summary(run.metrics))}")
    return 0


def _mcqa(args) -> int:
    from evaluators.olmpics import runs  # noqa: F401  (declares the protocol)

    for run in call("mcqa", args):
        _print_curve(run.metrics)
    return 0


def _print_curve(m: dict) -> None:
    points = ", ".join(f"{n}: {c['mean']:.3f}" for n, c in m["curve"].items())
    sens = "".join(f"; {name} sensitivity {s['value']:.3f}" for name, s in m["sensitivity"].items())
    print(f"{m['model']} {m['probe']} {m['setting']}: {points}; WS {m['WS']['value']:.3f} MAX {m['MAX']['value']:.3f}"
          f" (N={m['MAX']['at_n']})" + sens)


def _olmpics_report(args) -> int:
    out_file(args.out, "the markdown report", force=args.force)
    out_file(args.metrics, "the summary JSON", "--metrics", force=args.force)
    args.plots = out_folder(args.plots, "the plots are written inside it", "--plots", kind="figures", force=args.force)
    from evaluators.olmpics.report import write_olmpics_report
    from evaluators.shared.params import OlmpicsReportParams
    from probekit.params import read_params, section

    rp = section(read_params(args.params), "olmpics_report", OlmpicsReportParams)
    for folder in args.results:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such results folder")
    for path in write_olmpics_report(args.results, out_md=args.out, out_json=args.metrics, plots=args.plots,
                                     resamples=rp.resamples, seed=rp.seed, medals=rp.medals.model_dump()):
        print(f"wrote {path}")
    return 0


def add_commands(sub, evaluate, command, params_help: str) -> None:
    """``features``, ``curve``, ``curve-lr`` and ``mcqa`` under ``evaluate``, and ``olmpics-report``."""
    fe = command(evaluate, "features", "cache a masked LM's hidden states at the masks (or the MLM-BASELINE's "
                                       "GloVe features) of a probe's train and dev splits, for its learning curves")
    cu = command(evaluate, "curve", "MC-MLM learning curve: the encoder frozen, the MLM head (mlp) or its final "
                                    "projection (linear) trained on N examples; WS, MAX, language sensitivity")
    lr = command(evaluate, "curve-lr", "the MC-MLM heads' learning rate for a model's curves: params "
                                       "curve.training.lr as it is, or, a list, the candidate of the highest mean "
                                       "WS on dev over the MC-MLM probes (their original variant, the curve's sizes "
                                       "and first seed)")
    qa = command(evaluate, "mcqa", "MC-QA learning curve: [CLS] stem [SEP] choice [SEP], an MLP on [CLS], the whole "
                                   "network fine-tuned; or the ESIM baseline over GloVe")
    results = "folder for metrics.json, subsets.json, <variant>/predictions.jsonl"
    for c, model, out in ((fe, "; or mlm-baseline", "the features folder to write"),
                          (cu, "; or mlm-baseline (GloVe features, new head)", results),
                          (qa, " (any AutoModel encoder); or esim", results)):
        c.add_argument("--model", required=True, type=Read, help=MODEL_HELP + model)
        c.add_argument("--data", required=c is fe, action="append" if c is not fe else "store", type=Read,
                       help="a probe folder (its original variant and the NO-LANG and PERTURBED controls it has) or "
                            "a variant folder" + ("; once or more (one process for all)" if c is not fe else ""))
        if c is not fe:
            c.add_argument("--release-of", metavar="[SOURCE:]PROBE", action="append",
                           help="train and evaluate on the original release's own train and dev files of PROBE "
                                "(source olmpics) fetched under raw/, as the original's curves do (no controls"
                                + ("" if c is cu else ", no intermediate step") + "); once or more, beside --data; "
                                "{probe}: each of the params' probes." + ("mc_mlm" if c is cu else "mc_qa"))
            c.add_argument("--manifest", type=Read, help=MANIFEST_HELP)
        c.add_argument("--out", required=True, help=out + ("" if c is fe else "; {probe} in it stands for the data "
                                                           "folder's name (required with several --data)"),
                       type=Written)
    cu.add_argument("--setting", required=True, choices=("mlp", "linear"), action="append",
                    help="which part of the head trains; give it twice (--setting mlp --setting linear) for both "
                         "curves from one model load and one set of features, each written to OUT/<setting>")
    cu.add_argument("--lr-selection", type=Read, metavar="FOLDER",
                    help="the folder `probes evaluate curve-lr` wrote for the model: the heads' lr (needed when "
                         "params curve.training.lr lists candidates; checked against the params)")
    lr.add_argument("--model", required=True, type=Read, help=MODEL_HELP)
    lr.add_argument("--data", required=True, action="append", type=Read,
                    help="an MC-MLM probe folder, once or more; data/probes/{probe} for each of the params' "
                         "probes.mc_mlm (its original variant is trained on)")
    lr.add_argument("--out", required=True, type=Written, help="folder for metrics.json: the lr and how it was chosen")
    lr.add_argument("--setting", choices=("mlp", "linear"), action="append",
                    help="the settings whose curves a candidate is judged on (default: both)")
    cu.add_argument("--features", help="features folder: read when it matches the model, data, dtype and the "
                                       "curves' training rows, else computed and written there (probes evaluate "
                                       "features)", type=Added)
    qa.add_argument("--intermediate", metavar="VARIANT",
                    help="fine-tune first on this variant (its train and evaluation splits, or train alone: "
                         "the params' mcqa.intermediate_splits) (default: the params' mcqa.intermediate for the "
                         "probe; '' for none)")

    for c, name in ((fe, "features"), (cu, "curve"), (lr, "curve-lr"), (qa, "mcqa")):
        c.add_argument("--device", default="auto", type=device, help=DEVICE_HELP)
        c.add_argument("--params", type=Read, help=params_help)
        protocol_options(c, name, "olmpics", extra={
            "sizes": "; a masked LM's training features are cached for the rows these curves use" if c is fe else "",
            "dtype": "; features are stored as float32"})
        add_force(c)
    fe.set_defaults(func=_features)
    cu.set_defaults(func=_curve)
    lr.set_defaults(func=_curve_lr)
    qa.set_defaults(func=_mcqa)

    rep = command(sub, "olmpics-report", "the oLMpics paper's tables (per probe; medals) and learning-curve plots "
                                         "from curve and MC-QA results, with bootstrap confidence intervals")
    rep.add_argument("results", nargs="+", type=ReadPath, help="folders searched for the curves' metrics.json")
    rep.add_argument("--out", type=WrittenPath, required=True, help="the markdown report to write")
    rep.add_argument("--metrics", type=WrittenPath, help="also write the summary for `dvc metrics` to this JSON file")
    rep.add_argument("--plots", type=Written, help="also write <probe>.png and <probe>.json (dvc plots) here")
    rep.add_argument("--params", type=Read, help=params_help + "; section olmpics_report")
    add_force(rep)
    rep.set_defaults(func=_olmpics_report)
