"""MC-MLM learning curves of a masked LM or of the MLM-BASELINE: what the curve trains on (mask features,
cached or re-encoded per step to check and time the cache; candidate indices; a fresh head per run) and the
entry points the CLI calls: the curves, and the selection of a masked LM's heads' lr on dev."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from evaluators.engine.masked import check_candidates, hidden_at
from evaluators.engine.models import LoadedModel
from evaluators.engine.runner import Runner
from evaluators.engine.scorer import Engine
from evaluators.olmpics import features as feature_cache
from evaluators.olmpics.heads import BaselineHead, MaskedLMHead
from evaluators.olmpics.learning_curve import (check_curve, curve_train_rows, draw_subsets, read_variants,
                                               sizes_that_fit)
from evaluators.olmpics.metrics import weighted_score
from evaluators.olmpics.mc_mlm_curve import (
    MLM_BASELINE,
    HeadInputs,
    as_split,
    cached,
    candidate_index,
    check_setting,
    feature_key,
    inputs_curve,
    run_curve,
)
from evaluators.olmpics import lr_selection
from evaluators.olmpics.release_curves import curve_variants, record as release_record
from evaluators.shared.params import CurveTrainingParams, MlmBaselineParams
from evaluators.shared.training import TrainingParams
from probekit.errors import UsageError

log = logging.getLogger("probekit")
SPLITS = feature_cache.SPLITS


def _texts(rows: Sequence[Mapping]) -> tuple[list[str], list[list[str]], list[str]]:
    return ([r["question"]["stem"] for r in rows], [[c["text"] for c in r["question"]["choices"]] for r in rows],
            [r["id"] for r in rows])


def _hidden(runner: Runner, inputs, positions) -> np.ndarray:
    return runner.fitting(lambda: hidden_at(runner, inputs, positions))


def lm_inputs(loaded: LoadedModel, variants: Mapping[str, dict], *, split: str, features_dir: Path | None,
              device: str, batch_size: int | str = "auto", multi_token: str = "error", reencode: bool = False,
              progress: bool = True, train_rows: Mapping[str, np.ndarray] | None = None) -> HeadInputs:
    """A masked LM's curve inputs. Features come from ``features_dir`` when its key matches (else they are
    computed once and written there); ``reencode``: the encoder runs again for every training step and every
    evaluation instead (the uncached protocol, for tests and ``bench/curve.py``). ``train_rows``: the training
    rows each variant's curve uses (``learning_curve.curve_train_rows``), the only ones encoded (None: all)."""
    if loaded.family != "mlm":
        raise UsageError(f"--model {loaded.name}: MC-MLM learning curves train a masked LM's head; a "
                         f"{loaded.family} model has none")
    engine = Engine(loaded.model, loaded.tokenizer, "mlm", batch_size=batch_size, multi_token=multi_token,
                    progress=progress)
    runner = engine.runner
    # the engine's encoding: statements tokenized once, each checked against the model's length
    encoded = {(name, s): engine.encode_masked(*_texts(v[s])) for name, v in variants.items() for s in SPLITS}
    for queries in encoded.values():
        check_candidates(loaded.tokenizer, queries, multi_token)
    if reencode:
        train_rows = None
    key = feature_key(variants, split, train_rows, model=loaded.name, model_id=loaded.model_id,
                      revision=getattr(loaded.model.config, "_commit_hash", None), dtype=loaded.dtype)
    stored = None if reencode else feature_cache.read(features_dir, key)

    def rows_of(name: str, s: str) -> np.ndarray:
        everything = np.arange(len(variants[name][s]))
        return everything if train_rows is None or s != "train" else train_rows[name]

    if stored is None and not reencode:
        stored = {name: {s: _hidden(runner, [encoded[name, s].inputs[i] for i in rows_of(name, s)],
                                    encoded[name, s].positions[rows_of(name, s)]) for s in SPLITS}
                  for name in variants}
        if features_dir is not None:
            log.info("mask features of %s written to %s", loaded.name, features_dir)
            feature_cache.write(features_dir, key, stored)

    def source(name: str, s: str):
        if not reencode:
            if train_rows is None or s != "train":
                return cached(stored[name][s], device)
            return cached(stored[name][s], device, train_rows[name], len(variants[name][s]))
        q = encoded[name, s]
        return lambda idx: torch.as_tensor(hidden_at(runner, [q.inputs[i] for i in idx], q.positions[idx]),
                                           device=device)

    splits, base_heads = {}, {}
    for name in variants:
        union, (train_c, dev_c) = candidate_index([encoded[name, s].candidates() for s in SPLITS])
        splits[name] = tuple(as_split(source(name, s), c, variants[name][s], device)
                             for s, c in zip(SPLITS, (train_c, dev_c)))
        base_heads[name] = MaskedLMHead(loaded.model, union.tolist()).to(device)
    return HeadInputs(splits, lambda name, seed: copy.deepcopy(base_heads[name]), cached=not reencode)


