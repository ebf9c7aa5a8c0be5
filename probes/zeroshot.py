"""``probes evaluate zeroshot`` (MC-MLM for masked LMs, the log-likelihood rules for causal and seq2seq LMs),
``probes audit`` (how each answer word is tokenized) and ``probes report`` (the zero-shot report). Argparse and
checks only; the work is in :mod:`evaluators`."""

from __future__ import annotations

from pathlib import Path

from probekit.errors import UsageError, shown
from probes import olmpics as cli_curves
from probes.options import (
    DEVICE_HELP,
    MANIFEST_HELP,
    MODEL_HELP,
    PARAMS_HELP,
    add_force,
    batch_size,
    device,
    given,
    manifest_of,
    out_file,
    out_folder,
    positive,
)


def _data_path(args, data: str | None, release_of: str | None, split: str) -> tuple[Path, str | None]:
    """The file or folder to read: ``--data`` as given, or the release file of ``--release-of [SOURCE:]PROBE``
    for ``split`` (found through the manifest); also the probe of a release. It must exist."""
    probe = None
    if release_of:
        from probekit.sources.manifest import load_manifest, release_file

        manifest = manifest_of(args)
        source, probe = release_of.split(":", 1) if ":" in release_of else ("olmpics", release_of)
        entries = load_manifest(manifest)
        if source not in entries:
            raise UsageError(f"--release-of {release_of}: no source {shown(source)} in {manifest}")
        try:
            data = manifest.parent / source / release_file(entries, source, probe, split).path
        except KeyError as exc:
            raise UsageError(f"--release-of {release_of}: {exc.args[0]}") from None
    if data is None:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE")
    if not Path(data).exists():
        hint = f" (fetch it first: probes sources fetch {source})" if release_of else ""
        raise UsageError(f"--data {data}: no such file or folder{hint}")
    return Path(data), probe


def _evaluate(args) -> int:
    from evaluators.params import ZeroshotParams
    from probekit.params import read_params, section
    from probekit.probes.dataset import read_split

    params = read_params(args.params)
    zs = section(params, "zeroshot", ZeroshotParams)  # what the command line leaves out
    split = args.split or zs.split
    limit = given(args.limit, zs.limit)
    sources = [(d, None) for d in args.data or ()] + [(None, r) for r in args.release_of or ()]
    if not sources:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE (once or more)")
    found = [_data_path(args, data, release_of, split) for data, release_of in sources]
    targets = cli_curves.outs_for(args.out, [probe or path.name for path, probe in found],
                                  force=args.force)
    # output folder -> (data, probe of a release file, {variant: (path, examples)})
    inputs = {t: (path, probe, read_split(path, split, limit)) for t, (path, probe) in zip(targets, found)}

    from probekit.tokens.refs import resolve_model

    ref = resolve_model(args.model, params.models(), params.label)
    from evaluators import applies

    if applies.skip("zeroshot", ref, args.device, targets, params):
        return 0
    from evaluators.engine.kept_models import scoring_lm
    from evaluators.olmpics import zeroshot

    loaded = scoring_lm(ref, scoring=args.scoring or zs.scoring, device=args.device, seed=given(args.seed, zs.seed),
                        dtype=args.dtype or zs.dtype)
    if args.multi_token and loaded.family != "mlm":
        raise UsageError("--multi-token applies to the mask-logit rule of masked LMs only")
    rule = args.rule or getattr(zs.rules, loaded.family)
    for target, (data, probe, datasets) in inputs.items():
        results = zeroshot.run(loaded, datasets, target, split=split, rule=rule,
                               batch_size=args.batch_size or zs.batch_size, limit=limit,
                               multi_token=args.multi_token or zs.multi_token, probe=probe)
        for variant, m in results.items():
            flag = "" if m["zero_shot"] else "  (LM head newly initialised: not a zero-shot result)"
            name = Path(data).name + (f"/{variant}" if variant and len(inputs) > 1 else "")
            print(f"{args.model} {variant if len(inputs) == 1 and variant else name}: accuracy "
                  f"{m['accuracy']:.3f} on {m['n']}{flag}")
    return 0


def _audit(args) -> int:
    from probekit import atomic
    from probekit.params import read_params
    from probekit.probes.dataset import read_split

    out = out_file(args.out, "the markdown report", beside=".json")
    sources = [(d, None) for d in args.data or ()] + [(None, r) for r in args.release_of or ()]
    if not sources:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE (once or more)")
    datasets = {}
    for data, release_of in sources:
        for path, examples in read_split(_data_path(args, data, release_of, args.split)[0], args.split).values():
            if str(path) in datasets:
                raise UsageError(f"{path}: given twice")
            datasets[str(path)] = examples
    if len(set(args.model)) != len(args.model):
        raise UsageError(f"--model: {', '.join(sorted({m for m in args.model if args.model.count(m) > 1}))} "
                         f"given twice")
    params = read_params(args.params)

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
    out_file(args.out, "the markdown report")
    out_file(args.metrics, "the summary JSON", "--metrics")
    out_file(args.plot, "the PNG plot", "--plot")
    args.heatmaps = out_folder(args.heatmaps, "the heatmaps are written inside it", "--heatmaps", force=args.force)
    from evaluators import report
    from evaluators.olmpics import heatmap

    for path in report.run(args.results, out=args.out, metrics=args.metrics, plot=args.plot):
        print(f"wrote {path}")
    if args.heatmaps:
        for path in heatmap.run(args.results, args.heatmaps):
            print(f"wrote {path}")
    return 0


