"""CALUM's segment order per split: every split of a task, dev and test too, in the order its model is trained in
(the paper, §3: "we first insert a free-text sentence-type indicator ... Each model is trained on this original
form. Next, we applied two perturbation methods"), so ``original`` and SIGNAL are scored, and early stopping reads
dev, in the trained order and REVERSE in the other; the one switch that evaluates another order, named
(``calum.eval_order: original_code_swapped``); and the checks of the params that set them (``calum.order``,
``calum.train_order``, ``calum.eval_order``). docs/limits.md has the evidence for the paper profile's orders."""

from __future__ import annotations

from typing import Mapping

AS_TRAINED = "as_trained"
SWAPPED = "original_code_swapped"
"""``calum.eval_order``: ``as_trained`` (every split in its task's trained order: the paper's) or
``original_code_swapped``, the one setting under which an evaluated split is not (:func:`of`)."""


def pair(value):
    """``[1, 2]`` or ``[2, 1]``, else a ValueError."""
    if sorted(value) != [1, 2]:
        raise ValueError("must be [1, 2] or [2, 1]")
    return value


def per_task(value: dict, tasks: Mapping | None) -> dict:
    """``calum.train_order``: a pair per task, of ``tasks`` (the spec's, where known)."""
    unknown = sorted(set(value) - set(tasks)) if tasks is not None else []
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a CALUM task ({', '.join(tasks)})")
    for task, given in value.items():
        if sorted(given) != [1, 2]:
            raise ValueError(f"{task}: must be [1, 2] or [2, 1]")
    return value


def renamed(value):
    """``calum.eval_order: original_code`` (its name before issue 52) refused with what it became."""
    if value == "original_code":
        raise ValueError(f"original_code is now {SWAPPED} (the original's inference order against a model trained "
                         f"in the other one: not the paper's); the default {AS_TRAINED} evaluates in the trained "
                         f"order, calum.train_order sets it per task")
    return value


def of(params, task: str, inference_order, split: str) -> tuple[int, int]:
    """The segment order of ``task``'s ``split`` ``original`` rows (REVERSE is the other one, SIGNAL this one):
    the order the task is trained in (``params.trained(task)``: ``calum.train_order``, else ``calum.order``), for
    every split.

    The one exception is ``params.eval_order == original_code_swapped`` (the setting before issue 52, not the
    paper's): the evaluated splits of a task whose original inference fed another order than GLUE's field order
    (its ``inference_order`` in ``generators/calum/<language>.yaml``: MNLI, KLUE-NLI, KorNLI) in the order opposite
    the trained one. With every task trained premise-first (no ``calum.train_order``) that is the original code's
    inference (DSincerity/CALM ``inference/dataset/mnli_dataset.py`` lines 11-13: `original` hypothesis-first;
    lines 20-22: REVERSE premise-first) against a model trained premise-first, the order
    ``lightning-transformers/lightning_transformers/task/nlp/mnli/mnli.py`` lines 39-47 declare: Acc_val measured
    on the order the model was not trained on."""
    trained = params.trained(task)
    if split == "train" or params.eval_order == AS_TRAINED or tuple(inference_order) == (1, 2):
        return trained
    return trained[::-1]
