"""MC-MLM learning curves (oLMpics §3.2): the encoder frozen, the MLM head trained on N examples (MLP: the
whole head; LINEAR: its final projection), N in seeded subsets (nested, or each run's own draw as the original's:
params ``curve.subsets``), several seeds, evaluated on the dev
split; WS, MAX and the language sensitivity against the NO-LANG and PERTURBED-LANG controls.

Each example is encoded once: the hidden states at the masks are cached (``features.py``) and every
(N, seed) run trains only the head on them. ``mlm-baseline`` runs the same curve on the paper's
MLM-BASELINE: the first 20 tokens as GloVe vectors through a freshly initialised head, trained as the original
trains it (params ``mlm_baseline``: Adam, up to 75 epochs, early stopping on dev), not as the LMs' heads.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from evaluators.olmpics import features as feature_cache
from evaluators.olmpics import heads, learning_curve
from evaluators.olmpics.zeroshot import describe
from evaluators.shared import parallel
from evaluators.shared.params import MlmBaselineParams
from evaluators.shared.training import TrainingParams, one_thread, train, train_early_stopping
from probekit.errors import UsageError

MLM_BASELINE = "mlm-baseline"
"""The reserved ``--model`` name of the MLM-BASELINE (GloVe features through a new head)."""
log = logging.getLogger("probekit")
Features = Callable[[np.ndarray], torch.Tensor]


@dataclass
class Split:
    """One split of a variant as the head sees it: features by row index, candidates and gold positions."""

    features: Features          # row indices -> [rows, width] float32 on the device
    candidates: torch.Tensor    # [rows, K] indices into the head's outputs, -1 where an example has fewer
    gold: torch.Tensor          # [rows] the gold choice's position among the example's choices

    def __len__(self) -> int:
        return len(self.gold)


def candidate_index(candidates: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The union of the splits' candidates (token ids or word indices, -1 = none) and each split's
    candidates as positions in that union."""
    union = np.unique(np.concatenate([c[c >= 0] for c in candidates]))
    return union, [np.where(c >= 0, np.searchsorted(union, c), -1) for c in candidates]


