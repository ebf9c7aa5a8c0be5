"""The oLMpics protocols, each declared on its run (:mod:`evaluators.protocols`), as :func:`evaluators.evaluate` runs
them: zero-shot MC, the MC-MLM features and learning curves, MC-QA (and the tokenization audit, a command of its
own). Each reads its params sections, its call's options over them (:meth:`evaluators.protocols.Protocol.settings`),
checks its inputs and output folders before any work, writes the skipped ``metrics.json`` for a model it does not
apply to, loads the model once for every dataset and returns a :class:`evaluators.shared.calls.Run` per output
folder."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Sequence

from evaluators import protocols
from evaluators.protocols import declare, protocol
from evaluators.shared.calls import Run, each_probe, listed, params_file
from evaluators.shared.params import (CurveParams, McqaParams, MlmBaselineParams, ScoringParams,
                                      ZeroshotParams)
from probekit import outputs
from probekit.outputs import atomic
from probekit.device import resolve_device
from probekit.errors import UsageError, shown
from probekit.outputs.paths import out_folder
from probekit.params import ParamsFile

log = logging.getLogger("probekit")
ESIM = "esim"   # evaluators.olmpics.mcqa.ESIM, named here so that checking a call's inputs imports no model module
MLM_BASELINE = "mlm-baseline"   # evaluators.olmpics.mc_mlm_curve.MLM_BASELINE, likewise


def outs_for(out: str | Path, names: list[str], *, force: bool = False, within: Sequence[str] = ()) -> list[Path]:
    """The output folder of each input of one run (zero-shot, curve, MC-QA): ``{probe}`` in ``out`` stands for the
    input's name (a data folder's name, or a release file's probe) and is required with several (one process, one
    model or GloVe load, for all of them). ``within``: the subfolders the run replaces inside each (the curve's
    settings), which are what must be ours; the folder itself is only written into."""
    out = str(out)
    outputs.not_empty(out)
    if len(names) > 1 and "{probe}" not in out:
        raise UsageError(f"--out {out}: with several inputs (--data, --release-of), put {{probe}} in it "
                         f"(e.g. results/curve/M/{{probe}})")
    outs = [Path(out.replace("{probe}", name)) for name in names]
    if len(set(outs)) != len(outs):
        raise UsageError(f"--out {out}: two inputs would be written to the same folder")
    for path in outs:
        out_folder(path, "the results are written inside it", kind="results", force=force, replaced=not within)
        for sub in within:
            out_folder(path / sub, "the results are written inside it", kind="results", force=force)
    return outs


def data_path(data: str | Path | None, release_of: str | None, split: str,
              manifest: str | Path | None = None) -> tuple[Path, str | None]:
    """The file or folder to read: ``data`` as given, or the release file of ``release_of`` (``[SOURCE:]PROBE``)
    for ``split``, found through the manifest (default: ./raw/sources.yaml, else this checkout's); also the probe
    of a release. It must exist."""
    probe = None
    if release_of:
        from probekit.sources.manifest import default_manifest, load_manifest, release_file

        manifest = Path(manifest) if manifest else default_manifest()
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


def released(probes: list[str], split: str, manifest=None, given: Sequence = ()) -> list[str]:
    """``probes`` (``--release-of`` values) less those that ``{probe}`` stood for and that have no file in the
    original release (a probe of one's own: logged, not an error); a probe named as such must have one."""
    if not probes or all(p in given for p in probes):
        return probes
    from probekit.sources.manifest import default_manifest, load_manifest, release_file

    entries = load_manifest(Path(manifest) if manifest else default_manifest())
    kept = []
    for value in probes:
        source, probe = value.split(":", 1) if ":" in value else ("olmpics", value)
        try:
            if value not in given and source in entries:
                release_file(entries, source, probe, split)
        except KeyError:
            log.info("--release-of %s: the original release (%s) has no %s file of it: skipped", value, source,
                     split)
            continue
        kept.append(value)
    return kept


def curve_inputs(data, release_of, params: ParamsFile, fmt: str, split: str, manifest=None) -> list:
    """What a learning curve reads, one per output folder: each ``data`` folder (a Path), then each ``release_of``
    probe's release train and ``split`` files (:class:`evaluators.olmpics.release_curves.ReleaseFiles`; ``{probe}``:
    each of the params' ``probes.<fmt>`` that the release has; each file found as zero-shot's, :func:`data_path`,
    and required). At least one is needed."""
    from evaluators.olmpics.release_curves import ReleaseFiles

    def files(value: str) -> ReleaseFiles:
        (dev, probe), (train, _) = data_path(None, value, split, manifest), data_path(None, value, "train", manifest)
        return ReleaseFiles(probe, value.split(":", 1)[0] if ":" in value else "olmpics", train, dev)

    releases = released(each_probe(release_of, params, fmt, "--release-of"), split, manifest, listed(release_of))
    inputs = [Path(d) for d in listed(data)] + [files(r) for r in releases]
    if not inputs:
        raise UsageError("give --data FOLDER or --release-of PROBE (once or more)")
    return inputs


declare("audit", title="the tokenization audit", paper="olmpics", stages=("audit@{key}",),
        results=("reports/tokenization",))   # `probes audit`: how each answer word is tokenized, for every model


@protocol("zeroshot", title="zero-shot MC", paper="olmpics", profiled=True,
          reads={"scoring": ScoringParams, "zeroshot": ZeroshotParams}, stages=("report", "heatmaps"),
          options={"split": "zeroshot.split", "limit": "zeroshot.limit", "scoring": "scoring.family",
                   "batch_size": "scoring.batch_size", "dtype": "scoring.dtype", "multi_token": "scoring.multi_token",
                   "seed": "scoring.seed"},
          limits=("zeroshot.limit",), results=("results/zeroshot", "results/release", "results/zeroshot_grid"))
def zeroshot(model: str, data, out, *, params=None, device: str = "auto", force: bool = False, release_of=None,
             rule: str | None = None, manifest=None, **options) -> list[Run]:
    """Zero-shot MC (MC-MLM for masked LMs, the log-likelihood rules for causal and seq2seq LMs) of each of
    ``data`` (probe, variant folders or jsonl files) and ``release_of`` (release files' probes); ``options``: the
    protocol's (its record's, each a params field: ``split``, ``limit``, ``scoring``, ``batch_size``...)."""
    from probekit.probes.dataset import read_split

    params = params_file(params)
    sections = protocols.get("zeroshot").settings(params, **options)   # the call's options over the params'
    zs, sp = sections["zeroshot"], sections["scoring"]
    split, limit = zs.split, zs.limit
    releases = released(each_probe(release_of, params, "mc_mlm", "--release-of"), split, manifest,
                        listed(release_of))
    sources = [(d, None) for d in each_probe(data, params, "mc_mlm", "--data")] + [(None, r) for r in releases]
    if not sources:
        raise UsageError("give --data FILE_OR_DIR or --release-of PROBE (once or more)")
    found = [data_path(d, r, split, manifest) for d, r in sources]
    targets = outs_for(out, [probe or path.name for path, probe in found], force=force)
    # output folder -> (data, probe of a release file, {variant: (path, examples)})
    inputs = {t: (path, probe, read_split(path, split, limit)) for t, (path, probe) in zip(targets, found)}

    from probekit.tokens.refs import resolve_model

    ref = resolve_model(model, params.models(), params.label)
    from evaluators.shared import applies

    device = resolve_device(device)
    if applies.skip("zeroshot", ref, device, targets, params):
        return []
    from evaluators.engine.kept_models import scoring_lm
    from evaluators.olmpics import zeroshot as run_zeroshot

    loaded = scoring_lm(ref, scoring=sp.family, device=device, seed=sp.seed, dtype=sp.dtype)
    if options.get("multi_token") and loaded.family != "mlm":
        raise UsageError("--multi-token applies to the mask-logit rule of masked LMs only")
    rule = rule or getattr(sp.rules, loaded.family)
    return [Run(target, path, run_zeroshot.run(loaded, datasets, target, split=split, rule=rule,
                                               batch_size=sp.batch_size, limit=limit, multi_token=sp.multi_token,
                                               probe=probe, profile=params.profile), probe)
            for target, (path, probe, datasets) in inputs.items()]


def _loader(model: str, params: ParamsFile, sp, protocol: str, outs, device: str):
    """A function loading ``model`` as a masked LM (resolved now: a bad name fails before any work); None when
    the model is not a masked LM: ``protocol`` is then skipped, its ``outs`` written as skipped (said once)."""
    from evaluators.shared import applies
    from probekit.tokens.refs import resolve_model

    ref = resolve_model(model, params.models(), params.label)
    if applies.skip(protocol, ref, device, outs, params):
        return None

    def load():
        from evaluators.engine.kept_models import scoring_lm

        return scoring_lm(ref, scoring="mlm", device=device, seed=sp.seed, dtype=sp.dtype)

    return load


CURVE_OPTIONS = {"split": "curve.split", "glove": "curve.glove", "sizes": "curve.sizes", "seeds": "curve.seeds",
                 "dtype": "scoring.dtype", "batch_size": "scoring.batch_size"}
"""The options of the learning curves and their features: the params' ``curve`` and the encoder's ``scoring``."""


@protocol("features", title="MC-MLM mask features", families=("mlm",), paper="olmpics",
          reads={"scoring": ScoringParams, "curve": CurveParams}, options=CURVE_OPTIONS, results=("data/features",))
def features(model: str, data, out, *, params=None, device: str = "auto", force: bool = False,
             **options) -> list[Run]:
    """A masked LM's hidden states at the masks (or the MLM-BASELINE's GloVe features) of a probe's train and dev
    splits, cached in ``out`` for its learning curves; the run's metrics: ``{"shape": ...}``. ``options``: the
    curves' (:data:`CURVE_OPTIONS`)."""
    out_folder(out, "the features are written inside it", kind="results", force=force)
    from evaluators.olmpics import mc_mlm as mlm_curve

    params = params_file(params)
    sections = protocols.get("features").settings(params, **options)
    sp, cp = sections["scoring"], sections["curve"]
    load = None
    if model != mlm_curve.MLM_BASELINE:
        device = resolve_device(device)
        load = _loader(model, params, sp, "features", [Path(out)], device)
        if load is None:
            return []
    shape = mlm_curve.cache_features(model=model, data=Path(data), features_dir=Path(out), split=cp.split,
                                     load=load, glove=cp.glove, glove_tokens=cp.glove_tokens,
                                     device=resolve_device(device),
                                     batch_size=sp.batch_size, multi_token=sp.multi_token, sizes=cp.sizes,
                                     seeds=cp.seeds, subsets=cp.subsets)
    return [Run(Path(out), Path(data), {"shape": shape})]


@protocol("curve", title="MC-MLM learning curves", families=("mlm",), paper="olmpics",
          reads={"scoring": ScoringParams, "curve": CurveParams, "mlm_baseline": MlmBaselineParams},
          options=CURVE_OPTIONS, profiled=True, stages=("olmpics_report",), results=("results/curve",))
def curve(model: str, data, out, *, params=None, device: str = "auto", force: bool = False, setting="mlp",
          features=None, lr_selection=None, release_of=None, manifest=None, **options) -> list[Run]:
    """MC-MLM learning curves of each of ``data``: the encoder frozen, the MLM head (``mlp``) or its final
    projection (``linear``) trained on N examples; ``setting``: one, or a list (each written to ``out/<setting>``,
    the run's metrics then ``{setting: curve}``); ``features``: a features folder to read or fill; ``lr_selection``:
    the folder :func:`curve_lr` wrote for the model (needed when ``curve.training.lr`` lists candidates);
    ``release_of``: release probes (``[SOURCE:]PROBE``) whose own train and dev files a curve trains and evaluates
    on besides ``data`` (:mod:`evaluators.olmpics.release_curves`); ``options``: :data:`CURVE_OPTIONS`."""
    if lr_selection is not None and model == MLM_BASELINE:
        raise UsageError("--lr-selection: MLM-BASELINE trains with params mlm_baseline, not the heads' lr")
    settings = listed(setting)
    params = params_file(params)
    split = protocols.get("curve").settings(params, **options)["curve"].split
    datas = curve_inputs(data, release_of, params, "mc_mlm", split, manifest)
    targets = list(zip(datas, outs_for(out, [d.name for d in datas], force=force,
                                       within=settings if len(settings) > 1 else ())))   # each setting its folder
    if features is not None:
        outputs.not_empty(features, "--features")
    if features and len(targets) > 1 and "{probe}" not in str(features):
        raise UsageError(f"--features {features}: with several --data, put {{probe}} in it")
    cached = {d: out_folder(str(features).replace("{probe}", d.name) if features else None,
                            "the features are cached inside it", "--features", kind="results", force=force)
              for d, _ in targets}
    from evaluators.olmpics import mc_mlm as mlm_curve

    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    sections = protocols.get("curve").settings(params, **options)
    sp, cp = sections["scoring"], sections["curve"]
    baseline = model == mlm_curve.MLM_BASELINE
    # MLM-BASELINE trains as the original mlm_baseline.jsonnet (section mlm_baseline), the LMs' heads as theirs
    hp = sections["mlm_baseline"] if baseline else cp.training
    settings = settings if len(settings) > 1 else settings[0]
    load = None
    if not baseline:
        outs = [o / s for _, o in targets for s in settings] if isinstance(settings, list) else [o for _, o in targets]
        device = resolve_device(device)
        load = _loader(model, params, sp, "curve", outs + [f for f in cached.values() if f is not None], device)
        if load is None:
            return []
        load = functools.cache(load)  # once
    selected = None
    if lr_selection is not None:
        from evaluators.olmpics.lr_selection import chosen

        selected = chosen(Path(lr_selection), model=model, hp=hp, sizes=cp.sizes, seeds=cp.seeds, split=cp.split)
    return [Run(o, getattr(d, "dev", d), mlm_curve.run(
        model=model, data=d, out=o, setting=settings, sizes=cp.sizes, seeds=cp.seeds, hp=hp, split=cp.split,
        features_dir=cached[d], load=load, glove=cp.glove, glove_tokens=cp.glove_tokens, device=resolve_device(device),
        batch_size=sp.batch_size, multi_token=sp.multi_token, profile=profile, selected_lr=selected,
        subsets=cp.subsets),
        getattr(d, "probe", None)) for d, o in targets]


@protocol("curve-lr", title="the MC-MLM heads' learning rate, selected on dev", families=("mlm",), paper="olmpics",
          reads={"scoring": ScoringParams, "curve": CurveParams},
          options={k: v for k, v in CURVE_OPTIONS.items() if k != "glove"}, profiled=True,
          results=("results/curve_lr",))
def curve_lr(model: str, data, out, *, params=None, device: str = "auto", force: bool = False,
             setting=("mlp", "linear"), **options) -> list[Run]:
    """The lr the MC-MLM heads of ``model`` train with (:mod:`evaluators.olmpics.lr_selection`), written to
    ``out/metrics.json`` for its curves (``curve(lr_selection=out)``): a number in ``curve.training.lr`` as it is (the
    model is not loaded), a list selected among on the probes ``data`` (``{probe}``: each of the params'
    ``probes.mc_mlm``) in each of ``setting``; ``options``: :data:`CURVE_OPTIONS` but ``glove``."""
    if model == MLM_BASELINE:
        raise UsageError("--model mlm-baseline: MLM-BASELINE trains with params mlm_baseline; this is the LM heads' lr")
    out = out_folder(out, "the selection is written inside it", kind="results", force=force)
    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    sections = protocols.get("curve-lr").settings(params, **options)
    sp, cp = sections["scoring"], sections["curve"]
    datas = [Path(d) for d in each_probe(data, params, "mc_mlm", "--data")]
    missing = [str(d) for d in datas if not d.is_dir()]
    if not datas or missing:
        raise UsageError(f"--data: give each MC-MLM probe's folder (data/probes/{{probe}}: each of the params' "
                         f"probes.mc_mlm){'; no such folder: ' + ', '.join(missing) if missing else ''}")
    from evaluators.olmpics import lr_selection, mc_mlm

    settings = [mc_mlm.check_setting(s) for s in listed(setting) or ["mlp", "linear"]]
    device = resolve_device(device)
    load = _loader(model, params, sp, "curve-lr", [out], device)
    if load is None:
        return []
    lrs = cp.training.lrs()
    record = lr_selection.fixed(model, lrs[0], profile) if len(lrs) == 1 else mc_mlm.select_lr(
        model=model, loaded=load(), datas=datas, settings=settings, sizes=cp.sizes, seeds=cp.seeds, hp=cp.training,
        split=cp.split, device=device, batch_size=sp.batch_size, multi_token=sp.multi_token, profile=profile,
        subsets=cp.subsets)
    with atomic.atomic_path(out, kind="results") as tmp:
        atomic.write_json(tmp / "metrics.json", record)
    return [Run(out, datas[0].parent, record)]


@protocol("mcqa", title="MC-QA learning curves (a fine-tuned encoder)", families=("mlm",), paper="olmpics",
          reads={"mcqa": McqaParams}, options={o: f"mcqa.{o}" for o in ("split", "glove", "sizes", "seeds")},
          profiled=True, results=("results/curve",))
def mcqa(model: str, data, out, *, params=None, device: str = "auto", force: bool = False,
         intermediate: str | None = None, release_of=None, manifest=None, **options) -> list[Run]:
    """MC-QA learning curves of each of ``data``: ``[CLS] stem [SEP] choice [SEP]``, an MLP on [CLS], the whole
    network fine-tuned (``model``: any AutoModel encoder), or the ESIM baseline over GloVe (``model="esim"``);
    ``intermediate``: a variant to fine-tune on first (default: the params' ``mcqa.intermediate``; '' none);
    ``release_of``: release probes whose own train and dev files a curve trains and evaluates on besides ``data``
    (:mod:`evaluators.olmpics.release_curves`: no controls, no intermediate step); ``options``: ``split``,
    ``glove``, ``sizes``, ``seeds`` (the params' ``mcqa``)."""
    from probekit.tokens.refs import resolve_model

    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    mp = protocols.get("mcqa").settings(params, **options)["mcqa"]
    datas = curve_inputs(data, release_of, params, "mc_qa", mp.split, manifest)
    targets = list(zip(datas, outs_for(out, [d.name for d in datas], force=force)))
    esim = model == ESIM
    ref = model if esim else resolve_model(model, params.models(), params.label)
    hp = mp.esim_hp if esim else mp.training
    from evaluators.shared import applies

    device = resolve_device(device)
    if not esim and applies.skip("mcqa", ref, device, [o for _, o in targets], params):
        return []
    from evaluators.olmpics import mcqa as run_mcqa

    runs = []
    for d, o in targets:
        first = intermediate if intermediate is not None else None if hasattr(d, "probe") else \
            mp.intermediate.get(d.name)   # the release has no intermediate variant
        metrics = run_mcqa.run(model=ref, data=d, out=o, sizes=mp.sizes, seeds=mp.seeds, hp=hp, split=mp.split,
                               intermediate=first or None, intermediate_limit=mp.intermediate_limit,
                               intermediate_splits=mp.intermediate_splits, glove=mp.glove,
                               glove_tokens=mp.glove_tokens, esim_embeddings=mp.esim_embeddings,
                               esim_trainable_embeddings=mp.esim_trainable_embeddings, pooler=mp.pooler,
                               segment_ids=mp.segment_ids, device=device, profile=profile,
                               subsets=mp.subsets)
        runs.append(Run(o, getattr(d, "dev", d), metrics, getattr(d, "probe", None)))
    return runs
