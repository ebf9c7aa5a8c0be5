"""ParaRel's consistency training (papers/002 §8): continue a masked LM's pretraining with
L = λ·Lc + L_MLM on a few training relations, and measure ParaRel on held-out relations before and after.

The protocol of §8.2 (:func:`run`): train on ``train_relations``; "We perform minimal tuning of the parameters
(λ ∈ 0.1, 0.5, 1) to pick the best model, train for three epochs, and select the best model based on
Consistent-Acc on the validation set": each λ of ``consistency_weight`` (a list) trains the same initial model
with the same seed, and the one with the highest macro Consistent-Acc on ``validation_relations`` is kept (a tie:
the first listed); a single number is a fixed λ (the original script's ``--loss_scaling``). Then "the remaining
25 for testing": ``test_relations`` (default: every other N-1 relation). The original saves a checkpoint every
half epoch; the paper does not say checkpoints were selected among, so each λ's model after its last epoch is.
``typed: false`` is the "-typed" ablation of Table 7: Lc over the whole vocabulary, not the candidate set (the
original without ``--candidate_set``).

Follows the original (github yanaiela/pararel, ``pararel/ft/train_consistency.py`` with the data of
``generate_data_ft_consistency.py``): each round takes one batch of ``batch_size`` tuples of every training
relation in turn, each batch one optimizer step on λ·Lc (:func:`consistency_loss`) over the relation's
candidate set; the round's first step also carries ``mlm_steps`` MLM losses (summed, as their separate
``backward`` calls add up), each on ``mlm_batch_size`` random blocks of ``block_size`` tokens of the filled
patterns (subject and gold object) of the training tuples, masked BERT-style (15%; 80/10/10). The training
tuples (:func:`training_tuples`, ``sample``) are the original's draw with replacement, or the first ``limit``.
Gradients are clipped per step; the linear schedule steps once per round. Departures, all deliberate: every tuple is used
each epoch (the original's ``drop_last`` zip trains each relation on as many batches as the smallest has)
and the last partial MLM block is kept; padding is masked out of attention (the original attends to it);
the candidate set is the relation's, deduplicated and single-token as evaluation scores it (the original
repeats an object once per tuple, so the softmax weighs frequent objects more and ``batchmean`` divides Lc by the
relation's tuple count: ``candidate_list: per_tuple``, :func:`candidate_columns`).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Callable

import torch
from tqdm.auto import tqdm

from evaluators.shared import training
from evaluators.engine.collator import mask_of, pad_right
from evaluators.engine.models import LoadedModel
from evaluators.engine.scorer import Engine
from evaluators.pararel import metrics as pararel_metrics
from evaluators.pararel.evaluate import candidates_for, evaluate
from evaluators.pararel.params import ConsistencyParams
from probekit.outputs import atomic
from probekit.data.cloze import OBJECT, SUBJECT, ClozeSet, queries
from probekit.errors import DataError


def consistency_loss(logits_at_mask: torch.Tensor, n_patterns: int) -> torch.Tensor:
    """Lc of ``[tuples * patterns, K]`` candidate logits (tuple-major): the symmetric KL between the softmaxed
    distributions of every pair of patterns of a tuple, **summed** over pairs and tuples, divided by K.

    The original sums ``F.kl_div(first.log_softmax(0), second.softmax(0), reduction="batchmean")`` over all
    ordered pattern pairs (``permutations``), so each unordered pair's KL(P‖Q)+KL(Q‖P) once; its tensors
    were transposed to ``[K, pairs, tuples]``, so ``batchmean`` divides the sum by K."""
    rows, k = logits_at_mask.shape
    if rows % n_patterns:
        raise ValueError(f"{rows} rows are not a whole number of tuples of {n_patterns} patterns")
    log_q = logits_at_mask.float().reshape(-1, n_patterns, k).log_softmax(-1)
    q = log_q.exp()
    # (q_n - q_m)·(log q_n - log q_m) summed over candidates is KL(n‖m) + KL(m‖n); ordered pairs count it twice
    pairs = (q[:, :, None] - q[:, None]) * (log_q[:, :, None] - log_q[:, None])
    return pairs.sum() / (2 * k)


def training_tuples(data: ClozeSet, relation: str, limit: int | None, sample: str, seed: int) -> list[dict]:
    """The relation's training tuples (``consistency.sample``): ``first``, its first ``limit`` in file order; or
    ``with_replacement``, as the original's ``pararel/ft/generate_data_ft_consistency.py`` (lines 57-77): it
    shuffles the tuples, then loops over the list while shuffling it again at each step (``for i, d in
    enumerate(data): random.shuffle(data)``), so each step takes the tuple at position ``i`` of a fresh shuffle, a
    uniform draw with replacement; it stops after tuple ``i == num_tuples``: ``limit + 1`` draws (as many as there
    are tuples when fewer, or when ``limit`` is None). Its released ``100_3_P138_P37_P449`` holds 101 tuples per
    relation, 13, 5 and 4 subjects repeated. Ours are seeded by ``seed`` and the relation (the original's are not
    seeded); the MLM text is the filled patterns of the same draws, repeats included (its ``train_mlm.txt``)."""
    rows = [t for t in data.tuples if t["relation"] == relation]
    if sample == "first":
        return rows[:limit]
    if sample != "with_replacement":
        raise ValueError(f"sample must be first or with_replacement, got {sample!r}")
    draw = random.Random(f"{seed}/{relation}")
    n = len(rows) if limit is None else min(limit + 1, len(rows))
    return [rows[draw.randrange(len(rows))] for _ in range(n)]


def candidate_columns(data: ClozeSet, relation: str, candidates: tuple[str, ...], token_of: dict[str, int],
                      candidate_list: str = "set") -> list[int] | None:
    """The token ids Lc's typed softmax runs over (``consistency.candidate_list``): None, the relation's candidate
    set, each object once (its columns as evaluation scores them); or ``per_tuple``, the original's list, one
    entry per tuple of the relation (every tuple of the cloze set, in file order), so an object is repeated as
    often as it is the gold object: ``train_consistency.py`` lines 595-601 (``for d in data:
    candidate_ids[-1].append(tokenizer.vocab[d['obj_label']])``, over LAMA's T-REx file of the relation) and lines
    362-363 (``logits = logits[:, idcs_filter]``). Its softmax weighs an object by its tuples, and Lc, whose
    ``batchmean`` divides by the list's length (:func:`consistency_loss`), is divided by the tuple count, not the
    object count: 801 / 19 on P449, 900 / 47 on P37 of the original's data. A tuple whose object is not a
    candidate for this model is left out, as evaluation leaves it out."""
    if candidate_list == "set":
        return None
    if candidate_list != "per_tuple":
        raise ValueError(f"candidate_list must be set or per_tuple, got {candidate_list!r}")
    kept = set(candidates)
    return [token_of[t["object"]] for t in data.tuples if t["relation"] == relation and t["object"] in kept]


class _Relation:
    """One training relation's queries (encoded once, as evaluation encodes them) and filled patterns."""

    def __init__(self, engine: Engine, data: ClozeSet, relation: str, tuples: list[dict] | None = None,
                 candidate_list: str = "set"):
        """``tuples``: the training tuples (:func:`training_tuples`; None: every tuple of the relation);
        ``candidate_list``: the typed softmax's columns (:func:`candidate_columns`)."""
        candidates, _, token_ids = candidates_for(engine, data, relation)
        tuples = [t for t in data.tuples if t["relation"] == relation] if tuples is None else tuples
        q = queries(data, relation, tuples=tuples)
        if not q.stems:
            raise DataError(f"consistency training: relation {relation} has no tuple left in the cloze set (the "
                            f"one-token filter of pararel.tokenizers dropped every object: relations.jsonl "
                            f"dropped_objects); train on other relations (consistency.train_relations)")
        self.name = relation
        self.n_patterns = len(dict.fromkeys(q.pattern_ids))
        self.n_tuples = len(q.stems) // self.n_patterns
        self.encoded = engine.encode_masked(q.stems, [candidates] * len(q.stems), q.ids, token_ids)
        token_of = dict(zip(q.candidates, self.encoded.candidates()[0].tolist()))
        self.listed = candidate_columns(data, relation, q.candidates, token_of, candidate_list)
        patterns = [p["pattern"] for p in data.patterns if p["relation"] == relation]
        self.filled = [p.replace(SUBJECT, t["subject"]).replace(OBJECT, t["object"]) for t in tuples for p in patterns]

    def logits(self, model, batch: torch.Tensor, pad_id: int, device, typed: bool = True) -> torch.Tensor:
        """``[len(batch) * patterns, K]`` logits at the mask: of the candidates' tokens (``typed``; K: the set's
        size, or the per-tuple list's length, :func:`candidate_columns`), else of the whole vocabulary (K = its
        size; the "-typed" ablation)."""
        rows = (batch[:, None] + self.n_tuples * torch.arange(self.n_patterns)[None]).reshape(-1).numpy()
        ids, attention = _pad([self.encoded.inputs[r] for r in rows], pad_id, device)
        at_mask = model(input_ids=ids, attention_mask=attention).logits[
            torch.arange(len(rows), device=device), torch.as_tensor(self.encoded.positions[rows], device=device)]
        if not typed:
            return at_mask
        if self.listed is not None:
            return at_mask[:, torch.as_tensor(self.listed, device=device)]
        return at_mask.gather(1, torch.as_tensor(self.encoded.candidates()[rows], device=device))


def _pad(rows: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids padded on the right and their attention mask, on ``device``."""
    ids, lengths = pad_right(rows, pad_id)
    return torch.from_numpy(ids).to(device), torch.from_numpy(mask_of(lengths, ids.shape[1])).to(device)


def _blocks(tokenizer, sentences: list[str], size: int) -> list[list[int]]:
    """The sentences as one text, tokenized and cut into blocks of ``size`` tokens, each with special tokens."""
    return tokenizer("\n".join(sentences), truncation=True, max_length=size + tokenizer.num_special_tokens_to_add(),
                     return_overflowing_tokens=True, verbose=False)["input_ids"]


def _mlm_step(model, tokenizer, blocks: list[list[int]], params: ConsistencyParams, generator, device) -> float:
    """Backpropagate the MLM loss of a random batch of blocks, masked as the original's ``mask_tokens`` (BERT's
    80/10/10), and return it."""
    pick = torch.randperm(len(blocks), generator=generator)[:params.mlm_batch_size].tolist()
    ids, attention = _pad([blocks[i] for i in pick], tokenizer.pad_token_id, "cpu")
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids)) | (attention == 0)
    chosen = torch.bernoulli(torch.full(ids.shape, params.mlm_probability).masked_fill(special, 0.0),
                             generator=generator).bool()
    replaced = torch.bernoulli(torch.full(ids.shape, 0.8), generator=generator).bool() & chosen
    randomised = torch.bernoulli(torch.full(ids.shape, 0.5), generator=generator).bool() & chosen & ~replaced
    words = torch.randint(len(tokenizer), ids.shape, generator=generator)
    labels = ids.masked_fill(~chosen, -100)
    inputs = ids.masked_fill(replaced, tokenizer.mask_token_id).where(~randomised, words)
    if not chosen.any():  # nothing to predict: no loss (a mean over no token is NaN)
        return 0.0
    loss = model(input_ids=inputs.to(device), attention_mask=attention.to(device), labels=labels.to(device)).loss
    loss.backward()
    return loss.item()


def train(loaded: LoadedModel, data: ClozeSet, params: ConsistencyParams, *, weight: float | None = None,
          device="cpu", progress: bool = True, log: Callable[[dict], None] | None = None) -> list[dict]:
    """Train ``loaded.model`` in place (left in eval mode) with λ = ``weight`` (default: the params' one fixed λ);
    the history, one row per optimizer step (``log`` is called with each): step, epoch, relation, loss,
    consistency_loss, mlm_loss (None without MLM), lr, consistency_weight."""
    from transformers import get_linear_schedule_with_warmup

    if weight is None:
        if len(params.weights()) > 1:
            raise ValueError(f"train: pick one λ of consistency_weight {params.weights()} (run selects among them)")
        weight = params.weights()[0]
    model, tokenizer = loaded.model.to(device), loaded.tokenizer
    engine = Engine(model, tokenizer, loaded.family)
    relations = [_Relation(engine, data, rel, training_tuples(data, rel, params.limit, params.sample, params.seed),
                           params.candidate_list) for rel in params.train_relations]
    blocks = _blocks(tokenizer, [s for r in relations for s in r.filled], params.block_size)
    rounds = max(math.ceil(r.n_tuples / params.batch_size) for r in relations)
    opt = training.optimizer(model.named_parameters(), params)
    schedule = get_linear_schedule_with_warmup(opt, params.warmup_steps, rounds * params.epochs)
    generator = torch.Generator().manual_seed(params.seed)
    torch.manual_seed(params.seed)  # dropout
    history = []
    model.train()
    model.zero_grad(set_to_none=True)
    bar = tqdm(total=rounds * params.epochs * len(relations), desc=f"consistency training (λ={weight:g})",
               disable=not progress)
    for epoch in range(params.epochs):
        orders = [torch.randperm(r.n_tuples, generator=generator).split(params.batch_size) for r in relations]
        for k in range(rounds):
            mlm_due = params.mlm_steps > 0
            for rel, order in zip(relations, orders):
                bar.update()
                if k >= len(order):
                    continue
                # as the original: the MLM losses' backward first (their gradients add up), then λ·Lc's
                mlm = sum(_mlm_step(model, tokenizer, blocks, params, generator, device)
                          for _ in range(params.mlm_steps)) if mlm_due else None
                lc = consistency_loss(rel.logits(model, order[k], tokenizer.pad_token_id, device, params.typed),
                                      rel.n_patterns)
                (weight * lc).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), params.max_grad_norm)
                row = {"step": len(history), "epoch": epoch, "relation": rel.name,
                       "loss": weight * lc.item() + (mlm or 0.0), "consistency_loss": lc.item(),
                       "mlm_loss": mlm, "lr": schedule.get_last_lr()[0], "consistency_weight": weight}
                opt.step()
                opt.zero_grad(set_to_none=True)
                mlm_due = False
                history.append(row)
                if log:
                    log(row)
            schedule.step()
    bar.close()
    model.eval()
    return history


SELECTED_BY = "Consistent-Acc"
"""§8.2: "select the best model based on Consistent-Acc on the validation set" (macro over its relations)."""


def _summary(metrics: dict) -> dict:
    """Per N-1 relation and macro: ParaRel's METRICS; the majority baseline's macro on the same cells; the
    relations left with no scored query; the relations where the model predicted one object throughout."""
    keys = pararel_metrics.METRICS
    return {"relations": {rel: {k: m[k] for k in keys} for rel, m in metrics["relations"].items()},
            "macro": {k: metrics["macro"][k] for k in keys}, "majority": metrics["majority"]["macro"],
            "unscored": sorted(metrics["unscored"]), "constant_predictor": metrics["constant_predictor"]}


def _state(model) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _select(loaded: LoadedModel, data: ClozeSet, params: ConsistencyParams, measure: Callable, *, device,
            progress: bool) -> tuple[dict, list[dict]]:
    """Train once per λ from the same initial weights and seed; leave the model of the best validation
    Consistent-Acc (the first λ listed on a tie). The selection record and every λ's steps."""
    weights, model = params.weights(), loaded.model
    initial = _state(model) if len(weights) > 1 else None
    tried, history, best, best_state = [], [], None, None
    for k, weight in enumerate(weights):
        if k:
            model.load_state_dict(initial)
        steps = train(loaded, data, params, weight=weight, device=device, progress=progress)
        history += steps
        validation = measure("validation")
        score = validation["macro"][SELECTED_BY]["mean"] if validation else None
        if validation and score is None:
            raise DataError(f"consistency: no {SELECTED_BY} on validation_relations "
                            f"{', '.join(params.validation_relations)}: no tuple of theirs scored")
        tried.append({"consistency_weight": weight, "steps": len(steps),
                      "validation": validation["macro"] if validation else None})
        if best is None or (score is not None and score > best[1]):
            best = (weight, score)
            best_state = _state(model) if k < len(weights) - 1 else None
    if best[0] != weights[-1]:
        model.load_state_dict(best_state)
    model.eval()
    return {"consistency_weight": best[0], "fixed": len(weights) == 1, "metric": SELECTED_BY,
            "validation_relations": list(params.validation_relations), "candidates": tried}, history


def run(loaded: LoadedModel, data: ClozeSet, out: Path, params: ConsistencyParams, *,
        eval_relations: list[str] | None = None, device="cpu", progress: bool = True,
        profile: str | None = None) -> dict:
    """§8.2's protocol: evaluate the train, validation and test relations (:meth:`ConsistencyParams.split`;
    ``eval_relations``: the test relations, in place of the params'); train once per λ and keep the model of the
    best validation Consistent-Acc (:func:`_select`); evaluate the three groups again. Writes ``metrics.json``
    (``selection``: every λ's validation scores and the λ chosen), ``history.jsonl`` (every λ's steps) and the
    chosen ``model/`` under ``out`` (atomically). ``profile``: the params file's profile (``smoke``, ``paper``),
    recorded in metrics.json. ``params.ablation`` (Table 7's -consistency, -typed, -MLM) is applied over the params
    (:meth:`ConsistencyParams.ablated`) and recorded as ``ablation``; ``params`` records the values trained with."""
    params = params.ablated()
    groups = params.split(data, eval_relations)
    engine = Engine(loaded.model.to(device), loaded.tokenizer, loaded.family)

    def measure(group: str) -> dict | None:
        rels = groups[group]
        return _summary(evaluate(engine, data, rels, limit=params.eval_limit, tuple_key=params.tuple_key,
                                 progress=progress)[1]) if rels else None

    before = {name: measure(name) for name in groups if groups[name]}
    selection, history = _select(loaded, data, params, measure, device=device, progress=progress)
    drawn = {rel: [t["tuple_id"] for t in training_tuples(data, rel, params.limit, params.sample, params.seed)]
             for rel in groups["train"]}
    metrics = {"before": before, "after": {name: measure(name) for name in groups if groups[name]},
               "selection": selection, "history": history, "params": params.recorded(),
               **({"ablation": params.ablation} if params.ablation else {}), "training_tuples": drawn,
               "train_relations": groups["train"], "validation_relations": groups["validation"],
               "eval_relations": groups["test"], "model": loaded.name, "model_id": loaded.model_id,
               "data": str(data.folder),
               "data_fingerprint": data.meta["fingerprint"], **loaded.provenance(), "profile": profile}
    with atomic.atomic_path(Path(out), kind="results") as tmp:
        atomic.write_json(tmp / "metrics.json", metrics)
        atomic.write_jsonl(tmp / "history.jsonl", history)
        loaded.model.save_pretrained(tmp / "model")
        loaded.tokenizer.save_pretrained(tmp / "model")
    return metrics
