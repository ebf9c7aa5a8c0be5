"""``probes evaluate zeroshot`` (MC-MLM for masked LMs, the log-likelihood rules for causal and seq2seq LMs),
``probes audit`` (how each answer word is tokenized) and ``probes report`` (the zero-shot report). Argparse and
checks only; the work is in :mod:`evaluators`."""

from __future__ import annotations

from probekit.errors import UsageError
from probekit.scoring import ALL_RULES
from probes.calls import call
from probes.options import (
    DEVICE_HELP,
    MANIFEST_HELP,
    MODEL_HELP,
    PARAMS_HELP,
    Read,
    ReadPath,
    Written,
    WrittenReport,
    WrittenPath,
    add_force,
    device,
    out_file,
    out_folder,
    protocol_options,
)


def _evaluate(args) -> int:
    from evaluators.olmpics import runs  # noqa: F401  (declares the protocol)

    runs = call("zeroshot", args)
    for run in runs:
        for variant, m in run.metrics.items():
            flag = "" if m["zero_shot"] else "  (LM head newly initialised: not a zero-shot result)"
            name = run.data.name + (f"/{variant}" if variant and len(runs) > 1 else "")
            print(f"{args.model} {variant if len(runs) == 1 and variant else name}: accuracy "
                  f"{m['accuracy']:.3f} on {m['n']}{flag}")
    return 0


def _audit(args) -> int:
    from evaluators.shared.calls import each_probe
    from evaluators.olmpics.runs import data_path, released
    from probekit.outputs import atomic
    from probekit.params import read_params
    from probekit.probes.dataset import read_split

    out = out_file(args.out, "the markdown report", beside=".json", force=args.force)
    params = read_params(args.params)
    if args.split is None:
        from evaluators.shared.params import ZeroshotParams
        from probekit.params import section

        args.split = section(params, "zeroshot", ZeroshotParams).split
    releases = released(each_probe(args.release_of, params, "mc_mlm", "--release-of"), args.split, args.manifest,
                        args.release_of or ())
    sources = ([(d, None) for d in each_probe(args.data, params, "mc_mlm", "--data")]
               + [(None, r) for r in releases])
    if not sources:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE (once or more)")
    datasets = {}
    for data, release_of in sources:
        for path, examples in read_split(data_path(data, release_of, args.split, args.manifest)[0],
                                         args.split).values():
            if str(path) in datasets:
                raise UsageError(f"{path}: given twice")
            datasets[str(path)] = examples
    if len(set(args.model)) != len(args.model):
        raise UsageError(f"--model: {', '.join(sorted({m for m in args.model if args.model.count(m) > 1}))} "
                         f"given twice")

    from probekit.tokens.refs import resolve_model

    refs = [resolve_model(name, params.models(), params.label, needs="tokenizer") for name in args.model]

    import transformers

    from evaluators.engine import audit

    transformers.logging.set_verbosity_error()
    tokenizers = {}
    for ref in refs:
        tokenizer = transformers.AutoTokenizer.from_pretrained(ref.location, **ref.pinned)
        if not tokenizer.is_fast:
            raise UsageError(f"--model {ref.name}: a fast tokenizer is needed (offsets locate the word in context)")
        tokenizers[ref.name] = tokenizer
    result = audit.audit(tokenizers, datasets)
    atomic.write_text(out, audit.markdown(result, args.split))
    atomic.write_json(out.with_suffix(".json"), {
        "split": args.split, "datasets": result,
        "models": {ref.name: {"spec": ref.spec, "revision": ref.revision,
                              "tokenizer": type(tokenizers[ref.name]).__name__} for ref in refs}})
    for label, d in result.items():
        print(f"{label}: {d['examples']} examples; eligible "
              + ", ".join(f"{name} {m['counts']['eligible']}" for name, m in d["models"].items())
              + f"; for all models {d['eligible_all']['n']}")
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


def _report(args) -> int:
    out_file(args.out, "the markdown report", force=args.force)
    out_file(args.metrics, "the summary JSON", "--metrics", force=args.force)
    out_file(args.plot, "the PNG plot", "--plot", force=args.force)
    out_file(args.size_matrix, "the Table 4 report", "--size-matrix", beside=".json", force=args.force)
    args.heatmaps = out_folder(args.heatmaps, "the heatmaps are written inside it", "--heatmaps", kind="figures",
                               force=args.force)
    from evaluators.shared import report
    from evaluators.olmpics import heatmap

    for path in report.run(args.results, out=args.out, metrics=args.metrics, plot=args.plot):
        print(f"wrote {path}")
    if args.heatmaps:
        for path in heatmap.run(args.results, args.heatmaps):
            print(f"wrote {path}")
    if args.size_matrix:
        from evaluators.olmpics import size_matrix

        for path in size_matrix.write(args.results, args.size_matrix):
            print(f"wrote {path}")
    return 0


