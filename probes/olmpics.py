"""The ``probes`` subcommands of the oLMpics few-shot protocol: ``evaluate features``, ``evaluate curve``,
``evaluate mcqa`` and ``olmpics-report`` (argparse and checks only; the work is in ``evaluators``)."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Sequence

from probekit import outputs
from probekit.errors import UsageError, shown
from probes.options import DEVICE_HELP, MODEL_HELP, add_force, device, out_file, out_folder

ESIM = "esim"  # evaluators.olmpics.mcqa.ESIM, named here so that no model module is imported to parse arguments


def _sizes(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {shown(text)}") from None
    if not values or min(values) < 1 or values != sorted(set(values)):
        raise argparse.ArgumentTypeError(f"expected increasing positive integers, got {shown(text)}")
    return values


def _seeds(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {shown(text)}") from None
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct integers, got {shown(text)}")
    return values


def outs_for(out: str, names: list[str], *, force: bool = False, within: Sequence[str] = ()) -> list[Path]:
    """The output folder of each input of one command (``evaluate zeroshot``, ``curve``, ``mcqa``): ``{probe}`` in
    ``out`` stands for the input's name (a data folder's name, or a release file's probe) and is required with
    several (one process, one model or GloVe load, for all of them). ``within``: the subfolders the command
    replaces inside each (the curve's settings), which are what must be ours; the folder itself is only written
    into."""
    outputs.not_empty(out)
    if len(names) > 1 and "{probe}" not in out:
        raise UsageError(f"--out {out}: with several inputs (--data, --release-of), put {{probe}} in it "
                         f"(e.g. results/curve/M/{{probe}})")
    outs = [Path(out.replace("{probe}", name)) for name in names]
    if len(set(outs)) != len(outs):
        raise UsageError(f"--out {out}: two inputs would be written to the same folder")
    for path in outs:
        out_folder(path, "the results are written inside it", force=force, replaced=not within)
        for sub in within:
            out_folder(path / sub, "the results are written inside it", force=force)
    return outs


def _targets(args, within: Sequence[str] = ()) -> list[tuple[Path, Path]]:
    """``(data, out)`` per ``--data``; ``within``: as :func:`outs_for`."""
    datas = [Path(d) for d in args.data]
    return list(zip(datas, outs_for(args.out, [d.name for d in datas], force=args.force, within=within)))


def _loader(args, params, zs, protocol: str, outs):
    """A function loading ``--model`` as a masked LM (resolved now: a bad name fails before any work); None when
    the model is not a masked LM: ``protocol`` is then skipped, its ``outs`` written as skipped (said once)."""
    from evaluators import applies
    from probekit.tokens.refs import resolve_model

    ref = resolve_model(args.model, params.models(), params.label)
    if applies.skip(protocol, ref, args.device, outs, params):
        return None

    def load():
        from evaluators.engine.kept_models import scoring_lm

        return scoring_lm(ref, scoring="mlm", device=args.device, seed=zs.seed, dtype=args.dtype or zs.dtype)

    return load


def _features(args) -> int:
    out_folder(args.out, "the features are written inside it", force=args.force)
    from evaluators.olmpics import mc_mlm as mlm_curve
    from evaluators.params import CurveParams, ZeroshotParams
    from probekit.params import read_params, section

    params = read_params(args.params)
    zs, cp = section(params, "zeroshot", ZeroshotParams), section(params, "curve", CurveParams)
    load = None
    if args.model != mlm_curve.MLM_BASELINE:
        load = _loader(args, params, zs, "features", [Path(args.out)])
        if load is None:
            return 0
    shape = mlm_curve.cache_features(model=args.model, data=Path(args.data), features_dir=Path(args.out),
                                     split=args.split or cp.split, load=load, glove=args.glove or cp.glove,
                                     device=args.device, batch_size=args.batch_size or zs.batch_size,
                                     multi_token=zs.multi_token, sizes=args.sizes or cp.sizes,
                                     seeds=args.seeds or cp.seeds)
    print(f"wrote {args.out}: features {shape}")
    return 0


def _curve(args) -> int:
    targets = _targets(args, within=args.setting if len(args.setting) > 1 else ())   # each setting its folder
    if args.features is not None:
        outputs.not_empty(args.features, "--features")
    if args.features and len(targets) > 1 and "{probe}" not in args.features:
        raise UsageError(f"--features {args.features}: with several --data, put {{probe}} in it")
    features = {data: out_folder(args.features.replace("{probe}", data.name) if args.features else None,
                                 "the features are cached inside it", "--features", force=args.force)
                for data, _ in targets}
    from evaluators.olmpics import mc_mlm as mlm_curve
    from evaluators.params import CurveParams, MlmBaselineParams, ZeroshotParams
    from probekit.params import read_params, section

    params = read_params(args.params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    zs, cp = section(params, "zeroshot", ZeroshotParams), section(params, "curve", CurveParams)
    baseline = args.model == mlm_curve.MLM_BASELINE
    # MLM-BASELINE trains as the original mlm_baseline.jsonnet (section mlm_baseline), the LMs' heads as theirs
    hp = section(params, "mlm_baseline", MlmBaselineParams) if baseline else cp.training
    settings = args.setting if len(args.setting) > 1 else args.setting[0]
    load = None
    if not baseline:
        outs = [out / s for _, out in targets for s in settings] if isinstance(settings, list) else \
            [out for _, out in targets]
        load = _loader(args, params, zs, "curve", outs + [f for f in features.values() if f is not None])
        if load is None:
            return 0
        load = functools.cache(load)  # once
    for data, out in targets:
        m = mlm_curve.run(model=args.model, data=data, out=out, setting=settings,
                          sizes=args.sizes or cp.sizes, seeds=args.seeds or cp.seeds, hp=hp,
                          split=args.split or cp.split, features_dir=features[data], load=load,
                          glove=args.glove or cp.glove, device=args.device,
                          batch_size=args.batch_size or zs.batch_size, multi_token=zs.multi_token, profile=profile)
        for curve in (m.values() if isinstance(settings, list) else [m]):
            _print_curve(curve)
    return 0


def _mcqa(args) -> int:
    from evaluators.params import McqaParams
    from probekit.params import read_params, section
    from probekit.tokens.refs import resolve_model

    targets = _targets(args)
    params = read_params(args.params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    mp = section(params, "mcqa", McqaParams)
    esim = args.model == ESIM
    model = args.model if esim else resolve_model(args.model, params.models(), params.label)
    hp = mp.esim_training if esim else mp.training
    from evaluators import applies

    if not esim and applies.skip("mcqa", model, args.device, [out for _, out in targets], params):
        return 0
    from evaluators.olmpics import mcqa

    for data, out in targets:
        intermediate = args.intermediate if args.intermediate is not None else mp.intermediate.get(data.name)
        m = mcqa.run(model=model, data=data, out=out, sizes=args.sizes or mp.sizes,
                     seeds=args.seeds or mp.seeds, hp=hp, split=args.split or mp.split,
                     intermediate=intermediate or None, intermediate_limit=mp.intermediate_limit,
                     intermediate_splits=mp.intermediate_splits,
                     glove=args.glove or mp.glove, device=args.device, profile=profile)
        _print_curve(m)
    return 0


def _print_curve(m: dict) -> None:
    points = ", ".join(f"{n}: {c['mean']:.3f}" for n, c in m["curve"].items())
    sens = "".join(f"; {name} sensitivity {s['value']:.3f}" for name, s in m["sensitivity"].items())
    print(f"{m['model']} {m['probe']} {m['setting']}: {points}; WS {m['WS']['value']:.3f} MAX {m['MAX']['value']:.3f}"
          f" (N={m['MAX']['at_n']})" + sens)


def _olmpics_report(args) -> int:
    out_file(args.out, "the markdown report")
    out_file(args.metrics, "the summary JSON", "--metrics")
    args.plots = out_folder(args.plots, "the plots are written inside it", "--plots", force=args.force)
    from evaluators.olmpics.report import write_olmpics_report
    from evaluators.params import OlmpicsReportParams
    from probekit.params import read_params, section

    rp = section(read_params(args.params), "olmpics_report", OlmpicsReportParams)
    for folder in args.results:
        if not folder.is_dir():
            raise UsageError(f"{folder}: no such results folder")
    for path in write_olmpics_report(args.results, out_md=args.out, out_json=args.metrics, plots=args.plots,
                                     resamples=rp.resamples, seed=rp.seed, medals=rp.medals):
        print(f"wrote {path}")
    return 0


def add_commands(sub, evaluate, command, params_help: str) -> None:
    """``features``, ``curve`` and ``mcqa`` under ``evaluate``, and ``olmpics-report``."""
    fe = command(evaluate, "features", "cache a masked LM's hidden states at the masks (or the MLM-BASELINE's "
                                       "GloVe features) of a probe's train and dev splits, for its learning curves")
    cu = command(evaluate, "curve", "MC-MLM learning curve: the encoder frozen, the MLM head (mlp) or its final "
                                    "projection (linear) trained on N examples; WS, MAX, language sensitivity")
    qa = command(evaluate, "mcqa", "MC-QA learning curve: [CLS] stem [SEP] choice [SEP], an MLP on [CLS], the whole "
                                   "network fine-tuned; or the ESIM baseline over GloVe")
    results = "folder for metrics.json, subsets.json, <variant>/predictions.jsonl"
    for c, model, out in ((fe, "; or mlm-baseline", "the features folder to write"),
                          (cu, "; or mlm-baseline (GloVe features, new head)", results),
                          (qa, " (any AutoModel encoder); or esim", results)):
        c.add_argument("--model", required=True, help=MODEL_HELP + model)
        c.add_argument("--data", required=True, action="append" if c is not fe else "store",
                       help="a probe folder (its original variant and the NO-LANG and PERTURBED controls it has) or "
                            "a variant folder" + ("; once or more (one process for all)" if c is not fe else ""))
        c.add_argument("--out", required=True, help=out + ("" if c is fe else "; {probe} in it stands for the data "
                                                           "folder's name (required with several --data)"))
    cu.add_argument("--setting", required=True, choices=("mlp", "linear"), action="append",
                    help="which part of the head trains; give it twice (--setting mlp --setting linear) for both "
                         "curves from one model load and one set of features, each written to OUT/<setting>")
    cu.add_argument("--features", help="features folder: read when it matches the model, data, dtype and the "
                                       "curves' training rows, else computed and written there (probes evaluate "
                                       "features)")
    qa.add_argument("--intermediate", metavar="VARIANT",
                    help="fine-tune first on this variant (its train and evaluation splits, or train alone: "
                         "the params' mcqa.intermediate_splits) (default: the params' mcqa.intermediate for the "
                         "probe; '' for none)")

    for c in (fe, cu, qa):
        c.add_argument("--split", help="the evaluation split (default: the params' section's split, else dev)")
        c.add_argument("--device", default="auto", type=device, help=DEVICE_HELP)
        c.add_argument("--glove", help="GloVe vectors of the baselines: pkg:<package> or a GloVe text file "
                                       "(default: the params' section's glove)")
        c.add_argument("--params", help=params_help)
    for c in (fe, cu, qa):
        c.add_argument("--sizes", type=_sizes, help="training sizes N, e.g. 62,125,250,500,1000,2000,4000 "
                                                    "(default: the params' section's sizes)" +
                       ("; a masked LM's training features are cached for the rows these curves use" if c is fe
                        else ""))
        c.add_argument("--seeds", type=_seeds, help="seeds, e.g. 1,2,3 (default: the params' section's seeds)")
    for c in (fe, cu):
        c.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"),
                       help="the encoder's dtype (default: the params' zeroshot.dtype); features are stored "
                            "as float32")
        c.add_argument("--batch-size", type=lambda t: t if t == "auto" else int(t),
                       help="rows per encoder pass (default: the params' zeroshot.batch_size)")
    for c in (fe, cu, qa):
        add_force(c)
    fe.set_defaults(func=_features)
    cu.set_defaults(func=_curve)
    qa.set_defaults(func=_mcqa)

    rep = command(sub, "olmpics-report", "the oLMpics paper's tables (per probe; medals) and learning-curve plots "
                                         "from curve and MC-QA results, with bootstrap confidence intervals")
    rep.add_argument("results", nargs="+", type=Path, help="folders searched for the curves' metrics.json")
    rep.add_argument("--out", type=Path, required=True, help="the markdown report to write")
    rep.add_argument("--metrics", type=Path, help="also write the summary for `dvc metrics` to this JSON file")
    rep.add_argument("--plots", help="also write <probe>.png and <probe>.json (dvc plots) here")
    rep.add_argument("--params", help=params_help + "; section olmpics_report")
    add_force(rep)
    rep.set_defaults(func=_olmpics_report)