def baseline_inputs(glove_spec: str, variants: Mapping[str, dict], *, split: str, features_dir: Path | None,
                    device: str, n_tokens: int = 20, glove_tokens: str = "original") -> HeadInputs:
    """MLM-BASELINE's curve inputs: the stem's first ``n_tokens`` GloVe vectors, concatenated (cached like
    mask features), each text read as ``glove_tokens`` says (``glove.py``: ``original``, ``lowercase``; under
    ``original`` every stem and choice of every variant's splits is the vocabulary whose known vectors give the
    unknown tokens' mean and deviation, as the original's vocabulary holds its files' stems and choices); the
    candidates are the choice words; a new head per seed."""
    from evaluators.olmpics.glove import Lexicon, mlm_baseline_features
    from probekit.sources.vectors import load_glove

    lexicon = Lexicon(load_glove(glove_spec), glove_tokens)
    key = feature_key(variants, split, model=MLM_BASELINE, model_id=glove_spec, revision=None, dtype="float32",
                      inputs={"glove_tokens": glove_tokens})
    stored = feature_cache.read(features_dir, key)
    if stored is None:
        lexicon.add(text for v in variants.values() for s in SPLITS
                    for stem, choices, _ in zip(*_texts(v[s])) for text in [stem, *choices])
        stored = {name: {s: mlm_baseline_features(lexicon, _texts(v[s])[0], n_tokens) for s in SPLITS}
                  for name, v in variants.items()}
        if features_dir is not None:
            feature_cache.write(features_dir, key, stored)
    splits, widths = {}, {}
    for name, v in variants.items():
        words = {s: _texts(v[s])[1] for s in SPLITS}
        vocabulary = sorted({w for s in SPLITS for row in words[s] for w in row})
        position = {w: i for i, w in enumerate(vocabulary)}
        k = max(len(row) for s in SPLITS for row in words[s])
        cands = [np.asarray([[position[w] for w in row] + [-1] * (k - len(row)) for row in words[s]])
                 for s in SPLITS]
        union, (train_c, dev_c) = candidate_index(cands)
        splits[name] = tuple(as_split(cached(stored[name][s], device), c, v[s], device)
                             for s, c in zip(SPLITS, (train_c, dev_c)))
        widths[name] = (stored[name]["train"].shape[1], len(union))

    def make_head(name: str, seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        return BaselineHead(*widths[name]).to(device)

    return HeadInputs(splits, make_head)


def cache_features(*, model: str, data: Path, features_dir: Path, split: str = "dev", load=None,
                   glove: str = "", glove_tokens: str = "original", device: str = "cpu", batch_size: int | str = "auto",
                   multi_token: str = "error", sizes: Sequence[int] | None = None,
                   seeds: Sequence[int] | None = None, subsets: str = "nested") -> tuple[int, ...]:
    """Compute (or keep, when its key matches) the features cache of ``model`` on ``data``; their shape.
    ``sizes``, ``seeds`` and ``subsets`` (how their rows are drawn): the curves' (a masked LM's training features
    are cached for the rows they use only); None: every training row."""
    variants = curve_variants(data, split)
    if model == MLM_BASELINE:
        baseline_inputs(glove, variants, split=split, features_dir=features_dir, device=device,
                        glove_tokens=glove_tokens)
    else:
        if (sizes is None) != (seeds is None):
            raise UsageError("features: give both the curves' sizes and seeds, or neither")
        check_curve(sizes, seeds) if sizes is not None else None
        rows = None if sizes is None else curve_train_rows(variants, sizes, seeds, subsets)
        lm_inputs(load(), variants, split=split, features_dir=features_dir, device=device, batch_size=batch_size,
                  multi_token=multi_token, train_rows=rows)
    return tuple(json.loads((features_dir / "meta.json").read_text(encoding="utf-8"))["feature_shape"])


def run(*, model: str, data: Path, out: Path, setting: str | Sequence[str], sizes: Sequence[int],
        seeds: Sequence[int], hp: TrainingParams | MlmBaselineParams, split: str = "dev",
        features_dir: Path | None = None, load=None, glove: str = "", glove_tokens: str = "original",
        device: str = "cpu", batch_size: int | str = "auto", multi_token: str = "error",
        progress: bool = True, profile: str | None = None, selected_lr: Mapping | None = None,
        subsets: str = "nested") -> dict:
    """The curve of ``model`` (``load()`` gives the LoadedModel) or of the MLM-BASELINE on a probe folder
    (its ``original`` variant and controls) or one variant folder; writes the results under ``out`` and returns
    its metrics. Several settings (``["mlp", "linear"]``) share one model load and one set of features: each is
    written under ``out/<setting>`` and the metrics come back as ``{setting: metrics}``.
    ``hp``: a masked LM's head trains with ``TrainingParams`` (params ``curve.training``), the MLM-BASELINE with
    ``MlmBaselineParams`` (params ``mlm_baseline``, the original's trainer with early stopping).
    ``profile``: the params file's profile (``smoke``, ``paper``), recorded in metrics.json. ``selected_lr``: the
    record of the heads' lr selection (:func:`lr_selection.chosen`), needed when ``hp.lr`` lists candidates; its
    summary is recorded in metrics.json (``lr_selection``). ``subsets``: how each run's training rows are drawn
    (``learning_curve.draw_subsets``)."""
    several = not isinstance(setting, str)
    settings = [check_setting(s) for s in (setting if several else [setting])]
    if several and (not settings or len(set(settings)) != len(settings)):
        raise UsageError(f"--setting: give each of mlp and linear at most once, got {list(setting)}")
    wanted = MlmBaselineParams if model == MLM_BASELINE else TrainingParams
    if not isinstance(hp, wanted):
        raise UsageError(f"--model {model}: its head trains with {wanted.__name__} (params "
                         f"{'mlm_baseline' if wanted is MlmBaselineParams else 'curve.training'}), got "
                         f"{type(hp).__name__}")
    if model != MLM_BASELINE:
        hp, chosen_lr = lr_selection.head_lr(hp, selected_lr)
    check_curve(sizes, seeds)
    variants = curve_variants(data, split)
    if model == MLM_BASELINE:
        inputs = baseline_inputs(glove, variants, split=split, features_dir=features_dir, device=device,
                                 glove_tokens=glove_tokens)
        record = {"model": "MLM-BASELINE", "model_id": glove, "baseline": "MLM-BASELINE", "lm_head": None,
                  "glove_tokens": glove_tokens, "dtype": "float32", "device": str(device), "versions": _versions(),
                  "profile": profile, **release_record(data)}
    else:
        loaded = load()
        inputs = lm_inputs(loaded, variants, split=split, features_dir=features_dir, device=device,
                           batch_size=batch_size, multi_token=multi_token, progress=progress,
                           train_rows=curve_train_rows(variants, sizes, seeds, subsets))
        record = {"model": loaded.name, "model_id": loaded.model_id, "baseline": None,
                  "lm_head": "pretrained" if loaded.head_pretrained else "newly_initialised",
                  "multi_token": multi_token, **loaded.provenance(), "profile": profile, "lr_selection": chosen_lr,
                  **release_record(data)}
    results = {s.lower(): run_curve(model_name=record["model"], variants=variants, inputs=inputs,
                                    out=Path(out) / s.lower() if several else Path(out), setting=s, sizes=sizes,
                                    seeds=seeds, hp=hp, split=split, progress=progress, record=record,
                                    subsets=subsets)
               for s in settings}
    return results if several else results[settings[0].lower()]


def select_lr(*, model: str, loaded: LoadedModel, datas: Sequence[Path], settings: Sequence[str],
              sizes: Sequence[int], seeds: Sequence[int], hp: CurveTrainingParams, split: str = "dev",
              device: str = "cpu", batch_size: int | str = "auto", multi_token: str = "error", progress: bool = True,
              profile: str | None = None, subsets: str = "nested") -> dict:
    """The heads' lr of the masked LM ``loaded`` (alias ``model``), selected among ``hp.lrs()`` on the probes
    ``datas`` (:mod:`evaluators.olmpics.lr_selection`: each candidate trains the curve of each probe's original
    variant at ``sizes`` and the first of ``seeds``, in each of ``settings``; the highest mean WS on ``split``); its
    record. The original variant's features are encoded for the rows those curves train on (drawn as ``subsets``
    says), and kept in memory."""
    lrs, seed = hp.lrs(), seeds[0]
    if len(lrs) == 1:
        return lr_selection.fixed(model, lrs[0], profile)
    settings = [check_setting(s) for s in settings]
    ws: list[dict] = [{} for _ in lrs]
    probes = {}
    for data in map(Path, datas):
        variants = read_variants(data, split)
        name, full = next(iter(variants.items()))
        one = {name: full}
        kept, _ = sizes_that_fit(sizes, len(full["train"]), str(full["path"].parent))
        orders, _ = draw_subsets([r["id"] for r in full["train"]], kept, [seed], subsets)
        inputs = lm_inputs(loaded, one, split=split, features_dir=None, device=device, batch_size=batch_size,
                           multi_token=multi_token, progress=progress,
                           train_rows=curve_train_rows(one, kept, [seed], subsets))
        probes[data.name] = {"sizes": kept, "n": len(full["dev"])}
        for i, lr in enumerate(lrs):
            for setting in settings:
                chosen, _, _ = inputs_curve(inputs, name, orders, kept, setting, hp.with_lr(lr),
                                            f"{model} {data.name} lr {lr:g} {setting}", progress)
                correct = chosen == inputs.splits(name)[1].gold.cpu().numpy()
                ws[i].setdefault(data.name, {})[setting] = float(weighted_score(correct.mean(axis=2)[:, 0]))
    return lr_selection.record(model=model, model_id=loaded.model_id, lrs=lrs, ws=ws, probes=probes,
                               settings=settings, sizes=sizes, seed=seed, split=split, hp=hp, profile=profile)


def _versions() -> dict:
    import transformers

    from probekit import __version__

    return {"probekit": __version__, "torch": torch.__version__, "transformers": transformers.__version__}