def add_evaluate(ev_sub, command) -> None:
    """``probes evaluate zeroshot``."""
    zs = command(ev_sub, "zeroshot", "zero-shot multiple choice: MC-MLM for masked LMs, log-likelihood rules for "
                                     "causal and seq2seq LMs")
    zs.add_argument("--model", required=True, type=Read,
                    help=MODEL_HELP)
    zs.add_argument("--data", action="append", type=Read,
                    help="a probe folder, a variant folder, or an original oLMpics jsonl file; once or more")
    zs.add_argument("--release-of", metavar="[SOURCE:]PROBE", action="append",
                    help="evaluate the original release file of PROBE (source olmpics) fetched under raw/; once or "
                         "more. With several --data / --release-of, the model is loaded once and each is written "
                         "to --out with {probe} replaced by the folder's name or the probe")
    zs.add_argument("--out", required=True, help="folder for predictions.jsonl and metrics.json (per variant); "
                                                  "{probe} in it stands for each --data folder's name or --release-of "
                                                  "probe (required with several)", type=Written)
    zs.add_argument("--rule", choices=ALL_RULES,
                    help="mlm: mask-logit (MC-MLM, default), pll (the choice's tokens) or pll-statement (the "
                         "whole statement); causal: statement (default), choice or harness (lm-evaluation-harness's "
                         "context + choice); seq2seq: sentinel (T5, default) or statement (BART, default); defaults "
                         "come from the params' scoring.rules")
    zs.add_argument("--device", default="auto", type=device, help=DEVICE_HELP)
    zs.add_argument("--params", type=Read, help=PARAMS_HELP)
    zs.add_argument("--manifest", type=Read, help=MANIFEST_HELP)
    protocol_options(zs, "zeroshot", "olmpics")
    add_force(zs)
    zs.set_defaults(func=_evaluate)


def add_commands(sub, command) -> None:
    """``probes audit`` and ``probes report``."""
    aud = command(sub, "audit", "how each answer word is tokenized in context per model, and the examples "
                                "mask-logit's single-token rule leaves (loads tokenizers only)")
    aud.add_argument("--model", action="append", required=True, type=Read,
                     help=MODEL_HELP + "; "
                          "repeat it to compare models on the examples all of them can score")
    aud.add_argument("--data", action="append", type=Read,
                     help="a probe folder, a variant folder, or an oLMpics jsonl file of MC-MLM data (repeatable)")
    aud.add_argument("--release-of", action="append", metavar="[SOURCE:]PROBE",
                     help="also audit the original release file of PROBE fetched under raw/ (repeatable)")
    aud.add_argument("--split", help="which <split>.jsonl to read (default: the params' zeroshot.split, else dev)")
    aud.add_argument("--out", required=True, type=WrittenReport, help="markdown report to write (FILE.json beside it too)")
    aud.add_argument("--params", type=Read, help=PARAMS_HELP)
    aud.add_argument("--manifest", type=Read, help=MANIFEST_HELP)
    add_force(aud)
    aud.set_defaults(func=_audit)

    rep = command(sub, "report", "tables and plots of the results; writes only the paths given")
    rep.add_argument("results", nargs="+", type=ReadPath, help="folders searched for metrics.json")
    rep.add_argument("--out", type=WrittenPath, required=True, help="the markdown report to write")
    rep.add_argument("--metrics", type=WrittenPath, help="also write the summary for `dvc metrics` to this JSON file")
    rep.add_argument("--plot", type=WrittenPath, help="also write the accuracy bar plot to this PNG file")
    rep.add_argument("--heatmaps", type=Written, help="also write per-model heatmaps of two-number probes "
                                                   "(Fig. 2A/3) into this folder")
    rep.add_argument("--size-matrix", type=WrittenReport, help="also write oLMpics Table 4, the matrix of each "
                     "zero-shot OBJECTS COMPARISON result on data built with `matrix`, beside the paper's, to this "
                     "markdown file (FILE.json beside it too)")
    add_force(rep)
    rep.set_defaults(func=_report)