def add_evaluate(ev_sub, command) -> None:
    """``probes evaluate zeroshot``."""
    zs = command(ev_sub, "zeroshot", "zero-shot multiple choice: MC-MLM for masked LMs, log-likelihood rules for "
                                     "causal and seq2seq LMs")
    zs.add_argument("--model", required=True,
                    help=MODEL_HELP)
    zs.add_argument("--data", action="append",
                    help="a probe folder, a variant folder, or an original oLMpics jsonl file; once or more")
    zs.add_argument("--release-of", metavar="[SOURCE:]PROBE", action="append",
                    help="evaluate the original release file of PROBE (source olmpics) fetched under raw/; once or "
                         "more. With several --data / --release-of, the model is loaded once and each is written "
                         "to --out with {probe} replaced by the folder's name or the probe")
    zs.add_argument("--split", help="which <split>.jsonl to read (default: the params' zeroshot.split, else dev)")
    zs.add_argument("--out", required=True, help="folder for predictions.jsonl and metrics.json (per variant); "
                                                  "{probe} in it stands for each --data folder's name or --release-of "
                                                  "probe (required with several)")
    zs.add_argument("--scoring", choices=("auto", "mlm", "causal", "seq2seq"),
                    help="the model's family, which picks the scoring rules (default: the params' zeroshot.scoring, "
                         "else auto: from the model's config)")
    zs.add_argument("--rule", choices=("mask-logit", "pll", "pll-statement", "statement", "choice", "harness",
                                       "sentinel"),
                    help="mlm: mask-logit (MC-MLM, default), pll (the choice's tokens) or pll-statement (the "
                         "whole statement); causal: statement (default), choice or harness (lm-evaluation-harness's "
                         "context + choice); seq2seq: sentinel (T5, default) or statement (BART, default); defaults "
                         "come from the params' zeroshot.rules")
    zs.add_argument("--batch-size", type=batch_size,
                    help="rows per forward pass, or auto: 64 on a CPU, the largest that fits on a GPU (default: the "
                         "params' zeroshot.batch_size, else auto); scores do not depend on it")
    zs.add_argument("--device", default="auto", type=device, help=DEVICE_HELP)
    zs.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"),
                    help="weights' dtype; auto: bfloat16 on a GPU or CPU with native bf16, else float32 (default: "
                         "the params' zeroshot.dtype, else float32)")
    zs.add_argument("--limit", type=positive, help="only the first N examples of each file (smoke tests)")
    zs.add_argument("--multi-token", choices=("error", "first"),
                    help="mask-logit: a choice that is not one token is refused, or scored by its first token")
    zs.add_argument("--seed", type=int, help="seeds a newly initialised LM head (default: the params' zeroshot.seed)")
    zs.add_argument("--params", help=PARAMS_HELP)
    zs.add_argument("--manifest", help=MANIFEST_HELP)
    add_force(zs)
    zs.set_defaults(func=_evaluate)


def add_commands(sub, command) -> None:
    """``probes audit`` and ``probes report``."""
    aud = command(sub, "audit", "how each answer word is tokenized in context per model, and the examples "
                                "mask-logit's single-token rule leaves (loads tokenizers only)")
    aud.add_argument("--model", action="append", required=True,
                     help=MODEL_HELP + "; "
                          "repeat it to compare models on the examples all of them can score")
    aud.add_argument("--data", action="append",
                     help="a probe folder, a variant folder, or an oLMpics jsonl file of MC-MLM data (repeatable)")
    aud.add_argument("--release-of", action="append", metavar="[SOURCE:]PROBE",
                     help="also audit the original release file of PROBE fetched under raw/ (repeatable)")
    aud.add_argument("--split", default="dev", help="which <split>.jsonl to read")
    aud.add_argument("--out", required=True, help="markdown report to write (FILE.json beside it too)")
    aud.add_argument("--params", help=PARAMS_HELP)
    aud.add_argument("--manifest", help=MANIFEST_HELP)
    aud.set_defaults(func=_audit)

    rep = command(sub, "report", "tables and plots of the results; writes only the paths given")
    rep.add_argument("results", nargs="+", type=Path, help="folders searched for metrics.json")
    rep.add_argument("--out", type=Path, required=True, help="the markdown report to write")
    rep.add_argument("--metrics", type=Path, help="also write the summary for `dvc metrics` to this JSON file")
    rep.add_argument("--plot", type=Path, help="also write the accuracy bar plot to this PNG file")
    rep.add_argument("--heatmaps", help="also write per-model heatmaps of two-number probes "
                                                   "(Fig. 2A/3) into this folder")
    add_force(rep)
    rep.set_defaults(func=_report)
