"""The training loops of the few-shot protocols. :func:`train`, shared by the MC-MLM heads, MC-QA and ESIM, with
the original oLMpics AllenNLP configuration of the LMs: AdamW (betas 0.9/0.98, weight decay 0.1 except biases and
LayerNorm weights), a slanted-triangular learning rate (over the run's exact update count, or AllenNLP's horizon as
the original ran it: :func:`schedule`), 4 epochs, batches of 8 with 2 accumulation steps, and
either the last epoch's weights or, as the original's ``"validation_metric": "+EM"``, the best epoch's on dev.
:func:`train_early_stopping`, MLM-BASELINE's, as the original ``mlm_baseline.jsonnet``: Adam, up to 75 epochs,
early stopping on the validation accuracy.

The loops are seeded: the example order of every epoch comes from a ``torch.Generator`` seeded with the run's
seed, so a run is a function of (initial weights, data, seed).
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from typing import Callable, Iterable

import numpy as np
import torch
from tqdm.auto import tqdm

from evaluators.shared.params import MlmBaselineParams, TrainingParams

NO_DECAY = re.compile(r"bias|LayerNorm\.weight|layer_norm\.weight")
"""Parameters without weight decay, as in the original configs: biases and LayerNorm weights."""


def optimizer(named_parameters: Iterable[tuple[str, torch.nn.Parameter]], hp: TrainingParams) -> torch.optim.AdamW:
    """AdamW over the trainable parameters, without decay on biases and LayerNorm weights."""
    decay, no_decay = [], []
    for name, p in named_parameters:
        if p.requires_grad:
            (no_decay if NO_DECAY.search(name) else decay).append(p)
    groups = [{"params": decay, "weight_decay": hp.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # foreach: one call per step over all the parameters, not one per parameter (a head's steps are tiny, so the
    # per-parameter calls were a quarter of a cached curve's time); the same arithmetic, bit for bit
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=hp.lr, betas=hp.betas, foreach=True)


def slanted_triangular(step: int, total: int, cut_frac: float, ratio: float) -> float:
    """Howard & Ruder (2018)'s learning-rate multiplier at update ``step`` of ``total``: a linear rise over
    the first ``cut_frac`` of the updates, then a linear decay, between 1/ratio and 1."""
    cut = max(1, math.floor(total * cut_frac))
    p = step / cut if step < cut else 1 - (step - cut) / max(1, total - cut)
    return (1 + max(0.0, p) * (ratio - 1)) / ratio


def allennlp_slanted_triangular(update: int, per_epoch: int, epochs: int, steps_per_epoch: int, cut_frac: float,
                                ratio: float) -> float:
    """The learning-rate multiplier of the ``update``-th update (from 1) under AllenNLP's ``SlantedTriangular`` as
    the original oLMpics runs used it (allennlp 7d0d0d9c, ``learning_rate_schedulers/slanted_triangular.py``
    lines 127-152; ``trainer.py`` calls ``step_batch(batch_num_total)`` before ``optimizer.step()``, so update k reads
    step k), for a run of ``epochs`` epochs of ``per_epoch`` updates and the config's fixed ``steps_per_epoch``:
    during the first epoch the horizon is ``epochs`` x max(``steps_per_epoch``, ``update``) (line 135), after it
    ``epochs`` x the mean updates per finished epoch (lines 129-133), here ``per_epoch``; ``cut`` is
    ``int(horizon x cut_frac)``, and a cut of 0 means no warm-up (line 151)."""
    finished = (update - 1) // per_epoch       # epochs whose end step() AllenNLP's trainer has called
    actual = per_epoch if finished else max(steps_per_epoch, update)
    total = epochs * actual
    step = min(update, total)
    cut = int(total * cut_frac)
    p = step / cut if step < cut else 1 - (step - cut) / (total - cut)
    return (1 + p * (ratio - 1)) / ratio


def schedule(hp: TrainingParams, n_examples: int) -> Callable[[int], float]:
    """The multiplier of the lr at each update (counted from 0) of a run over ``n_examples``: the slanted triangle
    over the run's exact update count (``hp.horizon: exact``), or AllenNLP's as the original ran it
    (``original``: :func:`allennlp_slanted_triangular` with ``hp.steps_per_epoch``)."""
    if hp.horizon == "original":
        per_epoch = hp.updates_per_epoch(n_examples)
        return lambda k: allennlp_slanted_triangular(k + 1, per_epoch, hp.epochs, hp.steps_per_epoch, hp.cut_frac,
                                                     hp.ratio)
    total = hp.updates(n_examples)
    return lambda k: slanted_triangular(k, total, hp.cut_frac, hp.ratio)


def train(model: torch.nn.Module, loss_of: Callable[[np.ndarray], torch.Tensor], n_examples: int,
          hp: TrainingParams, seed: int, *, desc: str = "training", progress: bool = False,
          validate: Callable[[], float] | None = None) -> dict | None:
    """Train ``model``'s trainable parameters in place: ``loss_of(indices)`` is the mean loss of a batch of
    example indices (into the training set of ``n_examples``).

    ``hp.select_epoch``: ``last`` keeps the weights after the last epoch (returns None); ``best`` does what the
    original's AllenNLP trainer does with ``"validation_metric": "+EM"`` and a validation set: ``validate()`` (the
    accuracy on the validation set) after every epoch, and at the end the weights of the best epoch restored.
    AllenNLP's ``MetricTracker`` counts an epoch as better only when its metric is strictly greater, so a tie keeps
    the earlier epoch. Validating reads the model in eval mode and draws nothing, so the epochs trained are the same
    either way. Returns ``{"selected_epoch": e, "dev_accuracy": [per epoch]}`` (epochs counted from 1)."""
    best_mode = hp.select_epoch == "best"
    if best_mode and validate is None:
        raise ValueError("select_epoch: best restores the best epoch on a validation set, and none was given")
    opt = optimizer(model.named_parameters(), hp)
    total = hp.updates(n_examples)
    lr_at = torch.optim.lr_scheduler.LambdaLR(opt, schedule(hp, n_examples))
    order = torch.Generator().manual_seed(seed)
    accuracies, best_epoch, best_state = [], 0, None
    model.train()
    with tqdm(total=total, desc=desc, unit="update", disable=not progress, leave=False) as bar:
        for epoch in range(1, hp.epochs + 1):
            batches = torch.randperm(n_examples, generator=order).numpy()
            batches = [batches[i:i + hp.batch_size] for i in range(0, n_examples, hp.batch_size)]
            for k, batch in enumerate(batches):
                group = min(hp.accumulation, len(batches) - k // hp.accumulation * hp.accumulation)
                (loss_of(batch) / group).backward()
                if (k + 1) % hp.accumulation == 0 or k + 1 == len(batches):
                    opt.step()
                    lr_at.step()
                    opt.zero_grad(set_to_none=True)
                    bar.update()
            if best_mode:
                model.eval()
                accuracies.append(float(validate()))
                model.train()
                if not best_epoch or accuracies[-1] > accuracies[best_epoch - 1]:   # strictly better
                    best_epoch, best_state = epoch, snapshot(model) if epoch < hp.epochs else None
    model.eval()
    if not best_mode:
        return None
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"selected_epoch": best_epoch, "dev_accuracy": accuracies}


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s weights, to restore later."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train_early_stopping(model: torch.nn.Module, loss_of: Callable[[np.ndarray], torch.Tensor], n_examples: int,
                         hp: MlmBaselineParams, seed: int, validate: Callable[[], float]) -> dict:
    """Train ``model`` as AllenNLP's trainer does with the original ``mlm_baseline.jsonnet``: Adam (L2
    ``weight_decay`` on every parameter), batches of ``hp.batch_size`` in a new seeded order each epoch,
    gradients clipped to ``hp.grad_norm``; after each epoch ``validate()`` (accuracy on the validation set) and
    ``reduce_on_plateau`` (lr x ``plateau_factor`` after an epoch without a better accuracy); stop after
    ``patience`` epochs without a better accuracy, then restore the best epoch's weights (a tie keeps the
    earlier epoch). Returns ``{"best_epoch", "epochs_run", "best_accuracy"}`` (epochs counted from 1)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=hp.lr, betas=hp.betas, weight_decay=hp.weight_decay)
    plateau = (torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=hp.plateau_factor, patience=0)
               if hp.plateau_factor < 1 else None)
    order = torch.Generator().manual_seed(seed)
    best, best_epoch, best_state, epoch = -math.inf, 0, None, 0
    for epoch in range(1, hp.epochs + 1):
        model.train()
        batches = torch.randperm(n_examples, generator=order).numpy()
        for i in range(0, n_examples, hp.batch_size):
            opt.zero_grad(set_to_none=True)
            loss_of(batches[i:i + hp.batch_size]).backward()
            if hp.grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, hp.grad_norm)
            opt.step()
        model.eval()
        accuracy = float(validate())
        if accuracy > best:
            best, best_epoch = accuracy, epoch
            best_state = snapshot(model)
        if plateau is not None:
            plateau.step(accuracy)
        if hp.patience is not None and epoch - best_epoch >= hp.patience:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return {"best_epoch": best_epoch, "epochs_run": epoch, "best_accuracy": best}


@contextmanager
def one_thread(active: bool):
    """While ``active``, one CPU thread: training a head on cached features (or ESIM) runs operations far too
    small to gain from intra-op threads, which only add synchronisation (5x slower on two busy cores)."""
    threads = torch.get_num_threads()
    if active:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