def candidate_logits(head: torch.nn.Module, x: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """The paper's masked softmax input: each example's candidates' logits, -inf where it has none."""
    logits = head(x).gather(1, candidates.clamp(min=0))
    return logits.masked_fill(candidates < 0, float("-inf"))


@torch.no_grad()
def predicted(head: torch.nn.Module, split: Split, chunk: int = 4096) -> np.ndarray:
    """Each example's highest-scoring candidate, as its position among the example's choices (a tie goes to the
    first)."""
    head.eval()
    out = []
    for start in range(0, len(split), chunk):
        idx = np.arange(start, min(start + chunk, len(split)))
        out.append(candidate_logits(head, split.features(idx), split.candidates[idx]).argmax(1))
    return torch.cat(out).cpu().numpy()


def correct(head: torch.nn.Module, split: Split) -> np.ndarray:
    """Whether each example's highest-scoring candidate is the gold one (a tie goes to the first)."""
    return predicted(head, split) == split.gold.cpu().numpy()


def fit(head: torch.nn.Module, train_split: Split, rows: np.ndarray, setting: str, hp: TrainingParams,
        seed: int, dev: Split | None = None) -> torch.nn.Module:
    """Train ``head`` (in place) on the training ``rows``, in ``setting`` (MLP or LINEAR); with ``hp.select_epoch``
    ``best``, the weights of the epoch of the best accuracy on ``dev`` (:func:`fit_selecting`)."""
    fit_selecting(head, train_split, rows, setting, hp, seed, dev)
    return head


def fit_selecting(head: torch.nn.Module, train_split: Split, rows: np.ndarray, setting: str, hp: TrainingParams,
                  seed: int, dev: Split | None) -> dict | None:
    """:func:`fit`; returns what ``select_epoch: best`` chose (``training.train``: the epoch and each epoch's
    accuracy on ``dev``), None for the last epoch."""
    heads.select(head, setting)
    torch.manual_seed(seed)  # dropout of the head
    validate = None if dev is None else (lambda: float(correct(head, dev).mean()))
    return train(head, _loss(head, train_split, rows), len(rows), hp, seed, validate=validate)


def fit_early_stopping(head: torch.nn.Module, train_split: Split, rows: np.ndarray, setting: str,
                       hp: MlmBaselineParams, seed: int, dev: Split) -> dict:
    """MLM-BASELINE's training (``training.train_early_stopping``): ``head`` trained in place on ``rows``, each
    epoch validated on ``dev`` (the original's validation set is the probe's dev file), the best epoch kept;
    returns the epoch early stopping chose and how many ran."""
    heads.select(head, setting)
    torch.manual_seed(seed)  # dropout of the baseline head
    return train_early_stopping(head, _loss(head, train_split, rows), len(rows), hp, seed,
                                validate=lambda: float(correct(head, dev).mean()))


def _loss(head: torch.nn.Module, train_split: Split, rows: np.ndarray) -> Callable[[np.ndarray], torch.Tensor]:
    def loss_of(batch: np.ndarray) -> torch.Tensor:
        idx = rows[batch]
        logits = candidate_logits(head, train_split.features(idx), train_split.candidates[idx])
        return torch.nn.functional.cross_entropy(logits, train_split.gold[idx])

    return loss_of


def variant_curve(make_head: Callable[[int], torch.nn.Module], train_split: Split, dev: Split,
                  orders: Mapping[int, Mapping[int, np.ndarray] | np.ndarray], sizes: Sequence[int], setting: str,
                  hp: TrainingParams | MlmBaselineParams, desc: str, progress: bool, processes: int = 1
                  ) -> tuple[np.ndarray, np.ndarray, dict | None]:
    """The choice each dev example gets (its position among the example's choices) ``[sizes, seeds, examples]``,
    from the untrained head (the zero-shot point, ``[examples]``), and what each run's epoch choice recorded,
    ``{N: {key: [per seed]}}``: with ``MlmBaselineParams`` early stopping's (``best_epoch``, ``epochs_run``), with
    ``select_epoch: best`` the epoch selected on dev and each epoch's dev accuracy (``selected_epoch``,
    ``dev_accuracy``); None when the last epoch is kept. Correct where the choice equals ``dev.gold``.
    ``orders[seed]``: the training rows of each (N, seed) run, ``{N: rows}`` (``learning_curve.draw_subsets``), or
    the seed's nested order, whose first N are the run's (-1: no row for that example). ``processes``: the
    (N, seed) runs spread over that many processes (:func:`evaluators.shared.parallel.each`; the same bits as one
    after another)."""
    zero_shot = predicted(make_head(min(orders)), dev)
    runs = [(s, seed, k, n) for s, seed in enumerate(orders) for k, n in enumerate(sizes)]
    baseline = isinstance(hp, MlmBaselineParams)

    def run(i: int) -> tuple[np.ndarray, dict | None]:
        _, seed, _, n = runs[i]
        rows = orders[seed][n] if isinstance(orders[seed], Mapping) else orders[seed][:n]
        head = make_head(seed)
        if baseline:
            chosen = fit_early_stopping(head, train_split, rows[rows >= 0], setting, hp, seed, dev)
            chosen = {"best_epoch": chosen["best_epoch"], "epochs_run": chosen["epochs_run"]}
        else:
            chosen = fit_selecting(head, train_split, rows[rows >= 0], setting, hp, seed,
                                   dev if hp.select_epoch == "best" else None)
        return predicted(head, dev), chosen

    with tqdm(total=len(runs), desc=desc, unit="run", disable=not progress) as bar:
        results = parallel.each(run, len(runs), processes, bar.update, cost=lambda i: runs[i][3])
    out = np.zeros((len(sizes), len(orders), len(dev)), np.int64)
    chosen_by = {str(n): {} for n in sizes}
    for (s, _, k, n), (choices, chosen) in zip(runs, results):
        out[k, s] = choices
        for key, value in (chosen or {}).items():
            chosen_by[str(n)].setdefault(key, []).append(value)
    return out, zero_shot, chosen_by if baseline or hp.select_epoch == "best" else None


def inputs_curve(inputs: "HeadInputs", name: str, orders: Mapping[int, Mapping[int, np.ndarray] | np.ndarray],
                 sizes: Sequence[int], setting: str, hp: TrainingParams | MlmBaselineParams, desc: str, progress: bool
                 ) -> tuple[np.ndarray, np.ndarray, dict | None]:
    """:func:`variant_curve` of ``inputs``' variant ``name``: on features cached on the CPU, its runs spread over
    as many one-thread processes as torch has threads."""
    train_split, dev, make_head = inputs.splits(name)
    processes = torch.get_num_threads() if inputs.cached and dev.gold.device.type == "cpu" else 1
    with one_thread(inputs.cached):
        return variant_curve(make_head, train_split, dev, orders, sizes, setting, hp, desc, progress, processes)


def cached(array: np.ndarray, device: str, rows: np.ndarray | None = None, n_rows: int | None = None) -> Features:
    """Features served from the cache, moved to the device once. ``rows``: the split's rows the array holds (in
    order, of ``n_rows``); asking for another row is an error, never a silent zero."""
    tensor = torch.as_tensor(array, device=device)
    if rows is None:
        return lambda idx: tensor[torch.as_tensor(idx, device=device)]
    where = np.full(n_rows, -1, np.int64)
    where[rows] = np.arange(len(rows))

    def features(idx: np.ndarray) -> torch.Tensor:
        positions = where[np.asarray(idx)]
        if (positions < 0).any():
            raise RuntimeError("a training row outside the cached features' rows (the curve's sizes or seeds "
                               "differ from those the features were cached for)")
        return tensor[torch.as_tensor(positions, device=device)]

    return features


def run_curve(*, model_name: str, variants: Mapping[str, dict], inputs: "HeadInputs", out: Path, setting: str,
              sizes: Sequence[int], seeds: Sequence[int], hp: TrainingParams | MlmBaselineParams, split: str,
              progress: bool = True, record: Mapping | None = None, subsets: str = "nested") -> dict:
    """The curve of every variant (the full one first, then its controls), its metrics and files. With
    ``MlmBaselineParams`` (MLM-BASELINE) metrics.json's ``training`` says so and ``early_stopping`` records, per
    variant and N, the epoch early stopping chose for each seed and how many epochs ran; with ``select_epoch:
    best``, ``epoch_selection`` records per variant and N each seed's epoch selected on ``split`` and its
    accuracy there after every epoch. ``subsets``: how each run's training rows are drawn
    (``learning_curve.draw_subsets``: ``nested`` or ``original``), recorded in metrics.json when ``original``."""
    full_name, full = next(iter(variants.items()))
    sizes, dropped = learning_curve.sizes_that_fit(sizes, len(full["train"]), str(full["path"].parent))
    original_ids = [r["id"] for r in full["train"]]
    orders, drawn = learning_curve.draw_subsets(original_ids, sizes, seeds, subsets)
    chosen_by, zero_by, chosen = {}, {}, {}
    for name, v in variants.items():
        rows = None if name == full_name else learning_curve.control_rows(original_ids, v["train"])
        variant_orders = {s: {n: o if rows is None else rows[o] for n, o in by_n.items()} for s, by_n in orders.items()}
        chosen_by[name], zero_by[name], chosen[name or full["path"].parent.name] = inputs_curve(
            inputs, name, variant_orders, sizes, setting, hp, f"{model_name} {name or 'curve'} {setting}", progress)
    training = hp.model_dump(mode="json")
    if isinstance(hp, MlmBaselineParams):
        training = {"optimizer": "Adam (L2 weight decay)", **training,
                    "early_stopping": f"on the {split} split's accuracy, the best epoch kept"}
    header = {"protocol": "MC-MLM", "setting": setting, "split": split, "training": training, **(record or {})}
    if subsets != "nested":   # a run without it drew nested subsets
        header["subsets"] = subsets
    if isinstance(hp, MlmBaselineParams):
        header["early_stopping"] = chosen
    elif hp.select_epoch == "best":
        header["epoch_selection"] = chosen
    return learning_curve.write_results(out, variants=variants, predicted=chosen_by, zero_shot=zero_by, sizes=sizes,
                                        dropped=dropped, seeds=seeds, subsets=drawn, header=header)


class HeadInputs:
    """What a curve trains on, per variant: the splits (features, candidates, gold) and a fresh head;
    ``cached``: the features are served from memory (no encoder runs during training)."""

    def __init__(self, splits: Mapping[str, tuple[Split, Split]], make_head: Callable[[str, int], torch.nn.Module],
                 cached: bool = True):
        self._splits, self._make_head, self.cached = splits, make_head, cached

    def splits(self, variant: str) -> tuple[Split, Split, Callable[[int], torch.nn.Module]]:
        train_split, dev = self._splits[variant]
        return train_split, dev, lambda seed: self._make_head(variant, seed)


def check_setting(setting: str) -> str:
    setting = setting.upper()
    if setting not in heads.SETTINGS:
        raise UsageError(f"--setting must be mlp or linear, got {setting.lower()!r}")
    return setting


def as_split(features: Features, candidates: np.ndarray, rows: Sequence[Mapping], device: str) -> Split:
    return Split(features, torch.as_tensor(candidates, device=device),
                 torch.as_tensor(learning_curve.gold_positions(rows), device=device))


def feature_key(variants: Mapping[str, dict], split: str, train_rows: Mapping[str, np.ndarray] | None = None,
                **model) -> dict:
    return feature_cache.key(fingerprints={n: describe(v["path"], None)["data_fingerprint"]
                                           for n, v in variants.items()}, split=split, train_rows=train_rows,
                             **model)
